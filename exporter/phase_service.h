// SPDX-License-Identifier: Apache-2.0
// The daemon's side of heavy phases: it starts each scheduled phase when
// it is due (aging/runner/phase_schedule.h), at most one per drive, runs it on a
// thread of its own through the same runner as `drivewatch phase run`
// (aging/runner/phase_runner.h), pauses the read latency probe on that drive and
// marks it busy for self-tests meanwhile, stops a run on SIGTERM or when a
// reload removes its phase, and exports phase state, progress and the
// results of the last completed run of every phase, read back from the
// history at start-up so a restart loses nothing.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "aging/history/run_record.h"
#include "aging/runner/phase_runner.h"
#include "config/config.h"
#include "config/util/json.h"
#include "exporter/metric_store.h"
#include "exporter/service.h"
#include "probes/probe_state.h"

namespace drivewatch {

class ReadLatencyService;

class PhaseService : public Service {
 public:
  PhaseService(MetricStore& store, DriveBusyBoard* busy,
               ReadLatencyService* read_latency);
  ~PhaseService() override;

  // Called (on the phase's thread) after every run ends, e.g. to refresh
  // the retention metrics at once after a verify. Set before Start().
  void SetOnRunEnd(std::function<void()> callback) { on_run_end_ = std::move(callback); }

  // Records interrupted runs, loads the history, publishes the metrics and
  // starts the scheduling thread.
  void Start(const config::Config& config) override;
  // Stops runs whose phase (or its target) the new config removed or
  // changed; the rest go on.
  void Reconfigure(const config::Config& config) override;
  // Stops every run (recorded as aborted) and the scheduling thread.
  void Stop() override;

  // One scheduling pass at `now`: starts the phases that are due. Public
  // for tests; the scheduling thread calls it every 10 s.
  void Tick(std::chrono::system_clock::time_point now);

 private:
  struct Running {
    std::string serial;
    std::string target;
    std::stop_source stop;
    std::jthread thread;
    aging::PhaseStatus status;
    bool done = false;
  };
  class Observer;

  void StartRun(const config::PhaseConfig& phase);
  void Publish();
  // What the phase's kind keeps outside the history (aging::ExportKindState;
  // mu_ held).
  void AddKindState(const config::PhaseConfig& phase, const Labels& labels,
                    std::vector<Sample>& samples);
  void ReapFinished();

  MetricStore& store_;
  DriveBusyBoard* busy_;
  ReadLatencyService* read_latency_;
  std::mutex mu_;
  config::Config config_;                       // guarded by mu_
  std::map<std::string, aging::RunRecord> last_;  // phase -> last record
  std::map<std::string, aging::RunRecord> last_completed_;
  std::map<std::string, std::map<std::string, double>> outcomes_;  // phase -> outcome -> n
  // A kind's state that would not export (a damaged endurance progress
  // file), by phase, with the error: logged once per error.
  std::map<std::string, std::string> kind_state_errors_;  // guarded by mu_
  std::map<std::string, std::unique_ptr<Running>> running_;  // by phase
  std::function<void()> on_run_end_;
  std::jthread ticker_;
};

}  // namespace drivewatch
