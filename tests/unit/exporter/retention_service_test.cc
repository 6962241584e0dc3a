// SPDX-License-Identifier: Apache-2.0
// The daemon's export of retention studies when a record goes bad: the
// damaged gauge, one log line per change, and the study's other series
// kept at their last good values so their alerts still hold.
#include "exporter/retention_service.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "aging/retention/retention_study.h"
#include "tests/common/file_text.h"

namespace drivewatch {
namespace {

const std::string kFixtures = std::string(DW_FIXTURE_DIR) + "/retention/";
constexpr double kNow = 1795400000;

// The exposition lines that start with `prefix`.
std::string Lines(const std::string& text, const std::string& prefix) {
  std::string out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) == 0) out += line + "\n";
  }
  return out;
}

class RetentionServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dw-retsvc-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    config_.state_directory = tmpl;
    std::filesystem::create_directories(aging::RetentionDirectory(tmpl));
    // No sysfs: the service exports without sampling a drive.
    service_ = std::make_unique<RetentionService>(store_, std::chrono::minutes{1},
                                                  config_.state_directory + "/no-sysfs");
    service_->Reconfigure(config_);
  }
  void TearDown() override { std::filesystem::remove_all(config_.state_directory); }

  void Write(const std::string& name, const std::string& text) {
    testing::WriteFileText(aging::StudyPath(config_.state_directory, name), text);
  }
  std::string Scrape() { return *store_.Render(); }

  config::Config config_;
  MetricStore store_;
  std::unique_ptr<RetentionService> service_;
};

TEST_F(RetentionServiceTest, ADamagedStudyIsFlaggedAndKeepsItsLastGoodSeries) {
  const std::string good = testing::ReadFileText(kFixtures + "bad_blocks.json");
  Write("bake-70c", good);
  service_->Tick(kNow);
  std::string text = Scrape();
  EXPECT_NE(text.find("drivewatch_retention_study_damaged{study=\"bake-70c\"} 0\n"), std::string::npos)
      << Lines(text, "drivewatch_retention_study_damaged");
  const std::string bad_blocks = Lines(text, "drivewatch_retention_bad_blocks{");
  const std::string age = Lines(text, "drivewatch_retention_age_seconds{");
  ASSERT_NE(bad_blocks.find("class=\"unreadable\",read=\"last_verify\",serial=\"S64DNX0R654321\","
                            "study=\"bake-70c\",target=\"scratch\"} 3\n"),
            std::string::npos)
      << bad_blocks;
  ASSERT_FALSE(age.empty());

  // The record is damaged: block_size 0 once killed the daemon with SIGFPE.
  std::string damaged = good;
  damaged.replace(damaged.find("\"block_size\": 4096"), 18, "\"block_size\": 0");
  Write("bake-70c", damaged);
  service_->Tick(kNow + 60);
  text = Scrape();
  EXPECT_NE(text.find("drivewatch_retention_study_damaged{study=\"bake-70c\"} 1\n"), std::string::npos);
  EXPECT_EQ(Lines(text, "drivewatch_retention_bad_blocks{"), bad_blocks);
  EXPECT_EQ(Lines(text, "drivewatch_retention_age_seconds{"), age);  // the last good value

  // Unreadable (a read(2) error) counts the same.
  std::filesystem::remove(aging::StudyPath(config_.state_directory, "bake-70c"));
  std::filesystem::create_directories(aging::StudyPath(config_.state_directory, "bake-70c"));
  service_->Tick(kNow + 120);
  text = Scrape();
  EXPECT_NE(text.find("drivewatch_retention_study_damaged{study=\"bake-70c\"} 1\n"), std::string::npos);
  EXPECT_EQ(Lines(text, "drivewatch_retention_bad_blocks{"), bad_blocks);

  // Repaired: fresh values again.
  std::filesystem::remove(aging::StudyPath(config_.state_directory, "bake-70c"));
  Write("bake-70c", good);
  service_->Tick(kNow + 180);
  text = Scrape();
  EXPECT_NE(text.find("drivewatch_retention_study_damaged{study=\"bake-70c\"} 0\n"), std::string::npos);
  EXPECT_NE(Lines(text, "drivewatch_retention_age_seconds{"), age);
}

TEST_F(RetentionServiceTest, ADamagedStudySeenFirstIsFlaggedWithoutResults) {
  std::string text = testing::ReadFileText(kFixtures + "clean.json");
  text.replace(text.find("\"length\": 1073741824"), 20, "\"length\": 0");
  Write("lab-q4", text);
  service_->Tick(kNow);
  const std::string out = Scrape();
  EXPECT_NE(out.find("drivewatch_retention_study_damaged{study=\"lab-q4\"} 1\n"), std::string::npos);
  EXPECT_TRUE(Lines(out, "drivewatch_retention_bad_blocks{").empty());
  EXPECT_TRUE(Lines(out, "drivewatch_retention_blocks_verified{").empty());
}

}  // namespace
}  // namespace drivewatch
