// SPDX-License-Identifier: Apache-2.0
// Which bytes of which storage a target reaches (DESIGN.md decision 11).
//
// A name says little: /dev/loop3p2, a second loop device over the same
// file, a loop device made with --offset, "/x/d/", "/x//d" and a symlink to
// /x/d all reach bytes that other names reach too. So every interlock
// compares storage, never names: a target is first resolved, hop by hop, to
// the thing that finally holds its bytes and the byte range it covers there:
//   - a partition is its disk from `start` (sysfs, 512-byte sectors) for
//     `size`;
//   - a loop device is its backing file (or block device) from `offset`
//     for the loop device's size (its sizelimit, or the file's rest);
//   - a device-mapper or md device is each of its slaves, whole: their
//     tables are not read, so every byte of every slave counts as reached
//     (more refusals, never fewer);
//   - a regular file is itself, identified by (st_dev, st_ino), whatever
//     path spelled it;
//   - any other block device is a disk, identified by its device number.
// The interlocks then compare these extents: the write pass against the
// regions retention studies hold, and against everything mounted, swapped
// on or held (aging/safety/interlocks.h).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/util/expected.h"
#include "config/util/json.h"

namespace drivewatch::aging {

// Where the checks look; tests point these at fixture trees.
struct SystemPaths {
  std::string sysfs = "/sys";
  std::string dev = "/dev";  // device nodes, opened for LOOP_GET_STATUS64
  std::string mountinfo = "/proc/self/mountinfo";
  std::string swaps = "/proc/swaps";
  // The host's register of retention studies, shared by every drivewatch
  // whatever its state directory (aging/retention/study_register.h).
  std::string study_register = "/var/lib/drivewatch/studies.d";
};

// The sysfs words both this file and the interlocks use.
// "259:0".
std::string DevNumber(dev_t device);
// "259:0" back; nullopt for anything else.
std::optional<dev_t> ParseDevNumber(std::string_view text);
// <sysfs>/dev/block/M:m: a symlink into /sys/devices on a real system, a
// plain directory (or a link to one) in fixtures.
std::string BlockDir(dev_t device, const SystemPaths& paths);
// The kernel's name of the device whose sysfs directory is `block_dir`
// ("nvme0n1", "loop3"): its uevent's DEVNAME, else the directory's name.
std::string KernelName(const std::string& block_dir);

// What finally holds the bytes.
struct Storage {
  enum class Kind { kDisk, kFile };
  Kind kind = Kind::kDisk;
  dev_t device = 0;  // kDisk: the disk; kFile: the st_dev of its file system
  ino_t inode = 0;   // kFile only
  // kFile: its birth time (statx), nanoseconds since the epoch, 0 when the
  // file system does not keep one. An inode number is reused once its file
  // is deleted; a recorded file is the same only if it was born then too.
  std::uint64_t birth_ns = 0;
  std::string path;  // for people: "/dev/vdb", "/var/tmp/t.img"
  // kDisk: the identity the interlocks checked on it ("S4EWNX0R123456/1"
  // for an NVMe namespace, a sysfs serial), when known. Device numbers of
  // disks change across reboots; a record kept for months compares this.
  std::string identity;

  // The same storage now (device numbers are compared, not names).
  bool SameAs(const Storage& other) const;
  // "file 254:1 inode 1234 (/var/tmp/t.img)", "disk 259:0 (/dev/nvme0n1)".
  std::string Describe() const;
};

// Bytes [offset, offset + length) of a storage.
struct StorageExtent {
  Storage storage;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;

  bool Overlaps(const StorageExtent& other) const;
  // "/var/tmp/t.img [64MiB, 128MiB)".
  std::string Describe() const;
};

// How a target (a block device or a regular file) reaches its storage.
struct StorageMap {
  std::string name;          // what was resolved: "/dev/loop3p2"
  std::uint64_t size = 0;    // the target's size in bytes
  // One extent, except for device-mapper and md (one per slave, whole).
  std::vector<StorageExtent> extents;
  // Each hop, for messages: "/dev/loop3p2 is /dev/loop3 from 64MiB",
  // "/dev/loop3 is /var/tmp/t.img from 0".
  std::vector<std::string> hops;
  // True when some hop is a device-mapper or md device (whole slaves).
  bool approximate = false;

