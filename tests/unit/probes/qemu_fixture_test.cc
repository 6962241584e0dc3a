// SPDX-License-Identifier: Apache-2.0
// Cross-check against real bytes: tests/vm/ captured Identify and SMART data
// from QEMU 7.2's emulated controller through the kernel driver with
// nvme-cli 2.3, both raw (-b) and decoded by nvme-cli (-o json). Same bytes,
// two decoders: nvme-cli's must agree with ours on every field we read.
// The health probe then runs on those bytes through a fake Controller (no
// NVMe hardware here) and must show what NOTES.md says QEMU reports.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "probes/drive/identify.h"
#include "probes/drive/smart_log.h"
#include "probes/health_probe.h"
#include "tests/unit/probes/probe_test_util.h"

namespace drivewatch {
namespace {

namespace fs = std::filesystem;
using testing::FakeController;
using testing::ReadFixture;
using testing::RecordingSink;

fs::path QemuDir() { return testing::FixtureDir() / "qemu"; }

std::vector<std::string> Serials() {
  std::vector<std::string> serials;
  const std::regex id_ctrl("id-ctrl-(.+)\\.bin");
  if (!fs::exists(QemuDir())) return serials;
  for (const auto& entry : fs::directory_iterator(QemuDir())) {
    std::smatch m;
    const std::string name = entry.path().filename().string();
    if (std::regex_match(name, m, id_ctrl)) serials.push_back(m[1]);
  }
  std::sort(serials.begin(), serials.end());
  return serials;
}

// NSIDs recorded for `serial`, from the id-ns-SERIAL-nN.bin names.
std::vector<std::uint32_t> Nsids(const std::string& serial) {
  std::vector<std::uint32_t> nsids;
  const std::regex id_ns("id-ns-" + serial + "-n([0-9]+)\\.bin");
  for (const auto& entry : fs::directory_iterator(QemuDir())) {
    std::smatch m;
    const std::string name = entry.path().filename().string();
    if (std::regex_match(name, m, id_ns)) nsids.push_back(std::stoul(m[1]));
  }
  std::sort(nsids.begin(), nsids.end());
  return nsids;
}

// nvme-cli's JSON output. Missing keys and values of another type throw
// (nlohmann::json's at() and get()), which fails the test.
nlohmann::json ReadJson(const std::string& name) {
  std::ifstream in(QemuDir() / name);
  return nlohmann::json::parse(in);
}

// nvme-cli prints 64-bit fields as numbers and 128-bit ones as decimal
// strings (possibly with the locale's thousands separators).
unsigned __int128 U128(const nlohmann::json& value) {
  if (value.is_number_unsigned()) return value.get<std::uint64_t>();
  const std::string& text = value.get_ref<const std::string&>();
  unsigned __int128 v = 0;
  bool any = false;
  for (char c : text) {
    if (c == ',' || c == '.' || c == ' ') continue;
    if (c < '0' || c > '9') throw std::runtime_error("not an unsigned integer: " + text);
    v = v * 10 + static_cast<unsigned>(c - '0');
    any = true;
  }
  if (!any) throw std::runtime_error("empty number");
  return v;
}
std::uint64_t U64(const nlohmann::json& value) { return static_cast<std::uint64_t>(U128(value)); }

class QemuFixtureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    serials_ = Serials();
    if (serials_.empty()) {
      GTEST_SKIP() << "no QEMU fixtures in " << QemuDir()
                   << "; tests/vm/run.sh capture records them";
    }
  }
  std::vector<std::string> serials_;
};

