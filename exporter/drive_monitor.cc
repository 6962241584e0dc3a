// SPDX-License-Identifier: Apache-2.0
#include "exporter/drive_monitor.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <optional>
#include <set>

#include "config/util/durable_file.h"
#include "config/util/log.h"

namespace drivewatch {
namespace {

constexpr MetricDesc kDriveUp{
    "drivewatch_drive_up",
    "1 if the drive (identified by serial) was present at the last discovery; "
    "0 during the grace period after it vanished.",
    MetricType::kGauge};
constexpr MetricDesc kDriveInfo{
    "drivewatch_drive_info",
    "Attributes of a drive that may change (kernel name, model, firmware, "
    "transport, address); always 1. Join on serial.",
    MetricType::kGauge};
constexpr MetricDesc kProbeSuccess{
    "drivewatch_probe_success",
    "1 if the last run of the probe on the drive succeeded, else 0.",
    MetricType::kGauge};
constexpr MetricDesc kProbeDuration{
    "drivewatch_probe_duration_seconds",
    "Wall time taken by the last run of the probe on the drive.",
    MetricType::kGauge};
constexpr MetricDesc kProbeFailures{
    "drivewatch_probe_failures_total",
    "Runs of the probe on the drive that failed (a command refused or timed "
    "out, the controller gone mid-run), since drivewatch started.",
    MetricType::kCounter};
constexpr MetricDesc kProbeLastSuccess{
    "drivewatch_probe_last_success_timestamp_seconds",
    "Unix time of the last successful run of the probe on the drive.",
    MetricType::kGauge};
constexpr MetricDesc kDiscoverySuccess{
    "drivewatch_discovery_success",
    "1 if the last scan of the NVMe topology succeeded, else 0.",
    MetricType::kGauge};
constexpr MetricDesc kDiscoveryDuration{
    "drivewatch_discovery_duration_seconds",
    "Wall time taken by the last scan of the NVMe topology.",
    MetricType::kGauge};
constexpr MetricDesc kDiscoveryLastSuccess{
    "drivewatch_discovery_last_success_timestamp_seconds",
    "Unix time of the last successful scan of the NVMe topology.",
    MetricType::kGauge};
constexpr MetricDesc kDrives{
    "drivewatch_drives",
    "Number of watched drives, by state: up (present) or down (vanished, "
    "within the grace period).",
    MetricType::kGauge};

// How long a controller may refuse to be opened because it is not live yet
// (EAGAIN from the kernel's open: resetting, or connecting after a hot-plug)
// before a probe counts it as a failure. A reset that takes longer than the
// kernel's default admin command timeout has failed.
constexpr std::chrono::seconds kNotLiveGrace{60};

std::string ProbeScope(const std::string& serial, const std::string& probe) {
  return serial + "/probe/" + probe;
}

double Seconds(Clock::Monotonic::duration d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace

struct DriveMonitor::ProbeState {
  const ProbeRegistration* registration = nullptr;
  std::unique_ptr<DriveProbe> probe;
  // Hands `probe` its per-drive settings; empty when it takes none.
  std::function<void(const config::Config&, const ControllerInfo&)> configure;
  std::optional<Scheduler::JobId> job;  // guarded by the monitor's mu_
  // Touched only on the drive's strand.
  bool failing = false;
  double last_success = 0;
  // Kept while the drive is away, so a run the unplug cut short is still
  // counted when the drive comes back under its serial.
  std::uint64_t failures = 0;
  // When a run first found the controller not live (strand only), and
  // whether discovery should run the probe again (set on the strand, taken
  // by discovery).
  std::optional<Clock::Monotonic::time_point> not_live_since;
  std::atomic<bool> run_when_live{false};
};

struct DriveMonitor::Drive {
  // Written by discovery, read by probe runs.
  std::mutex info_mu;
  ControllerInfo info;     // info_mu
  bool present = false;    // info_mu
  bool removed = false;    // info_mu; set once, when the drive is forgotten
  std::chrono::system_clock::time_point vanished_at;  // monitor mu_

  std::vector<std::unique_ptr<ProbeState>> probes;  // fixed after creation

  // Held by a probe run for its whole length (on the drive's strand), and
  // tried by discovery to close the device of a drive that vanished, so the
  // kernel can reuse the name; a run in flight closes it itself.
  std::mutex controller_mu;
  std::unique_ptr<Controller> controller;  // controller_mu
  std::string controller_device;           // controller_mu
};

DriveMonitor::DriveMonitor(DriveLayer& drive_layer, MetricStore& store,
                           Scheduler& scheduler, const Clock& clock,
                           const std::vector<ProbeRegistration>& probes)
    : drive_layer_(drive_layer),
      store_(store),
      scheduler_(scheduler),
      clock_(clock),
      probes_(probes) {}

DriveMonitor::~DriveMonitor() = default;

void DriveMonitor::Start(const config::Config& config) {
  std::lock_guard lock(mu_);
  config_ = config;
  persist_ = true;
  if (Status dir = EnsureDirectory(config_.state_directory); !dir) {
    log::Warn("state directory " + dir.error().message +
              "; known drives will not survive a restart");
    state_dir_ok_ = false;
  } else {
    const std::string path = config_.state_directory + "/known-drives.tsv";
    auto text = ReadWholeFile(path);
    if (!text && text.error().errnum != ENOENT) {
      log::Warn(text.error().message + "; starting with no known drives");
    } else if (text) {
      std::vector<std::string> problems;
      for (const KnownDrive& k : ParseKnownDrives(*text, &problems)) {
        ControllerInfo info;
        info.serial = k.serial;
        info.name = k.kernel_name;
        info.model = k.model;
        info.firmware = k.firmware;
        AddDriveLocked(info, /*present=*/false);
      }
      for (const auto& p : problems) log::Warn(path + ":" + p + "; line ignored");
    }
  }
  discovery_job_ = scheduler_.Add(
      "discovery", "discovery",
      std::chrono::duration_cast<Scheduler::Duration>(config_.discovery_interval),
      [this] { Discover(); });
}

void DriveMonitor::Reconfigure(const config::Config& config) {
  std::lock_guard lock(mu_);
  config_ = config;
  std::vector<std::string> deselected;
  for (auto& [serial, drive] : drives_) {
    ControllerInfo info;
    {
      std::lock_guard info_lock(drive->info_mu);
      info = drive->info;
    }
    if (!config_.drives.Watches(info.serial, info.model)) {
      deselected.push_back(serial);
    } else {
      bool present;
      {
        std::lock_guard info_lock(drive->info_mu);
        present = drive->present;
      }
      if (present) ScheduleProbesLocked(*drive);
    }
  }
  for (const auto& serial : deselected) {
    log::Info("drive serial=" + serial +
              " is no longer selected by [drives]; no longer watched");
    RemoveDriveLocked(serial);
  }
  if (!deselected.empty()) SaveKnownDrivesLocked();
  if (discovery_job_) {
    scheduler_.SetInterval(*discovery_job_,
                           std::chrono::duration_cast<Scheduler::Duration>(
                               config_.discovery_interval));
    scheduler_.RunSoon(*discovery_job_);
  }
}

void DriveMonitor::AddDriveLocked(const ControllerInfo& info, bool present) {
  auto drive = std::make_shared<Drive>();
  drive->info = info;
  drive->present = present;
  drive->vanished_at = clock_.WallNow();
  for (const auto& reg : probes_) {
    auto state = std::make_unique<ProbeState>();
    state->registration = &reg;
    ProbeInstance instance = reg.make();
    state->probe = std::move(instance.probe);
    state->configure = std::move(instance.configure);
    state->probe->SetWallClock([this] { return clock_.WallNow(); });
    drive->probes.push_back(std::move(state));
  }
  drives_[info.serial] = std::move(drive);
}

void DriveMonitor::ScheduleProbesLocked(Drive& drive) {
  std::shared_ptr<Drive> self = drives_.at(drive.info.serial);
  for (auto& ps : drive.probes) {
    const config::ProbeSettings settings = ps->registration->settings(config_);
    const auto interval =
        std::chrono::duration_cast<Scheduler::Duration>(settings.interval);
    if (ps->configure) ps->configure(config_, drive.info);
    if (settings.enabled && !ps->job) {
      ProbeState* state = ps.get();
      ps->job = scheduler_.Add(ps->registration->name, drive.info.serial,
                               interval,
                               [this, self, state] { RunProbe(self, *state); });
    } else if (settings.enabled) {
      scheduler_.SetInterval(*ps->job, interval);
    } else if (ps->job) {
      scheduler_.Remove(*ps->job);
      ps->job.reset();
      store_.Remove(ProbeScope(drive.info.serial, ps->registration->name));
    }
  }
}

void DriveMonitor::UnscheduleLocked(Drive& drive) {
  for (auto& ps : drive.probes) {
    if (ps->job) scheduler_.Remove(*ps->job);
    ps->job.reset();
  }
}

void DriveMonitor::RemoveDriveLocked(const std::string& serial) {
  auto it = drives_.find(serial);
  if (it == drives_.end()) return;
  UnscheduleLocked(*it->second);
  {
    std::lock_guard info_lock(it->second->info_mu);
    it->second->removed = true;
  }
  store_.RemovePrefix(serial + "/");
  drives_.erase(it);
}

void DriveMonitor::PublishDriveLocked(const Drive& drive) {
  const ControllerInfo& i = drive.info;
  std::vector<Sample> samples;
  samples.push_back({&kDriveUp, {{"serial", i.serial}}, drive.present ? 1.0 : 0.0});
  samples.push_back({&kDriveInfo,
                     {{"serial", i.serial},
                      {"kernel_name", i.name},
                      {"model", i.model},
                      {"firmware", i.firmware},
                      {"transport", i.transport},
                      {"address", i.address}},
                     1.0});
  store_.Publish(i.serial + "/drive", std::move(samples));
}

void DriveMonitor::SaveKnownDrivesLocked() {
  if (!persist_ || !state_dir_ok_) return;
  std::vector<KnownDrive> known;
  for (const auto& [serial, drive] : drives_) {
    known.push_back({drive->info.serial, drive->info.name, drive->info.model,
                     drive->info.firmware});
  }
  const std::string path = config_.state_directory + "/known-drives.tsv";
  if (Status s = WriteFileAtomically(path, FormatKnownDrives(known)); !s) {
    if (!state_write_failing_) {
      log::Warn("cannot save known drives: " + s.error().message +
                " (will retry on the next change)");
    }
    state_write_failing_ = true;
  } else {
    state_write_failing_ = false;
  }
}

void DriveMonitor::Discover() {
  const auto start = clock_.Now();
  auto scan = drive_layer_.Scan();
  std::vector<ControllerInfo> present;
  bool ok;
  {
    std::lock_guard lock(mu_);
    ok = DiscoverLocked(scan, start, present);
  }
  if (ok && listener_ != nullptr) listener_->DrivesPresent(present);
}

bool DriveMonitor::FoundLocked(const ControllerInfo& info) {
  auto it = drives_.find(info.serial);
  if (it == drives_.end()) {
    log::Info("found drive serial=" + info.serial + " model=\"" + info.model +
              "\" firmware=" + info.firmware + " at " + info.device);
    AddDriveLocked(info, /*present=*/true);
    ScheduleProbesLocked(*drives_.at(info.serial));
    return true;
  }
  Drive& drive = *it->second;
  bool was_present;
  std::string old_name;
  {
    std::lock_guard info_lock(drive.info_mu);
    was_present = drive.present;
    old_name = drive.info.name;
    drive.info = info;
    drive.present = true;
  }
  if (!was_present) {
    log::Info("drive serial=" + info.serial + " is back, at " + info.device);
    ScheduleProbesLocked(drive);
    return true;
  }
  if (old_name != info.name) {
    log::Info("drive serial=" + info.serial + " moved from " + old_name +
              " to " + info.name);
    return true;
  }
  return false;
}

bool DriveMonitor::MissingLocked(const std::set<std::string>& seen,
                                 std::chrono::system_clock::time_point wall) {
  std::vector<std::string> forget;
  for (auto& [serial, drive] : drives_) {
    if (seen.count(serial)) continue;
    bool was_present;
    {
      std::lock_guard info_lock(drive->info_mu);
      was_present = drive->present;
      drive->present = false;
    }
    if (was_present) {
      std::unique_lock controller_lock(drive->controller_mu, std::try_to_lock);
      if (controller_lock.owns_lock()) drive->controller.reset();
    }
    if (was_present || !discovered_once_) {
      if (was_present) {
        log::Warn("drive serial=" + serial + " (" + drive->info.name +
                  ") vanished; reporting drivewatch_drive_up 0 for " +
                  config::FormatDuration(config_.drive_grace_period));
      } else {
        log::Warn("drive serial=" + serial + " known from " +
                  config_.state_directory + " is missing; reporting "
                  "drivewatch_drive_up 0 for " +
                  config::FormatDuration(config_.drive_grace_period));
      }
      drive->vanished_at = wall;
      UnscheduleLocked(*drive);
      store_.RemovePrefix(serial + "/probe/");
      PublishDriveLocked(*drive);
    } else if (wall - drive->vanished_at >= config_.drive_grace_period) {
      log::Info("drive serial=" + serial + " gone for longer than the grace "
                "period; its series are removed");
      forget.push_back(serial);
    }
  }
  for (const auto& serial : forget) RemoveDriveLocked(serial);
  return !forget.empty();
}

bool DriveMonitor::DiscoverLocked(
    const Expected<std::vector<ControllerInfo>>& scan,
    Clock::Monotonic::time_point start, std::vector<ControllerInfo>& present) {
  const auto wall = clock_.WallNow();
  discovery_duration_ = Seconds(clock_.Now() - start);
  if (!scan) {
    if (!discovery_failing_) {
      log::Warn("NVMe discovery failed: " + scan.error().message +
                " (logged once until it recovers)");
    }
    discovery_failing_ = true;
    discovery_success_ = false;
    PublishExporterMetricsLocked();
    return false;
  }
  if (discovery_failing_) log::Info("NVMe discovery works again");
  discovery_failing_ = false;
  discovery_success_ = true;
  discovery_last_success_ = ToUnixSeconds(wall);

  bool changed = false;
  std::set<std::string> seen;
  for (const ControllerInfo& info : *scan) {
    if (info.serial.empty()) {
      log::Debug("controller " + info.name + " has no serial yet; skipped");
      continue;
    }
    if (!config_.drives.Watches(info.serial, info.model)) continue;
    // A dual-ported drive shows one controller per port, with one serial:
    // watch it once, through the first.
    if (!seen.insert(info.serial).second) continue;
    present.push_back(info);
    if (FoundLocked(info)) changed = true;
    PublishDriveLocked(*drives_.at(info.serial));
    // Probes that found this controller not live yet run again now.
    for (auto& ps : drives_.at(info.serial)->probes) {
      if (ps->job && ps->run_when_live.exchange(false)) scheduler_.RunSoon(*ps->job);
    }
  }

  if (MissingLocked(seen, wall)) changed = true;

  const size_t up = seen.size();
  if (up == 0 && !logged_no_drives_) {
    log::Info(scan->empty()
                  ? "no NVMe controllers found; serving drivewatch's own "
                    "metrics only"
                  : "no NVMe controller matches [drives]; serving "
                    "drivewatch's own metrics only");
    logged_no_drives_ = true;
  } else if (up > 0) {
    logged_no_drives_ = false;
  }
  if (changed || !discovered_once_) SaveKnownDrivesLocked();
  discovered_once_ = true;
  PublishExporterMetricsLocked();
  return true;
}

void DriveMonitor::PublishExporterMetricsLocked() {
  size_t up = 0, down = 0;
  for (const auto& [serial, drive] : drives_) {
    std::lock_guard info_lock(drive->info_mu);
    (drive->present ? up : down)++;
  }
  std::vector<Sample> samples;
  samples.push_back({&kDiscoverySuccess, {}, discovery_success_ ? 1.0 : 0.0});
  samples.push_back({&kDiscoveryDuration, {}, discovery_duration_});
  if (discovery_last_success_ > 0) {
    samples.push_back({&kDiscoveryLastSuccess, {}, discovery_last_success_});
  }
  samples.push_back({&kDrives, {{"state", "up"}}, static_cast<double>(up)});
  samples.push_back({&kDrives, {{"state", "down"}}, static_cast<double>(down)});
  store_.Publish("exporter/discovery", std::move(samples));
}

void DriveMonitor::PublishProbeRun(Drive& drive, const ProbeState& state,
                                   const std::string& serial, bool ok, double duration,
                                   std::vector<Sample> samples) {
  const Labels labels = {{"probe", state.registration->name}, {"serial", serial}};
  samples.push_back({&kProbeSuccess, labels, ok ? 1.0 : 0.0});
  samples.push_back({&kProbeDuration, labels, duration});
  samples.push_back({&kProbeFailures, labels, static_cast<double>(state.failures)});
  if (state.last_success > 0) {
    samples.push_back({&kProbeLastSuccess, labels, state.last_success});
  }
  // Publish under info_mu so a drive that vanished or was forgotten while
  // this run was in flight does not get its series back.
  std::lock_guard info_lock(drive.info_mu);
  if (drive.present && !drive.removed) {
    store_.Publish(ProbeScope(serial, state.registration->name), std::move(samples));
  } else {
    drive.controller.reset();  // discovery could not close it meanwhile
  }
}

void DriveMonitor::RunProbe(const std::shared_ptr<Drive>& drive,
                            ProbeState& state) {
  std::lock_guard controller_lock(drive->controller_mu);
  ControllerInfo info;
  {
    std::lock_guard info_lock(drive->info_mu);
    if (!drive->present || drive->removed) return;
    info = drive->info;
  }
  const std::string& probe_name = state.registration->name;
  const auto start = clock_.Now();
  Status status = Ok{};
  // The kernel name can change under a serial (hot-plug): reopen then.
  if (!drive->controller || drive->controller_device != info.device) {
    drive->controller.reset();
    auto opened = drive_layer_.Open(info);
    if (opened) {
      drive->controller = std::move(*opened);
      drive->controller_device = info.device;
    } else {
      status = opened.error();
      // The kernel opens a controller only once it is live: just after a
      // hot-plug (or during a reset) it answers EAGAIN. That is no failure
      // of the probe, whose next run may be an hour away: nothing is
      // published, and discovery runs it again on its next pass, until the
      // controller is live or kNotLiveGrace has passed (then it counts).
      const int err = status.error().errnum;
      if (err == EAGAIN || err == EWOULDBLOCK) {
        if (!state.not_live_since) state.not_live_since = start;
        if (start - *state.not_live_since < kNotLiveGrace) {
          log::Debug("probe " + probe_name + " on drive serial=" + info.serial + ": " +
                     info.device + " is not live yet; it runs again at the next discovery");
          state.run_when_live = true;
          return;
        }
      }
    }
  }
  if (drive->controller) state.not_live_since.reset();
  BatchSink sink;
  if (status) status = state.probe->Run(*drive->controller, info, sink);
  const double duration = Seconds(clock_.Now() - start);

  std::vector<Sample> samples;
  if (status) {
    samples = std::move(sink.samples());
    state.last_success = ToUnixSeconds(clock_.WallNow());
    if (state.failing) {
      log::Info("probe " + probe_name + " on drive serial=" + info.serial +
                " works again");
    }
    state.failing = false;
  } else {
    if (!state.failing) {
      log::Warn("probe " + probe_name + " on drive serial=" + info.serial +
                " (" + info.device + ") failed: " + status.error().message +
                " (logged once until it recovers)");
    }
    state.failing = true;
    ++state.failures;
    // A controller that went away leaves a dead file descriptor behind.
    if (status.error().errnum == ENODEV || status.error().errnum == ENXIO) {
      drive->controller.reset();
    }
  }
  PublishProbeRun(*drive, state, info.serial, status.ok(), duration, std::move(samples));
}

std::optional<std::string> DriveMonitor::RunProbesSoon(
    const std::string& kernel_name, const std::vector<std::string>& probes) {
  std::lock_guard lock(mu_);
  for (auto& [serial, drive] : drives_) {
    {
      std::lock_guard info_lock(drive->info_mu);
      if (!drive->present || drive->info.name != kernel_name) continue;
    }
    for (auto& ps : drive->probes) {
      if (!ps->job) continue;
      if (std::find(probes.begin(), probes.end(), ps->registration->name) !=
          probes.end()) {
        scheduler_.RunSoon(*ps->job);
      }
    }
    return serial;
  }
  return std::nullopt;
}

void DriveMonitor::StopProbes() {
  std::vector<std::shared_ptr<Drive>> drives;
  {
    std::lock_guard lock(mu_);
    for (auto& [serial, drive] : drives_) drives.push_back(drive);
  }
  for (auto& drive : drives) {
    std::lock_guard controller_lock(drive->controller_mu);
    if (!drive->controller) continue;
    ControllerInfo info;
    {
      std::lock_guard info_lock(drive->info_mu);
      if (!drive->present || drive->removed) continue;
      info = drive->info;
    }
    for (auto& ps : drive->probes) ps->probe->Stop(*drive->controller, info);
  }
}

void DriveMonitor::CollectOnce(const config::Config& config) {
  {
    std::lock_guard lock(mu_);
    config_ = config;
    persist_ = false;
  }
  Discover();
  std::vector<std::pair<std::shared_ptr<Drive>, ProbeState*>> runs;
  {
    std::lock_guard lock(mu_);
    for (auto& [serial, drive] : drives_) {
      for (auto& ps : drive->probes) {
        if (ps->registration->settings(config_).enabled) {
          runs.emplace_back(drive, ps.get());
        }
      }
    }
  }
  for (auto& [drive, state] : runs) RunProbe(drive, *state);
}

}  // namespace drivewatch
