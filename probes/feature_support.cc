// SPDX-License-Identifier: Apache-2.0
#include "probes/feature_support.h"

#include <utility>

#include "config/util/log.h"

namespace drivewatch {
namespace {

constexpr MetricDesc kFeatureSupported{
    "drivewatch_feature_supported",
    "1 if the drive implements the optional feature, 0 if not (decided from "
    "Identify Controller or from the controller rejecting the Get Features "
    "command as invalid): feature=temperature_threshold (04h), "
    "host_thermal_management (10h), power_management (02h), apst (0Ch), "
    "async_event_config (0Bh), self_test (opcode 14h), persistent_event_log "
    "(0Dh), ocp_smart_extended (OCP log C0h). A missing feature is logged once per drive.",
    MetricType::kGauge};

}  // namespace

const MetricDesc& FeatureSupportedMetric() { return kFeatureSupported; }

FeatureSupport::FeatureSupport(LogFn log) : log_(std::move(log)) {
  if (!log_) log_ = [](std::string_view line) { log::Info(line); };
}

void FeatureSupport::Report(SampleSink& sink, const std::string& serial,
                            std::string_view feature,
                            std::string_view description, bool supported,
                            std::string_view why) {
  sink.Add(kFeatureSupported,
           {{"serial", serial}, {"feature", std::string(feature)}},
           supported ? 1 : 0);
  auto it = last_.find(feature);
  const bool first = it == last_.end();
  if (first) it = last_.emplace(std::string(feature), supported).first;
  if (!first && it->second == supported) return;
  it->second = supported;
  if (!supported) {
    log_("drive serial=" + serial + " does not support " +
         std::string(description) + " (" + std::string(why) +
         "); reporting drivewatch_feature_supported{feature=\"" +
         std::string(feature) + "\"} 0 and not logging it again");
  } else if (!first) {
    log_("drive serial=" + serial + " now supports " +
         std::string(description));
  }
}

}  // namespace drivewatch
