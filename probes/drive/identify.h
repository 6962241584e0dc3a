// SPDX-License-Identifier: Apache-2.0
// Decoders for the Identify data structures drivewatch reads (NVMe 2.0
// §5.17): Identify Controller (CNS 01h, the I/O command set independent
// Identify Controller data structure) and the NVM command set's Identify
// Namespace (CNS 00h, NVM Command Set Specification 1.0 Figure 97).
// Pure: bytes in, typed structs out, no I/O.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/util/expected.h"
#include "probes/drive/drive_layer.h"

namespace drivewatch {

inline constexpr std::uint8_t kIdentifyCnsNamespace = 0x00;
inline constexpr std::uint8_t kIdentifyCnsController = 0x01;
inline constexpr std::size_t kIdentifySize = 4096;
// Get Log Page and the SMART log ask for the controller-wide view with the
// broadcast NSID.
inline constexpr std::uint32_t kNsidAll = 0xffffffff;

// Identify's SN, MN and FR fields are ASCII, space padded and not NUL
// terminated (NVMe 2.0, "ASCII string" convention). Returns the field without
// leading or trailing spaces, stopping at the first NUL (some firmware pads
// with NULs), with any byte outside printable ASCII replaced by '?' so a
// broken drive cannot put invalid UTF-8 into a label. Used for sysfs copies
// of the same fields too, so both spell a serial identically.
std::string TrimIdentifyString(std::string_view field);

// Power State Descriptor (NVMe 2.0, in Identify Controller bytes 3071:2048),
// 32 bytes each.
struct PowerStateDescriptor {
  std::uint16_t max_power = 0;                 // MP, in units chosen by MXPS
  std::uint8_t flags = 0;                      // byte 3: bit 0 MXPS, bit 1 NOPS
  std::uint32_t entry_latency_us = 0;          // ENLAT, 0 = not reported
  std::uint32_t exit_latency_us = 0;           // EXLAT, 0 = not reported
  std::uint8_t relative_read_throughput = 0;   // RRT
  std::uint8_t relative_read_latency = 0;      // RRL
  std::uint8_t relative_write_throughput = 0;  // RWT
  std::uint8_t relative_write_latency = 0;     // RWL
  std::uint16_t idle_power = 0;                // IDLP
  std::uint8_t idle_power_scale = 0;           // IPS, byte 18 bits 7:6
  std::uint16_t active_power = 0;              // ACTP
  std::uint8_t active_power_workload = 0;      // APW, byte 22 bits 2:0
  std::uint8_t active_power_scale = 0;         // APS, byte 22 bits 7:6

  static constexpr std::uint8_t kFlagMaxPowerScale = 1 << 0;   // MXPS
  static constexpr std::uint8_t kFlagNonOperational = 1 << 1;  // NOPS

  // MP in watts: units of 0.01 W, or 0.0001 W when MXPS is set. nullopt
  // when MP is 0 (not reported).
  std::optional<double> MaxPowerWatts() const;
  // IDLP and ACTP in watts; nullopt when their scale is 00b (not reported)
  // or the reserved 11b.
  std::optional<double> IdlePowerWatts() const;
  std::optional<double> ActivePowerWatts() const;
  bool NonOperational() const { return (flags & kFlagNonOperational) != 0; }
};

// The Identify Controller fields drivewatch uses, by their spec mnemonic.
struct IdentifyController {
  std::uint16_t vid = 0;       // PCI vendor ID
  std::uint16_t ssvid = 0;     // PCI subsystem vendor ID
  std::string serial;          // SN, trimmed
  std::string model;           // MN, trimmed
  std::string firmware;        // FR, trimmed
  std::uint8_t rab = 0;        // recommended arbitration burst, 2^n commands
  std::uint32_t ieee_oui = 0;  // IEEE OUI, 24 bits
  std::uint8_t cmic = 0;       // multi-path I/O and namespace sharing
  std::uint8_t mdts = 0;  // max data transfer size, 2^n min pages; 0 = none
  std::uint16_t cntlid = 0;
  std::uint32_t ver = 0;          // 31:16 major, 15:8 minor, 7:0 tertiary
  std::uint32_t ctratt = 0;       // controller attributes; bit 9 UUID list
  std::uint16_t oacs = 0;         // optional admin command support
  std::uint8_t lpa = 0;           // log page attributes
  std::uint8_t elpe = 0;          // error log page entries, 0's based
  std::uint8_t npss = 0;          // number of power states, 0's based
  std::uint8_t apsta = 0;         // bit 0: autonomous power state transitions
  std::uint16_t wctemp_k = 0;     // warning composite temperature threshold
  std::uint16_t cctemp_k = 0;     // critical composite temperature threshold
  std::uint16_t hctma = 0;        // bit 0: host controlled thermal management
  std::uint16_t mntmt_k = 0;      // minimum thermal management temperature
  std::uint16_t mxtmt_k = 0;      // maximum thermal management temperature
  unsigned __int128 tnvmcap = 0;  // total NVM capacity, bytes
  unsigned __int128 unvmcap = 0;  // unallocated NVM capacity, bytes
  std::uint32_t nn = 0;           // maximum NSID
  std::array<PowerStateDescriptor, 32> power_states{};

