// SPDX-License-Identifier: Apache-2.0
// What the daemon costs with the default probes: CPU time per minute and
// resident memory, with 8 drives.
//
// No NVMe hardware exists on the build machines, so the drives answer from
// recorded QEMU log pages (tests/fixtures/qemu), replicated under 8 serials;
// the kernel's share of a real admin command (a few µs of ioctl) is therefore
// not counted here. Everything else is the real daemon: the scheduler loop,
// per-drive strands, the health probe and its decoding, the metric store,
// and the Boost.Beast server serving scrapes to a real curl in another process.
//
// Time is compressed: every interval (discovery 30 s, health 60 s, scrape
// 15 s) is divided by --speed, so a 10 s run at speed 60 covers 10 default
// minutes. CPU per default minute = process CPU / covered minutes.
//
//   build/tests/daemon_cost_bench [--seconds=10] [--speed=60] [--drives=8]
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "exporter/drive_monitor.h"
#include "exporter/http_server.h"
#include "exporter/probe_registry.h"
#include "tests/common/recorded_drive_layer.h"
#include "tests/common/replicated_drive_layer.h"

using namespace drivewatch;
using drivewatch::fleet::ReplicatedDriveLayer;

namespace {

double CpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
         (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

long StatusKiB(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::atol(line.c_str() + field.size() + 1);
  }
  return -1;
}

double Flag(int argc, char** argv, const std::string& name, double def) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--" + name + "=", 0) == 0) return std::atof(a.c_str() + name.size() + 3);
  }
  return def;
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = Flag(argc, argv, "seconds", 10);
  const double speed = Flag(argc, argv, "speed", 60);
  const int drives = static_cast<int>(Flag(argc, argv, "drives", 8));

  testing::RecordedDriveLayer recorded({std::string(DW_FIXTURE_DIR) + "/qemu"});
  ReplicatedDriveLayer layer(recorded, drives);
  config::Config cfg = config::Defaults();
  cfg.state_directory = "/tmp/dw-bench-state-" + std::to_string(::getpid());
  const auto scale = [&](std::chrono::milliseconds d) {
    return std::chrono::milliseconds(static_cast<long>(d.count() / speed));
  };
  cfg.discovery_interval = scale(cfg.discovery_interval);
  cfg.health.interval = scale(cfg.health.interval);
  const auto scrape_every = std::chrono::milliseconds(static_cast<long>(15000 / speed));

  SystemClock clock;
  StrandExecutor executor;
  Scheduler scheduler(clock, executor);
  MetricStore store;
  DriveMonitor monitor(layer, store, scheduler, clock, RegisteredProbes());
  HttpServer http(store, "");
  if (!http.Start("127.0.0.1:0")) return 1;
  const long rss_before = StatusKiB("VmRSS");
  const double cpu_before = CpuSeconds();
  monitor.Start(cfg);
  std::thread loop([&] { scheduler.Loop([] {}, std::chrono::seconds(10)); });

  const std::string curl = "curl -fsS -o /dev/null http://127.0.0.1:" +
                           std::to_string(http.port()) + "/metrics";
  int scrapes = 0;
  const auto end = std::chrono::steady_clock::now() +
                   std::chrono::milliseconds(static_cast<long>(seconds * 1000));
  while (std::chrono::steady_clock::now() < end) {
    if (std::system(curl.c_str()) == 0) ++scrapes;
    std::this_thread::sleep_for(scrape_every);
  }
  scheduler.Stop();
  loop.join();
  const double cpu = CpuSeconds() - cpu_before;
  const long rss = StatusKiB("VmRSS");
  const long hwm = StatusKiB("VmHWM");
  http.Stop();
  executor.Shutdown(std::chrono::seconds(5));
  std::error_code ignored;
  std::filesystem::remove_all(cfg.state_directory, ignored);

  const double covered_minutes = seconds * speed / 60.0;
  std::printf("drives=%d covered=%.1f default minutes (run %.0f s at speed %.0fx), scrapes=%d\n",
              drives, covered_minutes, seconds, speed, scrapes);
  std::printf("cpu: %.1f ms total, %.2f ms per default minute\n", cpu * 1e3,
              cpu * 1e3 / covered_minutes);
  std::printf("rss: %ld KiB before start, %ld KiB at end, %ld KiB peak\n",
              rss_before, rss, hwm);
  std::printf("exposition: %zu bytes\n", store.Render()->size());
  return 0;
}
