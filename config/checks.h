// SPDX-License-Identifier: Apache-2.0
// Value checks and message helpers behind LoadString(). Internal to
// config/; exposed in a header only so the unit tests can reach them.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace drivewatch::config::detail {

// `s` as a TOML basic string: in double quotes, with quotes, backslashes
// and control characters escaped, so a message always stays on one line.
std::string Quote(std::string_view s);

// Optimal-string-alignment distance (Levenshtein plus adjacent
// transpositions, as in "levle" -> "level"), ignoring ASCII case.
size_t EditDistance(std::string_view a, std::string_view b);

// The candidate close enough to `word` to be a likely typo, or nullopt.
// Ties go to the earlier candidate.
std::optional<std::string_view> ClosestMatch(
    std::string_view word, std::span<const std::string_view> candidates);

// Each returns nullopt when the value is fine, else "what is wrong
// (expected ...)" naming the value.
std::optional<std::string> ListenAddressProblem(std::string_view address);
std::optional<std::string> GlobProblem(std::string_view pattern);
std::optional<std::string> AbsolutePathProblem(std::string_view path);
// An absolute path that, when it exists, is a directory.
std::optional<std::string> StateDirectoryProblem(std::string_view path);
// An absolute path that, when it exists, is a block device: a regular file
// under block_device (a disk image) would otherwise be written as one.
std::optional<std::string> BlockDeviceProblem(std::string_view path);
// Whether `path` (after following symlinks such as /dev/disk/by-id/...)
// names an NVMe namespace: nvme<N>n<M> or nvme<N>c<C>n<M>.
bool NvmeNamespacePath(std::string_view path);
// Why `path` cannot be an NVMe namespace, or nullopt when it is or may be:
// a path that exists must resolve to one; one that does not exist yet (a
// drive not plugged in) is judged by its name, and a name without "nvme"
// (/dev/sdb, /dev/loop3) cannot be one, while /dev/disk/by-id/nvme-...
// waits for the run to tell.
std::optional<std::string> NotNvmeNamespaceProblem(std::string_view path);

// The logical block size under an aging target, where it can be known
// without opening it: a block device's queue/logical_block_size in sysfs
// (its whole disk's, for a partition), or that of the block device under a
// directory's file system. nullopt when it cannot be known now: the path
// does not exist (yet), or the file system has no block device of its own
// (tmpfs, btrfs, overlay); the phase checks again when it opens the target.
struct LogicalBlockSize {
  std::uint32_t bytes = 0;
  std::string source;  // "/dev/loop3: /sys/dev/block/7:3/queue/logical_block_size"
};
std::optional<LogicalBlockSize> TargetLogicalBlockSize(std::string_view block_device,
                                                       std::string_view directory,
                                                       const std::string& sysfs = "/sys");

}  // namespace drivewatch::config::detail