TEST_F(QemuFixtureTest, IdentifyControllerMatchesNvmeCli) {
  for (const std::string& sn : serials_) {
    SCOPED_TRACE(sn);
    const auto id = DecodeIdentifyController(
        ReadFixture(QemuDir() / ("id-ctrl-" + sn + ".bin")));
    ASSERT_TRUE(id.ok()) << id.error().message;
    const nlohmann::json j = ReadJson("id-ctrl-" + sn + ".json");
    EXPECT_EQ(id->vid, U64(j.at("vid")));
    EXPECT_EQ(id->ssvid, U64(j.at("ssvid")));
    // nvme-cli prints the fields with their padding.
    EXPECT_EQ(id->serial, TrimIdentifyString(j.at("sn").get<std::string>()));
    EXPECT_EQ(id->model, TrimIdentifyString(j.at("mn").get<std::string>()));
    EXPECT_EQ(id->firmware, TrimIdentifyString(j.at("fr").get<std::string>()));
    EXPECT_EQ(id->rab, U64(j.at("rab")));
    EXPECT_EQ(id->ieee_oui, U64(j.at("ieee")));
    EXPECT_EQ(id->cmic, U64(j.at("cmic")));
    EXPECT_EQ(id->mdts, U64(j.at("mdts")));
    EXPECT_EQ(id->cntlid, U64(j.at("cntlid")));
    EXPECT_EQ(id->ver, U64(j.at("ver")));
    EXPECT_EQ(id->oacs, U64(j.at("oacs")));
    EXPECT_EQ(id->lpa, U64(j.at("lpa")));
    EXPECT_EQ(id->elpe, U64(j.at("elpe")));
    EXPECT_EQ(id->npss, U64(j.at("npss")));
    EXPECT_EQ(id->apsta, U64(j.at("apsta")));
    EXPECT_EQ(id->wctemp_k, U64(j.at("wctemp")));
    EXPECT_EQ(id->cctemp_k, U64(j.at("cctemp")));
    EXPECT_TRUE(id->tnvmcap == U128(j.at("tnvmcap")));
    EXPECT_TRUE(id->unvmcap == U128(j.at("unvmcap")));
    EXPECT_EQ(id->hctma, U64(j.at("hctma")));
    EXPECT_EQ(id->mntmt_k, U64(j.at("mntmt")));
    EXPECT_EQ(id->mxtmt_k, U64(j.at("mxtmt")));
    EXPECT_EQ(id->nn, U64(j.at("nn")));
    const nlohmann::json& psds = j.at("psds");
    ASSERT_EQ(psds.size(), static_cast<std::size_t>(id->PowerStateCount()));
    for (std::size_t i = 0; i < psds.size(); ++i) {
      const PowerStateDescriptor& ps = id->power_states[i];
      EXPECT_EQ(ps.max_power, U64(psds.at(i).at("max_power"))) << i;
      EXPECT_EQ(ps.flags, U64(psds.at(i).at("flags"))) << i;
      EXPECT_EQ(ps.entry_latency_us, U64(psds.at(i).at("entry_lat"))) << i;
      EXPECT_EQ(ps.exit_latency_us, U64(psds.at(i).at("exit_lat"))) << i;
      EXPECT_EQ(ps.relative_read_throughput, U64(psds.at(i).at("read_tput"))) << i;
      EXPECT_EQ(ps.relative_read_latency, U64(psds.at(i).at("read_lat"))) << i;
      EXPECT_EQ(ps.relative_write_throughput, U64(psds.at(i).at("write_tput"))) << i;
      EXPECT_EQ(ps.relative_write_latency, U64(psds.at(i).at("write_lat"))) << i;
      EXPECT_EQ(ps.idle_power, U64(psds.at(i).at("idle_power"))) << i;
      EXPECT_EQ(ps.idle_power_scale, U64(psds.at(i).at("idle_scale"))) << i;
      EXPECT_EQ(ps.active_power, U64(psds.at(i).at("active_power"))) << i;
      EXPECT_EQ(ps.active_power_workload, U64(psds.at(i).at("active_power_work")))
          << i;
      EXPECT_EQ(ps.active_power_scale, U64(psds.at(i).at("active_scale"))) << i;
    }
  }
}

