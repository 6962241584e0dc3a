// SPDX-License-Identifier: Apache-2.0
// The Get Features decoders, fed with byte fixtures: the hand-built PM981's
// APST table (tests/fixtures/handmade/make_handmade.py writes it from the
// NVMe 2.0 layout independently of these decoders) and dword-0 values as
// controllers return them.
#include "probes/drive/features.h"

#include <gtest/gtest.h>

#include "tests/unit/probes/probe_test_util.h"

namespace drivewatch {
namespace {

TEST(TemperatureThresholdTest, Cdw11SelectsThresholdAndSensor) {
  // NVMe 2.0 Figure 335: THSEL bits 21:20, TMPSEL bits 19:16.
  EXPECT_EQ(TemperatureThresholdCdw11(ThresholdType::kOver, kCompositeSensor),
            0x000000u);
  EXPECT_EQ(TemperatureThresholdCdw11(ThresholdType::kUnder, kCompositeSensor),
            0x100000u);
  EXPECT_EQ(TemperatureThresholdCdw11(ThresholdType::kOver, 1), 0x010000u);
  EXPECT_EQ(TemperatureThresholdCdw11(ThresholdType::kUnder, 8), 0x180000u);
}

TEST(TemperatureThresholdTest, ResultIsKelvinInTheLowWord) {
  EXPECT_EQ(DecodeTemperatureThresholdKelvin(0x00000157), 343);  // QEMU
  // Bits above 15 (TMPSEL/THSEL echoed by some firmware) are not part of it.
  EXPECT_EQ(DecodeTemperatureThresholdKelvin(0x00110111), 273);
  EXPECT_EQ(DecodeTemperatureThresholdKelvin(0x0000ffff), 65535);
}

TEST(HostThermalManagementTest, Tmt1InTheHighWordTmt2InTheLow) {
  // Solidigm P41 Plus: TMT1 73 C (346 K), TMT2 76 C (349 K).
  const auto hctm = DecodeHostThermalManagement(0x015a015d);
  EXPECT_EQ(hctm.tmt1_k, 346);
  EXPECT_EQ(hctm.tmt2_k, 349);
  EXPECT_TRUE(hctm.Active());
  EXPECT_FALSE(DecodeHostThermalManagement(0).Active());
  const auto only_tmt2 = DecodeHostThermalManagement(0x0000015d);
  EXPECT_EQ(only_tmt2.tmt1_k, 0);
  EXPECT_TRUE(only_tmt2.Active());
}

TEST(PowerManagementTest, StateAndWorkloadHint) {
  EXPECT_EQ(DecodePowerManagement(0x03).power_state, 3);
  EXPECT_EQ(DecodePowerManagement(0x03).workload_hint, 0);
  const auto pm = DecodePowerManagement((2u << 5) | 31u);
  EXPECT_EQ(pm.power_state, 31);
  EXPECT_EQ(pm.workload_hint, 2);
}

TEST(ApstTableTest, DecodesTheHandmadeTable) {
  const Bytes data = testing::Handmade("feature-HANDMADE-PM981-0c.bin");
  ASSERT_EQ(data.size(), kApstTableSize) << "run make_handmade.py";
  const auto table = DecodeApstTable(0x1, data);
  ASSERT_TRUE(table.ok()) << table.error().message;
  EXPECT_TRUE(table->enabled);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(table->entries[i].target_power_state, 3) << i;
    EXPECT_EQ(table->entries[i].idle_time_ms, 100u) << i;
  }
  EXPECT_EQ(table->entries[3].target_power_state, 4);
  EXPECT_EQ(table->entries[3].idle_time_ms, 2000u);
  for (int i = 4; i < 32; ++i) {
    EXPECT_EQ(table->entries[i].idle_time_ms, 0u) << i;
  }
}

TEST(ApstTableTest, FieldsAtTheirBitsAndDisabledFlag) {
  Bytes data(kApstTableSize);
  // Entry 1: ITPT = 0xabcdef ms (the 24-bit maximum region), ITPS 31, with
  // reserved bits 2:0 and 63:32 set, which must be ignored.
  const std::uint64_t entry = 0xffffffff'00000000ull | (0xabcdefull << 8) |
                              (31u << 3) | 0x7;
  for (int b = 0; b < 8; ++b) data[8 + b] = (entry >> (8 * b)) & 0xff;
  const auto table = DecodeApstTable(0x0, data);
  ASSERT_TRUE(table.ok());
  EXPECT_FALSE(table->enabled);
  EXPECT_EQ(table->entries[1].target_power_state, 31);
  EXPECT_EQ(table->entries[1].idle_time_ms, 0xabcdefu);
  EXPECT_EQ(table->entries[0].idle_time_ms, 0u);
}

TEST(ApstTableTest, ShortBufferIsAnError) {
  const auto table = DecodeApstTable(1, Bytes(255));
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.error().message,
            "APST table (feature 0Ch): 255 bytes, expected 256");
}

TEST(AsyncEventTest, DecodesTypeInfoAndLogPage) {
  // SMART / health, temperature threshold, log page 02h: what QEMU raises
  // after `nvme set-feature -f 4 -v 300`.
  const AsyncEvent temperature = DecodeAsyncEvent(0x00020101);
  EXPECT_EQ(temperature.type, 1);
  EXPECT_EQ(temperature.info, 1);
  EXPECT_EQ(temperature.log_page, 2);
  EXPECT_EQ(temperature.TypeName(), "smart");
  EXPECT_EQ(temperature.InfoName(), "temperature");
  EXPECT_EQ(DecodeAsyncEvent(0x00020001).InfoName(), "reliability");
  EXPECT_EQ(DecodeAsyncEvent(0x00020201).InfoName(), "spare_below_threshold");
  // Notice, namespace attribute changed, log page 04h.
  const AsyncEvent notice = DecodeAsyncEvent(0x00040002);
  EXPECT_EQ(notice.TypeName(), "notice");
  EXPECT_EQ(notice.InfoName(), "namespace_attribute_changed");
  EXPECT_EQ(DecodeAsyncEvent(0x00000300).TypeName(), "error");
  EXPECT_EQ(DecodeAsyncEvent(0x00000300).InfoName(), "persistent_internal_error");
  EXPECT_EQ(DecodeAsyncEvent(0x00c0ab07).TypeName(), "vendor");
  EXPECT_EQ(DecodeAsyncEvent(0x00c0ab07).InfoName(), "info_0xab");
  EXPECT_EQ(DecodeAsyncEvent(0x00000003).TypeName(), "reserved");
}

}  // namespace
}  // namespace drivewatch
