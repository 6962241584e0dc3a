// SPDX-License-Identifier: Apache-2.0
// A light probe: one measurement of one controller, run by the scheduler.
// Each probe's whole story lives in its own file (health_probe.cc, ...).
#pragma once

#include <chrono>
#include <functional>

#include "config/util/expected.h"
#include "probes/drive/drive_layer.h"
#include "probes/sample_sink.h"

namespace drivewatch {

class DriveProbe {
 public:
  virtual ~DriveProbe() = default;
  // Stable name used in the config ([probes.NAME]) and in the `probe` label.
  virtual const char* name() const = 0;
  // Measures `ctrl` once and writes samples into `sink`. Every per-drive
  // sample carries the label serial=info.serial. On error the caller drops
  // whatever this run wrote and reports drivewatch_probe_success 0, so a
  // probe never has to clean up after itself.
  virtual Status Run(Controller& ctrl, const ControllerInfo& info,
                     SampleSink& sink) = 0;
  // The wall clock for probes that stamp what they see (tests and the
  // golden run pass a fake); the monitor sets it once, before any Run.
  using WallClock = std::function<std::chrono::system_clock::time_point()>;
  virtual void SetWallClock(WallClock /*now*/) {}
  // Called once when the daemon stops (SIGTERM), on the drive's controller,
  // after the last Run. Most probes have nothing to undo.
  virtual void Stop(Controller& /*ctrl*/, const ControllerInfo& /*info*/) {}
};

}  // namespace drivewatch
