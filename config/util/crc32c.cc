// SPDX-License-Identifier: Apache-2.0
#include "config/util/crc32c.h"

#include <array>
#include <bit>
#include <cstring>
#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace drivewatch::aging {
namespace {

// Slicing-by-8 tables for the reflected Castagnoli polynomial 0x82F63B78:
// tables[k][b] is the CRC of byte b followed by k zero bytes.
constexpr std::array<std::array<std::uint32_t, 256>, 8> MakeCrcTables() {
  std::array<std::array<std::uint32_t, 256>, 8> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t crc = i;
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
    }
    t[0][i] = crc;
  }
  for (std::uint32_t i = 0; i < 256; ++i) {
    for (int k = 1; k < 8; ++k) {
      t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xFF];
    }
  }
  return t;
}

constexpr auto kCrcTables = MakeCrcTables();

std::uint32_t Crc32cSliced(const unsigned char* p, std::size_t size, std::uint32_t crc) {

  if constexpr (std::endian::native == std::endian::little) {
    const auto& t = kCrcTables;
    while (size >= 8) {
      std::uint64_t w;
      std::memcpy(&w, p, 8);
      w ^= crc;
      crc = t[7][w & 0xFF] ^ t[6][(w >> 8) & 0xFF] ^ t[5][(w >> 16) & 0xFF] ^
            t[4][(w >> 24) & 0xFF] ^ t[3][(w >> 32) & 0xFF] ^
            t[2][(w >> 40) & 0xFF] ^ t[1][(w >> 48) & 0xFF] ^ t[0][w >> 56];
      p += 8;
      size -= 8;
    }
  }
  while (size--) crc = (crc >> 8) ^ kCrcTables[0][(crc ^ *p++) & 0xFF];
  return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) std::uint32_t Crc32cSse42(
    const unsigned char* p, std::size_t n, std::uint32_t crc) {
  std::uint64_t c = crc;
  while (n >= 8) {
    std::uint64_t word;
    std::memcpy(&word, p, 8);
    c = _mm_crc32_u64(c, word);
    p += 8;
    n -= 8;
  }
  auto c32 = static_cast<std::uint32_t>(c);
  while (n-- > 0) c32 = _mm_crc32_u8(c32, *p++);
  return c32;
}

const bool kHaveSse42 = __builtin_cpu_supports("sse4.2");
#endif

}  // namespace

std::uint32_t Crc32c(const void* data, std::size_t size, std::uint32_t crc) {
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
#if defined(__x86_64__)
  if (kHaveSse42) return ~Crc32cSse42(p, size, crc);
#endif
  return ~Crc32cSliced(p, size, crc);
}

namespace detail {
std::uint32_t Crc32cPortable(const void* data, std::size_t size, std::uint32_t crc) {
  return ~Crc32cSliced(static_cast<const unsigned char*>(data), size, ~crc);
}
}  // namespace detail

}  // namespace drivewatch::aging
