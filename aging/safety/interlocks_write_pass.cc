// SPDX-License-Identifier: Apache-2.0
// The write gate every write pass goes through (DESIGN.md decision 11),
// on the very descriptor that will be written: what kind of file it is,
// then the block device's checks (aging/safety/interlocks.cc) or the directory
// target's own file (aging/safety/interlocks_file.cc), then the regions held by
// retention studies, all compared on the storage the target reaches
// (aging/safety/storage.h), never on its name.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <set>
#include <string>
#include <vector>

#include "aging/retention/retention_study.h"
#include "aging/retention/study_register.h"
#include "aging/safety/interlocks.h"
#include "aging/safety/interlocks_refusal.h"
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

const std::string& Text(const Json& j, const char* key) {
  static const std::string empty;
  const Json* v = Find(j, key);
  return v != nullptr && v->is_string() ? AsString(*v) : empty;
}

// A study that holds storage, and where it came from.
struct Holder {
  std::string name;
  std::string id;
  std::string state;
  std::string where;  // its record, or its register entry
  std::vector<StorageExtent> storage;  // empty: a record from before storage was kept
  Json record;                         // null when only the register entry is known
  std::string remedy;
};

std::string EndIt(const std::string& study, const std::string& elsewhere = "") {
  return "end the study first: drivewatch retention end " + study + elsewhere;
}

// The storage a study record's region reaches. Records written before
// storage was recorded name only their device: it is resolved now, if it
// still exists, and its region mapped, so a study made by an older
// drivewatch is compared on storage too.
std::vector<StorageExtent> StudyStorage(const Json& study, const SystemPaths& paths) {
  if (const Json* st = Find(study, "storage")) {
    if (auto extents = StorageFromJson(*st, "")) return *extents;
  }
  const std::string& device = Text(study, "device");
  const Json* region = Find(study, "region");
  if (device.empty() || region == nullptr) return {};
  auto map = ResolvePath(device, paths);
  if (!map) return {};
  return map->Map(Find(*region, "offset") ? AsUint(*Find(*region, "offset")) : 0,
                  Find(*region, "length") ? AsUint(*Find(*region, "length")) : 0);
}

// Whether an old record without storage names the drive or file `target`
// stands for: the same serial and namespace, or the same path.
bool SameTargetByName(const Json& study, const config::AgingTarget& target) {
  const Json* nsid = Find(study, "nsid");
  if (!target.serial.empty() && Text(study, "serial") == target.serial &&
      (nsid == nullptr ? 0 : AsUint(*nsid)) == target.nsid) {
    return true;
  }
  const std::string path =
      target.block_device.empty() ? AgingFilePath(target) : target.block_device;
  return Text(study, "device") == path;
}

// The bytes a write pass writes, and the storage they reach.
struct Written {
  std::string device;  // the target's path, as refusals name it
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
  std::vector<StorageExtent> storage;
};

// The studies that hold storage, each study id once.
struct Holders {
  std::vector<Holder> list;
  std::set<std::string> seen;  // study ids
};

// The studies of this state directory but the one the pass writes. A
// record that cannot be trusted holds everything: what it covers cannot
// be known.
Status AddRecordedHolders(const WritePass& pass, const SystemPaths& paths,
                          const std::string& device, Holders& holders) {
  std::vector<std::string> problems;
  for (const Json& study : ListStudies(pass.state_directory, &problems)) {
    const std::string& name = Text(study, "study");
    if (name == pass.study) {  // the study this pass writes
      holders.seen.insert(Text(study, "id"));
      continue;
    }
    holders.seen.insert(Text(study, "id"));
    if (!StudyHoldsRegion(Text(study, "state"))) continue;
    holders.list.push_back({name, Text(study, "id"), Text(study, "state"),
                            StudyPath(pass.state_directory, name), StudyStorage(study, paths),
                            study, EndIt(name)});
  }
  if (!problems.empty()) {
    return Refuse(device,
                  "a retention study record in " + RetentionDirectory(pass.state_directory) +
                      " cannot be trusted, so the region it holds is unknown: " + problems[0],
                  "repair the record, or move it out of that directory to release what it "
                  "holds");
  }
  return Ok{};
}

// Every other study the host's register knows of; an entry that cannot be
// trusted holds everything.
Status AddRegisteredHolders(const SystemPaths& paths, const std::string& device,
                            Holders& holders) {
  std::vector<std::string> problems;
  for (RegisteredStudy& entry : ReadStudyRegister(paths.study_register, &problems)) {
    if (holders.seen.count(entry.id) != 0) continue;
    holders.seen.insert(entry.id);
    auto record = LoadStudy(entry.state_directory, entry.study);
    if (!record && record.error().errnum == ENOENT) {
      // The record was removed from a state directory that is still
      // there: the study is over. A state directory that is gone (on a
      // file system not mounted now, say) still holds what it registered.
      struct stat dir;
      if (::stat(entry.state_directory.c_str(), &dir) == 0) continue;
      holders.list.push_back({entry.study, entry.id,
                              "its state directory " + entry.state_directory + " is missing",
                              entry.file, entry.storage, Json(),
                              "if that study is over, remove " + entry.file});
      continue;
    }
    if (record && Text(*record, "id") != entry.id) continue;   // a later study of that name
    if (record && !StudyHoldsRegion(Text(*record, "state"))) continue;
    holders.list.push_back({entry.study, entry.id,
                            record ? Text(*record, "state") : "record unreadable: " +
                                                                 record.error().message,
                            entry.file + ", of state directory " + entry.state_directory,
                            entry.storage, record ? *record : Json(),
                            EndIt(entry.study, " with the config whose state directory is " +
                                                   entry.state_directory)});
  }
  if (!problems.empty()) {
    return Refuse(device,
                  "an entry of the host's study register cannot be trusted, so the region it "
                  "holds is unknown: " + problems[0],
                  "repair or remove the entry once its study is over");
  }
  return Ok{};
}

