// SPDX-License-Identifier: Apache-2.0
// The safety interlocks: the checks that stand between a writing phase and
// somebody's data (DESIGN.md decision 6). Writing is the most dangerous
// thing drivewatch does, so a writing phase opens its target read-write
// only after CheckBeforeWrite() passes, and calls it again before every
// write pass, on the very file descriptor it writes through.
//
// Every check works on storage, not on names (aging/safety/storage.h): a target
// is first resolved to the storage that holds its bytes and the range it
// covers there, through partitions, loop devices (offset, sizelimit,
// backing file), device-mapper and md, symlinks and path spellings.
//
// A block device target must:
//   - be named in the config with its serial (and namespace for NVMe), and
//     the device actually open must show that identity: for an NVMe
//     namespace through Identify Controller (SN) and the namespace ID sent
//     to the open descriptor itself, so a device renamed between the
//     config check and the write (hot-plug swap) is caught; for another
//     device its sysfs serial; for a loop device "loop:" + backing file,
//     compared byte for byte;
//   - set destroy_data = true;
//   - share no byte of storage with anything mounted, used as swap, or
//     held by device-mapper, md or bcache (/proc/self/mountinfo,
//     /proc/swaps, sysfs holders/): the device, a partition of it, a
//     second loop device over the same file, the disk under a partition;
//   - hold no partition table, file system, RAID or LVM signature
//     (libblkid; the refusal names what each partition holds, and a GPT's
//     backup header at the end counts), unless allow_signatures = true.
//     allow_signatures never overrides "mounted" or "in use".
// A file target only ever touches its own file (directory/drivewatch-aging-
// NAME.dat), which drivewatch created and recorded in <state>/files/; it
// needs no acknowledgement, but creating or growing it must leave at least
// min_free_ratio of its file system free, and nothing in use may reach it.
// For every target, no byte written may lie in a region a retention study
// holds, whichever state directory the study belongs to (its record, or
// the host's study register, aging/retention/study_register.h).
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
#include <optional>
#include <string>
#include <string_view>

#include "aging/safety/storage.h"
#include "config/config.h"
#include "config/util/expected.h"

