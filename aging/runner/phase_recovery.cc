// SPDX-License-Identifier: Apache-2.0
// Recovery at start-up (aging/runner/phase_runner.h): every checkpoint a run left
// behind without reaching the history is recorded as "interrupted".
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "aging/history/history.h"
#include "aging/history/run_record.h"
#include "aging/phases/phase.h"
#include "aging/runner/phase_lock.h"
#include "aging/safety/interlocks.h"
#include "aging/runner/phase_runner.h"
#include "config/util/durable_file.h"
#include "config/util/log.h"
#include "probes/drive/nvme_drive_layer.h"

namespace drivewatch::aging {
namespace {

using phase_detail::StateLock;
using phase_detail::TargetLockPath;

std::string PhaseOf(const Json& record) {
  const Json* p = Find(record, "phase");
  return p ? AsString(*p) : std::string("?");
}

// Whether the history already holds the run of a checkpoint: a run killed
// between appending its record and removing its checkpoint, whose
// checkpoint is only left to remove. A record is that run's when it has the
// run id and the same start: an id alone could be another process's run
// started in the same millisecond (RunId), which must not hide this one.
bool IsRecorded(HistoryFile& history, const Json& id, const Json* start) {
  if (!id.is_string() || start == nullptr) return false;
  const double at = AsDouble(*start, -1);
  if (at < 0) return false;
  bool found = false;
  auto read = history.ForEach([&](Json&& r) {
    if (found || !IsRunRecord(r)) return;
    const Expected<RunRecord> run = ReadRunHeader(r, RecordFields::kPresent);
    // Both starts went through the same JSON number formatting; allow for
    // a microsecond of rounding all the same.
    found = run && run->id == AsString(id) && run->start &&
            std::fabs(*run->start - at) < 1e-6;
  });
  return read && found;
}

// Puts back what the run changed on its drive (its checkpoint's
// "restore"), through `open`, or the device's own controller. A reboot or a
// controller reset has undone it already (the phase sets features with
// SV=0); the restore is for a crash of drivewatch alone. Returns what to
// add to the record's reason.
std::string Restore(const Json& record, const ControllerOpener& open) {
  const Json* restore = Find(record, "restore");
  if (restore == nullptr || restore->is_null()) return "";
  const Json* device = Find(record, "device");
  if (device == nullptr || !device->is_string() || AsString(*device).empty()) {
    return "; the drive's settings it changed were not restored: the checkpoint names no device";
  }
  std::unique_ptr<Controller> ctrl;
  int fd = -1;
  if (open) {
    ctrl = open(AsString(*device));
  } else {
    fd = ::open(AsString(*device).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) ctrl = NvmeControllerOn(fd, AsString(*device));
  }
  std::string out;
  if (ctrl == nullptr) {
    out = "; the drive's settings it changed were not restored: cannot open " +
          AsString(*device) + (fd < 0 && !open ? std::string(": ") + std::strerror(errno) : "");
  } else if (Expected<std::string> done = RestoreDriveSettings(*ctrl, *restore); done) {
    out = "; " + *done;
  } else {
    out = "; the drive's settings it changed were not restored: " + done.error().message;
  }
  ctrl.reset();
  if (fd >= 0) ::close(fd);
  if (out.find("not restored") == std::string::npos) {
    log::Info("phase " + PhaseOf(record) + ": recovery" + out);
  } else {
    log::Warn("phase " + PhaseOf(record) + ": recovery" + out);
  }
  return out;
}

// Writes back the state file the kind keeps beside the history, from the
// checkpoint's "resume" (aging/phases/phase.h, PhaseReport::resume), when the run
// died before it saved the file itself. The checkpoint is input read back
// from disk: the file must be "<directory>/<phase>.<ext>" under the state
// directory, the content a JSON object. Returns what to add to the record's
// reason; an Error (the file cannot be written) keeps the checkpoint.
Expected<std::string> WriteBackResume(const std::string& state_directory, const Json& record) {
  const Json* resume = Find(record, "resume");
  if (resume == nullptr || resume->is_null()) return std::string();
  const Json* file = resume->is_object() ? Find(*resume, "file") : nullptr;
  const Json* content = resume->is_object() ? Find(*resume, "content") : nullptr;
  const std::string phase = PhaseOf(record);
  const auto valid_word = [](std::string_view w) {
    if (w.empty() || w.front() < 'a' || w.front() > 'z') return false;
    for (char c : w) {
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_')) return false;
    }
    return true;
  };
  std::string why;
  std::string name;
  if (file == nullptr || !file->is_string()) {
    why = "resume.file: expected a path under the state directory";
  } else {
    name = AsString(*file);
    const std::size_t slash = name.find('/');
    const std::string base = slash == std::string::npos ? "" : name.substr(slash + 1);
    const std::size_t dot = base.rfind('.');
    if (slash == std::string::npos || !valid_word(std::string_view(name).substr(0, slash)) ||
        dot == std::string::npos || base.substr(0, dot) != phase ||
        !valid_word(std::string_view(base).substr(dot + 1)) || phase.find('/') != std::string::npos) {
      why = "resume.file: \"" + name + "\" is not <directory>/" + phase + ".<ext>";
    }
  }
  if (why.empty() && (content == nullptr || !content->is_object())) {
    why = "resume.content: expected a JSON object";
  }
  if (!why.empty()) {
    log::Warn("phase " + phase + ": recovery: the checkpoint's resume state is damaged (" + why +
              "); it is not written back");
    return "; its checkpoint's resume state was damaged and not written back (" + why + ")";
  }
  const std::string path = state_directory + "/" + name;
  const std::string text = DumpJson(*content) + "\n";
  if (auto now = ReadWholeFile(path, kMaxCheckpointBytes, "a resume state file");
      now && *now == text) {
    return std::string();  // the run saved it itself
  }
  if (Status s = EnsureDirectory(path.substr(0, path.rfind('/'))); !s) return s.error();
  if (Status s = WriteFileAtomically(path, text); !s) return s.error();
  log::Info("phase " + phase + ": recovery: " + path + " brought up to the run's last checkpoint");
  return "; " + name + " brought up to its last checkpoint";
}

Json ReadCheckpoint(const std::string& path, const std::string& phase, bool* readable,
                    std::string* why) {
  // A checkpoint becomes a history record. One a little past a record's
  // bound is still taken, so its results stay on disk in the history (a
  // damaged record there) rather than being dropped with the checkpoint.
  auto text = ReadWholeFile(path, kMaxCheckpointBytes, "a phase checkpoint");
  auto parsed = text ? ParseJson(*text) : Expected<Json>(text.error());
  *readable = parsed && parsed->is_object();
  if (*readable) return *parsed;
  *why = parsed ? "not a JSON object" : parsed.error().message;
  Json record = Json::object();
  record["version"] = 1;
  record["phase"] = phase;
  return record;
}

}  // namespace

Status phase_detail::ReleaseLeftoverWork(const std::string& state_directory,
                                         const std::string& target) {
  auto work = FindWorkDirectory(state_directory, target);
  if (!work) return work.error();
  if (!work->has_value()) return Ok{};
  if (auto params = config::DefaultPhaseParams((*work)->kind)) {
    Status released = std::visit(
        [&](const auto& p) { return KindReleaseWork(p, (*work)->path); }, *params);
    if (!released) {
      return Error{released.error().errnum, -1,
                   "cannot release the work directory " + (*work)->path + " of a " +
                       (*work)->kind + " run: " + released.error().message};
    }
  }
  return RemoveWorkDirectory(state_directory, target);
}

namespace {

// The work directory the interrupted run of `record` left, removed; why
// not is logged.
void ReleaseWorkOf(const std::string& state_directory, const Json& record) {
  const Json* target = Find(record, "target");
  if (target == nullptr || !target->is_string()) return;
  if (Status s = phase_detail::ReleaseLeftoverWork(state_directory, AsString(*target)); !s) {
    log::Error("phase " + PhaseOf(record) + ": " + s.error().message);
  }
}

}  // namespace

std::optional<Json> phase_detail::RecordInterrupted(const std::string& state_directory,
                                                    const std::string& phase,
                                                    const std::string& held_target,
                                                    Status* error,
                                                    const ControllerOpener& open) {
  *error = Ok{};
  const std::string path = CheckpointPath(state_directory, phase);
  if (access(path.c_str(), F_OK) != 0) return std::nullopt;
  bool readable = false;
  std::string why;
  const Json record = ReadCheckpoint(path, phase, &readable, &why);
  std::optional<StateLock> target_lock;
  if (const Json* target = Find(record, "target");
      target && target->is_string() && AsString(*target) != held_target) {
    auto lock = StateLock::Take(TargetLockPath(state_directory, AsString(*target)),
                                "recovery of " + path);
    if (!lock && lock.error().errnum == EBUSY) {
      log::Info("phase " + PhaseOf(record) + ": left the checkpoint " + path +
                " to its run, which is still going (target " + AsString(*target) + " is " +
                lock.error().message + ")");
      *error = Error{EBUSY, -1,
                     "the checkpoint " + path + " belongs to a run still going (target " +
                         AsString(*target) + " is " + lock.error().message + ")"};
      return std::nullopt;
    }
    if (lock) target_lock = std::move(*lock);
  }
  ReleaseWorkOf(state_directory, record);
  HistoryFile history(HistoryPath(state_directory));
  if (const Json* id = Find(record, "run");
      id && IsRecorded(history, *id, Find(record, "start"))) {
    std::remove(path.c_str());
    log::Warn("phase " + PhaseOf(record) + ": removed the stale checkpoint " + path +
              " of run " + AsString(*id) + ", which the history already records");
    return std::nullopt;
  }
  const double at = Find(record, "checkpoint") ? AsDouble(*Find(record, "checkpoint")) : 0;
  std::string resumed;
  if (readable) {
    auto written = WriteBackResume(state_directory, record);
    if (!written) {
      log::Error("phase " + PhaseOf(record) + ": cannot write back the state of the interrupted run: " +
                 written.error().message);
      *error = Error{written.error().errnum, -1,
                     "cannot write back the state its checkpoint " + path +
                         " carries: " + written.error().message};
      return std::nullopt;  // keep the checkpoint: nothing may be lost
    }
    resumed = *written;
  }
  const std::string restored = readable ? Restore(record, open) : "";
  Json clean = Json::object();
  for (const auto& [k, v] : Members(record)) {
    if (k != "checkpoint" && k != "restore" && k != "resume") clean[k] = v;
  }
  clean["outcome"] = "interrupted";
  clean["reason"] = readable ? "drivewatch stopped while the phase ran (crash, SIGKILL or "
                               "power cut); results up to its last checkpoint are kept" +
                                   resumed + restored
                             : "drivewatch stopped while the phase ran, and its checkpoint "
                               "was unreadable: " + why;
  if (at > 0) {
    clean["end"] = at;
    if (const Json* start = Find(clean, "start")) clean["duration_seconds"] = at - AsDouble(*start);
  }
  if (Status s = history.Append(clean); !s) {
    log::Error("phase " + PhaseOf(clean) + ": cannot record the interrupted run: " +
               s.error().message);
    *error = Error{s.error().errnum, -1,
                   "cannot record the interrupted run of its checkpoint " + path + ": " +
                       s.error().message};
    return std::nullopt;  // keep the checkpoint: nothing may be lost
  }
  std::remove(path.c_str());
  log::Warn("phase " + PhaseOf(clean) +
            ": a run was interrupted (drivewatch stopped while it ran); recorded in the history");
  return clean;
}

std::vector<Json> RecoverInterrupted(const std::string& state_directory,
                                     const ControllerOpener& open) {
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
  for (const std::string& name : names) {
    Status error = Ok{};
    if (auto recorded = phase_detail::RecordInterrupted(
            state_directory, name.substr(0, name.size() - 11), "", &error, open)) {
      out.push_back(std::move(*recorded));
    }
  }
  return out;
}

}  // namespace drivewatch::aging
