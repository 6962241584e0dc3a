// SPDX-License-Identifier: Apache-2.0
#include "probes/drive/smart_log.h"

#include <cerrno>
#include <string>

#include "probes/drive/byte_order.h"
#include "probes/drive/identify.h"
#include "probes/drive/units.h"

namespace drivewatch {

using detail::LoadLe;
using detail::LoadLe128;

std::optional<double> SmartLog::IntervalPowerWatts() const {
  const std::uint32_t value = interval_power_measurement & 0xffff;
  const std::uint32_t scale = (interval_power_measurement >> 16) & 0x3;
  const std::uint32_t type = (interval_power_measurement >> 20) & 0x3f;
  if (value == 0 || type != 0) return std::nullopt;
  return units::ScaledPowerWatts(value, scale);
}

Expected<SmartLog> DecodeSmartLog(std::span<const std::uint8_t> bytes) {
  if (bytes.size() < kSmartLogSize) {
    return Error{EBADMSG, -1,
                 "SMART log: " + std::to_string(bytes.size()) +
                     " bytes, expected " + std::to_string(kSmartLogSize)};
  }
  SmartLog log;
  log.critical_warning = bytes[0];
  log.composite_temperature_k = LoadLe<std::uint16_t>(bytes, 1);
  log.available_spare_percent = bytes[3];
  log.available_spare_threshold_percent = bytes[4];
  log.percentage_used = bytes[5];
  log.endurance_group_critical_warning_summary = bytes[6];
  log.data_units_read = LoadLe128(bytes, 32);
  log.data_units_written = LoadLe128(bytes, 48);
  log.host_read_commands = LoadLe128(bytes, 64);
  log.host_write_commands = LoadLe128(bytes, 80);
  log.controller_busy_time_minutes = LoadLe128(bytes, 96);
  log.power_cycles = LoadLe128(bytes, 112);
  log.power_on_hours = LoadLe128(bytes, 128);
  log.unsafe_shutdowns = LoadLe128(bytes, 144);
  log.media_errors = LoadLe128(bytes, 160);
  log.error_log_entries = LoadLe128(bytes, 176);
  log.warning_temperature_time_minutes = LoadLe<std::uint32_t>(bytes, 192);
  log.critical_temperature_time_minutes = LoadLe<std::uint32_t>(bytes, 196);
  for (std::size_t i = 0; i < log.temperature_sensors_k.size(); ++i) {
    log.temperature_sensors_k[i] = LoadLe<std::uint16_t>(bytes, 200 + 2 * i);
  }
  log.thermal_management_temp1_transitions = LoadLe<std::uint32_t>(bytes, 216);
  log.thermal_management_temp2_transitions = LoadLe<std::uint32_t>(bytes, 220);
  log.thermal_management_temp1_seconds = LoadLe<std::uint32_t>(bytes, 224);
  log.thermal_management_temp2_seconds = LoadLe<std::uint32_t>(bytes, 228);
  log.lifetime_energy_watt_hours = LoadLe<std::uint64_t>(bytes, 232);
  log.interval_power_measurement = LoadLe<std::uint32_t>(bytes, 240);
  return log;
}

Expected<SmartLog> ReadSmartLog(Controller& ctrl) {
  auto bytes = ctrl.GetLogPage(kSmartLogId, kNsidAll, kSmartLogSize);
  if (!bytes) return bytes.error();
  return DecodeSmartLog(*bytes);
}

}  // namespace drivewatch
