// SPDX-License-Identifier: Apache-2.0
// Average drive power over a window, from the best source available, and
// labelled with that source so nobody mistakes an estimate for a
// measurement:
//   meter         an external meter configured for the drive (measured);
//   drive         the drive's own SMART Interval Power Measurement
//                 (measured by the drive, NVMe 2.x);
//   psd_estimate  the power state descriptor of the power state the drive
//                 was sampled in (Get Features 02h): its idle power (IDLP)
//                 when reported, else its maximum power (MP), an upper
//                 bound.
// The power draw probe (power_draw_probe.h) samples every source it has a
// few times per window and asks a PowerWindow for the time-weighted mean.
#pragma once

#include <chrono>
#include <optional>

#include "probes/drive/identify.h"

namespace drivewatch {

enum class PowerSource { kMeter, kDrive, kPsdEstimate };
// "meter", "drive", "psd_estimate": the `source` label.
const char* PowerSourceName(PowerSource source);

struct PowerSample {
  std::chrono::steady_clock::time_point at;
  std::optional<double> meter_watts;
  std::optional<double> drive_watts;
  std::optional<double> psd_watts;
};

// The PSD estimate for a drive sampled in `power_state`: IDLP when the
// descriptor reports it, else MP; nullopt when the state is out of range or
// reports neither.
std::optional<double> PsdIdleEstimateWatts(const IdentifyController& id,
                                           int power_state);

// One window's samples, averaged over time: each sample's readings hold
// from its time until the next sample, the last one's until the window's
// end (sample and hold), so an irregular sampling cadence does not weight
// the readings unevenly. Nothing before the first sample is assumed.
class PowerWindow {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  struct Estimate {
    double watts = 0;
    PowerSource source = PowerSource::kPsdEstimate;
    int samples = 0;
  };

  // Adds the next sample; samples come in time order.
  void Add(const PowerSample& sample);
  int samples() const { return n_; }
  // The newest sample; only when samples() > 0.
  const PowerSample& last() const { return last_; }
  // The time-weighted mean up to `end` (not before the last sample) from
  // the first source of meter, drive, psd_estimate that every sample has,
  // so one window never mixes sources. nullopt when the window holds no
  // sample or no source covers all of them. With one sample, or all at
  // one instant, the plain mean.
  std::optional<Estimate> Average(TimePoint end) const;

 private:
  struct Sum {
    double weighted = 0;  // watt-seconds
    double plain = 0;     // watts
    int n = 0;
  };
  static void Credit(Sum& sum, const std::optional<double>& watts,
                     double seconds);

  int n_ = 0;
  PowerSample last_{};
  TimePoint first_{};
  Sum meter_, drive_, psd_;  // over [first_, last_.at)
};

}  // namespace drivewatch