namespace drivewatch::aging {

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
// destroy_data, identity, storage, in use (mounted, swap, holders),
// signatures. Passing means
// the phase may write now; it says nothing about a minute later. When `fd`
// is a block device, `device` must be its st_rdev. Signatures are probed
// through a fresh read-only open of /proc/self/fd/<fd>, so an O_DIRECT
// `fd` is fine and its file offset is left alone.
Status CheckBeforeWrite(const config::AgingTarget& target, int fd,
                        dev_t device, const SystemPaths& paths = {});

// config::LoadOptions::compare_storage: the storage two targets reach now,
// compared for the config's checks between phases. A directory target
// whose file does not exist yet, or a block device that is not there,
// cannot be resolved: nullopt.
std::optional<config::StorageOverlap> CompareTargetStorage(
    const config::AgingTarget& a, std::uint64_t a_offset, std::uint64_t a_length,
    const config::AgingTarget& b, std::uint64_t b_offset, std::uint64_t b_length);

// The disk under a block device target (itself, or the disk of a
// partition) is the drive whose identity the checks confirm: it is noted
// on `map` (Storage::identity, "SERIAL" or "SERIAL/NSID"), so a record kept
// across reboots compares that rather than a device number.
void NoteTargetIdentity(const config::AgingTarget& target, StorageMap& map);

// The one gate in front of every write, whatever the target's kind
// (DESIGN.md decision 11). A phase passes it on the descriptor it writes
// through when it opens the target and again before every write pass;
// nothing writes a target any other way.
//   - A block_device target must be open on a block device: a regular file
//     (a VM disk image, a backup) named as block_device is refused, never
//     written, whatever else the config says. Then every CheckBeforeWrite()
//     check below.
//   - A directory target must be open on its own regular file
//     (AgingFilePath), the same inode the path names now, with one link,
//     the file drivewatch created (its record in <state>/files/), which
//     nothing mounted or swapped on reaches.
//   - No byte of storage that [offset, offset + length) reaches may lie in
//     the storage a retention study holds (writing, baseline or active),
//     whether the study is in `state_directory` or in another one the
//     host's study register names, except `study`, the study this pass
//     writes. A record or register entry that cannot be read or fails
//     validation holds every target: what it covers cannot be known.
//   - A pass that `resizes` a directory target's file is refused when any
//     study holds a byte of that file.
struct WritePass {
  std::string state_directory;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;  // 0: to the end of the target
  std::string study;         // retention-write: its own study
  bool resizes = false;      // the file's size is about to change
};
Status CheckWritePass(const config::AgingTarget& target, int fd, const WritePass& pass,
                      const SystemPaths& paths = {});

// The retention-study part of CheckWritePass() alone, for `target`
// reaching the storage `map`.
Status CheckStudyRegions(const config::AgingTarget& target, const WritePass& pass,
                         const StorageMap& map, const SystemPaths& paths = {});

// The file a directory target writes, and the free-space check for making
// it `size` bytes (counting the blocks the file already holds): refused
// (EPERM) when f_bavail less the growth would fall below min_free_ratio of
// the file system's size.
std::string AgingFilePath(const config::AgingTarget& target);
Status CheckFileReserve(const config::AgingTarget& target, std::uint64_t size);

// Creates (or resizes) the directory target's file to target.file_size
// bytes, allocating it with fallocate(2) so the file system cannot run out
// mid-phase, then fsyncs it. A new file is recorded as drivewatch's in
// <state>/files/<target>.json (AgingFileRecordPath) before anything else;
// a file found at the path that drivewatch did not make is refused, never
// truncated. Nothing changes size before CheckWritePass has passed for
// `pass` (with `resizes` set) and CheckFileReserve for the growth. Refuses
// (EPERM) a path that is a symlink, not a regular file, or a hard link to
// another file; a missing directory is ENOENT naming it. Returns its path.
Expected<std::string> PrepareAgingFile(const config::AgingTarget& target, const WritePass& pass,
                                       const SystemPaths& paths = {});
std::string AgingFileRecordPath(const std::string& state_directory,
                                const config::AgingTarget& target);

// A run's work directory: where a kind whose workload is an application's
// (sqlite, pgbench) keeps its database, <directory>/drivewatch-work-NAME
// beside the target's own file, recorded in <state>/work/NAME.json.
std::string WorkDirectoryPath(const config::AgingTarget& target);
std::string WorkDirectoryRecordPath(const std::string& state_directory,
                                    const std::string& target);

// Makes the work directory for a run of `size.kind` that will put at most
// `size.bytes` in it, through the same gate as every write: the target's own
// file open on `fd` passes CheckWritePass for `pass` (still drivewatch's,
// no study holds it); no retention study holds any byte of the storage
// the directory's file system lives on (where the application's files
// land cannot be known in advance: the whole device counts; a file system
// whose device cannot be resolved is refused); `bytes` leaves the
// target's free-space reserve; a leftover of an earlier run, if its record
// names it, is removed first, and anything else at the path is refused,
// never touched. The directory (0700) is recorded before anything is put
// in it. The application writes it from then on as one pass.
struct WorkSize {
  std::uint64_t bytes = 0;
  std::string_view kind;      // "sqlite"
  std::string_view sized_by;  // the phase keys that set `bytes`: "threads or inserts"
};
Expected<std::string> PrepareWorkDirectory(const config::AgingTarget& target, int fd,
                                           const WritePass& pass, const WorkSize& size,
                                           const SystemPaths& paths = {});

// The work directory a run of target `target` made and has not removed
// yet (a run going on, or one that crashed), as its record says; nullopt
// when there is none; an Error when the record is damaged.
struct WorkDirectory {
  std::string path;
  std::string kind;  // the kind of the run that made it
};
Expected<std::optional<WorkDirectory>> FindWorkDirectory(const std::string& state_directory,
                                                         const std::string& target);

// Removes that work directory with everything in it, depth first, never
// following a symbolic link or crossing into another file system, then
// its record; Ok when there is none. A path that names something else
// now (another inode) is left alone, its record removed, and an Error
// says so.
Status RemoveWorkDirectory(const std::string& state_directory, const std::string& target);

}  // namespace drivewatch::aging
