// SPDX-License-Identifier: Apache-2.0
#include "probes/drive/features.h"

#include <cerrno>
#include <cstdio>

#include "probes/drive/byte_order.h"

namespace drivewatch {

Expected<ApstTable> DecodeApstTable(std::uint32_t dw0,
                                    std::span<const std::uint8_t> data) {
  if (data.size() < kApstTableSize) {
    return Error{EBADMSG, -1,
                 "APST table (feature 0Ch): " + std::to_string(data.size()) +
                     " bytes, expected " + std::to_string(kApstTableSize)};
  }
  ApstTable table;
  table.enabled = (dw0 & 1) != 0;
  for (std::size_t i = 0; i < table.entries.size(); ++i) {
    const auto entry = detail::LoadLe<std::uint64_t>(data, 8 * i);
    table.entries[i].target_power_state =
        static_cast<std::uint8_t>((entry >> 3) & 0x1f);
    table.entries[i].idle_time_ms =
        static_cast<std::uint32_t>((entry >> 8) & 0xffffff);
  }
  return table;
}

std::string AsyncEvent::TypeName() const {
  switch (type) {
    case 0: return "error";
    case 1: return "smart";
    case 2: return "notice";
    case 6: return "io_command_set";
    case 7: return "vendor";
    default: return "reserved";
  }
}

std::string AsyncEvent::InfoName() const {
  // NVMe 2.0 Figures 147 (error), 148 (SMART / health), 149 (notice).
  if (type == 0) {
    switch (info) {
      case 0x00: return "invalid_doorbell";
      case 0x01: return "invalid_doorbell_value";
      case 0x02: return "diagnostic_failure";
      case 0x03: return "persistent_internal_error";
      case 0x04: return "transient_internal_error";
      case 0x05: return "firmware_image_load_error";
      default: break;
    }
  } else if (type == 1) {
    switch (info) {
      case 0x00: return "reliability";
      case 0x01: return "temperature";
      case 0x02: return "spare_below_threshold";
      default: break;
    }
  } else if (type == 2) {
    switch (info) {
      case 0x00: return "namespace_attribute_changed";
      case 0x01: return "firmware_activation_starting";
      case 0x02: return "telemetry_log_changed";
      case 0x03: return "asymmetric_namespace_access_change";
      case 0x04: return "predictable_latency_aggregate_log_change";
      case 0x05: return "lba_status_information_alert";
      case 0x06: return "endurance_group_event_aggregate_log_change";
      case 0x07: return "normal_nvm_subsystem_shutdown";
      case 0xf0: return "discovery_log_page_change";
      default: break;
    }
  }
  char buf[16];
  std::snprintf(buf, sizeof(buf), "info_0x%02x", info);
  return buf;
}

}  // namespace drivewatch
