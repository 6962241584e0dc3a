// SPDX-License-Identifier: Apache-2.0
// The endurance phase's parts (aging/phases/endurance.h): the JESD219 mix, the
// WAF, and the progress file, read back with every field checked.
#include "aging/phases/endurance.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>

#include "aging/phases/phase.h"
#include "aging/report/report_format.h"
#include "aging/runner/phase_lock.h"
#include "config/util/durable_file.h"
#include "config/util/sys.h"
#include "probes/drive/ocp_smart_log.h"
#include "probes/drive/units.h"

namespace drivewatch::aging {

std::vector<SizeShare> Jesd219Sizes(std::uint32_t logical_block_size) {
  // JESD219A, enterprise endurance workload, transfer size distribution.
  constexpr std::uint32_t kKiB = 1024;
  const SizeShare kMix[] = {
      {512, 4},         {1 * kKiB, 1},  {3 * kKiB / 2, 1}, {2 * kKiB, 1},
      {5 * kKiB / 2, 1}, {3 * kKiB, 1},  {7 * kKiB / 2, 1}, {4 * kKiB, 67},
      {8 * kKiB, 10},   {16 * kKiB, 7}, {32 * kKiB, 3},    {64 * kKiB, 3},
  };
  const std::uint32_t lbs = logical_block_size == 0 ? 512 : logical_block_size;
  std::map<std::uint32_t, std::uint32_t> merged;
  for (const SizeShare& s : kMix) merged[(s.size + lbs - 1) / lbs * lbs] += s.percent;
  std::vector<SizeShare> out;
  for (const auto& [size, percent] : merged) out.push_back({size, percent});
  return out;
}

std::vector<LbaZone> Jesd219Zones() { return {{5, 50}, {15, 30}, {80, 20}}; }

std::optional<double> WriteAmplification(double physical_bytes_delta, double host_bytes_delta) {
  if (!std::isfinite(physical_bytes_delta) || !std::isfinite(host_bytes_delta) ||
      physical_bytes_delta <= 0 || host_bytes_delta <= 0) {
    return std::nullopt;
  }
  return physical_bytes_delta / host_bytes_delta;
}

std::optional<double> ReadPhysicalMediaBytesWritten(PhaseContext& ctx) {
  Controller* ctrl = ctx.controller();
  if (ctrl == nullptr) return std::nullopt;  // not an NVMe namespace
  // A drive without the log (or with a log this reader refuses) has no WAF;
  // the ocp_smart probe reports feature_supported{feature="ocp_smart_extended"}.
  auto log = ReadOcpSmartExtended(*ctrl);
  if (!log) return std::nullopt;
  return units::ToDouble(log->physical_media_units_written);
}

std::string EnduranceProgressPath(const std::string& state_directory, const std::string& phase) {
  return state_directory + "/endurance/" + phase + ".progress";
}

Json ToJson(const EnduranceProgress& p) {
  Json j = Json::object();
  j["version"] = 1;
  j["workload"] = p.workload;
  j["capacity_bytes"] = p.capacity;
  j["seed"] = p.seed;
  j["started"] = p.started;
  j["pass"] = p.pass;
  j["pass_bytes"] = p.pass_bytes;
  j["chunk"] = p.chunk;
  j["host_bytes"] = p.host_bytes;
  j["pass_start_host_bytes"] = p.pass_start_host_bytes;
  if (p.pass_start_physical_bytes) j["pass_start_physical_bytes"] = *p.pass_start_physical_bytes;
  j["critical_warning"] = std::uint64_t{p.critical_warning};
  j["ended"] = p.ended;
  j["end_reason"] = p.end_reason;
  j["passes"] = p.passes;
  if (!p.storage.empty()) j["storage"] = ToJson(p.storage);
  return j;
}

Expected<EnduranceProgress> LoadEnduranceProgress(const std::string& path) {
  auto text = ReadWholeFile(path, kMaxEnduranceProgressBytes, "an endurance progress file");
  if (!text) return text.error();
  return ParseEnduranceProgress(*text, path);
}

Expected<EnduranceProgress> ParseEnduranceProgress(const std::string& text,
                                                   const std::string& path) {
  const auto bad = [&](const std::string& key, const std::string& what) {
    return Error{EINVAL, -1, path + ": " + key + ": expected " + what};
  };
  auto parsed = ParseJson(text);
  if (!parsed) return Error{EINVAL, -1, path + ": not JSON: " + parsed.error().message};
  if (!parsed->is_object()) return bad("the file", "a JSON object");
  const Json& j = *parsed;
  constexpr std::uint64_t kNone = std::numeric_limits<std::uint64_t>::max();
  const auto uint = [&](const char* key, std::uint64_t max, std::uint64_t* out) -> Status {
    const Json* v = Find(j, key);
    // AsUint alone would take 1.5 as 1: a whole number only.
    const bool whole = v && v->is_number() && AsDouble(*v) >= 0 &&
                       AsDouble(*v) == std::floor(AsDouble(*v));
    const std::uint64_t got = whole ? AsUint(*v, kNone) : kNone;
    if (got == kNone || got > max) {
      return bad(key, "a whole number from 0 to " + std::to_string(max));
    }
    *out = got;
    return Ok{};
  };
  EnduranceProgress p;
  std::uint64_t version = 0, warning = 0;
  if (Status s = uint("version", kNone - 1, &version); !s) return s.error();
  if (version != 1) return bad("version", "1, not " + std::to_string(version));
  const Json* workload = Find(j, "workload");
  if (!workload || (AsString(*workload) != "sequential" && AsString(*workload) != "jesd219")) {
    return bad("workload", "\"sequential\" or \"jesd219\"");
  }
  p.workload = AsString(*workload);
  for (const auto& [key, out] : {std::pair{"capacity_bytes", &p.capacity}, {"seed", &p.seed},
                                 {"pass", &p.pass}, {"pass_bytes", &p.pass_bytes},
                                 {"chunk", &p.chunk}, {"host_bytes", &p.host_bytes},
                                 {"pass_start_host_bytes", &p.pass_start_host_bytes}}) {
    if (Status s = uint(key, kNone - 1, out); !s) return s.error();
  }
  if (p.capacity == 0) return bad("capacity_bytes", "above 0");
  if (p.pass_bytes >= p.capacity) {
    return bad("pass_bytes", "below capacity_bytes " + std::to_string(p.capacity));
  }
  if (p.pass_start_host_bytes > p.host_bytes) {
    return bad("pass_start_host_bytes", "at most host_bytes " + std::to_string(p.host_bytes));
  }
  if (Status s = uint("critical_warning", 255, &warning); !s) return s.error();
  p.critical_warning = static_cast<std::uint8_t>(warning);
  const Json* started = Find(j, "started");
  if (!started || !started->is_number() || !(AsDouble(*started) > 0)) {
    return bad("started", "a Unix time above 0");
  }
  p.started = AsDouble(*started);
  if (const Json* phys = Find(j, "pass_start_physical_bytes")) {
    if (!phys->is_number() || !(AsDouble(*phys) >= 0)) {
      return bad("pass_start_physical_bytes", "a byte count of 0 or more");
    }
    p.pass_start_physical_bytes = AsDouble(*phys);
  }
  const Json* ended = Find(j, "ended");
  if (!ended || !ended->is_boolean()) return bad("ended", "true or false");
  p.ended = AsBool(*ended);
  const Json* reason = Find(j, "end_reason");
  if (!reason || !reason->is_string()) return bad("end_reason", "a string");
  p.end_reason = AsString(*reason);
  const Json* passes = Find(j, "passes");
  if (!passes || !passes->is_array() || Items(*passes).size() != p.pass) {
    return bad("passes", "an array of one record per pass done (" + std::to_string(p.pass) + ")");
  }
  for (const Json& record : Items(*passes)) {
    if (!record.is_object()) return bad("passes", "an array of objects");
  }
  p.passes = *passes;
  if (const Json* storage = Find(j, "storage")) {
    auto extents = StorageFromJson(*storage, "");
    if (!extents) return bad("storage", "the storage the test writes: " + extents.error().message);
    p.storage = std::move(*extents);
  }
  return p;
}

Expected<std::string> ResetEnduranceTest(const std::string& state_directory,
                                         const std::string& phase, const std::string& target) {
  auto lock = phase_detail::StateLock::Take(phase_detail::TargetLockPath(state_directory, target),
                                            "endurance reset of phase " + phase);
  if (!lock) {
    return Error{lock.error().errnum, -1,
                 "cannot reset the endurance test of phase " + phase + ": target " + target +
                     " is " + lock.error().message + " (stop the run first)"};
  }
  Status recorded = Ok{};
  phase_detail::RecordInterrupted(state_directory, phase, target, &recorded, {});
  if (!recorded) return recorded.error();
  const std::string path = EnduranceProgressPath(state_directory, phase);
  if (access(path.c_str(), F_OK) != 0) {
    return Error{ENOENT, -1,
                 "phase " + phase + " has no endurance test to reset (no " + path + ")"};
  }
  std::string was;
  if (auto p = LoadEnduranceProgress(path); p) {
    was = "pass " + std::to_string(p->pass + 1) + ", " + std::to_string(p->host_bytes) +
          " bytes written" + (p->ended ? ", ended: " + p->end_reason : std::string());
  } else {
    was = "damaged: " + p.error().message;
  }
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const std::string kept = path + ".reset-" + report_format::Utc(now, "%Y%m%dT%H%M%SZ");
  if (std::rename(path.c_str(), kept.c_str()) != 0) {
    const int err = errno;
    return Error{err, -1, "cannot rename " + path + " to " + kept + ": " + std::strerror(err)};
  }
  // The rename is durable before the reset is said to be done.
  if (Status s = util::FsyncDirectory(path.substr(0, path.rfind('/'))); !s) return s.error();
  return "the endurance test of phase " + phase + " (" + was + ") is reset: its progress is kept as " +
         kept + ", and the next run starts a new test";
}

}  // namespace drivewatch::aging
