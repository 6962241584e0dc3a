// SPDX-License-Identifier: Apache-2.0
// Wiring for the read latency probe (probes/latency/read_latency_probe.h): one
// probe per target, all served by one read reactor (probes/latency/read_reactor.h:
// one thread, one io_uring), attached and detached as namespaces come and
// go (it listens to DriveMonitor's discovery passes) and as the config
// changes, and a scheduler job that publishes every target's snapshot into
// the metric store every few seconds. The scheduler stays the owner of
// time for publishing; the pacing itself needs precise deadlines, which the
// reactor keeps (see probes/latency/pacing.h).
//
// Every target's turns and arrivals count from one epoch, the service's
// start: a drive's namespaces share the drive's rate, dealt round-robin
// (probes/latency/drive_pacing.h), and the drives' schedules line up, so the reads
// of all drives that fall due together go to the kernel in one call.
//
// Scopes in the store: "<serial>/probe/read_latency/<nsid>" for a
// namespace (so DriveMonitor's own clean-up of a vanished drive covers
// them) and "target/<name>/read_latency" for a configured target.
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
#include "exporter/drive_monitor.h"
#include "exporter/metric_store.h"
#include "exporter/scheduler.h"
#include "exporter/service.h"
#include "probes/latency/drive_load.h"
#include "probes/latency/read_latency_probe.h"
#include "probes/latency/read_reactor.h"

namespace drivewatch {

class ReadLatencyService : public DriveListener, public Service {
 public:
  // How often snapshots go to the store.
  static constexpr std::chrono::seconds kPublishInterval{5};
  // Reads per target in a one-shot burst (collect --once).
  static constexpr std::size_t kBurstReads = 100;

  // `sysfs_root` is where namespace identities are checked before a
  // namespace is read (probes/drive/namespace_identity.h); tests pass a fixture.
  ReadLatencyService(MetricStore& store, Scheduler& scheduler,
                     std::string sysfs_root = "/sys");
  ~ReadLatencyService() override;

  // Namespace targets report their load on their drive to `board`
  // (probes/latency/drive_load.h), which the power draw probe reads. Set before
  // Start(); the board must outlive the service's targets.
  void SetLoadBoard(DriveLoadBoard* board) { load_board_ = board; }

  // Starts the configured targets and the publishing job.
  void Start(const config::Config& config) override;
  // Applies a new config: targets whose settings changed restart (their
  // counters start again from zero), others keep running.
  void Reconfigure(const config::Config& config) override;
  // Detaches every target, stops the reactor and the job.
  void Stop() override;

  // DriveListener: starts namespaces that appeared (or moved to another
  // block device), stops those that vanished. A vanished namespace's probe
  // is kept, stopped, for the drive grace period: if its drive comes back
  // under the same serial, the namespace's counts continue (the read that
  // failed at the unplug included) instead of starting again from zero.
  void DrivesPresent(const std::vector<ControllerInfo>& drives) override;

  // The hook for heavy phases: pause every namespace target of the drive
  // with this serial, including ones that appear while paused. Pauses
  // nest. drivewatch_read_latency_paused shows it.
  void Pause(const std::string& serial);
  void Resume(const std::string& serial);

  // Publishes every target's snapshot now.
  void PublishAll();

  // For `collect --once`: kBurstReads reads on every target (configured,
  // and the namespaces of `drives` if enabled), all targets at once, then
  // publishes. Blocks until done.
  static void CollectOnce(const config::Config& config,
                          const std::vector<ControllerInfo>& drives,
                          MetricStore& store);

 private:
  struct Worker {
    std::string scope;
    std::string serial;  // namespaces only
    ReadTarget target;
    std::unique_ptr<ReadLatencyProbe> probe;  // attached while running
  };
  using Targets = std::map<std::string, ReadTarget>;  // by scope

  static ReadLatencySettings ProbeSettings(const config::Config& config);
  static Targets ConfiguredTargets(const config::Config& config);
  static Targets NamespaceTargets(const config::Config& config,
                                  const std::vector<ControllerInfo>& drives,
                                  const std::string& sysfs_root);
  // Makes the running set equal `wanted`; mu_ held. With `park`, namespace
  // targets no longer wanted are parked rather than dropped.
  void SyncLocked(const Targets& wanted, bool park = false);

  // The reactor, made when the first target starts; mu_.
  ReadReactor& Reactor();

  MetricStore& store_;
  Scheduler& scheduler_;
  const std::string sysfs_root_;
  // Where every target's turns and arrivals count from.
  const std::chrono::steady_clock::time_point epoch_;
  DriveLoadBoard* load_board_ = nullptr;  // set before Start()
  std::mutex mu_;
  std::optional<config::Config> config_;         // mu_
  ReadLatencySettings settings_;                 // mu_
  std::vector<ControllerInfo> drives_;           // mu_, last discovery
  // Declared before the probes it serves, so it is destroyed after them.
  std::unique_ptr<ReadReactor> reactor_;         // mu_
  std::map<std::string, std::unique_ptr<Worker>> workers_;  // mu_, by scope
  std::map<std::string, int> paused_;            // mu_, by serial
  struct Parked {
    std::unique_ptr<Worker> worker;  // detached
    std::chrono::steady_clock::time_point since;
  };
  std::map<std::string, Parked> parked_;         // mu_, by scope
  // Each drive's pacing, shared by its namespaces' probes: the configured
  // rate is per drive (probes/latency/drive_pacing.h). A configured target has one
  // of its own, under its scope.
  std::map<std::string, std::shared_ptr<DrivePacing>> pacing_;  // mu_, by serial or scope
  std::optional<Scheduler::JobId> publish_job_;  // mu_
};

}  // namespace drivewatch
