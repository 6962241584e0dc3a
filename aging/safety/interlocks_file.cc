// SPDX-License-Identifier: Apache-2.0
// The interlocks of a directory target: drivewatch's own file in the
// operator's test directory, and the free-space reserve it must leave.
#include "aging/safety/interlocks.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <optional>
#include <utility>
#include <string>

#include "aging/retention/retention_study.h"
#include "aging/safety/interlocks_refusal.h"
#include "config/util/durable_file.h"
#include "config/util/sys.h"
#include "config/util/text.h"

namespace drivewatch::aging {
namespace {

using interlocks_detail::Humanize;
using interlocks_detail::KeyFor;
using interlocks_detail::kNoOverride;
using interlocks_detail::Refuse;
using util::FdCloser;
using util::Quote;
using util::SysError;

Error DirectoryError(const config::AgingTarget& target, int err) {
  const std::string directory = "aging target " + Quote(target.name) + ": directory " +
                                target.directory + " (aging.targets.directory) ";
  if (err == ENOENT) return Error{err, -1, directory + "does not exist"};
  return SysError(err, directory + "is not usable");
}

}  // namespace

std::string AgingFilePath(const config::AgingTarget& target) {
  return target.directory + "/drivewatch-aging-" + target.name + ".dat";
}

namespace interlocks_detail {

Status CheckReserve(const config::AgingTarget& target, const std::string& what,
                    long double growth, const std::string& making,
                    const std::string& remedy) {
  struct statvfs vfs;
  if (::statvfs(target.directory.c_str(), &vfs) != 0) {
    return DirectoryError(target, errno);
  }
  const long double frsize = vfs.f_frsize;
  const long double total = static_cast<long double>(vfs.f_blocks) * frsize;
  const long double available = static_cast<long double>(vfs.f_bavail) * frsize;
  const long double free_after = available - growth;
  const long double reserve = target.min_free_ratio * total;
  if (free_after < reserve) {
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%g%%", target.min_free_ratio * 100);
    return Refuse(what,
                  making + " would leave " + Humanize(free_after < 0 ? 0 : free_after) +
                      " free of " + Humanize(total) + " on its file system (" +
                      Humanize(available) + " free now), below the reserve of " + ratio +
                      " (" + Humanize(reserve) + ")",
                  remedy + " or " + KeyFor(target, "free_space_reserve"));
  }
  return Ok{};
}

}  // namespace interlocks_detail

Status CheckFileReserve(const config::AgingTarget& target, std::uint64_t size) {
  const std::string path = AgingFilePath(target);
  // What the file already holds is not taken again.
  long double allocated = 0;
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    allocated = static_cast<long double>(st.st_blocks) * 512;
  }
  return interlocks_detail::CheckReserve(target, path,
                                         static_cast<long double>(size) - allocated,
                                         "making it " + Humanize(size), "lower file_size");
}

std::string AgingFileRecordPath(const std::string& state_directory,
                                const config::AgingTarget& target) {
  return state_directory + "/files/" + target.name + ".json";
}

