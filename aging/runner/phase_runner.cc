// SPDX-License-Identifier: Apache-2.0
#include "aging/runner/phase_runner.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <cstring>
#include <ctime>
#include <mutex>
#include <thread>
#include <variant>

#include "aging/history/history.h"
#include "aging/history/run_record.h"
#include "aging/phases/phase.h"
#include "aging/runner/drive_age.h"
#include "aging/runner/phase_lock.h"
#include "aging/runner/phase_target.h"
#include "config/util/durable_file.h"
#include "config/util/log.h"
#include "probes/latency/pacing.h"

namespace drivewatch::aging {
namespace {

using phase_detail::DriveLockPath;
using phase_detail::OpenedTarget;
using phase_detail::OpenTarget;
using phase_detail::RecordInterrupted;
using phase_detail::StateLock;
using phase_detail::TargetLockPath;
using phase_detail::TargetRequest;
using Clock = std::chrono::steady_clock;

double UnixSeconds(std::chrono::system_clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

// A run's id: its phase and start time to the millisecond, UTC. Ids are
// unique within a process (a run started in the millisecond of the one
// before takes the next millisecond), so a refusal and the run after it
// never share an id; across processes, recovery also matches a
// checkpoint to its record by start time (RecoverInterrupted).
std::string RunId(const std::string& phase, std::chrono::system_clock::time_point t) {
  static std::mutex mutex;
  static std::int64_t last_ms = 0;
  std::int64_t ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (ms <= last_ms) ms = last_ms + 1;
    last_ms = ms;
  }
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%dT%H%M%S", &tm);
  char frac[8];
  std::snprintf(frac, sizeof(frac), ".%03dZ", static_cast<int>(ms % 1000));
  return phase + "-" + buf + frac;
}

// The run's state shared by the phase, the watcher thread and the record.
struct RunState {
  const config::Config* config = nullptr;
  const config::PhaseConfig* phase = nullptr;
  const config::AgingTarget* target = nullptr;
  const PhaseRunnerOptions* options = nullptr;
  PhaseObserver* observer = nullptr;
  std::string id;
  std::chrono::system_clock::time_point started_wall;
  Clock::time_point started;
  std::string serial, model, firmware, device;
  std::stop_source abort;
  std::mutex mu;  // guards reason, status
  std::string reason;
  PhaseStatus status;
  bool owns_checkpoint = false;  // the phase's checkpoint file is this run's
  // The drive's SMART age when the run started (aging/runner/drive_age.h); null
  // for a target without a controller.
  Json drive_at_start;

  // What the kind may write (KindWriteScope: a retention study its region,
  // any other kind the whole target).
  WriteScope Scope() const {
    return std::visit([](const auto& params) { return KindWriteScope(params); }, phase->params);
  }

  // The write gate's view of a pass over [offset, offset + length).
  WritePass Pass(std::uint64_t offset, std::uint64_t length) const {
    return WritePass{options->state_directory, offset, length, Scope().study};
  }

  // What the phase as a whole may write.
  WritePass WholePass() const {
    const WriteScope scope = Scope();
    return Pass(scope.offset, scope.length);
  }

  void Abort(std::string why) {
    {
      std::lock_guard lock(mu);
      if (reason.empty()) reason = std::move(why);
    }
    abort.request_stop();
  }
  std::string Reason() {
    std::lock_guard lock(mu);
    return reason;
  }

  // What every history record of this run starts with, run or step.
  RunRecord Identity() const {
    RunRecord r;
    r.id = id;
    r.phase = phase->name;
    r.kind = std::string(config::PhaseKindName(phase->params));
    r.target = target->name;
    r.serial = serial;
    return r;
  }

  // The run's record so far, with `outcome` and why.
  RunRecord Record(const std::string& outcome, const std::string& why,
                   const PhaseReport& report) const {
    RunRecord r = Identity();
    r.model = model;
    r.firmware = firmware;
    r.device = device;
    r.start = UnixSeconds(started_wall);
    r.end = UnixSeconds(std::chrono::system_clock::now());
    r.duration_seconds = std::chrono::duration<double>(Clock::now() - started).count();
    r.drive_at_start = drive_at_start;
    r.outcome = outcome;
    r.reason = why;
    r.results = report.results;
    r.series = report.series;
    return r;
  }