  // "major.minor", plus ".tertiary" when that is non-zero ("1.4", "2.0",
  // "1.2.1"); empty when VER is 0, as controllers before NVMe 1.2 report.
  std::string Version() const;
  // Power states the controller supports: NPSS + 1, clamped to the 32
  // descriptors a broken NPSS could point past.
  int PowerStateCount() const { return npss < 32 ? npss + 1 : 32; }
  // Error Information log entries the controller keeps (ELPE + 1).
  int ErrorLogCapacity() const { return elpe + 1; }
};

// Decodes the first kIdentifySize bytes of an Identify Controller response.
// Fails with EBADMSG on a shorter buffer.
Expected<IdentifyController> DecodeIdentifyController(
    std::span<const std::uint8_t> bytes);

// Sends Identify Controller to `ctrl`, decodes it, and checks that the
// controller is still the drive discovery found as `info`: a device node
// that another drive took over between scan and run (hot-plug) fails with
// ENODEV rather than report under the wrong serial. Messages name the device.
Expected<IdentifyController> ReadIdentifyController(Controller& ctrl,
                                                    const ControllerInfo& info);

// LBA Format Data Structure (NVM Command Set 1.0 Figure 98).
struct LbaFormat {
  std::uint16_t metadata_size = 0;  // MS, bytes per LBA
  std::uint8_t lbads = 0;           // LBA data size, 2^n bytes; 0 = unavailable
  std::uint8_t relative_performance = 0;  // RP
};

struct IdentifyNamespace {
  std::uint64_t nsze = 0;              // namespace size, logical blocks
  std::uint64_t ncap = 0;              // namespace capacity, logical blocks
  std::uint64_t nuse = 0;              // namespace utilization, logical blocks
  std::uint8_t nlbaf = 0;              // number of LBA formats, 0's based
  std::uint8_t flbas = 0;              // formatted LBA size, raw
  std::vector<LbaFormat> lba_formats;  // nlbaf + 1 entries
  // The format in use: FLBAS bits 3:0, plus bits 6:5 as the index's two
  // most significant bits (NVMe 2.0 raised the limit from 16 to 64 formats).
  std::uint8_t format_index = 0;
  std::uint64_t lba_data_size = 0;  // bytes, 2^LBADS of the format in use
  std::uint16_t metadata_size = 0;  // bytes, MS of the format in use

  // `blocks` logical blocks in bytes; a double because NSZE * 2^LBADS can
  // exceed 64 bits.
  double BlocksToBytes(std::uint64_t blocks) const;
};

// Decodes the first kIdentifySize bytes of an Identify Namespace response.
// Fails with EBADMSG on a shorter buffer, on an inactive namespace (all-zero
// data, NVMe 2.0 §5.17), or when the format in use is out of range.
Expected<IdentifyNamespace> DecodeIdentifyNamespace(
    std::span<const std::uint8_t> bytes);

}  // namespace drivewatch
