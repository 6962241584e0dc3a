// SPDX-License-Identifier: Apache-2.0
// The interlocks of a run's work directory: where a kind whose workload is
// an application's (sqlite, pgbench) keeps its database, beside a
// directory target's own file. drivewatch makes it, records it, and
// removes it with everything in it when the run ends, or after a crash.
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "aging/safety/interlocks.h"
#include "aging/safety/interlocks_refusal.h"
#include "config/util/durable_file.h"
#include "config/util/sys.h"
#include "config/util/text.h"

namespace drivewatch::aging {
namespace {

using interlocks_detail::Humanize;
using interlocks_detail::kNoOverride;
using interlocks_detail::OwnRecord;
using interlocks_detail::Refuse;
using util::FdCloser;
using util::Quote;
using util::SysError;

constexpr std::string_view kRecordNoun = "work directory record";

// The storage the file system holding `directory` lives on: the database
// an application writes there lands somewhere in its free space, which no
// one can tell in advance, so the whole device counts as reached.
Expected<StorageMap> FileSystemStorage(const std::string& directory, const SystemPaths& paths) {
  struct stat st;
  if (::stat(directory.c_str(), &st) != 0) return SysError(errno, directory, "stat");
  auto map = ResolveBlockDevice(st.st_dev, -1, directory, paths);
  if (!map) {
    return Refuse(directory,
                  "which storage its file system lives on cannot be told, so whether a "
                  "retention study holds it cannot either: " + map.error().message,
                  "give the target a directory on a file system over a block device; " +
                      std::string(kNoOverride));
  }
  return map;
}

// Refused when something is at `path`: a run's work directory is made
// new. A leftover drivewatch's record names is removed at the start of
// every run, after its kind's release (a server stopped, say); one still
// there is one whose release failed, and is not removed around it.
Status CheckNoLeftover(const config::AgingTarget& target, const std::string& state_directory,
                       const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Ok{};
    return SysError(errno, path, "lstat");
  }
  const std::string record_path = WorkDirectoryRecordPath(state_directory, target.name);
  auto own = interlocks_detail::ReadOwnRecord(record_path, kRecordNoun);
  if (own && own->has_value() && S_ISDIR(st.st_mode) && (*own)->Names(st, path)) {
    return Refuse(
        path,
        "an earlier run's work directory is still there: its release failed (the "
        "log says why)",
        "once nothing uses it, remove it and " + record_path + "; " + std::string(kNoOverride));
  }
  return Refuse(path,
                "it exists, but drivewatch did not make it for this run or one before (" +
                    (own ? (own->has_value() && (*own)->making_since_ns == 0
                                ? "its record names another"
                                : "no record of it in " + record_path)
                         : own.error().message) +
                    ")",
                "move it away, or remove it if its data may be lost; " + std::string(kNoOverride));
}

// nftw(3) takes a plain function: the first error of a removal.
thread_local int remove_errno = 0;
thread_local std::string remove_failed;

int RemoveEntry(const char* path, const struct stat*, int type, struct FTW*) {
  // A directory that cannot be read (another account's, emptied by its
  // kind's release) goes if it is empty.
  const int rc = type == FTW_DP || type == FTW_DNR ? ::rmdir(path) : ::unlink(path);
  if (rc != 0 && errno != ENOENT && remove_errno == 0) {
    remove_errno = errno;
    remove_failed = path;
  }
  return 0;
}

}  // namespace

std::string WorkDirectoryPath(const config::AgingTarget& target) {
  return target.directory + "/drivewatch-work-" + target.name;
}

std::string WorkDirectoryRecordPath(const std::string& state_directory,
                                    const std::string& target) {
  return state_directory + "/work/" + target + ".json";
}

