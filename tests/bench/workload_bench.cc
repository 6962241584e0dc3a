// SPDX-License-Identifier: Apache-2.0
// Runs one workload through the engine and prints what it did as JSON, for
// tests/bench/workload_vs_fio.sh to set beside fio's numbers.
//
//   workload_bench --path /dev/loop0 --rw write --access seq --bs 131072
//       --qd 32 --time 10 [--size BYTES] [--rate IOPS]
//
// CPU is this process's user and system time (getrusage RUSAGE_SELF) over
// the whole run, setup included, so it is never flattering.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stop_token>
#include <string>

#include "aging/workload.h"

namespace {

using drivewatch::aging::Access;
using drivewatch::aging::RunWorkload;
using drivewatch::aging::WorkloadSpec;
using drivewatch::aging::WorkloadTarget;

double Seconds(const timeval& tv) { return tv.tv_sec + tv.tv_usec / 1e6; }

int Usage(const char* why) {
  std::fprintf(stderr,
               "workload_bench: %s\nusage: workload_bench --path P "
               "[--rw write|read|trim] [--access seq|rand] [--bs N] [--qd N] "
               "[--time S] [--size BYTES] [--rate IOPS]\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string path, rw = "write", access = "seq";
  WorkloadSpec spec;
  double seconds = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) return Usage(("missing value for " + flag).c_str());
    const char* value = argv[++i];
    if (flag == "--path") path = value;
    else if (flag == "--rw") rw = value;
    else if (flag == "--access") access = value;
    else if (flag == "--bs") spec.block_size = std::strtoul(value, nullptr, 0);
    else if (flag == "--qd") spec.queue_depth = std::strtoul(value, nullptr, 0);
    else if (flag == "--time") seconds = std::strtod(value, nullptr);
    else if (flag == "--size") spec.length = std::strtoull(value, nullptr, 0);
    else if (flag == "--rate") spec.rate_iops = std::strtod(value, nullptr);
    else return Usage(("unknown flag " + flag).c_str());
  }
  if (path.empty()) return Usage("--path is required");
  spec.read_percent = rw == "read" ? 100 : 0;
  spec.write_percent = rw == "write" ? 100 : 0;
  spec.trim_percent = rw == "trim" ? 100 : 0;
  if (spec.read_percent + spec.write_percent + spec.trim_percent != 100) {
    return Usage(("--rw " + rw + ": expected write, read or trim").c_str());
  }
  if (access != "seq" && access != "rand") {
    return Usage(("--access " + access + ": expected seq or rand").c_str());
  }
  spec.access = access == "seq" ? Access::kSequential : Access::kRandom;
  // Like fio's time_based: sequential runs wrap to the region's start.
  spec.wrap = spec.access == Access::kSequential && seconds > 0;
  spec.max_time = std::chrono::nanoseconds(static_cast<long long>(seconds * 1e9));

  auto target = WorkloadTarget::Open(
      path, rw == "read" ? WorkloadTarget::kReadOnly : WorkloadTarget::kReadWrite);
  if (!target) {
    std::fprintf(stderr, "workload_bench: %s\n", target.error().message.c_str());
    return 1;
  }
  std::stop_source stop;
  auto result = RunWorkload(**target, spec, stop.get_token());
  if (!result) {
    std::fprintf(stderr, "workload_bench: %s\n", result.error().message.c_str());
    return 1;
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  const auto& r = *result;
  const auto& h = spec.read_percent ? r.read_latency
                  : spec.write_percent ? r.write_latency
                                       : r.trim_latency;
  std::printf(
      "{\"workload\": \"%s\", \"seconds\": %.6f, \"bytes\": %llu, \"ios\": %llu, "
      "\"mb_per_s\": %.3f, \"iops\": %.1f, \"cpu_user_s\": %.6f, "
      "\"cpu_sys_s\": %.6f, \"p50_us\": %.2f, \"p99_us\": %.2f, "
      "\"p999_us\": %.2f, \"errors\": %llu, \"first_error\": \"%s\"}\n",
      drivewatch::aging::Describe(spec).c_str(), r.total.seconds,
      static_cast<unsigned long long>(r.total.bytes()),
      static_cast<unsigned long long>(r.total.ios()),
      r.total.bytes_per_second() / 1e6, r.total.iops(), Seconds(ru.ru_utime),
      Seconds(ru.ru_stime), h.Quantile(0.5) * 1e6, h.Quantile(0.99) * 1e6,
      h.Quantile(0.999) * 1e6, static_cast<unsigned long long>(r.errors),
      r.first_error.c_str());
  return r.errors == 0 ? 0 : 1;
}
