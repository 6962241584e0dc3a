// SPDX-License-Identifier: Apache-2.0
// The study record as untrusted input: its checksum, the field checks on
// load, and what the reports make of a record that fails them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "aging/report/retention_report.h"
#include "aging/retention/retention_study.h"
#include "tests/common/file_text.h"

namespace drivewatch::aging {
namespace {

const std::string kFixtures = std::string(DW_FIXTURE_DIR) + "/retention/";
constexpr double kNow = 1795400000;

class RetentionRecordTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dw-record-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    state_ = tmpl;
    std::filesystem::create_directories(RetentionDirectory(state_));
  }
  void TearDown() override { std::filesystem::remove_all(state_); }

  // A fixture copied in as its study's file, bytes unchanged (version 1).
  std::string Install(const std::string& fixture, const std::string& name) {
    const std::string path = StudyPath(state_, name);
    testing::WriteFileText(path, testing::ReadFileText(kFixtures + fixture + ".json"));
    return path;
  }
  Json Fixture(const std::string& fixture) {
    auto j = ParseJson(testing::ReadFileText(kFixtures + fixture + ".json"));
    EXPECT_TRUE(j.ok());
    return j.ok() ? *j : Json();
  }

  std::string state_;
};

TEST_F(RetentionRecordTest, VersionOneFixturesStillLoadAndValidate) {
  for (const auto& [fixture, name] :
       {std::pair{"clean", "lab-q4"}, std::pair{"bad_blocks", "bake-70c"},
        std::pair{"writing", "fresh"}, std::pair{"unknown_temperature", ""}}) {
    std::string study = name;
    if (study.empty()) study = AsString(*Find(Fixture(fixture), "study"));
    Install(fixture, study);
    auto loaded = LoadStudy(state_, study);
    ASSERT_TRUE(loaded.ok()) << fixture << ": " << loaded.error().message;
    EXPECT_EQ(*loaded, Fixture(fixture)) << fixture;
  }
  std::vector<std::string> problems;
  EXPECT_EQ(ListStudies(state_, &problems).size(), 4u);
  EXPECT_TRUE(problems.empty());
}

TEST_F(RetentionRecordTest, SavedStudyCarriesAChecksumOverItsExactBytes) {
  Json study = Fixture("clean");
  ASSERT_TRUE(SaveStudy(state_, study).ok());
  const std::string path = StudyPath(state_, "lab-q4");
  const std::string bytes = testing::ReadFileText(path);
  // Plain JSON that jq and python read, the checksum on the first line.
  ASSERT_EQ(bytes.rfind("{\n \"crc32c\": \"", 0), 0u) << bytes.substr(0, 40);
  auto plain = ParseJson(bytes);
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  EXPECT_EQ(AsUint(*Find(*plain, "version")), 2u);
  EXPECT_EQ(bytes, SerializeStudy(study));

  auto loaded = LoadStudy(state_, "lab-q4");
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(Find(*loaded, "crc32c"), nullptr);
  study["version"] = 2;
  EXPECT_EQ(*loaded, study);
  // Saved again, it is the same bytes: nothing depends on a re-dump.
  ASSERT_TRUE(SaveStudy(state_, *loaded).ok());
  EXPECT_EQ(testing::ReadFileText(path), bytes);

  // One digit changed after the write: the record is damaged, not a result.
  std::string flipped = bytes;
  const auto at = flipped.find("\"ok\": 262144");
  ASSERT_NE(at, std::string::npos);
  flipped[at + 6] = '1';
  testing::WriteFileText(path, flipped);
  auto damaged = LoadStudy(state_, "lab-q4");
  ASSERT_FALSE(damaged.ok());
  EXPECT_EQ(damaged.error().errnum, EBADMSG);
  EXPECT_NE(damaged.error().message.find(path + ": damaged retention study record: checksum "),
            std::string::npos)
      << damaged.error().message;
  EXPECT_NE(damaged.error().message.find("does not match the recorded crc32c"), std::string::npos);

  // Rewritten by another program (jq, an editor that re-indents): the
  // checksum line is gone from where drivewatch keeps it.
  testing::WriteFileText(path, DumpJson(*plain, 2));
  damaged = LoadStudy(state_, "lab-q4");
  ASSERT_FALSE(damaged.ok());
  EXPECT_NE(damaged.error().message.find("crc32c is not on the record's first line"),
            std::string::npos)
      << damaged.error().message;
}

