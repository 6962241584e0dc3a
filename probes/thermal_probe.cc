// SPDX-License-Identifier: Apache-2.0
// Every metric the thermal probe emits is defined or named here. The
// temperature thresholds share drivewatch_temperature_threshold_celsius with
// the health probe, which owns threshold="wctemp"|"cctemp"; this probe adds
// the other `threshold` values, so no series is published twice.
#include "probes/thermal_probe.h"

#include <algorithm>
#include <cerrno>
#include <string>
#include <utility>
#include <vector>

#include "config/util/log.h"
#include "probes/drive/features.h"
#include "probes/drive/hwmon.h"
#include "probes/drive/identify.h"
#include "probes/drive/smart_log.h"
#include "probes/drive/units.h"
#include "probes/health_probe.h"

namespace drivewatch {
namespace {

constexpr MetricDesc kThermalThrottling{
    "drivewatch_thermal_throttling",
    "Highest host controlled thermal management level in force: 0 none, 1 "
    "TMT1 (light throttling), 2 TMT2 (heavy throttling). Derived from the "
    "SMART thermal management time/transition counters growing within the "
    "last minute, or the composite temperature at or above TMT1/TMT2 while "
    "thermal management is active; see docs/metrics.md for how it can be "
    "wrong.",
    MetricType::kGauge};

constexpr MetricDesc kAdminCommandsPermitted{
    "drivewatch_admin_commands_permitted",
    "1 when the kernel let drivewatch send NVMe admin commands (passthrough "
    "ioctls) to the controller in the last thermal probe run, 0 when it "
    "refused them (EACCES/EPERM: no CAP_SYS_ADMIN on Linux 6.1); while 0, "
    "health, SMART, thresholds, power states and self-tests are missing and "
    "temperatures come from hwmon.",
    MetricType::kGauge};
constexpr MetricDesc kHwmonTemperature{
    "drivewatch_hwmon_temperature_celsius",
    "Composite temperature in degrees Celsius from the kernel's NVMe hwmon "
    "device (temp1_input; the kernel reads the SMART log itself). Only "
    "present while admin passthrough is denied; otherwise see "
    "drivewatch_temperature_celsius.",
    MetricType::kGauge};
constexpr MetricDesc kHwmonTemperatureThreshold{
    "drivewatch_hwmon_temperature_threshold_celsius",
    "Composite temperature threshold in degrees Celsius from the kernel's "
    "NVMe hwmon device: threshold=over (temp1_max, feature 04h), "
    "threshold=under (temp1_min), threshold=cctemp (temp1_crit). Only "
    "present while admin passthrough is denied, and only the files the "
    "kernel provides.",
    MetricType::kGauge};

const MetricDesc* const kAllMetrics[] = {
    &HealthProbe::TemperatureThresholdMetric(),
    &kThermalThrottling,
    &FeatureSupportedMetric(),
    &kAdminCommandsPermitted,
    &kHwmonTemperature,
    &kHwmonTemperatureThreshold,
};

// Holds one admin run's samples until it has succeeded, so that a
// passthrough refused halfway falls back to hwmon without leaving half an
// admin run behind.
class BufferSink : public SampleSink {
 public:
  void Add(const MetricDesc& desc, Labels labels, double value) override {
    samples_.push_back({&desc, std::move(labels), value});
  }
  void AddHistogram(const MetricDesc& desc, Labels labels,
                    std::shared_ptr<const HistogramValue> value) override {
    histograms_.push_back({&desc, std::move(labels), std::move(value)});
  }
  void FlushTo(SampleSink& sink) {
    for (auto& s : samples_) sink.Add(*s.desc, std::move(s.labels), s.value);
    for (auto& h : histograms_) {
      sink.AddHistogram(*h.desc, std::move(h.labels), std::move(h.value));
    }
  }

