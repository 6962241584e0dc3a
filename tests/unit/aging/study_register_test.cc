// SPDX-License-Identifier: Apache-2.0
// The host's register of retention studies (aging/retention/study_register.h),
// which every drivewatch's write gate reads before each write pass: an
// entry written and read back with its storage, each refusal to enter a
// study, damaged entries left out and named (never silently trusted),
// removal, and the studies of a state directory entered at start-up.
#include "aging/retention/study_register.h"

#include <gtest/gtest.h>
#include <sys/sysmacros.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "aging/retention/retention_study.h"
#include "tests/common/file_text.h"
#include "tests/common/scratch_dir.h"

namespace drivewatch::aging {
namespace {

using drivewatch::testing::ReadFileText;
using drivewatch::testing::ScratchDir;
using drivewatch::testing::WriteFileText;

constexpr char kId[] = "0123456789abcdef";

// Bytes [1 MiB, 3 MiB) of a file target.
std::vector<StorageExtent> Region() {
  StorageExtent e;
  e.storage.kind = Storage::Kind::kFile;
  e.storage.device = makedev(254, 1);
  e.storage.inode = 1234;
  e.storage.path = "/var/tmp/t.img";
  e.offset = 1 << 20;
  e.length = 2 << 20;
  return {e};
}

Json Study(const std::string& name, const std::string& id, const std::string& state) {
  Json s = Json::object();
  s["study"] = name;
  s["id"] = id;
  s["state"] = state;
  s["storage"] = ToJson(Region());
  return s;
}

class StudyRegisterTest : public ::testing::Test {
 protected:
  const ScratchDir dir_{"register"};
  const std::string register_ = dir_ / "studies.d";  // made by the first entry
  const std::string state_ = dir_ / "state";
};

TEST_F(StudyRegisterTest, AnEntryIsReadBackWithItsStorage) {
  std::vector<std::string> problems;
  EXPECT_TRUE(ReadStudyRegister(register_, &problems).empty());  // no register yet
  EXPECT_TRUE(problems.empty());
  ASSERT_TRUE(RegisterStudy(register_, state_, Study("lab", kId, "writing")));
  const auto entries = ReadStudyRegister(register_, &problems);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_TRUE(problems.empty()) << problems[0];
  EXPECT_EQ(entries[0].study, "lab");
  EXPECT_EQ(entries[0].id, kId);
  EXPECT_EQ(entries[0].state_directory, state_);
  EXPECT_EQ(entries[0].file, register_ + "/" + kId + ".json");
  ASSERT_EQ(entries[0].storage.size(), 1u);
  EXPECT_TRUE(entries[0].storage[0].Overlaps(Region()[0]));
  EXPECT_EQ(entries[0].storage[0].offset, 1u << 20);
  EXPECT_EQ(entries[0].storage[0].length, 2u << 20);

  ASSERT_TRUE(UnregisterStudy(register_, kId));
  EXPECT_TRUE(ReadStudyRegister(register_, &problems).empty());
  EXPECT_TRUE(UnregisterStudy(register_, kId));  // already gone: not an error
}

TEST_F(StudyRegisterTest, AStudyWithoutItsNameIdOrStorageIsNotEntered) {
  Json no_storage = Json::object();
  no_storage["study"] = "lab";
  no_storage["id"] = kId;
  for (const Json& bad :
       {Study("lab", "not-hex-at-all!!", "writing"), Study("lab", "0123", "writing"), no_storage}) {
    const Status s = RegisterStudy(register_, state_, bad);
    ASSERT_FALSE(s) << DumpJson(bad);
    EXPECT_EQ(s.error().errnum, EINVAL);
    EXPECT_EQ(s.error().message, "a study register entry needs the study's name, id and storage");
  }
  EXPECT_FALSE(std::filesystem::exists(register_));  // nothing was written
}

TEST_F(StudyRegisterTest, ARegisterThatCannotBeMadeNamesTheKeyThatMovesIt) {
  WriteFileText(register_, "a file where the register should be");
  const Status s = RegisterStudy(register_, state_, Study("lab", kId, "writing"));
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("cannot enter retention study \"lab\" in the host's study "
                                   "register: "),
            std::string::npos)
      << s.error().message;
  EXPECT_NE(s.error().message.find("set [state] study_register"), std::string::npos);
  // Reading it is one problem, and no entry.
  std::vector<std::string> problems;
  EXPECT_TRUE(ReadStudyRegister(register_, &problems).empty());
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0], register_ + ": the study register cannot be read: Not a directory");
}