  // The storage extents bytes [offset, offset + length) of the target land
  // on (length 0: to the end of the target).
  std::vector<StorageExtent> Map(std::uint64_t offset, std::uint64_t length) const;
  // `reached` (extents of this map, as Map gives them) by the identity of
  // their storage, then how the target reaches it, for a message that sets
  // two storages side by side (a file replaced under the same path is
  // another inode): "file 254:1 inode 131 (/srv/e2.img) [0B, 64MiB)
  // (/dev/loop9 is /srv/e2.img from 0B)".
  std::string DescribeReach(const std::vector<StorageExtent>& reached) const;
  // What it reaches, then how: "/var/tmp/t.img [64MiB, 96MiB) (/dev/loop3p2
  // is partition 2 of /dev/loop3 from 64MiB, /dev/loop3 is /var/tmp/t.img
  // from 0B)"; a file alone: "/var/tmp/d/f.dat [0B, 64MiB)". Messages say
  // "target T now reaches " + Describe().
  std::string Describe() const;
};

// Extents with the identity of their storage, for a message that sets two
// of them side by side (a file replaced under the same path is another
// inode): "file 254:1 inode 1234 (/var/tmp/t.img) [64MiB, 96MiB)", joined
// by " and ".
std::string DescribeIdentities(const std::vector<StorageExtent>& extents);

// The one answer to "which bytes of which storage does this reach", for
// the block device or regular file open on `fd`. A block device is
// followed through sysfs under `paths.sysfs` (partitions, loop devices,
// slaves); a loop device's backing file is identified by LOOP_GET_STATUS64
// when the device can be opened, else by stat(2) of sysfs' backing_file.
// Anything else (a FIFO, a directory) is an error, as is a chain that
// cannot be followed (ENODATA, naming the hop).
Expected<StorageMap> ResolveStorage(int fd, const SystemPaths& paths = {});
// The same for block device `device` (its own descriptor `fd` when the
// caller holds one, else -1), named `name` in messages.
Expected<StorageMap> ResolveBlockDevice(dev_t device, int fd, const std::string& name,
                                        const SystemPaths& paths = {});
// The same for whatever `path` names now (symlinks followed), without
// opening it: a block device, or a regular file. ENOENT when it does not
// exist.
Expected<StorageMap> ResolvePath(const std::string& path, const SystemPaths& paths = {});

// Whether byte ranges [a, a + a_len) and [b, b + b_len) share a byte (an
// empty range shares none).
bool RangesOverlap(std::uint64_t a, std::uint64_t a_len, std::uint64_t b, std::uint64_t b_len);

// Extents as a study record keeps them (docs/retention.md, "storage"), and
// back (storage_record.cc). FromJson checks every field and names it in its error (EBADMSG).
Json ToJson(const std::vector<StorageExtent>& extents);
Expected<std::vector<StorageExtent>> StorageFromJson(const Json& j, const std::string& where);
// Whether extents recorded earlier (perhaps before a reboot: device numbers
// may have changed) and extents resolved now share a byte. A disk is the
// same when both identities are known and equal, or else by device
// number; a file by (device, inode), or, its device number changed, when
// the recorded path now names the file of the same inode resolved now. A
// file made anew under the recorded path is another file (another inode;
// the same inode reused is told apart by its birth time where the file
// system keeps one).
bool RecordedOverlaps(const std::vector<StorageExtent>& recorded,
                      const std::vector<StorageExtent>& now);
// Whether they are the same extents, one for one.
bool RecordedSame(const std::vector<StorageExtent>& recorded,
                  const std::vector<StorageExtent>& now);
// Whether they are on the same storage at all, whatever the ranges.
bool RecordedSharesStorage(const std::vector<StorageExtent>& recorded,
                           const std::vector<StorageExtent>& now);

// Something on the host that is in use, and the storage it reaches.
struct StorageInUse {
  std::string name;    // "/dev/loop4", "/var/swapfile"
  std::string why;     // "is mounted on /mnt", "is held by dm-0"
  std::string remedy;  // "unmount it", "swapoff it", ...
  dev_t device = 0;    // the block device in use; 0 for a swap file
  std::vector<StorageExtent> extents;
  // Why its storage cannot be told (then `extents` is empty). The write
  // gate refuses then: what it shares is unknown.
  std::string unresolved;
};
// Every block device that is mounted (/proc/self/mountinfo), swapped on
// (/proc/swaps), or held by device-mapper, md or bcache (sysfs holders/),
// and every swap file, each with the storage it reaches. An error when
// mountinfo or swaps cannot be read.
Expected<std::vector<StorageInUse>> ScanStorageInUse(const SystemPaths& paths = {});

}  // namespace drivewatch::aging
