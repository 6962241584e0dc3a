// SPDX-License-Identifier: Apache-2.0
// CRC-32C (config/util/crc32c.h), the checksum of history records, study
// records and the data pattern's chunks: the published check values, and
// the fast path and the table path against the bytewise definition at
// every alignment.
#include "config/util/crc32c.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace drivewatch::aging {
namespace {

// Byte-at-a-time CRC-32C, the definition the fast version must match.
std::uint32_t ReferenceCrc32c(const unsigned char* p, std::size_t n) {
  std::uint32_t crc = 0xFFFFFFFF;
  while (n--) {
    crc ^= *p++;
    for (int k = 0; k < 8; ++k) crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78 : crc >> 1;
  }
  return ~crc;
}

TEST(Crc32cTest, KnownVectors) {
  EXPECT_EQ(Crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(Crc32c("", 0), 0u);
  // RFC 3720 §B.4: 32 bytes of zeros.
  const std::string zeros(32, '\0');
  EXPECT_EQ(Crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
}

TEST(Crc32cTest, MatchesBytewiseAtEveryAlignmentAndChains) {
  unsigned char buf[300];
  for (int i = 0; i < 300; ++i) buf[i] = static_cast<unsigned char>(i * 7 + 3);
  for (std::size_t start = 0; start < 9; ++start) {
    for (std::size_t len = 0; len + start <= 300; len += 13) {
      ASSERT_EQ(Crc32c(buf + start, len), ReferenceCrc32c(buf + start, len))
          << start << "+" << len;
      ASSERT_EQ(detail::Crc32cPortable(buf + start, len), ReferenceCrc32c(buf + start, len))
          << start << "+" << len;
    }
  }
  EXPECT_EQ(Crc32c(buf + 100, 200, Crc32c(buf, 100)), Crc32c(buf, 300));
}

TEST(Crc32cTest, OnesContinuationAndByteTails) {
  // RFC 3720 B.4 and the usual check value.
  EXPECT_EQ(Crc32c("123456789", 9), 0xE3069283u);
  unsigned char zeros[32] = {};
  EXPECT_EQ(Crc32c(zeros, 32), 0x8A9136AAu);
  unsigned char ones[32];
  std::memset(ones, 0xff, 32);
  EXPECT_EQ(Crc32c(ones, 32), 0x62A8AB43u);
  // Continuing from a previous result equals one pass.
  const std::string text = "The quick brown fox jumps over the lazy dog";
  const std::uint32_t whole = Crc32c(text.data(), text.size());
  const std::uint32_t part = Crc32c(text.data(), 10);
  EXPECT_EQ(Crc32c(text.data() + 10, text.size() - 10, part), whole);
  // Odd lengths and alignments take the byte tail.
  for (std::size_t skip = 0; skip < 8; ++skip) {
    std::uint32_t table = ~0u;
    for (std::size_t i = skip; i < text.size(); ++i) {
      table ^= static_cast<unsigned char>(text[i]);
      for (int k = 0; k < 8; ++k) table = (table & 1) ? (table >> 1) ^ 0x82F63B78u : table >> 1;
    }
    EXPECT_EQ(Crc32c(text.data() + skip, text.size() - skip), ~table) << skip;
  }
}

}  // namespace
}  // namespace drivewatch::aging
