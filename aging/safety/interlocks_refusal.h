// SPDX-License-Identifier: Apache-2.0
// How the interlocks word a refusal, shared by the block-device checks
// (interlocks.cc), the write gate (interlocks_write_pass.cc) and the
// directory-target checks (interlocks_file.cc):
// "DEVICE: refusing to write: REASON (REMEDY)". Internal to aging/safety/interlocks*.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "aging/safety/storage.h"
#include "config/config.h"
#include "config/util/expected.h"
#include "config/util/json.h"

namespace drivewatch::aging::interlocks_detail {

// "DEVICE: refusing to ACTION: REASON (REMEDY)", EPERM.
Error Refuse(std::string_view device, std::string_view reason,
             std::string_view remedy, std::string_view action = "write");

inline constexpr std::string_view kNoOverride = "no config key overrides this";

// "aging.targets.KEY[ = VALUE] for target "NAME"": [[aging.targets]] is an
// array, so the key alone would not say which entry to edit.
std::string KeyFor(const config::AgingTarget& target, std::string_view key,
                   std::string_view value = "");

// "1.5 GiB": numbers in refusals are for people.
std::string Humanize(long double bytes);

// CheckBeforeWrite()'s checks of a block device target, returning the
// storage it reaches (aging/safety/storage.h) when they pass.
Expected<StorageMap> CheckBlockDeviceWrite(const config::AgingTarget& target, int fd,
                                           dev_t device, const SystemPaths& paths);
// A directory target's file open on `fd`: still the file its path names,
// one link, made by drivewatch (its record in <state>/files/), and nothing
// in use reaches it. Returns its storage.
Expected<StorageMap> CheckOwnFile(const config::AgingTarget& target, int fd,
                                  const std::string& state_directory, const SystemPaths& paths);
// Refused when anything mounted, swapped on or held reaches a byte of
// `map` (a directory target's file, looped and mounted, say).
Status CheckFileNotInUse(const std::string& path, const StorageMap& map,
                         const SystemPaths& paths);

// Refused when growing what `what` names by `growth` bytes (`making`:
// "making it 1 GiB") would leave less than the target's min_free_ratio of
// its directory's file system free; `remedy` is the first way out.
Status CheckReserve(const config::AgingTarget& target, const std::string& what,
                    long double growth, const std::string& making, const std::string& remedy);

// The target's directory is there and is a directory.
Status CheckAgingDirectory(const config::AgingTarget& target);

// What drivewatch recorded in <state>/files/ of something it made in a
// target's directory (its aging file, a run's work directory): the device
// and inode (and birth time, 0 when unknown) it had when made. Before it
// makes one, drivewatch records that it is about to (`making_since_ns`, no
// identity yet): a crash between the making and the full record leaves an
// empty thing that record still claims (MadeSince), never an orphan.
struct OwnRecord {
  dev_t device = 0;
  ino_t inode = 0;
  std::uint64_t birth_ns = 0;
  std::string path;  // where it was made
  Json record;       // the whole record
  std::uint64_t making_since_ns = 0;  // a record of intent: when it was written
  // Whether `st`, found at `at`, is what was made (an inode number is
  // reused once freed: a known birth time must match too).
  bool Names(const struct stat& st, const std::string& at) const;
  // Whether `st`, found at `at`, is what an interrupted making left: this
  // is a record of intent for `at`, and `st` was born (or, where the file
  // system keeps no birth time, last changed) after it was written. The
  // caller checks that it is still empty.
  bool MadeSince(const struct stat& st, const std::string& at) const;
};
// The record at `path` (`noun` names it in errors): missing is nullopt,
// damaged an Error (EBADMSG) naming it.
Expected<std::optional<OwnRecord>> ReadOwnRecord(const std::string& path, std::string_view noun);
// Records `st`, made at `path`, as drivewatch's, durably, with `extra`'s
// members beside the identity.
Status WriteOwnRecord(const std::string& record_path, const config::AgingTarget& target,
                      const std::string& path, const struct stat& st,
                      Json extra = Json::object());
// Records, durably, that drivewatch is about to make `path` (with
// `extra`'s members): written before the making, replaced by the full
// record after it. Errors read "PATH: cannot record that drivewatch is
// making it: ...".
Status WriteIntentRecord(const std::string& record_path, const config::AgingTarget& target,
                         const std::string& path, Json extra = Json::object());
// statx(2)'s birth time of `path` (not followed), 0 when the file system
// keeps none.
std::uint64_t BirthNs(const std::string& path);

}  // namespace drivewatch::aging::interlocks_detail