  // A phase that cannot keep its checkpoint could not be accounted for
  // after a crash: the caller refuses to start, or aborts, on an error.
  Status SaveCheckpoint(const PhaseReport& report) const {
    Json c = Record("running", "", report).ToJson();
    c["checkpoint"] = UnixSeconds(std::chrono::system_clock::now());
    if (!report.restore.is_null()) c["restore"] = report.restore;
    if (!report.resume.is_null()) c["resume"] = report.resume;
    const std::string path = CheckpointPath(options->state_directory, phase->name);
    if (Status s = WriteFileAtomically(path, DumpJson(c) + "\n"); !s) {
      return Error{s.error().errnum, -1, "cannot save the checkpoint: " + s.error().message};
    }
    return Ok{};
  }
};

class Context : public PhaseContext {
 public:
  Context(RunState& run, WorkloadTarget& io, std::uint64_t capacity, double fill, bool nvme,
          std::uint32_t nsid, Controller* controller, const StorageMap& storage)
      : run_(run), io_(io), capacity_(capacity), fill_(fill), nvme_(nvme), nsid_(nsid),
        controller_(controller), storage_(storage) {}

  const config::AgingTarget& target() const override { return *run_.target; }
  const std::string& state_directory() const override { return run_.options->state_directory; }
  int fd() const override { return io_.fd(); }
  bool nvme() const override { return nvme_; }
  Json DriveFacts() const override {
    Json f = Json::object();
    f["serial"] = run_.serial;
    f["nsid"] = std::uint64_t{nsid_};
    f["model"] = run_.model;
    f["firmware"] = run_.firmware;
    f["device"] = run_.device;
    return f;
  }
  const StorageMap& storage() const override { return storage_; }
  std::string study_register() const override { return run_.options->paths.study_register; }

  Controller* controller() override { return controller_; }
  std::optional<PowerMeterSpec> power_meter() const override {
    for (const config::PowerMeter& m : run_.config->power_meters) {
      if (!run_.serial.empty() && m.serial == run_.serial) {
        return PowerMeterSpec{m.hwmon, m.command, m.timeout};
      }
    }
    return std::nullopt;
  }

  const config::PhaseConfig& phase() const override { return *run_.phase; }
  std::uint64_t capacity() const override { return capacity_; }
  std::uint32_t logical_block_size() const override { return io_.logical_block_size(); }
  double fill_ratio() const override { return fill_; }
  bool stopped() const override { return run_.abort.stop_requested(); }
  void Checkpoint(const PhaseReport& report) override {
    if (Status st = run_.SaveCheckpoint(report); !st) run_.Abort(st.error().message);
  }

  Expected<WorkloadResult> Run(const WorkloadSpec& spec, std::string_view step,
                               double from, double to) override {
    if (stopped()) return WorkloadResult{WorkloadResult::End::kStopped};
    if (spec.write_percent + spec.trim_percent > 0) {
      // A write pass: is this still the target we were given, and is
      // nothing in the range held by a retention study?
      if (Status s = CheckWritePass(*run_.target, io_.fd(), run_.Pass(spec.offset, spec.length),
                                    run_.options->paths);
          !s) {
        return s.error();
      }
    }
    Update(step, from, 0, 0);
    log::Info("phase " + run_.phase->name + ": " + std::string(step) + ": " + Describe(spec));
    return RunWorkload(io_, spec, run_.abort.get_token(),
                       [&](const WorkloadProgress& p) {
                         Update(step, from + (to - from) * p.fraction,
                                p.last_second.bytes_per_second(), p.last_second.iops());
                       });
  }