namespace interlocks_detail {

Expected<std::optional<OwnRecord>> ReadOwnRecord(const std::string& path,
                                                 std::string_view noun) {
  auto bytes = ReadWholeFile(path, 64 * 1024, noun);
  if (!bytes && bytes.error().errnum == ENOENT) return std::optional<OwnRecord>{};
  if (!bytes) return bytes.error();
  auto record = ParseChecksummedRecord(*bytes, path, noun);
  if (!record) return record.error();
  const Json* device = Find(*record, "device");
  const Json* inode = Find(*record, "inode");
  const Json* birth = Find(*record, "birth_ns");
  const Json* named = Find(*record, "path");
  if (const Json* making = Find(*record, "making_since_ns"); making != nullptr) {
    if (!making->is_number() || AsUint(*making, 0) == 0 || named == nullptr ||
        AsString(*named).empty()) {
      return Error{EBADMSG, -1,
                   path + ": damaged " + std::string(noun) +
                       ": expected the path and making_since_ns of what "
                       "drivewatch was about to make"};
    }
    OwnRecord intent;
    intent.path = AsString(*named);
    intent.record = *record;
    intent.making_since_ns = AsUint(*making);
    return std::optional<OwnRecord>(std::move(intent));
  }
  unsigned maj = 0, min = 0;
  char tail = 0;
  if (device == nullptr || inode == nullptr || !inode->is_number() ||
      AsUint(*inode, 0) == 0 || birth == nullptr || !birth->is_number() ||
      std::sscanf(AsString(*device).c_str(), "%u:%u%c", &maj, &min, &tail) != 2) {
    return Error{EBADMSG, -1, path + ": damaged " + std::string(noun) +
                                  ": expected the device (\"MAJOR:MINOR\"), inode and "
                                  "birth_ns of what drivewatch made"};
  }
  return std::optional<OwnRecord>(OwnRecord{makedev(maj, min), static_cast<ino_t>(AsUint(*inode)),
                                            AsUint(*birth), named ? AsString(*named) : "", *record,
                                            0});
}

std::uint64_t BirthNs(const std::string& path) {
  struct statx stx {};
  if (::statx(AT_FDCWD, path.c_str(), AT_SYMLINK_NOFOLLOW, STATX_BTIME, &stx) != 0 ||
      (stx.stx_mask & STATX_BTIME) == 0 || stx.stx_btime.tv_sec < 0) {
    return 0;
  }
  return static_cast<std::uint64_t>(stx.stx_btime.tv_sec) * 1'000'000'000u + stx.stx_btime.tv_nsec;
}

bool OwnRecord::Names(const struct stat& st, const std::string& at) const {
  if (making_since_ns != 0) return false;
  const std::uint64_t birth = BirthNs(at);
  return device == st.st_dev && inode == st.st_ino &&
         (birth_ns == 0 || birth == 0 || birth_ns == birth);
}

bool OwnRecord::MadeSince(const struct stat& st, const std::string& at) const {
  if (making_since_ns == 0 || at != path) return false;
  std::uint64_t born = BirthNs(at);
  if (born == 0 && st.st_ctim.tv_sec >= 0) {
    born = static_cast<std::uint64_t>(st.st_ctim.tv_sec) * 1'000'000'000u + st.st_ctim.tv_nsec;
  }
  return born >= making_since_ns;
}

Status WriteOwnRecord(const std::string& record_path, const config::AgingTarget& target,
                      const std::string& path, const struct stat& st, Json extra) {
  const std::string dir = record_path.substr(0, record_path.rfind('/'));
  if (Status s = EnsureDirectory(dir); !s) return s;
  Json record = Json::object();
  record["version"] = 2;
  record["target"] = target.name;
  record["path"] = path;
  record["device"] = std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
  record["inode"] = static_cast<std::uint64_t>(st.st_ino);
  record["birth_ns"] = BirthNs(path);
  for (auto& [k, v] : extra.items()) record[k] = v;
  return WriteFileAtomically(record_path, SerializeStudy(record));
}

Status WriteIntentRecord(const std::string& record_path, const config::AgingTarget& target,
                         const std::string& path, Json extra) {
  const std::string dir = record_path.substr(0, record_path.rfind('/'));
  if (Status s = EnsureDirectory(dir); !s) {
    return Error{s.error().errnum, -1,
                 path + ": cannot record that drivewatch is making it: " + s.error().message};
  }
  // The coarse clock is the one the kernel stamps files with: what is made
  // after this moment is never stamped before it.
  struct timespec now {};
  ::clock_gettime(CLOCK_REALTIME_COARSE, &now);
  Json record = Json::object();
  record["version"] = 2;
  record["target"] = target.name;
  record["path"] = path;
  record["making_since_ns"] = static_cast<std::uint64_t>(now.tv_sec) * 1'000'000'000u + now.tv_nsec;
  for (auto& [k, v] : extra.items()) record[k] = v;
  if (Status s = WriteFileAtomically(record_path, SerializeStudy(record)); !s) {
    return Error{s.error().errnum, -1,
                 path + ": cannot record that drivewatch is making it: " + s.error().message};
  }
  return Ok{};
}

Status CheckAgingDirectory(const config::AgingTarget& target) {
  if (target.directory.empty()) {
    return Error{
        EINVAL, -1,
        "aging target " + Quote(target.name) + " is not a directory target"};
  }
  struct stat dir_st;
  if (::stat(target.directory.c_str(), &dir_st) != 0) {
    return DirectoryError(target, errno);
  }
  if (!S_ISDIR(dir_st.st_mode)) return DirectoryError(target, ENOTDIR);
  return Ok{};
}

}  // namespace interlocks_detail

