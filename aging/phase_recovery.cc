// SPDX-License-Identifier: Apache-2.0
// Recovery at start-up (aging/phase_runner.h): every checkpoint a run left
// behind without reaching the history is recorded as "interrupted".
#include <dirent.h>

#include <cstdio>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "aging/durable_file.h"
#include "aging/history.h"
#include "aging/phase_lock.h"
#include "aging/phase_runner.h"
#include "probes/log.h"

namespace drivewatch::aging {
namespace {

using phase_detail::StateLock;
using phase_detail::TargetLockPath;

std::string PhaseOf(const Json& record) {
  const Json* p = record.Find("phase");
  return p ? p->AsString() : std::string("?");
}

}  // namespace

std::vector<Json> RecoverInterrupted(const std::string& state_directory) {
  std::vector<Json> out;
  const std::string dir = state_directory + "/phases";
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() > 11 && name.ends_with(".checkpoint")) names.push_back(name);
  }
  closedir(d);
  HistoryFile history(HistoryPath(state_directory));
  // A run killed between appending its record and removing its checkpoint
  // is already in the history: only the checkpoint is left to remove.
  std::set<std::string> recorded;
  if (!names.empty()) {
    if (auto h = history.Read()) {
      for (const Json& r : h->records) {
        if (const Json* id = r.Find("run")) recorded.insert(id->AsString());
      }
    }
  }
  for (const std::string& name : names) {
    const std::string path = dir + "/" + name;
    auto text = ReadWholeFile(path);
    auto parsed = text ? Json::Parse(*text) : Expected<Json>(text.error());
    Json record;
    if (parsed && parsed->type() == Json::Type::kObject) {
      record = *parsed;
    } else {
      record = Json::Object();
      record["version"] = 1;
      record["phase"] = name.substr(0, name.size() - 11);
    }
    // A run keeps its target's lock until its checkpoint is gone, so a
    // checkpoint whose target another process holds belongs to a run that
    // is still going (a phase run by hand while the daemon starts, or the
    // other way round): it is not interrupted. The lock is kept while this
    // checkpoint is recorded, so no run starts on the target meanwhile.
    std::optional<StateLock> target_lock;
    if (const Json* target = record.Find("target");
        target && target->type() == Json::Type::kString) {
      auto lock = StateLock::Take(TargetLockPath(state_directory, target->AsString()),
                                  "recovery of " + name);
      if (!lock && lock.error().errnum == EBUSY) {
        log::Info("phase " + PhaseOf(record) + ": left the checkpoint " + path +
                  " to its run, which is still going (target " + target->AsString() + " is " +
                  lock.error().message + ")");
        continue;
      }
      if (lock) target_lock = std::move(*lock);
    }
    if (const Json* id = record.Find("run"); id && recorded.count(id->AsString()) != 0) {
      std::remove(path.c_str());
      log::Warn("phase " + PhaseOf(record) + ": removed the stale checkpoint " + path +
                " of run " + id->AsString() + ", which the history already records");
      continue;
    }
    const double at = record.Find("checkpoint") ? record.Find("checkpoint")->AsDouble() : 0;
    Json clean = Json::Object();
    for (const auto& [k, v] : record.members()) {
      if (k != "checkpoint") clean[k] = v;
    }
    clean["outcome"] = "interrupted";
    clean["reason"] = parsed ? "drivewatch stopped while the phase ran (crash, SIGKILL or "
                               "power cut); results up to its last checkpoint are kept"
                             : "drivewatch stopped while the phase ran, and its checkpoint "
                               "was unreadable: " + (parsed ? std::string() : parsed.error().message);
    if (at > 0) {
      clean["end"] = at;
      if (const Json* start = clean.Find("start")) clean["duration_seconds"] = at - start->AsDouble();
    }
    if (Status s = history.Append(clean); !s) {
      log::Error("phase " + PhaseOf(clean) + ": cannot record the interrupted run: " +
                 s.error().message);
      continue;  // keep the checkpoint: nothing may be lost
    }
    std::remove(path.c_str());
    log::Warn("phase " + PhaseOf(clean) +
              ": a run was interrupted (drivewatch stopped while it ran); recorded in the history");
    out.push_back(std::move(clean));
  }
  return out;
}

}  // namespace drivewatch::aging
