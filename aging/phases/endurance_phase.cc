// SPDX-License-Identifier: Apache-2.0
// endurance: write the target over and over, pass after pass (one pass is
// one drive write), sequentially or with JESD219's enterprise mix, until
// drive_writes passes, SMART Percentage Used at percentage_used, or
// bytes_written; the runner's abort conditions stop it on a new critical
// warning, and so does the phase itself once available spare is at or
// below its threshold. A pass runs in chunks of at most kChunkTime, each
// one workload through ctx.Run (so the write gate is passed again) and
// followed by a checkpoint and the progress file (aging/phases/endurance.h): a run
// killed mid-pass is recorded "interrupted" by the runner, and the next run
// of the phase resumes from the last chunk's end. docs/aging.md tells it.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "aging/engine/data_pattern.h"
#include "aging/phases/endurance.h"
#include "aging/phases/phase.h"
#include "config/util/durable_file.h"
#include "config/util/log.h"
#include "probes/drive/identify.h"
#include "probes/drive/nvme_drive_layer.h"
#include "probes/drive/smart_log.h"

namespace drivewatch::aging {
namespace {

// The longest chunk of writes between two checkpoints: 30 s, and at most a
// 16th of a pass (so a small or paced target still checkpoints mid-pass).
constexpr std::chrono::seconds kChunkTime{30};
constexpr std::uint64_t kChunksPerPass = 16;

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The drive's wear, from SMART / Health (02h) on the phase's descriptor;
// nullopt on a target that is not an NVMe namespace, or when the read fails
// (logged: the drive may be busy, and the abort conditions count failures).
std::optional<SmartLog> ReadWear(PhaseContext& ctx) {
  Controller* ctrl = ctx.controller();
  if (ctrl == nullptr) return std::nullopt;  // not an NVMe namespace
  auto smart = ReadSmartLog(*ctrl);
  if (!smart) {
    log::Warn("phase " + ctx.phase().name + ": cannot read SMART / Health: " +
              smart.error().message);
    return std::nullopt;
  }
  return *smart;
}

// An endurance test spans runs (and months): where it stands comes from its
// progress file (aging/phases/endurance.h), so it is there between runs and after
// a restart, and moves with every checkpoint of a run.
constexpr MetricDesc kEnduranceHostWritten{
    "drivewatch_endurance_host_written_bytes",
    "Bytes the endurance test has written to its target so far, all its "
    "runs (its progress file, saved at every checkpoint).",
    MetricType::kGauge};
constexpr MetricDesc kEnduranceDriveWrites{
    "drivewatch_endurance_drive_writes",
    "Full passes over the target the endurance test has done, with the "
    "fraction of the current one.",
    MetricType::kGauge};
constexpr MetricDesc kEndurancePassPercentageUsed{
    "drivewatch_endurance_last_pass_percentage_used_ratio",
    "SMART Percentage Used at the end of the endurance test's last "
    "completed pass, as a ratio (1 = the rated endurance).",
    MetricType::kGauge};
constexpr MetricDesc kEndurancePassWaf{
    "drivewatch_endurance_last_pass_write_amplification_ratio",
    "Physical media bytes written over host bytes written during the "
    "endurance test's last completed pass (OCP C0h drives only).",
    MetricType::kGauge};
constexpr MetricDesc kEnduranceEnded{
    "drivewatch_endurance_ended",
    "1 once the endurance test reached an end (drive_writes, "
    "percentage_used, bytes_written, spare or a critical warning): no run "
    "writes again until its progress file is removed.",
    MetricType::kGauge};

// The record of one pass, for the history.
Json PassRecord(const EnduranceProgress& p, const std::optional<SmartLog>& wear,
                std::optional<double> physical) {
  Json r = Json::object();
  r["pass"] = p.pass;
  r["end"] = UnixNow();
  r["host_bytes"] = p.host_bytes - p.pass_start_host_bytes;
  if (wear) {
    r["percentage_used"] = std::uint64_t{wear->percentage_used};
    r["media_errors"] = static_cast<double>(wear->media_errors);
    r["available_spare_percent"] = std::uint64_t{wear->available_spare_percent};
    r["temperature_celsius"] = static_cast<double>(wear->composite_temperature_k) - 273.15;
  }
  if (physical && p.pass_start_physical_bytes) {
    if (auto waf = WriteAmplification(*physical - *p.pass_start_physical_bytes,
                                      static_cast<double>(p.host_bytes - p.pass_start_host_bytes))) {
      r["waf_ratio"] = *waf;
    }
  }
  return r;
}

// The history record of the test's last pass (a step record, once: see
// PhaseContext::RecordStep), the test named by its seed.
Status RecordLastPass(PhaseContext& ctx, const EnduranceProgress& p) {
  if (Items(p.passes).empty()) return Ok{};
  Status s = ctx.RecordStep(std::to_string(p.seed), p.pass, Items(p.passes).back());
  if (!s) {
    return Error{s.error().errnum, -1,
                 "endurance " + ctx.phase().name + ": pass " + std::to_string(p.pass) +
                     " could not be put on the history: " + s.error().message};
  }
  return Ok{};
}

// Why the test is over, or "" while it goes on.
std::string EndReached(const config::EnduranceParams& phase, const EnduranceProgress& p,
                       const std::optional<SmartLog>& wear) {
  if (phase.drive_writes > 0 && p.pass >= phase.drive_writes) {
    return "drive_writes: " + std::to_string(p.pass) + " full passes done";
  }
  if (phase.bytes_written > 0 && p.host_bytes >= phase.bytes_written) {
    return "bytes_written: " + std::to_string(p.host_bytes) + " bytes written";
  }
  if (wear && phase.percentage_used && wear->percentage_used >= *phase.percentage_used) {
    return "percentage_used: SMART Percentage Used is " + std::to_string(wear->percentage_used);
  }
  return "";
}

// Why the test must abort, or "": the drive's spare has run down to its
// threshold (new critical warnings abort every phase, aging/runner/abort_conditions.h).
std::string SpareExhausted(const std::optional<SmartLog>& wear) {
  if (wear && wear->available_spare_percent <= wear->available_spare_threshold_percent) {
    return "available spare " + std::to_string(wear->available_spare_percent) +
           "% is at or below its threshold " +
           std::to_string(wear->available_spare_threshold_percent) + "%";
  }
  return "";
}

// How far the test is toward its nearest end, 0..1.
double Fraction(const config::EnduranceParams& phase, const EnduranceProgress& p,
                std::uint64_t extra_bytes) {
  const double written = static_cast<double>(p.host_bytes + extra_bytes);
  double f = 0;
  if (phase.drive_writes > 0) {
    f = std::max(f, written / (static_cast<double>(p.capacity) * phase.drive_writes));
  }
  if (phase.bytes_written > 0) f = std::max(f, written / static_cast<double>(phase.bytes_written));
  return std::min(f, 1.0);
}

void Report(const EnduranceProgress& p, const std::optional<SmartLog>& wear,
            double fraction, std::uint64_t run_bytes, double run_seconds, PhaseReport& report) {
  report.results["host_written_bytes"] = p.host_bytes;
  report.results["run_written_bytes"] = run_bytes;
  report.results["drive_writes_ratio"] =
      static_cast<double>(p.host_bytes) / static_cast<double>(p.capacity);
  report.results["target_progress_ratio"] = fraction;
  report.results["write_mean_bytes_per_second"] =
      run_seconds > 0 ? static_cast<double>(run_bytes) / run_seconds : 0.0;
  if (wear) report.results["percentage_used_ratio"] = wear->percentage_used / 100.0;
  if (!Items(p.passes).empty()) {
    if (const Json* waf = Find(Items(p.passes).back(), "waf_ratio")) {
      report.results["waf_ratio"] = AsDouble(*waf);
    }
  }
  report.series["passes"] = p.passes;
}

// Saves the progress: first in the checkpoint, with `report` (which must
// already hold it), then in the progress file. A crash between the two
// leaves the file behind the checkpoint, and recovery writes it back from
// there (PhaseReport::resume), so the killed run's record and the file
// always agree.
Status Save(const EnduranceProgress& p, PhaseContext& ctx, PhaseReport& report) {
  const std::string path = EnduranceProgressPath(ctx.state_directory(), ctx.phase().name);
  const Json content = ToJson(p);
  report.resume = Json::object();
  report.resume["file"] = path.substr(ctx.state_directory().size() + 1);
  report.resume["content"] = content;
  ctx.Checkpoint(report);
  if (Status s = WriteFileAtomically(path, DumpJson(content) + "\n"); !s) {
    return Error{s.error().errnum, -1, "cannot save the progress file: " + s.error().message};
  }
  return Ok{};
}

Error Refuse(const PhaseContext& ctx, const std::string& why) {
  return Error{EPERM, -1, "endurance " + ctx.phase().name + ": " + why};
}

// The workload of every chunk, over the target's whole blocks (its length):
// sequential at block_size, or JESD219's enterprise mix; paced to
// max_drive_writes_per_day when set.
WorkloadSpec EnduranceSpec(const config::EnduranceParams& phase, const PhaseContext& ctx) {
  const bool jesd = phase.workload == "jesd219";
  WorkloadSpec spec;
  spec.queue_depth = phase.queue_depth;
  if (jesd) {
    spec.access = Access::kRandom;
    spec.size_mix = Jesd219Sizes(ctx.logical_block_size());
    spec.lba_zones = Jesd219Zones();
    spec.block_size = spec.size_mix.back().size;  // the largest: they are sorted
  } else {
    spec.access = Access::kSequential;
    spec.block_size = phase.block_size;
  }
  const std::uint64_t capacity = ctx.capacity() / spec.block_size * spec.block_size;
  spec.length = capacity;
  if (phase.max_drive_writes_per_day) {
    double mean = spec.block_size;
    if (jesd) {
      mean = 0;
      for (const SizeShare& s : spec.size_mix) mean += s.size * (s.percent / 100.0);
    }
    spec.rate_iops = *phase.max_drive_writes_per_day * static_cast<double>(capacity) / 86400.0 / mean;
  }
  return spec;
}

// The test so far, if one was begun and not ended (`resumed`), on this
// storage, with this workload over `capacity`; else a new one.
Expected<EnduranceProgress> LoadOrBegin(const config::EnduranceParams& phase, PhaseContext& ctx,
                                        std::uint64_t capacity, bool& resumed) {
  const std::string& name = ctx.phase().name;
  const std::string dir = ctx.state_directory() + "/endurance";
  const std::string path = EnduranceProgressPath(ctx.state_directory(), name);
  if (Status s = EnsureDirectory(dir); !s) return Refuse(ctx, s.error().message);
  EnduranceProgress p;
  resumed = false;
  if (access(path.c_str(), F_OK) != 0) {
    p.workload = phase.workload;
    p.capacity = capacity;
    p.seed = static_cast<std::uint64_t>(
        std::chrono::system_clock::now().time_since_epoch().count());
    p.started = UnixNow();
    p.storage = ctx.storage().Map(0, capacity);
    p.pass_start_physical_bytes = ReadPhysicalMediaBytesWritten(ctx);
    return p;
  }
  auto loaded = LoadEnduranceProgress(path);
  if (!loaded) {
    return Refuse(ctx, loaded.error().message + " (`drivewatch endurance reset " + name +
                           "` starts the test over)");
  }
  if (loaded->workload != phase.workload || loaded->capacity != capacity) {
    return Refuse(ctx, path + " is a test of workload \"" + loaded->workload + "\" over " +
                           std::to_string(loaded->capacity) + " bytes, and the phase is now \"" +
                           phase.workload + "\" over " + std::to_string(capacity) +
                           " (expected the same; `drivewatch endurance reset " + name +
                           "` starts the test over)");
  }
  // The progress is this storage's: the target's name or serial may
  // reach other bytes now (SIGHUP moved it to another loop device).
  const auto here = ctx.storage().Map(0, capacity);
  if (!loaded->storage.empty() && !here.empty() && !RecordedSame(loaded->storage, here)) {
    return Refuse(ctx, path + " is the progress of a test on " +
                           DescribeIdentities(loaded->storage) + ", and target " +
                           ctx.target().name + " now reaches " + ctx.storage().DescribeReach(here) +
                           " (expected the same storage; `drivewatch endurance reset " + name +
                           "` starts the test over here)");
  }
  if (loaded->ended) {
    return Refuse(ctx, "the test already ended (" + loaded->end_reason +
                           "); `drivewatch endurance reset " + name + "` starts a new one");
  }
  p = std::move(*loaded);
  if (p.storage.empty()) p.storage = here;  // a file from before storage was kept
  resumed = true;
  return p;
}

// Before each chunk: whether the test is over, saved as ended. An Error
// when the drive's spare ran down (the test aborts); true when an end was
// reached.
Expected<bool> TestOver(const config::EnduranceParams& phase, PhaseContext& ctx,
                        EnduranceProgress& p, const std::optional<SmartLog>& wear,
                        std::uint64_t run_bytes, double run_seconds, PhaseReport& report) {
  const std::string& name = ctx.phase().name;
  if (const std::string spare = SpareExhausted(wear); !spare.empty()) {
    p.ended = true;
    p.end_reason = spare;
    Report(p, wear, Fraction(phase, p, 0), run_bytes, run_seconds, report);
    if (Status s = Save(p, ctx, report); !s) return s.error();
    return Error{EIO, -1, "endurance " + name + ": aborted: " + spare};
  }
  const std::string end = EndReached(phase, p, wear);
  if (end.empty()) return false;
  p.ended = true;
  p.end_reason = end;
  Report(p, wear, 1.0, run_bytes, run_seconds, report);
  if (Status s = Save(p, ctx, report); !s) return s.error();
  log::Info("phase " + name + ": the endurance test ended: " + end);
  return true;
}

// Writes the next chunk of the pass: at most kChunkTime and a 16th of the
// pass, and no more than bytes_written leaves. Moves the progress on, and
// past the pass when it completes it (`pass_done`, its record added).
Expected<WorkloadResult> WriteChunk(const config::EnduranceParams& phase, PhaseContext& ctx,
                                    const WorkloadSpec& spec, EnduranceProgress& p,
                                    std::optional<SmartLog>& wear, bool& pass_done) {
  const std::uint64_t capacity = spec.length;
  WorkloadSpec chunk = spec;
  const std::uint64_t most = std::max<std::uint64_t>(
      spec.block_size, capacity / kChunksPerPass / spec.block_size * spec.block_size);
  std::uint64_t bytes = std::min(capacity - p.pass_bytes, most);
  if (phase.bytes_written > 0) bytes = std::min(bytes, phase.bytes_written - p.host_bytes);
  chunk.max_bytes = bytes;
  chunk.max_time = kChunkTime;
  chunk.data_seed = p.seed + p.pass;
  if (phase.workload == "jesd219") {
    std::uint64_t mix = p.seed ^ (p.pass * 0x9e3779b97f4a7c15ULL) ^ (p.chunk + 1);
    chunk.seed = aging::detail::SplitMix64(mix);
  } else {
    chunk.start = p.pass_bytes;
  }
  const double from = Fraction(phase, p, 0);
  auto r = ctx.Run(chunk, "pass " + std::to_string(p.pass + 1), from, Fraction(phase, p, bytes));
  if (!r) return r.error();
  const std::uint64_t written = r->total.write_bytes;
  p.pass_bytes += written;
  p.host_bytes += written;
  ++p.chunk;
  wear = ReadWear(ctx);
  if (wear) p.critical_warning = wear->critical_warning;
  pass_done = p.pass_bytes >= capacity;
  if (pass_done) {
    const std::optional<double> physical = ReadPhysicalMediaBytesWritten(ctx);
    ++p.pass;
    p.passes.push_back(PassRecord(p, wear, physical));
    p.pass_bytes = 0;
    p.chunk = 0;
    p.pass_start_host_bytes = p.host_bytes;
    p.pass_start_physical_bytes = physical;
  }
  return r;
}

}  // namespace

Status RunKind(const config::EnduranceParams& phase, PhaseContext& ctx, PhaseReport& report) {
  const std::string& name = ctx.phase().name;
  if (phase.drive_writes == 0 && !phase.percentage_used && phase.bytes_written == 0) {
    return Refuse(ctx,
                  "no end set (expected drive_writes above 0, percentage_used or bytes_written)");
  }
  if (phase.percentage_used && ctx.controller() == nullptr) {
    return Refuse(ctx,
                  "percentage_used needs an NVMe namespace target, whose SMART log reports it");
  }
  const WorkloadSpec spec = EnduranceSpec(phase, ctx);
  const std::uint64_t capacity = spec.length;
  bool resumed = false;
  auto begun = LoadOrBegin(phase, ctx, capacity, resumed);
  if (!begun) return begun.error();
  EnduranceProgress p = std::move(*begun);
  std::optional<SmartLog> wear = ReadWear(ctx);
  if (resumed && wear && (wear->critical_warning & ~p.critical_warning) != 0) {
    p.ended = true;
    p.end_reason = "critical warning bits " + std::to_string(wear->critical_warning) +
                   " set since the last run (were " + std::to_string(p.critical_warning) + ")";
    Report(p, wear, Fraction(phase, p, 0), 0, 0, report);
    if (Status s = Save(p, ctx, report); !s) return s.error();
    return Error{EIO, -1, "endurance " + name + ": " + p.end_reason};
  }
  if (wear) p.critical_warning = wear->critical_warning;
  report.results["resumed_at_bytes"] = p.host_bytes;
  if (resumed) {
    if (Status s = RecordLastPass(ctx, p); !s) return s.error();
    log::Info("phase " + name + ": resuming the endurance test at pass " +
              std::to_string(p.pass + 1) + ", " + std::to_string(p.pass_bytes) +
              " bytes into it (" + std::to_string(p.host_bytes) + " bytes written so far)");
  }

  // The rate cap holds over the whole run: each chunk is paced by the
  // engine, and a chunk that ends ahead of the rate is followed by an idle.
  const double cap_bytes_per_second =
      phase.max_drive_writes_per_day
          ? *phase.max_drive_writes_per_day * static_cast<double>(capacity) / 86400.0
          : 0;
  const auto run_start = std::chrono::steady_clock::now();
  std::uint64_t run_bytes = 0;
  double run_seconds = 0;
  for (;;) {
    auto over = TestOver(phase, ctx, p, wear, run_bytes, run_seconds, report);
    if (!over) return over.error();
    if (*over) return Ok{};
    if (ctx.stopped()) return Ok{};

    bool pass_done = false;
    auto r = WriteChunk(phase, ctx, spec, p, wear, pass_done);
    if (!r) return r.error();
    run_bytes += r->total.write_bytes;
    run_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
    Report(p, wear, Fraction(phase, p, 0), run_bytes, run_seconds, report);
    if (Status s = Save(p, ctx, report); !s) return s.error();
    // The pass is in the progress first, then in the history: a crash
    // between the two leaves it to RecordLastPass when the test resumes.
    if (pass_done) {
      if (Status s = RecordLastPass(ctx, p); !s) return s.error();
    }
    if (r->errors > 0) {
      return Error{EIO, -1, "endurance " + name + ": " + std::to_string(r->errors) +
                                " write errors, first: " + r->first_error};
    }
    if (cap_bytes_per_second > 0) {
      const double ahead = static_cast<double>(run_bytes) / cap_bytes_per_second - run_seconds;
      const double f = Fraction(phase, p, 0);
      if (ahead > 0.001 &&
          !ctx.Idle(std::chrono::nanoseconds(static_cast<std::int64_t>(ahead * 1e9)),
                    "paced to max_drive_writes_per_day", f, f)) {
        return Ok{};
      }
      run_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
    }
  }
}

const StorageMap& PhaseContext::storage() const {
  static const StorageMap kNone;
  return kNone;
}

Status PhaseContext::RecordStep(const std::string&, std::uint64_t, const Json&) {
  return Error{ENOTSUP, -1, "this phase context keeps no history"};
}

Status ExportKindState(const config::EnduranceParams&, const config::PhaseConfig& phase,
                       const std::string& state_directory, const Labels& labels,
                       SampleSink& sink) {
  const std::string path = EnduranceProgressPath(state_directory, phase.name);
  if (access(path.c_str(), F_OK) != 0) return Ok{};  // no test begun (or it was removed)
  auto p = LoadEnduranceProgress(path);
  if (!p) return p.error();
  sink.Add(kEnduranceHostWritten, labels, static_cast<double>(p->host_bytes));
  sink.Add(kEnduranceDriveWrites, labels,
           static_cast<double>(p->pass) +
               static_cast<double>(p->pass_bytes) /
                   static_cast<double>(std::max<std::uint64_t>(p->capacity, 1)));
  sink.Add(kEnduranceEnded, labels, p->ended ? 1.0 : 0.0);
  if (Items(p->passes).empty()) return Ok{};
  const Json& last = Items(p->passes).back();
  if (const Json* used = Find(last, "percentage_used");
      used && used->is_number()) {
    sink.Add(kEndurancePassPercentageUsed, labels, AsDouble(*used) / 100);
  }
  if (const Json* waf = Find(last, "waf_ratio"); waf && waf->is_number()) {
    sink.Add(kEndurancePassWaf, labels, AsDouble(*waf));
  }
  return Ok{};
}

// An endurance test's progress lives in its own file (its passes), not in
// the fill level, which it leaves as it was.
double FillLevelAfter(const config::EnduranceParams&, const Json& /*record*/, double level) {
  return level;
}

}  // namespace drivewatch::aging
