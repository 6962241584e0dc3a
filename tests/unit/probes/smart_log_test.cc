// SPDX-License-Identifier: Apache-2.0
#include "probes/drive/smart_log.h"

#include <gtest/gtest.h>
#include <libnvme.h>

#include <bit>
#include <cerrno>
#include <cstddef>
#include <cstring>

#include "tests/unit/probes/probe_test_util.h"

namespace drivewatch {
namespace {

using testing::Handmade;

constexpr unsigned __int128 U128(std::uint64_t hi, std::uint64_t lo) {
  return (static_cast<unsigned __int128>(hi) << 64) | lo;
}

Bytes HandmadeSmartLog() {
  Bytes bytes = Handmade("smart-log-HANDMADE-PM981.bin");
  EXPECT_EQ(bytes.size(), kSmartLogSize) << "run make_handmade.py";
  return bytes;
}

// Values from tests/fixtures/handmade/make_handmade.py.
TEST(SmartLogTest, DecodesEveryFieldOfTheHandmadeLog) {
  const auto log = DecodeSmartLog(HandmadeSmartLog());
  ASSERT_TRUE(log.ok()) << log.error().message;
  EXPECT_EQ(log->critical_warning, 0x69);
  EXPECT_EQ(log->composite_temperature_k, 317);
  EXPECT_EQ(log->available_spare_percent, 100);
  EXPECT_EQ(log->available_spare_threshold_percent, 5);
  EXPECT_EQ(log->percentage_used, 130);
  EXPECT_EQ(log->endurance_group_critical_warning_summary, 0x08);
  EXPECT_TRUE(log->data_units_read == U128(1, 1'699'027));
  EXPECT_TRUE(log->data_units_written == U128(2, 17'586'666));
  EXPECT_TRUE(log->host_read_commands == U128(4, 31'415'926));
  EXPECT_TRUE(log->host_write_commands ==
              U128(0x0011223344556677, 0x8899AABBCCDDEEFF));
  EXPECT_TRUE(log->controller_busy_time_minutes == U128(1, 1'234));
  EXPECT_TRUE(log->power_cycles == U128(1, 381));
  EXPECT_TRUE(log->power_on_hours == U128(1, 8'760));
  EXPECT_TRUE(log->unsafe_shutdowns == U128(1, 79));
  EXPECT_TRUE(log->media_errors == U128(0x8000000000000000, 3));
  EXPECT_TRUE(log->error_log_entries == U128(1, 499));
  EXPECT_EQ(log->warning_temperature_time_minutes, 1440u);
  EXPECT_EQ(log->critical_temperature_time_minutes, 17u);
  const std::array<std::uint16_t, 8> sensors{318, 320, 322, 324,
                                             326, 328, 330, 332};
  EXPECT_EQ(log->temperature_sensors_k, sensors);
  EXPECT_EQ(log->thermal_management_temp1_transitions, 12u);
  EXPECT_EQ(log->thermal_management_temp2_transitions, 3u);
  EXPECT_EQ(log->thermal_management_temp1_seconds, 3600u);
  EXPECT_EQ(log->thermal_management_temp2_seconds, 120u);
  EXPECT_EQ(log->lifetime_energy_watt_hours, (1ull << 33) + 219'000);
  EXPECT_EQ(log->interval_power_measurement, (2u << 16) | 350u);
  ASSERT_TRUE(log->IntervalPowerWatts().has_value());
  EXPECT_DOUBLE_EQ(*log->IntervalPowerWatts(), 3.50);
}

TEST(SmartLogTest, CriticalWarningBits) {
  const auto log = DecodeSmartLog(HandmadeSmartLog());
  ASSERT_TRUE(log.ok());
  EXPECT_TRUE(log->CriticalWarning(kCriticalWarningAvailableSpare));
  EXPECT_FALSE(log->CriticalWarning(kCriticalWarningTemperature));
  EXPECT_FALSE(log->CriticalWarning(kCriticalWarningReliability));
  EXPECT_TRUE(log->CriticalWarning(kCriticalWarningReadOnly));
  EXPECT_FALSE(log->CriticalWarning(kCriticalWarningVolatileMemoryBackup));
  EXPECT_TRUE(log->CriticalWarning(kCriticalWarningPersistentMemoryRegion));
}

// libnvme 1.3's struct nvme_smart_log is an independent statement of the
// same layout (bytes 0..231; it predates the power fields).
TEST(SmartLogTest, AgreesWithLibnvmeStructLayout) {
  static_assert(std::endian::native == std::endian::little,
                "reads libnvme's __le fields directly");
  static_assert(sizeof(nvme_smart_log) == kSmartLogSize);
  const Bytes bytes = HandmadeSmartLog();
  nvme_smart_log ref;
  std::memcpy(&ref, bytes.data(), sizeof(ref));
  auto u128 = [](const __u8(&field)[16]) {
    unsigned __int128 v;
    std::memcpy(&v, field, sizeof(v));
    return v;
  };
  const auto log = DecodeSmartLog(bytes);
  ASSERT_TRUE(log.ok());
  EXPECT_EQ(log->critical_warning, ref.critical_warning);
  EXPECT_EQ(log->composite_temperature_k,
            ref.temperature[0] | ref.temperature[1] << 8);
  EXPECT_EQ(log->available_spare_percent, ref.avail_spare);
  EXPECT_EQ(log->available_spare_threshold_percent, ref.spare_thresh);
  EXPECT_EQ(log->percentage_used, ref.percent_used);
  EXPECT_EQ(log->endurance_group_critical_warning_summary,
            ref.endu_grp_crit_warn_sumry);
  EXPECT_TRUE(log->data_units_read == u128(ref.data_units_read));
  EXPECT_TRUE(log->data_units_written == u128(ref.data_units_written));
  EXPECT_TRUE(log->host_read_commands == u128(ref.host_reads));
  EXPECT_TRUE(log->host_write_commands == u128(ref.host_writes));
  EXPECT_TRUE(log->controller_busy_time_minutes == u128(ref.ctrl_busy_time));
  EXPECT_TRUE(log->power_cycles == u128(ref.power_cycles));
  EXPECT_TRUE(log->power_on_hours == u128(ref.power_on_hours));
  EXPECT_TRUE(log->unsafe_shutdowns == u128(ref.unsafe_shutdowns));
  EXPECT_TRUE(log->media_errors == u128(ref.media_errors));
  EXPECT_TRUE(log->error_log_entries == u128(ref.num_err_log_entries));
  EXPECT_EQ(log->warning_temperature_time_minutes, ref.warning_temp_time);
  EXPECT_EQ(log->critical_temperature_time_minutes, ref.critical_comp_time);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(log->temperature_sensors_k[i], ref.temp_sensor[i]) << i;
  }
  EXPECT_EQ(log->thermal_management_temp1_transitions,
            ref.thm_temp1_trans_count);
  EXPECT_EQ(log->thermal_management_temp2_transitions,
            ref.thm_temp2_trans_count);
  EXPECT_EQ(log->thermal_management_temp1_seconds, ref.thm_temp1_total_time);
  EXPECT_EQ(log->thermal_management_temp2_seconds, ref.thm_temp2_total_time);
  EXPECT_EQ(offsetof(nvme_smart_log, rsvd232), 232u);
}

TEST(SmartLogTest, RejectsShortBuffers) {
  const Bytes bytes = HandmadeSmartLog();
  for (std::size_t size :
       {std::size_t{0}, std::size_t{1}, std::size_t{232}, kSmartLogSize - 1}) {
    const auto log = DecodeSmartLog(std::span(bytes).first(size));
    ASSERT_FALSE(log.ok()) << size;
    EXPECT_EQ(log.error().errnum, EBADMSG);
    EXPECT_EQ(log.error().nvme_status, -1);
    EXPECT_EQ(log.error().message,
              "SMART log: " + std::to_string(size) + " bytes, expected 512");
  }
}

TEST(SmartLogTest, IgnoresBytesPastTheLog) {
  Bytes bytes = HandmadeSmartLog();
  bytes.resize(4096, 0xff);
  const auto log = DecodeSmartLog(bytes);
  ASSERT_TRUE(log.ok());
  EXPECT_EQ(log->composite_temperature_k, 317);
}

TEST(SmartLogTest, AllZeroLogDecodes) {
  const Bytes zeros(kSmartLogSize);
  const auto log = DecodeSmartLog(zeros);
  ASSERT_TRUE(log.ok());
  EXPECT_EQ(log->critical_warning, 0);
  EXPECT_TRUE(log->data_units_written == 0);
  EXPECT_FALSE(log->IntervalPowerWatts().has_value());
}

TEST(SmartLogTest, IntervalPowerScalesAndTypes) {
  SmartLog log;
  auto ipm = [&](std::uint32_t type, std::uint32_t scale, std::uint32_t value) {
    log.interval_power_measurement = type << 20 | scale << 16 | value;
    return log.IntervalPowerWatts();
  };
  EXPECT_DOUBLE_EQ(*ipm(0, 1, 12345), 1.2345);  // 0.0001 W units
  EXPECT_DOUBLE_EQ(*ipm(0, 2, 350), 3.50);      // 0.01 W units
  EXPECT_FALSE(ipm(0, 0, 350).has_value());     // scale not reported
  EXPECT_FALSE(ipm(0, 3, 350).has_value());     // reserved scale
  EXPECT_FALSE(ipm(0, 2, 0).has_value());       // value not reported
  EXPECT_FALSE(ipm(0xc, 2, 350).has_value());   // vendor specific type
}

}  // namespace
}  // namespace drivewatch
