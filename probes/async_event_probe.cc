// SPDX-License-Identifier: Apache-2.0
#include "probes/async_event_probe.h"

#include <cstdio>
#include <utility>

#include "config/util/text.h"
#include "probes/drive/features.h"

namespace drivewatch {
namespace {

constexpr MetricDesc kAsyncEventConfig{
    "drivewatch_async_event_smart_enabled_raw",
    "SMART / health critical warnings for which the controller sends an "
    "asynchronous event, as set after the last run (Asynchronous Event "
    "Configuration, feature 0Bh, bits 7:0; bit 1 is temperature). "
    "drivewatch sets them all; 0 means temperature and health changes are "
    "seen only at the next poll.",
    MetricType::kGauge};

const MetricDesc* const kAllMetrics[] = {&kAsyncEventConfig,
                                         &FeatureSupportedMetric()};

std::string Hex(std::uint32_t v) { return util::Hex(v, 0, "0x"); }

Error Degraded(Error error) {
  error.message +=
      "; cannot enable temperature and SMART asynchronous events, so "
      "temperature and health changes are seen at the next poll";
  return error;
}

}  // namespace

AsyncEventProbe::AsyncEventProbe(FeatureSupport::LogFn log)
    : support_(std::move(log)) {}

std::span<const MetricDesc* const> AsyncEventProbe::Metrics() {
  return kAllMetrics;
}

Status AsyncEventProbe::Run(Controller& ctrl, const ControllerInfo& info,
                            SampleSink& sink) {
  constexpr const char* kFeature = "async_event_config";
  constexpr const char* kDescription =
      "asynchronous event configuration (feature 0Bh)";
  auto current = ctrl.GetFeature(kFeatureAsyncEventConfig, 0, 0);
  if (!current) {
    if (!current.error().Unsupported()) return Degraded(current.error());
    support_.Report(sink, info.serial, kFeature, kDescription, false,
                    current.error().message);
    return Ok{};
  }
  std::uint32_t config = current->result;
  if ((config & kAsyncEventSmartMask) != kAsyncEventSmartMask) {
    auto set = ctrl.SetFeature(kFeatureAsyncEventConfig,
                               config | kAsyncEventSmartMask);
    if (!set && set.error().Unsupported() &&
        (config & kAsyncEventSmartMaskNvme10) != kAsyncEventSmartMaskNvme10) {
      set = ctrl.SetFeature(kFeatureAsyncEventConfig,
                            config | kAsyncEventSmartMaskNvme10);
    }
    if (!set) {
      if (!set.error().Unsupported()) return Degraded(set.error());
      support_.Report(sink, info.serial, kFeature, kDescription, false,
                      set.error().message + " when setting " +
                          Hex(config | kAsyncEventSmartMask));
      return Ok{};
    }
    auto after = ctrl.GetFeature(kFeatureAsyncEventConfig, 0, 0);
    if (!after) return Degraded(after.error());
    config = after->result;
  }
  support_.Report(sink, info.serial, kFeature, kDescription, true, "");
  sink.Add(kAsyncEventConfig, {{"serial", info.serial}},
           config & kAsyncEventSmartMask);
  return Ok{};
}

}  // namespace drivewatch
