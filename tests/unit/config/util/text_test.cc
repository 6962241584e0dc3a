// SPDX-License-Identifier: Apache-2.0
// The text helpers every library shares (config/util/text.h): each keeps
// the exact output its callers printed, so these hold the documented
// examples and the edges (negative counts, the largest unit, rounding).
#include "config/util/text.h"

#include <gtest/gtest.h>

#include <string>

namespace drivewatch::util {
namespace {

TEST(TextTest, TrimTakesOnlyTheGivenBlanksFromBothEnds) {
  EXPECT_EQ(Trim("  nvme0n1\t\r\n"), "nvme0n1");
  EXPECT_EQ(Trim("a b"), "a b");
  EXPECT_EQ(Trim(" \t\r\n"), "");
  EXPECT_EQ(Trim(""), "");
  EXPECT_EQ(Trim(std::string_view("512\n\0", 5)), std::string("512\n\0", 5));
  EXPECT_EQ(Trim(std::string_view("512\n\0", 5), kBlanksAndNul), "512");
  EXPECT_EQ(Trim("xxabcxx", "x"), "abc");
}

TEST(TextTest, QuoteDoesNotEscape) {
  EXPECT_EQ(Quote("nvme0n1"), "\"nvme0n1\"");
  EXPECT_EQ(Quote(""), "\"\"");
  EXPECT_EQ(Quote("a\"b"), "\"a\"b\"");
}

TEST(TextTest, HexIsLowerCaseZeroPaddedBetweenPrefixAndSuffix) {
  EXPECT_EQ(Hex(10), "a");
  EXPECT_EQ(Hex(10, 4, "0x"), "0x000a");
  EXPECT_EQ(Hex(2, 2, "", "h"), "02h");
  EXPECT_EQ(Hex(0), "0");
  EXPECT_EQ(Hex(0xABCDEF, 2), "abcdef");  // digits is a minimum
  EXPECT_EQ(Hex(UINT64_MAX, 0, "0x"), "0xffffffffffffffff");
}

TEST(TextTest, OneDecimalFromKibUpToPib) {
  EXPECT_EQ(FormatBytes(512, ByteStyle::kOneDecimal), "512 B");
  EXPECT_EQ(FormatBytes(1536, ByteStyle::kOneDecimal), "1.5 KiB");
  EXPECT_EQ(FormatBytes(1.5L * (1ULL << 30), ByteStyle::kOneDecimal), "1.5 GiB");
  EXPECT_EQ(FormatBytes(-2048, ByteStyle::kOneDecimal), "-2.0 KiB");
  EXPECT_EQ(FormatBytes(2048.0L * (1ULL << 50), ByteStyle::kOneDecimal), "2048.0 PiB");
}

TEST(TextTest, SignificantKeepsWholeNumbersBareAndNegativesInBytes) {
  EXPECT_EQ(FormatBytes(1ULL << 30, ByteStyle::kSignificant), "1 GiB");
  EXPECT_EQ(FormatBytes(1.5L * (1ULL << 30), ByteStyle::kSignificant), "1.5 GiB");
  EXPECT_EQ(FormatBytes(1000, ByteStyle::kSignificant), "1000 B");
  EXPECT_EQ(FormatBytes(-2048, ByteStyle::kSignificant), "-2048 B");
  EXPECT_EQ(FormatBytes(1.23456L * (1ULL << 20), ByteStyle::kSignificant), "1.23 MiB");
}

TEST(TextTest, CapacityHasTwoDecimalsFromGibUpToEib) {
  EXPECT_EQ(FormatBytes(1.5L * (1ULL << 20), ByteStyle::kCapacity), "1.5 MiB");
  EXPECT_EQ(FormatBytes(500107862016.0L, ByteStyle::kCapacity), "465.76 GiB");
  EXPECT_EQ(FormatBytes(3.0L * (1ULL << 60), ByteStyle::kCapacity), "3.00 EiB");
}

}  // namespace
}  // namespace drivewatch::util