TEST_F(RetentionRecordTest, VersionTwoWithoutChecksumIsDamaged) {
  std::string text = testing::ReadFileText(kFixtures + "clean.json");
  text.replace(text.find("\"version\": 1"), 12, "\"version\": 2");
  testing::WriteFileText(StudyPath(state_, "lab-q4"), text);
  auto loaded = LoadStudy(state_, "lab-q4");
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.error().errnum, EBADMSG);
  EXPECT_NE(loaded.error().message.find("no crc32c checksum line"), std::string::npos)
      << loaded.error().message;
}

// Version 1 bytes with one value replaced: what the reporter did.
TEST_F(RetentionRecordTest, TheReportedVersionOneDamageIsCaught) {
  const std::string clean = testing::ReadFileText(kFixtures + "clean.json");
  for (const auto& [from, to, message] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"\"block_size\": 4096", "\"block_size\": 0", "region.block_size is 0 (expected 4096)"},
           {"\"length\": 1073741824", "\"length\": -1", "region.length is -1 (expected a length"},
           {"\"length\": 1073741824", "\"length\": 0", "region.length is 0 (expected a length"},
           {"\"length\": 1073741824", "\"length\": 1e30", "region.length is 1e+30 (expected"},
       }) {
    std::string text = clean;
    text.replace(text.find(from), from.size(), to);
    const std::string path = StudyPath(state_, "lab-q4");
    testing::WriteFileText(path, text);
    auto loaded = LoadStudy(state_, "lab-q4");
    ASSERT_FALSE(loaded.ok()) << to;
    EXPECT_EQ(loaded.error().errnum, EBADMSG);
    EXPECT_EQ(loaded.error().message.rfind(path + ": damaged retention study record: " + message, 0), 0u)
        << loaded.error().message;
  }
}

