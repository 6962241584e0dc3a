// SPDX-License-Identifier: Apache-2.0
// The power probe: the power state descriptors, the power state the drive
// is in, and APST. How much power the drive draws (meter, the drive's own
// reading or a descriptor estimate, at load and idle) is the power draw
// probe's (power_draw_probe.h); the drive's own power readings (interval
// power, lifetime energy) are exported by the health probe.
// docs/metrics.md "Power probe" has the whole story.
#pragma once

#include <span>

#include "probes/feature_support.h"
#include "probes/probe.h"
#include "probes/sample_sink.h"

namespace drivewatch {

class PowerProbe : public DriveProbe {
 public:
  using LogFn = FeatureSupport::LogFn;

  // `log` defaults to info-level logging; tests replace it.
  explicit PowerProbe(LogFn log = {});

  const char* name() const override { return "power"; }

  // Sends Identify Controller (CNS 01h), Get Features 02h, and Get Features
  // 0Ch with a 256-byte buffer when Identify APSTA bit 0 is set. Fails when
  // Identify fails, when Identify reports another serial, or when a feature
  // command fails for a reason other than the controller not implementing
  // it.
  Status Run(Controller& ctrl, const ControllerInfo& info,
             SampleSink& sink) override;

  static std::span<const MetricDesc* const> Metrics();

 private:
  FeatureSupport support_;
};

}  // namespace drivewatch
