// SPDX-License-Identifier: Apache-2.0
// Every metric the power draw probe emits is defined here. Window series
// carry rate="10" (the loaded window) or rate="0" (idle).
#include "probes/power_draw_probe.h"

#include <cerrno>

#include "config/util/log.h"
#include "probes/drive/features.h"
#include "probes/drive/smart_log.h"

namespace drivewatch {
namespace {

constexpr MetricType kGauge = MetricType::kGauge;

constexpr MetricDesc kAtLoad{
    "drivewatch_power_at_load_watts",
    "Average drive power in watts over the last window in which drivewatch's "
    "read latency probe read the drive at `rate` IOPS in total and no other "
    "host I/O reached it, time-weighted over samples taken every second, "
    "from the best source: source=meter (external meter), drive (SMART "
    "Interval Power Measurement) or psd_estimate (idle power, else max "
    "power, of the power state read by Get Features 02h; an estimate, an "
    "upper bound when only max power is known). Absent once no window has "
    "been measured for [probes.power] at_load_max_age.",
    kGauge};
constexpr MetricDesc kIdle{
    "drivewatch_idle_power_watts",
    "Average drive power in watts over the last window in which drivewatch "
    "read nothing from the drive and no other host I/O reached it (SMART "
    "Host Read + Write Commands unchanged), from the best source: "
    "source=meter, drive or psd_estimate, as for "
    "drivewatch_power_at_load_watts.",
    kGauge};
constexpr MetricDesc kWindowSeconds{
    "drivewatch_power_window_duration_seconds",
    "Length of the last reported power window, by rate (0 = idle).", kGauge};
constexpr MetricDesc kWindowSamples{
    "drivewatch_power_window_samples",
    "Power samples the last reported window's average rests on, by rate "
    "(0 = idle).",
    kGauge};
constexpr MetricDesc kWindows{
    "drivewatch_power_windows_total",
    "Power windows that ended, by rate (0 = idle) and result: reported; "
    "host_io (the SMART host command counters moved by more than "
    "drivewatch's own reads); too_short (under 2 samples, or a load that "
    "lasted under 2 s); "
    "no_source (no source covered every sample).",
    MetricType::kCounter};
constexpr MetricDesc kMeterSuccess{
    "drivewatch_power_meter_success",
    "1 if the external power meter configured for the drive "
    "([[probes.power.meters]]) gave a valid reading the last time it was "
    "read, else 0. Only present when a meter is configured.",
    kGauge};

const MetricDesc* const kAllMetrics[] = {
    &kAtLoad, &kIdle, &kWindowSeconds, &kWindowSamples, &kWindows,
    &kMeterSuccess,
};

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace

Expected<PowerSample> SampleDrivePower(Controller& ctrl, const IdentifyController& id,
                                       const SmartLog& smart,
                                       std::chrono::steady_clock::time_point at) {
  PowerSample sample{.at = at};
  sample.drive_watts = smart.IntervalPowerWatts();
  auto pm = ctrl.GetFeature(kFeaturePowerManagement, 0, 0);
  if (!pm && !pm.error().Unsupported()) return pm.error();
  if (pm) {
    sample.psd_watts = PsdIdleEstimateWatts(
        id, DecodePowerManagement(pm->result).power_state);
  }
  return sample;
}

PowerDrawProbe::PowerDrawProbe(const DriveLoadBoard* load, NowFn now,
                               MeterFn read_meter, LogFn log)
    : load_(load),
      now_(std::move(now)),
      read_meter_(std::move(read_meter)),
      log_(std::move(log)) {
  if (!now_) now_ = [] { return std::chrono::steady_clock::now(); };
  if (!read_meter_) read_meter_ = ReadPowerMeter;
  if (!log_) log_ = [](std::string_view line) { log::Info(line); };
}

void PowerDrawProbe::Configure(std::optional<PowerMeterSpec> meter,
                               std::chrono::milliseconds unread_interval,
                               std::chrono::milliseconds at_load_max_age) {
  std::lock_guard lock(mu_);
  meter_ = std::move(meter);
  unread_interval_ = unread_interval;
  at_load_max_age_ = at_load_max_age;
}

std::span<const MetricDesc* const> PowerDrawProbe::Metrics() {
  return kAllMetrics;
}

Expected<bool> PowerDrawProbe::Sample(Controller& ctrl,
                                      const ControllerInfo& info, Window& w,
                                      const DriveLoadState& before,
                                      TimePoint run) {
  if (!w.id) {
    auto id = ReadIdentifyController(ctrl, info);
    if (!id) return id.error();
    w.id = std::move(*id);
  }
  auto log_bytes = ctrl.GetLogPage(kSmartLogId, kNsidAll, kSmartLogSize);
  if (!log_bytes) return log_bytes.error();
  // Our reads are counted after the log is read, so a read that completes
  // in between is in both.
  const DriveLoadState after = load_ ? load_->State(info.serial) : before;
  if (after.rate != before.rate || after.since != before.since) return false;
  auto smart = DecodeSmartLog(*log_bytes);
  if (!smart) return smart.error();

  auto drive = SampleDrivePower(ctrl, *w.id, *smart, now_());
  if (!drive) return drive.error();
  PowerSample sample = *drive;
  std::optional<PowerMeterSpec> meter;
  {
    std::lock_guard lock(mu_);
    meter = meter_;
  }
  if (meter) {
    auto watts = read_meter_(*meter);
    meter_ok_ = watts.ok();
    if (watts) {
      sample.meter_watts = *watts;
      if (meter_failing_) {
        log_("power meter of drive serial=" + info.serial + " works again");
      }
      meter_failing_ = false;
    } else {
      if (!meter_failing_) {
        log_("power meter of drive serial=" + info.serial + " failed: " +
             watts.error().message +
             "; power falls back to the drive's own reading or the power "
             "state estimate (logged once until it recovers)");
      }
      meter_failing_ = true;
    }
  }

  const unsigned __int128 other =
      smart->host_read_commands + smart->host_write_commands - after.reads;
  if (w.power.samples() == 0) w.other_first = other;
  w.other_last = other;
  w.last_sample = run;
  w.last_sample_at = sample.at;
  w.power.Add(sample);
  return true;
}

void PowerDrawProbe::Close(const Window& w, TimePoint end, bool load_changed) {
  std::string result = "reported";
  // While reading, a read the drive has completed but the reader has not
  // yet counted may be in the log: up to one per reader (QD1). A reader
  // counts its last read before it stops, so an idle window has no slack.
  const auto moved = static_cast<__int128>(w.other_last - w.other_first);
  const __int128 slack = w.rate == 0 ? 0 : w.readers;
  const auto estimate = w.power.Average(end);
  if (w.power.samples() < 2 || (load_changed && end - w.start < kMinWindow)) {
    result = "too_short";
  } else if (moved > slack || moved < -slack) {
    result = "host_io";
  } else if (!estimate) {
    result = "no_source";
  } else {
    last_[w.rate] = Result{*estimate, Seconds(end - w.start), end};
  }
  ++windows_[{w.rate, result}];
}

void PowerDrawProbe::FollowLoad(const DriveLoadState& load, TimePoint now) {
  if (window_) {
    if (load.rate != window_->rate || load.since != window_->since ||
        load.readers != window_->readers) {
      // The load changed at some point after the last run that saw it.
      Close(*window_, window_->seen, /*load_changed=*/true);
      window_.reset();
    } else {
      window_->seen = now;
    }
  }
  if ((load.rate == 0 || load.rate == kLoadRate) && !window_) {
    window_ = Window{};  // not emplace(): clang 14 sees Window as incomplete there
    window_->rate = load.rate;
    window_->since = load.since;
    window_->readers = load.readers;
    // A window begins when the load did, unless that was before this
    // probe could see it.
    window_->start = load.since > TimePoint{} && load.since <= now ? load.since : now;
    window_->seen = now;
  }
}

Status PowerDrawProbe::SampleWindow(Controller& ctrl, const ControllerInfo& info,
                                    const DriveLoadState& load, TimePoint now,
                                    std::chrono::milliseconds unread_interval) {
  const auto cadence = load.readers > 0
                           ? std::chrono::steady_clock::duration(kTick)
                           : std::chrono::steady_clock::duration(unread_interval);
  if (window_->power.samples() != 0 &&
      now - window_->last_sample < cadence - std::chrono::milliseconds(kTick) / 2) {
    return Ok{};
  }
  auto taken = Sample(ctrl, info, *window_, load, now);
  if (!taken) {
    window_.reset();  // a gap in the samples: start over
    return taken.error();
  }
  const bool full = load.readers == 0 ? window_->power.samples() >= 2
                                      : now - window_->start >= kMaxWindow;
  if (*taken && full) {
    // Report it, and go on with its last sample as the next one's first.
    Window next;
    next.rate = window_->rate;
    next.since = window_->since;
    next.readers = window_->readers;
    next.start = window_->last_sample_at;
    next.seen = now;
    next.last_sample = window_->last_sample;
    next.last_sample_at = window_->last_sample_at;
    next.other_first = next.other_last = window_->other_last;
    next.power.Add(window_->power.last());
    Close(*window_, window_->last_sample_at, /*load_changed=*/false);
    window_ = std::move(next);
  }
  return Ok{};
}

void PowerDrawProbe::Export(const std::string& serial_number, TimePoint now,
                            std::chrono::milliseconds at_load_max_age, SampleSink& sink) {
  const Labels serial = {{"serial", serial_number}};
  auto with = [&](Labels extra) {
    Labels labels = serial;
    for (auto& l : extra) labels.push_back(std::move(l));
    return labels;
  };
  // A power at load not measured again within at_load_max_age expires.
  std::erase_if(last_, [&](const auto& entry) {
    return entry.first != 0 && now - entry.second.ended > at_load_max_age;
  });
  for (const auto& [rate, r] : last_) {
    const Labels by_rate = with({{"rate", std::to_string(rate)}});
    const Labels source = {{"source", PowerSourceName(r.estimate.source)}};
    if (rate == 0) {
      sink.Add(kIdle, with(source), r.estimate.watts);
    } else {
      Labels labels = by_rate;
      labels.push_back(source.front());
      sink.Add(kAtLoad, std::move(labels), r.estimate.watts);
    }
    sink.Add(kWindowSeconds, by_rate, r.seconds);
    sink.Add(kWindowSamples, by_rate, r.estimate.samples);
  }
  for (const auto& [key, n] : windows_) {
    sink.Add(kWindows,
             with({{"rate", std::to_string(key.first)}, {"result", key.second}}),
             static_cast<double>(n));
  }
  if (meter_ok_) sink.Add(kMeterSuccess, serial, *meter_ok_ ? 1 : 0);
}

Status PowerDrawProbe::Run(Controller& ctrl, const ControllerInfo& info,
                           SampleSink& sink) {
  const TimePoint now = now_();
  const DriveLoadState load = load_ ? load_->State(info.serial) : DriveLoadState{};
  std::chrono::milliseconds unread_interval, at_load_max_age;
  {
    std::lock_guard lock(mu_);
    unread_interval = unread_interval_;
    at_load_max_age = at_load_max_age_;
    if (!meter_) meter_ok_.reset();
  }
  FollowLoad(load, now);
  if (load.rate == 0 || load.rate == kLoadRate) {
    if (Status s = SampleWindow(ctrl, info, load, now, unread_interval); !s) return s;
  }
  Export(info.serial, now, at_load_max_age, sink);
  return Ok{};
}

}  // namespace drivewatch
