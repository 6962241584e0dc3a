// SPDX-License-Identifier: Apache-2.0
// The power draw probe: how much power a drive draws at drivewatch's
// 10-IOPS read load and when idle, each averaged over a window of steady
// load, from the best source (power_estimate.h): an external meter, the
// drive's own reading, or an estimate from the power state descriptors.
//
// Windows come from the read latency probe through the DriveLoadBoard
// (drive_load.h): a 10-IOPS window is a stretch in which drivewatch's
// readers of the drive read at 10 IOPS in total; an idle window one in
// which none reads. Inside such a window the probe samples every source
// once per run (it is scheduled every second, on the drive's own strand,
// so a slow meter never holds up a reader's pacing thread); when the load
// changes, it closes the window and reports its time-weighted average.
// Both kinds of window must also be free of other hosts' I/O: the SMART
// Host Read + Write Commands may move only by drivewatch's own reads. How
// this can be wrong: docs/metrics.md "Power at load and idle".
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "probes/drive/identify.h"
#include "probes/drive/smart_log.h"
#include "probes/latency/drive_load.h"
#include "probes/power_estimate.h"
#include "probes/power_meter.h"
#include "probes/probe.h"
#include "probes/sample_sink.h"

namespace drivewatch {

// One sample of the drive's own sources, as the probe takes them each
// second: the SMART Interval Power Measurement of `smart` (already read
// and decoded by the caller) and the PSD estimate of the power state Get
// Features 02h reports. The meter is the caller's. Fails when Get Features
// 02h fails other than as unsupported. The power-states heavy phase
// (aging/phases/power_states_phase.cc) samples through this too.
Expected<PowerSample> SampleDrivePower(Controller& ctrl, const IdentifyController& id,
                                       const SmartLog& smart,
                                       std::chrono::steady_clock::time_point at);

class PowerDrawProbe : public DriveProbe {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  using NowFn = std::function<TimePoint()>;
  using MeterFn = std::function<Expected<double>(const PowerMeterSpec&)>;
  using LogFn = std::function<void(std::string_view)>;

  // How often the scheduler runs the probe; with readers on the drive,
  // every run inside a window takes a sample.
  static constexpr std::chrono::seconds kTick{1};
  // The loaded window's rate: drivewatch's total reads per second.
  static constexpr std::uint32_t kLoadRate = 10;
  // Windows ended by a change of load that are shorter (a reader starting
  // a moment after another), or any with fewer than two samples, are not
  // reported.
  static constexpr std::chrono::seconds kMinWindow{2};
  // A window that lasts longer is reported and a new one begins.
  static constexpr std::chrono::hours kMaxWindow{1};

  // `load` may be null (collect --once): then every window is idle.
  // `now`, `read_meter` and `log` default to the steady clock,
  // ReadPowerMeter and info-level logging; tests replace them.
  explicit PowerDrawProbe(const DriveLoadBoard* load, NowFn now = {},
                          MeterFn read_meter = {}, LogFn log = {});

  const char* name() const override { return "power_draw"; }

  // The drive's external meter (or none), and how often to sample when
  // drivewatch has no reader on the drive ([probes.power] interval): then
  // the drive is idle all the time as far as drivewatch knows, and each
  // such interval is one window. Any thread; takes effect at the next run.
  // `at_load_max_age` ([probes.power] at_load_max_age): a power-at-load
  // figure whose window ended longer ago than this is no longer emitted,
  // with its window's duration and samples (the probe paused or off, or no
  // clean window since), rather than shown as current for ever.
  void Configure(std::optional<PowerMeterSpec> meter,
                 std::chrono::milliseconds unread_interval,
                 std::chrono::milliseconds at_load_max_age = std::chrono::minutes(15));

  // Reads the load state; inside a 10-IOPS or idle window, when a sample
  // is due, sends Get Log Page 02h and Get Features 02h (Identify
  // Controller once per window, for the descriptors) and reads the meter.
  // Emits the last reported windows. Fails when the SMART log or Identify
  // fails, when Identify reports another serial, or Get Features 02h fails
  // other than as unsupported. A failing meter does not fail the run.
  Status Run(Controller& ctrl, const ControllerInfo& info,
             SampleSink& sink) override;

  static std::span<const MetricDesc* const> Metrics();

 private:
  struct Window {
    std::uint32_t rate = 0;
    TimePoint since{};       // the board's, to notice a change
    TimePoint start{};       // this window's own start
    TimePoint seen{};        // last run that saw the same load
    TimePoint last_sample{};  // start of the run that took it (cadence)
    TimePoint last_sample_at{};  // when it was taken
    int readers = 0;
    PowerWindow power;
    // Host commands minus drivewatch's reads, at the first and last sample.
    unsigned __int128 other_first = 0;
    unsigned __int128 other_last = 0;
    std::optional<IdentifyController> id;
  };
  struct Result {
    PowerWindow::Estimate estimate;
    double seconds = 0;
    TimePoint ended{};  // when its window ended (at_load_max_age)
  };

  // Takes one sample into `w` for the run that began at `run`; false when
  // the load changed meanwhile.
  Expected<bool> Sample(Controller& ctrl, const ControllerInfo& info,
                        Window& w, const DriveLoadState& before, TimePoint run);
  // Reports `w`, ended at `end` by a change of load or by its length.
  void Close(const Window& w, TimePoint end, bool load_changed);
  // Run's steps. Closes the window when the load changed since the last
  // run, and opens one when the load is one a window is measured at.
  void FollowLoad(const DriveLoadState& load, TimePoint now);
  // Samples the open window when its cadence is due, and reports it once
  // it is full; an error leaves no window.
  Status SampleWindow(Controller& ctrl, const ControllerInfo& info,
                      const DriveLoadState& load, TimePoint now,
                      std::chrono::milliseconds unread_interval);
  // The last window of each rate, the window counts and the meter's state.
  void Export(const std::string& serial, TimePoint now,
              std::chrono::milliseconds at_load_max_age, SampleSink& sink);

  const DriveLoadBoard* load_;
  NowFn now_;
  MeterFn read_meter_;
  LogFn log_;

  std::optional<Window> window_;
  std::map<std::uint32_t, Result> last_;  // by rate; 0 is idle
  std::map<std::pair<std::uint32_t, std::string>, std::uint64_t> windows_;
  std::optional<bool> meter_ok_;  // the last reading's outcome
  bool meter_failing_ = false;

  std::mutex mu_;
  std::optional<PowerMeterSpec> meter_;           // mu_
  std::chrono::milliseconds unread_interval_{60'000};  // mu_
  std::chrono::milliseconds at_load_max_age_{std::chrono::minutes(15)};  // mu_
};

}  // namespace drivewatch
