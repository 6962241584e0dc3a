// SPDX-License-Identifier: Apache-2.0
// The read latency probe alone, for tests/bench/read_latency_vs_fio.sh:
//   read_latency_bench file|block PATH RATE READS [FILE_MIB]
// reads PATH at RATE IOPS (fixed arrivals, QD1, 4 KiB) READS times and
// prints "p50 p99 p99.9 cpu_us_per_read reads" (seconds, then µs). CPU is
// the process's user+system time (getrusage) over the reads only. A file
// target is drivewatch's own test file: absent, it is laid out FILE_MIB
// long first (the probe refuses to read, or replace, a file it did not
// write).

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "probes/latency/read_latency_probe.h"
#include "tests/bench/bench_util.h"

using namespace drivewatch;
using drivewatch::bench::CpuSeconds;

int main(int argc, char** argv) {
  if (argc != 5 && argc != 6) {
    std::fprintf(stderr, "usage: %s file|block PATH RATE READS [FILE_MIB]\n", argv[0]);
    return 2;
  }
  const std::string kind = argv[1];
  const std::filesystem::path path = argv[2];
  const auto rate = static_cast<std::uint32_t>(std::atoi(argv[3]));
  const auto reads = static_cast<std::size_t>(std::atol(argv[4]));
  ReadTarget target;
  target.labels = {{"target", "bench"}};
  if (kind == "file") {
    target.kind = ReadTarget::Kind::kFile;
    target.path = path.parent_path();
    target.file_name = path.filename();
    target.file_size = std::filesystem::exists(path)
                           ? std::filesystem::file_size(path)
                           : (argc == 6 ? std::strtoull(argv[5], nullptr, 10) : 64) << 20;
  } else {
    target.kind = ReadTarget::Kind::kBlockDevice;
    target.path = path;
  }
  ReadLatencySettings settings;
  settings.rates = {rate};
  settings.windows = {std::chrono::hours(1)};
  settings.window_names = {"1h"};
  ReadLatencyProbe probe(target, settings);
  std::stop_source stop;
  const double cpu0 = CpuSeconds();
  if (!probe.RunBurst(reads, stop.get_token())) return 1;
  const double cpu = CpuSeconds() - cpu0;
  const LatencyHistogram h = probe.Lifetime(rate);
  std::printf("%.9f %.9f %.9f %.3f %llu\n", h.Quantile(0.5), h.Quantile(0.99),
              h.Quantile(0.999), cpu * 1e6 / static_cast<double>(h.count()),
              static_cast<unsigned long long>(h.count()));
  return 0;
}
