// SPDX-License-Identifier: Apache-2.0
// Runs one workload through the engine and prints what it did as JSON, for
// tests/bench/workload_vs_fio.sh to set beside fio's numbers.
//
//   workload_bench --path /dev/loop0 --rw write --access seq --bs 131072
//       --qd 32 --time 10 [--size BYTES] [--rate IOPS]
//   workload_bench --path F --rw read --bs 131072 --qd 32 --size BYTES
//       --verify 4096 [--verify-step both|write|read]
//
// --verify BLOCK is retention-verify's read: the region is first written
// (untimed, by the engine as retention-write does) with retention blocks
// of BLOCK bytes, then read once sequentially with every read checked by
// the RetentionVerifier, as the retention-verify phase does. "bad_blocks"
// counts what failed. --verify-step write only lays the region down and
// prints nothing; read only verifies a region laid down before. A bench
// that compares reads lays its file down once, as fio's verify_only runs
// do: a read right after writing the same 2 GiB competes with the host
// still flushing that write.
//
// CPU is this process's user and system time (getrusage RUSAGE_SELF) over
// the whole run, setup included, so it is never flattering.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stop_token>
#include <string>

#include "aging/engine/workload.h"
#include "aging/retention/retention_block.h"
#include "aging/retention/retention_study.h"

namespace {

using drivewatch::aging::Access;
using drivewatch::aging::EncodeRetentionBlocks;
using drivewatch::aging::RetentionPattern;
using drivewatch::aging::RetentionVerifier;
using drivewatch::aging::RunWorkload;
using drivewatch::aging::WorkloadSpec;
using drivewatch::aging::WorkloadTarget;

double Seconds(const timeval& tv) { return tv.tv_sec + tv.tv_usec / 1e6; }

// Lays [0, length) of `path` down with retention blocks as retention-write
// does: the engine writing, its fill hook encoding each buffer. Untimed
// setup for --verify; done before the reading target is opened (a block
// device is opened exclusively).
bool WriteRetentionRegion(const std::string& path, const RetentionPattern& pattern,
                          const WorkloadSpec& read) {
  auto target = WorkloadTarget::Open(path, WorkloadTarget::kReadWrite);
  if (!target) {
    std::fprintf(stderr, "workload_bench: %s\n", target.error().message.c_str());
    return false;
  }
  WorkloadSpec write;
  write.access = Access::kSequential;
  write.block_size = read.block_size;
  write.queue_depth = read.queue_depth;
  write.length = read.length;
  write.max_errors = 1;
  write.fill = [&](std::uint64_t at, void* buffer, std::uint32_t size) {
    EncodeRetentionBlocks(pattern, at / pattern.block_size, size / pattern.block_size, 1, buffer);
  };
  auto r = RunWorkload(**target, write, std::stop_token{});
  if (!r || r->errors > 0) {
    std::fprintf(stderr, "workload_bench: writing retention blocks to %s: %s\n", path.c_str(),
                 r ? r->first_error.c_str() : r.error().message.c_str());
    return false;
  }
  return true;
}

int Usage(const char* why) {
  std::fprintf(stderr,
               "workload_bench: %s\nusage: workload_bench --path P "
               "[--rw write|read|trim] [--access seq|rand] [--bs N] [--qd N] "
               "[--time S] [--size BYTES] [--rate IOPS] [--verify BLOCK "
               "[--verify-step both|write|read]]\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string path, rw = "write", access = "seq";
  WorkloadSpec spec;
  double seconds = 0;
  std::uint32_t verify_block = 0;
  std::string verify_step = "both";
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
    else if (flag == "--verify") verify_block = std::strtoul(value, nullptr, 0);
    else if (flag == "--verify-step") verify_step = value;
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

  std::optional<RetentionVerifier> verifier;
  const RetentionPattern pattern{0x5eed, 42, verify_block};
  if (verify_block != 0) {
    if (rw != "read" || access != "seq" || seconds > 0 || spec.length == 0 ||
        !drivewatch::aging::IsValidRetentionPattern(pattern) ||
        spec.block_size % verify_block != 0 || spec.length % spec.block_size != 0) {
      return Usage("--verify BLOCK wants --rw read --access seq --size BYTES, no --time, "
                   "a valid retention block (512..65536, multiple of 512) dividing --bs, "
                   "and --bs dividing --size");
    }
    if (verify_step != "both" && verify_step != "write" && verify_step != "read") {
      return Usage(("--verify-step " + verify_step + ": expected both, write or read").c_str());
    }
    if (verify_step != "read" && !WriteRetentionRegion(path, pattern, spec)) return 1;
    if (verify_step == "write") return 0;
    verifier.emplace(pattern, spec.length / verify_block);
    spec.max_errors = 0;
    spec.on_read = [&](std::uint64_t at, const void* data, std::uint32_t size, int result,
                       std::uint64_t latency_ns) { verifier->OnRead(at, data, size, result, latency_ns); };
  }
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
      "\"p999_us\": %.2f, \"errors\": %llu, \"first_error\": \"%s\", "
      "\"verified_blocks\": %llu, \"bad_blocks\": %llu}\n",
      drivewatch::aging::Describe(spec).c_str(), r.total.seconds,
      static_cast<unsigned long long>(r.total.bytes()),
      static_cast<unsigned long long>(r.total.ios()),
      r.total.bytes_per_second() / 1e6, r.total.iops(), Seconds(ru.ru_utime),
      Seconds(ru.ru_stime), h.Quantile(0.5) * 1e6, h.Quantile(0.99) * 1e6,
      h.Quantile(0.999) * 1e6, static_cast<unsigned long long>(r.errors),
      r.first_error.c_str(),
      static_cast<unsigned long long>(verifier ? verifier->blocks_checked() : 0),
      static_cast<unsigned long long>(verifier ? verifier->bad_blocks() : 0));
  return r.errors == 0 && (!verifier || verifier->bad_blocks() == 0) ? 0 : 1;
}
