// SPDX-License-Identifier: Apache-2.0
#include "probes/power_estimate.h"

#include <algorithm>

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

void PowerWindow::Credit(Sum& sum, const std::optional<double>& watts,
                         double seconds) {
  if (!watts) return;
  sum.weighted += *watts * seconds;
  sum.plain += *watts;
  ++sum.n;
}

void PowerWindow::Add(const PowerSample& sample) {
  if (n_ == 0) {
    first_ = sample.at;
  } else {
    const double held =
        std::chrono::duration<double>(sample.at - last_.at).count();
    Credit(meter_, last_.meter_watts, held);
    Credit(drive_, last_.drive_watts, held);
    Credit(psd_, last_.psd_watts, held);
  }
  last_ = sample;
  ++n_;
}

std::optional<PowerWindow::Estimate> PowerWindow::Average(TimePoint end) const {
  if (n_ == 0) return std::nullopt;
  const double held =
      std::max(0.0, std::chrono::duration<double>(end - last_.at).count());
  const double span = std::chrono::duration<double>(last_.at - first_).count() + held;
  Sum meter = meter_, drive = drive_, psd = psd_;
  Credit(meter, last_.meter_watts, held);
  Credit(drive, last_.drive_watts, held);
  Credit(psd, last_.psd_watts, held);
  const std::pair<const Sum*, PowerSource> order[] = {
      {&meter, PowerSource::kMeter},
      {&drive, PowerSource::kDrive},
      {&psd, PowerSource::kPsdEstimate}};
  for (const auto& [sum, source] : order) {
    if (sum->n != n_) continue;
    const double watts = span > 0 ? sum->weighted / span : sum->plain / n_;
    return Estimate{watts, source, n_};
  }
  return std::nullopt;
}

}  // namespace drivewatch
