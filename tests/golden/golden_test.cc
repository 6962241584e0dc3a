// SPDX-License-Identifier: Apache-2.0
// Golden test: the exporter driven through the drive layer, with controllers
// answering from recorded log-page bytes, scraped over real HTTP on
// 127.0.0.1 with real curl, compared with a golden file, linted by the real
// promtool, and checked against docs/metrics.md (the dashboards' contract).
//
// Regenerate the golden file after an intended change with
//   DW_UPDATE_GOLDEN=1 build/tests/golden_test
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "exporter/drive_monitor.h"
#include "exporter/http/http_server.h"
#include "exporter/probe_registry.h"
#include "tests/common/fake_clock.h"
#include "tests/common/recorded_drive_layer.h"

namespace drivewatch {
namespace {

const std::filesystem::path kSource = DW_SOURCE_DIR;
const std::filesystem::path kFixtures = DW_FIXTURE_DIR;

struct CommandResult {
  int status;
  std::string output;
};

// Runs a shell command, feeding `input` to it; returns exit status and
// combined stdout/stderr.
CommandResult RunCommand(const std::string& command, const std::string& input = "") {
  const std::string in_path = ::testing::TempDir() + "golden_input_" +
                              std::to_string(::getpid());
  std::ofstream(in_path) << input;
  FILE* p = ::popen((command + " <" + in_path + " 2>&1").c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = ::pclose(p);
  std::filesystem::remove(in_path);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

std::string ReadText(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class GoldenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    state_dir_ = ::testing::TempDir() + "dw-golden-" + std::to_string(::getpid());
    config_ = config::Defaults();
    config_.state_directory = state_dir_;
    layer_ = std::make_unique<testing::RecordedDriveLayer>(
        std::vector<std::filesystem::path>{kFixtures / "qemu",
                                           kFixtures / "handmade"});
    ASSERT_GE(layer_->recordings().size(), 3u)
        << "expected the QEMU and hand-built fixtures";
    scheduler_ = std::make_unique<Scheduler>(clock_, executor_);
    monitor_ = std::make_unique<DriveMonitor>(*layer_, store_, *scheduler_,
                                              clock_, RegisteredProbes());
    monitor_->Start(config_);
    scheduler_->Tick();  // discovery
    scheduler_->Tick();  // the probes it scheduled
    http_ = std::make_unique<HttpServer>(store_, "<html></html>");
    ASSERT_TRUE(http_->Start("127.0.0.1:0").ok());
  }
  void TearDown() override {
    http_.reset();
    std::filesystem::remove_all(state_dir_);
  }

  std::string Scrape() {
    const auto r = RunCommand("curl -fsS http://127.0.0.1:" +
                       std::to_string(http_->port()) + "/metrics");
    EXPECT_EQ(r.status, 0) << r.output;
    return r.output;
  }

  std::string state_dir_;
  config::Config config_;
  testing::FakeClock clock_;
  InlineExecutor executor_;
  MetricStore store_;
  std::unique_ptr<testing::RecordedDriveLayer> layer_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<DriveMonitor> monitor_;
  std::unique_ptr<HttpServer> http_;
};

TEST_F(GoldenTest, ScrapeMatchesGoldenFile) {
  const std::string scraped = Scrape();
  const auto golden_path = kSource / "tests/golden/metrics.golden";
  if (std::getenv("DW_UPDATE_GOLDEN")) {
    std::ofstream(golden_path) << scraped;
    GTEST_SKIP() << "rewrote " << golden_path;
  }
  const std::string golden = ReadText(golden_path);
  ASSERT_FALSE(golden.empty()) << "missing " << golden_path;
  EXPECT_EQ(scraped, golden)
      << "the exposition changed; if intended, regenerate with "
         "DW_UPDATE_GOLDEN=1";
}

TEST_F(GoldenTest, PromtoolCheckMetricsIsClean) {
  const auto r = RunCommand("promtool check metrics", Scrape());
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output, "");
}

TEST_F(GoldenTest, EveryMetricIsDocumented) {
  const std::string doc = ReadText(kSource / "docs/metrics.md");
  ASSERT_FALSE(doc.empty());
  const std::regex type_line("# TYPE (\\S+) (\\S+)");
  const std::string text = Scrape();
  std::set<std::string> names;
  for (std::sregex_iterator it(text.begin(), text.end(), type_line), end;
       it != end; ++it) {
    names.insert((*it)[1]);
  }
  ASSERT_GT(names.size(), 20u);
  for (const auto& name : names) {
    EXPECT_NE(doc.find("`" + name + "`"), std::string::npos)
        << name << " is exported but not listed in docs/metrics.md";
  }
}

TEST_F(GoldenTest, EveryPerDriveSeriesCarriesSerial) {
  const std::string text = Scrape();
  std::istringstream in(text);
  std::string line;
  const std::set<std::string> global = {
      "drivewatch_discovery_success", "drivewatch_discovery_duration_seconds",
      "drivewatch_discovery_last_success_timestamp_seconds",
      "drivewatch_drives"};
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const std::string name = line.substr(0, line.find_first_of("{ "));
    if (global.count(name)) continue;
    EXPECT_NE(line.find("serial=\""), std::string::npos) << line;
  }
}

}  // namespace
}  // namespace drivewatch
