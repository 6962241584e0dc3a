// SPDX-License-Identifier: Apache-2.0
// The write gate every write pass goes through (DESIGN.md decision 11),
// on the very descriptor that will be written: what kind of file it is,
// then the block device's checks (aging/interlocks.cc) or the directory
// target's own file, then the regions held by retention studies.
#include "aging/interlocks.h"

#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

#include "aging/interlocks_refusal.h"
#include "aging/retention_study.h"
#include "config/util/sys.h"
#include "config/util/text.h"

namespace drivewatch::aging {
namespace {

using interlocks_detail::kNoOverride;
using interlocks_detail::Refuse;
using util::Quote;
using util::SysError;

// "[1GiB, 1536MiB)": a byte range as the config writes sizes.
std::string Range(std::uint64_t begin, std::uint64_t end) {
  return "[" + config::FormatSize(begin) + ", " + config::FormatSize(end) + ")";
}

std::string FileKind(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a block device";
}

// Whether a study record names the drive or file `target` stands for: the
// same serial and namespace (a device may be reached by several paths), or
// the same path.
bool SameTarget(const Json& study, const config::AgingTarget& target) {
  const Json* serial = study.Find("serial");
  const Json* nsid = study.Find("nsid");
  const Json* device = study.Find("device");
  if (!target.serial.empty() && serial != nullptr && serial->AsString() == target.serial &&
      (nsid == nullptr ? 0 : nsid->AsUint()) == target.nsid) {
    return true;
  }
  const std::string path =
      target.block_device.empty() ? AgingFilePath(target) : target.block_device;
  return device != nullptr && device->AsString() == path;
}

}  // namespace

Status CheckStudyRegions(const config::AgingTarget& target, const WritePass& pass,
                         std::uint64_t capacity) {
  const std::string& device = target.block_device.empty() ? AgingFilePath(target)
                                                          : target.block_device;
  const std::uint64_t begin = pass.offset;
  const std::uint64_t end =
      pass.length != 0 ? pass.offset + pass.length : std::max(capacity, pass.offset);
  std::vector<std::string> problems;
  const std::vector<Json> studies = ListStudies(pass.state_directory, &problems);
  if (!problems.empty()) {
    return Refuse(device,
                  "a retention study record in " + RetentionDirectory(pass.state_directory) +
                      " cannot be trusted, so the region it holds is unknown: " + problems[0],
                  "repair the record, or move it out of that directory to release what it "
                  "holds");
  }
  for (const Json& study : studies) {
    const Json* name = study.Find("study");
    const Json* state = study.Find("state");
    const std::string st = state ? state->AsString() : "";
    if (st != "writing" && st != "baseline" && st != "active") continue;
    if (name == nullptr || name->AsString() == pass.study || !SameTarget(study, target)) continue;
    const Json* region = study.Find("region");
    const std::uint64_t offset = region && region->Find("offset") ? region->Find("offset")->AsUint() : 0;
    const std::uint64_t length = region && region->Find("length") ? region->Find("length")->AsUint() : 0;
    if (offset < end && begin < offset + length) {
      return Refuse(device,
                    "bytes " + Range(begin, end) + " overlap the region " +
                        Range(offset, offset + length) + " held by retention study " +
                        Quote(name->AsString()) + " (" + st + ", " +
                        StudyPath(pass.state_directory, name->AsString()) + ")",
                    "end the study first: drivewatch retention end " + name->AsString());
    }
  }
  return Ok{};
}

Status CheckWritePass(const config::AgingTarget& target, int fd, const WritePass& pass,
                      const SystemPaths& paths) {
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    return SysError(errno, "aging target " + Quote(target.name), "fstat");
  }
  std::uint64_t capacity = static_cast<std::uint64_t>(st.st_size);
  if (!target.block_device.empty()) {
    if (!S_ISBLK(st.st_mode)) {
      return Refuse(target.block_device,
                    "it is " + FileKind(st.st_mode) + ", not a block device",
                    "aging.targets.block_device names a whole device such as /dev/nvme1n1; "
                    "to age a file, give target " + Quote(target.name) +
                        " a directory instead, where drivewatch writes only its own file");
    }
    if (Status s = CheckBeforeWrite(target, fd, st.st_rdev, paths); !s) return s;
    std::uint64_t bytes = 0;
    if (::ioctl(fd, BLKGETSIZE64, &bytes) == 0) capacity = bytes;
  } else if (!target.directory.empty()) {
    const std::string path = AgingFilePath(target);
    struct stat named;
    if (!S_ISREG(st.st_mode) || ::lstat(path.c_str(), &named) != 0 ||
        !S_ISREG(named.st_mode) || named.st_dev != st.st_dev || named.st_ino != st.st_ino) {
      return Refuse(path, "the open file is not this target's own regular file any more",
                    kNoOverride);
    }
    if (st.st_nlink != 1) {
      return Refuse(path,
                    "it has " + std::to_string(st.st_nlink) +
                        " hard links; writing it would change another file",
                    "remove it; " + std::string(kNoOverride));
    }
  } else {
    return Error{EINVAL, -1,
                 "aging target " + Quote(target.name) + " has neither block_device nor directory"};
  }
  return CheckStudyRegions(target, pass, capacity);
}

}  // namespace drivewatch::aging
