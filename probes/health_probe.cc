// SPDX-License-Identifier: Apache-2.0
// Every metric the health probe emits is defined here, once, with the spec
// field it comes from. Controller-level data is emitted once per controller
// (DESIGN.md decision 4); namespace samples add an `nsid` label.
#include "probes/health_probe.h"

#include <cerrno>
#include <cstdio>
#include <string>
#include <utility>

#include "config/util/text.h"
#include "probes/drive/hwmon.h"
#include "probes/drive/identify.h"
#include "probes/drive/smart_log.h"
#include "probes/drive/units.h"

namespace drivewatch {
namespace {

constexpr MetricType kGauge = MetricType::kGauge;
constexpr MetricType kCounter = MetricType::kCounter;

// --- Identify Controller (NVMe 2.0 §5.17, CNS 01h) ---

constexpr MetricDesc kControllerInfo{
    "drivewatch_controller_info",
    "Identify Controller data, value always 1: model (MN), firmware (FR), "
    "PCI vendor and subsystem vendor IDs (VID, SSVID), IEEE OUI, controller "
    "ID (CNTLID) and NVMe version (VER).",
    kGauge};
constexpr MetricDesc kNvmCapacity{
    "drivewatch_nvm_capacity_bytes",
    "Total NVM capacity of the NVM subsystem in bytes (Identify Controller "
    "TNVMCAP). Only present when the controller reports it.",
    kGauge};
constexpr MetricDesc kNvmUnallocatedCapacity{
    "drivewatch_nvm_unallocated_capacity_bytes",
    "NVM capacity not allocated to any namespace, in bytes (Identify "
    "Controller UNVMCAP). Only present when TNVMCAP is reported.",
    kGauge};
constexpr MetricDesc kTemperatureThreshold{
    "drivewatch_temperature_threshold_celsius",
    "Temperature threshold in degrees Celsius. From the health probe: "
    "threshold=wctemp is the composite warning (Identify Controller "
    "WCTEMP), threshold=cctemp the critical (CCTEMP) threshold, present when "
    "reported (non-zero). From the thermal probe: threshold=over|under with "
    "sensor=composite|1..8 (feature 04h; 0 K reads -273.15 and never trips), "
    "threshold=tmt1|tmt2 (feature 10h, present when set) and "
    "threshold=mntmt|mxtmt (their allowed range, Identify MNTMT/MXTMT).",
    kGauge};
constexpr MetricDesc kPowerStates{
    "drivewatch_power_states",
    "Number of power states the controller supports (Identify Controller "
    "NPSS + 1).",
    kGauge};
constexpr MetricDesc kErrorLogCapacity{
    "drivewatch_error_log_capacity_entries",
    "Error Information log entries the controller retains (Identify "
    "Controller ELPE + 1).",
    kGauge};

// --- SMART / Health Information log, 02h (NVMe 2.0 Figure 207) ---

constexpr MetricDesc kCriticalWarningRaw{
    "drivewatch_critical_warning_raw",
    "SMART Critical Warning byte as reported (bits 7:0), including bits "
    "defined after NVMe 2.0; 0 means no warning.",
    kGauge};
constexpr MetricDesc kCriticalWarning{
    "drivewatch_critical_warning",
    "SMART Critical Warning bit, 1 when set: available_spare (bit 0, spare "
    "below threshold), temperature (bit 1, a temperature beyond an over or "
    "under threshold), reliability (bit 2, degraded by media or internal "
    "errors), read_only (bit 3, media placed in read-only mode), "
    "volatile_memory_backup (bit 4, backup device failed), "
    "persistent_memory_region (bit 5, PMR read-only or unreliable).",
    kGauge};
constexpr MetricDesc kEnduranceGroupCriticalWarningRaw{
    "drivewatch_endurance_group_critical_warning_raw",
    "SMART Endurance Group Critical Warning Summary byte as reported: bit 0 "
    "spare, bit 2 reliability, bit 3 read-only, set when any Endurance Group "
    "has that warning; 0 means none.",
    kGauge};
constexpr MetricDesc kTemperature{
    "drivewatch_temperature_celsius",
    "Temperature in degrees Celsius (kelvin - 273.15): sensor=composite is "
    "the SMART Composite Temperature, sensor=1..8 Temperature Sensor 1-8. "
    "Only sensors that report a non-zero value are present.",
    kGauge};
constexpr MetricDesc kAvailableSpare{
    "drivewatch_available_spare_ratio",
    "Remaining spare capacity, 0 to 1 (SMART Available Spare / 100).", kGauge};
constexpr MetricDesc kAvailableSpareThreshold{
    "drivewatch_available_spare_threshold_ratio",
    "Spare level below which the controller raises critical warning bit 0, "
    "0 to 1 (SMART Available Spare Threshold / 100).",
    kGauge};
constexpr MetricDesc kPercentageUsed{
    "drivewatch_percentage_used_ratio",
    "Vendor estimate of the life used, 1 meaning rated endurance reached; "
    "may exceed 1, capped at 2.55 (SMART Percentage Used / 100). Updated by "
    "the drive about once per power-on hour.",
    kGauge};
constexpr MetricDesc kDataRead{
    "drivewatch_data_read_bytes_total",
    "Bytes the host read, without metadata (SMART Data Units Read x 512000; "
    "the drive rounds up to whole units of 512000 bytes).",
    kCounter};
constexpr MetricDesc kDataWritten{
    "drivewatch_data_written_bytes_total",
    "Bytes the host wrote, without metadata (SMART Data Units Written x "
    "512000; the drive rounds up to whole units of 512000 bytes).",
    kCounter};
constexpr MetricDesc kHostReadCommands{
    "drivewatch_host_read_commands_total",
    "Read commands completed by the controller (SMART Host Read Commands; "
    "for the NVM command set, Read plus Compare).",
    kCounter};
constexpr MetricDesc kHostWriteCommands{
    "drivewatch_host_write_commands_total",
    "Write commands completed by the controller (SMART Host Write "
    "Commands).",
    kCounter};
constexpr MetricDesc kControllerBusy{
    "drivewatch_controller_busy_seconds_total",
    "Time the controller had I/O commands outstanding, in seconds (SMART "
    "Controller Busy Time, reported in whole minutes, x 60).",
    kCounter};
constexpr MetricDesc kPowerCycles{"drivewatch_power_cycles_total",
                                  "Power cycles (SMART Power Cycles).",
                                  kCounter};
constexpr MetricDesc kPowerOn{
    "drivewatch_power_on_seconds_total",
    "Powered-on time in seconds (SMART Power On Hours x 3600); may exclude "
    "time in non-operational power states.",
    kCounter};
constexpr MetricDesc kUnsafeShutdowns{
    "drivewatch_unsafe_shutdowns_total",
    "Power losses without a prior shutdown notification (SMART Unsafe "
    "Shutdowns).",
    kCounter};
constexpr MetricDesc kMediaErrors{
    "drivewatch_media_errors_total",
    "Unrecovered data integrity errors: uncorrectable ECC, CRC or LBA tag "
    "mismatch (SMART Media and Data Integrity Errors).",
    kCounter};
constexpr MetricDesc kErrorLogEntries{
    "drivewatch_error_log_entries_total",
    "Error Information log entries created over the controller's life "
    "(SMART Number of Error Information Log Entries).",
    kCounter};
constexpr MetricDesc kTemperatureAboveThreshold{
    "drivewatch_temperature_above_threshold_seconds_total",
    "Time in seconds the composite temperature was at or above WCTEMP and "
    "below CCTEMP (threshold=wctemp; SMART Warning Composite Temperature "
    "Time x 60) or at or above CCTEMP (threshold=cctemp; SMART Critical "
    "Composite Temperature Time x 60), while operational.",
    kCounter};
constexpr MetricDesc kThermalManagementTransitions{
    "drivewatch_thermal_management_transitions_total",
    "Times host controlled thermal management throttled the controller "
    "because the composite temperature rose above TMT1 (threshold=tmt1) or "
    "TMT2 (threshold=tmt2) (SMART Thermal Management Temperature 1/2 "
    "Transition Count; stops at 2^32-1).",
    kCounter};
constexpr MetricDesc kThermalManagementTime{
    "drivewatch_thermal_management_seconds_total",
    "Seconds the controller spent throttled by host controlled thermal "
    "management at TMT1 (threshold=tmt1) or TMT2 (threshold=tmt2) (SMART "
    "Total Time For Thermal Management Temperature 1/2; stops at 2^32-1).",
    kCounter};
constexpr MetricDesc kEnergyConsumed{
    "drivewatch_energy_consumed_joules_total",
    "Energy the NVM subsystem consumed since manufacture, in joules (SMART "
    "Operational Lifetime Energy Consumed, bytes 239:232, whole watt-hours "
    "rounded up, x 3600). Only present on drives that report it.",
    kCounter};
constexpr MetricDesc kIntervalPower{
    "drivewatch_interval_power_watts",
    "Average NVM subsystem power over the last second before the log was "
    "read, in watts (SMART Interval Power Measurement, bytes 243:240). Only "
    "present on drives that report total power with a defined scale.",
    kGauge};

// --- Identify Namespace (NVM Command Set 1.0 Figure 97) ---

constexpr MetricDesc kNamespaceIdentifySuccess{
    "drivewatch_namespace_identify_success",
    "1 when the namespace's Identify Namespace (CNS 00h) succeeded and "
    "decoded in the last health probe run, 0 when it failed; the other "
    "drivewatch_namespace_* samples are present only when it is 1.",
    kGauge};
constexpr MetricDesc kNamespaceSize{
    "drivewatch_namespace_size_bytes",
    "Namespace size in bytes (Identify Namespace NSZE x logical block "
    "size).",
    kGauge};
constexpr MetricDesc kNamespaceCapacity{
    "drivewatch_namespace_capacity_bytes",
    "Bytes that may be allocated in the namespace (Identify Namespace NCAP "
    "x logical block size).",
    kGauge};
constexpr MetricDesc kNamespaceUtilization{
    "drivewatch_namespace_utilization_bytes",
    "Bytes currently allocated in the namespace (Identify Namespace NUSE x "
    "logical block size); equals the size on drives without thin "
    "provisioning or deallocation tracking.",
    kGauge};
constexpr MetricDesc kNamespaceBlockSize{
    "drivewatch_namespace_logical_block_size_bytes",
    "Logical block data size in bytes of the format in use (2^LBADS of LBA "
    "format FLBAS), without metadata.",
    kGauge};

constexpr const MetricDesc* kAllMetrics[] = {
    &kControllerInfo,
    &kNvmCapacity,
    &kNvmUnallocatedCapacity,
    &kTemperatureThreshold,
    &kPowerStates,
    &kErrorLogCapacity,
    &kCriticalWarningRaw,
    &kCriticalWarning,
    &kEnduranceGroupCriticalWarningRaw,
    &kTemperature,
    &kAvailableSpare,
    &kAvailableSpareThreshold,
    &kPercentageUsed,
    &kDataRead,
    &kDataWritten,
    &kHostReadCommands,
    &kHostWriteCommands,
    &kControllerBusy,
    &kPowerCycles,
    &kPowerOn,
    &kUnsafeShutdowns,
    &kMediaErrors,
    &kErrorLogEntries,
    &kTemperatureAboveThreshold,
    &kThermalManagementTransitions,
    &kThermalManagementTime,
    &kEnergyConsumed,
    &kIntervalPower,
    &kNamespaceIdentifySuccess,
    &kNamespaceSize,
    &kNamespaceCapacity,
    &kNamespaceUtilization,
    &kNamespaceBlockSize,
};

struct NamedBit {
  SmartCriticalWarning bit;
  const char* label;
};
constexpr NamedBit kCriticalWarningBits[] = {
    {kCriticalWarningAvailableSpare, "available_spare"},
    {kCriticalWarningTemperature, "temperature"},
    {kCriticalWarningReliability, "reliability"},
    {kCriticalWarningReadOnly, "read_only"},
    {kCriticalWarningVolatileMemoryBackup, "volatile_memory_backup"},
    {kCriticalWarningPersistentMemoryRegion, "persistent_memory_region"},
};

using util::Hex;

// Adds the drive's serial (and the caller's labels) to every sample.
class Emitter {
 public:
  Emitter(SampleSink& sink, std::string serial)
      : sink_(sink), serial_(std::move(serial)) {}