  Status RecordStep(const std::string& test, std::uint64_t step, const Json& fields) override {
    HistoryFile history(HistoryPath(run_.options->state_directory));
    bool recorded = false;
    auto read = history.ForEach([&](Json&& r) {
      if (recorded || !IsStepRecord(r)) return;
      const Expected<StepRecord> s = ReadStepRecord(r);
      recorded = s && s->phase == run_.phase->name && s->test == test && s->step == step;
    });
    if (!read) return read.error();
    if (recorded) return Ok{};  // on record already
    StepRecord r = StepRecord::Of(run_.Identity());
    r.time = UnixSeconds(std::chrono::system_clock::now());
    r.test = test;
    r.step = step;
    r.results = fields;
    return history.Append(r.ToJson());
  }

  Expected<std::string> WorkDirectory(std::uint64_t bytes, std::string_view sized_by) override {
    const WorkSize size{bytes, config::PhaseKindName(run_.phase->params), sized_by};
    return PrepareWorkDirectory(*run_.target, io_.fd(), run_.WholePass(), size,
                                run_.options->paths);
  }
  void Progress(std::string_view step, double fraction) override { Update(step, fraction, 0, 0); }

  bool Idle(std::chrono::nanoseconds duration, std::string_view step, double from,
            double to) override {
    const auto start = Clock::now();
    const auto end = start + duration;
    const std::stop_token stop = run_.abort.get_token();
    for (auto next = start; next < end;) {
      const double f = std::chrono::duration<double>(next - start) / duration;
      Update(step, from + (to - from) * f, 0, 0);
      next = std::min(end, next + std::chrono::seconds{1});
      if (!SleepUntil(next, stop)) return false;
    }
    return !stopped();
  }

 private:
  void Update(std::string_view step, double fraction, double bps, double iops) {
    PhaseStatus copy;
    {
      std::lock_guard lock(run_.mu);
      run_.status.step = std::string(step);
      run_.status.fraction = std::clamp(fraction, 0.0, 1.0);
      run_.status.bytes_per_second = bps;
      run_.status.iops = iops;
      run_.status.elapsed = Clock::now() - run_.started;
      copy = run_.status;
    }
    if (run_.observer) run_.observer->OnProgress(copy);
  }

