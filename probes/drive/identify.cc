// SPDX-License-Identifier: Apache-2.0
#include "probes/drive/identify.h"

#include <algorithm>
#include <cerrno>

#include "probes/drive/byte_order.h"
#include "probes/drive/units.h"

namespace drivewatch {
namespace {

using detail::LoadLe;
using detail::LoadLe128;

constexpr std::size_t kPowerStateOffset = 2048;
constexpr std::size_t kPowerStateSize = 32;
constexpr std::size_t kLbaFormatOffset = 128;
constexpr std::size_t kMaxLbaFormats = 64;
// LBADS below 9 (blocks under 512 bytes) is not supported (NVM Command Set
// 1.0 Figure 98). The upper bound is ours: nothing real comes close, and it
// keeps 2^LBADS and NSZE * 2^LBADS far from overflow on fuzzed input.
constexpr std::uint8_t kMinLbads = 9;
constexpr std::uint8_t kMaxLbads = 31;

Error ShortBuffer(const char* what, std::size_t got) {
  return Error{EBADMSG, -1,
               std::string(what) + ": " + std::to_string(got) +
                   " bytes, expected " + std::to_string(kIdentifySize)};
}

std::string_view AsChars(std::span<const std::uint8_t> bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}


PowerStateDescriptor DecodePowerState(std::span<const std::uint8_t> psd) {
  PowerStateDescriptor ps;
  ps.max_power = LoadLe<std::uint16_t>(psd, 0);
  ps.flags = psd[3];
  ps.entry_latency_us = LoadLe<std::uint32_t>(psd, 4);
  ps.exit_latency_us = LoadLe<std::uint32_t>(psd, 8);
  ps.relative_read_throughput = psd[12] & 0x1f;
  ps.relative_read_latency = psd[13] & 0x1f;
  ps.relative_write_throughput = psd[14] & 0x1f;
  ps.relative_write_latency = psd[15] & 0x1f;
  ps.idle_power = LoadLe<std::uint16_t>(psd, 16);
  ps.idle_power_scale = psd[18] >> 6;
  ps.active_power = LoadLe<std::uint16_t>(psd, 20);
  ps.active_power_workload = psd[22] & 0x7;
  ps.active_power_scale = psd[22] >> 6;
  return ps;
}

}  // namespace

std::string TrimIdentifyString(std::string_view field) {
  field = field.substr(0, field.find('\0'));
  const auto first = field.find_first_not_of(' ');
  if (first == std::string_view::npos) return {};
  field = field.substr(first, field.find_last_not_of(' ') - first + 1);
  std::string out(field);
  std::replace_if(
      out.begin(), out.end(),
      [](char c) {
        const auto u = static_cast<unsigned char>(c);
        return u < 0x20 || u > 0x7e;
      },
      '?');
  return out;
}

std::optional<double> PowerStateDescriptor::MaxPowerWatts() const {
  if (max_power == 0) return std::nullopt;
  return max_power * ((flags & kFlagMaxPowerScale) ? 0.0001 : 0.01);
}

std::optional<double> PowerStateDescriptor::IdlePowerWatts() const {
  return units::ScaledPowerWatts(idle_power, idle_power_scale);
}

std::optional<double> PowerStateDescriptor::ActivePowerWatts() const {
  return units::ScaledPowerWatts(active_power, active_power_scale);
}

std::string IdentifyController::Version() const {
  if (ver == 0) return {};
  std::string out =
      std::to_string(ver >> 16) + "." + std::to_string((ver >> 8) & 0xff);
  if ((ver & 0xff) != 0) out += "." + std::to_string(ver & 0xff);
  return out;
}

Expected<IdentifyController> DecodeIdentifyController(
    std::span<const std::uint8_t> bytes) {
  if (bytes.size() < kIdentifySize) {
    return ShortBuffer("Identify Controller", bytes.size());
  }
  IdentifyController id;
  id.vid = LoadLe<std::uint16_t>(bytes, 0);
  id.ssvid = LoadLe<std::uint16_t>(bytes, 2);
  id.serial = TrimIdentifyString(AsChars(bytes.subspan(4, 20)));
  id.model = TrimIdentifyString(AsChars(bytes.subspan(24, 40)));
  id.firmware = TrimIdentifyString(AsChars(bytes.subspan(64, 8)));
  id.rab = bytes[72];
  // Bytes 75:73, least significant byte first like every other field; this
  // is how nvme-cli and smartctl print it (Samsung: 002538).
  id.ieee_oui = bytes[73] | (bytes[74] << 8) | (bytes[75] << 16);
  id.cmic = bytes[76];
  id.mdts = bytes[77];
  id.cntlid = LoadLe<std::uint16_t>(bytes, 78);
  id.ver = LoadLe<std::uint32_t>(bytes, 80);
  id.ctratt = LoadLe<std::uint32_t>(bytes, 96);
  id.oacs = LoadLe<std::uint16_t>(bytes, 256);
  id.lpa = bytes[261];
  id.elpe = bytes[262];
  id.npss = bytes[263];
  id.apsta = bytes[265];
  id.wctemp_k = LoadLe<std::uint16_t>(bytes, 266);
  id.cctemp_k = LoadLe<std::uint16_t>(bytes, 268);
  id.tnvmcap = LoadLe128(bytes, 280);
  id.unvmcap = LoadLe128(bytes, 296);
  id.hctma = LoadLe<std::uint16_t>(bytes, 322);
  id.mntmt_k = LoadLe<std::uint16_t>(bytes, 324);
  id.mxtmt_k = LoadLe<std::uint16_t>(bytes, 326);
  id.nn = LoadLe<std::uint32_t>(bytes, 516);
  for (std::size_t i = 0; i < id.power_states.size(); ++i) {
    id.power_states[i] = DecodePowerState(bytes.subspan(
        kPowerStateOffset + i * kPowerStateSize, kPowerStateSize));
  }
  return id;
}

double IdentifyNamespace::BlocksToBytes(std::uint64_t blocks) const {
  return static_cast<double>(static_cast<unsigned __int128>(blocks) *
                             lba_data_size);
}

Expected<IdentifyNamespace> DecodeIdentifyNamespace(
    std::span<const std::uint8_t> bytes) {
  if (bytes.size() < kIdentifySize) {
    return ShortBuffer("Identify Namespace", bytes.size());
  }
  IdentifyNamespace ns;
  ns.nsze = LoadLe<std::uint64_t>(bytes, 0);
  ns.ncap = LoadLe<std::uint64_t>(bytes, 8);
  ns.nuse = LoadLe<std::uint64_t>(bytes, 16);
  ns.nlbaf = bytes[25];
  ns.flbas = bytes[26];
  if (ns.nlbaf >= kMaxLbaFormats) {
    return Error{EBADMSG, -1,
                 "Identify Namespace: NLBAF " + std::to_string(ns.nlbaf) +
                     ", expected at most " +
                     std::to_string(kMaxLbaFormats - 1)};
  }
  for (std::size_t i = 0; i <= ns.nlbaf; ++i) {
    const auto lbaf = bytes.subspan(kLbaFormatOffset + 4 * i, 4);
    ns.lba_formats.push_back(LbaFormat{
        .metadata_size = LoadLe<std::uint16_t>(lbaf, 0),
        .lbads = lbaf[2],
        .relative_performance = static_cast<std::uint8_t>(lbaf[3] & 0x3),
    });
  }
  ns.format_index = (ns.flbas & 0x0f) | ((ns.flbas >> 5) & 0x3) << 4;
  if (ns.format_index > ns.nlbaf) {
    return Error{EBADMSG, -1,
                 "Identify Namespace: FLBAS selects LBA format " +
                     std::to_string(ns.format_index) + ", but NLBAF is " +
                     std::to_string(ns.nlbaf)};
  }
  const LbaFormat& current = ns.lba_formats[ns.format_index];
  if (current.lbads < kMinLbads || current.lbads > kMaxLbads) {
    // An inactive NSID returns a zero-filled structure (NVMe 2.0 §5.17),
    // which lands here with LBADS 0; say so rather than blame the format.
    if (ns.nsze == 0 && current.lbads == 0) {
      return Error{EBADMSG, -1,
                   "Identify Namespace: all zero, namespace is not active"};
    }
    return Error{
        EBADMSG, -1,
        "Identify Namespace: LBA format " + std::to_string(ns.format_index) +
            " has LBADS " + std::to_string(current.lbads) + ", expected " +
            std::to_string(kMinLbads) + ".." + std::to_string(kMaxLbads)};
  }
  ns.lba_data_size = std::uint64_t{1} << current.lbads;
  ns.metadata_size = current.metadata_size;
  return ns;
}

Expected<IdentifyController> ReadIdentifyController(
    Controller& ctrl, const ControllerInfo& info) {
  auto bytes = ctrl.Identify(kIdentifyCnsController, 0);
  if (!bytes) return bytes.error();
  auto id = DecodeIdentifyController(*bytes);
  if (!id) return OnDevice(info, id.error());
  if (id->serial != info.serial) {
    return Error{ENODEV, -1,
                 info.device + ": Identify Controller serial \"" + id->serial +
                     "\" differs from \"" + info.serial +
                     "\" found by the scan; the device node now belongs to "
                     "another drive"};
  }
  return id;
}

}  // namespace drivewatch
