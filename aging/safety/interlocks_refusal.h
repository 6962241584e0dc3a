// SPDX-License-Identifier: Apache-2.0
// How the interlocks word a refusal, shared by the block-device checks
// (interlocks.cc), the write gate (interlocks_write_pass.cc) and the
// directory-target checks (interlocks_file.cc):
// "DEVICE: refusing to write: REASON (REMEDY)". Internal to aging/safety/interlocks*.
#pragma once

#include <string>
#include <string_view>

#include "aging/safety/storage.h"
#include "config/config.h"
#include "config/util/expected.h"

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

}  // namespace drivewatch::aging::interlocks_detail
