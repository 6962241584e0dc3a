// SPDX-License-Identifier: Apache-2.0
#include "probes/drive/units.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace drivewatch::units {
namespace {

TEST(UnitsTest, KelvinZeroMeansNotReported) {
  EXPECT_FALSE(KelvinToCelsius(0).has_value());
}

TEST(UnitsTest, KelvinToCelsiusUsesTheSiOffset) {
  EXPECT_DOUBLE_EQ(*KelvinToCelsius(323), 49.85);  // QEMU's SMART temperature
  EXPECT_DOUBLE_EQ(*KelvinToCelsius(343), 69.85);  // QEMU's WCTEMP
  EXPECT_DOUBLE_EQ(*KelvinToCelsius(1), -272.15);
  EXPECT_DOUBLE_EQ(*KelvinToCelsius(65535), 65261.85);
}

TEST(UnitsTest, DataUnitIs1000Times512Bytes) {
  EXPECT_EQ(kDataUnitBytes, 1000u * 512u);
  EXPECT_EQ(DataUnitsToBytes(0), 0.0);
  EXPECT_EQ(DataUnitsToBytes(1), 512000.0);
  // The PM981 in NOTES.md: 17,586,666 units written, about 9.0 TB.
  EXPECT_EQ(DataUnitsToBytes(17'586'666), 9'004'372'992'000.0);
}

TEST(UnitsTest, DataUnitsToBytesIsExactUpTo2To65Bytes) {
  // floor(2^53 / 125) units: the largest count whose byte value
  // (units * 125 * 2^12) still fits a double's 53-bit mantissa.
  const unsigned __int128 units = 72'057'594'037'927;
  const unsigned __int128 bytes = units * 512'000;
  EXPECT_LT(bytes, static_cast<unsigned __int128>(1) << 65);
  EXPECT_EQ(DataUnitsToBytes(units), 36'893'488'147'418'624'000.0);
  EXPECT_EQ(static_cast<unsigned __int128>(DataUnitsToBytes(units)), bytes);
}

TEST(UnitsTest, DataUnitsToBytesNeverOverflows) {
  const unsigned __int128 max = ~static_cast<unsigned __int128>(0);
  const double bytes = DataUnitsToBytes(max);
  EXPECT_TRUE(std::isfinite(bytes));
  EXPECT_DOUBLE_EQ(bytes, 1.742245718635205e44);
}

TEST(UnitsTest, ScaledToDoubleRoundsOnce) {
  // (2^64 + 1234) minutes in seconds is 1106804644422573171000; the nearest
  // double is ...32e21. Converting first and multiplying in double would
  // give the double below it (...31e21).
  const unsigned __int128 minutes =
      (static_cast<unsigned __int128>(1) << 64) + 1234;
  EXPECT_EQ(MinutesToSeconds(minutes), 1.1068046444225732e21);
  EXPECT_NE(ToDouble(minutes) * 60, 1.1068046444225732e21);
  // A product past 2^128 falls back to double arithmetic.
  const unsigned __int128 max = ~static_cast<unsigned __int128>(0);
  EXPECT_DOUBLE_EQ(ScaledToDouble(max, 4), 1.361129467683754e39);
  EXPECT_EQ(ScaledToDouble(max, 1), ToDouble(max));
  EXPECT_EQ(ScaledToDouble(max, 0), 0.0);
}

TEST(UnitsTest, ToDoubleKeepsThe128BitMagnitude) {
  EXPECT_EQ(ToDouble(static_cast<unsigned __int128>(1) << 64),
            18446744073709551616.0);
  EXPECT_EQ(ToDouble(static_cast<unsigned __int128>(1) << 127),
            1.7014118346046923e38);
  // Exact below 2^53, nearest double above it.
  EXPECT_EQ(ToDouble((static_cast<unsigned __int128>(1) << 53) - 1),
            9007199254740991.0);
  EXPECT_EQ(ToDouble((static_cast<unsigned __int128>(1) << 53) + 1),
            9007199254740992.0);
}

TEST(UnitsTest, TimeConversions) {
  EXPECT_EQ(MinutesToSeconds(1440), 86400.0);
  EXPECT_EQ(HoursToSeconds(8760), 31'536'000.0);
  EXPECT_EQ(WattHoursToJoules(1), 3600.0);
}

TEST(UnitsTest, PercentToRatio) {
  EXPECT_EQ(PercentToRatio(0), 0.0);
  EXPECT_EQ(PercentToRatio(100), 1.0);
  EXPECT_DOUBLE_EQ(PercentToRatio(5), 0.05);
  // Percentage Used saturates at 255 and may exceed 100.
  EXPECT_DOUBLE_EQ(PercentToRatio(255), 2.55);
}

}  // namespace
}  // namespace drivewatch::units