 private:
  struct Scalar {
    const MetricDesc* desc;
    Labels labels;
    double value;
  };
  struct Histogram {
    const MetricDesc* desc;
    Labels labels;
    std::shared_ptr<const HistogramValue> value;
  };
  std::vector<Scalar> samples_;
  std::vector<Histogram> histograms_;
};

// Thresholds set by the host are real settings even at 0 K (an
// under-threshold that can never trip), unlike Identify's "0 = not
// reported", so they are converted without units::KelvinToCelsius's
// 0 -> nothing rule.
double ThresholdCelsius(std::uint16_t kelvin) {
  return static_cast<double>(static_cast<std::int64_t>(kelvin) * 100 -
                             units::kKelvinAtZeroCelsiusHundredths) /
         100;
}


}  // namespace

int ThrottleTracker::Update(const ThermalObservation& now) {
  if (!history_.empty()) {
    const ThermalObservation& last = history_.back();
    if (now.tmt1_seconds < last.tmt1_seconds ||
        now.tmt2_seconds < last.tmt2_seconds ||
        now.tmt1_transitions < last.tmt1_transitions ||
        now.tmt2_transitions < last.tmt2_transitions || now.at < last.at) {
      history_.clear();
    }
  }
  int level = 0;
  if (!history_.empty()) {
    // The newest poll at least kWindow old, else the oldest kept.
    auto base = history_.begin();
    for (auto it = history_.begin(); it != history_.end(); ++it) {
      if (now.at - it->at >= kWindow) base = it;
    }
    if (now.tmt2_seconds > base->tmt2_seconds ||
        now.tmt2_transitions > base->tmt2_transitions) {
      level = 2;
    } else if (now.tmt1_seconds > base->tmt1_seconds ||
               now.tmt1_transitions > base->tmt1_transitions) {
      level = 1;
    }
    // Polls older than the baseline can no longer be one.
    history_.erase(history_.begin(), base);
  }
  if (now.composite_k != 0) {
    if (now.tmt2_k != 0 && now.composite_k >= now.tmt2_k) {
      level = std::max(level, 2);
    } else if (now.tmt1_k != 0 && now.composite_k >= now.tmt1_k) {
      level = std::max(level, 1);
    }
  }
  history_.push_back(now);
  return level;
}

ThermalProbe::ThermalProbe(NowFn now, FeatureSupport::LogFn log,
                           std::string sysfs_root)
    : now_(std::move(now)),
      log_(log),
      sysfs_root_(std::move(sysfs_root)),
      support_(std::move(log)) {
  if (!now_) now_ = [] { return std::chrono::steady_clock::now(); };
}

std::span<const MetricDesc* const> ThermalProbe::Metrics() {
  return kAllMetrics;
}

Status ThermalProbe::Run(Controller& ctrl, const ControllerInfo& info,
                         SampleSink& sink) {
  BufferSink admin;
  Status status = RunAdmin(ctrl, info, admin);
  if (!status) {
    if (AdminPassthroughDenied(status.error())) {
      return RunFromHwmon(info, status.error(), sink);
    }
    return status;
  }
  if (denied_) {
    const std::string line = "drive serial=" + info.serial + " (" +
                             info.device +
                             "): admin passthrough permitted again";
    log_ ? log_(line) : log::Info(line);
    denied_ = false;
  }
  admin.FlushTo(sink);
  sink.Add(kAdminCommandsPermitted, {{"serial", info.serial}}, 1);
  return Ok{};
}

Status ThermalProbe::RunFromHwmon(const ControllerInfo& info,
                                  const Error& denied, SampleSink& sink) {
  auto hwmon = ReadNvmeHwmon(sysfs_root_, info.name);
  if (!denied_) {
    std::string line =
        "drive serial=" + info.serial + " (" + info.device +
        "): admin passthrough denied (needs CAP_SYS_ADMIN on Linux 6.1): "
        "health, SMART, thermal thresholds, power states and self-tests are "
        "not available; ";
    line += hwmon ? "temperatures come from hwmon (" + hwmon->directory + ")"
                  : "no hwmon temperature either: " + hwmon.error().message;
    line += " [" + denied.message + "]";
    log_ ? log_(line) : log::Warn(line);
    denied_ = true;
  }
  if (!hwmon) {
    return Error{hwmon.error().errnum, -1,
                 denied.message + "; hwmon fallback: " +
                     hwmon.error().message};
  }
  const std::string& serial = info.serial;
  sink.Add(kAdminCommandsPermitted, {{"serial", serial}}, 0);
  sink.Add(kHwmonTemperature, {{"serial", serial}, {"sensor", "composite"}},
           hwmon->composite_celsius);
  const std::pair<const char*, const std::optional<double>*> thresholds[] = {
      {"over", &hwmon->max_celsius},
      {"under", &hwmon->min_celsius},
      {"cctemp", &hwmon->crit_celsius}};
  for (const auto& [name, value] : thresholds) {
    if (*value) {
      sink.Add(kHwmonTemperatureThreshold,
               {{"serial", serial}, {"threshold", name}}, **value);
    }
  }
  return Ok{};
}

namespace {

// A sample labelled with the drive's serial, then `extra`.
void AddSample(SampleSink& sink, const std::string& serial, const MetricDesc& desc,
               double value, Labels extra = {}) {
  Labels labels{{"serial", serial}};
  for (auto& label : extra) labels.push_back(std::move(label));
  sink.Add(desc, std::move(labels), value);
}

// Feature 04h, per sensor the SMART log reports (NVMe 2.0 §5.27.1.4: a
// sensor that is not implemented reads 0 there): the over and under
// thresholds, and whether the feature is there.
Status ExportSensorThresholds(Controller& ctrl, const std::string& serial,
                              const SmartLog& log, FeatureSupport& support,
                              SampleSink& sink) {
  const MetricDesc& threshold = HealthProbe::TemperatureThresholdMetric();
  std::vector<int> sensors = {kCompositeSensor};
  for (std::size_t i = 0; i < log.temperature_sensors_k.size(); ++i) {
    if (log.temperature_sensors_k[i] != 0) {
      sensors.push_back(static_cast<int>(i) + 1);
    }
  }
  bool thresholds_supported = true;
  std::string why = "Get Features 04h succeeded";
  for (int sensor : sensors) {
    for (ThresholdType type : {ThresholdType::kOver, ThresholdType::kUnder}) {
      auto r = ctrl.GetFeature(kFeatureTemperatureThreshold,
                               TemperatureThresholdCdw11(type, sensor), 0);
      if (!r) {
        if (!r.error().Unsupported()) return r.error();
        // Without the composite's over-threshold the feature is missing;
        // any other threshold the controller refuses loses only its own
        // samples.
        if (sensor == kCompositeSensor && type == ThresholdType::kOver) {
          thresholds_supported = false;
          why = r.error().message;
        }
        break;
      }
      AddSample(sink, serial, threshold,
                ThresholdCelsius(DecodeTemperatureThresholdKelvin(r->result)),
                {{"threshold", type == ThresholdType::kOver ? "over" : "under"},
                 {"sensor", sensor == kCompositeSensor ? "composite"
                                                       : std::to_string(sensor)}});
    }
    if (!thresholds_supported) break;
  }
  support.Report(sink, serial, "temperature_threshold",
                 "temperature thresholds (feature 04h)", thresholds_supported, why);
  return Ok{};
}

// Host controlled thermal management: Identify HCTMA bit 0, feature 10h.
// Its TMT1 and TMT2 go to *hctm (left 0 without the feature).
Status ExportHostThermalManagement(Controller& ctrl, const std::string& serial,
                                   const IdentifyController& id, FeatureSupport& support,
                                   SampleSink& sink, HostThermalManagement* hctm) {
  const MetricDesc& threshold = HealthProbe::TemperatureThresholdMetric();
  if ((id.hctma & 1) == 0) {
    support.Report(sink, serial, "host_thermal_management",
                   "host controlled thermal management (feature 10h)", false,
                   "Identify Controller HCTMA bit 0 is clear");
    return Ok{};
  }
  auto r = ctrl.GetFeature(kFeatureHostThermalManagement, 0, 0);
  if (!r && !r.error().Unsupported()) return r.error();
  support.Report(sink, serial, "host_thermal_management",
                 "host controlled thermal management (feature 10h)",
                 r.ok(), r.ok() ? "" : r.error().message);
  if (r) {
    *hctm = DecodeHostThermalManagement(r->result);
    if (hctm->tmt1_k != 0) {
      AddSample(sink, serial, threshold, ThresholdCelsius(hctm->tmt1_k),
                {{"threshold", "tmt1"}});
    }
    if (hctm->tmt2_k != 0) {
      AddSample(sink, serial, threshold, ThresholdCelsius(hctm->tmt2_k),
                {{"threshold", "tmt2"}});
    }
  }
  // The range the host may set TMT1/TMT2 in; 0 = not reported.
  if (const auto c = units::KelvinToCelsius(id.mntmt_k)) {
    AddSample(sink, serial, threshold, *c, {{"threshold", "mntmt"}});
  }
  if (const auto c = units::KelvinToCelsius(id.mxtmt_k)) {
    AddSample(sink, serial, threshold, *c, {{"threshold", "mxtmt"}});
  }
  return Ok{};
}

}  // namespace

Status ThermalProbe::RunAdmin(Controller& ctrl, const ControllerInfo& info,
                              SampleSink& sink) {
  auto id = ReadIdentifyController(ctrl, info);
  if (!id) return id.error();
  auto log_bytes = ctrl.GetLogPage(kSmartLogId, kNsidAll, kSmartLogSize);
  if (!log_bytes) return log_bytes.error();
  auto log = DecodeSmartLog(*log_bytes);
  if (!log) return OnDevice(info, log.error());
  if (Status s = ExportSensorThresholds(ctrl, info.serial, *log, support_, sink); !s) {
    return s;
  }
  HostThermalManagement hctm;
  if (Status s = ExportHostThermalManagement(ctrl, info.serial, *id, support_, sink, &hctm);
      !s) {
    return s;
  }
  const ThermalObservation observation{
      .at = now_(),
      .tmt1_transitions = log->thermal_management_temp1_transitions,
      .tmt2_transitions = log->thermal_management_temp2_transitions,
      .tmt1_seconds = log->thermal_management_temp1_seconds,
      .tmt2_seconds = log->thermal_management_temp2_seconds,
      .composite_k = log->composite_temperature_k,
      .tmt1_k = hctm.tmt1_k,
      .tmt2_k = hctm.tmt2_k,
  };
  AddSample(sink, info.serial, kThermalThrottling, throttle_.Update(observation));
  return Ok{};
}

}  // namespace drivewatch
