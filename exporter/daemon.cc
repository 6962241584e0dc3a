// SPDX-License-Identifier: Apache-2.0
#include "exporter/daemon.h"

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

#include "aging/phases/phase.h"
#include "aging/safety/interlocks.h"
#include "config/config.h"
#include "config/util/log.h"
#include "exporter/async_events.h"
#include "exporter/build_info.h"
#include "exporter/clock.h"
#include "exporter/drive_monitor.h"
#include "exporter/http/http_server.h"
#include "exporter/http/web_config.h"
#include "exporter/metric_store.h"
#include "exporter/phase_service.h"
#include "exporter/probe_registry.h"
#include "exporter/read_latency_service.h"
#include "exporter/retention_service.h"
#include "exporter/scheduler.h"
#include "exporter/service.h"
#include "exporter/state_health.h"
#include "exporter/systemd_notify.h"
#include "probes/drive/nvme_drive_layer.h"

namespace drivewatch {
namespace {

constexpr MetricDesc kBuildInfo{
    "drivewatch_build_info",
    "drivewatch's version and git revision, and the versions of the libraries "
    "it was built with; always 1.",
    MetricType::kGauge};
constexpr MetricDesc kReloadSuccessful{
    "drivewatch_config_last_reload_successful",
    "1 if the last config load (at start or on SIGHUP) succeeded, 0 if the "
    "new config was rejected and the old one kept running.",
    MetricType::kGauge};
constexpr MetricDesc kReloadTimestamp{
    "drivewatch_config_last_reload_success_timestamp_seconds",
    "Unix time of the last successful config load.",
    MetricType::kGauge};

log::Level ToLogLevel(config::LogLevel level) {
  switch (level) {
    case config::LogLevel::kDebug: return log::Level::kDebug;
    case config::LogLevel::kInfo: return log::Level::kInfo;
    case config::LogLevel::kWarn: return log::Level::kWarn;
    case config::LogLevel::kError: return log::Level::kError;
  }
  return log::Level::kInfo;
}

// The loaders put strerror()'s text in their messages and keep no errno;
// these two are the ones that say nothing about the file.
bool SaysOutOfDescriptors(const std::string& message) {
  for (const int err : {EMFILE, ENFILE}) {
    const std::string text = std::strerror(err);
    if (message.size() >= text.size() &&
        message.compare(message.size() - text.size(), text.size(), text) == 0) {
      return true;
    }
  }
  return false;
}

// Go programs do the same at start: the hard limit is what the unit (or
// the administrator) granted, the soft one only an old default.
void RaiseOpenFileLimit() {
  struct rlimit limit {};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= limit.rlim_max) return;
  const rlim_t was = limit.rlim_cur;
  limit.rlim_cur = limit.rlim_max;
  if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) {
    log::Warn("cannot raise the open-file limit from " + std::to_string(was) + " to " +
              std::to_string(limit.rlim_max) + ": " + std::strerror(errno));
  }
}

config::LoadOptions ConfigLoadOptions() {
  // Replay traces are read, and targets resolved to their storage, by the
  // aging side, which config/ does not link.
  return config::LoadOptions{.inspect_trace = aging::InspectTrace,
                             .compare_storage = aging::CompareTargetStorage,
                             .check_tools = aging::CheckKindTools};
}

std::string OpenFileLimit() {
  struct rlimit limit {};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return "unknown";
  return std::to_string(limit.rlim_cur);
}

}  // namespace

