// SPDX-License-Identifier: Apache-2.0
#include "exporter/phase_service.h"

#include <cmath>
#include <condition_variable>

#include "aging/history/history.h"
#include "aging/phases/phase.h"
#include "aging/retention/study_register.h"
#include "aging/runner/phase_schedule.h"
#include "config/util/log.h"
#include "exporter/read_latency_service.h"

namespace drivewatch {
namespace {


constexpr MetricDesc kState{
    "drivewatch_phase_state",
    "1 for the heavy phase's current state: idle (never ran, or its last run "
    "completed), running, or aborted (its last run was aborted, refused, "
    "failed or interrupted).",
    MetricType::kGauge};
constexpr MetricDesc kProgress{
    "drivewatch_phase_progress_ratio",
    "How far the running phase is, 0 to 1; 0 when it is not running.",
    MetricType::kGauge};
constexpr MetricDesc kCurrentThroughput{
    "drivewatch_phase_current_throughput_bytes_per_second",
    "Bytes per second the running phase moved in its last second.",
    MetricType::kGauge};
constexpr MetricDesc kLastRun{
    "drivewatch_phase_last_run_timestamp_seconds",
    "Unix time the phase's last run ended.", MetricType::kGauge};
constexpr MetricDesc kLastDuration{
    "drivewatch_phase_last_run_duration_seconds",
    "How long the phase's last run took.", MetricType::kGauge};
constexpr MetricDesc kLastSuccess{
    "drivewatch_phase_last_run_success",
    "1 when the phase's last run completed, else 0.", MetricType::kGauge};
constexpr MetricDesc kRuns{
    "drivewatch_phase_runs_total",
    "Runs of the phase recorded in the history, by outcome (completed, "
    "aborted, refused, failed, interrupted).",
    MetricType::kCounter};
constexpr MetricDesc kLastCompleted{
    "drivewatch_phase_last_completed_timestamp_seconds",
    "Unix time the phase's last completed run ended: the time of the "
    "drivewatch_phase_result_* values.",
    MetricType::kGauge};

// The results of the last completed run, by the unit their key ends in
// (aging/phases/phase.h).
struct ResultFamily {
  const char* suffix;
  MetricDesc desc;
};
const ResultFamily kResults[] = {
    {"_operations_per_second",
     {"drivewatch_phase_result_operations_per_second",
      "An application's operations per second the phase's last completed run "
      "measured, such as insert (sqlite) or transaction (pgbench).",
      MetricType::kGauge}},
    {"_operations",
     {"drivewatch_phase_result_operations",
      "A number of an application's operations the phase's last completed run "
      "counted, such as insert (sqlite), transaction or fsync (pgbench).",
      MetricType::kGauge}},
    {"_bytes_per_second",
     {"drivewatch_phase_result_bytes_per_second",
      "A throughput the phase's last completed run measured; measure names "
      "it (docs/metrics.md lists them per kind).",
      MetricType::kGauge}},
    {"_bytes",
     {"drivewatch_phase_result_bytes",
      "A size the phase's last completed run measured, such as the SLC "
      "cache (measure=\"slc_cache\").",
      MetricType::kGauge}},
    {"_iops",
     {"drivewatch_phase_result_iops",
      "I/Os per second the phase's last completed run measured.",
      MetricType::kGauge}},
    {"_seconds",
     {"drivewatch_phase_result_seconds",
      "A latency or duration the phase's last completed run measured, such "
      "as qd1_rand_read_p99_9 or trim_max.",
      MetricType::kGauge}},
    {"_watts",
     {"drivewatch_phase_result_watts",
      "A power the phase's last completed run measured, such as "
      "ps3_power_psd_estimate (power-states: the key names its source).",
      MetricType::kGauge}},
    {"_ios",
     {"drivewatch_phase_result_ios",
      "A number of I/Os the phase's last completed run counted, such as "
      "replayed or late (replay).",
      MetricType::kGauge}},
    {"_ratio",
     {"drivewatch_phase_result_ratio",
      "A ratio the phase's last completed run measured, such as fill or "
      "trim_efficiency.",
      MetricType::kGauge}},
};

// The daemon takes a run record with the fields it holds, each as written
// (one recovered from an unreadable checkpoint has only its phase, outcome
// and reason), and passes over a damaged one.
constexpr aging::RecordFields kRecorded = aging::RecordFields::kPresent;

}  // namespace

class PhaseService::Observer : public aging::PhaseObserver {
 public:
  Observer(PhaseService& service, std::string phase)
      : service_(service), phase_(std::move(phase)) {}
  void OnProgress(const aging::PhaseStatus& status) override {
    {
      std::lock_guard lock(service_.mu_);
      auto it = service_.running_.find(phase_);
      if (it != service_.running_.end()) it->second->status = status;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now - last_publish_ >= std::chrono::seconds{1}) {
      last_publish_ = now;
      service_.Publish();
    }
  }
  void OnInterruptedRecorded(const Json& record) override {
    {
      std::lock_guard lock(service_.mu_);
      if (auto run = aging::ReadRunHeader(record, kRecorded)) {
        service_.outcomes_[phase_][run->outcome] += 1;
      }
    }
    service_.Publish();
  }
  void OnEnd(const Json& record) override {
    {
      std::lock_guard lock(service_.mu_);
      if (auto run = aging::ReadRunRecord(record, kRecorded)) {
        service_.outcomes_[phase_][run->outcome] += 1;
        if (run->outcome == "completed") service_.last_completed_[phase_] = *run;
        service_.last_[phase_] = std::move(*run);
      }
      auto it = service_.running_.find(phase_);
      if (it != service_.running_.end()) it->second->done = true;
    }
    service_.Publish();
    if (service_.on_run_end_) service_.on_run_end_();
  }