// A refusal when the pass writes (or, resizing, moves) bytes `h` holds.
Status CheckHolder(const Holder& h, const config::AgingTarget& target, const WritePass& pass,
                   const StorageMap& map, const Written& w) {
  bool overlaps = false;
  std::string held;
  if (!h.storage.empty()) {
    overlaps = RecordedOverlaps(h.storage, w.storage) ||
               (pass.resizes && RecordedSharesStorage(h.storage, map.extents));
    held = h.storage.front().Describe();
    for (std::size_t i = 1; i < h.storage.size(); ++i) held += " and " + h.storage[i].Describe();
  } else if (!h.record.is_null() && SameTargetByName(h.record, target)) {
    // An old record whose device is gone: compared by name, as it was.
    const Json* region = Find(h.record, "region");
    const std::uint64_t offset =
        region && Find(*region, "offset") ? AsUint(*Find(*region, "offset")) : 0;
    const std::uint64_t length =
        region && Find(*region, "length") ? AsUint(*Find(*region, "length")) : 0;
    overlaps = (offset < w.end && w.begin < offset + length) || pass.resizes;
    held = Range(offset, offset + length) + " of " + w.device;
  }
  if (!overlaps) return Ok{};
  std::string region = held;
  if (const Json* r = Find(h.record, "region")) {
    const std::uint64_t offset = Find(*r, "offset") ? AsUint(*Find(*r, "offset")) : 0;
    const std::uint64_t length = Find(*r, "length") ? AsUint(*Find(*r, "length")) : 0;
    region = Range(offset, offset + length);
  }
  const std::string study = "retention study " + Quote(h.name) + " (" + h.state + ", " +
                            h.where + ")";
  if (pass.resizes) {
    return Refuse(w.device,
                  "changing the size of this file would cut or move bytes that " + study +
                      " holds: " + held,
                  h.remedy);
  }
  std::string on_storage;
  for (const StorageExtent& e : w.storage) on_storage += (on_storage.empty() ? "" : " and ") + e.Describe();
  return Refuse(w.device,
                "bytes " + Range(w.begin, w.end) + " (on storage " + on_storage +
                    ", which the study's " + held + " overlaps) overlap the region " + region +
                    " held by " + study,
                h.remedy);
}

}  // namespace

Status CheckStudyRegions(const config::AgingTarget& target, const WritePass& pass,
                         const StorageMap& map, const SystemPaths& paths) {
  Written w;
  w.device = target.block_device.empty() ? AgingFilePath(target) : target.block_device;
  w.begin = pass.offset;
  w.end = pass.length != 0 ? pass.offset + pass.length : std::max(map.size, pass.offset);
  w.storage = map.Map(w.begin, w.end - w.begin);

  // The studies of this state directory, then every other the host's
  // register knows of.
  Holders holders;
  if (Status s = AddRecordedHolders(pass, paths, w.device, holders); !s) return s;
  if (Status s = AddRegisteredHolders(paths, w.device, holders); !s) return s;
  for (const Holder& h : holders.list) {
    if (Status s = CheckHolder(h, target, pass, map, w); !s) return s;
  }
  return Ok{};
}

Status CheckWritePass(const config::AgingTarget& target, int fd, const WritePass& pass,
                      const SystemPaths& paths) {
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    return SysError(errno, "aging target " + Quote(target.name), "fstat");
  }
  std::optional<StorageMap> map;
  if (!target.block_device.empty()) {
    if (!S_ISBLK(st.st_mode)) {
      return Refuse(target.block_device,
                    "it is " + FileKind(st.st_mode) + ", not a block device",
                    "aging.targets.block_device names a whole device such as /dev/nvme1n1; "
                    "to age a file, give target " + Quote(target.name) +
                        " a directory instead, where drivewatch writes only its own file");
    }
    auto checked = interlocks_detail::CheckBlockDeviceWrite(target, fd, st.st_rdev, paths);
    if (!checked) return checked.error();
    map = std::move(*checked);
  } else if (!target.directory.empty()) {
    auto checked = interlocks_detail::CheckOwnFile(target, fd, pass.state_directory, paths);
    if (!checked) return checked.error();
    map = std::move(*checked);
  } else {
    return Error{EINVAL, -1,
                 "aging target " + Quote(target.name) + " has neither block_device nor directory"};
  }
  return CheckStudyRegions(target, pass, *map, paths);
}

}  // namespace drivewatch::aging