TEST_F(QemuFixtureTest, SmartLogMatchesNvmeCli) {
  for (const std::string& sn : serials_) {
    SCOPED_TRACE(sn);
    const auto log =
        DecodeSmartLog(ReadFixture(QemuDir() / ("smart-log-" + sn + ".bin")));
    ASSERT_TRUE(log.ok()) << log.error().message;
    const nlohmann::json j = ReadJson("smart-log-" + sn + ".json");
    EXPECT_EQ(log->critical_warning, U64(j.at("critical_warning")));
    EXPECT_EQ(log->composite_temperature_k, U64(j.at("temperature")));
    EXPECT_EQ(log->available_spare_percent, U64(j.at("avail_spare")));
    EXPECT_EQ(log->available_spare_threshold_percent, U64(j.at("spare_thresh")));
    EXPECT_EQ(log->percentage_used, U64(j.at("percent_used")));
    EXPECT_EQ(log->endurance_group_critical_warning_summary,
              U64(j.at("endurance_grp_critical_warning_summary")));
    EXPECT_TRUE(log->data_units_read == U128(j.at("data_units_read")));
    EXPECT_TRUE(log->data_units_written == U128(j.at("data_units_written")));
    EXPECT_TRUE(log->host_read_commands == U128(j.at("host_read_commands")));
    EXPECT_TRUE(log->host_write_commands == U128(j.at("host_write_commands")));
    EXPECT_TRUE(log->controller_busy_time_minutes ==
                U128(j.at("controller_busy_time")));
    EXPECT_TRUE(log->power_cycles == U128(j.at("power_cycles")));
    EXPECT_TRUE(log->power_on_hours == U128(j.at("power_on_hours")));
    EXPECT_TRUE(log->unsafe_shutdowns == U128(j.at("unsafe_shutdowns")));
    EXPECT_TRUE(log->media_errors == U128(j.at("media_errors")));
    EXPECT_TRUE(log->error_log_entries == U128(j.at("num_err_log_entries")));
    EXPECT_EQ(log->warning_temperature_time_minutes,
              U64(j.at("warning_temp_time")));
    EXPECT_EQ(log->critical_temperature_time_minutes,
              U64(j.at("critical_comp_time")));
    for (int i = 0; i < 8; ++i) {
      // nvme-cli leaves out the sensors that read 0.
      const std::string key = "temperature_sensor_" + std::to_string(i + 1);
      EXPECT_EQ(log->temperature_sensors_k[i], j.contains(key) ? U64(j.at(key)) : 0u)
          << key;
    }
    EXPECT_EQ(log->thermal_management_temp1_transitions,
              U64(j.at("thm_temp1_trans_count")));
    EXPECT_EQ(log->thermal_management_temp2_transitions,
              U64(j.at("thm_temp2_trans_count")));
    EXPECT_EQ(log->thermal_management_temp1_seconds,
              U64(j.at("thm_temp1_total_time")));
    EXPECT_EQ(log->thermal_management_temp2_seconds,
              U64(j.at("thm_temp2_total_time")));
  }
}