std::optional<config::Config> LoadConfig(const CommandLine& cli, bool* out_of_descriptors) {
  config::Config cfg = config::Defaults();
  if (cli.config_file) {
    auto loaded = config::LoadFile(*cli.config_file, ConfigLoadOptions());
    if (!loaded.config) {
      for (const auto& e : loaded.errors) {
        std::fprintf(stderr, "%s\n", e.ToString().c_str());
        if (out_of_descriptors && SaysOutOfDescriptors(e.problem)) *out_of_descriptors = true;
      }
      return std::nullopt;
    }
    cfg = *loaded.config;
  }
  if (cli.listen_address) {
    if (auto addr = ParseListenAddress(*cli.listen_address); !addr) {
      std::fprintf(stderr, "--web.listen-address: %s\n",
                   addr.error().message.c_str());
      return std::nullopt;
    }
    cfg.listen_address = *cli.listen_address;
  }
  if (cli.log_level) {
    const auto level = config::ParseLogLevel(*cli.log_level);
    if (!level) {
      std::fprintf(stderr,
                   "--log.level: unknown level \"%s\" (expected debug, info, "
                   "warn or error)\n",
                   cli.log_level->c_str());
      return std::nullopt;
    }
    cfg.log_level = *level;
  }
  return cfg;
}