TEST_F(StudyRegisterTest, DamagedEntriesAreLeftOutAndNamed) {
  ASSERT_TRUE(RegisterStudy(register_, state_, Study("lab", kId, "writing")));
  const std::string good = register_ + "/" + kId + ".json";
  const std::string bytes = ReadFileText(good);
  // A flipped byte: the checksum fails.
  std::string flipped = bytes;
  flipped[flipped.size() - 3] ^= 0x20;
  const std::string damaged = register_ + "/fedcba9876543210.json";
  WriteFileText(damaged, flipped);
  // An entry filed under another study's id.
  const std::string misfiled = register_ + "/00000000000000aa.json";
  WriteFileText(misfiled, bytes);
  // Names that are not entries are not read at all.
  WriteFileText(register_ + "/README", "not an entry");
  WriteFileText(register_ + "/ZZZZZZZZZZZZZZZZ.json", "not an entry either");

  std::vector<std::string> problems;
  const auto entries = ReadStudyRegister(register_, &problems);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].id, kId);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0].rfind(misfiled + ": damaged study register entry: id \"" +
                                  std::string(kId) + "\" is not the file's name (expected "
                                  "\"00000000000000aa\")",
                              0),
            0u)
      << problems[0];
  EXPECT_EQ(problems[1].rfind(damaged + ": ", 0), 0u) << problems[1];
  EXPECT_NE(problems[1].find("checksum"), std::string::npos) << problems[1];
}

// A study of the fixtures (tests/fixtures/retention), renamed, in `state`,
// with a storage list, saved in `state_directory`.
void SaveFixtureStudy(const std::string& state_directory, const std::string& fixture,
                      const std::string& name, const std::string& id, const std::string& state) {
  const ScratchDir load("register-fixture");
  std::filesystem::create_directories(RetentionDirectory(load.path()));
  // Under the name the fixture's record gives itself, as LoadStudy checks.
  const std::string text =
      ReadFileText(std::string(DW_FIXTURE_DIR) + "/retention/" + fixture + ".json");
  auto parsed = ParseJson(text);
  ASSERT_TRUE(parsed) << parsed.error().message;
  const std::string own_name = AsString(*Find(*parsed, "study"));
  WriteFileText(StudyPath(load.path(), own_name), text);
  auto study = LoadStudy(load.path(), own_name);
  ASSERT_TRUE(study) << study.error().message;
  (*study)["study"] = name;
  (*study)["id"] = id;
  (*study)["pattern"]["study_id"] = id;
  (*study)["state"] = state;
  if (state == "ended") {
    (*study)["ended_at"] = 1790000700.0;
    (*study)["end_reason"] = "drivewatch retention end";
  }
  (*study)["storage"] = ToJson(Region());
  ASSERT_TRUE(SaveStudy(state_directory, *study));
  auto saved = LoadStudy(state_directory, name);
  ASSERT_TRUE(saved) << saved.error().message;
}

TEST_F(StudyRegisterTest, StudiesThatHoldTheirRegionAreEnteredAtStartUp) {
  SaveFixtureStudy(state_, "writing", "fresh", "1111111111111111", "writing");
  SaveFixtureStudy(state_, "clean", "lab", "2222222222222222", "active");
  SaveFixtureStudy(state_, "clean", "old", "3333333333333333", "ended");
  std::vector<std::string> problems;
  RegisterHeldStudies(register_, state_, &problems);
  EXPECT_TRUE(problems.empty()) << problems[0];
  std::vector<std::string> entered;
  for (const RegisteredStudy& r : ReadStudyRegister(register_, &problems)) {
    entered.push_back(r.study);
  }
  EXPECT_EQ(entered, (std::vector<std::string>{"fresh", "lab"}));  // by id; not the ended one
  // Entering again adds nothing.
  RegisterHeldStudies(register_, state_, &problems);
  EXPECT_EQ(ReadStudyRegister(register_, &problems).size(), 2u);
  EXPECT_TRUE(problems.empty());
}

TEST_F(StudyRegisterTest, ADamagedStudyRecordIsReportedNotSkipped) {
  SaveFixtureStudy(state_, "clean", "lab", "2222222222222222", "active");
  const std::string damaged = RetentionDirectory(state_) + "/bake.json";
  {
    std::ofstream out(damaged);
    out << "{\"version\":";  // torn
  }
  std::vector<std::string> problems;
  RegisterHeldStudies(register_, state_, &problems);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find(damaged), std::string::npos) << problems[0];
  EXPECT_NE(problems[0].find("not entered in the study register " + register_),
            std::string::npos)
      << problems[0];
  // The loadable study is entered all the same.
  std::vector<std::string> ignored;
  ASSERT_EQ(ReadStudyRegister(register_, &ignored).size(), 1u);
  EXPECT_EQ(ReadStudyRegister(register_, &ignored)[0].study, "lab");
}

TEST(StudyHoldsRegionTest, WritingBaselineAndActiveHoldTheRegion) {
  for (const char* state : {"writing", "baseline", "active"}) EXPECT_TRUE(StudyHoldsRegion(state));
  for (const char* state : {"ended", "failed", ""}) EXPECT_FALSE(StudyHoldsRegion(state));
}

}  // namespace
}  // namespace drivewatch::aging
