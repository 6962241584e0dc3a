// SPDX-License-Identifier: Apache-2.0
// N drives' worth of series in a real MetricStore, for the scrape load test
// (tests/load/) and the render benchmark (tests/bench/render_bench.cc).
//
// The recorded controllers (tests/fixtures/qemu and handmade, as in the
// golden test) are replicated under N serials and run once through the real
// DriveMonitor with every registered probe (health, thermal, power, ...).
// Read latency needs real I/O, so each namespace also gets what the read
// latency probe publishes at one rate and one window: its histogram (1-2-5
// buckets from 10 µs to 10 s) and p50/p99/p99.9/max/sample gauges, under the
// probe's own metric descriptors.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "exporter/drive_monitor.h"
#include "exporter/metric_store.h"
#include "exporter/probe_registry.h"
#include "exporter/scheduler.h"
#include "probes/drive/identify.h"
#include "probes/latency/read_latency_probe.h"
#include "tests/common/fake_clock.h"
#include "tests/common/recorded_drive_layer.h"
#include "tests/common/replicated_drive_layer.h"

namespace drivewatch::load {

using fleet::ReplicatedDriveLayer;

class FleetStore {
 public:
  explicit FleetStore(int drives)
      : state_dir_("/tmp/dw-fleet-" + std::to_string(::getpid())),
        recorded_(std::vector<std::filesystem::path>{
            std::string(DW_FIXTURE_DIR) + "/qemu",
            std::string(DW_FIXTURE_DIR) + "/handmade"}),
        layer_(recorded_, drives) {
    config_ = config::Defaults();
    config_.state_directory = state_dir_;
    scheduler_ = std::make_unique<Scheduler>(clock_, executor_);
    monitor_ = std::make_unique<DriveMonitor>(layer_, store_, *scheduler_,
                                              clock_, RegisteredProbes());
    monitor_->Start(config_);
    scheduler_->Tick();  // discovery
    scheduler_->Tick();  // every probe it scheduled, once
    auto scan = layer_.Scan();
    if (scan) {
      for (const ControllerInfo& c : *scan) {
        for (const NamespaceInfo& ns : c.namespaces) AddLatency(c.serial, ns.nsid);
      }
    }
  }
  ~FleetStore() { std::filesystem::remove_all(state_dir_); }

  MetricStore& store() { return store_; }

  // Republishes one small scope, so that the next Render() renders rather
  // than returning the cached text (as after any probe run).
  void Touch() {
    ++touches_;
    std::vector<Sample> s;
    s.push_back(Sample{&kTouch, {}, static_cast<double>(touches_), nullptr});
    store_.Publish("load/touch", std::move(s));
  }

  // Publishes again what one namespace's read latency probe published (its
  // histogram and window gauges), as the probe does every second.
  void RepublishLatency(std::size_t i) {
    const auto& [scope, samples] = latency_.at(i % latency_.size());
    store_.Publish(scope, samples);
  }

 private:
  static inline const MetricDesc kTouch{
      "drivewatch_load_test_generation",
      "Load test only: bumped to invalidate the render cache.",
      MetricType::kGauge};

  const MetricDesc* Find(const char* name) {
    for (const MetricDesc* d : ReadLatencyProbe::Metrics()) {
      if (std::string(d->name) == name) return d;
    }
    return nullptr;
  }

  void AddLatency(const std::string& serial, std::uint32_t nsid) {
    const Labels identity = {{"serial", serial},
                             {"nsid", std::to_string(nsid)},
                             {"rate", "10"}};
    std::vector<Sample> out;
    if (const MetricDesc* h = Find("drivewatch_read_latency_seconds")) {
      auto v = std::make_shared<HistogramValue>();
      std::uint64_t cum = 0;
      for (double decade = 1e-5; decade < 20; decade *= 10) {
        for (double step : {1.0, 2.0, 5.0}) {
          const double bound = decade * step;
          if (bound > 10.0 + 1e-9) break;
          cum += 1000 / (1 + v->upper_bounds.size());
          v->upper_bounds.push_back(bound);
          v->cumulative_counts.push_back(cum);
        }
      }
      v->count = cum;
      v->sum = cum * 1e-4;
      out.push_back(Sample{h, identity, 0, v});
    }
    Labels window = identity;
    window.emplace_back("window", "1m");
    if (const MetricDesc* g = Find("drivewatch_read_latency_window_seconds")) {
      for (const char* p : {"0.5", "0.99", "0.999"}) {
        Labels l = window;
        l.emplace_back("percentile", p);
        out.push_back(Sample{g, l, 1e-4, nullptr});
      }
    }
    for (const char* name : {"drivewatch_read_latency_window_samples",
                             "drivewatch_read_latency_window_max_seconds"}) {
      if (const MetricDesc* g = Find(name)) {
        out.push_back(Sample{g, window, 600, nullptr});
      }
    }
    latency_.emplace_back(serial + "/probe/read_latency/" + std::to_string(nsid), out);
    store_.Publish(latency_.back().first, std::move(out));
  }

  std::string state_dir_;
  config::Config config_;
  testing::FakeClock clock_;
  InlineExecutor executor_;
  MetricStore store_;
  testing::RecordedDriveLayer recorded_;
  ReplicatedDriveLayer layer_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<DriveMonitor> monitor_;
  int touches_ = 0;
  std::vector<std::pair<std::string, std::vector<Sample>>> latency_;
};

}  // namespace drivewatch::load
