// SPDX-License-Identifier: Apache-2.0
// Decoder and reader of the OCP SMART / Health Information Extended log
// (C0h), from the OCP Datacenter NVMe SSD specification 2.0, Figure
// "SMART / Health Information Extended". Debian's nvme-cli 2.3 swaps the
// end-to-end detected and corrected offsets; these follow the specification.
#include "probes/drive/ocp_smart_log.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <string>

#include "config/util/text.h"
#include "probes/drive/byte_order.h"

namespace drivewatch {
namespace {

using detail::LoadLe;
using detail::LoadLe128;

// Loads a `width`-byte little-endian field (the 6- and 7-byte counters).
std::uint64_t LoadLeBytes(std::span<const std::uint8_t> bytes,
                          std::size_t offset, std::size_t width) {
  std::uint64_t value = 0;
  for (std::size_t i = width; i-- > 0;) value = (value << 8) | bytes[offset + i];
  return value;
}

// The GUID as the specification writes it: most significant byte first,
// upper-case hex.
std::string GuidText(std::span<const std::uint8_t> stored) {
  std::string out;
  for (std::size_t i = stored.size(); i-- > 0;) out += util::Hex(stored[i], 2, "");
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return std::toupper(c); });
  return out;
}

constexpr std::size_t kGuidOffset = 496;
constexpr std::size_t kVersionOffset = 494;
// UUID List: 32 reserved bytes, then 127 entries of 32 bytes, the UUID in
// bytes 31:16 of each (NVMe 2.0 Figures 284 and 285).
constexpr std::size_t kUuidListHeader = 32;
constexpr std::size_t kUuidEntrySize = 32;
constexpr std::size_t kUuidEntryUuidOffset = 16;
constexpr std::size_t kUuidListEntries = 127;

}  // namespace

std::string OcpSmartExtended::DssdVersion() const {
  if (dssd_major_version == 0 && dssd_minor_version == 0 &&
      dssd_point_version == 0 && dssd_errata_version == 0) {
    return "";
  }
  return std::to_string(dssd_major_version) + "." +
         std::to_string(dssd_minor_version) + "." +
         std::to_string(dssd_point_version) + "." +
         std::to_string(dssd_errata_version);
}

