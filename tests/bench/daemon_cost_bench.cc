// SPDX-License-Identifier: Apache-2.0
// What the daemon costs with the default config: CPU time per minute and
// resident memory, with 8 drives.
//
// No NVMe hardware exists on the build machines, so the drives answer from
// recorded QEMU log pages (tests/fixtures/qemu), replicated under 8 serials;
// the kernel's share of a real admin command (a few µs of ioctl) is therefore
// not counted here. Everything else is the real daemon as exporter/daemon.cc
// wires it: the scheduler loop, per-drive strands, every default probe (the
// registry with the drive load board), the metric store, the Boost.Beast
// server serving scrapes to a real curl in another process, and the read
// latency probe reading each drive's namespaces. Those namespaces are loop
// devices (--direct-io=on: real io_uring and O_DIRECT reads) over files in
// /var/tmp, with a fixture sysfs tree giving each the serial and nsid the
// NVMe driver would; this needs root (without it the bench says so and
// stops).
//
// Time is compressed alike for everything: every interval of the default
// config (discovery, each probe's, the read latency probe's rate_period,
// idle_period and windows, scrape 15 s) is divided by --speed and every
// read rate multiplied by it, so a run covers seconds * speed / 60 default
// minutes with the same work per default minute. CPU per default minute =
// process CPU (getrusage: user + system, every thread) / covered minutes.
//
//   build/tests/daemon_cost_bench [--seconds=20] [--speed=6] [--drives=8]
//                                 [--namespaces=1]
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "exporter/drive_monitor.h"
#include "exporter/http/http_server.h"
#include "exporter/probe_registry.h"
#include "exporter/read_latency_service.h"
#include "probes/drive/io_target.h"
#include "probes/latency/drive_load.h"
#include "tests/bench/bench_util.h"
#include "tests/common/recorded_drive_layer.h"
#include "tests/common/replicated_drive_layer.h"

using namespace drivewatch;
using drivewatch::bench::CpuSeconds;
using drivewatch::bench::Flag;
using drivewatch::fleet::ReplicatedDriveLayer;

namespace {

long StatusKiB(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::atol(line.c_str() + field.size() + 1);
  }
  return -1;
}

std::string Shell(const std::string& command) {
  std::string out;
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  char buf[512];
  while (p && std::fgets(buf, sizeof buf, p)) out += buf;
  const int status = p ? ::pclose(p) : -1;
  if (status != 0) return "";
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// Gives drive i's namespaces the loop devices that stand in for their block
// devices, then passes discovery on to the read latency service.
class LoopNamespaces : public DriveListener {
 public:
  LoopNamespaces(DriveListener& next, std::vector<std::vector<std::string>> loops)
      : next_(next), loops_(std::move(loops)) {}
  void DrivesPresent(const std::vector<ControllerInfo>& drives) override {
    std::vector<ControllerInfo> out = drives;
    for (auto& c : out) {
      const std::size_t i = std::stoul(c.serial.substr(c.serial.rfind('-') + 1));
      c.namespaces.clear();
      for (std::size_t n = 0; n < loops_[i].size(); ++n) {
        NamespaceInfo ns;
        ns.nsid = static_cast<std::uint32_t>(n + 1);
        ns.block_device = loops_[i][n];
        ns.name = std::filesystem::path(ns.block_device).filename();
        c.namespaces.push_back(ns);
      }
    }
    next_.DrivesPresent(out);
  }

 private:
  DriveListener& next_;
  const std::vector<std::vector<std::string>> loops_;
};

}  // namespace

