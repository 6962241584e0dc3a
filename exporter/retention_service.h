// SPDX-License-Identifier: Apache-2.0
// The daemon's side of data-retention studies (docs/retention.md). Once a
// minute it takes the composite temperature of every active study's drive
// that is present (found by serial and namespace, whatever its kernel name
// this boot) into the study's Arrhenius accounting, and it exports every
// study in the state directory as drivewatch_retention_* metrics: ages,
// the last verify's bad blocks by class and latency quantiles against the
// baseline. Verifies themselves are heavy phases (retention-verify), run by
// the phase service on their schedule.
//
// A study whose record cannot be loaded (damaged, or unreadable: EACCES,
// EIO) is exported as drivewatch_retention_study_damaged 1, logged once per
// change of its problem, never sampled into or saved, and its other series
// keep the values of its last good load in this process.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "config/config.h"
#include "config/util/json.h"
#include "exporter/metric_store.h"
#include "exporter/service.h"

namespace drivewatch {

class RetentionService : public Service {
 public:
  explicit RetentionService(MetricStore& store,
                            std::chrono::milliseconds interval = std::chrono::minutes{1},
                            std::string sysfs_root = "/sys");
  ~RetentionService() override;
  void Start(const config::Config& config) override;
  void Reconfigure(const config::Config& config) override;
  void Stop() override;
  // One pass at `now` (Unix seconds): samples, then publishes. Public for
  // tests.
  void Tick(double now);

 private:
  // Samples the drive's temperature into an active study's accounting and
  // saves it; `study` becomes the record reloaded under the study's lock.
  // Fails only when that reload does (the record is damaged).
  Status SampleTemperature(const std::string& state, Json& study, double now);
  std::vector<Sample> StudySamples(const Json& study, double now) const;

  MetricStore& store_;
  std::chrono::milliseconds interval_;
  std::string sysfs_root_;
  std::mutex mu_;
  std::string state_directory_;  // guarded by mu_
  std::mutex tick_mu_;
  // Guarded by tick_mu_: each study's series from its last good load, and
  // the problem last logged for each study that cannot be loaded.
  std::map<std::string, std::vector<Sample>> last_good_;
  std::map<std::string, std::string> problems_;
  std::jthread thread_;
};

}  // namespace drivewatch
