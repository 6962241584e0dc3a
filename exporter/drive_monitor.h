// SPDX-License-Identifier: Apache-2.0
// DriveMonitor keeps track of which drives exist and runs the light probes on
// them. It owns drive identity (DESIGN.md decision 3): a drive is its serial;
// the kernel name is only an attribute on drivewatch_drive_info. A drive that
// disappears reports drivewatch_drive_up 0 for the grace period, then its
// series go away. One failing probe or drive never stops the others
// (decision 2).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "config/config.h"
#include "exporter/clock.h"
#include "exporter/metric_store.h"
#include "exporter/probe_registry.h"
#include "exporter/scheduler.h"
#include "probes/drive/drive_layer.h"

namespace drivewatch {

// Drives seen before, kept in the state directory so a drive missing after a
// restart still reports drivewatch_drive_up 0 for the grace period instead
// of silently vanishing.
struct KnownDrive {
  std::string serial;
  std::string kernel_name;
  std::string model;
  std::string firmware;
};
std::string FormatKnownDrives(const std::vector<KnownDrive>& drives);
// Lines that do not parse are skipped and reported in `problems`.
std::vector<KnownDrive> ParseKnownDrives(const std::string& text,
                                         std::vector<std::string>* problems);

// Told which drives are present after every discovery pass, so that work
// living outside the scheduler's probe runs (the read latency probe's
// per-namespace threads) can follow hot-plug.
class DriveListener {
 public:
  virtual ~DriveListener() = default;
  // The drives present and watched now, each with its namespaces. Called
  // on the discovery strand, without the monitor's lock held; it must not
  // block for long.
  virtual void DrivesPresent(const std::vector<ControllerInfo>& drives) = 0;
};

class DriveMonitor {
 public:
  DriveMonitor(DriveLayer& drive_layer, MetricStore& store,
               Scheduler& scheduler, const Clock& clock,
               const std::vector<ProbeRegistration>& probes);
  ~DriveMonitor();

  // Loads known drives from the state directory and schedules discovery.
  void Start(const config::Config& config);
  // Applies a new, already validated config: selection, intervals, probe
  // switches, grace period. Takes effect at once.
  void Reconfigure(const config::Config& config);

  // One discovery pass. Runs on the scheduler's "discovery" strand.
  void Discover();

  // Set before Start() or CollectOnce(); told after each successful pass.
  void SetListener(DriveListener* listener) { listener_ = listener; }

  // For `collect --once`: discovery, then every enabled probe once on every
  // drive, all on the calling thread.
  void CollectOnce(const config::Config& config);

  // Gives every probe of every present drive its Stop() (e.g. aborting a
  // self-test drivewatch started), on the calling thread. Called once at
  // shutdown, after the scheduler and its executor have stopped.
  void StopProbes();

  // Runs the named probes on the present drive whose controller has kernel
  // name `kernel_name` ("nvme0") as soon as possible, keeping their period;
  // disabled probes are left alone. Returns that drive's serial, or nothing
  // when no watched drive has that name. Any thread.
  std::optional<std::string> RunProbesSoon(
      const std::string& kernel_name, const std::vector<std::string>& probes);

 private:
  struct ProbeState;
  struct Drive;

  void AddDriveLocked(const ControllerInfo& info, bool present);
  void ScheduleProbesLocked(Drive& drive);
  void UnscheduleLocked(Drive& drive);
  void RemoveDriveLocked(const std::string& serial);
  void PublishDriveLocked(const Drive& drive);
  void PublishExporterMetricsLocked();
  void SaveKnownDrivesLocked();
  void RunProbe(const std::shared_ptr<Drive>& drive, ProbeState& probe);
  // A probe run's samples and its own (success, duration, failures), unless
  // the drive vanished or was forgotten meanwhile.
  void PublishProbeRun(Drive& drive, const ProbeState& state, const std::string& serial, bool ok,
                       double duration, std::vector<Sample> samples);
  // A watched controller the scan found: its drive added, back or moved.
  // True when that changed the drives known.
  bool FoundLocked(const ControllerInfo& info);
  // The drives the scan did not find (`seen` holds those it did): vanished
  // now, or forgotten after the grace period. True when one was forgotten.
  bool MissingLocked(const std::set<std::string>& seen,
                     std::chrono::system_clock::time_point wall);
  // Discover()'s bookkeeping of a scan begun at `start`, under mu_; fills
  // `present`. False when the scan failed.
  bool DiscoverLocked(const Expected<std::vector<ControllerInfo>>& scan,
                      Clock::Monotonic::time_point start,
                      std::vector<ControllerInfo>& present);

  DriveLayer& drive_layer_;
  MetricStore& store_;
  Scheduler& scheduler_;
  const Clock& clock_;
  const std::vector<ProbeRegistration>& probes_;
  DriveListener* listener_ = nullptr;

  std::mutex mu_;
  config::Config config_;                                // guarded by mu_
  std::map<std::string, std::shared_ptr<Drive>> drives_;  // by serial; mu_
  std::optional<Scheduler::JobId> discovery_job_;         // mu_
  bool persist_ = false;                                   // mu_
  bool state_dir_ok_ = true;                               // mu_
  bool state_write_failing_ = false;                       // mu_
  bool logged_no_drives_ = false;                          // mu_
  bool discovery_failing_ = false;                         // mu_
  double discovery_last_success_ = 0;                      // mu_
  double discovery_duration_ = 0;                          // mu_
  bool discovery_success_ = false;                         // mu_
  bool discovered_once_ = false;                           // mu_
};

}  // namespace drivewatch
