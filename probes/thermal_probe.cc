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

#include "probes/features.h"
#include "probes/health_probe.h"
#include "probes/identify.h"
#include "probes/smart_log.h"
#include "probes/units.h"

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

const MetricDesc* const kAllMetrics[] = {
    &HealthProbe::TemperatureThresholdMetric(),
    &kThermalThrottling,
    &FeatureSupportedMetric(),
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

ThermalProbe::ThermalProbe(NowFn now, FeatureSupport::LogFn log)
    : now_(std::move(now)), support_(std::move(log)) {
  if (!now_) now_ = [] { return std::chrono::steady_clock::now(); };
}

std::span<const MetricDesc* const> ThermalProbe::Metrics() {
  return kAllMetrics;
}

Status ThermalProbe::Run(Controller& ctrl, const ControllerInfo& info,
                         SampleSink& sink) {
  auto id = ReadIdentifyController(ctrl, info);
  if (!id) return id.error();
  auto log_bytes = ctrl.GetLogPage(kSmartLogId, kNsidAll, kSmartLogSize);
  if (!log_bytes) return log_bytes.error();
  auto log = DecodeSmartLog(*log_bytes);
  if (!log) return OnDevice(info, log.error());

  const MetricDesc& threshold = HealthProbe::TemperatureThresholdMetric();
  auto add = [&](const MetricDesc& desc, double value, Labels extra = {}) {
    Labels labels{{"serial", info.serial}};
    for (auto& label : extra) labels.push_back(std::move(label));
    sink.Add(desc, std::move(labels), value);
  };

  // Feature 04h, per sensor the SMART log reports (NVMe 2.0 §5.27.1.4: a
  // sensor that is not implemented reads 0 there).
  std::vector<int> sensors = {kCompositeSensor};
  for (std::size_t i = 0; i < log->temperature_sensors_k.size(); ++i) {
    if (log->temperature_sensors_k[i] != 0) {
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
      add(threshold, ThresholdCelsius(DecodeTemperatureThresholdKelvin(r->result)),
          {{"threshold", type == ThresholdType::kOver ? "over" : "under"},
           {"sensor", sensor == kCompositeSensor ? "composite"
                                                 : std::to_string(sensor)}});
    }
    if (!thresholds_supported) break;
  }
  support_.Report(sink, info.serial, "temperature_threshold",
                  "temperature thresholds (feature 04h)", thresholds_supported,
                  why);

  // Host controlled thermal management: Identify HCTMA bit 0, feature 10h.
  HostThermalManagement hctm;
  if ((id->hctma & 1) == 0) {
    support_.Report(sink, info.serial, "host_thermal_management",
                    "host controlled thermal management (feature 10h)", false,
                    "Identify Controller HCTMA bit 0 is clear");
  } else {
    auto r = ctrl.GetFeature(kFeatureHostThermalManagement, 0, 0);
    if (!r && !r.error().Unsupported()) return r.error();
    support_.Report(sink, info.serial, "host_thermal_management",
                    "host controlled thermal management (feature 10h)",
                    r.ok(), r.ok() ? "" : r.error().message);
    if (r) {
      hctm = DecodeHostThermalManagement(r->result);
      if (hctm.tmt1_k != 0) {
        add(threshold, ThresholdCelsius(hctm.tmt1_k), {{"threshold", "tmt1"}});
      }
      if (hctm.tmt2_k != 0) {
        add(threshold, ThresholdCelsius(hctm.tmt2_k), {{"threshold", "tmt2"}});
      }
    }
    // The range the host may set TMT1/TMT2 in; 0 = not reported.
    if (const auto c = units::KelvinToCelsius(id->mntmt_k)) {
      add(threshold, *c, {{"threshold", "mntmt"}});
    }
    if (const auto c = units::KelvinToCelsius(id->mxtmt_k)) {
      add(threshold, *c, {{"threshold", "mxtmt"}});
    }
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
  add(kThermalThrottling, throttle_.Update(observation));
  return Ok{};
}

}  // namespace drivewatch