  RunState& run_;
  WorkloadTarget& io_;
  std::uint64_t capacity_;
  double fill_;
  bool nvme_;
  std::uint32_t nsid_;
  Controller* controller_;
  const StorageMap& storage_;
};

Status RunPhaseKind(PhaseContext& ctx, PhaseReport& report) {
  return std::visit([&](const auto& params) { return RunKind(params, ctx, report); },
                    ctx.phase().params);
}

// Runs the phase's kind on the opened target while a watcher thread checks
// the abort conditions (temperature, health, the time limit) every
// check_interval, and `stop` (shutdown, a reload) aborts it too.
Status RunWatched(RunState& run, OpenedTarget& t, double fill, AbortConditions& aborts,
                  PhaseReport& report, std::stop_token stop) {
  std::stop_callback on_stop(stop, [&] {
    run.Abort("stopped: drivewatch is shutting down, or a reload removed the phase");
  });
  std::jthread watcher([&](std::stop_token done) {
    auto next = Clock::now();
    while (!done.stop_requested() && !run.abort.stop_requested()) {
      next += run.options->check_interval;
      if (!SleepUntil(next, done)) return;
      if (auto why = aborts.Check(Clock::now())) run.Abort(*why);
    }
  });
  Context ctx(run, *t.io, t.capacity, fill, t.nvme, t.nsid, t.controller.get(), t.storage);
  const Status status = RunPhaseKind(ctx, report);
  watcher.request_stop();
  watcher.join();
  return status;
}

// Puts the run on record, whatever its outcome: logged, appended to the
// history, its checkpoint removed (it is on record now), the observer told.
// Fails if the record could not be appended.
Expected<Json> Finish(RunState& run, HistoryFile& history, const PhaseReport& report,
                      const std::string& outcome, const std::string& why) {
  Json record = run.Record(outcome, why, report).ToJson();
  if (outcome == "refused") {
    log::Warn("phase " + run.phase->name + " refused: " + why);
  } else {
    log::Info("phase " + run.phase->name + " " + outcome + (why.empty() ? "" : ": ") + why);
  }
  Status appended = history.Append(record);
  // A run refused before it held its target has no checkpoint: the one
  // there is another run's (still going, or left by a crash).
  if (run.owns_checkpoint) {
    std::remove(CheckpointPath(run.options->state_directory, run.phase->name).c_str());
  }
  if (run.observer) run.observer->OnEnd(record);
  if (!appended) return appended.error();
  return record;
}

// The phase to run and its target, into `run`; ENOENT when the config has
// no such phase (or its target).
Status FindPhase(const config::Config& config, const std::string& phase_name, RunState& run) {
  const config::PhaseConfig* phase = config.aging.FindPhase(phase_name);
  if (phase == nullptr) {
    std::string known;
    for (const auto& p : config.aging.phases) known += (known.empty() ? "" : ", ") + p.name;
    return Error{ENOENT, -1,
                 "no phase \"" + phase_name + "\" in [[aging.phases]] (" +
                     (known.empty() ? std::string("none are configured") : "expected one of: " + known) + ")"};
  }
  const config::AgingTarget* target = config.aging.FindTarget(phase->target);
  if (target == nullptr) return Error{ENOENT, -1, "phase " + phase_name + ": no target " + phase->target};
  run.config = &config;
  run.phase = phase;
  run.target = target;
  return Ok{};
}

// The run as it starts: its id, times, and what its status shows.
void StartRun(RunState& run, const PhaseRunnerOptions& options, PhaseObserver* observer) {
  const config::PhaseConfig* phase = run.phase;
  const config::AgingTarget* target = run.target;
  run.options = &options;
  run.observer = observer;
  run.started_wall = std::chrono::system_clock::now();
  run.started = Clock::now();
  run.id = RunId(phase->name, run.started_wall);
  run.device = target->block_device.empty() ? AgingFilePath(*target) : target->block_device;
  run.serial = target->serial;
  run.status.phase = phase->name;
  run.status.kind = std::string(config::PhaseKindName(phase->params));
  run.status.target = target->name;
  run.status.serial = target->serial;
}

// The target's lock and the drive's, held for the run.
struct RunLocks {
  StateLock target;
  std::optional<StateLock> drive;
};

// At most one heavy phase per target and per drive, across processes. The
// error's message is the refusal's reason.
Expected<RunLocks> TakeLocks(const RunState& run) {
  const std::string& state_directory = run.options->state_directory;
  const std::string holder = "phase " + run.phase->name;
  auto target_lock = StateLock::Take(TargetLockPath(state_directory, run.target->name), holder);
  if (!target_lock) {
    return Error{target_lock.error().errnum, -1,
                 "target " + run.target->name + " is " + target_lock.error().message};
  }
  RunLocks locks{std::move(*target_lock), std::nullopt};
  if (!run.target->serial.empty()) {
    auto l = StateLock::Take(DriveLockPath(state_directory, run.target->serial), holder);
    if (!l) {
      return Error{l.error().errnum, -1,
                   "drive " + run.target->serial + " is " + l.error().message};
    }
    locks.drive = std::move(*l);
  }
  return locks;
}

// A checkpoint of this phase left by a run killed while this process (or
// the daemon) went on is put on record before this run's replaces it.
Status RecordLeftover(const RunState& run) {
  Status leftover = Ok{};
  if (auto r = RecordInterrupted(run.options->state_directory, run.phase->name,
                                 run.target->name, &leftover, run.options->controller);
      r && run.observer) {
    run.observer->OnInterruptedRecorded(*r);
  }
  return leftover;
}

// The checkpoint saved, or why not as the reason of a refusal.
Status SaveCheckpointOrRefuse(const RunState& run, const PhaseReport& report) {
  if (Status st = run.SaveCheckpoint(report); !st) {
    return Error{st.error().errnum, -1,
                 st.error().message + " (the state directory " +
                     run.options->state_directory + " must be writable)"};
  }
  return Ok{};
}

// How old the drive is as the run starts, for `drivewatch report`.
void NoteDriveAge(RunState& run, OpenedTarget& opened) {
  if (!opened.controller) return;
  auto age = ReadDriveAge(*opened.controller, opened.size,
                          UnixSeconds(std::chrono::system_clock::now()));
  if (age) {
    run.drive_at_start = std::move(*age);
  } else {
    log::Warn("phase " + run.phase->name + ": cannot read the drive's SMART / Health log for its "
              "age at the start of the run: " + age.error().message);
  }
}

// The work directory a run of the target left (this one's, or a crashed
// one's) removed; why not is logged.
void ReleaseWork(const RunState& run) {
  if (Status s = phase_detail::ReleaseLeftoverWork(run.options->state_directory, run.target->name);
      !s) {
    log::Error("phase " + run.phase->name + ": " + s.error().message);
  }
}

}  // namespace

std::string HistoryPath(const std::string& state_directory) {
  return state_directory + "/history.log";
}

std::string CheckpointPath(const std::string& state_directory, const std::string& phase) {
  return state_directory + "/phases/" + phase + ".checkpoint";
}

Expected<Json> RunPhase(const config::Config& config, const std::string& phase_name,
                        const PhaseRunnerOptions& options, std::stop_token stop,
                        PhaseObserver* observer) {
  RunState run;
  if (Status found = FindPhase(config, phase_name, run); !found) return found.error();
  StartRun(run, options, observer);
  const config::PhaseConfig* phase = run.phase;
  const config::AgingTarget* target = run.target;

  HistoryFile history(HistoryPath(options.state_directory));
  PhaseReport report;
  auto finish = [&](const std::string& outcome, const std::string& why) {
    return Finish(run, history, report, outcome, why);
  };

  if (Status s = EnsureDirectory(options.state_directory + "/phases"); !s) return s.error();
  auto locks = TakeLocks(run);
  if (!locks) return finish("refused", locks.error().message);
  if (Status leftover = RecordLeftover(run); !leftover) {
    return finish("refused", leftover.error().message);
  }
  // The checkpoint is this run's from here on: Finish removes it.
  run.owns_checkpoint = true;
  ReleaseWork(run);

  // From here on the run may write: a crash must leave it on record
  // (RecoverInterrupted), so the checkpoint comes before anything else.
  if (Status st = SaveCheckpointOrRefuse(run, report); !st) {
    return finish("refused", st.error().message);
  }

  // What the kind needs before it opens its target (a verify: its study).
  if (Status ready = std::visit(
          [&](const auto& params) { return KindPreflight(params, options.state_directory); },
          phase->params);
      !ready) {
    return finish("failed", ready.error().message);
  }

  auto opened = OpenTarget(TargetRequest{*target, *phase, options, run.WholePass(), run.device,
                                         run.model, run.firmware});
  if (!opened) return finish("refused", opened.error().message);
  const std::string& path = opened->path;

  double fill = -1;
  // Streamed: a history of years is never held whole.
  if (!history.ForEach([&](Json&& r) { fill = FillRatioAfter(r, target->name, fill); })) fill = -1;
  NoteDriveAge(run, *opened);

  AbortConditions aborts(std::move(opened->health), config.aging.temperature_margin,
                         phase->max_duration, run.started);
  if (Status s = aborts.Start(); !s) {
    return finish("refused", path + ": cannot read the drive's health: " + s.error().message);
  }

  if (Status st = SaveCheckpointOrRefuse(run, report); !st) {
    return finish("refused", st.error().message);
  }
  if (options.on_drive_busy && !run.serial.empty()) options.on_drive_busy(run.serial, phase->name);
  if (observer) observer->OnStart(run.status);
  log::Info("phase " + phase->name + " started on " + path + " (target " + target->name +
            ", " + config::FormatPhaseSchedule(phase->schedule) + ")");

  const Status status = RunWatched(run, *opened, fill, aborts, report, stop);
  ReleaseWork(run);
  if (options.on_drive_idle && !run.serial.empty()) options.on_drive_idle(run.serial);

  if (!status) {
    const bool refused = status.error().errnum == EPERM;
    return finish(refused ? "refused" : "failed", status.error().message);
  }
  if (run.abort.stop_requested()) return finish("aborted", run.Reason());
  return finish("completed", "");
}

}  // namespace drivewatch::aging