Expected<OcpSmartExtended> DecodeOcpSmartExtended(const Bytes& data) {
  const std::span<const std::uint8_t> bytes(data);
  if (bytes.size() < kOcpSmartExtendedLogSize) {
    return Error{EBADMSG, -1,
                 "OCP SMART extended log (C0h): " +
                     std::to_string(bytes.size()) + " bytes, expected " +
                     std::to_string(kOcpSmartExtendedLogSize)};
  }
  const auto guid = bytes.subspan(kGuidOffset, kOcpSmartExtendedGuid.size());
  if (!std::equal(guid.begin(), guid.end(), kOcpSmartExtendedGuid.begin())) {
    return Error{ENOMSG, -1,
                 "OCP SMART extended log (C0h): Log Page GUID (bytes "
                 "511:496) is " + GuidText(guid) + ", expected " +
                     GuidText(kOcpSmartExtendedGuid) +
                     ": the drive's log C0h is not the OCP one"};
  }
  OcpSmartExtended log;
  log.log_page_version = LoadLe<std::uint16_t>(bytes, kVersionOffset);
  if (log.log_page_version < kOcpSmartExtendedMinVersion ||
      log.log_page_version > kOcpSmartExtendedMaxVersion) {
    return Error{ENOMSG, -1,
                 "OCP SMART extended log (C0h): Log Page Version (bytes "
                 "495:494) is " + std::to_string(log.log_page_version) +
                     ", expected " +
                     std::to_string(kOcpSmartExtendedMinVersion) + " to " +
                     std::to_string(kOcpSmartExtendedMaxVersion) +
                     " (up to OCP 2.0)"};
  }
  log.physical_media_units_written = LoadLe128(bytes, 0);
  log.physical_media_units_read = LoadLe128(bytes, 16);
  log.bad_user_nand_blocks_raw = LoadLeBytes(bytes, 32, 6);
  log.bad_user_nand_blocks_normalized = LoadLe<std::uint16_t>(bytes, 38);
  log.bad_system_nand_blocks_raw = LoadLeBytes(bytes, 40, 6);
  log.bad_system_nand_blocks_normalized = LoadLe<std::uint16_t>(bytes, 46);
  log.xor_recovery_count = LoadLe<std::uint64_t>(bytes, 48);
  log.uncorrectable_read_error_count = LoadLe<std::uint64_t>(bytes, 56);
  log.soft_ecc_error_count = LoadLe<std::uint64_t>(bytes, 64);
  log.end_to_end_detected_errors = LoadLe<std::uint32_t>(bytes, 72);
  log.end_to_end_corrected_errors = LoadLe<std::uint32_t>(bytes, 76);
  log.system_data_percent_used = bytes[80];
  log.refresh_counts = LoadLeBytes(bytes, 81, 7);
  log.user_data_erase_count_max = LoadLe<std::uint32_t>(bytes, 88);
  log.user_data_erase_count_min = LoadLe<std::uint32_t>(bytes, 92);
  log.thermal_throttling_count = bytes[96];
  log.thermal_throttling_status = bytes[97];
  log.dssd_errata_version = bytes[98];
  log.dssd_point_version = LoadLe<std::uint16_t>(bytes, 99);
  log.dssd_minor_version = LoadLe<std::uint16_t>(bytes, 101);
  log.dssd_major_version = bytes[103];
  log.pcie_correctable_error_count = LoadLe<std::uint64_t>(bytes, 104);
  log.incomplete_shutdowns = LoadLe<std::uint32_t>(bytes, 112);
  log.percent_free_blocks = bytes[120];
  log.capacitor_health = LoadLe<std::uint16_t>(bytes, 128);
  log.nvme_errata_version = bytes[130];
  return log;
}

std::optional<std::uint8_t> FindUuidIndex(
    std::span<const std::uint8_t> list,
    const std::array<std::uint8_t, 16>& uuid) {
  for (std::size_t i = 0; i < kUuidListEntries; ++i) {
    const std::size_t at = kUuidListHeader + i * kUuidEntrySize +
                           kUuidEntryUuidOffset;
    if (at + uuid.size() > list.size()) break;
    const auto entry = list.subspan(at, uuid.size());
    if (std::all_of(entry.begin(), entry.end(),
                    [](std::uint8_t b) { return b == 0; })) {
      break;
    }
    if (std::equal(entry.begin(), entry.end(), uuid.begin())) {
      return static_cast<std::uint8_t>(i + 1);
    }
  }
  return std::nullopt;
}

Expected<OcpSmartExtended> ReadOcpSmartExtended(Controller& ctrl,
                                                const IdentifyController& id) {
  std::uint8_t uuid_index = 0;
  if ((id.ctratt & kCtrattUuidList) != 0) {
    auto list = ctrl.Identify(kIdentifyCnsUuidList, 0);
    // A controller that sets the bit but refuses the list is read as one
    // without it; anything else (EIO, a timeout) is the read's failure.
    if (!list && !list.error().Unsupported()) return list.error();
    if (list) {
      if (auto found = FindUuidIndex(*list, kOcpUuid)) uuid_index = *found;
    }
  }
  auto bytes = ctrl.GetLogPageUuid(kOcpSmartExtendedLogId, kNsidAll,
                                   kOcpSmartExtendedLogSize, uuid_index);
  if (!bytes) return bytes.error();
  return DecodeOcpSmartExtended(*bytes);
}

Expected<OcpSmartExtended> ReadOcpSmartExtended(Controller& ctrl) {
  auto bytes = ctrl.Identify(kIdentifyCnsController, 0);
  if (!bytes) return bytes.error();
  auto id = DecodeIdentifyController(*bytes);
  if (!id) return id.error();
  return ReadOcpSmartExtended(ctrl, *id);
}

}  // namespace drivewatch
