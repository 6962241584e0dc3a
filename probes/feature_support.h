// SPDX-License-Identifier: Apache-2.0
// Which optional features a drive implements, as the probes find out, and
// the one log line each finding deserves. A feature a drive lacks (QEMU has
// neither APST nor host controlled thermal management) is a fact about the
// drive, not a failure: the probe still succeeds, exports
// drivewatch_feature_supported{feature=...} 0, and says so once per drive
// instead of on every poll.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "probes/sample_sink.h"

namespace drivewatch {

// drivewatch_feature_supported: one series per feature a probe looks at.
// Each feature belongs to exactly one probe, so no series is published twice.
const MetricDesc& FeatureSupportedMetric();

// Per-drive memory of the last finding per feature. Owned by a probe
// instance (one per drive), used only on that drive's strand.
class FeatureSupport {
 public:
  using LogFn = std::function<void(std::string_view)>;
  // `log` receives each line; the default writes at info level.
  explicit FeatureSupport(LogFn log = {});

  // Records a finding for `feature` ("apst", ...) on the drive `serial`,
  // and writes it into `sink`. Logs when a feature is first found missing
  // and when it comes back (a firmware update); never twice in a row for
  // the same finding. `why` says how it was decided, e.g. "Identify APSTA
  // bit 0 is clear" or the controller's status.
  void Report(SampleSink& sink, const std::string& serial,
              std::string_view feature, std::string_view description,
              bool supported, std::string_view why);

 private:
  LogFn log_;
  std::map<std::string, bool, std::less<>> last_;
};

}  // namespace drivewatch
