// SPDX-License-Identifier: Apache-2.0
#include "aging/runner/abort_conditions.h"

#include <cstring>

#include "config/config.h"
#include "probes/drive/features.h"
#include "probes/drive/identify.h"
#include "probes/drive/nvme_drive_layer.h"
#include "probes/drive/smart_log.h"

namespace drivewatch::aging {
namespace {

std::string Kelvin(double k) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.0f K (%.0f °C)", k, k - 273.15);
  return buf;
}

// Reads through the drive layer's controller on the phase's own descriptor.
class NvmeSource : public HealthSource {
 public:
  explicit NvmeSource(int fd) : controller_(NvmeControllerOn(fd)) {}

  Expected<HealthReading> Read() override {
    HealthReading r;
    if (wctemp_k_ < 0) {
      auto id = controller_->Identify(kIdentifyCnsController, 0);
      if (!id) return id.error();
      auto decoded = DecodeIdentifyController(*id);
      if (!decoded) return decoded.error();
      wctemp_k_ = decoded->wctemp_k;
    }
    r.wctemp_k = static_cast<std::uint16_t>(wctemp_k_);
    auto smart = ReadSmartLog(*controller_);
    if (!smart) return smart.error();
    r.composite_k = smart->composite_temperature_k;
    r.critical_warning = smart->critical_warning;
    // HCTM is optional: a controller without it has no TMT1 to respect.
    if (auto hctm = controller_->GetFeature(kFeatureHostThermalManagement, 0, 0)) {
      r.tmt1_k = DecodeHostThermalManagement(hctm->result).tmt1_k;
    }
    return r;
  }

 private:
  std::unique_ptr<Controller> controller_;
  int wctemp_k_ = -1;
};

}  // namespace

std::unique_ptr<HealthSource> NvmeHealthSource(int fd) {
  return std::make_unique<NvmeSource>(fd);
}

AbortConditions::AbortConditions(std::unique_ptr<HealthSource> health,
                                 double margin_k,
                                 std::chrono::steady_clock::duration max_duration,
                                 std::chrono::steady_clock::time_point start)
    : health_(std::move(health)),
      margin_k_(margin_k),
      max_duration_(max_duration),
      start_(start) {}

Status AbortConditions::Start() {
  if (!health_) return Ok{};
  auto r = health_->Read();
  if (!r) return r.error();
  warnings_at_start_ = r->critical_warning;
  last_ = *r;
  return Ok{};
}

std::optional<std::string> AbortConditions::Check(
    std::chrono::steady_clock::time_point now) {
  if (now - start_ > max_duration_) {
    return "max_duration " +
           config::FormatDuration(
               std::chrono::duration_cast<std::chrono::milliseconds>(max_duration_)) +
           " exceeded";
  }
  if (!health_) return std::nullopt;
  auto r = health_->Read();
  if (!r) {
    if (++failed_reads_ >= 3) {
      return "the drive's health could not be read 3 times in a row: " +
             r.error().message;
    }
    return std::nullopt;
  }
  failed_reads_ = 0;
  last_ = *r;
  const std::uint8_t new_warnings = r->critical_warning & ~warnings_at_start_;
  if (new_warnings != 0) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "critical warning 0x%02x set (was 0x%02x at the start)",
                  r->critical_warning, warnings_at_start_);
    return std::string(buf);
  }
  for (auto [limit, name] : {std::pair{r->wctemp_k, "WCTEMP"}, std::pair{r->tmt1_k, "TMT1"}}) {
    if (limit == 0 || r->composite_k == 0) continue;
    if (r->composite_k + margin_k_ >= limit) {
      char margin[16];
      std::snprintf(margin, sizeof(margin), "%g", margin_k_);
      return "composite temperature " + Kelvin(r->composite_k) + " is within " +
             margin + " K of " + name + " " + Kelvin(limit);
    }
  }
  return std::nullopt;
}

}  // namespace drivewatch::aging
