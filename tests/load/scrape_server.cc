// SPDX-License-Identifier: Apache-2.0
// The scrape target of the load test (tests/load/scrape_load.sh): the real
// MetricStore holding N drives' worth of series (fleet_store.h) served by the
// real HttpServer on 127.0.0.1. Like the daemon, it republishes a scope every
// second (a probe run), so scrapes keep rendering fresh text rather than
// only the cached one.
//
//   build/tests/scrape_server [--drives=16] [--port=0]
// Prints "listening PORT" on stdout once it serves; stops on SIGTERM/SIGINT.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "exporter/http/http_server.h"
#include "tests/load/fleet_store.h"

namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

int Flag(int argc, char** argv, const std::string& name, int def) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--" + name + "=", 0) == 0) return std::atoi(a.c_str() + name.size() + 3);
  }
  return def;
}

}  // namespace

int main(int argc, char** argv) {
  const int drives = Flag(argc, argv, "drives", 16);
  const int port = Flag(argc, argv, "port", 0);
  signal(SIGTERM, OnSignal);
  signal(SIGINT, OnSignal);
  drivewatch::load::FleetStore fleet(drives);
  fleet.Touch();
  drivewatch::HttpServer http(fleet.store(), "<html></html>");
  auto started = http.Start("127.0.0.1:" + std::to_string(port));
  if (!started) {
    std::fprintf(stderr, "scrape_server: %s\n", started.error().message.c_str());
    return 1;
  }
  const auto text = fleet.store().Render();
  std::printf("listening %d drives=%d bytes=%zu\n", http.port(), drives, text->size());
  std::fflush(stdout);
  while (!g_stop) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    fleet.Touch();
  }
  http.Stop();
  return 0;
}
