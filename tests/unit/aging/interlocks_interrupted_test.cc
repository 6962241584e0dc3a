// SPDX-License-Identifier: Apache-2.0
// What a kill between making and recording leaves: drivewatch records that
// it is about to make its aging file or a run's work directory before it
// makes it, so the empty thing such a kill leaves is claimed by that record
// of intent (and taken, or removed) and never refused as somebody else's;
// anything else at the path still is. The kill is simulated by writing the
// record of intent and making the thing, as the killed run had; the real
// kills are in tests/run/retention_crash_test.sh and app_phase_test.sh.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "aging/retention/retention_study.h"
#include "aging/safety/interlocks.h"
#include "aging/safety/interlocks_refusal.h"

namespace drivewatch::aging {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Longer than the coarse clock's tick (1 to 10 ms): what is made before
// the pause is stamped before anything read after it.
void PastOneClockTick() { std::this_thread::sleep_for(std::chrono::milliseconds(50)); }

class InterruptedMakingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // /var/tmp: a disk file system where /tmp may be tmpfs.
    char name[] = "/var/tmp/dw-interrupted-test.XXXXXX";
    ASSERT_NE(::mkdtemp(name), nullptr);
    dir_ = name;
    target_.name = "scratch";
    target_.directory = dir_;
    target_.file_size = 4 << 20;
    target_.min_free_ratio = 0;
    pass_.state_directory = dir_ + "/state";
    paths_.study_register = dir_ + "/register";
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string FileRecord() const { return AgingFileRecordPath(pass_.state_directory, target_); }
  std::string WorkRecord() const {
    return WorkDirectoryRecordPath(pass_.state_directory, target_.name);
  }
  void IntendFile() {
    ASSERT_TRUE(
        interlocks_detail::WriteIntentRecord(FileRecord(), target_, AgingFilePath(target_)).ok());
  }
  void IntendWorkDirectory() {
    Json extra = Json::object();
    extra["kind"] = "sqlite";
    ASSERT_TRUE(interlocks_detail::WriteIntentRecord(WorkRecord(), target_,
                                                     WorkDirectoryPath(target_), extra)
                    .ok());
  }

  std::string dir_;
  config::AgingTarget target_;
  WritePass pass_;
  SystemPaths paths_;
};

// The kill came after the file was made and before its record: the empty
// file is taken as drivewatch's, recorded in full, and sized.
TEST_F(InterruptedMakingTest, AnEmptyAgingFileMadeAfterTheIntentIsTaken) {
  IntendFile();
  std::ofstream{AgingFilePath(target_)};
  auto path = PrepareAgingFile(target_, pass_, paths_);
  ASSERT_TRUE(path.ok()) << path.error().message;
  EXPECT_EQ(fs::file_size(*path), target_.file_size);
  auto own = interlocks_detail::ReadOwnRecord(FileRecord(), "aging file record");
  ASSERT_TRUE(own.ok() && own->has_value());
  EXPECT_EQ((*own)->making_since_ns, 0u);
  struct stat st;
  ASSERT_EQ(::stat(path->c_str(), &st), 0);
  EXPECT_TRUE((*own)->Names(st, *path));
}

// The kill came before the file was made: the intent is replaced, and the
// file made as on a first run.
TEST_F(InterruptedMakingTest, AnIntentWithNothingMadeIsMadeAgain) {
  IntendFile();
  auto path = PrepareAgingFile(target_, pass_, paths_);
  ASSERT_TRUE(path.ok()) << path.error().message;
  EXPECT_EQ(fs::file_size(*path), target_.file_size);
}

// An empty file that was there before drivewatch meant to make one is not
// drivewatch's, record of intent or not.
TEST_F(InterruptedMakingTest, AnAgingFileOlderThanTheIntentIsRefused) {
  std::ofstream{AgingFilePath(target_)};
  PastOneClockTick();
  IntendFile();
  auto path = PrepareAgingFile(target_, pass_, paths_);
  ASSERT_FALSE(path.ok());
  EXPECT_EQ(path.error().errnum, EPERM);
  EXPECT_THAT(path.error().message, HasSubstr("it exists, but drivewatch did not create it"));
  EXPECT_THAT(path.error().message, HasSubstr("no record of it in " + FileRecord()));
  EXPECT_EQ(fs::file_size(AgingFilePath(target_)), 0u);
}

