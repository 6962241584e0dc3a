// SPDX-License-Identifier: Apache-2.0
// Files written before the JSON reader and writer moved to nlohmann-json
// still load, and writing what was read gives the same bytes again. The
// fixtures in tests/fixtures/compat/ were written by the hand-written
// config/util/json.cc (main at e4f011f): history.dwh by HistoryFile::Append (the
// three records of history/three_records.dwh, then one of edge values:
// 64-bit extremes, doubles in both notations, escapes, non-ASCII text,
// invalid UTF-8 as it was replaced, a non-finite double as null), and
// study_*.json by SaveStudy's SerializeStudy from retention/*.json.
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>

#include "aging/history/history.h"
#include "aging/retention/retention_study.h"
#include "config/util/json.h"
#include "tests/common/file_text.h"

namespace drivewatch::aging {
namespace {

const std::string kFixtures = std::string(DW_FIXTURE_DIR) + "/compat/";

class FormatCompatTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dw-compat-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string dir_;
};

TEST_F(FormatCompatTest, HistoryLoadsAndAppendsToTheSameBytes) {
  const std::string original = testing::ReadFileText(kFixtures + "history.dwh");
  ASSERT_FALSE(original.empty());
  Expected<HistoryContents> read = HistoryFile(kFixtures + "history.dwh").Read();
  ASSERT_TRUE(read.ok()) << read.error().message;
  ASSERT_EQ(read->records.size(), 4u);
  EXPECT_TRUE(read->damaged.empty());
  EXPECT_EQ(read->torn_tail_bytes, 0u);

  const Json& edge = read->records[3];
  EXPECT_EQ(AsUint(*Find(edge, "u64_max")), std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(AsInt(*Find(edge, "i64_min")), std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(AsInt(*Find(edge, "past_2_53")), 9007199254740993);
  ASSERT_EQ(Items(*Find(edge, "doubles")).size(), 11u);
  EXPECT_EQ(DumpJson(Items(*Find(edge, "doubles"))[0]), "2.0");
  EXPECT_EQ(AsDouble(Items(*Find(edge, "doubles"))[6]), 1.7976931348623157e308);
  EXPECT_EQ(AsString(*Find(edge, "text")).back(), '\0');

  HistoryFile copy(dir_ + "/history.dwh");
  for (const Json& record : read->records) ASSERT_TRUE(copy.Append(record).ok());
  EXPECT_EQ(testing::ReadFileText(dir_ + "/history.dwh"), original);
}

TEST_F(FormatCompatTest, StudiesLoadAndSerializeToTheSameBytes) {
  for (const std::string name : {"clean", "bad_blocks"}) {
    SCOPED_TRACE(name);
    const std::string path = kFixtures + "study_" + name + ".json";
    const std::string original = testing::ReadFileText(path);
    ASSERT_FALSE(original.empty());
    Expected<Json> study = ParseStudyRecord(original, path, "");
    ASSERT_TRUE(study.ok()) << study.error().message;
    EXPECT_EQ(Find(*study, "crc32c"), nullptr);
    EXPECT_EQ(SerializeStudy(*study), original);

    // Through the state directory as the daemon reads it, and saved back.
    const std::string state = dir_ + "/" + name;
    std::filesystem::create_directories(RetentionDirectory(state));
    const std::string study_name = AsString(*Find(*study, "study"));
    testing::WriteFileText(StudyPath(state, study_name), original);
    Expected<Json> loaded = LoadStudy(state, study_name);
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    EXPECT_EQ(*loaded, *study);
    ASSERT_TRUE(SaveStudy(state, *loaded).ok());
    EXPECT_EQ(testing::ReadFileText(StudyPath(state, study_name)), original);
  }
}

}  // namespace
}  // namespace drivewatch::aging
