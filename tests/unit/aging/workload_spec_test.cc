// SPDX-License-Identifier: Apache-2.0
// The parts of the workload engine that need no I/O: Describe, and the
// validation RunWorkload does before it touches the target.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <stop_token>
#include <string>

#include "aging/engine/workload.h"

namespace drivewatch::aging {
namespace {

TEST(WorkloadDescribe, NamesAccessMixSizeDepthAndRate) {
  WorkloadSpec s;
  EXPECT_EQ(Describe(s), "sequential write 128KiB QD32");
  s.access = Access::kRandom;
  s.read_percent = 70;
  s.write_percent = 30;
  s.block_size = 4096;
  s.queue_depth = 1;
  s.rate_iops = 1000;
  EXPECT_EQ(Describe(s), "random 70/30 read/write 4KiB QD1 at 1000 IOPS");
  s.read_percent = 50;
  s.write_percent = 30;
  s.trim_percent = 20;
  s.block_size = 2u << 20;
  s.rate_iops = 0;
  EXPECT_EQ(Describe(s), "random 50/30/20 read/write/trim 2MiB QD1");
  s.read_percent = 0;
  s.write_percent = 0;
  s.trim_percent = 100;
  s.block_size = 1536;
  EXPECT_EQ(Describe(s), "random trim 1536B QD1");
}

class WorkloadValidation : public ::testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/var/tmp/dw_workload_spec.XXXXXX";
    const int fd = mkstemp(name);
    ASSERT_GE(fd, 0);
    path_ = name;
    ASSERT_EQ(ftruncate(fd, 1 << 20), 0);  // 1 MiB
    close(fd);
    auto t = WorkloadTarget::Open(path_, WorkloadTarget::kReadWrite);
    ASSERT_TRUE(t) << t.error().message;
    target_ = std::move(*t);
  }
  void TearDown() override {
    target_.reset();
    unlink(path_.c_str());
  }
  // The error message RunWorkload gives for `spec`, or "" if it ran.
  std::string ErrorFor(const WorkloadSpec& spec) {
    std::stop_source stop;
    stop.request_stop();  // should a bad spec get through, run nothing
    auto r = RunWorkload(*target_, spec, stop.get_token());
    return r ? "" : r.error().message;
  }
  std::string path_;
  std::unique_ptr<WorkloadTarget> target_;
};

TEST_F(WorkloadValidation, OpensFileWithItsSizeAndAlignment) {
  EXPECT_EQ(target_->size(), 1u << 20);
  EXPECT_FALSE(target_->is_block_device());
  EXPECT_TRUE(target_->writable());
  EXPECT_GE(target_->logical_block_size(), 512u);
  auto missing = WorkloadTarget::Open(path_ + ".missing", WorkloadTarget::kReadOnly);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find(path_ + ".missing"), std::string::npos);
}

TEST_F(WorkloadValidation, NamesTheFieldAndTheExpectedRange) {
  WorkloadSpec s;
  s.block_size = 4096;
  EXPECT_EQ(ErrorFor(s), "");

  WorkloadSpec bad = s;
  bad.read_percent = 10;
  EXPECT_NE(ErrorFor(bad).find("read_percent + write_percent + trim_percent = 110: expected 100"),
            std::string::npos) << ErrorFor(bad);
  bad = s;
  bad.block_size = 256;
  EXPECT_NE(ErrorFor(bad).find("block_size 256: expected a multiple of the logical block size"),
            std::string::npos) << ErrorFor(bad);
  bad.block_size = 4u << 20;
  EXPECT_NE(ErrorFor(bad).find("to 2097152"), std::string::npos) << ErrorFor(bad);
  bad = s;
  bad.queue_depth = 0;
  EXPECT_NE(ErrorFor(bad).find("queue_depth 0: expected 1 to 256"), std::string::npos);
  bad.queue_depth = 257;
  EXPECT_NE(ErrorFor(bad).find("queue_depth 257"), std::string::npos);
  bad = s;
  bad.rate_iops = -1;
  EXPECT_NE(ErrorFor(bad).find("rate_iops"), std::string::npos);
  bad = s;
  bad.offset = 1000;
  EXPECT_NE(ErrorFor(bad).find("offset 1000: expected a multiple of block_size 4096"),
            std::string::npos) << ErrorFor(bad);
  bad = s;
  bad.offset = 4096;
  bad.length = 1 << 20;
  EXPECT_NE(ErrorFor(bad).find("length 1048576: expected a multiple of block_size 4096 with "
                               "offset + length at most the target's size 1048576"),
            std::string::npos) << ErrorFor(bad);
  bad = s;
  bad.start = 1 << 20;
  EXPECT_NE(ErrorFor(bad).find("start 1048576"), std::string::npos);
  bad = s;
  bad.wrap = true;
  EXPECT_NE(ErrorFor(bad).find("wrap: expected a bound, max_bytes or max_time"),
            std::string::npos) << ErrorFor(bad);
  bad = s;
  bad.access = Access::kRandom;
  EXPECT_NE(ErrorFor(bad).find("random access: expected a bound"), std::string::npos);
  bad.max_time = std::chrono::seconds(1);
  EXPECT_EQ(ErrorFor(bad), "");
  // Every message names the target.
  bad.queue_depth = 0;
  EXPECT_EQ(ErrorFor(bad).rfind("workload on " + path_ + ": ", 0), 0u);
}

TEST_F(WorkloadValidation, ReadOnlyTargetRefusesWritesAndTrims) {
  auto ro = WorkloadTarget::Open(path_, WorkloadTarget::kReadOnly);
  ASSERT_TRUE(ro);
  std::stop_source stop;
  WorkloadSpec s;
  s.block_size = 4096;
  auto r = RunWorkload(**ro, s, stop.get_token());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("read-only"), std::string::npos) << r.error().message;
  s.write_percent = 0;
  s.trim_percent = 100;
  EXPECT_FALSE(RunWorkload(**ro, s, stop.get_token()));
  s.trim_percent = 0;
  s.read_percent = 100;
  EXPECT_TRUE(RunWorkload(**ro, s, stop.get_token()));
}

}  // namespace
}  // namespace drivewatch::aging