// drivewatch puts nothing in a file before its full record: one that holds
// data is somebody else's, and is left as it was.
TEST_F(InterruptedMakingTest, AnAgingFileWithDataIsRefusedAfterAnIntent) {
  IntendFile();
  std::ofstream(AgingFilePath(target_)) << "somebody's data";
  auto path = PrepareAgingFile(target_, pass_, paths_);
  ASSERT_FALSE(path.ok());
  EXPECT_THAT(path.error().message, HasSubstr("it exists, but drivewatch did not create it"));
  EXPECT_EQ(ReadAll(AgingFilePath(target_)), "somebody's data");
}

// The work directory's kill: the empty directory goes with its record (its
// kind's release is run first, as for any leftover).
TEST_F(InterruptedMakingTest, AnEmptyWorkDirectoryMadeAfterTheIntentIsRemoved) {
  IntendWorkDirectory();
  ASSERT_EQ(::mkdir(WorkDirectoryPath(target_).c_str(), 0700), 0);
  auto found = FindWorkDirectory(pass_.state_directory, target_.name);
  ASSERT_TRUE(found.ok() && found->has_value()) << "the leftover is not found";
  EXPECT_EQ((*found)->path, WorkDirectoryPath(target_));
  EXPECT_EQ((*found)->kind, "sqlite");
  Status removed = RemoveWorkDirectory(pass_.state_directory, target_.name);
  ASSERT_TRUE(removed.ok()) << removed.error().message;
  EXPECT_FALSE(fs::exists(WorkDirectoryPath(target_)));
  EXPECT_FALSE(fs::exists(WorkRecord()));
}

TEST_F(InterruptedMakingTest, AWorkDirectoryWithEntriesIsLeftInPlace) {
  IntendWorkDirectory();
  ASSERT_EQ(::mkdir(WorkDirectoryPath(target_).c_str(), 0700), 0);
  std::ofstream(WorkDirectoryPath(target_) + "/keep.txt") << "somebody's data";
  Status removed = RemoveWorkDirectory(pass_.state_directory, target_.name);
  ASSERT_FALSE(removed.ok());
  EXPECT_THAT(removed.error().message,
              HasSubstr(WorkDirectoryPath(target_) +
                        ": left in place: drivewatch was killed as it made it, and something "
                        "has been put in it since"));
  EXPECT_EQ(ReadAll(WorkDirectoryPath(target_) + "/keep.txt"), "somebody's data");
  EXPECT_FALSE(fs::exists(WorkRecord()));
}

TEST_F(InterruptedMakingTest, AWorkDirectoryOlderThanTheIntentIsLeftInPlace) {
  ASSERT_EQ(::mkdir(WorkDirectoryPath(target_).c_str(), 0700), 0);
  PastOneClockTick();
  IntendWorkDirectory();
  Status removed = RemoveWorkDirectory(pass_.state_directory, target_.name);
  ASSERT_FALSE(removed.ok());
  EXPECT_THAT(removed.error().message,
              HasSubstr("left in place: it is not the work directory drivewatch made"));
  EXPECT_TRUE(fs::is_directory(WorkDirectoryPath(target_)));
}

// A record of intent is input too: one whose time is not a time, checksum
// right or not, is refused, named, and nothing at the path is taken.
TEST_F(InterruptedMakingTest, ADamagedIntentIsRefused) {
  for (const char* since : {"0", "\"yesterday\""}) {
    Json record = Json::object();
    record["target"] = target_.name;
    record["path"] = AgingFilePath(target_);
    record["making_since_ns"] = Json::parse(since);
    fs::create_directories(fs::path(FileRecord()).parent_path());
    std::ofstream(FileRecord(), std::ios::trunc) << SerializeStudy(record);
    std::ofstream{AgingFilePath(target_)};
    auto path = PrepareAgingFile(target_, pass_, paths_);
    ASSERT_FALSE(path.ok()) << since;
    EXPECT_THAT(path.error().message,
                HasSubstr("whether drivewatch made it cannot be told: " + FileRecord() +
                          ": damaged aging file record: expected the path and making_since_ns"));
    EXPECT_EQ(fs::file_size(AgingFilePath(target_)), 0u);
  }
}

}  // namespace
}  // namespace drivewatch::aging
