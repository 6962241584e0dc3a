// SPDX-License-Identifier: Apache-2.0
// retention-verify: read a retention study's whole region back, verify
// every block, and compare the read-latency distribution with the
// baseline. Failures are classified (aging/retention/retention_study.h): unreadable
// (I/O error), wrong content (with the first differing byte), misplaced
// (a valid block of this study from another LBA) or stale (the right LBA
// from another study). The verify, with the drive's SMART deltas since
// the write and the study's ages (wall, powered on, powered off,
// Arrhenius-equivalent), is appended to the study; a verify that does not
// finish leaves the study as it was, and the next one starts over.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <memory>

#include "aging/phases/phase.h"
#include "aging/retention/retention_study.h"

namespace drivewatch::aging {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

namespace {

// The verifying pass: the region read in `io` blocks at `queue_depth`,
// every block checked by `verifier`. A read that fails is read again block
// by block, so that one bad LBA does not mark its whole 128 KiB
// neighbourhood unreadable. True when every block was checked.
Expected<bool> VerifyPass(PhaseContext& ctx, const RetentionPattern& pattern, std::uint64_t offset,
                          std::uint64_t length, std::uint32_t io, std::uint32_t queue_depth,
                          RetentionVerifier& verifier, double from, double to) {
  WorkloadSpec spec;
  spec.access = Access::kSequential;
  spec.read_percent = 100;
  spec.write_percent = 0;
  spec.block_size = io;
  spec.queue_depth = queue_depth;
  spec.offset = offset;
  spec.length = length;
  spec.max_errors = 0;  // an unreadable block is a result, not a reason to stop
  void* block = nullptr;
  if (posix_memalign(&block, 4096, pattern.block_size) != 0) {
    return Error{ENOMEM, -1, "verify: no memory for a block buffer"};
  }
  std::unique_ptr<void, decltype(&std::free)> block_owner(block, &std::free);
  spec.on_read = [&](std::uint64_t at, const void* data, std::uint32_t size, int result,
                     std::uint64_t latency_ns) {
    if (result == static_cast<int>(size) || size == pattern.block_size) {
      verifier.OnRead(at, data, size, result, latency_ns);
      return;
    }
    verifier.OnRead(at, data, 0, 0, latency_ns);  // timed as the failed read it was
    for (std::uint64_t o = at; o < at + size; o += pattern.block_size) {
      const ssize_t n = ::pread(ctx.fd(), block, pattern.block_size, static_cast<off_t>(o));
      verifier.OnRetry(o, block, pattern.block_size, n < 0 ? -errno : static_cast<int>(n));
    }
  };
  auto r = ctx.Run(spec, "verify", from, to);
  if (!r) return r.error();
  return r->end != WorkloadResult::End::kStopped &&
         verifier.blocks_checked() * pattern.block_size == length;
}

// The latency distribution, as the reference report takes it: one block
// at a time at QD1, at random over the region (`samples` of its blocks,
// each once). The pass has verified every block; these reads are timed
// only (one that fails is counted, not timed).
struct LatencySample {
  LatencyHistogram reads;
  std::uint64_t over_10ms = 0, over_100ms = 0, failed = 0;
};
// False when the phase was stopped in it.
Expected<bool> SampleLatency(PhaseContext& ctx, const RetentionPattern& pattern,
                             std::uint64_t offset, std::uint64_t length, std::uint64_t samples,
                             double from, double to, LatencySample& out) {
  WorkloadSpec timed;
  timed.access = Access::kRandom;
  timed.read_percent = 100;
  timed.write_percent = 0;
  timed.block_size = pattern.block_size;
  timed.queue_depth = 1;
  timed.offset = offset;
  timed.length = length;
  timed.max_bytes = samples * pattern.block_size;
  timed.max_errors = 0;
  timed.on_read = [&](std::uint64_t, const void*, std::uint32_t size, int result,
                      std::uint64_t latency_ns) {
    if (result != static_cast<int>(size)) {
      ++out.failed;
      return;
    }
    out.reads.Add(latency_ns);
    if (latency_ns > 10'000'000) ++out.over_10ms;
    if (latency_ns > 100'000'000) ++out.over_100ms;
  };
  auto t = ctx.Run(timed, "latency sample", from, to);
  if (!t) return t.error();
  return t->end != WorkloadResult::End::kStopped;
}

}  // namespace

Expected<Json> VerifyStudyRegion(PhaseContext& ctx, const std::string& name, std::uint32_t io,
                                 std::uint32_t queue_depth, const Json& study, double progress_from,
                                 double progress_to, bool* completed) {
  const RetentionPattern pattern = PatternOf(study);
  const std::uint64_t offset = AsUint(*Find(*Find(study, "region"), "offset"));
  const std::uint64_t length = AsUint(*Find(*Find(study, "region"), "length"));
  // LoadStudy checked the region's own numbers; only the open target can
  // say whether it fits. A region past the end is a damaged record, not a
  // verify that reads nothing and passes.
  if (const std::uint64_t capacity = ctx.capacity(); offset > capacity || length > capacity - offset) {
    return Error{EBADMSG, -1,
                 "retention study \"" + name +
                     "\": damaged retention study record: region [" + std::to_string(offset) +
                     ", +" + std::to_string(length) + ") ends past target " + ctx.target().name +
                     "'s " + std::to_string(capacity) + " bytes (expected a region inside the target)"};
  }
  if (io % pattern.block_size != 0 || length % io != 0) {
    return Error{EINVAL, -1,
                 "block_size " + std::to_string(io) + " must be a multiple of the study's " +
                     std::to_string(pattern.block_size) + "-byte block and divide its region (" +
                     std::to_string(length) + " bytes) (aging.phases.block_size)"};
  }
  RetentionVerifier verifier(pattern, length / pattern.block_size);
  const double start = Now();
  // Nine tenths of the progress for the pass, the rest for the sample.
  const double pass_to = progress_from + (progress_to - progress_from) * 0.9;
  auto passed = VerifyPass(ctx, pattern, offset, length, io, queue_depth, verifier, progress_from,
                           pass_to);
  if (!passed) return passed.error();
  *completed = *passed;

  const std::uint64_t region_blocks = length / pattern.block_size;
  const std::uint64_t samples = std::min(kLatencySampleReads, region_blocks);
  LatencySample sample;
  if (*completed && samples > 0) {
    auto sampled = SampleLatency(ctx, pattern, offset, length, samples, pass_to, progress_to, sample);
    if (!sampled) return sampled.error();
    if (!*sampled) *completed = false;
  }
  Json v = verifier.Finish(start, Now(), *completed);
  if (!*completed || samples == 0) return v;  // the pass's latencies, as it was
  // The pass's own latencies, said for what they are.
  Json pass = Json::object();
  pass["block_size"] = std::uint64_t{io};
  pass["queue_depth"] = std::uint64_t{queue_depth};
  for (const char* key : {"latency", "quantiles", "over_10ms_ratio", "over_100ms_ratio"}) {
    pass[key] = *Find(v, key);
  }
  v["pass_latency"] = std::move(pass);
  Json method = Json::object();
  method["block_size"] = std::uint64_t{pattern.block_size};
  method["queue_depth"] = std::uint64_t{1};
  method["access"] = "random";
  method["reads"] = sample.reads.count();
  method["failed_reads"] = sample.failed;
  method["region_blocks"] = region_blocks;
  v["latency_method"] = std::move(method);
  PutLatency(v, sample.reads, sample.over_10ms, sample.over_100ms);
  return v;
}

namespace {

// A study this drive can verify: active, and written on this drive (its
// serial in `facts`).
Status CheckVerifiable(const Json& study, const std::string& name, const Json& facts,
                       const std::string& target_name) {
  const std::string st = AsString(*Find(study, "state"));
  if (st != "active") {
    return Error{
        EINVAL, -1,
        "retention study \"" + name + "\" is " + st +
            (st == "failed" && Find(study, "reason") ? " (" + AsString(*Find(study, "reason")) + ")"
             : st == "ended"                         ? std::string(" (drivewatch retention end)")
                             : std::string(", not active: its write has not finished")) +
            "; nothing to verify"};
  }
  const std::string serial = Find(facts, "serial") ? AsString(*Find(facts, "serial")) : "";
  if (Find(study, "serial") && AsString(*Find(study, "serial")) != serial) {
    return Error{EPERM, -1,
                 "retention study \"" + name + "\" was written on serial \"" +
                     AsString(*Find(study, "serial")) + "\", but target " + target_name +
                     " is \"" + serial + "\" (aging.phases.target)"};
  }
  return Ok{};
}

}  // namespace

Status RunKind(const config::RetentionVerifyParams& phase, PhaseContext& ctx, PhaseReport& report) {
  const std::string& state = ctx.state_directory();
  auto lock = LockStudy(state, phase.study, std::chrono::seconds{30});
  if (!lock) return Error{EPERM, -1, lock.error().message};  // refused: busy
  auto loaded = LoadStudy(state, phase.study);
  if (!loaded) {
    if (loaded.error().errnum == ENOENT) {
      return Error{ENOENT, -1, loaded.error().message + "; run its retention-write phase first"};
    }
    return loaded.error();
  }
  Json study = *loaded;
  const Json facts = ctx.DriveFacts();
  if (Status fits = CheckVerifiable(study, phase.study, facts, ctx.target().name); !fits) {
    return fits.error();
  }
  // A firmware update is an event of the study: the drive's retention
  // behaviour may change with it.
  const std::string firmware = Find(facts, "firmware") ? AsString(*Find(facts, "firmware")) : "";
  const std::string recorded = Find(study, "firmware") ? AsString(*Find(study, "firmware")) : "";
  if (!firmware.empty() && !recorded.empty() && firmware != recorded) {
    Json e = Json::object();
    e["time"] = Now();
    e["kind"] = "firmware_change";
    e["detail"] = recorded + " -> " + firmware;
    study["events"].push_back(e);
    study["firmware"] = firmware;
  }

  Json smart_now;
  if (ctx.nvme()) {
    if (auto s = ReadSmartSnapshot(ctx.fd())) {
      smart_now = *s;
      if (const Json* t = Find(smart_now, "composite_temperature_k"); t && AsDouble(*t) > 0) {
        AddTemperatureSample(study, Now(), AsDouble(*t), 600);
      }
    }
  }
  bool completed = false;
  auto verify = VerifyStudyRegion(ctx, phase.study, phase.block_size, phase.queue_depth, study, 0, 1, &completed);
  if (!verify) return verify.error();
  Json v = *verify;
  const std::uint64_t bad = AsUint(v["bad"]["unreadable"]) + AsUint(v["bad"]["wrong_content"]) +
                            AsUint(v["bad"]["misplaced"]) + AsUint(v["bad"]["stale"]);
  report.results["verified_bytes"] = AsUint(v["checked"]) * std::uint64_t{kRetentionBlockSize};
  report.results["bad_bytes"] = bad * std::uint64_t{kRetentionBlockSize};
  report.results["p99_9_seconds"] = AsDouble(v["quantiles"]["p99_9"]);
  report.results["max_seconds"] = AsDouble(v["quantiles"]["max"]);
  report.results["over_100ms_ratio"] = AsDouble(v["over_100ms_ratio"]);
  if (!completed) return Ok{};  // the study keeps no partial verify

  if (!smart_now.is_null()) {
    v["smart"] = smart_now;
    if (const Json* before = Find(study, "smart_at_write"))
      v["smart_delta"] = SmartDelta(*before, smart_now);
  }
  // NaN when unset, as ComputeAges takes it: the powered-off part of the age unknown.
  const double storage_k = phase.storage_temperature.value_or(std::numeric_limits<double>::quiet_NaN()) + 273.15;
  const RetentionAges ages = ComputeAges(study, Now(), smart_now.is_null() ? nullptr : &smart_now, storage_k);
  v["age_seconds"] = ages.wall_seconds;
  v["powered_on_seconds"] = ages.powered_on_seconds;
  v["powered_off_seconds"] = ages.powered_off_seconds ? Json(*ages.powered_off_seconds) : Json();
  v["powered_on_equivalent_seconds"] = ages.powered_on_equivalent_seconds;
  v["equivalent_age_seconds"] = ages.equivalent_age_seconds ? Json(*ages.equivalent_age_seconds) : Json();
  if (phase.storage_temperature) {
    v["storage_temperature_k"] = storage_k;
    study["accounting"]["storage_temperature_k"] = storage_k;
  }
  if (const Json* b = Find(study, "baseline")) {
    v["delta_vs_baseline"] = CompareWithBaseline(*b, v);
    report.results["p99_9_delta_seconds"] = AsDouble(v["delta_vs_baseline"]["p99_9"]);
  }
  report.results["age_seconds"] = ages.wall_seconds;
  study["verifies"].push_back(v);
  return SaveStudy(state, study);
}

// A verify needs its study before it needs a device.
Status KindPreflight(const config::RetentionVerifyParams& phase,
                     const std::string& state_directory) {
  auto study = LoadStudy(state_directory, phase.study);
  if (study) return Ok{};
  Error e = study.error();
  if (e.errnum == ENOENT) e.message += "; run its retention-write phase first";
  return e;
}

}  // namespace drivewatch::aging
