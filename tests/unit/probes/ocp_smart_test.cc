// SPDX-License-Identifier: Apache-2.0
// The OCP SMART / Health Information Extended log (C0h): the decoder on a
// page built by hand from the OCP Datacenter NVMe SSD specification 2.0's
// offsets (every field non-zero and distinct, 16-byte counters above 2^64),
// the UUID index lookup, and the ocp_smart probe on a controller with the
// log and on QEMU's recorded controller, which has none.
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

#include "probes/drive/identify.h"
#include "probes/drive/ocp_smart_log.h"
#include "probes/ocp_smart_probe.h"
#include "tests/unit/probes/probe_test_util.h"

namespace drivewatch {
namespace {

using testing::FakeController;
using testing::Handmade;
using testing::kHandmadeSerial;
using testing::RecordingSink;

void PutLe(Bytes& b, std::size_t offset, unsigned __int128 value, int width) {
  for (int i = 0; i < width; ++i) {
    b[offset + i] = static_cast<std::uint8_t>(value >> (8 * i));
  }
}

constexpr unsigned __int128 kTwo64 = static_cast<unsigned __int128>(1) << 64;

// Log Page GUID AFD514C97C6F4F9CA4F2BFEA2810AFC5, written the way the
// specification stores it: least significant byte at byte 496.
void PutGuid(Bytes& b) {
  const char* text = "AFD514C97C6F4F9CA4F2BFEA2810AFC5";
  for (int i = 0; i < 16; ++i) {
    const std::string pair(text + 2 * (15 - i), 2);
    b[496 + i] = static_cast<std::uint8_t>(std::stoul(pair, nullptr, 16));
  }
}

// Every field at its OCP 2.0 offset, each value different from the others.
Bytes OcpPage(std::uint16_t version = 3) {
  Bytes b(512);
  PutLe(b, 0, 3 * kTwo64 + 0x1000, 16);   // Physical Media Units Written
  PutLe(b, 16, 2 * kTwo64 + 0x2000, 16);  // Physical Media Units Read
  PutLe(b, 32, 0x0000'0102'0304'05, 6);   // Bad User NAND Blocks raw
  PutLe(b, 38, 98, 2);                    //   normalized
  PutLe(b, 40, 0x0000'0000'0000'07, 6);   // Bad System NAND Blocks raw
  PutLe(b, 46, 97, 2);                    //   normalized
  PutLe(b, 48, 11, 8);                    // XOR Recovery Count
  PutLe(b, 56, 12, 8);                    // Uncorrectable Read Error Count
  PutLe(b, 64, 13, 8);                    // Soft ECC Error Count
  PutLe(b, 72, 14, 4);                    // End to End: detected errors
  PutLe(b, 76, 15, 4);                    // End to End: corrected errors
  b[80] = 16;                             // System Data % Used
  PutLe(b, 81, 0x01'0000'0000'0011, 7);   // Refresh Counts (56 bits)
  PutLe(b, 88, 3000, 4);                  // User Data Erase Count maximum
  PutLe(b, 92, 2500, 4);                  // User Data Erase Count minimum
  b[96] = 17;                             // Thermal Throttling Count
  b[97] = 2;                              // Thermal Throttling Status
  b[98] = 4;                              // DSSD errata version
  PutLe(b, 99, 5, 2);                     // DSSD point version
  PutLe(b, 101, 6, 2);                    // DSSD minor version
  b[103] = 2;                             // DSSD major version
  PutLe(b, 104, 18, 8);                   // PCIe Correctable Error Count
  PutLe(b, 112, 19, 4);                   // Incomplete Shutdowns
  b[120] = 21;                            // % Free Blocks
  PutLe(b, 128, 95, 2);                   // Capacitor Health
  b[130] = 7;                             // NVMe Errata Version
  PutLe(b, 494, version, 2);              // Log Page Version
  PutGuid(b);
  return b;
}

TEST(OcpSmartLogTest, DecodesEveryFieldAtTheSpecificationsOffsets) {
  auto log = DecodeOcpSmartExtended(OcpPage());
  ASSERT_TRUE(log.ok()) << log.error().message;
  EXPECT_TRUE(log->physical_media_units_written == 3 * kTwo64 + 0x1000);
  EXPECT_TRUE(log->physical_media_units_read == 2 * kTwo64 + 0x2000);
  EXPECT_EQ(log->bad_user_nand_blocks_raw, 0x0102'0304'05u);
  EXPECT_EQ(log->bad_user_nand_blocks_normalized, 98);
  EXPECT_EQ(log->bad_system_nand_blocks_raw, 7u);
  EXPECT_EQ(log->bad_system_nand_blocks_normalized, 97);
  EXPECT_EQ(log->xor_recovery_count, 11u);
  EXPECT_EQ(log->uncorrectable_read_error_count, 12u);
  EXPECT_EQ(log->soft_ecc_error_count, 13u);
  // Detected first (75:72), corrected second (79:76): nvme-cli 2.3 swaps them.
  EXPECT_EQ(log->end_to_end_detected_errors, 14u);
  EXPECT_EQ(log->end_to_end_corrected_errors, 15u);
  EXPECT_EQ(log->system_data_percent_used, 16);
  EXPECT_EQ(log->refresh_counts, 0x01'0000'0000'0011u);
  EXPECT_EQ(log->user_data_erase_count_max, 3000u);
  EXPECT_EQ(log->user_data_erase_count_min, 2500u);
  EXPECT_EQ(log->thermal_throttling_count, 17);
  EXPECT_EQ(log->thermal_throttling_status, 2);
  EXPECT_EQ(log->DssdVersion(), "2.6.5.4");
  EXPECT_EQ(log->pcie_correctable_error_count, 18u);
  EXPECT_EQ(log->incomplete_shutdowns, 19u);
  EXPECT_EQ(log->percent_free_blocks, 21);
  EXPECT_EQ(log->capacitor_health, 95);
  EXPECT_EQ(log->nvme_errata_version, 7);
  EXPECT_EQ(log->log_page_version, 3);
}

TEST(OcpSmartLogTest, RefusesShortPagesOtherGuidsAndUnknownVersions) {
  Bytes short_page = OcpPage();
  short_page.resize(511);
  auto s = DecodeOcpSmartExtended(short_page);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().errnum, EBADMSG);
  EXPECT_EQ(s.error().message,
            "OCP SMART extended log (C0h): 511 bytes, expected 512");

  Bytes vendor = OcpPage();
  vendor[511] = 0x00;  // a vendor's own C0h
  auto g = DecodeOcpSmartExtended(vendor);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().errnum, ENOMSG);
  EXPECT_EQ(g.error().message,
            "OCP SMART extended log (C0h): Log Page GUID (bytes 511:496) is "
            "00D514C97C6F4F9CA4F2BFEA2810AFC5, expected "
            "AFD514C97C6F4F9CA4F2BFEA2810AFC5: the drive's log C0h is not "
            "the OCP one");

  for (std::uint16_t v : {0, 1, 5, 0xffff}) {
    auto r = DecodeOcpSmartExtended(OcpPage(v));
    ASSERT_FALSE(r.ok()) << v;
    EXPECT_EQ(r.error().errnum, ENOMSG);
    EXPECT_NE(r.error().message.find("Log Page Version (bytes 495:494) is " +
                                     std::to_string(v) + ", expected 2 to 4"),
              std::string::npos)
        << r.error().message;
  }
  for (std::uint16_t v : {2, 3, 4}) {  // OCP 1.0, 2.0 and 2.5
    EXPECT_TRUE(DecodeOcpSmartExtended(OcpPage(v)).ok()) << v;
  }
}

Bytes UuidList(const std::vector<std::array<std::uint8_t, 16>>& uuids) {
  Bytes b(4096);
  for (std::size_t i = 0; i < uuids.size(); ++i) {
    std::copy(uuids[i].begin(), uuids[i].end(), b.begin() + 32 + 32 * i + 16);
  }
  return b;
}

constexpr std::array<std::uint8_t, 16> kOtherUuid = {
    0x96, 0x19, 0x58, 0x6e, 0xc1, 0x1b, 0x43, 0xad,
    0xaa, 0xaa, 0x65, 0x41, 0x87, 0xf6, 0xbb, 0xb2};

TEST(OcpSmartLogTest, FindsTheOcpUuidsIndexInTheUuidList) {
  EXPECT_EQ(FindUuidIndex(UuidList({kOtherUuid, kOtherUuid, kOcpUuid}), kOcpUuid),
            std::optional<std::uint8_t>(3));
  EXPECT_EQ(FindUuidIndex(UuidList({kOcpUuid}), kOcpUuid),
            std::optional<std::uint8_t>(1));
  // The list ends at the first all-zero entry.
  Bytes gap = UuidList({kOtherUuid});
  std::copy(kOcpUuid.begin(), kOcpUuid.end(), gap.begin() + 32 + 64 + 16);
  EXPECT_EQ(FindUuidIndex(gap, kOcpUuid), std::nullopt);
  EXPECT_EQ(FindUuidIndex(UuidList({kOtherUuid}), kOcpUuid), std::nullopt);
  EXPECT_EQ(FindUuidIndex(Bytes(40), kOcpUuid), std::nullopt);
}

ControllerInfo Info() {
  ControllerInfo info;
  info.device = "/dev/nvme0";
  info.serial = kHandmadeSerial;
  return info;
}

Bytes IdentifyWithCtratt(std::uint32_t ctratt) {
  Bytes id = Handmade("id-ctrl-HANDMADE-PM981.bin");
  PutLe(id, 96, ctratt, 4);
  return id;
}

double Value(const RecordingSink& sink, const std::string& name,
             Labels labels = {}) {
  labels.insert(labels.begin(), {"serial", kHandmadeSerial});
  const std::string key = testing::SeriesKey(name, labels);
  for (const auto& s : sink.samples) {
    if (s.Key() == key) return s.value;
  }
  ADD_FAILURE() << "no sample " << key;
  return -1;
}

class OcpSmartProbeTest : public ::testing::Test {
 protected:
  OcpSmartProbe probe_{[this](std::string_view l) { lines_.emplace_back(l); }};
  FakeController ctrl_;
  std::vector<std::string> lines_;
};

TEST_F(OcpSmartProbeTest, ReadsTheLogWithTheOcpUuidIndexAndExportsBaseUnits) {
  ctrl_.SetIdentify(kIdentifyCnsController, 0, IdentifyWithCtratt(kCtrattUuidList));
  ctrl_.SetIdentify(kIdentifyCnsUuidList, 0, UuidList({kOtherUuid, kOcpUuid}));
  ctrl_.SetLogPageUuid(kOcpSmartExtendedLogId, 2, OcpPage());
  RecordingSink sink;
  ASSERT_TRUE(probe_.Run(ctrl_, Info(), sink).ok());

  const FakeController::Call read{"log-uuid", 0xc0, 2, 512};
  EXPECT_NE(std::find(ctrl_.calls().begin(), ctrl_.calls().end(), read),
            ctrl_.calls().end());
  EXPECT_EQ(Value(sink, "drivewatch_feature_supported",
                  {{"feature", "ocp_smart_extended"}}), 1);
  EXPECT_DOUBLE_EQ(Value(sink, "drivewatch_ocp_physical_media_written_bytes_total"),
                   3 * 18446744073709551616.0 + 0x1000);
  EXPECT_DOUBLE_EQ(Value(sink, "drivewatch_ocp_physical_media_read_bytes_total"),
                   2 * 18446744073709551616.0 + 0x2000);
  EXPECT_EQ(Value(sink, "drivewatch_ocp_bad_nand_blocks", {{"area", "user"}}),
            0x0102030405);
  EXPECT_EQ(Value(sink, "drivewatch_ocp_bad_nand_blocks", {{"area", "system"}}), 7);
  EXPECT_EQ(Value(sink, "drivewatch_ocp_bad_nand_blocks_normalized",
                  {{"area", "user"}}), 98);
  EXPECT_EQ(Value(sink, "drivewatch_ocp_bad_nand_blocks_normalized",
                  {{"area", "system"}}), 97);
  EXPECT_EQ(Value(sink, "drivewatch_ocp_xor_recoveries_total"), 11);
  EXPECT_EQ(Value(sink, "drivewatch_ocp_uncorrectable_read_errors_total"), 12);
  EXPECT_EQ(Value(sink, "drivewatch_ocp_soft_ecc_errors_total"), 13);
  EXPECT_EQ(Value(sink, "drivewatch_ocp_end_to_end_errors_total",
                  {{"outcome", "detected"}}), 14);
  EXPECT_EQ(Value(sink, "drivewatch_ocp_end_to_end_errors_total",
                  {{"outcome", "corrected"}}), 15);
  EXPECT_DOUBLE_EQ(Value(sink, "drivewatch_ocp_system_data_used_ratio"), 0.16);
  EXPECT_EQ(Value(sink, "drivewatch_ocp_refreshes_total"), 0x01000000000011);
  EXPECT_EQ(Value(sink, "drivewatch_ocp_user_data_erase_count", {{"bound", "max"}}), 3000);
  EXPECT_EQ(Value(sink, "drivewatch_ocp_user_data_erase_count", {{"bound", "min"}}), 2500);
  EXPECT_EQ(Value(sink, "drivewatch_ocp_thermal_throttling_events_total"), 17);
  EXPECT_EQ(Value(sink, "drivewatch_ocp_thermal_throttling_status"), 2);
  EXPECT_EQ(Value(sink, "drivewatch_ocp_pcie_correctable_errors_total"), 18);
  EXPECT_EQ(Value(sink, "drivewatch_ocp_incomplete_shutdowns_total"), 19);
  EXPECT_DOUBLE_EQ(Value(sink, "drivewatch_ocp_free_blocks_ratio"), 0.21);
  EXPECT_DOUBLE_EQ(Value(sink, "drivewatch_ocp_capacitor_health_ratio"), 0.95);
  EXPECT_EQ(Value(sink, "drivewatch_ocp_smart_extended_info",
                  {{"dssd_version", "2.6.5.4"}, {"log_page_version", "3"}}), 1);
  EXPECT_TRUE(lines_.empty());
}

TEST_F(OcpSmartProbeTest, WithoutAUuidListReadsIndexZero) {
  ctrl_.SetIdentify(kIdentifyCnsController, 0, IdentifyWithCtratt(0));
  ctrl_.SetLogPageUuid(kOcpSmartExtendedLogId, 0, OcpPage(2));
  RecordingSink sink;
  ASSERT_TRUE(probe_.Run(ctrl_, Info(), sink).ok());
  for (const auto& call : ctrl_.calls()) {
    EXPECT_FALSE(call.command == "identify" && call.id == kIdentifyCnsUuidList);
  }
  EXPECT_EQ(Value(sink, "drivewatch_ocp_smart_extended_info",
                  {{"dssd_version", "2.6.5.4"}, {"log_page_version", "2"}}), 1);
}

TEST_F(OcpSmartProbeTest, AVendorsOwnC0hIsNotDecodedAndLoggedOnce) {
  ctrl_.SetIdentify(kIdentifyCnsController, 0, IdentifyWithCtratt(0));
  Bytes vendor = OcpPage();
  vendor[496] ^= 0xff;
  ctrl_.SetLogPageUuid(kOcpSmartExtendedLogId, 0, vendor);
  for (int i = 0; i < 3; ++i) {
    RecordingSink sink;
    ASSERT_TRUE(probe_.Run(ctrl_, Info(), sink).ok());
    EXPECT_EQ(Value(sink, "drivewatch_feature_supported",
                    {{"feature", "ocp_smart_extended"}}), 0);
    EXPECT_EQ(sink.samples.size(), 1u);
  }
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_NE(lines_[0].find("/dev/nvme0: OCP SMART extended log (C0h): Log "
                           "Page GUID"),
            std::string::npos)
      << lines_[0];
}

TEST_F(OcpSmartProbeTest, AFailedReadFailsTheRun) {
  ctrl_.SetIdentify(kIdentifyCnsController, 0, IdentifyWithCtratt(0));
  ctrl_.SetLogPageUuid(kOcpSmartExtendedLogId, 0,
                       Error{EIO, -1, "/dev/nvme0: get log page c0h: EIO"});
  RecordingSink sink;
  auto status = probe_.Run(ctrl_, Info(), sink);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().errnum, EIO);
  EXPECT_TRUE(lines_.empty());
}

// QEMU 7.2 has no OCP log: its recorded Identify Controller
// (tests/fixtures/qemu, CTRATT 8000h: no UUID list) replayed, and C0h
// answered Invalid Field (0x4002) as the live controller does
// (tests/vm/smartd S1). The golden test replays the same controllers
// through the recorded drive layer and the daemon's probe registry.
TEST(OcpSmartQemuTest, QemusControllersReportTheLogUnsupportedOnce) {
  for (const std::string serial : {"DWSN0001", "DWSN0002"}) {
    FakeController ctrl;
    ctrl.SetIdentify(kIdentifyCnsController, 0,
                     testing::ReadFixture(testing::FixtureDir() / "qemu" /
                                          ("id-ctrl-" + serial + ".bin")));
    ControllerInfo info;
    info.device = "/dev/nvme0";
    info.serial = serial;
    std::vector<std::string> lines;
    OcpSmartProbe probe([&](std::string_view l) { lines.emplace_back(l); });
    for (int i = 0; i < 2; ++i) {
      RecordingSink sink;
      ASSERT_TRUE(probe.Run(ctrl, info, sink).ok()) << serial;
      ASSERT_EQ(sink.samples.size(), 1u) << serial;
      EXPECT_EQ(sink.samples[0].Key(),
                testing::SeriesKey("drivewatch_feature_supported",
                                   {{"feature", "ocp_smart_extended"},
                                    {"serial", serial}}));
      EXPECT_EQ(sink.samples[0].value, 0);
    }
    // No UUID list was asked for (CTRATT bit 9 is clear); C0h with index 0.
    const FakeController::Call read{"log-uuid", 0xc0, 0, 512};
    EXPECT_NE(std::find(ctrl.calls().begin(), ctrl.calls().end(), read),
              ctrl.calls().end());
    for (const auto& call : ctrl.calls()) {
      EXPECT_FALSE(call.command == "identify" && call.id == kIdentifyCnsUuidList);
    }
    ASSERT_EQ(lines.size(), 1u) << serial;
    EXPECT_NE(lines[0].find("drive serial=" + serial +
                            " does not support the OCP SMART / Health "
                            "Information Extended log (C0h)"),
              std::string::npos)
        << lines[0];
    EXPECT_NE(lines[0].find("Invalid Field in Command (0x4002)"),
              std::string::npos)
        << lines[0];
  }
}

TEST(OcpSmartProbeDocs, EveryMetricIsDocumented) {
  testing::ExpectDocumented(OcpSmartProbe::Metrics());
}

}  // namespace
}  // namespace drivewatch
