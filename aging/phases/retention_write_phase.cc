// SPDX-License-Identifier: Apache-2.0
// retention-write: start a data-retention study. Writes the study region
// with the self-describing pattern (aging/retention/retention_block.h: every 4 KiB
// block carries the study id, its LBA, the write time and a checksum over
// the block; the rest is pseudo-random data from the study seed and the
// LBA), flushes it, then reads the region back once. That read is the
// "month 0" baseline of the latency distribution, and the study becomes
// active only if it verifies clean. Everything about the study goes to
// <state>/retention/<study>.json (aging/retention/retention_study.h).
//
// The region is written in chunks; after each, the drive's cache is
// flushed and the study records how far it got, so a run cut short (crash,
// power cut, SIGTERM) resumes at the last whole chunk the next time the
// phase runs. A study that exists and is active is never written again.
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "aging/phases/phase.h"
#include "aging/retention/retention_study.h"
#include "aging/retention/study_register.h"

namespace drivewatch::aging {
namespace {

constexpr std::uint64_t kChunkBytes = 256ull << 20;

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::uint64_t Random64() {
  std::uint64_t v = 0;
  while (v == 0) {
    if (getrandom(&v, sizeof(v), 0) != sizeof(v)) {
      v = static_cast<std::uint64_t>(
          std::chrono::steady_clock::now().time_since_epoch().count()) * 0x9E3779B97F4A7C15ULL;
    }
  }
  return v;
}

std::string Quote(const std::string& s) { return "\"" + s + "\""; }

}  // namespace

// Reads the study's region back and verifies every block; shared with
// retention-verify (aging/phases/retention_verify_phase.cc).
Expected<Json> VerifyStudyRegion(PhaseContext& ctx, const std::string& name, std::uint32_t io,
                                 std::uint32_t queue_depth, const Json& study, double progress_from,
                                 double progress_to, bool* completed);

namespace {

// A new study of `length` bytes at the phase's offset, as its record
// begins: nothing written yet.
Json NewStudy(const config::RetentionWriteParams& phase, PhaseContext& ctx, const Json& facts,
              std::uint64_t length) {
  const std::uint64_t offset = phase.region_offset;
  const std::uint64_t id = Random64();
  Json study = Json::object();
  study["version"] = 2;
  study["study"] = phase.study;
  study["id"] = StudyIdHex(id);
  study["state"] = "writing";
  study["target"] = ctx.target().name;
  for (const char* k : {"serial", "nsid", "model", "firmware", "device"}) {
    if (const Json* v = Find(facts, k)) study[k] = *v;
  }
  Json region = Json::object();
  region["offset"] = offset;
  region["length"] = length;
  region["block_size"] = std::uint64_t{kRetentionBlockSize};
  study["region"] = region;
  Json pattern = Json::object();
  pattern["version"] = 1;
  pattern["seed"] = Random64();
  pattern["study_id"] = StudyIdHex(id);
  study["pattern"] = pattern;
  Json written = Json::object();
  written["start"] = Now();
  written["next_offset"] = offset;
  study["written"] = written;
  if (ctx.nvme()) {
    if (auto smart = ReadSmartSnapshot(ctx.fd())) study["smart_at_write"] = *smart;
  }
  Json accounting = Json::object();
  accounting["reference_temperature_k"] = phase.reference_temperature + 273.15;
  accounting["activation_energy_ev"] = phase.activation_energy;
  accounting["powered_on_sampled_seconds"] = 0.0;
  accounting["powered_on_equivalent_seconds"] = 0.0;
  study["accounting"] = accounting;
  study["events"] = Json::array();
  study["verifies"] = Json::array();
  // Which bytes of which storage the region is: what every other
  // writer's gate compares, whatever name it reaches them by.
  if (const auto storage = ctx.storage().Map(offset, length); !storage.empty()) {
    study["storage"] = ToJson(storage);
  }
  return study;
}

// The study's record: the one a run cut short left, when it is this
// study's write on the same target, drive, region and storage (its write
// resumes), or a new one, saved. Any other study of the name refuses.
Expected<Json> OpenStudy(const config::RetentionWriteParams& phase, PhaseContext& ctx,
                         std::uint64_t length, PhaseReport& report) {
  const std::string& state = ctx.state_directory();
  const std::uint64_t offset = phase.region_offset;
  const Json facts = ctx.DriveFacts();
  auto existing = LoadStudy(state, phase.study);
  if (!existing) {
    if (existing.error().errnum != ENOENT) return existing.error();
    Json study = NewStudy(phase, ctx, facts, length);
    if (Status s = SaveStudy(state, study); !s) return s.error();
    return study;
  }
  Json study = *existing;
  const std::string st = Find(study, "state") ? AsString(*Find(study, "state")) : "";
  bool same_place =
      Find(study, "target") && AsString(*Find(study, "target")) == ctx.target().name &&
      Find(study, "serial") &&
      AsString(*Find(study, "serial")) == AsString(*Find(facts, "serial")) &&
      Find(study, "region") && AsUint(*Find(*Find(study, "region"), "offset")) == offset &&
      AsUint(*Find(*Find(study, "region"), "length")) == length;
  // A write resumes only on the storage it began on: the same target name
  // and serial may reach other bytes now (another loop device, another
  // partition, the directory moved).
  if (same_place && Find(study, "storage") != nullptr) {
    auto recorded = StorageFromJson(*Find(study, "storage"), "");
    const auto now = ctx.storage().Map(offset, length);
    if (!recorded || !RecordedSame(*recorded, now)) {
      const std::string was =
          recorded ? DescribeIdentities(*recorded)
                   : "storage its record does not name (" + recorded.error().message + ")";
      return Error{EPERM, -1,
                   "retention study " + Quote(phase.study) + " was begun on " + was +
                       ", and target " + Quote(ctx.target().name) + " now reaches " +
                       ctx.storage().DescribeReach(now) +
                       " (expected the same storage to resume its write; give the new "
                       "study a new name, aging.phases.study)"};
    }
  }
  if ((st != "writing" && st != "baseline") || !same_place) {
    return Error{EPERM, -1,
                 "retention study " + Quote(phase.study) + " already exists (state " + st +
                     ", " + StudyPath(state, phase.study) +
                     "); a study is written once: give this one a new name "
                     "(aging.phases.study)"};
  }
  report.results["resumed_at_bytes"] =
      AsUint(*Find(*Find(study, "written"), "next_offset")) - offset;
  return study;
}

// Writes what is left of the study's region, a chunk at a time, each on
// the media (fdatasync) before the study says so. `stopped`: the phase was
// stopped inside a chunk, which is written again on resume.
Status WriteRegion(const config::RetentionWriteParams& phase, PhaseContext& ctx, Json& study,
                   std::uint64_t length, PhaseReport& report, bool& stopped) {
  const std::string& state = ctx.state_directory();
  const std::uint32_t io = phase.block_size;
  const std::uint64_t offset = phase.region_offset;
  const RetentionPattern pattern = PatternOf(study);
  std::uint64_t next = AsUint(study["written"]["next_offset"]);
  double write_seconds = 0;
  std::uint64_t written_bytes = 0;
  const auto write_time_ns = static_cast<std::uint64_t>(Now() * 1e9);
  stopped = false;
  while (AsString(*Find(study, "state")) == "writing" && next < offset + length) {
    WorkloadSpec spec;
    spec.access = Access::kSequential;
    spec.block_size = io;
    spec.queue_depth = phase.queue_depth;
    spec.offset = next;
    spec.length = std::min(kChunkBytes, offset + length - next) / io * io;
    spec.max_errors = 1;
    spec.fill = [&](std::uint64_t at, void* buffer, std::uint32_t size) {
      EncodeRetentionBlocks(pattern, at / kRetentionBlockSize, size / kRetentionBlockSize,
                            write_time_ns, buffer);
    };
    const double from = 0.5 * static_cast<double>(next - offset) / static_cast<double>(length);
    const double to = 0.5 * static_cast<double>(next - offset + spec.length) / static_cast<double>(length);
    auto result = ctx.Run(spec, "write", from, to);
    if (!result) return result.error();
    if (result->errors > 0) {
      return Error{EIO, -1, "retention-write: " + result->first_error};
    }
    write_seconds += result->total.seconds;
    written_bytes += result->total.write_bytes;
    if (result->end != WorkloadResult::End::kCompleted) {
      // Stopped inside the chunk: it is written again on resume.
      report.results["written_bytes"] = written_bytes;
      stopped = true;
      return Ok{};
    }
    // The chunk is on the media before the study says so.
    if (::fdatasync(ctx.fd()) != 0) {
      return Error{errno, -1, "retention-write: flush: " + std::string(std::strerror(errno))};
    }
    next += spec.length;
    study["written"]["next_offset"] = next;
    if (Status s = SaveStudy(state, study); !s) return s.error();
  }
  report.results["written_bytes"] = written_bytes;
  if (write_seconds > 0) report.results["write_bytes_per_second"] = written_bytes / write_seconds;
  return Ok{};
}

}  // namespace

Status RunKind(const config::RetentionWriteParams& phase, PhaseContext& ctx, PhaseReport& report) {
  const std::string& state = ctx.state_directory();
  const std::uint32_t io = phase.block_size;
  if (io % kRetentionBlockSize != 0) {
    return Error{EINVAL, -1,
                 "phase " + ctx.phase().name + ": block_size " + std::to_string(io) +
                     " is not a multiple of the study's 4 KiB block (aging.phases.block_size)"};
  }
  const std::uint64_t capacity = ctx.capacity();
  const std::uint64_t offset = phase.region_offset;
  std::uint64_t length = phase.region_length != 0 ? phase.region_length
                                                  : (capacity > offset ? capacity - offset : 0);
  length = length / io * io;
  if (offset + length > capacity || length == 0) {
    return Error{EINVAL, -1,
                 "phase " + ctx.phase().name + ": the region [" + std::to_string(offset) + ", +" +
                     std::to_string(phase.region_length) + ") does not fit the target's " +
                     std::to_string(capacity) + " bytes (aging.phases.offset and length)"};
  }

  auto lock = LockStudy(state, phase.study, std::chrono::seconds{30});
  if (!lock) return Error{EPERM, -1, lock.error().message};  // refused: busy
  auto opened = OpenStudy(phase, ctx, length, report);
  if (!opened) return opened.error();
  Json study = std::move(*opened);
  // Entered in the host's register before the first byte is written (and
  // again on resume, should the entry have been lost), so a config with
  // another state directory sees the region held too.
  if (Find(study, "storage") != nullptr) {
    if (Status s = RegisterStudy(ctx.study_register(), state, study); !s) {
      return Error{EPERM, -1, s.error().message};
    }
  }
  report.results["region_bytes"] = length;
  bool stopped = false;
  if (Status s = WriteRegion(phase, ctx, study, length, report, stopped); !s || stopped) return s;
  if (AsString(*Find(study, "state")) == "writing") {
    study["written"]["end"] = Now();
    study["state"] = "baseline";
    if (Status s = SaveStudy(state, study); !s) return s.error();
  }
  ctx.Checkpoint(report);

  // The baseline: one full read back, now.
  bool completed = false;
  auto baseline = VerifyStudyRegion(ctx, phase.study, phase.block_size, phase.queue_depth, study, 0.5, 1.0, &completed);
  if (!baseline) return baseline.error();
  if (!completed) return Ok{};  // stopped: the baseline runs on resume
  const std::uint64_t bad = AsUint((*baseline)["bad"]["unreadable"]) +
                            AsUint((*baseline)["bad"]["wrong_content"]) +
                            AsUint((*baseline)["bad"]["misplaced"]) +
                            AsUint((*baseline)["bad"]["stale"]);
  study["baseline"] = *baseline;
  report.results["baseline_p99_9_seconds"] = AsDouble((*baseline)["quantiles"]["p99_9"]);
  report.results["baseline_p50_seconds"] = AsDouble((*baseline)["quantiles"]["p50"]);
  report.results["baseline_max_seconds"] = AsDouble((*baseline)["quantiles"]["max"]);
  if (bad > 0) {
    study["state"] = "failed";
    study["reason"] = "the baseline read found " + std::to_string(bad) +
                      " bad blocks right after the write; the study does not start";
    (void)SaveStudy(state, study);
    (void)UnregisterStudy(ctx.study_register(), AsString(study["id"]));
    return Error{EIO, -1, "retention study " + Quote(phase.study) + ": " +
                              AsString(study["reason"])};
  }
  study["state"] = "active";
  return SaveStudy(state, study);
}

// A study writes its own region, which the fill level does not describe.
double FillLevelAfter(const config::RetentionWriteParams&, const Json& /*record*/,
                      double level) {
  return level;
}

// A study writes its region only, as the study: the write gate lets it write
// there over its own earlier record, and nowhere else.
WriteScope KindWriteScope(const config::RetentionWriteParams& phase) {
  return WriteScope{phase.study, phase.region_offset, phase.region_length};
}

}  // namespace drivewatch::aging