 private:
  PhaseService& service_;
  std::string phase_;
  std::chrono::steady_clock::time_point last_publish_{};
};

PhaseService::PhaseService(MetricStore& store, DriveBusyBoard* busy,
                           ReadLatencyService* read_latency)
    : store_(store), busy_(busy), read_latency_(read_latency) {}

PhaseService::~PhaseService() { Stop(); }

void PhaseService::Start(const config::Config& config) {
  {
    std::lock_guard lock(mu_);
    config_ = config;
  }
  aging::RecoverInterrupted(config.state_directory);
  // Studies of this state directory that hold storage are in the host's
  // study register, so configs with other state directories see them.
  std::vector<std::string> unregistered;
  aging::RegisterHeldStudies(config.study_register, config.state_directory, &unregistered);
  for (const std::string& problem : unregistered) log::Warn(problem);
  aging::HistoryFile history(aging::HistoryPath(config.state_directory));
  // Streamed (the daemon never holds a history of years whole), into
  // these, then taken under the lock.
  decltype(last_) last;
  decltype(last_completed_) last_completed;
  decltype(outcomes_) outcomes;
  auto contents = history.ForEach([&](Json&& r) {
    if (!aging::IsRunRecord(r)) return;  // a pass of an endurance run, not a run
    Expected<aging::RunRecord> run = aging::ReadRunRecord(std::move(r), kRecorded);
    if (!run) return;
    outcomes[run->phase][run->outcome] += 1;
    if (run->outcome == "completed") last_completed[run->phase] = *run;
    last[run->phase] = std::move(*run);
  });
  if (contents) {
    std::lock_guard lock(mu_);
    for (auto& [phase, r] : last) last_[phase] = std::move(r);
    for (auto& [phase, r] : last_completed) last_completed_[phase] = std::move(r);
    for (auto& [phase, counts] : outcomes) {
      for (auto& [outcome, n] : counts) outcomes_[phase][outcome] += n;
    }
  }
  if (contents) {  // said outside the lock
    if (contents->torn_tail_bytes > 0) {
      log::Warn(history.path() + ": the last " + std::to_string(contents->torn_tail_bytes) +
                " bytes are a torn record (a crash while appending); it is left out and "
                "cut off at the next append");
    }
    for (const std::string& d : contents->damaged) {
      log::Error(history.path() + ": damaged record skipped: " + d);
    }
    if (contents->damaged_unlisted > 0) {
      log::Error(history.path() + ": " + std::to_string(contents->damaged_unlisted) +
                 " more damaged records skipped");
    }
  } else {
    log::Error("cannot read the phase history: " + contents.error().message);
  }
  Publish();
  ticker_ = std::jthread([this](std::stop_token stop) {
    while (!stop.stop_requested()) {
      Tick(std::chrono::system_clock::now());
      std::mutex m;
      std::unique_lock lock(m);
      std::condition_variable_any cv;
      cv.wait_for(lock, stop, std::chrono::seconds{10}, [] { return false; });
    }
  });
}

void PhaseService::Reconfigure(const config::Config& config) {
  std::vector<std::unique_ptr<Running>> stopping;
  {
    std::lock_guard lock(mu_);
    for (auto& [name, run] : running_) {
      const config::PhaseConfig* now = config.aging.FindPhase(name);
      const config::PhaseConfig* before = config_.aging.FindPhase(name);
      const bool target_same =
          now && before && config.aging.FindTarget(now->target) &&
          config_.aging.FindTarget(before->target) &&
          *config.aging.FindTarget(now->target) == *config_.aging.FindTarget(before->target);
      if (now == nullptr || !(*now == *before) || !target_same) {
        log::Info("reload: stopping phase " + name +
                  (now == nullptr ? " (removed from the config)" : " (its config changed)"));
        run->stop.request_stop();
      }
    }
    config_ = config;
  }
  Publish();
}

void PhaseService::Stop() {
  ticker_.request_stop();
  if (ticker_.joinable()) ticker_.join();
  std::map<std::string, std::unique_ptr<Running>> runs;
  {
    std::lock_guard lock(mu_);
    for (auto& [name, run] : running_) run->stop.request_stop();
  }
  // Join without the lock: the runs take it to record their end.
  for (;;) {
    std::unique_ptr<Running> run;
    {
      std::lock_guard lock(mu_);
      if (running_.empty()) break;
      run = std::move(running_.begin()->second);
      running_.erase(running_.begin());
    }
    if (run->thread.joinable()) run->thread.join();
  }
}

void PhaseService::ReapFinished() {
  std::vector<std::unique_ptr<Running>> done;
  {
    std::lock_guard lock(mu_);
    for (auto it = running_.begin(); it != running_.end();) {
      if (it->second->done) {
        done.push_back(std::move(it->second));
        it = running_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& run : done) run->thread.join();
}

void PhaseService::Tick(std::chrono::system_clock::time_point now) {
  ReapFinished();
  std::vector<config::PhaseConfig> due;
  {
    std::lock_guard lock(mu_);
    for (const config::PhaseConfig& phase : config_.aging.phases) {
      if (running_.count(phase.name) != 0) continue;
      std::optional<std::chrono::system_clock::time_point> last_start;
      if (auto it = last_.find(phase.name); it != last_.end()) {
        if (const std::optional<double> start = it->second.start) {
          last_start = std::chrono::system_clock::time_point(
              std::chrono::duration_cast<std::chrono::system_clock::duration>(
                  std::chrono::duration<double>(*start)));
        }
      }
      if (aging::PhaseDue(phase.schedule, last_start, now)) due.push_back(phase);
    }
  }
  for (const config::PhaseConfig& phase : due) StartRun(phase);
}

void PhaseService::StartRun(const config::PhaseConfig& phase) {
  std::lock_guard lock(mu_);
  const config::AgingTarget* target = config_.aging.FindTarget(phase.target);
  if (target == nullptr) return;
  // One heavy phase per drive and per target; the runner's locks enforce
  // it across processes, this keeps the daemon from even trying.
  for (const auto& [name, run] : running_) {
    if (run->target == target->name ||
        (!target->serial.empty() && run->serial == target->serial)) {
      return;
    }
  }
  auto run = std::make_unique<Running>();
  run->serial = target->serial;
  run->target = target->name;
  run->status.phase = phase.name;
  run->status.kind = std::string(config::PhaseKindName(phase.params));
  run->status.target = target->name;
  run->status.serial = target->serial;
  auto config = std::make_shared<const config::Config>(config_);
  const std::string name = phase.name;
  std::stop_token stop = run->stop.get_token();
  Running* raw = run.get();
  running_[name] = std::move(run);
  raw->thread = std::jthread([this, config, name, stop] {
    aging::PhaseRunnerOptions options;
    options.state_directory = config->state_directory;
    options.paths.study_register = config->study_register;
    options.on_drive_busy = [this](const std::string& serial, const std::string& phase) {
      if (busy_) busy_->SetBusy(serial, "phase " + phase);
      if (read_latency_) read_latency_->Pause(serial);
    };
    options.on_drive_idle = [this](const std::string& serial) {
      if (read_latency_) read_latency_->Resume(serial);
      if (busy_) busy_->ClearBusy(serial);
    };
    Observer observer(*this, name);
    auto record = aging::RunPhase(*config, name, options, stop, &observer);
    if (!record) {
      log::Error("phase " + name + ": " + record.error().message);
      std::lock_guard lock(mu_);
      if (auto it = running_.find(name); it != running_.end()) it->second->done = true;
    }
  });
}

void PhaseService::AddKindState(const config::PhaseConfig& phase, const Labels& labels,
                                std::vector<Sample>& samples) {
  BatchSink sink;
  const Status s = std::visit(
      [&](const auto& params) {
        return aging::ExportKindState(params, phase, config_.state_directory, labels, sink);
      },
      phase.params);
  if (!s) {
    std::string& logged = kind_state_errors_[phase.name];
    if (logged != s.error().message) {  // once per error, not at every publish
      logged = s.error().message;
      log::Error("phase " + phase.name + ": its state is not exported: " + s.error().message);
    }
    return;
  }
  kind_state_errors_.erase(phase.name);
  for (Sample& sample : sink.samples()) samples.push_back(std::move(sample));
}

void PhaseService::Publish() {
  std::vector<Sample> samples;
  std::lock_guard lock(mu_);
  for (const config::PhaseConfig& phase : config_.aging.phases) {
    const config::AgingTarget* target = config_.aging.FindTarget(phase.target);
    const Labels labels{{"phase", phase.name},
                        {"kind", std::string(config::PhaseKindName(phase.params))},
                        {"target", phase.target},
                        {"serial", target ? target->serial : std::string()}};
    auto with = [&](std::string name, std::string value) {
      Labels l = labels;
      l.emplace_back(std::move(name), std::move(value));
      return l;
    };
    auto running = running_.find(phase.name);
    const bool is_running = running != running_.end() && !running->second->done;
    std::string state = "idle";
    if (is_running) {
      state = "running";
    } else if (auto it = last_.find(phase.name); it != last_.end()) {
      state = it->second.outcome == "completed" ? "idle" : "aborted";
    }
    for (const char* s : {"idle", "running", "aborted"}) {
      samples.push_back(Sample{&kState, with("state", s), state == s ? 1.0 : 0.0});
    }
    samples.push_back(Sample{&kProgress, labels,
                             is_running ? running->second->status.fraction : 0.0});
    samples.push_back(Sample{&kCurrentThroughput, labels,
                             is_running ? running->second->status.bytes_per_second : 0.0});
    if (auto it = last_.find(phase.name); it != last_.end()) {
      const aging::RunRecord& r = it->second;
      samples.push_back(Sample{&kLastRun, labels, r.end.value_or(0)});
      samples.push_back(Sample{&kLastDuration, labels, r.duration_seconds.value_or(0)});
      samples.push_back(Sample{&kLastSuccess, labels, r.outcome == "completed" ? 1.0 : 0.0});
    }
    for (const char* outcome : {"completed", "aborted", "refused", "failed", "interrupted"}) {
      double n = 0;
      if (auto it = outcomes_.find(phase.name); it != outcomes_.end()) {
        if (auto o = it->second.find(outcome); o != it->second.end()) n = o->second;
      }
      samples.push_back(Sample{&kRuns, with("outcome", outcome), n});
    }
    AddKindState(phase, labels, samples);
    auto completed = last_completed_.find(phase.name);
    if (completed == last_completed_.end()) continue;
    const aging::RunRecord& r = completed->second;
    samples.push_back(Sample{&kLastCompleted, labels, r.end.value_or(0)});
    for (const auto& [key, value] : Members(r.results)) {
      if (!value.is_number()) continue;
      for (const ResultFamily& f : kResults) {
        const std::string_view suffix = f.suffix;
        if (key.size() <= suffix.size() || !key.ends_with(suffix)) continue;
        const double v = AsDouble(value);
        if (std::isfinite(v)) {
          samples.push_back(Sample{&f.desc, with("measure", key.substr(0, key.size() - suffix.size())), v});
        }
        break;
      }
    }
  }
  store_.Publish("phases", std::move(samples));
}

}  // namespace drivewatch