namespace {

using interlocks_detail::OwnRecord;
using interlocks_detail::ReadOwnRecord;
using interlocks_detail::WriteOwnRecord;

constexpr std::string_view kRecordNoun = "aging file record";

// A file drivewatch made before it kept records of its files is known by
// the retention study that lives in it: a study record of this state
// directory naming its path.
bool HeldByLegacyStudy(const std::string& state_directory, const std::string& path) {
  for (const Json& study : ListStudies(state_directory)) {
    const Json* device = Find(study, "device");
    if (device != nullptr && AsString(*device) == path) return true;
  }
  return false;
}

std::string Described(const struct stat& st) {
  char when[64] = "an unknown time";
  std::tm tm{};
  if (::gmtime_r(&st.st_mtime, &tm) != nullptr) {
    std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
  }
  return Humanize(static_cast<long double>(st.st_size)) + ", last modified " + when;
}

}  // namespace

namespace interlocks_detail {

Expected<StorageMap> CheckOwnFile(const config::AgingTarget& target, int fd,
                                  const std::string& state_directory, const SystemPaths& paths) {
  const std::string path = AgingFilePath(target);
  struct stat st;
  struct stat named;
  if (::fstat(fd, &st) != 0) return SysError(errno, path, "fstat");
  if (!S_ISREG(st.st_mode) || ::lstat(path.c_str(), &named) != 0 || !S_ISREG(named.st_mode) ||
      named.st_dev != st.st_dev || named.st_ino != st.st_ino) {
    return Refuse(path, "the open file is not this target's own regular file any more",
                  kNoOverride);
  }
  if (st.st_nlink != 1) {
    return Refuse(path,
                  "it has " + std::to_string(st.st_nlink) +
                      " hard links; writing it would change another file",
                  "remove it; " + std::string(kNoOverride));
  }
  auto map = ResolveStorage(fd, paths);
  if (!map) return Refuse(path, map.error().message, kNoOverride);
  auto own = ReadOwnRecord(AgingFileRecordPath(state_directory, target), kRecordNoun);
  if (!own) {
    return Refuse(path, "whether drivewatch made it cannot be told: " + own.error().message,
                  "remove the record and the file if the file is drivewatch's; " +
                      std::string(kNoOverride));
  }
  // Made, but killed before its record was: still empty, born after the
  // record of intent. Now recorded in full.
  const bool interrupted = own->has_value() && (*own)->MadeSince(st, path) && st.st_size == 0;
  if (interrupted || (!own->has_value() && HeldByLegacyStudy(state_directory, path))) {
    if (Status s = WriteOwnRecord(AgingFileRecordPath(state_directory, target), target, path,
                                  st);
        !s) {
      return Refuse(path, "cannot record that drivewatch made it: " + s.error().message,
                    kNoOverride);
    }
    own = std::optional<OwnRecord>(OwnRecord{st.st_dev, st.st_ino, 0, path, Json::object()});
  }
  if (!own->has_value() || !(*own)->Names(st, path)) {
    return Refuse(
        path,
        "it exists, but drivewatch did not create it (" + Described(st) +
            (own->has_value() && (*own)->making_since_ns == 0
                 ? "; " + AgingFileRecordPath(state_directory, target) + " records another file"
                 : "; no record of it in " + AgingFileRecordPath(state_directory, target)) +
            ")",
        "move it away, or remove it if its data may be lost; " + std::string(kNoOverride));
  }
  if (Status s = CheckFileNotInUse(path, *map, paths); !s) return s.error();
  return map;
}

}  // namespace interlocks_detail

