// SPDX-License-Identifier: Apache-2.0
// Decoder for the SMART / Health Information log page (Log Identifier 02h,
// NVMe 2.0 §5.16, Figure 207). Pure: bytes in, typed struct out, no I/O,
// so it can be fuzzed and fed from recorded fixtures.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "config/util/expected.h"
#include "probes/drive/drive_layer.h"

namespace drivewatch {

inline constexpr std::uint8_t kSmartLogId = 0x02;
inline constexpr std::size_t kSmartLogSize = 512;

// Critical Warning bits (NVMe 2.0 Figure 207, byte 0).
enum SmartCriticalWarning : std::uint8_t {
  kCriticalWarningAvailableSpare = 1 << 0,          // below the spare threshold
  kCriticalWarningTemperature = 1 << 1,             // over or under a threshold
  kCriticalWarningReliability = 1 << 2,             // reliability degraded
  kCriticalWarningReadOnly = 1 << 3,                // media placed read-only
  kCriticalWarningVolatileMemoryBackup = 1 << 4,    // backup device failed
  kCriticalWarningPersistentMemoryRegion = 1 << 5,  // PMR read-only/unreliable
};

// Every field of Figure 207 in the units the log reports them in; the
// conversions to base units live in probes/drive/units.h. Counters are 128-bit as on
// the wire so nothing wraps before the export decides how to round.
struct SmartLog {
  std::uint8_t critical_warning = 0;                   // byte 0, see enum above
  std::uint16_t composite_temperature_k = 0;           // bytes 2:1
  std::uint8_t available_spare_percent = 0;            // byte 3
  std::uint8_t available_spare_threshold_percent = 0;  // byte 4
  std::uint8_t percentage_used = 0;                    // byte 5, may exceed 100
  // Byte 6 (NVMe 1.4+): bit 0 spare, bit 2 reliability, bit 3 read-only, for
  // any Endurance Group.
  std::uint8_t endurance_group_critical_warning_summary = 0;
  unsigned __int128 data_units_read = 0;      // bytes 47:32, 512000-byte units
  unsigned __int128 data_units_written = 0;   // bytes 63:48, 512000-byte units
  unsigned __int128 host_read_commands = 0;   // bytes 79:64
  unsigned __int128 host_write_commands = 0;  // bytes 95:80
  unsigned __int128 controller_busy_time_minutes = 0;  // bytes 111:96
  unsigned __int128 power_cycles = 0;                  // bytes 127:112
  unsigned __int128 power_on_hours = 0;                // bytes 143:128
  unsigned __int128 unsafe_shutdowns = 0;              // bytes 159:144
  unsigned __int128 media_errors = 0;                  // bytes 175:160
  unsigned __int128 error_log_entries = 0;             // bytes 191:176
  // Minutes at or above WCTEMP and below CCTEMP (bytes 195:192), and at or
  // above CCTEMP (bytes 199:196).
  std::uint32_t warning_temperature_time_minutes = 0;
  std::uint32_t critical_temperature_time_minutes = 0;
  // Temperature Sensor 1-8 (bytes 215:200); 0 means not implemented.
  std::array<std::uint16_t, 8> temperature_sensors_k{};
  // Host controlled thermal management (feature 10h): transitions into
  // and seconds spent in the TMT1 and TMT2 throttling levels (bytes 231:216).
  // These saturate at FFFFFFFFh instead of wrapping.
  std::uint32_t thermal_management_temp1_transitions = 0;
  std::uint32_t thermal_management_temp2_transitions = 0;
  std::uint32_t thermal_management_temp1_seconds = 0;
  std::uint32_t thermal_management_temp2_seconds = 0;

  // Fields newer than NVMe 2.0, which leaves bytes 511:232 reserved (as does
  // libnvme 1.3's struct nvme_smart_log). A later revision defines them with
  // the Power Measurement log page (25h); the layout here is current
  // libnvme's. Drives that predate them report 0, which both fields define
  // as "not reported".
  //
  // Operational Lifetime Energy Consumed, bytes 239:232: watt-hours since
  // manufacture, rounded up, saturating at 2^64-1; 0 = not reported.
  std::uint64_t lifetime_energy_watt_hours = 0;
  // Interval Power Measurement, bytes 243:240, raw: value in bits 15:0,
  // scale in bits 17:16, measurement type in bits 25:20.
  std::uint32_t interval_power_measurement = 0;

  bool CriticalWarning(SmartCriticalWarning bit) const {
    return (critical_warning & bit) != 0;
  }
  // Average power over the most recent one-second interval, in watts, when
  // reported as the NVM subsystem's total power (type 0) with a defined
  // scale; nullopt otherwise (not reported, reserved scale, or a vendor
  // specific measurement type whose meaning we cannot know).
  std::optional<double> IntervalPowerWatts() const;
};

// Decodes the first kSmartLogSize bytes of `bytes`. Fails with EBADMSG when
// fewer than kSmartLogSize bytes are given; reserved bytes are ignored.
Expected<SmartLog> DecodeSmartLog(std::span<const std::uint8_t> bytes);

// Reads the controller's SMART / Health log (02h, NSID FFFFFFFFh) and
// decodes it.
Expected<SmartLog> ReadSmartLog(Controller& ctrl);

}  // namespace drivewatch
