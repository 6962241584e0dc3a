// SPDX-License-Identifier: Apache-2.0
// The ocp_smart probe: the OCP SMART / Health Information Extended log
// (C0h) of drives built to the OCP Datacenter NVMe SSD specification,
// exported in base units with `serial` (docs/metrics.md "OCP SMART
// extended probe"). Physical media written over host data written is the
// drive's write amplification (recording rule drivewatch:write_amplification).
#pragma once

#include <span>

#include "probes/feature_support.h"
#include "probes/probe.h"

namespace drivewatch {

class OcpSmartProbe : public DriveProbe {
 public:
  explicit OcpSmartProbe(FeatureSupport::LogFn log = {});

  const char* name() const override { return "ocp_smart"; }

  // Identify Controller (checking the serial), the UUID List where CTRATT
  // bit 9 says there is one, then Get Log Page C0h with the OCP UUID's
  // index. A controller that refuses the log, or answers with a page whose
  // GUID or version is not the OCP one drivewatch decodes, reports
  // drivewatch_feature_supported{feature="ocp_smart_extended"} 0 (logged
  // once) and the probe succeeds. Any other failure fails the run.
  Status Run(Controller& ctrl, const ControllerInfo& info,
             SampleSink& sink) override;

  static std::span<const MetricDesc* const> Metrics();

 private:
  FeatureSupport support_;
};

}  // namespace drivewatch
