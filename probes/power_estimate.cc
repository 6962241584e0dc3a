#include "probes/power_estimate.h"

namespace drivewatch {

const char* PowerSourceName(PowerSource source) {
  switch (source) {
    case PowerSource::kMeter: return "meter";
    case PowerSource::kDrive: return "drive";
    case PowerSource::kPsdEstimate: return "psd_estimate";
  }
  return "psd_estimate";
}

std::optional<double> PsdIdleEstimateWatts(const IdentifyController& id,
                                           int power_state) {
  if (power_state < 0 || power_state >= id.PowerStateCount()) {
    return std::nullopt;
  }
  const PowerStateDescriptor& ps = id.power_states[power_state];
  if (const auto idle = ps.IdlePowerWatts()) return idle;
  return ps.MaxPowerWatts();
}

void PowerEstimator::Add(const PowerSample& sample) {
  samples_.push_back(sample);
  while (!samples_.empty() && sample.at - samples_.front().at > kKeep) {
    samples_.pop_front();
  }
}

std::optional<PowerEstimator::Estimate> PowerEstimator::Average(
    std::chrono::steady_clock::time_point from,
    std::chrono::steady_clock::time_point to) const {
  struct Sum {
    double watts = 0;
    int n = 0;
  };
  Sum meter, drive, psd;
  int n = 0;
  for (const PowerSample& s : samples_) {
    if (s.at < from || s.at > to) continue;
    ++n;
    if (s.meter_watts) meter = {meter.watts + *s.meter_watts, meter.n + 1};
    if (s.drive_watts) drive = {drive.watts + *s.drive_watts, drive.n + 1};
    if (s.psd_watts) psd = {psd.watts + *s.psd_watts, psd.n + 1};
  }
  if (n == 0) return std::nullopt;
  const std::pair<const Sum*, PowerSource> order[] = {
      {&meter, PowerSource::kMeter},
      {&drive, PowerSource::kDrive},
      {&psd, PowerSource::kPsdEstimate}};
  for (const auto& [sum, source] : order) {
    if (sum->n == n) return Estimate{sum->watts / n, source, n};
  }
  return std::nullopt;
}

}  // namespace drivewatch