namespace {

// The file just made at `path` (`st`) recorded in full, and its directory
// entry made durable; a file that cannot be recorded is removed.
Status RecordMadeFile(const config::AgingTarget& target, const WritePass& pass,
                      const std::string& path, const struct stat& st) {
  Status recorded =
      WriteOwnRecord(AgingFileRecordPath(pass.state_directory, target), target, path, st);
  if (!recorded) {
    ::unlink(path.c_str());
    return Error{recorded.error().errnum, -1,
                 path + ": cannot record that drivewatch made it: " + recorded.error().message};
  }
  (void)util::FsyncDirectory(target.directory);  // best effort, as before
  return Ok{};
}

}  // namespace

Expected<std::string> PrepareAgingFile(const config::AgingTarget& target, const WritePass& pass,
                                       const SystemPaths& paths) {
  if (Status dir = interlocks_detail::CheckAgingDirectory(target); !dir) return dir.error();
  const std::string path = AgingFilePath(target);
  const std::uint64_t size = target.file_size;

  // Only ever our own regular file: not a symlink, device, FIFO, a hard
  // link to somebody else's file, or a file somebody else put there.
  struct stat st;
  bool created = false;
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode)) {
      return Refuse(path, "it exists and is not a regular file",
                    "remove it; " + std::string(kNoOverride));
    }
  } else if (errno == ENOENT) {
    if (auto ok = CheckFileReserve(target, size); !ok) return ok.error();
    // The record of intent comes first: a crash after the making leaves an
    // empty file that record claims (CheckOwnFile takes it), not one no
    // record names.
    if (Status s = interlocks_detail::WriteIntentRecord(
            AgingFileRecordPath(pass.state_directory, target), target, path);
        !s) {
      return s.error();
    }
    created = true;
  } else {
    return SysError(errno, path);
  }
  const int flags = O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | (created ? O_CREAT | O_EXCL : 0);
  FdCloser fd(::open(path.c_str(), flags, 0640));
  if (fd.get() < 0) {
    const int err = errno;
    if (err == ELOOP) {
      return Refuse(path, "it is a symbolic link",
                    "remove it; " + std::string(kNoOverride));
    }
    if (created) std::remove(AgingFileRecordPath(pass.state_directory, target).c_str());
    if (err == EEXIST) {
      return Refuse(path, "it appeared while drivewatch was about to create it", kNoOverride);
    }
    return SysError(err, path, "open");
  }
  const auto fail = [&](const std::string& what) -> Error {
    const int err = errno;
    if (created) ::unlink(path.c_str());
    return SysError(err, path, what);
  };
  if (::fstat(fd.get(), &st) != 0) return fail("fstat");
  if (created) {
    if (Status s = RecordMadeFile(target, pass, path, st); !s) return s.error();
  }
  // Growing or shrinking the file changes which bytes it holds: it goes
  // through the write gate first, like any write (a study in it, a loop
  // device over it that is mounted, a file drivewatch did not make).
  WritePass resize = pass;
  resize.resizes = static_cast<std::uint64_t>(st.st_size) != size;
  if (Status s = CheckWritePass(target, fd.get(), resize, paths); !s) return s.error();
  if (resize.resizes && !created) {
    if (auto ok = CheckFileReserve(target, size); !ok) return ok.error();
  }
  if (static_cast<std::uint64_t>(st.st_size) > size &&
      ::ftruncate(fd.get(), static_cast<off_t>(size)) != 0) {
    return fail("ftruncate");
  }
  if (size > 0 && ::fallocate(fd.get(), 0, 0, static_cast<off_t>(size)) != 0) {
    if (errno != EOPNOTSUPP) return fail("fallocate");
    // No fallocate (e.g. some network file systems): glibc writes zeros.
    if (const int rc = ::posix_fallocate(fd.get(), 0, static_cast<off_t>(size));
        rc != 0) {
      errno = rc;
      return fail("posix_fallocate");
    }
  }
  if (::fsync(fd.get()) != 0) return fail("fsync");
  return path;
}

}  // namespace drivewatch::aging
