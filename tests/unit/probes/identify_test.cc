// SPDX-License-Identifier: Apache-2.0
#include "probes/drive/identify.h"

#include <gtest/gtest.h>
#include <libnvme.h>

#include <bit>
#include <cerrno>
#include <cstring>

#include "tests/unit/probes/probe_test_util.h"

namespace drivewatch {
namespace {

using testing::Handmade;

Bytes HandmadeIdCtrl() {
  Bytes bytes = Handmade("id-ctrl-HANDMADE-PM981.bin");
  EXPECT_EQ(bytes.size(), kIdentifySize) << "run make_handmade.py";
  return bytes;
}

TEST(TrimIdentifyStringTest, StripsPaddingKeepsInnerSpaces) {
  EXPECT_EQ(TrimIdentifyString("QEMU NVMe Ctrl                          "),
            "QEMU NVMe Ctrl");
  EXPECT_EQ(TrimIdentifyString("   S4DYNX0R123456"), "S4DYNX0R123456");
  EXPECT_EQ(TrimIdentifyString("        "), "");
  EXPECT_EQ(TrimIdentifyString(""), "");
  EXPECT_EQ(TrimIdentifyString("5L2QEXA7"), "5L2QEXA7");
}

TEST(TrimIdentifyStringTest, StopsAtNulPadding) {
  using namespace std::string_literals;
  EXPECT_EQ(TrimIdentifyString("ABC\0\0\0\0\0"s), "ABC");
  EXPECT_EQ(TrimIdentifyString("ABC \0 garbage"s), "ABC");
}

TEST(TrimIdentifyStringTest, ReplacesNonPrintableBytes) {
  EXPECT_EQ(TrimIdentifyString("SN\xff\x01X"), "SN??X");
}

// Values from tests/fixtures/handmade/make_handmade.py.
TEST(IdentifyControllerTest, DecodesTheHandmadeController) {
  const auto id = DecodeIdentifyController(HandmadeIdCtrl());
  ASSERT_TRUE(id.ok()) << id.error().message;
  EXPECT_EQ(id->vid, 0x144d);
  EXPECT_EQ(id->ssvid, 0xa801);
  EXPECT_EQ(id->serial, "HANDMADE-PM981");
  EXPECT_EQ(id->model, "SAMSUNG MZVLB1T0HBLR-000L7");
  EXPECT_EQ(id->firmware, "5L2QEXA7");
  EXPECT_EQ(id->rab, 2);
  EXPECT_EQ(id->ieee_oui, 0x002538u);
  EXPECT_EQ(id->cmic, 0x01);
  EXPECT_EQ(id->mdts, 9);
  EXPECT_EQ(id->cntlid, 4);
  EXPECT_EQ(id->ver, 0x00010300u);
  EXPECT_EQ(id->Version(), "1.3");
  EXPECT_EQ(id->oacs, 0x0017);
  EXPECT_EQ(id->lpa, 0x03);
  EXPECT_EQ(id->elpe, 63);
  EXPECT_EQ(id->ErrorLogCapacity(), 64);
  EXPECT_EQ(id->npss, 4);
  EXPECT_EQ(id->PowerStateCount(), 5);
  EXPECT_EQ(id->apsta, 0x01);
  EXPECT_EQ(id->wctemp_k, 354);
  EXPECT_EQ(id->cctemp_k, 355);
  EXPECT_EQ(id->hctma, 0x0001);
  EXPECT_EQ(id->mntmt_k, 313);
  EXPECT_EQ(id->mxtmt_k, 358);
  EXPECT_TRUE(id->tnvmcap == 1'024'209'543'168ull);
  EXPECT_TRUE(id->unvmcap == (static_cast<unsigned __int128>(1) << 64) + 4096);
  EXPECT_EQ(id->nn, 2u);
}

// The PM981's power states as smartctl prints them (NOTES.md).
TEST(IdentifyControllerTest, DecodesPowerStatesWithTheirScales) {
  const auto id = DecodeIdentifyController(HandmadeIdCtrl());
  ASSERT_TRUE(id.ok());
  const auto& ps = id->power_states;
  const double max_watts[] = {8.00, 6.30, 3.50, 0.0700, 0.0050};
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(ps[i].MaxPowerWatts().has_value()) << i;
    EXPECT_DOUBLE_EQ(*ps[i].MaxPowerWatts(), max_watts[i]) << i;
    EXPECT_EQ(ps[i].NonOperational(), i >= 3) << i;
    EXPECT_EQ(ps[i].relative_read_throughput, i);
    EXPECT_EQ(ps[i].relative_read_latency, i);
    EXPECT_EQ(ps[i].relative_write_throughput, i);
    EXPECT_EQ(ps[i].relative_write_latency, i);
  }
  EXPECT_EQ(ps[3].entry_latency_us, 210u);
  EXPECT_EQ(ps[3].exit_latency_us, 1200u);
  EXPECT_EQ(ps[4].entry_latency_us, 2000u);
  EXPECT_EQ(ps[4].exit_latency_us, 8000u);
  EXPECT_EQ(ps[0].entry_latency_us, 0u);

