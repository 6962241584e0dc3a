// SPDX-License-Identifier: Apache-2.0
// Cross-check against real bytes: tests/vm/ captured Identify and SMART data
// from QEMU 7.2's emulated controller through the kernel driver with
// nvme-cli 2.3, both raw (-b) and decoded by nvme-cli (-o json). Same bytes,
// two decoders: nvme-cli's must agree with ours on every field we read.
// The health probe then runs on those bytes through a fake Controller (no
// NVMe hardware here) and must show what NOTES.md says QEMU reports.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "probes/health_probe.h"
#include "probes/identify.h"
#include "probes/smart_log.h"
#include "tests/unit/probes/mini_json.h"
#include "tests/unit/probes/probe_test_util.h"

namespace drivewatch {
namespace {

namespace fs = std::filesystem;
using testing::FakeController;
using testing::JsonParser;
using testing::JsonValue;
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

JsonValue ReadJson(const std::string& name) {
  std::ifstream in(QemuDir() / name);
  std::stringstream text;
  text << in.rdbuf();
  return JsonParser::Parse(text.str());
}

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
    const JsonValue j = ReadJson("id-ctrl-" + sn + ".json");
    EXPECT_EQ(id->vid, j["vid"].U64());
    EXPECT_EQ(id->ssvid, j["ssvid"].U64());
    // nvme-cli prints the fields with their padding.
    EXPECT_EQ(id->serial, TrimIdentifyString(j["sn"].text));
    EXPECT_EQ(id->model, TrimIdentifyString(j["mn"].text));
    EXPECT_EQ(id->firmware, TrimIdentifyString(j["fr"].text));
    EXPECT_EQ(id->rab, j["rab"].U64());
    EXPECT_EQ(id->ieee_oui, j["ieee"].U64());
    EXPECT_EQ(id->cmic, j["cmic"].U64());
    EXPECT_EQ(id->mdts, j["mdts"].U64());
    EXPECT_EQ(id->cntlid, j["cntlid"].U64());
    EXPECT_EQ(id->ver, j["ver"].U64());
    EXPECT_EQ(id->oacs, j["oacs"].U64());
    EXPECT_EQ(id->lpa, j["lpa"].U64());
    EXPECT_EQ(id->elpe, j["elpe"].U64());
    EXPECT_EQ(id->npss, j["npss"].U64());
    EXPECT_EQ(id->apsta, j["apsta"].U64());
    EXPECT_EQ(id->wctemp_k, j["wctemp"].U64());
    EXPECT_EQ(id->cctemp_k, j["cctemp"].U64());
    EXPECT_TRUE(id->tnvmcap == j["tnvmcap"].U128());
    EXPECT_TRUE(id->unvmcap == j["unvmcap"].U128());
    EXPECT_EQ(id->hctma, j["hctma"].U64());
    EXPECT_EQ(id->mntmt_k, j["mntmt"].U64());
    EXPECT_EQ(id->mxtmt_k, j["mxtmt"].U64());
    EXPECT_EQ(id->nn, j["nn"].U64());
    const auto& psds = j["psds"].items;
    ASSERT_EQ(psds.size(), static_cast<std::size_t>(id->PowerStateCount()));
    for (std::size_t i = 0; i < psds.size(); ++i) {
      const PowerStateDescriptor& ps = id->power_states[i];
      EXPECT_EQ(ps.max_power, psds[i]["max_power"].U64()) << i;
      EXPECT_EQ(ps.flags, psds[i]["flags"].U64()) << i;
      EXPECT_EQ(ps.entry_latency_us, psds[i]["entry_lat"].U64()) << i;
      EXPECT_EQ(ps.exit_latency_us, psds[i]["exit_lat"].U64()) << i;
      EXPECT_EQ(ps.relative_read_throughput, psds[i]["read_tput"].U64()) << i;
      EXPECT_EQ(ps.relative_read_latency, psds[i]["read_lat"].U64()) << i;
      EXPECT_EQ(ps.relative_write_throughput, psds[i]["write_tput"].U64()) << i;
      EXPECT_EQ(ps.relative_write_latency, psds[i]["write_lat"].U64()) << i;
      EXPECT_EQ(ps.idle_power, psds[i]["idle_power"].U64()) << i;
      EXPECT_EQ(ps.idle_power_scale, psds[i]["idle_scale"].U64()) << i;
      EXPECT_EQ(ps.active_power, psds[i]["active_power"].U64()) << i;
      EXPECT_EQ(ps.active_power_workload, psds[i]["active_power_work"].U64())
          << i;
      EXPECT_EQ(ps.active_power_scale, psds[i]["active_scale"].U64()) << i;
    }
  }
}