  void Add(const MetricDesc& desc, double value, Labels extra = {}) {
    Labels labels{{"serial", serial_}};
    for (auto& label : extra) labels.push_back(std::move(label));
    sink_.Add(desc, std::move(labels), value);
  }

 private:
  SampleSink& sink_;
  const std::string serial_;
};

void EmitIdentify(const IdentifyController& id, Emitter& out) {
  out.Add(kControllerInfo, 1,
          {{"model", id.model},
           {"firmware", id.firmware},
           {"vid", Hex(id.vid, 4, "0x")},
           {"ssvid", Hex(id.ssvid, 4, "0x")},
           {"ieee_oui", Hex(id.ieee_oui, 6, "")},
           {"cntlid", std::to_string(id.cntlid)},
           {"nvme_version", id.Version()}});
  // TNVMCAP is mandatory only with Namespace Management; 0 = not reported.
  if (id.tnvmcap != 0) {
    out.Add(kNvmCapacity, units::ToDouble(id.tnvmcap));
    out.Add(kNvmUnallocatedCapacity, units::ToDouble(id.unvmcap));
  }
  const std::pair<const char*, std::uint16_t> thresholds[] = {
      {"wctemp", id.wctemp_k}, {"cctemp", id.cctemp_k}};
  for (const auto& [name, kelvin] : thresholds) {
    if (const auto celsius = units::KelvinToCelsius(kelvin)) {
      out.Add(kTemperatureThreshold, *celsius, {{"threshold", name}});
    }
  }
  out.Add(kPowerStates, id.PowerStateCount());
  out.Add(kErrorLogCapacity, id.ErrorLogCapacity());
}

void EmitSmart(const SmartLog& log, Emitter& out) {
  using units::ToDouble;
  out.Add(kCriticalWarningRaw, log.critical_warning);
  for (const auto& [bit, label] : kCriticalWarningBits) {
    out.Add(kCriticalWarning, log.CriticalWarning(bit) ? 1 : 0,
            {{"bit", label}});
  }
  out.Add(kEnduranceGroupCriticalWarningRaw,
          log.endurance_group_critical_warning_summary);

  if (const auto celsius =
          units::KelvinToCelsius(log.composite_temperature_k)) {
    out.Add(kTemperature, *celsius, {{"sensor", "composite"}});
  }
  for (std::size_t i = 0; i < log.temperature_sensors_k.size(); ++i) {
    if (const auto celsius =
            units::KelvinToCelsius(log.temperature_sensors_k[i])) {
      out.Add(kTemperature, *celsius, {{"sensor", std::to_string(i + 1)}});
    }
  }

  out.Add(kAvailableSpare, units::PercentToRatio(log.available_spare_percent));
  out.Add(kAvailableSpareThreshold,
          units::PercentToRatio(log.available_spare_threshold_percent));
  out.Add(kPercentageUsed, units::PercentToRatio(log.percentage_used));

  out.Add(kDataRead, units::DataUnitsToBytes(log.data_units_read));
  out.Add(kDataWritten, units::DataUnitsToBytes(log.data_units_written));
  out.Add(kHostReadCommands, ToDouble(log.host_read_commands));
  out.Add(kHostWriteCommands, ToDouble(log.host_write_commands));
  out.Add(kControllerBusy,
          units::MinutesToSeconds(log.controller_busy_time_minutes));
  out.Add(kPowerCycles, ToDouble(log.power_cycles));
  out.Add(kPowerOn, units::HoursToSeconds(log.power_on_hours));
  out.Add(kUnsafeShutdowns, ToDouble(log.unsafe_shutdowns));
  out.Add(kMediaErrors, ToDouble(log.media_errors));
  out.Add(kErrorLogEntries, ToDouble(log.error_log_entries));

  out.Add(kTemperatureAboveThreshold,
          units::MinutesToSeconds(log.warning_temperature_time_minutes),
          {{"threshold", "wctemp"}});
  out.Add(kTemperatureAboveThreshold,
          units::MinutesToSeconds(log.critical_temperature_time_minutes),
          {{"threshold", "cctemp"}});
  out.Add(kThermalManagementTransitions,
          log.thermal_management_temp1_transitions, {{"threshold", "tmt1"}});
  out.Add(kThermalManagementTransitions,
          log.thermal_management_temp2_transitions, {{"threshold", "tmt2"}});
  out.Add(kThermalManagementTime, log.thermal_management_temp1_seconds,
          {{"threshold", "tmt1"}});
  out.Add(kThermalManagementTime, log.thermal_management_temp2_seconds,
          {{"threshold", "tmt2"}});

  if (log.lifetime_energy_watt_hours != 0) {
    out.Add(kEnergyConsumed,
            units::WattHoursToJoules(log.lifetime_energy_watt_hours));
  }
  if (const auto watts = log.IntervalPowerWatts()) {
    out.Add(kIntervalPower, *watts);
  }
}

void EmitNamespace(Controller& ctrl, const NamespaceInfo& ns, Emitter& out) {
  const std::string nsid = std::to_string(ns.nsid);
  auto bytes = ctrl.Identify(kIdentifyCnsNamespace, ns.nsid);
  Expected<IdentifyNamespace> id =
      bytes ? DecodeIdentifyNamespace(*bytes)
            : Expected<IdentifyNamespace>(bytes.error());
  out.Add(kNamespaceIdentifySuccess, id.ok() ? 1 : 0, {{"nsid", nsid}});
  if (!id) return;
  out.Add(kNamespaceSize, id->BlocksToBytes(id->nsze), {{"nsid", nsid}});
  out.Add(kNamespaceCapacity, id->BlocksToBytes(id->ncap), {{"nsid", nsid}});
  out.Add(kNamespaceUtilization, id->BlocksToBytes(id->nuse), {{"nsid", nsid}});
  out.Add(kNamespaceBlockSize, static_cast<double>(id->lba_data_size),
          {{"nsid", nsid}});
}


// Says why in the once-logged failure when the kernel refused passthrough,
// so the log line points at the fix and at what still works.
Error ExplainDenied(Error error) {
  if (AdminPassthroughDenied(error)) {
    error.message +=
        " (admin passthrough needs CAP_SYS_ADMIN on Linux 6.1; see "
        "drivewatch_admin_commands_permitted: the thermal probe exports "
        "temperatures from hwmon instead)";
  }
  return error;
}

}  // namespace

std::span<const MetricDesc* const> HealthProbe::Metrics() {
  return kAllMetrics;
}

const MetricDesc& HealthProbe::TemperatureThresholdMetric() {
  return kTemperatureThreshold;
}

Status HealthProbe::Run(Controller& ctrl, const ControllerInfo& info,
                        SampleSink& sink) {
  auto id = ReadIdentifyController(ctrl, info);
  if (!id) return ExplainDenied(id.error());

  auto log_bytes = ctrl.GetLogPage(kSmartLogId, kNsidAll, kSmartLogSize);
  if (!log_bytes) return ExplainDenied(log_bytes.error());
  auto log = DecodeSmartLog(*log_bytes);
  if (!log) return OnDevice(info, log.error());

  Emitter out(sink, info.serial);
  EmitIdentify(*id, out);
  EmitSmart(*log, out);
  for (const NamespaceInfo& ns : info.namespaces) {
    EmitNamespace(ctrl, ns, out);
  }
  return Ok{};
}

}  // namespace drivewatch
