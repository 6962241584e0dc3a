// SPDX-License-Identifier: Apache-2.0
// The health probe: Identify Controller, the SMART / Health log and Identify
// Namespace of every namespace, exported once per controller. The metrics
// and their sources are listed in health_probe.cc and docs/metrics-health.md.
#pragma once

#include <span>

#include "probes/probe.h"
#include "probes/sample_sink.h"

namespace drivewatch {

class HealthProbe : public DriveProbe {
 public:
  const char* name() const override { return "health"; }

  // Sends Identify Controller (CNS 01h), Get Log Page 02h with NSID
  // FFFFFFFFh, and Identify Namespace (CNS 00h) for each namespace in
  // `info`. Fails when Identify Controller or the SMART log cannot be read
  // or decoded, or when Identify reports a serial other than info.serial
  // (the device node now belongs to another drive, so nothing may be
  // recorded under the old serial). A namespace whose Identify fails or
  // does not decode loses only its own size samples and reports
  // drivewatch_namespace_identify_success 0; the controller data stands.
  Status Run(Controller& ctrl, const ControllerInfo& info,
             SampleSink& sink) override;

  // Every metric this probe can emit, for documentation and tests.
  static std::span<const MetricDesc* const> Metrics();

  // drivewatch_temperature_threshold_celsius. This probe publishes
  // threshold="wctemp"|"cctemp"; the thermal probe adds the others to the
  // same family through this descriptor.
  static const MetricDesc& TemperatureThresholdMetric();
};

}  // namespace drivewatch