Expected<std::string> PrepareWorkDirectory(const config::AgingTarget& target, int fd,
                                           const WritePass& pass, const WorkSize& size,
                                           const SystemPaths& paths) {
  if (Status dir = interlocks_detail::CheckAgingDirectory(target); !dir) return dir.error();
  const std::string path = WorkDirectoryPath(target);
  // The target is still the one given, and no study holds its file.
  if (Status s = CheckWritePass(target, fd, pass, paths); !s) return s.error();
  // Nor any byte of the storage its file system lives on.
  auto storage = FileSystemStorage(target.directory, paths);
  if (!storage) return storage.error();
  WritePass whole = pass;
  whole.offset = 0;
  whole.length = 0;
  if (Status s = CheckStudyRegions(target, whole, *storage, paths); !s) {
    return Refuse(path,
                  "the file system it would be made on (" + storage->Describe() +
                      ") holds a retention study's region: " + s.error().message,
                  "give the target a directory on another file system; " +
                      std::string(kNoOverride));
  }
  if (Status s = CheckNoLeftover(target, pass.state_directory, path); !s) return s.error();
  if (Status s = interlocks_detail::CheckReserve(
          target, path, static_cast<long double>(size.bytes),
          "a " + std::string(size.kind) + " run's " + Humanize(size.bytes) + " of data",
          "lower the phase's " + std::string(size.sized_by));
      !s) {
    return s.error();
  }
  // The record of intent comes first: a crash after the mkdir leaves an
  // empty directory that record claims (RemoveWorkDirectory takes it away).
  const std::string record_path = WorkDirectoryRecordPath(pass.state_directory, target.name);
  Json extra = Json::object();
  extra["kind"] = std::string(size.kind);
  if (Status s = interlocks_detail::WriteIntentRecord(record_path, target, path, extra); !s) {
    return s.error();
  }
  if (::mkdir(path.c_str(), 0700) != 0) {
    const int err = errno;
    std::remove(record_path.c_str());
    errno = err;
    if (errno == EEXIST) {
      return Refuse(path, "it appeared while drivewatch was about to make it", kNoOverride);
    }
    return SysError(errno, path, "mkdir");
  }
  struct stat st;
  Status recorded =
      ::lstat(path.c_str(), &st) != 0
          ? Status(SysError(errno, path, "lstat"))
          : interlocks_detail::WriteOwnRecord(record_path, target, path, st, std::move(extra));
  if (!recorded) {
    ::rmdir(path.c_str());
    return Error{recorded.error().errnum, -1,
                 path + ": cannot record that drivewatch made it: " + recorded.error().message};
  }
  (void)util::FsyncDirectory(target.directory);  // best effort, as before
  return path;
}

Expected<std::optional<WorkDirectory>> FindWorkDirectory(const std::string& state_directory,
                                                         const std::string& target) {
  auto own = interlocks_detail::ReadOwnRecord(WorkDirectoryRecordPath(state_directory, target),
                                              kRecordNoun);
  if (!own) return own.error();
  if (!own->has_value()) return std::optional<WorkDirectory>{};
  const Json* kind = Find((*own)->record, "kind");
  return std::optional<WorkDirectory>(
      WorkDirectory{(*own)->path, kind != nullptr ? AsString(*kind) : ""});
}

Status RemoveWorkDirectory(const std::string& state_directory, const std::string& target) {
  const std::string record_path = WorkDirectoryRecordPath(state_directory, target);
  auto own = interlocks_detail::ReadOwnRecord(record_path, kRecordNoun);
  if (!own) return own.error();
  if (!own->has_value()) return Ok{};
  const OwnRecord& made = **own;
  struct stat st;
  if (::lstat(made.path.c_str(), &st) != 0) {
    if (errno != ENOENT) return SysError(errno, made.path, "lstat");
  } else if (S_ISDIR(st.st_mode) && made.MadeSince(st, made.path)) {
    // Made, but killed before its record was: nothing was put in it yet,
    // so it goes only if it is still empty.
    if (::rmdir(made.path.c_str()) != 0) {
      const int err = errno;
      std::remove(record_path.c_str());
      return Error{err, -1,
                   made.path +
                       ": left in place: drivewatch was killed as it made it, and "
                       "something has been put in it since (" +
                       std::strerror(err) + "; its record " + record_path + " is removed)"};
    }
  } else if (!S_ISDIR(st.st_mode) || !made.Names(st, made.path)) {
    std::remove(record_path.c_str());
    return Error{EPERM, -1,
                 made.path + ": left in place: it is not the work directory drivewatch made "
                             "any more (its record " + record_path + " is removed)"};
  } else {
    remove_errno = 0;
    remove_failed.clear();
    // Depth first, never following a symbolic link, never leaving the
    // file system: only what the run put there goes.
    if (::nftw(made.path.c_str(), RemoveEntry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) != 0 &&
        remove_errno == 0) {
      remove_errno = errno;
      remove_failed = made.path;
    }
    if (remove_errno != 0) {
      return SysError(remove_errno, remove_failed, "cannot remove the work directory's entry");
    }
  }
  if (std::remove(record_path.c_str()) != 0 && errno != ENOENT) {
    return SysError(errno, record_path, "remove");
  }
  return Ok{};
}

}  // namespace drivewatch::aging
