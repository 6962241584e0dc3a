// SPDX-License-Identifier: Apache-2.0
// The async_events probe keeps the SMART / health asynchronous events of a
// controller switched on, so that a temperature threshold crossing or a new
// critical warning reaches drivewatch at once (through the kernel's NVME_AEN
// uevent, see exporter/async_events.h) instead of at the next poll.
//
// The kernel enables only notice events (Asynchronous Event Configuration,
// feature 0Bh, bits 8 and up) and rewrites the feature on every controller
// reset, so this probe reads the feature on each run and sets bits 7:0 again
// when they are missing. It runs on the thermal probe's interval, and only
// when [probes.thermal] async_events is true.
#pragma once

#include <span>

#include "probes/feature_support.h"
#include "probes/probe.h"

namespace drivewatch {

class AsyncEventProbe : public DriveProbe {
 public:
  explicit AsyncEventProbe(FeatureSupport::LogFn log = {});

  const char* name() const override { return "async_events"; }

  // Get Features 0Bh; when bits 7:0 are not all set, Set Features 0Bh with
  // them added (falling back to bits 4:0, the warnings NVMe 1.0 defines, if
  // the controller rejects the rest as reserved) and Get Features again to
  // check. A controller that rejects the feature reports
  // drivewatch_feature_supported{feature="async_event_config"} 0 and the
  // probe succeeds. Any other failure, e.g. EPERM without CAP_SYS_ADMIN,
  // fails the run with a message saying that temperature and health
  // changes now wait for the next poll.
  Status Run(Controller& ctrl, const ControllerInfo& info,
             SampleSink& sink) override;

  static std::span<const MetricDesc* const> Metrics();

 private:
  FeatureSupport support_;
};

}  // namespace drivewatch
