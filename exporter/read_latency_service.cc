// SPDX-License-Identifier: Apache-2.0
#include "exporter/read_latency_service.h"

#include "config/util/log.h"

namespace drivewatch {
namespace {

bool SameTarget(const ReadTarget& a, const ReadTarget& b) {
  return a.kind == b.kind && a.labels == b.labels && a.path == b.path &&
         a.file_name == b.file_name && a.file_size == b.file_size &&
         a.offset == b.offset && a.length == b.length && a.serial == b.serial &&
         a.nsid == b.nsid && a.sysfs_root == b.sysfs_root;
}

// The same target, maybe under another kernel name: a namespace whose
// block device was renamed keeps its probe (and so its series' values).
bool SameButPath(const ReadTarget& a, const ReadTarget& b) {
  ReadTarget moved = b;
  moved.path = a.path;
  return a.kind == ReadTarget::Kind::kNamespace && SameTarget(a, moved);
}

bool SameSettings(const ReadLatencySettings& a, const ReadLatencySettings& b) {
  return a.rates == b.rates && a.rate_period == b.rate_period &&
         a.idle_period == b.idle_period &&
         a.arrivals == b.arrivals && a.block_size == b.block_size &&
         a.timeout == b.timeout && a.windows == b.windows &&
         a.window_names == b.window_names && a.min_free_ratio == b.min_free_ratio;
}

}  // namespace

ReadLatencyService::ReadLatencyService(MetricStore& store, Scheduler& scheduler,
                                       std::string sysfs_root)
    : store_(store),
      scheduler_(scheduler),
      sysfs_root_(std::move(sysfs_root)),
      epoch_(std::chrono::steady_clock::now()) {}

ReadLatencyService::~ReadLatencyService() { Stop(); }

ReadLatencySettings ReadLatencyService::ProbeSettings(const config::Config& config) {
  const config::ReadLatencySettings& c = config.read_latency;
  ReadLatencySettings s;
  s.rates = c.rates;
  s.rate_period = c.rate_period;
  s.idle_period = c.idle_period;
  s.arrivals = c.arrivals == config::Arrivals::kPoisson ? ArrivalProcess::kPoisson
                                                        : ArrivalProcess::kFixed;
  s.block_size = c.block_size;
  s.timeout = c.timeout;
  s.windows = c.windows;
  s.window_names.clear();
  for (const auto& w : c.windows) s.window_names.push_back(config::FormatDuration(w));
  return s;
}

ReadLatencyService::Targets ReadLatencyService::ConfiguredTargets(
    const config::Config& config) {
  Targets out;
  if (!config.read_latency.enabled) return out;
  for (const config::ReadLatencyTarget& t : config.read_latency.targets) {
    ReadTarget target;
    target.labels = {{"target", t.name}};
    target.offset = t.offset;
    target.length = t.length;
    if (!t.block_device.empty()) {
      target.kind = ReadTarget::Kind::kBlockDevice;
      target.path = t.block_device;
    } else {
      target.kind = ReadTarget::Kind::kFile;
      target.path = t.directory;
      target.file_name = "drivewatch-" + t.name + ".dat";
      target.file_size = t.file_size;
    }
    out.emplace("target/" + t.name + "/read_latency", std::move(target));
  }
  return out;
}

ReadLatencyService::Targets ReadLatencyService::NamespaceTargets(
    const config::Config& config, const std::vector<ControllerInfo>& drives,
    const std::string& sysfs_root) {
  Targets out;
  if (!config.read_latency.enabled || !config.read_latency.namespaces) return out;
  for (const ControllerInfo& drive : drives) {
    for (const NamespaceInfo& ns : drive.namespaces) {
      if (ns.block_device.empty()) continue;
      ReadTarget target;
      target.kind = ReadTarget::Kind::kNamespace;
      target.labels = {{"serial", drive.serial}, {"nsid", std::to_string(ns.nsid)}};
      target.path = ns.block_device;
      target.serial = drive.serial;
      target.nsid = ns.nsid;
      target.sysfs_root = sysfs_root;
      out.emplace(drive.serial + "/probe/read_latency/" + std::to_string(ns.nsid),
                  std::move(target));
    }
  }
  return out;
}

void ReadLatencyService::SyncLocked(const Targets& wanted, bool park) {
  const auto now = std::chrono::steady_clock::now();
  for (auto it = parked_.begin(); it != parked_.end();) {
    if (config_ && now - it->second.since >= config_->drive_grace_period) {
      it = parked_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = workers_.begin(); it != workers_.end();) {
    auto w = wanted.find(it->first);
    if (w != wanted.end() && SameTarget(w->second, it->second->target)) {
      ++it;
      continue;
    }
    if (w != wanted.end() && SameButPath(w->second, it->second->target)) {
      log::Info("read latency: " + it->second->target.path + " is now " + w->second.path);
      it->second->probe->MoveBlockDevice(w->second.path);
      it->second->target = w->second;
      ++it;
      continue;
    }
    log::Info("read latency: stopping " + it->second->target.path);
    it->second->probe->Detach();
    store_.Remove(it->first);
    if (park && w == wanted.end() && it->second->target.kind == ReadTarget::Kind::kNamespace) {
      parked_[it->first] = Parked{std::move(it->second), now};
    }
    it = workers_.erase(it);
  }
  for (const auto& [scope, target] : wanted) {
    if (workers_.count(scope)) continue;
    std::unique_ptr<Worker> worker;
    if (auto p = parked_.find(scope); p != parked_.end()) {
      if (SameTarget(target, p->second.worker->target) ||
          SameButPath(target, p->second.worker->target)) {
        worker = std::move(p->second.worker);
        worker->probe->MoveBlockDevice(target.path);
        worker->target = target;
        log::Info("read latency: serial=" + worker->serial + " nsid " +
                  std::to_string(target.nsid) + " is back, at " + target.path +
                  "; its counts continue");
      }
      parked_.erase(p);
    }
    if (!worker) {
      worker = std::make_unique<Worker>();
      worker->scope = scope;
      worker->target = target;
      if (target.kind == ReadTarget::Kind::kNamespace) {
        worker->serial = target.labels.front().second;
      }
      worker->probe = std::make_unique<ReadLatencyProbe>(target, settings_);
      if (load_board_ != nullptr && !worker->serial.empty()) {
        worker->probe->SetLoadObserver(load_board_->Observe(worker->serial));
      }
      // A drive's rate is shared by its namespaces; a configured target
      // paces alone. Every schedule counts from the service's epoch.
      auto& pacing = pacing_[worker->serial.empty() ? scope : worker->serial];
      if (!pacing) pacing = std::make_shared<DrivePacing>(epoch_);
      worker->probe->SetDrivePacing(pacing);
      if (auto p = paused_.find(worker->serial); p != paused_.end()) {
        for (int i = 0; i < p->second; ++i) worker->probe->Pause();
      }
    }
    worker->probe->Attach(Reactor());
    log::Info("read latency: reading " + target.path +
              (target.kind == ReadTarget::Kind::kFile ? "/" + target.file_name : ""));
    workers_.emplace(scope, std::move(worker));
  }
}

ReadReactor& ReadLatencyService::Reactor() {
  if (!reactor_) reactor_ = std::make_unique<ReadReactor>();
  return *reactor_;
}

void ReadLatencyService::Start(const config::Config& config) {
  std::lock_guard lock(mu_);
  config_ = config;
  settings_ = ProbeSettings(config);
  SyncLocked(ConfiguredTargets(config));
  publish_job_ = scheduler_.Add("read_latency_publish", "read_latency",
                                std::chrono::duration_cast<Scheduler::Duration>(
                                    kPublishInterval),
                                [this] { PublishAll(); }, kPublishInterval);
}

void ReadLatencyService::Reconfigure(const config::Config& config) {
  std::lock_guard lock(mu_);
  const ReadLatencySettings next = ProbeSettings(config);
  if (!SameSettings(next, settings_)) {
    SyncLocked({});  // every target restarts with the new settings
    parked_.clear();
    settings_ = next;
  }
  config_ = config;
  Targets wanted = ConfiguredTargets(config);
  wanted.merge(NamespaceTargets(config, drives_, sysfs_root_));
  SyncLocked(wanted);
}

void ReadLatencyService::Stop() {
  std::lock_guard lock(mu_);
  if (publish_job_) scheduler_.Remove(*publish_job_);
  publish_job_.reset();
  config_.reset();  // a discovery pass still in flight starts nothing
  for (auto& [scope, worker] : workers_) worker->probe->Detach();
  workers_.clear();
  parked_.clear();
  reactor_.reset();
}

void ReadLatencyService::DrivesPresent(const std::vector<ControllerInfo>& drives) {
  std::lock_guard lock(mu_);
  drives_ = drives;
  if (!config_) return;
  Targets wanted = ConfiguredTargets(*config_);
  wanted.merge(NamespaceTargets(*config_, drives_, sysfs_root_));
  SyncLocked(wanted, /*park=*/true);
}

void ReadLatencyService::Pause(const std::string& serial) {
  std::lock_guard lock(mu_);
  ++paused_[serial];
  for (auto& [scope, worker] : workers_) {
    if (worker->serial == serial) worker->probe->Pause();
  }
  for (auto& [scope, parked] : parked_) {
    if (parked.worker->serial == serial) parked.worker->probe->Pause();
  }
}

void ReadLatencyService::Resume(const std::string& serial) {
  std::lock_guard lock(mu_);
  auto it = paused_.find(serial);
  if (it == paused_.end()) return;
  if (--it->second == 0) paused_.erase(it);
  for (auto& [scope, worker] : workers_) {
    if (worker->serial == serial) worker->probe->Resume();
  }
  for (auto& [scope, parked] : parked_) {
    if (parked.worker->serial == serial) parked.worker->probe->Resume();
  }
}

void ReadLatencyService::PublishAll() {
  std::lock_guard lock(mu_);
  for (auto& [scope, worker] : workers_) {
    BatchSink sink;
    worker->probe->Emit(sink);
    store_.Publish(scope, std::move(sink.samples()));
  }
}

void ReadLatencyService::CollectOnce(const config::Config& config,
                                     const std::vector<ControllerInfo>& drives,
                                     MetricStore& store) {
  Targets targets = ConfiguredTargets(config);
  targets.merge(NamespaceTargets(config, drives, "/sys"));
  const ReadLatencySettings settings = ProbeSettings(config);
  std::vector<std::pair<std::string, std::unique_ptr<ReadLatencyProbe>>> probes;
  {
    // All targets at once, on one reactor.
    ReadReactor reactor;
    for (const auto& [scope, target] : targets) {
      probes.emplace_back(scope, std::make_unique<ReadLatencyProbe>(target, settings));
      probes.back().second->StartBurst(reactor, kBurstReads);
    }
    for (auto& [scope, probe] : probes) probe->FinishBurst(std::stop_token{});
  }
  for (auto& [scope, probe] : probes) {
    BatchSink sink;
    probe->Emit(sink);
    store.Publish(scope, std::move(sink.samples()));
  }
}

}  // namespace drivewatch
