// SPDX-License-Identifier: Apache-2.0
// Decoders for the Get Features results the thermal and power probes read
// (NVMe 2.0 §5.27.1), and the dword 11 values that select them. Pure: no
// I/O, so they are fed byte fixtures in the tests.
//
// libnvme 1.3 has helpers for most of these, but several are broken (see
// NOTES.md: the APST helper sends the wrong FID, the temperature threshold
// helper reads only the composite over-threshold), so drivewatch builds the
// commands itself through Controller::GetFeature.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "config/util/expected.h"

namespace drivewatch {

inline constexpr std::uint8_t kFeaturePowerManagement = 0x02;
inline constexpr std::uint8_t kFeatureTemperatureThreshold = 0x04;
inline constexpr std::uint8_t kFeatureAsyncEventConfig = 0x0b;
inline constexpr std::uint8_t kFeatureAutonomousPowerStateTransition = 0x0c;
inline constexpr std::uint8_t kFeatureHostThermalManagement = 0x10;

// --- Temperature Threshold, 04h (NVMe 2.0 Figure 335/336) ---

enum class ThresholdType : std::uint8_t { kOver = 0, kUnder = 1 };  // THSEL

// TMPSEL 0 is the composite temperature, 1..8 Temperature Sensor 1-8.
inline constexpr int kCompositeSensor = 0;

// Dword 11 of Get Features 04h for one threshold: THSEL in bits 21:20,
// TMPSEL in bits 19:16.
constexpr std::uint32_t TemperatureThresholdCdw11(ThresholdType type,
                                                  int sensor) {
  return (static_cast<std::uint32_t>(type) << 20) |
         (static_cast<std::uint32_t>(sensor & 0xf) << 16);
}

// The threshold in kelvin: TMPTH, completion dword 0 bits 15:0. 0 K is a
// valid setting (the reset default of many under-thresholds) that can never
// trip, not "not reported".
constexpr std::uint16_t DecodeTemperatureThresholdKelvin(std::uint32_t dw0) {
  return static_cast<std::uint16_t>(dw0 & 0xffff);
}

// --- Host Controlled Thermal Management, 10h (NVMe 2.0 Figure 346) ---

struct HostThermalManagement {
  std::uint16_t tmt1_k = 0;  // bits 31:16; 0 = disabled
  std::uint16_t tmt2_k = 0;  // bits 15:0; 0 = disabled
  // Thermal management is in force when either threshold is set.
  bool Active() const { return tmt1_k != 0 || tmt2_k != 0; }
};
constexpr HostThermalManagement DecodeHostThermalManagement(std::uint32_t dw0) {
  return {static_cast<std::uint16_t>(dw0 >> 16),
          static_cast<std::uint16_t>(dw0 & 0xffff)};
}

// --- Power Management, 02h (NVMe 2.0 Figure 331) ---

struct PowerManagement {
  std::uint8_t power_state = 0;    // PS, bits 4:0
  std::uint8_t workload_hint = 0;  // WH, bits 7:5
};
constexpr PowerManagement DecodePowerManagement(std::uint32_t dw0) {
  return {static_cast<std::uint8_t>(dw0 & 0x1f),
          static_cast<std::uint8_t>((dw0 >> 5) & 0x7)};
}

// --- Autonomous Power State Transition, 0Ch (NVMe 2.0 Figures 339-341) ---

// The data buffer: 32 little-endian 64-bit entries, one per power state
// (libnvme's struct nvme_feat_auto_pst).
inline constexpr std::size_t kApstTableSize = 256;

struct ApstEntry {
  // From the power state the entry belongs to (its index), the controller
  // moves to `target_power_state` (ITPS, bits 7:3) after
  // `idle_time_ms` (ITPT, bits 31:8) of idle time; 0 = no transition.
  std::uint8_t target_power_state = 0;
  std::uint32_t idle_time_ms = 0;
};

struct ApstTable {
  bool enabled = false;  // APSTE, completion dword 0 bit 0
  std::array<ApstEntry, 32> entries{};
};

// Fails with EBADMSG when `data` is shorter than kApstTableSize.
Expected<ApstTable> DecodeApstTable(std::uint32_t dw0,
                                    std::span<const std::uint8_t> data);

// --- Asynchronous Event Configuration, 0Bh (NVMe 2.0 Figure 338) ---

// Bits 7:0: one enable per SMART / Health Critical Warning bit. The kernel
// enables only notices (bits 8 and up), so temperature and health events
// need these set by us (NOTES.md).
inline constexpr std::uint32_t kAsyncEventSmartMask = 0xff;
// Critical warning bits defined since NVMe 1.0 (spare, temperature,
// reliability, read-only, volatile backup); the fallback for controllers
// that reject the later bits as reserved.
inline constexpr std::uint32_t kAsyncEventSmartMaskNvme10 = 0x1f;
inline constexpr std::uint32_t kAsyncEventTemperatureBit = 1u << 1;

// --- Asynchronous Event Request completions (NVMe 2.0 Figure 146-150) ---

// Dword 0 of an AER completion, as the kernel passes it on in the NVME_AEN
// uevent: type bits 2:0, information bits 15:8, log page bits 23:16.
struct AsyncEvent {
  std::uint8_t type = 0;
  std::uint8_t info = 0;
  std::uint8_t log_page = 0;

  // "error", "smart", "notice", "io_command_set", "vendor" or "reserved".
  std::string TypeName() const;
  // A stable name for the event within its type, e.g. "temperature" for
  // SMART/health information 01h, "namespace_attribute_changed" for notice
  // 00h; "info_0xNN" for codes drivewatch has no name for.
  std::string InfoName() const;
};
constexpr AsyncEvent DecodeAsyncEvent(std::uint32_t dw0) {
  return {static_cast<std::uint8_t>(dw0 & 0x7),
          static_cast<std::uint8_t>((dw0 >> 8) & 0xff),
          static_cast<std::uint8_t>((dw0 >> 16) & 0xff)};
}

}  // namespace drivewatch