  EXPECT_EQ(ps[0].active_power, 500);
  EXPECT_EQ(ps[0].active_power_workload, 2);
  EXPECT_EQ(ps[0].active_power_scale, 2);
  EXPECT_DOUBLE_EQ(*ps[0].ActivePowerWatts(), 5.00);
  EXPECT_FALSE(ps[0].IdlePowerWatts().has_value());
  EXPECT_EQ(ps[4].idle_power, 50);
  EXPECT_EQ(ps[4].idle_power_scale, 1);
  EXPECT_DOUBLE_EQ(*ps[4].IdlePowerWatts(), 0.0050);
  EXPECT_FALSE(ps[4].ActivePowerWatts().has_value());
  // Past NPSS the table is zero: MP 0 means "not reported".
  EXPECT_FALSE(ps[5].MaxPowerWatts().has_value());
}

TEST(IdentifyControllerTest, AgreesWithLibnvmeStructLayout) {
  static_assert(std::endian::native == std::endian::little);
  static_assert(sizeof(nvme_id_ctrl) == kIdentifySize);
  const Bytes bytes = HandmadeIdCtrl();
  nvme_id_ctrl ref;
  std::memcpy(&ref, bytes.data(), sizeof(ref));
  const auto id = DecodeIdentifyController(bytes);
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(id->vid, ref.vid);
  EXPECT_EQ(id->ssvid, ref.ssvid);
  EXPECT_EQ(id->serial, TrimIdentifyString({ref.sn, sizeof(ref.sn)}));
  EXPECT_EQ(id->model, TrimIdentifyString({ref.mn, sizeof(ref.mn)}));
  EXPECT_EQ(id->firmware, TrimIdentifyString({ref.fr, sizeof(ref.fr)}));
  EXPECT_EQ(id->rab, ref.rab);
  EXPECT_EQ(id->ieee_oui,
            static_cast<std::uint32_t>(ref.ieee[0] | ref.ieee[1] << 8 |
                                       ref.ieee[2] << 16));
  EXPECT_EQ(id->cmic, ref.cmic);
  EXPECT_EQ(id->mdts, ref.mdts);
  EXPECT_EQ(id->cntlid, ref.cntlid);
  EXPECT_EQ(id->ver, ref.ver);
  EXPECT_EQ(id->oacs, ref.oacs);
  EXPECT_EQ(id->lpa, ref.lpa);
  EXPECT_EQ(id->elpe, ref.elpe);
  EXPECT_EQ(id->npss, ref.npss);
  EXPECT_EQ(id->apsta, ref.apsta);
  EXPECT_EQ(id->wctemp_k, ref.wctemp);
  EXPECT_EQ(id->cctemp_k, ref.cctemp);
  EXPECT_EQ(id->hctma, ref.hctma);
  EXPECT_EQ(id->mntmt_k, ref.mntmt);
  EXPECT_EQ(id->mxtmt_k, ref.mxtmt);
  unsigned __int128 tnvmcap, unvmcap;
  std::memcpy(&tnvmcap, ref.tnvmcap, 16);
  std::memcpy(&unvmcap, ref.unvmcap, 16);
  EXPECT_TRUE(id->tnvmcap == tnvmcap);
  EXPECT_TRUE(id->unvmcap == unvmcap);
  EXPECT_EQ(id->nn, ref.nn);
  for (int i = 0; i < 32; ++i) {
    const nvme_id_psd& p = ref.psd[i];
    const PowerStateDescriptor& d = id->power_states[i];
    EXPECT_EQ(d.max_power, p.mp) << i;
    EXPECT_EQ(d.flags, p.flags) << i;
    EXPECT_EQ(d.entry_latency_us, p.enlat) << i;
    EXPECT_EQ(d.exit_latency_us, p.exlat) << i;
    EXPECT_EQ(d.idle_power, p.idlp) << i;
    EXPECT_EQ(d.idle_power_scale, p.ips >> 6) << i;  // NOTES.md: ips>>6
    EXPECT_EQ(d.active_power, p.actp) << i;
    EXPECT_EQ(d.active_power_scale, p.apws >> 6) << i;
    EXPECT_EQ(d.active_power_workload, p.apws & 0x7) << i;
    EXPECT_EQ(d.MaxPowerWatts().has_value(), p.mp != 0) << i;
    EXPECT_EQ(d.NonOperational(), (p.flags & NVME_PSD_FLAGS_NOPS) != 0) << i;
  }
}

TEST(IdentifyControllerTest, VersionStrings) {
  IdentifyController id;
  id.ver = 0x00010400;
  EXPECT_EQ(id.Version(), "1.4");
  id.ver = 0x00020000;
  EXPECT_EQ(id.Version(), "2.0");
  id.ver = 0x00010201;
  EXPECT_EQ(id.Version(), "1.2.1");
  id.ver = 0;
  EXPECT_EQ(id.Version(), "");
}

TEST(IdentifyControllerTest, PowerStateCountStaysWithinTheTable) {
  IdentifyController id;
  id.npss = 31;
  EXPECT_EQ(id.PowerStateCount(), 32);
  id.npss = 255;
  EXPECT_EQ(id.PowerStateCount(), 32);
}

TEST(IdentifyControllerTest, RejectsShortBuffers) {
  const Bytes bytes = HandmadeIdCtrl();
  for (std::size_t size : {std::size_t{0}, std::size_t{80}, std::size_t{2048},
                           kIdentifySize - 1}) {
    const auto id = DecodeIdentifyController(std::span(bytes).first(size));
    ASSERT_FALSE(id.ok()) << size;
    EXPECT_EQ(id.error().errnum, EBADMSG);
    EXPECT_EQ(id.error().message,
              "Identify Controller: " + std::to_string(size) +
                  " bytes, expected 4096");
  }
}

Bytes HandmadeIdNs(int nsid) {
  Bytes bytes =
      Handmade("id-ns-HANDMADE-PM981-n" + std::to_string(nsid) + ".bin");
  EXPECT_EQ(bytes.size(), kIdentifySize) << "run make_handmade.py";
  return bytes;
}

TEST(IdentifyNamespaceTest, DecodesTheHandmadeNamespace) {
  const auto ns = DecodeIdentifyNamespace(HandmadeIdNs(1));
  ASSERT_TRUE(ns.ok()) << ns.error().message;
  EXPECT_EQ(ns->nsze, 2'000'409'264u);
  EXPECT_EQ(ns->ncap, 2'000'409'264u);
  EXPECT_EQ(ns->nuse, 1'234'567'890u);
  EXPECT_EQ(ns->nlbaf, 1);
  ASSERT_EQ(ns->lba_formats.size(), 2u);
  EXPECT_EQ(ns->lba_formats[0].lbads, 9);
  EXPECT_EQ(ns->lba_formats[0].relative_performance, 2);
  EXPECT_EQ(ns->lba_formats[1].lbads, 12);
  EXPECT_EQ(ns->format_index, 0);
  EXPECT_EQ(ns->lba_data_size, 512u);
  EXPECT_EQ(ns->metadata_size, 0);
  EXPECT_EQ(ns->BlocksToBytes(ns->nsze), 1'024'209'543'168.0);
  EXPECT_EQ(ns->BlocksToBytes(ns->nuse), 632'098'759'680.0);
}

// NVMe 2.0 FLBAS bits 6:5 carry the two high bits of the format index.
TEST(IdentifyNamespaceTest, UsesTheHighFormatIndexBits) {
  const auto ns = DecodeIdentifyNamespace(HandmadeIdNs(2));
  ASSERT_TRUE(ns.ok()) << ns.error().message;
  EXPECT_EQ(ns->flbas, 0x21);
  EXPECT_EQ(ns->nlbaf, 19);
  EXPECT_EQ(ns->lba_formats.size(), 20u);
  EXPECT_EQ(ns->format_index, 17);
  EXPECT_EQ(ns->lba_data_size, 4096u);
  EXPECT_EQ(ns->metadata_size, 8);
  EXPECT_EQ(ns->BlocksToBytes(ns->nsze), 17'592'186'044'416.0);  // 16 TiB
}

TEST(IdentifyNamespaceTest, AgreesWithLibnvme) {
  for (int nsid : {1, 2}) {
    const Bytes bytes = HandmadeIdNs(nsid);
    nvme_id_ns ref;
    std::memcpy(&ref, bytes.data(), sizeof(ref));
    __u8 in_use = 0;
    nvme_id_ns_flbas_to_lbaf_inuse(ref.flbas, &in_use);
    const auto ns = DecodeIdentifyNamespace(bytes);
    ASSERT_TRUE(ns.ok());
    EXPECT_EQ(ns->nsze, ref.nsze);
    EXPECT_EQ(ns->ncap, ref.ncap);
    EXPECT_EQ(ns->nuse, ref.nuse);
    EXPECT_EQ(ns->nlbaf, ref.nlbaf);
    EXPECT_EQ(ns->format_index, in_use);
    EXPECT_EQ(ns->lba_data_size, 1u << ref.lbaf[in_use].ds);
    EXPECT_EQ(ns->metadata_size, ref.lbaf[in_use].ms);
  }
}

TEST(IdentifyNamespaceTest, RejectsShortBuffers) {
  const Bytes bytes = HandmadeIdNs(1);
  for (std::size_t size :
       {std::size_t{0}, std::size_t{27}, std::size_t{384}, kIdentifySize - 1}) {
    const auto ns = DecodeIdentifyNamespace(std::span(bytes).first(size));
    ASSERT_FALSE(ns.ok()) << size;
    EXPECT_EQ(ns.error().errnum, EBADMSG);
    EXPECT_EQ(ns.error().message,
              "Identify Namespace: " + std::to_string(size) +
                  " bytes, expected 4096");
  }
}

TEST(IdentifyNamespaceTest, RejectsAnInactiveNamespace) {
  const Bytes zeros(kIdentifySize);
  const auto ns = DecodeIdentifyNamespace(zeros);
  ASSERT_FALSE(ns.ok());
  EXPECT_EQ(ns.error().message,
            "Identify Namespace: all zero, namespace is not active");
}

TEST(IdentifyNamespaceTest, RejectsOutOfRangeFormats) {
  Bytes bytes = HandmadeIdNs(1);
  bytes[25] = 64;  // NLBAF: 65 formats, the table holds 64
  auto ns = DecodeIdentifyNamespace(bytes);
  ASSERT_FALSE(ns.ok());
  EXPECT_EQ(ns.error().message,
            "Identify Namespace: NLBAF 64, expected at most 63");

  bytes = HandmadeIdNs(1);
  bytes[26] = 0x02;  // FLBAS picks format 2 of NLBAF 1
  ns = DecodeIdentifyNamespace(bytes);
  ASSERT_FALSE(ns.ok());
  EXPECT_EQ(ns.error().message,
            "Identify Namespace: FLBAS selects LBA format 2, but NLBAF is 1");

  bytes = HandmadeIdNs(1);
  bytes[128 + 2] = 8;  // LBADS 8: 256-byte blocks are not allowed
  ns = DecodeIdentifyNamespace(bytes);
  ASSERT_FALSE(ns.ok());
  EXPECT_EQ(ns.error().message,
            "Identify Namespace: LBA format 0 has LBADS 8, expected 9..31");

  bytes[128 + 2] = 63;  // would overflow 2^LBADS * NSZE
  EXPECT_FALSE(DecodeIdentifyNamespace(bytes).ok());
}

TEST(IdentifyNamespaceTest, MetadataExtendedBitIsNotPartOfTheIndex) {
  Bytes bytes = HandmadeIdNs(1);
  bytes[26] = 0x11;  // bit 4 (extended LBA) plus format 1
  const auto ns = DecodeIdentifyNamespace(bytes);
  ASSERT_TRUE(ns.ok()) << ns.error().message;
  EXPECT_EQ(ns->format_index, 1);
  EXPECT_EQ(ns->lba_data_size, 4096u);
}

}  // namespace
}  // namespace drivewatch
