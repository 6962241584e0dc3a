// SPDX-License-Identifier: Apache-2.0
// The floor program of tests/bench/paced_probe_vs_fio.sh: what waking on
// the read latency probe's default schedule costs with no I/O and none of
// drivewatch's code. `--targets` threads, each sleeping with clock_nanosleep
// (absolute CLOCK_MONOTONIC deadlines) to every arrival of the defaults'
// turns: `--rates` IOPS in turn for `--rate-period` seconds each, then
// `--idle` seconds without a wake-up, for `--seconds` in all. Prints one
// line: "cpu_seconds wakeups max_rss_kib".
//
//   build/tests/paced_floor_bench [--targets=8] [--seconds=180]
//                                 [--rate-period=60] [--idle=30]
//                                 (rates: 10 then 100 IOPS, the defaults)
#include <sys/resource.h>
#include <time.h>

#include <atomic>
#include <cstdio>
#include <thread>
#include <vector>

#include "tests/bench/bench_util.h"

namespace {

using drivewatch::bench::CpuSeconds;
using drivewatch::bench::Flag;
using drivewatch::bench::NowNs;
using drivewatch::bench::SleepUntilNs;

}  // namespace

int main(int argc, char** argv) {
  const int targets = static_cast<int>(Flag(argc, argv, "targets", 8));
  const double seconds = Flag(argc, argv, "seconds", 180);
  const double period = Flag(argc, argv, "rate-period", 60);
  const double idle = Flag(argc, argv, "idle", 30);
  const double rates[] = {10, 100};
  const long long start = NowNs();
  const long long end = start + static_cast<long long>(seconds * 1e9);
  const long long cycle = static_cast<long long>((2 * period + idle) * 1e9);
  std::atomic<long long> wakeups{0};
  const double cpu0 = CpuSeconds();
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < targets; ++t) {
      threads.emplace_back([&] {
        long long woken = 0;
        for (long long c = start; c < end; c += cycle) {
          for (int r = 0; r < 2; ++r) {
            const long long turn = c + static_cast<long long>(r * period * 1e9);
            const long long turn_end = std::min(end, turn + static_cast<long long>(period * 1e9));
            const double gap = 1e9 / rates[r];
            for (long long k = 0;; ++k) {
              const long long at = turn + static_cast<long long>(k * gap);
              if (at >= turn_end) break;
              SleepUntilNs(at);
              NowNs();  // the read's timestamp, as a probe takes it
              ++woken;
            }
          }
          // The idle turn: no wake-up until the next cycle.
        }
        wakeups += woken;
      });
    }
  }
  const double cpu = CpuSeconds() - cpu0;
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  std::printf("%.6f %lld %ld\n", cpu, wakeups.load(), ru.ru_maxrss);
  return 0;
}
