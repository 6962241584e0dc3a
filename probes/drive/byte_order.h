// SPDX-License-Identifier: Apache-2.0
// Little-endian loads from NVMe data structures. Every multi-byte field the
// NVMe specifications define is little-endian (NVMe 2.0, "Conventions"),
// whatever the host's byte order. Callers check the buffer length first; these
// helpers only assemble bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace drivewatch::detail {

template <typename T>
constexpr T LoadLe(std::span<const std::uint8_t> bytes, std::size_t offset) {
  T value = 0;
  for (std::size_t i = sizeof(T); i-- > 0;) {
    value = static_cast<T>(value << 8) | bytes[offset + i];
  }
  return value;
}

// 16-byte counters of the SMART / Health log (NVMe 2.0 Figure 207) and the
// capacity fields of Identify Controller (TNVMCAP, UNVMCAP).
constexpr unsigned __int128 LoadLe128(std::span<const std::uint8_t> bytes,
                                      std::size_t offset) {
  return LoadLe<unsigned __int128>(bytes, offset);
}

}  // namespace drivewatch::detail
