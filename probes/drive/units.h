// SPDX-License-Identifier: Apache-2.0
// Conversions from the units NVMe reports in to the base units drivewatch
// exports (Prometheus conventions: seconds, bytes, celsius, joules, watts and
// ratios). Every probe converts through these so a unit is decided once.
#pragma once

#include <cstdint>
#include <optional>

namespace drivewatch::units {

// Kelvin to degrees Celsius. NVMe reports temperatures as whole kelvins
// (SMART log, NVMe 2.0 Figure 207; WCTEMP/CCTEMP in Identify Controller)
// and uses 0 for "not reported" (Temperature Sensor 1-8, WCTEMP, CCTEMP), so
// 0 maps to nullopt.
//
// The offset is the SI 273.15, as the kernel's nvme hwmon driver uses
// (kelvin_to_millicelsius), so our series line up with node_exporter's
// node_hwmon_temp_celsius for the same sensor. nvme-cli and smartctl print
// K - 273, so their whole-degree displays read 0.15 higher than ours.
inline constexpr double kKelvinAtZeroCelsius = 273.15;
inline constexpr std::int64_t kKelvinAtZeroCelsiusHundredths = 27315;

constexpr std::optional<double> KelvinToCelsius(std::uint32_t kelvin) {
  if (kelvin == 0) return std::nullopt;
  // In hundredths, so the result is the double nearest the decimal value
  // (323 K -> 49.85, not 49.85000000000002 as kelvin - 273.15 gives).
  return static_cast<double>(static_cast<std::int64_t>(kelvin) * 100 -
                             kKelvinAtZeroCelsiusHundredths) /
         100;
}

// Exact to 2^53 (about 9.0e15); above that the nearest double, which is what
// a Prometheus sample can hold anyway.
constexpr double ToDouble(unsigned __int128 value) {
  return static_cast<double>(value);
}

// value * factor as the nearest double. The product is formed in 128 bits
// whenever it fits, so it is rounded once (converting first and multiplying
// in double would round twice and can be one ulp off); only a product past
// 2^128, which no real counter reaches, is computed in double.
constexpr double ScaledToDouble(unsigned __int128 value, std::uint32_t factor) {
  if (factor != 0 && value > ~static_cast<unsigned __int128>(0) / factor) {
    return ToDouble(value) * factor;
  }
  return ToDouble(value * factor);
}

// One SMART "data unit" is 1000 units of 512 bytes (NVMe 2.0 Figure 207,
// Data Units Read/Written), reported rounded up.
inline constexpr std::uint32_t kDataUnitBytes = 512'000;

// Data units to bytes. 512000 = 125 * 2^12, so the double is exact while
// units * 125 <= 2^53, i.e. up to 2^65 bytes (about 36.9 EB: 167 years of
// writing at a sustained 7 GB/s). Beyond that it is the nearest double; the
// spacing of doubles stays below one data unit (512000 bytes) up to 2^71
// bytes, so every increment still shows until then.
constexpr double DataUnitsToBytes(unsigned __int128 units) {
  return ScaledToDouble(units, kDataUnitBytes);
}

constexpr double MinutesToSeconds(unsigned __int128 minutes) {
  return ScaledToDouble(minutes, 60);
}
constexpr double HoursToSeconds(unsigned __int128 hours) {
  return ScaledToDouble(hours, 3600);
}
constexpr double WattHoursToJoules(unsigned __int128 watt_hours) {
  return ScaledToDouble(watt_hours, 3600);
}

// Normalized percentages (Available Spare, Percentage Used, ...). Percentage
// Used may exceed 100 (capped at 255), so the ratio may exceed 1.
constexpr double PercentToRatio(std::uint32_t percent) {
  return static_cast<double>(percent) / 100.0;
}

// Power in the two-bit scale shared by the Power State Descriptor's IPS and
// APS fields and the SMART log's Interval Power Measurement: 01b is units of
// 0.0001 W, 10b of 0.01 W; 00b (not reported) and 11b (reserved) give
// nullopt.
constexpr std::optional<double> ScaledPowerWatts(std::uint32_t value,
                                                 std::uint32_t scale) {
  switch (scale) {
    case 1:
      return value * 0.0001;
    case 2:
      return value * 0.01;
    default:
      return std::nullopt;
  }
}

}  // namespace drivewatch::units
