// SPDX-License-Identifier: Apache-2.0
// Every metric the power probe emits is defined here, with the spec field it
// comes from. Power state samples carry power_state="0".."31".
#include "probes/power_probe.h"

#include <cerrno>
#include <string>
#include <utility>

#include "config/util/log.h"
#include "probes/drive/features.h"
#include "probes/drive/identify.h"

namespace drivewatch {
namespace {

constexpr MetricType kGauge = MetricType::kGauge;

// --- Power State Descriptors (Identify Controller bytes 3071:2048) ---

constexpr MetricDesc kPsMaxPower{
    "drivewatch_power_state_max_power_watts",
    "Maximum power the controller draws in the power state, in watts "
    "(power state descriptor MP, in 0.01 W units or 0.0001 W when MXPS is "
    "set). Only present when reported (non-zero).",
    kGauge};
constexpr MetricDesc kPsIdlePower{
    "drivewatch_power_state_idle_power_watts",
    "Typical power when idle in the power state, in watts (power state "
    "descriptor IDLP x IPS). Only present when reported.",
    kGauge};
constexpr MetricDesc kPsActivePower{
    "drivewatch_power_state_active_power_watts",
    "Largest average power over 10 s in the power state under the "
    "descriptor's workload, in watts (power state descriptor ACTP x APS). "
    "Only present when reported.",
    kGauge};
constexpr MetricDesc kPsEntryLatency{
    "drivewatch_power_state_entry_latency_seconds",
    "Maximum time to enter the power state, in seconds (power state "
    "descriptor ENLAT, microseconds). Only present when reported "
    "(non-zero).",
    kGauge};
constexpr MetricDesc kPsExitLatency{
    "drivewatch_power_state_exit_latency_seconds",
    "Maximum time to leave the power state, in seconds (power state "
    "descriptor EXLAT, microseconds). Only present when reported "
    "(non-zero).",
    kGauge};
constexpr MetricDesc kPsNonOperational{
    "drivewatch_power_state_non_operational",
    "1 if the power state is non-operational (power state descriptor NOPS): "
    "the controller processes no I/O in it and leaves it on the next I/O.",
    kGauge};

// --- Features ---

constexpr MetricDesc kCurrentPowerState{
    "drivewatch_current_power_state",
    "Power state the controller was in when the probe ran (Get Features "
    "02h, PS). Reading it is an admin command, which controllers serve "
    "without leaving a non-operational state.",
    kGauge};
constexpr MetricDesc kApstEnabled{
    "drivewatch_apst_enabled",
    "1 if autonomous power state transitions are enabled (Get Features 0Ch, "
    "APSTE). Only present when the controller supports APST.",
    kGauge};
constexpr MetricDesc kApstIdleTime{
    "drivewatch_apst_idle_time_seconds",
    "APST table entry: idle time in seconds after which the controller moves "
    "from power_state to target_power_state (Get Features 0Ch, ITPT and "
    "ITPS). Only entries with a non-zero idle time are present.",
    kGauge};

const MetricDesc* const kAllMetrics[] = {
    &kPsMaxPower,      &kPsIdlePower,   &kPsActivePower,
    &kPsEntryLatency,  &kPsExitLatency, &kPsNonOperational,
    &kCurrentPowerState, &kApstEnabled, &kApstIdleTime,
    &FeatureSupportedMetric(),
};


}  // namespace

PowerProbe::PowerProbe(LogFn log)
    : support_(log ? std::move(log)
                   : LogFn([](std::string_view line) { log::Info(line); })) {}

std::span<const MetricDesc* const> PowerProbe::Metrics() { return kAllMetrics; }

Status PowerProbe::Run(Controller& ctrl, const ControllerInfo& info,
                       SampleSink& sink) {
  auto id = ReadIdentifyController(ctrl, info);
  if (!id) return id.error();
  auto add = [&](const MetricDesc& desc, double value, Labels extra = {}) {
    Labels labels{{"serial", info.serial}};
    for (auto& label : extra) labels.push_back(std::move(label));
    sink.Add(desc, std::move(labels), value);
  };

  for (int i = 0; i < id->PowerStateCount(); ++i) {
    const PowerStateDescriptor& ps = id->power_states[i];
    const Labels state = {{"power_state", std::to_string(i)}};
    if (const auto w = ps.MaxPowerWatts()) add(kPsMaxPower, *w, state);
    if (const auto w = ps.IdlePowerWatts()) add(kPsIdlePower, *w, state);
    if (const auto w = ps.ActivePowerWatts()) add(kPsActivePower, *w, state);
    if (ps.entry_latency_us != 0) {
      add(kPsEntryLatency, ps.entry_latency_us / 1e6, state);
    }
    if (ps.exit_latency_us != 0) {
      add(kPsExitLatency, ps.exit_latency_us / 1e6, state);
    }
    add(kPsNonOperational, ps.NonOperational() ? 1 : 0, state);
  }

  std::optional<int> power_state;
  {
    auto r = ctrl.GetFeature(kFeaturePowerManagement, 0, 0);
    if (!r && !r.error().Unsupported()) return r.error();
    support_.Report(sink, info.serial, "power_management",
                    "power management (feature 02h)", r.ok(),
                    r.ok() ? "" : r.error().message);
    if (r) {
      power_state = DecodePowerManagement(r->result).power_state;
      add(kCurrentPowerState, *power_state);
    }
  }

  if ((id->apsta & 1) == 0) {
    support_.Report(sink, info.serial, "apst",
                    "autonomous power state transitions (feature 0Ch)", false,
                    "Identify Controller APSTA bit 0 is clear");
  } else {
    // Not libnvme 1.3's nvme_get_features_auto_pst, which sends the wrong
    // FID (NOTES.md).
    auto r = ctrl.GetFeature(kFeatureAutonomousPowerStateTransition, 0,
                             kApstTableSize);
    if (!r && !r.error().Unsupported()) return r.error();
    support_.Report(sink, info.serial, "apst",
                    "autonomous power state transitions (feature 0Ch)",
                    r.ok(), r.ok() ? "" : r.error().message);
    if (r) {
      auto table = DecodeApstTable(r->result, r->data);
      if (!table) return OnDevice(info, table.error());
      add(kApstEnabled, table->enabled ? 1 : 0);
      for (int i = 0; i < id->PowerStateCount(); ++i) {
        const ApstEntry& e = table->entries[i];
        if (e.idle_time_ms == 0) continue;
        add(kApstIdleTime, e.idle_time_ms / 1e3,
            {{"power_state", std::to_string(i)},
             {"target_power_state", std::to_string(e.target_power_state)}});
      }
    }
  }

  return Ok{};
}

}  // namespace drivewatch