int main(int argc, char** argv) {
  const double seconds = Flag(argc, argv, "seconds", 20);
  const double speed = Flag(argc, argv, "speed", 6);
  const int drives = static_cast<int>(Flag(argc, argv, "drives", 8));
  const int namespaces = static_cast<int>(Flag(argc, argv, "namespaces", 1));
  if (::geteuid() != 0) {
    std::fprintf(stderr, "daemon_cost_bench: needs root (loop devices stand in for namespaces)\n");
    return 2;
  }

  testing::RecordedDriveLayer recorded({std::string(DW_FIXTURE_DIR) + "/qemu"});
  ReplicatedDriveLayer layer(recorded, drives);
  config::Config cfg = config::Defaults();
  cfg.state_directory = "/tmp/dw-bench-state-" + std::to_string(::getpid());
  const auto scale = [&](std::chrono::milliseconds d) {
    return std::chrono::milliseconds(static_cast<long>(d.count() / speed));
  };
  cfg.discovery_interval = scale(cfg.discovery_interval);
  cfg.drive_grace_period = scale(cfg.drive_grace_period);
  for (const char* name : {"health", "thermal", "power", "error_log", "persistent_event_log"}) {
    config::ProbeSettings& p = cfg.probe(name);
    p.interval = scale(p.interval);
  }
  config::ReadLatencySettings& rl = cfg.read_latency;
  for (auto& rate : rl.rates) rate = static_cast<std::uint32_t>(rate * speed);
  rl.rate_period = scale(rl.rate_period);
  rl.idle_period = scale(rl.idle_period);
  for (auto& w : rl.windows) w = scale(w);
  const auto scrape_every = std::chrono::milliseconds(static_cast<long>(15000 / speed));

  // The namespaces: loop devices over 64 MiB files, and their identities.
  char dir_name[] = "/var/tmp/dw-cost-bench.XXXXXX";
  const std::string dir = ::mkdtemp(dir_name);
  const std::string sysfs = dir + "/sys";
  const auto scan = layer.Scan();
  if (!scan || static_cast<int>(scan->size()) != drives) return 2;
  std::vector<std::vector<std::string>> loops(drives);
  std::vector<std::string> all_loops;
  for (int d = 0; d < drives; ++d) {
    for (int n = 0; n < namespaces; ++n) {
      auto file = PrepareTestFile(dir, "ns" + std::to_string(d) + "-" + std::to_string(n),
                                  64 << 20, 0.05);
      const std::string dev =
          file ? Shell("losetup --direct-io=on --show -f " + *file) : std::string();
      if (dev.empty()) {
        std::fprintf(stderr, "daemon_cost_bench: no loop device for drive %d\n", d);
        for (const auto& l : all_loops) Shell("losetup -d " + l);
        return 2;
      }
      loops[d].push_back(dev);
      all_loops.push_back(dev);
      struct stat st {};
      ::stat(dev.c_str(), &st);
      const std::filesystem::path node =
          std::filesystem::path(sysfs) / "dev/block" /
          (std::to_string(major(st.st_rdev)) + ":" + std::to_string(minor(st.st_rdev)));
      std::filesystem::create_directories(node / "device");
      std::ofstream(node / "device/serial") << (*scan)[d].serial << "\n";
      std::ofstream(node / "nsid") << n + 1 << "\n";
    }
  }

  SystemClock clock;
  StrandExecutor executor;
  Scheduler scheduler(clock, executor);
  MetricStore store;
  DriveLoadBoard load_board;
  DriveBusyBoard busy_board;
  const std::vector<ProbeRegistration> probes =
      MakeProbeRegistry(&load_board, &busy_board, /*durable_state=*/false);
  DriveMonitor monitor(layer, store, scheduler, clock, probes);
  auto read_latency = std::make_unique<ReadLatencyService>(store, scheduler, sysfs);
  read_latency->SetLoadBoard(&load_board);
  LoopNamespaces to_loops(*read_latency, loops);
  monitor.SetListener(&to_loops);
  HttpServer http(store, "");
  if (!http.Start("127.0.0.1:0")) return 1;
  const long rss_before = StatusKiB("VmRSS");
  const double cpu_before = CpuSeconds();
  read_latency->Start(cfg);
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
  read_latency->Stop();
  scheduler.Stop();
  loop.join();
  const double cpu = CpuSeconds() - cpu_before;
  const long rss = StatusKiB("VmRSS");
  const long hwm = StatusKiB("VmHWM");
  http.Stop();
  executor.Shutdown(std::chrono::seconds(5));
  std::error_code ignored;
  std::filesystem::remove_all(cfg.state_directory, ignored);
  read_latency.reset();
  for (const auto& l : all_loops) Shell("losetup -d " + l);
  std::filesystem::remove_all(dir, ignored);

  const double covered_minutes = seconds * speed / 60.0;
  std::printf("drives=%d namespaces/drive=%d covered=%.1f default minutes (run %.0f s at speed %.0fx), scrapes=%d\n",
              drives, namespaces, covered_minutes, seconds, speed, scrapes);
  std::printf("cpu: %.1f ms total, %.2f ms per default minute\n", cpu * 1e3,
              cpu * 1e3 / covered_minutes);
  std::printf("rss: %ld KiB before start, %ld KiB at end, %ld KiB peak\n",
              rss_before, rss, hwm);
  std::printf("exposition: %zu bytes\n", store.Render()->size());
  return 0;
}
