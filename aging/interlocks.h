// SPDX-License-Identifier: Apache-2.0
// The safety interlocks: the checks that stand between a writing phase and
// somebody's data (DESIGN.md decision 6). Writing is the most dangerous
// thing drivewatch does, so a writing phase opens its target read-write
// only after CheckBeforeWrite() passes, and calls it again before every
// write pass, on the very file descriptor it writes through.
//
// A block device target must:
//   - be named in the config with its serial (and namespace for NVMe), and
//     the device actually open must show that identity: for an NVMe
//     namespace through Identify Controller (SN) and the namespace ID sent
//     to the open descriptor itself, so a device renamed between the
//     config check and the write (hot-plug swap) is caught; for another
//     device its sysfs serial; for a loop device "loop:" + backing file;
//   - set destroy_data = true;
//   - not be mounted, used as swap, or held by device-mapper or md, nor
//     any of its partitions (/proc/self/mountinfo, /proc/swaps, sysfs
//     holders/);
//   - hold no partition table, file system, RAID or LVM signature
//     (libblkid), unless allow_signatures = true.
// A file target only ever touches its own file (directory/drivewatch-aging-
// NAME.dat) and needs no acknowledgement, but creating or growing it must
// leave at least min_free_ratio of its file system free.
//
// Every refusal is an Error with errnum EPERM whose message names the
// device, the reason and the config key that would allow it (when one
// does); a check that cannot run (unreadable /proc/self/mountinfo, libblkid
// failing) refuses the same way. e.g.
//   "/dev/loop3: refusing to write: /dev/loop3p1 is mounted on /mnt/data
//    (unmount it; no config key overrides this)"
//   "/dev/nvme1n1: refusing to write: it holds an ext4 file system
//    (set aging.targets.allow_signatures = true for target \"scratch\" to
//    overwrite it)"
//
// These checks race with the rest of the system: something may mount the
// device a moment after they pass. A phase closes that gap by opening the
// device with O_EXCL, which makes the kernel refuse mounts, swapon and
// device-mapper or md claims while it is open. (The checks cannot open
// O_EXCL themselves: that would fail against the phase's own open.)
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "config/config.h"
#include "probes/expected.h"

namespace drivewatch::aging {

// Where the checks look; tests point these at fixture trees.
struct SystemPaths {
  std::string sysfs = "/sys";
  std::string mountinfo = "/proc/self/mountinfo";
  std::string swaps = "/proc/swaps";
};

// What a block device says it is.
struct DeviceIdentity {
  std::string serial;     // as the config's `serial` spells it
  std::uint32_t nsid = 0; // NVMe namespaces only
  bool nvme = false;
};

// Reads the identity of the block device open on `fd` (st_rdev `device`).
// NVMe namespaces (sysfs `device` under an nvme controller or subsystem,
// or named nvme*n*) are asked through `fd`: Identify Controller SN,
// trimmed, and the namespace ID; nothing is taken from sysfs for them. A
// loop device gives "loop:" + its backing file, another device its sysfs
// device/serial or serial; a partition gives its disk's. No identity is an
// error (ENODATA).
Expected<DeviceIdentity> ReadDeviceIdentity(int fd, dev_t device,
                                            const SystemPaths& paths = {});

// The identity checks alone: `fd` (st_rdev `device`) is the configured
// serial and namespace. What a phase that only reads (retention-verify)
// asks; its refusals read "refusing to ACTION".
Status CheckIdentity(const config::AgingTarget& target, int fd, dev_t device,
                     const SystemPaths& paths = {}, std::string_view action = "read");

// All block-device checks above, for `target` open on `fd`, in this order:
// destroy_data, identity, mounted, swap, holders, signatures. Passing means
// the phase may write now; it says nothing about a minute later. When `fd`
// is a block device, `device` must be its st_rdev. Signatures are probed
// through a fresh read-only open of /proc/self/fd/<fd>, so an O_DIRECT
// `fd` is fine and its file offset is left alone.
Status CheckBeforeWrite(const config::AgingTarget& target, int fd,
                        dev_t device, const SystemPaths& paths = {});

// The one gate in front of every write, whatever the target's kind
// (DESIGN.md decision 11). A phase passes it on the descriptor it writes
// through when it opens the target and again before every write pass;
// nothing writes a target any other way.
//   - A block_device target must be open on a block device: a regular file
//     (a VM disk image, a backup) named as block_device is refused, never
//     written, whatever else the config says. Then every CheckBeforeWrite()
//     check below.
//   - A directory target must be open on its own regular file
//     (AgingFilePath), the same inode the path names now, with one link.
//   - No byte of [offset, offset + length) may lie in the region of a
//     retention study in `state_directory` that still holds it (writing,
//     baseline or active), except the region of `study`, the study this
//     pass writes. A study record that cannot be read or fails validation
//     holds every target: what it covers cannot be known.
struct WritePass {
  std::string state_directory;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;  // 0: to the end of the target
  std::string study;         // retention-write: its own study
};
Status CheckWritePass(const config::AgingTarget& target, int fd, const WritePass& pass,
                      const SystemPaths& paths = {});

// The retention-study part of CheckWritePass() alone: the refusal when a
// study in `state_directory` holds part of [offset, offset + length) of
// `target`, whose end is `capacity` bytes.
Status CheckStudyRegions(const config::AgingTarget& target, const WritePass& pass,
                         std::uint64_t capacity);

// The file a directory target writes, and the free-space check for making
// it `size` bytes (counting the blocks the file already holds): refused
// (EPERM) when f_bavail less the growth would fall below min_free_ratio of
// the file system's size.
std::string AgingFilePath(const config::AgingTarget& target);
Status CheckFileReserve(const config::AgingTarget& target, std::uint64_t size);

// Creates (or resizes) the directory target's file to target.file_size
// bytes, after CheckFileReserve, allocating it with fallocate(2) so the
// file system cannot run out mid-phase, then fsyncs it. Refuses (EPERM) a
// path that is a symlink, not a regular file, or a hard link to another
// file; a missing directory is ENOENT naming it. Returns its path.
Expected<std::string> PrepareAgingFile(const config::AgingTarget& target);

}  // namespace drivewatch::aging
