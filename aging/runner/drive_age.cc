// SPDX-License-Identifier: Apache-2.0
#include "aging/runner/drive_age.h"

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

#include "probes/drive/features.h"
#include "probes/drive/identify.h"
#include "probes/drive/smart_log.h"

namespace drivewatch::aging {
namespace {

// Data Units Written counts thousands of 512-byte units (NVMe 2.0 Figure 207).
constexpr double kDataUnitBytes = 512'000;

Error Invalid(std::string_view field, const Json* value, std::string_view expected) {
  return Error{EBADMSG, -1,
               "drive_at_start." + std::string(field) + " is " +
                   (value ? DumpJson(*value) : std::string("missing")) + " (expected " +
                   std::string(expected) + ")"};
}

// A whole number in [lo, hi], exactly.
std::optional<std::uint64_t> Whole(const Json* v, double lo, double hi) {
  if (v == nullptr || !v->is_number()) return std::nullopt;
  const double d = AsDouble(*v, -1);
  if (!std::isfinite(d) || d < lo || d > hi || d != std::floor(d)) return std::nullopt;
  return AsUint(*v);
}

}  // namespace

Expected<Json> ReadDriveAge(Controller& ctrl, std::uint64_t capacity_bytes, double now) {
  auto log = ReadSmartLog(ctrl);
  if (!log) return log.error();
  Json out = Json::object();
  out["time"] = now;
  // A 128-bit counter; past 2^64 hours it is no age (and fails the check
  // on reading back).
  out["power_on_hours"] = log->power_on_hours <= UINT64_MAX
                              ? Json(static_cast<std::uint64_t>(log->power_on_hours))
                              : Json(static_cast<double>(log->power_on_hours));
  out["percentage_used"] = std::uint64_t{log->percentage_used};
  out["data_written_bytes"] = static_cast<double>(log->data_units_written) * kDataUnitBytes;
  out["capacity_bytes"] = capacity_bytes;
  // TMT1/TMT2 are the host's throttle points when it set any (HCTM); a
  // drive without HCTM, or with it off, has none to show.
  if (auto id_bytes = ctrl.Identify(kIdentifyCnsController, 0)) {
    if (auto id = DecodeIdentifyController(*id_bytes); id && (id->hctma & 1) != 0) {
      if (auto hctm = ctrl.GetFeature(kFeatureHostThermalManagement, 0, 0)) {
        const HostThermalManagement t = DecodeHostThermalManagement(hctm->result);
        if (t.tmt1_k != 0) out["tmt1_k"] = std::uint64_t{t.tmt1_k};
        if (t.tmt2_k != 0) out["tmt2_k"] = std::uint64_t{t.tmt2_k};
      }
    }
  }
  return out;
}

Expected<DriveAge> DriveAgeFromJson(const Json& s) {
  if (!s.is_object()) return Invalid("", &s, "an object");
  DriveAge a;
  const Json* time = Find(s, "time");
  if (time == nullptr || !time->is_number() || !std::isfinite(AsDouble(*time)) ||
      AsDouble(*time) < 0) {
    return Invalid("time", time, "Unix seconds, 0 or more");
  }
  a.time = AsDouble(*time);
  const auto poh = Whole(Find(s, "power_on_hours"), 0, 18446744073709549568.0);
  if (!poh) return Invalid("power_on_hours", Find(s, "power_on_hours"), "a whole number of hours");
  a.power_on_hours = *poh;
  const auto used = Whole(Find(s, "percentage_used"), 0, 255);
  if (!used) {
    return Invalid("percentage_used", Find(s, "percentage_used"), "a whole number from 0 to 255");
  }
  a.percentage_used = static_cast<std::uint32_t>(*used);
  const Json* written = Find(s, "data_written_bytes");
  if (written == nullptr || !written->is_number() ||
      !std::isfinite(AsDouble(*written)) || AsDouble(*written) < 0) {
    return Invalid("data_written_bytes", written, "bytes, 0 or more");
  }
  a.data_written_bytes = AsDouble(*written);
  const auto capacity = Whole(Find(s, "capacity_bytes"), 1, 18446744073709549568.0);
  if (!capacity) {
    return Invalid("capacity_bytes", Find(s, "capacity_bytes"), "a whole number of bytes above 0");
  }
  a.capacity_bytes = *capacity;
  for (auto [key, field] : {std::pair{"tmt1_k", &a.tmt1_k}, std::pair{"tmt2_k", &a.tmt2_k}}) {
    const Json* v = Find(s, key);
    if (v == nullptr) continue;
    const auto k = Whole(v, 1, 65535);
    if (!k) return Invalid(key, v, "kelvin, a whole number from 1 to 65535");
    *field = static_cast<std::uint16_t>(*k);
  }
  return a;
}

}  // namespace drivewatch::aging
