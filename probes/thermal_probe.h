// SPDX-License-Identifier: Apache-2.0
// The thermal probe: every temperature threshold a controller has (the
// feature-04h over/under thresholds per sensor, host controlled thermal
// management TMT1/TMT2 and its MNTMT/MXTMT range) and whether the drive is
// throttling now. WCTEMP/CCTEMP, the temperatures and the thermal counters
// come from the health probe; this probe adds to the same metrics without
// repeating a series. docs/metrics.md "Thermal probe" tells the whole story.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <span>
#include <string>

#include "probes/feature_support.h"
#include "probes/probe.h"
#include "probes/sample_sink.h"

namespace drivewatch {

// What one poll saw, for the throttle derivation.
struct ThermalObservation {
  std::chrono::steady_clock::time_point at;
  // SMART log bytes 231:216; they stop at 2^32-1.
  std::uint32_t tmt1_transitions = 0;
  std::uint32_t tmt2_transitions = 0;
  std::uint32_t tmt1_seconds = 0;
  std::uint32_t tmt2_seconds = 0;
  std::uint16_t composite_k = 0;  // 0 = not reported
  // Feature 10h; both 0 when host controlled thermal management is off or
  // not supported.
  std::uint16_t tmt1_k = 0;
  std::uint16_t tmt2_k = 0;
};

// Derives drivewatch_thermal_throttling, the highest host controlled thermal
// management level (0 none, 1 TMT1, 2 TMT2) in force, as the larger of:
//  - counters: the TMT2 (else TMT1) time or transition counter grew since
//    a baseline poll at least kWindow old (or the oldest poll kept, when
//    none is that old yet). Comparing with a poll a full window back, not
//    just the previous one, keeps an extra poll (an AEN-triggered run a
//    second after a scheduled one) from reading "no change" off counters
//    the drive updates only about once a minute;
//  - temperature: thermal management is active (TMT1 or TMT2 set) and the
//    composite temperature is at or above TMT2 (else TMT1).
// A counter that went backwards (a replaced or reset drive) drops the
// history. docs/metrics.md lists how this can be wrong.
class ThrottleTracker {
 public:
  static constexpr std::chrono::seconds kWindow{60};

  int Update(const ThermalObservation& now);

 private:
  std::deque<ThermalObservation> history_;  // oldest first
};

class ThermalProbe : public DriveProbe {
 public:
  using NowFn = std::function<std::chrono::steady_clock::time_point()>;
  // `now` is the monotonic clock the throttle derivation uses (tests pass
  // a fake clock's); `log` receives the once-per-drive feature findings and
  // the admin-passthrough warning (default: the log at info and warn
  // level); `sysfs_root` is where the hwmon fallback looks (tests pass a
  // fixture tree).
  explicit ThermalProbe(NowFn now = {}, FeatureSupport::LogFn log = {},
                        std::string sysfs_root = "/sys");

  const char* name() const override { return "thermal"; }

  // Sends Identify Controller (CNS 01h), Get Log Page 02h, Get Features 04h
  // for the over and under threshold of the composite and of each sensor
  // the SMART log reports (non-zero), and Get Features 10h when Identify
  // HCTMA bit 0 is set. Fails when Identify or the SMART log fails, when
  // Identify reports another serial, or when a feature command fails for a
  // reason other than the controller not implementing it.
  //
  // When the kernel refuses admin passthrough (EACCES/EPERM: no
  // CAP_SYS_ADMIN on Linux 6.1) the probe instead reads the kernel's hwmon
  // device (probes/drive/hwmon.h), exports drivewatch_hwmon_temperature_celsius,
  // drivewatch_hwmon_temperature_threshold_celsius and
  // drivewatch_admin_commands_permitted 0, logs one warning per drive, and
  // succeeds; it fails only when hwmon cannot be read either. Every
  // successful admin run exports drivewatch_admin_commands_permitted 1.
  Status Run(Controller& ctrl, const ControllerInfo& info,
             SampleSink& sink) override;

  // Every metric this probe can emit, for documentation and tests.
  static std::span<const MetricDesc* const> Metrics();

 private:
  Status RunAdmin(Controller& ctrl, const ControllerInfo& info,
                  SampleSink& sink);
  Status RunFromHwmon(const ControllerInfo& info, const Error& denied,
                      SampleSink& sink);

  NowFn now_;
  FeatureSupport::LogFn log_;
  std::string sysfs_root_;
  bool denied_ = false;  // last run found admin passthrough refused
  FeatureSupport support_;
  ThrottleTracker throttle_;
};

}  // namespace drivewatch
