// The power probe: the power state descriptors, the power state the drive
// is in, APST, an optional external meter, and the drive's idle power from
// the best source (power_estimate.h). The drive's own power readings
// (interval power, lifetime energy) are exported by the health probe; this
// probe only uses them as a source. docs/metrics.md "Power probe" has the
// whole story.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <span>

#include "probes/feature_support.h"
#include "probes/power_estimate.h"
#include "probes/power_meter.h"
#include "probes/probe.h"
#include "probes/sample_sink.h"

namespace drivewatch {

class PowerProbe : public DriveProbe {
 public:
  using NowFn = std::function<std::chrono::steady_clock::time_point()>;
  using MeterFn = std::function<Expected<double>(const PowerMeterSpec&)>;
  using LogFn = FeatureSupport::LogFn;

  // `now`, `read_meter` and `log` default to the steady clock,
  // ReadPowerMeter and info-level logging; tests replace them.
  explicit PowerProbe(NowFn now = {}, MeterFn read_meter = {}, LogFn log = {});

  const char* name() const override { return "power"; }

  // The external meter for this drive, or none. May be called from any
  // thread (a config reload) while Run is in progress; takes effect at the
  // next run.
  void SetMeter(std::optional<PowerMeterSpec> meter);

  // Sends Identify Controller (CNS 01h), Get Features 02h, Get Features 0Ch
  // with a 256-byte buffer when Identify APSTA bit 0 is set, and Get Log
  // Page 02h; reads the meter when one is configured. Fails when Identify or
  // the SMART log fails, when Identify reports another serial, or when a
  // feature command fails for a reason other than the controller not
  // implementing it. A failing meter does not fail the run: it reports
  // drivewatch_power_meter_success 0, is logged once until it recovers, and
  // idle power falls back to the next source.
  Status Run(Controller& ctrl, const ControllerInfo& info,
             SampleSink& sink) override;

  static std::span<const MetricDesc* const> Metrics();

 private:
  NowFn now_;
  MeterFn read_meter_;
  LogFn log_;
  FeatureSupport support_;
  PowerEstimator estimator_;
  bool meter_failing_ = false;
  // Host Read + Write Commands at the previous run, to tell an idle
  // interval from a busy one.
  std::optional<unsigned __int128> last_host_commands_;

  std::mutex meter_mu_;
  std::optional<PowerMeterSpec> meter_;  // guarded by meter_mu_
};

}  // namespace drivewatch
