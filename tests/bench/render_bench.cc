// SPDX-License-Identifier: Apache-2.0
// Scrape-render time: MetricStore::Render() of N drives' worth of series
// (tests/load/fleet_store.h: the recorded controllers through every real
// probe, plus a read-latency histogram and window gauges per namespace).
// Target: under 2 ms for 64 drives, uncached (after any probe published).
//
//   build/tests/render_bench --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true   (one command line)
//
// BM_Render republishes one tiny scope before each timed Render(), as a
// probe run does, so the whole exposition is rendered every time.
// BM_RenderCached is the path of a scrape with nothing published since the
// last one. BM_PublishLatency is the publish side. Counters: series (lines of samples) and bytes of text.
//
//   build/tests/render_bench --render_dump=64 > metrics.txt
// writes the rendered text of 64 drives and exits (for promtool, or to diff
// the exposition before and after a change to the store).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <string>

#include "tests/load/fleet_store.h"

namespace {

using drivewatch::load::FleetStore;

FleetStore& Fleet(int drives) {
  static std::map<int, std::unique_ptr<FleetStore>> fleets;
  auto& f = fleets[drives];
  if (!f) f = std::make_unique<FleetStore>(drives);
  return *f;
}

void Count(benchmark::State& state, const std::string& text) {
  state.counters["bytes"] = static_cast<double>(text.size());
  double series = 0;
  for (std::size_t at = 0; at < text.size();) {
    if (text[at] != '#') ++series;
    const std::size_t nl = text.find('\n', at);
    if (nl == std::string::npos) break;
    at = nl + 1;
  }
  state.counters["series"] = series;
}

void BM_Render(benchmark::State& state) {
  FleetStore& fleet = Fleet(static_cast<int>(state.range(0)));
  std::shared_ptr<const std::string> text;
  for (auto _ : state) {
    state.PauseTiming();
    fleet.Touch();
    state.ResumeTiming();
    text = fleet.store().Render();
    benchmark::DoNotOptimize(text);
  }
  Count(state, *text);
}
BENCHMARK(BM_Render)->Arg(16)->Arg(64)->Unit(benchmark::kMicrosecond);

void BM_RenderCached(benchmark::State& state) {
  FleetStore& fleet = Fleet(static_cast<int>(state.range(0)));
  fleet.Touch();
  std::shared_ptr<const std::string> text;
  for (auto _ : state) {
    text = fleet.store().Render();
    benchmark::DoNotOptimize(text);
  }
  Count(state, *text);
}
BENCHMARK(BM_RenderCached)->Arg(64)->Unit(benchmark::kMicrosecond);

// Publish work of the most frequent publisher: one namespace's read latency
// scope (a 19-bucket histogram and five gauges), republished every second.
void BM_PublishLatency(benchmark::State& state) {
  FleetStore& fleet = Fleet(static_cast<int>(state.range(0)));
  std::size_t i = 0;
  for (auto _ : state) fleet.RepublishLatency(i++);
}
BENCHMARK(BM_PublishLatency)->Arg(64)->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  constexpr const char kDump[] = "--render_dump=";
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], kDump, sizeof kDump - 1) == 0) {
      FleetStore& fleet = Fleet(std::atoi(argv[i] + sizeof kDump - 1));
      fleet.Touch();
      std::cout << *fleet.store().Render();
      return std::cout ? 0 : 1;
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