TEST_F(QemuFixtureTest, IdentifyNamespaceMatchesNvmeCli) {
  int checked = 0;
  for (const std::string& sn : serials_) {
    for (std::uint32_t nsid : Nsids(sn)) {
      const std::string base = "id-ns-" + sn + "-n" + std::to_string(nsid);
      SCOPED_TRACE(base);
      const auto ns =
          DecodeIdentifyNamespace(ReadFixture(QemuDir() / (base + ".bin")));
      ASSERT_TRUE(ns.ok()) << ns.error().message;
      const nlohmann::json j = ReadJson(base + ".json");
      EXPECT_EQ(ns->nsze, U64(j.at("nsze")));
      EXPECT_EQ(ns->ncap, U64(j.at("ncap")));
      EXPECT_EQ(ns->nuse, U64(j.at("nuse")));
      EXPECT_EQ(ns->nlbaf, U64(j.at("nlbaf")));
      EXPECT_EQ(ns->flbas, U64(j.at("flbas")));
      const nlohmann::json& lbafs = j.at("lbafs");
      ASSERT_EQ(lbafs.size(), ns->lba_formats.size());
      for (std::size_t i = 0; i < lbafs.size(); ++i) {
        EXPECT_EQ(ns->lba_formats[i].metadata_size, U64(lbafs.at(i).at("ms"))) << i;
        EXPECT_EQ(ns->lba_formats[i].lbads, U64(lbafs.at(i).at("ds"))) << i;
        EXPECT_EQ(ns->lba_formats[i].relative_performance, U64(lbafs.at(i).at("rp")))
            << i;
      }
      EXPECT_EQ(ns->lba_data_size, 1u << U64(lbafs.at(ns->format_index).at("ds")));
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

// NOTES.md: QEMU 7.2 reports model "QEMU NVMe Ctrl", WCTEMP 343 K, CCTEMP
// 373 K, one power state of 25 W, SMART temperature 323 K, spare, threshold
// and percentage used 0.
TEST_F(QemuFixtureTest, MatchesTheKnownQemuFacts) {
  for (const std::string& sn : serials_) {
    SCOPED_TRACE(sn);
    const auto id = DecodeIdentifyController(
        ReadFixture(QemuDir() / ("id-ctrl-" + sn + ".bin")));
    ASSERT_TRUE(id.ok());
    EXPECT_EQ(id->serial, sn);
    EXPECT_EQ(id->model, "QEMU NVMe Ctrl");
    EXPECT_EQ(id->wctemp_k, 343);
    EXPECT_EQ(id->cctemp_k, 373);
    EXPECT_EQ(id->PowerStateCount(), 1);
    EXPECT_DOUBLE_EQ(*id->power_states[0].MaxPowerWatts(), 25.0);
    const auto log =
        DecodeSmartLog(ReadFixture(QemuDir() / ("smart-log-" + sn + ".bin")));
    ASSERT_TRUE(log.ok());
    EXPECT_EQ(log->composite_temperature_k, 323);
    EXPECT_EQ(log->available_spare_percent, 0);
    EXPECT_EQ(log->available_spare_threshold_percent, 0);
    EXPECT_EQ(log->percentage_used, 0);
    EXPECT_FALSE(log->IntervalPowerWatts().has_value());
    EXPECT_EQ(log->lifetime_energy_watt_hours, 0u);
  }
}

TEST_F(QemuFixtureTest, HealthProbeReportsQemuControllers) {
  for (const std::string& sn : serials_) {
    SCOPED_TRACE(sn);
    FakeController ctrl;
    ctrl.SetIdentify(kIdentifyCnsController, 0,
                     ReadFixture(QemuDir() / ("id-ctrl-" + sn + ".bin")));
    ctrl.SetLogPage(kSmartLogId, kNsidAll,
                    ReadFixture(QemuDir() / ("smart-log-" + sn + ".bin")));
    ControllerInfo info;
    info.name = "nvme0";
    info.device = "/dev/nvme0";
    info.serial = sn;
    for (std::uint32_t nsid : Nsids(sn)) {
      ctrl.SetIdentify(
          kIdentifyCnsNamespace, nsid,
          ReadFixture(QemuDir() /
                      ("id-ns-" + sn + "-n" + std::to_string(nsid) + ".bin")));
      info.namespaces.push_back({nsid, "nvme0n" + std::to_string(nsid),
                                 "/dev/nvme0n" + std::to_string(nsid)});
    }
    RecordingSink sink;
    const Status status = HealthProbe().Run(ctrl, info, sink);
    ASSERT_TRUE(status.ok()) << status.error().message;

    std::map<std::string, double> got;
    for (const auto& s : sink.samples) got[s.Key()] = s.value;
    auto at = [&](const std::string& name, Labels labels = {}) {
      labels.emplace_back("serial", sn);
      const std::string key = testing::SeriesKey(name, std::move(labels));
      EXPECT_EQ(got.count(key), 1u) << key;
      return got.count(key) ? got[key] : -1.0;
    };
    EXPECT_DOUBLE_EQ(
        at("drivewatch_temperature_celsius", {{"sensor", "composite"}}), 49.85);
    EXPECT_DOUBLE_EQ(at("drivewatch_temperature_threshold_celsius",
                        {{"threshold", "wctemp"}}),
                     69.85);
    EXPECT_DOUBLE_EQ(at("drivewatch_temperature_threshold_celsius",
                        {{"threshold", "cctemp"}}),
                     99.85);
    EXPECT_EQ(at("drivewatch_available_spare_ratio"), 0);
    EXPECT_EQ(at("drivewatch_percentage_used_ratio"), 0);
    EXPECT_EQ(at("drivewatch_power_states"), 1);
    EXPECT_EQ(at("drivewatch_critical_warning_raw"), 0);
    // QEMU implements none of the optional sensors, and no TNVMCAP.
    EXPECT_EQ(got.count(testing::SeriesKey("drivewatch_temperature_celsius",
                                           {{"sensor", "1"}, {"serial", sn}})),
              0u);
    EXPECT_EQ(got.count(testing::SeriesKey("drivewatch_nvm_capacity_bytes",
                                           {{"serial", sn}})),
              0u);
    for (std::uint32_t nsid : Nsids(sn)) {
      const Labels ns{{"nsid", std::to_string(nsid)}};
      EXPECT_EQ(at("drivewatch_namespace_identify_success", ns), 1);
      EXPECT_GT(at("drivewatch_namespace_size_bytes", ns), 0);
    }
  }
}

}  // namespace
}  // namespace drivewatch
