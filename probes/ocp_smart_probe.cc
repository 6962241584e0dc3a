// SPDX-License-Identifier: Apache-2.0
// Every metric of the ocp_smart probe, defined once with the field of the
// OCP SMART / Health Information Extended log (C0h) it comes from. Counters
// are per controller, like the SMART log's.
#include "probes/ocp_smart_probe.h"

#include <cerrno>
#include <string>
#include <utility>

#include "probes/drive/identify.h"
#include "probes/drive/ocp_smart_log.h"
#include "probes/drive/units.h"

namespace drivewatch {
namespace {

constexpr MetricType kGauge = MetricType::kGauge;
constexpr MetricType kCounter = MetricType::kCounter;

constexpr MetricDesc kInfo{
    "drivewatch_ocp_smart_extended_info",
    "The drive's OCP SMART / Health Information Extended log (C0h), value "
    "always 1: log_page_version (bytes 495:494) and dssd_version, the OCP "
    "specification version the drive claims (bytes 103:98, "
    "major.minor.point.errata; empty before OCP 2.0).",
    kGauge};
constexpr MetricDesc kMediaWritten{
    "drivewatch_ocp_physical_media_written_bytes_total",
    "Bytes written to the NAND media, host writes plus the drive's own "
    "(garbage collection, wear leveling, refresh) (OCP C0h Physical Media "
    "Units Written, bytes 15:0).",
    kCounter};
constexpr MetricDesc kMediaRead{
    "drivewatch_ocp_physical_media_read_bytes_total",
    "Bytes read from the NAND media (OCP C0h Physical Media Units Read, "
    "bytes 31:16).",
    kCounter};
constexpr MetricDesc kBadNandBlocks{
    "drivewatch_ocp_bad_nand_blocks",
    "Bad NAND blocks, raw count: area=user (OCP C0h Bad User NAND Blocks, "
    "bytes 37:32) or area=system (Bad System NAND Blocks, bytes 45:40).",
    kGauge};
constexpr MetricDesc kBadNandBlocksNormalized{
    "drivewatch_ocp_bad_nand_blocks_normalized",
    "Normalized value of the bad NAND block count as the drive reports it, "
    "area=user (bytes 39:38) or area=system (bytes 47:46).",
    kGauge};
constexpr MetricDesc kXorRecoveries{
    "drivewatch_ocp_xor_recoveries_total",
    "Reads recovered by XOR parity (OCP C0h XOR Recovery Count).", kCounter};
constexpr MetricDesc kUncorrectableReadErrors{
    "drivewatch_ocp_uncorrectable_read_errors_total",
    "Reads the drive could not correct (OCP C0h Uncorrectable Read Error "
    "Count).",
    kCounter};
constexpr MetricDesc kSoftEccErrors{
    "drivewatch_ocp_soft_ecc_errors_total",
    "Reads corrected by soft-decision ECC (OCP C0h Soft ECC Error Count).",
    kCounter};
constexpr MetricDesc kEndToEndErrors{
    "drivewatch_ocp_end_to_end_errors_total",
    "End-to-end data path errors: outcome=detected (OCP C0h End to End "
    "Correction Counts bytes 75:72) or outcome=corrected (bytes 79:76).",
    kCounter};
constexpr MetricDesc kSystemDataUsed{
    "drivewatch_ocp_system_data_used_ratio",
    "Life used of the drive's system data area, 1 meaning its rated "
    "endurance (OCP C0h System Data % Used / 100).",
    kGauge};
constexpr MetricDesc kRefreshes{
    "drivewatch_ocp_refreshes_total",
    "Data refreshes the drive ran to keep retention (OCP C0h Refresh "
    "Counts, bytes 87:81).",
    kCounter};
constexpr MetricDesc kUserDataEraseCount{
    "drivewatch_ocp_user_data_erase_count",
    "Erase cycles of the most (bound=max, OCP C0h User Data Erase Counts "
    "bytes 91:88) and least (bound=min, bytes 95:92) erased user data "
    "block; their spread shows how evenly wear is leveled.",
    kGauge};
constexpr MetricDesc kThermalThrottlingEvents{
    "drivewatch_ocp_thermal_throttling_events_total",
    "Times the drive throttled for temperature (OCP C0h Thermal Throttling "
    "Count, byte 96; 8 bits).",
    kCounter};
constexpr MetricDesc kThermalThrottlingStatus{
    "drivewatch_ocp_thermal_throttling_status",
    "Current thermal throttling (OCP C0h byte 97): 0 unthrottled, 1, 2 or 3 "
    "the first, second or third throttling level; other values as "
    "reported.",
    kGauge};
constexpr MetricDesc kPcieCorrectableErrors{
    "drivewatch_ocp_pcie_correctable_errors_total",
    "PCIe correctable errors the drive saw (OCP C0h PCIe Correctable Error "
    "Count).",
    kCounter};
constexpr MetricDesc kIncompleteShutdowns{
    "drivewatch_ocp_incomplete_shutdowns_total",
    "Shutdowns that did not complete (OCP C0h Incomplete Shutdowns).",
    kCounter};
constexpr MetricDesc kFreeBlocks{
    "drivewatch_ocp_free_blocks_ratio",
    "Free blocks, 0 to 1 (OCP C0h % Free Blocks / 100).", kGauge};
constexpr MetricDesc kCapacitorHealth{
    "drivewatch_ocp_capacitor_health_ratio",
    "Health of the power-loss protection capacitor, 1 meaning as new (OCP "
    "C0h Capacitor Health, percent, / 100).",
    kGauge};

constexpr const MetricDesc* kAllMetrics[] = {
    &kInfo,
    &kMediaWritten,
    &kMediaRead,
    &kBadNandBlocks,
    &kBadNandBlocksNormalized,
    &kXorRecoveries,
    &kUncorrectableReadErrors,
    &kSoftEccErrors,
    &kEndToEndErrors,
    &kSystemDataUsed,
    &kRefreshes,
    &kUserDataEraseCount,
    &kThermalThrottlingEvents,
    &kThermalThrottlingStatus,
    &kPcieCorrectableErrors,
    &kIncompleteShutdowns,
    &kFreeBlocks,
    &kCapacitorHealth,
};

constexpr std::string_view kFeature = "ocp_smart_extended";
constexpr std::string_view kDescription =
    "the OCP SMART / Health Information Extended log (C0h)";

void Emit(const OcpSmartExtended& log, const std::string& serial,
          SampleSink& sink) {
  using units::ToDouble;
  auto add = [&](const MetricDesc& desc, double value, Labels extra = {}) {
    Labels labels{{"serial", serial}};
    for (auto& label : extra) labels.push_back(std::move(label));
    sink.Add(desc, std::move(labels), value);
  };
  add(kInfo, 1,
      {{"log_page_version", std::to_string(log.log_page_version)},
       {"dssd_version", log.DssdVersion()}});
  add(kMediaWritten, ToDouble(log.physical_media_units_written));
  add(kMediaRead, ToDouble(log.physical_media_units_read));
  add(kBadNandBlocks, ToDouble(log.bad_user_nand_blocks_raw),
      {{"area", "user"}});
  add(kBadNandBlocks, ToDouble(log.bad_system_nand_blocks_raw),
      {{"area", "system"}});
  add(kBadNandBlocksNormalized, log.bad_user_nand_blocks_normalized,
      {{"area", "user"}});
  add(kBadNandBlocksNormalized, log.bad_system_nand_blocks_normalized,
      {{"area", "system"}});
  add(kXorRecoveries, ToDouble(log.xor_recovery_count));
  add(kUncorrectableReadErrors, ToDouble(log.uncorrectable_read_error_count));
  add(kSoftEccErrors, ToDouble(log.soft_ecc_error_count));
  add(kEndToEndErrors, log.end_to_end_detected_errors,
      {{"outcome", "detected"}});
  add(kEndToEndErrors, log.end_to_end_corrected_errors,
      {{"outcome", "corrected"}});
  add(kSystemDataUsed, units::PercentToRatio(log.system_data_percent_used));
  add(kRefreshes, ToDouble(log.refresh_counts));
  add(kUserDataEraseCount, log.user_data_erase_count_max, {{"bound", "max"}});
  add(kUserDataEraseCount, log.user_data_erase_count_min, {{"bound", "min"}});
  add(kThermalThrottlingEvents, log.thermal_throttling_count);
  add(kThermalThrottlingStatus, log.thermal_throttling_status);
  add(kPcieCorrectableErrors, ToDouble(log.pcie_correctable_error_count));
  add(kIncompleteShutdowns, log.incomplete_shutdowns);
  add(kFreeBlocks, units::PercentToRatio(log.percent_free_blocks));
  add(kCapacitorHealth, units::PercentToRatio(log.capacitor_health));
}

}  // namespace

OcpSmartProbe::OcpSmartProbe(FeatureSupport::LogFn log)
    : support_(std::move(log)) {}

std::span<const MetricDesc* const> OcpSmartProbe::Metrics() {
  return kAllMetrics;
}

Status OcpSmartProbe::Run(Controller& ctrl, const ControllerInfo& info,
                          SampleSink& sink) {
  auto id = ReadIdentifyController(ctrl, info);
  if (!id) return id.error();
  auto log = ReadOcpSmartExtended(ctrl, *id);
  if (!log) {
    Error error = log.error();
    // The decoder's errors name the log but not the device.
    if (error.nvme_status < 0 &&
        (error.errnum == EBADMSG || error.errnum == ENOMSG)) {
      error = OnDevice(info, std::move(error));
    }
    if (error.Unsupported() || error.errnum == ENOMSG) {
      support_.Report(sink, info.serial, kFeature, kDescription, false,
                      error.message);
      return Ok{};
    }
    return error;
  }
  support_.Report(sink, info.serial, kFeature, kDescription, true, "");
  Emit(*log, info.serial, sink);
  return Ok{};
}

}  // namespace drivewatch