// Damage with a valid checksum (drivewatch itself, or a bug, wrote it):
// every field is still checked on load.
TEST_F(RetentionRecordTest, EveryFieldIsCheckedEvenUnderAGoodChecksum) {
  using Edit = std::function<void(Json&)>;
  auto verify0 = [](Json& s, const Edit& e) {
    Json rebuilt = Json::array();
    for (Json v : Items(s["verifies"])) {
      if (Items(rebuilt).empty()) e(v);
      rebuilt.push_back(v);
    }
    s["verifies"] = rebuilt;
  };
  const std::vector<std::pair<Edit, std::string>> cases = {
      {[](Json& s) { s["region"]["block_size"] = 512; }, "region.block_size is 512 (expected 4096)"},
      {[](Json& s) { s["region"]["offset"] = 100; }, "region.offset is 100 (expected a multiple of 4096)"},
      {[](Json& s) {
         s["region"]["offset"] = std::uint64_t{1} << 62;
         s["region"]["length"] = (std::uint64_t{1} << 62) + 4096;
       },
       "region.length is " + std::to_string((std::uint64_t{1} << 62) + 4096) +
           " (expected a region that ends before byte 2^63"},
      {[](Json& s) { s["region"]["length"] = "1 GiB"; }, "region.length is \"1 GiB\""},
      {[](Json& s) { s["pattern"]["study_id"] = "0123456789abcdef"; },
       "pattern.study_id is \"0123456789abcdef\" (expected \"9f3c2a7b5d1e4f60\", the study's id)"},
      {[](Json& s) { s["id"] = "9F3C"; }, "id is \"9F3C\" (expected 16 lower-case hex digits"},
      {[](Json& s) { s["state"] = "done"; },
       "state is \"done\" (expected writing, baseline, active, failed or ended)"},
      {[](Json& s) { s["state"] = "ended"; }, "ended_at is missing (expected Unix seconds"},
      {[](Json& s) { s["written"]["next_offset"] = 4096; },
       "written.next_offset is 4096 (expected 1073741824, the region's end (the study is past writing))"},
      {[](Json& s) { s["written"] = Json::object(); }, "written.start is missing"},
      {[](Json& s) { s["accounting"]["activation_energy_ev"] = 0; },
       "accounting.activation_energy_ev is 0 (expected eV"},
      {[](Json& s) { s["accounting"]["powered_on_sampled_seconds"] = -5.0; },
       "accounting.powered_on_sampled_seconds is -5.0"},
      {[&](Json& s) {
         verify0(s, [](Json& v) {
           v["checked"] = 262144;
           v["ok"] = 1;
         });
       },
       "verifies[0].ok is 1 (expected 262144: ok plus bad (0) must equal checked (262144))"},
      {[&](Json& s) { verify0(s, [](Json& v) { v["ok"] = 1; }); },
       "verifies[0].ok is 1 (expected a completed read to check all 262144 blocks)"},
      {[&](Json& s) { verify0(s, [](Json& v) { v["blocks"] = 0; }); },
       "verifies[0].blocks is 0 (expected 262144, the region's 4 KiB blocks)"},
      {[&](Json& s) { verify0(s, [](Json& v) { v["bad"]["stale"] = -1; }); },
       "verifies[0].bad.stale is -1"},
      {[&](Json& s) {
         verify0(s, [](Json& v) {
           v["ok"] = 0;
           v["checked"] = 0;
         });
       },
       "verifies[0].checked is 0 (expected a completed read to check all 262144 blocks)"},
      {[&](Json& s) { verify0(s, [](Json& v) { v["over_100ms_ratio"] = 2.0; }); },
       "verifies[0].over_100ms_ratio is 2.0 (expected a ratio from 0 to 1)"},
      {[](Json& s) { s["baseline"] = Json(); }, "baseline is null (expected an object)"},
      // How the latency was taken, and the pass's own, are checked too.
      {[](Json& s) {
         s["baseline"]["latency_method"] = Json::object();
         s["baseline"]["latency_method"]["block_size"] = 4096;
         s["baseline"]["latency_method"]["queue_depth"] = 0;
       },
       "baseline.latency_method.queue_depth is 0 (expected a queue depth from 1 to 65535)"},
      {[&](Json& s) {
         verify0(s, [](Json& v) {
           v["latency_method"] = Json::object();
           v["latency_method"]["block_size"] = 4096;
           v["latency_method"]["queue_depth"] = 1;
           v["latency_method"]["access"] = "random";
           v["latency_method"]["reads"] = 10000;
           v["latency_method"]["region_blocks"] = 7;
         });
       },
       "verifies[0].latency_method.region_blocks is 7 (expected 262144)"},
      {[&](Json& s) {
         verify0(s, [](Json& v) {
           v["pass_latency"] = Json::object();
           v["pass_latency"]["block_size"] = 131072;
           v["pass_latency"]["queue_depth"] = 32;
           v["pass_latency"]["over_10ms_ratio"] = 3.0;
         });
       },
       "verifies[0].pass_latency.over_10ms_ratio is 3.0 (expected a ratio from 0 to 1)"},
  };
  for (const auto& [edit, message] : cases) {
    Json study = Fixture("clean");
    edit(study);
    ASSERT_TRUE(SaveStudy(state_, study).ok());
    auto loaded = LoadStudy(state_, "lab-q4");
    ASSERT_FALSE(loaded.ok()) << message;
    EXPECT_EQ(loaded.error().errnum, EBADMSG) << message;
    EXPECT_NE(loaded.error().message.find(": damaged retention study record: " + message),
              std::string::npos)
        << loaded.error().message;
  }
}

// A newline in the name once let a damaged record's text report carry a
// second line of the record's choosing (found by the fuzz target).
TEST(RetentionDamagedReportTest, NamesAreShownWithoutControlCharacters) {
  Json study = Json::object();
  study["study"] = "x\nPASS: every block intact";
  const std::string text = RenderRetentionReport(study, ReportFormat::kText, kNow);
  EXPECT_EQ(text.rfind("Retention study x\\x0aPASS: every block intact\nDAMAGED: ", 0), 0u) << text;
  EXPECT_EQ(RenderDamagedStudyReport("a\tb", "p\rq", true, ReportFormat::kText),
            "Retention study a\\x09b\nDAMAGED: p\\x0dq; the record cannot be trusted, so it gives "
            "no result\n");
}

TEST_F(RetentionRecordTest, TheNameMustMatchTheFile) {
  Install("clean", "other");
  auto loaded = LoadStudy(state_, "other");
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.error().message.find("study is \"lab-q4\" (expected \"other\", the file's name)"),
            std::string::npos)
      << loaded.error().message;
}

TEST_F(RetentionRecordTest, AnEndedStudyWithItsTimeLoads) {
  Json study = Fixture("clean");
  study["state"] = "ended";
  study["ended_at"] = 1795300000.0;
  study["end_reason"] = "the lab needs the drive back";
  ASSERT_TRUE(SaveStudy(state_, study).ok());
  auto loaded = LoadStudy(state_, "lab-q4");
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
}

