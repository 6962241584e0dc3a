// SPDX-License-Identifier: Apache-2.0
// The OCP SMART / Health Information Extended log (Log Identifier C0h) of
// the OCP Datacenter NVMe SSD specification 2.0: the decoder (pure, bytes
// in, typed struct out, fuzzed) and the reader that finds the log's UUID
// index and reads it. Offsets are the specification's, not nvme-cli's.
// docs/metrics.md "OCP SMART extended probe".
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "config/util/expected.h"
#include "probes/drive/drive_layer.h"
#include "probes/drive/identify.h"

namespace drivewatch {

inline constexpr std::uint8_t kOcpSmartExtendedLogId = 0xc0;
inline constexpr std::size_t kOcpSmartExtendedLogSize = 512;
// Identify CNS 17h: the UUID List (NVMe 2.0 §5.17.2.1, Figure 284).
inline constexpr std::uint8_t kIdentifyCnsUuidList = 0x17;
// Identify Controller CTRATT bit 9: the controller supports the UUID List.
inline constexpr std::uint32_t kCtrattUuidList = 1u << 9;
// The UUID the OCP specification assigns to its vendor specific logs, as
// the UUID List entry holds it (bytes 31:16 of the entry).
inline constexpr std::array<std::uint8_t, 16> kOcpUuid = {
    0xc1, 0x94, 0xd5, 0x5b, 0xe0, 0x94, 0x47, 0x94,
    0xa2, 0x1d, 0x29, 0x99, 0x8f, 0x56, 0xbe, 0x6f};
// Log Page GUID AFD514C97C6F4F9CA4F2BFEA2810AFC5, bytes 511:496, stored
// least significant byte first.
inline constexpr std::array<std::uint8_t, 16> kOcpSmartExtendedGuid = {
    0xc5, 0xaf, 0x10, 0x28, 0xea, 0xbf, 0xf2, 0xa4,
    0x9c, 0x4f, 0x6f, 0x7c, 0xc9, 0x14, 0xd5, 0xaf};
// Log Page Versions drivewatch decodes: the published ones, 0002h (OCP
// 1.0, then the "NVMe Cloud SSD Specification"), 0003h (OCP 2.0) and 0004h
// (OCP 2.5). No version moved a field this decoder reads: a field a version
// predates (the DSSD version, 2.0) is reserved there and reads 0, and 2.5's
// additions fall in bytes this decoder leaves alone. Anything else (0001h
// was never published; 0005h and later are not known) is refused until it
// is decoded from its specification.
inline constexpr std::uint16_t kOcpSmartExtendedMinVersion = 2;
inline constexpr std::uint16_t kOcpSmartExtendedMaxVersion = 4;

// Every field drivewatch exports, in the units the log reports them.
struct OcpSmartExtended {
  unsigned __int128 physical_media_units_written = 0;  // bytes 15:0, bytes
  unsigned __int128 physical_media_units_read = 0;     // bytes 31:16, bytes
  // Bad User / System NAND Blocks: raw count in bytes 5:0 of the field,
  // normalized value in bytes 7:6 (fields at 39:32 and 47:40).
  std::uint64_t bad_user_nand_blocks_raw = 0;
  std::uint16_t bad_user_nand_blocks_normalized = 0;
  std::uint64_t bad_system_nand_blocks_raw = 0;
  std::uint16_t bad_system_nand_blocks_normalized = 0;
  std::uint64_t xor_recovery_count = 0;              // bytes 55:48
  std::uint64_t uncorrectable_read_error_count = 0;  // bytes 63:56
  std::uint64_t soft_ecc_error_count = 0;            // bytes 71:64
  // End to End Correction Counts, bytes 79:72: detected errors in 75:72,
  // corrected errors in 79:76.
  std::uint32_t end_to_end_detected_errors = 0;
  std::uint32_t end_to_end_corrected_errors = 0;
  std::uint8_t system_data_percent_used = 0;  // byte 80
  std::uint64_t refresh_counts = 0;           // bytes 87:81, 56 bits
  // User Data Erase Counts, bytes 95:88: maximum in 91:88, minimum in 95:92.
  std::uint32_t user_data_erase_count_max = 0;
  std::uint32_t user_data_erase_count_min = 0;
  // Thermal Throttling Status and Count, bytes 97:96: events in byte 96,
  // current status in byte 97 (0 unthrottled, 1..3 first to third level).
  std::uint8_t thermal_throttling_count = 0;
  std::uint8_t thermal_throttling_status = 0;
  // DSSD Specification Version, bytes 103:98: errata (98), point (100:99),
  // minor (102:101), major (103).
  std::uint8_t dssd_errata_version = 0;
  std::uint16_t dssd_point_version = 0;
  std::uint16_t dssd_minor_version = 0;
  std::uint8_t dssd_major_version = 0;
  std::uint64_t pcie_correctable_error_count = 0;  // bytes 111:104
  std::uint32_t incomplete_shutdowns = 0;          // bytes 115:112
  std::uint8_t percent_free_blocks = 0;            // byte 120
  std::uint16_t capacitor_health = 0;              // bytes 129:128, percent
  std::uint8_t nvme_errata_version = 0;            // byte 130
  std::uint16_t log_page_version = 0;              // bytes 495:494

  // "major.minor.point.errata", e.g. "2.0.0.0"; empty when all are 0 (log
  // versions before OCP 2.0 leave the field reserved).
  std::string DssdVersion() const;
};

// Decodes the first kOcpSmartExtendedLogSize bytes of `bytes`. Fails with
// EBADMSG when fewer are given, and with ENOMSG when the Log Page GUID is
// not the OCP one (the drive's C0h is some other vendor log) or the Log
// Page Version is not one drivewatch decodes.
Expected<OcpSmartExtended> DecodeOcpSmartExtended(const Bytes& bytes);

// The UUID index (1-based position in the Identify UUID List) of `uuid`,
// nullopt when the list does not hold it. The list ends at the first
// all-zero entry (NVMe 2.0 Figure 284); a short buffer holds no entries.
std::optional<std::uint8_t> FindUuidIndex(std::span<const std::uint8_t> list,
                                          const std::array<std::uint8_t, 16>& uuid);

// Reads and decodes log C0h: when Identify Controller CTRATT bit 9 says the
// controller has a UUID List, reads it (Identify CNS 17h) and uses the OCP
// UUID's index in Get Log Page CDW14; otherwise, or when the list lacks the
// OCP UUID (drives built to OCP 1.0) or the controller refuses it, UUID
// index 0. The GUID check keeps a
// vendor's unrelated C0h from being decoded. Errors are the controller's
// (Error::Unsupported() when it refuses) or the decoder's.
Expected<OcpSmartExtended> ReadOcpSmartExtended(Controller& ctrl,
                                                const IdentifyController& id);
// The same, reading Identify Controller first (the endurance phase calls
// this between passes).
Expected<OcpSmartExtended> ReadOcpSmartExtended(Controller& ctrl);

}  // namespace drivewatch
