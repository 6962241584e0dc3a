// SPDX-License-Identifier: Apache-2.0
#include "aging/retention/study_register.h"

#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "aging/retention/retention_study.h"
#include "config/util/durable_file.h"

namespace drivewatch::aging {
namespace {

constexpr std::string_view kNoun = "study register entry";
// Entries are a few hundred bytes; anything much larger is not one.
constexpr std::size_t kMaxEntryBytes = 64 * 1024;

std::string EntryPath(const std::string& dir, const std::string& id) {
  return dir + "/" + id + ".json";
}

bool IsStudyId(std::string_view s) {
  return s.size() == 16 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

Expected<RegisteredStudy> ParseEntry(const std::string& bytes, const std::string& path,
                                     const std::string& file_id) {
  auto record = ParseChecksummedRecord(bytes, path, kNoun);
  if (!record) return record.error();
  const auto damaged = [&](const std::string& problem) {
    return Error{EBADMSG, -1, path + ": damaged " + std::string(kNoun) + ": " + problem};
  };
  RegisteredStudy r;
  r.file = path;
  for (const auto& [key, out] : {std::pair<const char*, std::string*>{"study", &r.study},
                                 {"id", &r.id},
                                 {"state_directory", &r.state_directory}}) {
    const Json* v = Find(*record, key);
    if (v == nullptr || !v->is_string() || AsString(*v).empty()) {
      return damaged(std::string(key) + " is not a non-empty string");
    }
    *out = AsString(*v);
  }
  if (r.id != file_id) {
    return damaged("id \"" + r.id + "\" is not the file's name (expected \"" + file_id + "\")");
  }
  const Json* storage = Find(*record, "storage");
  if (storage == nullptr) return damaged("no storage");
  auto extents = StorageFromJson(*storage, "");
  if (!extents) return damaged(extents.error().message);
  r.storage = std::move(*extents);
  return r;
}

}  // namespace

bool StudyHoldsRegion(const std::string& state) {
  return state == "writing" || state == "baseline" || state == "active";
}

Status RegisterStudy(const std::string& register_directory, const std::string& state_directory,
                     const Json& study) {
  const Json* id = Find(study, "id");
  const Json* name = Find(study, "study");
  const Json* storage = Find(study, "storage");
  if (id == nullptr || !IsStudyId(AsString(*id)) || name == nullptr || storage == nullptr) {
    return Error{EINVAL, -1, "a study register entry needs the study's name, id and storage"};
  }
  if (Status s = EnsureDirectory(register_directory); !s) {
    return Error{s.error().errnum, -1,
                 "cannot enter retention study \"" + AsString(*name) +
                     "\" in the host's study register: " + s.error().message +
                     " (every drivewatch on the host reads it before writing; make it writable, "
                     "or set [state] study_register to a directory that is, in every config)"};
  }
  Json entry = Json::object();
  entry["version"] = 2;
  entry["study"] = AsString(*name);
  entry["id"] = AsString(*id);
  entry["state_directory"] = state_directory;
  entry["storage"] = *storage;
  const std::string path = EntryPath(register_directory, AsString(*id));
  if (Status s = WriteFileAtomically(path, SerializeStudy(entry)); !s) {
    return Error{s.error().errnum, -1,
                 "cannot enter retention study \"" + AsString(*name) +
                     "\" in the host's study register: " + s.error().message};
  }
  return Ok{};
}

Status UnregisterStudy(const std::string& register_directory, const std::string& id) {
  if (!IsStudyId(id)) return Ok{};
  const std::string path = EntryPath(register_directory, id);
  if (std::remove(path.c_str()) != 0 && errno != ENOENT) {
    return Error{errno, -1, path + ": remove: " + std::strerror(errno)};
  }
  return Ok{};
}

std::vector<RegisteredStudy> ReadStudyRegister(const std::string& register_directory,
                                               std::vector<std::string>* problems) {
  std::vector<RegisteredStudy> out;
  DIR* d = ::opendir(register_directory.c_str());
  if (d == nullptr) {
    if (errno != ENOENT && problems) {
      problems->push_back(register_directory + ": the study register cannot be read: " +
                          std::strerror(errno));
    }
    return out;
  }
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() == 21 && name.ends_with(".json")) names.push_back(name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    const std::string id = name.substr(0, 16);
    if (!IsStudyId(id)) continue;
    const std::string path = register_directory + "/" + name;
    auto bytes = ReadWholeFile(path, kMaxEntryBytes, kNoun);
    if (!bytes) {
      if (bytes.error().errnum == ENOENT) continue;  // removed as we listed
      if (problems) problems->push_back(path + ": " + bytes.error().message);
      continue;
    }
    auto entry = ParseEntry(*bytes, path, id);
    if (!entry) {
      if (problems) problems->push_back(entry.error().message);
      continue;
    }
    out.push_back(std::move(*entry));
  }
  return out;
}

void RegisterHeldStudies(const std::string& register_directory,
                         const std::string& state_directory, std::vector<std::string>* problems) {
  std::vector<std::string> ignored;
  const auto entered = ReadStudyRegister(register_directory, &ignored);
  // A record that does not load cannot be entered, and the write gate of
  // another state directory cannot see the region it may hold: say so.
  std::vector<std::string> damaged;
  const std::vector<Json> studies = ListStudies(state_directory, &damaged);
  if (problems) {
    for (const std::string& d : damaged) {
      problems->push_back(d + "; not entered in the study register " + register_directory +
                          ", so configs with other state directories do not see the region it "
                          "may hold (repair or end the study)");
    }
  }
  for (const Json& study : studies) {
    const Json* state = Find(study, "state");
    const Json* id = Find(study, "id");
    if (state == nullptr || !StudyHoldsRegion(AsString(*state)) || id == nullptr ||
        Find(study, "storage") == nullptr) {
      continue;
    }
    const bool known = std::any_of(entered.begin(), entered.end(), [&](const RegisteredStudy& r) {
      return r.id == AsString(*id);
    });
    if (known) continue;
    if (Status s = RegisterStudy(register_directory, state_directory, study); !s && problems) {
      problems->push_back(s.error().message);
    }
  }
}

}  // namespace drivewatch::aging