TEST_F(QemuFixtureTest, SmartLogMatchesNvmeCli) {
  for (const std::string& sn : serials_) {
    SCOPED_TRACE(sn);
    const auto log =
        DecodeSmartLog(ReadFixture(QemuDir() / ("smart-log-" + sn + ".bin")));
    ASSERT_TRUE(log.ok()) << log.error().message;
    const JsonValue j = ReadJson("smart-log-" + sn + ".json");
    EXPECT_EQ(log->critical_warning, j["critical_warning"].U64());
    EXPECT_EQ(log->composite_temperature_k, j["temperature"].U64());
    EXPECT_EQ(log->available_spare_percent, j["avail_spare"].U64());
    EXPECT_EQ(log->available_spare_threshold_percent, j["spare_thresh"].U64());
    EXPECT_EQ(log->percentage_used, j["percent_used"].U64());
    EXPECT_EQ(log->endurance_group_critical_warning_summary,
              j["endurance_grp_critical_warning_summary"].U64());
    EXPECT_TRUE(log->data_units_read == j["data_units_read"].U128());
    EXPECT_TRUE(log->data_units_written == j["data_units_written"].U128());
    EXPECT_TRUE(log->host_read_commands == j["host_read_commands"].U128());
    EXPECT_TRUE(log->host_write_commands == j["host_write_commands"].U128());
    EXPECT_TRUE(log->controller_busy_time_minutes ==
                j["controller_busy_time"].U128());
    EXPECT_TRUE(log->power_cycles == j["power_cycles"].U128());
    EXPECT_TRUE(log->power_on_hours == j["power_on_hours"].U128());
    EXPECT_TRUE(log->unsafe_shutdowns == j["unsafe_shutdowns"].U128());
    EXPECT_TRUE(log->media_errors == j["media_errors"].U128());
    EXPECT_TRUE(log->error_log_entries == j["num_err_log_entries"].U128());
    EXPECT_EQ(log->warning_temperature_time_minutes,
              j["warning_temp_time"].U64());
    EXPECT_EQ(log->critical_temperature_time_minutes,
              j["critical_comp_time"].U64());
    for (int i = 0; i < 8; ++i) {
      // nvme-cli leaves out the sensors that read 0.
      const std::string key = "temperature_sensor_" + std::to_string(i + 1);
      EXPECT_EQ(log->temperature_sensors_k[i], j.Has(key) ? j[key].U64() : 0u)
          << key;
    }
    EXPECT_EQ(log->thermal_management_temp1_transitions,
              j["thm_temp1_trans_count"].U64());
    EXPECT_EQ(log->thermal_management_temp2_transitions,
              j["thm_temp2_trans_count"].U64());
    EXPECT_EQ(log->thermal_management_temp1_seconds,
              j["thm_temp1_total_time"].U64());
    EXPECT_EQ(log->thermal_management_temp2_seconds,
              j["thm_temp2_total_time"].U64());
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
      const JsonValue j = ReadJson(base + ".json");
      EXPECT_EQ(ns->nsze, j["nsze"].U64());
      EXPECT_EQ(ns->ncap, j["ncap"].U64());
      EXPECT_EQ(ns->nuse, j["nuse"].U64());
      EXPECT_EQ(ns->nlbaf, j["nlbaf"].U64());
      EXPECT_EQ(ns->flbas, j["flbas"].U64());
      const auto& lbafs = j["lbafs"].items;
      ASSERT_EQ(lbafs.size(), ns->lba_formats.size());
      for (std::size_t i = 0; i < lbafs.size(); ++i) {
        EXPECT_EQ(ns->lba_formats[i].metadata_size, lbafs[i]["ms"].U64()) << i;
        EXPECT_EQ(ns->lba_formats[i].lbads, lbafs[i]["ds"].U64()) << i;
        EXPECT_EQ(ns->lba_formats[i].relative_performance, lbafs[i]["rp"].U64())
            << i;
      }
      EXPECT_EQ(ns->lba_data_size, 1u << lbafs[ns->format_index]["ds"].U64());
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
