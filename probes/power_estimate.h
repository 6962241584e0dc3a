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
// The power probe feeds one sample per run and reports idle power from it;
// a workload that knows its own windows (the paced 10-IOPS reads of the
// latency probe) asks for the average over its window the same way.
#pragma once

#include <chrono>
#include <deque>
#include <optional>

#include "probes/identify.h"

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

class PowerEstimator {
 public:
  // Samples older than this (relative to the newest) are dropped.
  static constexpr std::chrono::hours kKeep{1};

  struct Estimate {
    double watts = 0;
    PowerSource source = PowerSource::kPsdEstimate;
    int samples = 0;
  };

  void Add(const PowerSample& sample);
  // The mean over the samples taken in [from, to], from the first source
  // of meter, drive, psd_estimate that every one of those samples has, so
  // one window never mixes sources. nullopt when the window holds no
  // sample or no source covers all of them.
  std::optional<Estimate> Average(std::chrono::steady_clock::time_point from,
                                  std::chrono::steady_clock::time_point to) const;

 private:
  std::deque<PowerSample> samples_;  // oldest first
};

}  // namespace drivewatch