TEST_F(RetentionRecordTest, ListsKeepDamagedAndUnreadableStudiesApart) {
  Install("clean", "lab-q4");
  std::string bad = testing::ReadFileText(kFixtures + "bad_blocks.json");
  bad.replace(bad.find("\"block_size\": 4096"), 18, "\"block_size\": 0");
  testing::WriteFileText(StudyPath(state_, "bake-70c"), bad);
  // A file that cannot be read at all (root ignores modes; a directory
  // fails read(2) for everyone).
  std::filesystem::create_directories(StudyPath(state_, "lost"));
  const std::vector<StudyFile> files = ReadStudies(state_);
  ASSERT_EQ(files.size(), 3u);
  EXPECT_EQ(files[0].name, "bake-70c");
  ASSERT_FALSE(files[0].record.ok());
  EXPECT_EQ(files[0].record.error().errnum, EBADMSG);
  EXPECT_TRUE(files[1].record.ok());
  ASSERT_FALSE(files[2].record.ok());
  EXPECT_EQ(files[2].record.error().errnum, EISDIR);
  std::vector<std::string> problems;
  EXPECT_EQ(ListStudies(state_, &problems).size(), 1u);
  EXPECT_EQ(problems.size(), 2u);
}

// A record past the bound is damaged, named, and never read whole.
TEST_F(RetentionRecordTest, ARecordLargerThanTheBoundIsDamagedUnread) {
  const std::string path = Install("clean", "lab-q4");
  std::filesystem::resize_file(path, kMaxStudyRecordBytes + 1);  // sparse
  auto loaded = LoadStudy(state_, "lab-q4");
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.error().errnum, EBADMSG);
  EXPECT_EQ(loaded.error().message,
            path + ": damaged retention study record: " + std::to_string(kMaxStudyRecordBytes + 1) +
                " bytes, larger than a retention study record may be (expected at most " +
                std::to_string(kMaxStudyRecordBytes) + " bytes)");
  const std::vector<StudyFile> files = ReadStudies(state_);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].record.error().errnum, EBADMSG);
  // `drivewatch report` reads a study file it is given the same way.
  EXPECT_EQ(ReadStudyRecord(path, "").error().message, loaded.error().message);
}

// Whatever a record holds, a report says PASS only of one that validates.
TEST(RetentionDamagedReportTest, ADamagedRecordIsNeverAPass) {
  auto clean = ParseJson(testing::ReadFileText(kFixtures + "clean.json"));
  ASSERT_TRUE(clean.ok());
  EXPECT_NE(RenderRetentionReport(*clean, ReportFormat::kText, kNow).find("PASS"), std::string::npos);
  Json study = *clean;
  study["region"]["length"] = 0;  // the verify that reads nothing
  const std::string text = RenderRetentionReport(study, ReportFormat::kText, kNow);
  EXPECT_EQ(text.find("PASS"), std::string::npos) << text;
  EXPECT_NE(text.find("DAMAGED: retention study: damaged retention study record: region.length is 0"),
            std::string::npos)
      << text;
  auto json = ParseJson(RenderRetentionReport(study, ReportFormat::kJson, kNow));
  ASSERT_TRUE(json.ok());
  EXPECT_EQ(AsString((*json)["summary"]["verdict"]), "DAMAGED");
  const std::string html = RenderRetentionReport(study, ReportFormat::kHtml, kNow);
  EXPECT_NE(html.find("<div class=\"verdict damaged\" id=\"verdict\">DAMAGED: "), std::string::npos);
  EXPECT_EQ(html.find("PASS"), std::string::npos);

  const std::string list = RenderRetentionList(
      {*clean, study}, kNow, {UnloadableStudy{"lost", "lost.json: read: Input/output error", false}});
  EXPECT_NE(list.find("\nlab-q4  active  "), std::string::npos) << list;
  EXPECT_NE(list.find("\nlab-q4  DAMAGED  "), std::string::npos) << list;
  EXPECT_NE(list.find("\nlost    UNREADABLE  "), std::string::npos) << list;
  EXPECT_NE(list.find("  lab-q4: retention study: damaged retention study record: region.length is 0"),
            std::string::npos)
      << list;
  EXPECT_NE(list.find("  lost: lost.json: read: Input/output error"), std::string::npos) << list;
}

}  // namespace
}  // namespace drivewatch::aging