namespace {

void PublishBuildInfo(MetricStore& store) {
  store.Publish("exporter/build",
                {{&kBuildInfo,
                  {{"version", kVersion},
                   {"revision", kRevision},
                   {"libnvme", kLibnvmeVersion},
                   {"liburing", kLiburingVersion},
                   {"prometheus_cpp", kPrometheusCppVersion}},
                  1.0}});
}

void PublishReload(MetricStore& store, bool ok, double last_success) {
  std::vector<Sample> samples = {{&kReloadSuccessful, {}, ok ? 1.0 : 0.0}};
  if (last_success > 0) samples.push_back({&kReloadTimestamp, {}, last_success});
  store.Publish("exporter/config", std::move(samples));
}

std::string LandingPage() {
  return std::string(R"(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>drivewatch</title></head>
<body>
<h1>drivewatch</h1>
<p>Watches NVMe drives age.</p>
<ul>
<li><a href="metrics">Metrics</a></li>
<li><a href="-/healthy">Health</a></li>
</ul>
<p>Version )") + kVersion + " (revision " + kRevision + R"()</p>
</body></html>
)";
}

// Loads --web.config.file; an empty WebConfig (plain HTTP, no auth) when
// the flag is absent. Each located error goes to stderr (at start) or to
// the log (on SIGHUP); returns nothing on error.
std::optional<WebConfig> LoadWebConfig(const CommandLine& cli, bool to_log,
                                       bool* out_of_descriptors = nullptr) {
  if (!cli.web_config_file) return WebConfig{};
  auto loaded = LoadWebConfigFile(*cli.web_config_file);
  const auto report = [to_log](const std::string& line, bool error) {
    if (to_log) {
      error ? log::Error(line) : log::Warn(line);
    } else {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
  };
  for (const auto& e : loaded.errors) {
    report(e.ToString(), true);
    if (out_of_descriptors && SaysOutOfDescriptors(e.problem)) *out_of_descriptors = true;
  }
  for (const auto& w : loaded.warnings) report("warning: " + w.ToString(), false);
  return loaded.config;
}

// Listens for NVMe asynchronous events while the config asks for them
// ([probes.thermal] async_events), switched on and off by reloads.
class AsyncEventSwitch : public Service {
 public:
  explicit AsyncEventSwitch(AsyncEventRelay& relay) : relay_(relay) {}
  void Start(const config::Config& config) override { Reconfigure(config); }
  void Reconfigure(const config::Config& config) override {
    std::lock_guard lock(mu_);
    const bool wanted = config.async_events && config.probe("thermal").enabled;
    if (wanted && !listener_) {
      auto candidate = std::make_unique<AsyncEventListener>(
          [this](const NvmeAsyncEvent& e) { relay_.OnEvent(e); });
      if (Status s = candidate->Start(); !s) {
        log::Warn("cannot listen for NVMe asynchronous events: " + s.error().message +
                  "; temperature and health changes are seen at the next poll instead");
        relay_.SetListening(false);
      } else {
        listener_ = std::move(candidate);
        relay_.SetListening(true);
      }
    } else if (!wanted) {
      listener_.reset();
      relay_.SetListening(std::nullopt);
    }
  }
  void Stop() override {
    std::lock_guard lock(mu_);
    listener_.reset();
  }

 private:
  AsyncEventRelay& relay_;
  std::mutex mu_;
  std::unique_ptr<AsyncEventListener> listener_;  // guarded by mu_
};

}  // namespace

int RunCheckConfig(const CommandLine& cli) {
  int status = 0;
  if (!cli.args.empty()) {
    const std::string& file = cli.args.at(0);
    auto loaded = config::LoadFile(file, ConfigLoadOptions());
    if (!loaded.config) {
      for (const auto& e : loaded.errors) {
        std::fprintf(stderr, "%s\n", e.ToString().c_str());
      }
      status = 2;
    } else {
      std::printf("%s: OK\n", file.c_str());
    }
  }
  if (cli.web_config_file) {
    if (!LoadWebConfig(cli, /*to_log=*/false)) {
      status = 2;
    } else {
      std::printf("%s: OK\n", cli.web_config_file->c_str());
    }
  }
  return status;
}

int RunCollectOnce(const CommandLine& cli) {
  auto cfg = LoadConfig(cli);
  if (!cfg) return 2;
  // Nobody listens for asynchronous events in a one-shot run, so it leaves
  // the drives' event configuration alone.
  cfg->async_events = false;
  log::SetLevel(ToLogLevel(cfg->log_level));
  MetricStore store;
  SystemClock clock;
  InlineExecutor executor;
  Scheduler scheduler(clock, executor);
  auto drive_layer = MakeNvmeDriveLayer();
  DriveMonitor monitor(*drive_layer, store, scheduler, clock,
                       RegisteredProbes());
  PublishBuildInfo(store);
  // The read latency probe gets the namespaces this discovery finds and
  // runs a short burst on every target, so one-shot output has latency too.
  struct Namespaces : DriveListener {
    std::vector<ControllerInfo> drives;
    void DrivesPresent(const std::vector<ControllerInfo>& d) override { drives = d; }
  } found;
  monitor.SetListener(&found);
  monitor.CollectOnce(*cfg);
  ReadLatencyService::CollectOnce(*cfg, found.drives, store);
  const auto text = store.Render();
  std::fwrite(text->data(), 1, text->size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}

namespace {

// Signals are taken by one thread with sigwait; every other thread,
// including those libraries start, inherits this mask.
sigset_t BlockSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  return signals;
}

void LogServing(const CommandLine& cli, const WebConfig& web, const HttpServer& http) {
  log::Info(std::string("drivewatch ") + kVersion + " serving metrics at " +
            http.MetricsUrl() +
            (cli.config_file ? " with config " + *cli.config_file
                             : std::string(" with the built-in default config")) +
            (cli.web_config_file
                 ? " and web config " + *cli.web_config_file + " (TLS " +
                       (web.tls ? "on" : "off") + ", basic auth " +
                       (web.users.empty() ? "off" : "on") + ")"
                 : std::string()));
}

// Flushes the instant alerts' log summaries on their own interval.
void ScheduleAsyncEventLogFlush(Scheduler& scheduler, AsyncEventRelay& relay) {
  scheduler.Add("async_event_log_summaries", "exporter",
                std::chrono::duration_cast<Scheduler::Duration>(
                    AsyncEventRelay::kLogFlushInterval),
                [&relay] { relay.FlushLogs(); },
                std::chrono::duration_cast<Scheduler::Duration>(
                    AsyncEventRelay::kLogFlushInterval));
}

// What a SIGHUP reload reads, replaces and reports to; the running
// daemon's own objects, by reference.
struct Reloadable {
  const CommandLine& cli;
  config::Config& config;
  std::unique_ptr<HttpServer>& http;
  MetricStore& store;
  const Clock& clock;
  DriveMonitor& monitor;
  const std::vector<Service*>& services;
  double last_reload;
};

void RefuseReload(Reloadable& d, const std::string& file, bool out_of_descriptors) {
  // Not "invalid": the file could not even be opened.
  if (out_of_descriptors) {
    log::Error("SIGHUP: cannot open " + file +
               ": drivewatch has run out of file descriptors (open-file limit " +
               OpenFileLimit() + "); the file was not checked; keeping the "
               "running config");
  } else {
    log::Error("SIGHUP: " + file + " is invalid (errors above); keeping the "
               "running config");
  }
  PublishReload(d.store, false, d.last_reload);
}

// Hands the HTTP server the new address or web config; false (logged and
// published) when it cannot take them, and the running one stays.
bool ReconfigureHttp(Reloadable& d, const config::Config& next, const WebConfig& next_web) {
  // With a web config the server is always given the new one, so a
  // SIGHUP also picks up renewed certificates.
  if (next.listen_address != d.config.listen_address) {
    auto replacement = std::make_unique<HttpServer>(d.store, LandingPage(), next_web);
    if (Status s = replacement->Start(next.listen_address); !s) {
      log::Error("SIGHUP: " + s.error().message + "; keeping the running config");
      PublishReload(d.store, false, d.last_reload);
      return false;
    }
    d.http->Stop();
    d.http = std::move(replacement);
    log::Info("now serving metrics at " + d.http->MetricsUrl());
  } else if (d.cli.web_config_file) {
    // Same address: the listening socket stays open and only new
    // connections and requests see the new config.
    if (Status s = d.http->Reconfigure(next_web); !s) {
      log::Error("SIGHUP: " + s.error().message + "; keeping the running config");
      PublishReload(d.store, false, d.last_reload);
      return false;
    }
  }
  return true;
}

// One SIGHUP: both files read and checked before anything changes; on
// any error the running config stays, as does the listening socket.
void Reload(Reloadable& d) {
  const CommandLine& cli = d.cli;
  bool out_of_descriptors = false;
  if (!cli.config_file && !cli.web_config_file) {
    log::Info("SIGHUP: no --config.file given; the built-in defaults stay");
    return;
  }
  auto next = cli.config_file ? LoadConfig(cli, &out_of_descriptors) : d.config;
  if (!next) return RefuseReload(d, *cli.config_file, out_of_descriptors);
  const auto next_web = LoadWebConfig(cli, /*to_log=*/true, &out_of_descriptors);
  if (!next_web) return RefuseReload(d, *cli.web_config_file, out_of_descriptors);
  if (!ReconfigureHttp(d, *next, *next_web)) return;
  d.config = *next;
  log::SetLevel(ToLogLevel(d.config.log_level));
  d.monitor.Reconfigure(d.config);
  for (Service* s : d.services) s->Reconfigure(d.config);
  d.last_reload = ToUnixSeconds(d.clock.WallNow());
  PublishReload(d.store, true, d.last_reload);
  log::Info("SIGHUP: reloaded " + (cli.config_file ? *cli.config_file : *cli.web_config_file) +
            (cli.config_file && cli.web_config_file ? " and " + *cli.web_config_file
                                                    : std::string()));
}

// The signal thread: SIGHUP reloads, anything else stops the scheduler.
void TakeSignals(const sigset_t& signals, Scheduler& scheduler, Reloadable& d) {
  for (;;) {
    int sig = 0;
    if (sigwait(&signals, &sig) != 0) continue;
    if (sig != SIGHUP) {
      log::Info(std::string("received ") + strsignal(sig) + ", stopping");
      scheduler.Stop();
      return;
    }
    systemd::Notify("RELOADING=1");
    Reload(d);
    systemd::Notify("READY=1");
  }
}

// Runs the scheduler until a signal stops it. The watchdog is pinged from
// the scheduler loop, so a wedged scheduler gets the daemon restarted.
void Serve(Scheduler& scheduler, const HttpServer& http) {
  const auto watchdog = systemd::WatchdogInterval();
  const Scheduler::Duration beat =
      watchdog ? std::chrono::duration_cast<Scheduler::Duration>(*watchdog / 2)
               : std::chrono::seconds(10);
  systemd::Notify("READY=1\nSTATUS=serving " + http.MetricsUrl());
  scheduler.Loop(
      [&] {
        if (watchdog) systemd::Notify("WATCHDOG=1");
      },
      beat);
}

// Stops what RunDaemon started, services in reverse; returns the exit status.
int Shutdown(HttpServer& http, const std::vector<Service*>& services,
             StrandExecutor& executor, DriveMonitor& monitor) {
  http.Stop();
  // Phase runs end as "aborted", recorded in the history.
  for (auto s = services.rbegin(); s != services.rend(); ++s) (*s)->Stop();
  const int busy = executor.Shutdown(std::chrono::seconds(5));
  if (busy > 0) {
    // Threads stuck in a drive's ioctl cannot be joined; leave without them.
    log::Warn(std::to_string(busy) +
              " drive(s) still busy in the kernel; exiting without waiting");
    std::fflush(nullptr);
    ::_exit(0);
  }
  monitor.StopProbes();
  log::Info("stopped");
  return 0;
}

}  // namespace

int RunDaemon(const CommandLine& cli) {
  auto cfg = LoadConfig(cli);
  if (!cfg) return 2;
  auto web = LoadWebConfig(cli, /*to_log=*/false);
  if (!web) return 2;
  log::SetLevel(ToLogLevel(cfg->log_level));
  RaiseOpenFileLimit();
  const sigset_t signals = BlockSignals();

  MetricStore store;
  SystemClock clock;
  StrandExecutor executor;
  Scheduler scheduler(clock, executor);
  auto drive_layer = MakeNvmeDriveLayer();
  // What drivewatch's own reads do to each drive: the read latency service
  // writes it, the power draw probe reads it. Outlives both.
  DriveLoadBoard load_board;
  // Which drives a heavy phase holds; scheduled self-tests wait for them.
  DriveBusyBoard busy_board;
  const std::vector<ProbeRegistration> probes =
      MakeProbeRegistry(&load_board, &busy_board, /*durable_state=*/true);
  DriveMonitor monitor(*drive_layer, store, scheduler, clock, probes);
  PublishBuildInfo(store);
  const double started = ToUnixSeconds(clock.WallNow());
  PublishReload(store, true, started);

  auto http = std::make_unique<HttpServer>(store, LandingPage(), *web);
  if (Status s = http->Start(cfg->listen_address); !s) {
    log::Error(s.error().message);
    return 1;
  }
  LogServing(cli, *web, *http);
  // Per-target read threads follow discovery (hot-plug) and reloads.
  ReadLatencyService read_latency(store, scheduler);
  read_latency.SetLoadBoard(&load_board);
  monitor.SetListener(&read_latency);
  // Data-retention studies: temperature accounting and their metrics,
  // refreshed as soon as a phase (a verify) ends.
  RetentionService retention(store);
  // Read-only, full or failing state directory and damaged history as
  // metrics (drivewatch_state_directory_writable, drivewatch_history_*).
  StateHealthService state_health(store);
  // Heavy phases on their schedules; they pause the read latency probe
  // and mark the drive busy while they run.
  PhaseService phases(store, &busy_board, &read_latency);
  phases.SetOnRunEnd([&retention] {
    retention.Tick(std::chrono::duration<double>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count());
  });
  // Instant alerts. Declared after the monitor so it stops before the
  // monitor goes.
  AsyncEventRelay relay(monitor, store, clock);
  ScheduleAsyncEventLogFlush(scheduler, relay);
  AsyncEventSwitch async_events(relay);
  // Started in this order, before the drive monitor (whose discovery tells
  // the read latency service the drives); reconfigured in it, after the
  // monitor; stopped in reverse. The monitor's probes are stopped on their
  // own, after the executor (below).
  const std::vector<Service*> services = {&read_latency, &retention, &state_health, &phases,
                                          &async_events};
  for (Service* s : services) s->Start(*cfg);
  monitor.Start(*cfg);

  Reloadable reloadable{cli, *cfg, http, store, clock, monitor, services, started};
  std::thread signal_thread([&] { TakeSignals(signals, scheduler, reloadable); });
  Serve(scheduler, *http);
  systemd::Notify("STOPPING=1");
  signal_thread.join();
  return Shutdown(*http, services, executor, monitor);
}

}  // namespace drivewatch
