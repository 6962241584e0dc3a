// SPDX-License-Identifier: Apache-2.0
// A workload of several jobs without I/O: how the work is divided among
// them (JobSpecs), and how their results and progress add up (MergeJobs,
// ProgressMerger). tests/integration/workload_test.cc runs them.
#include "aging/engine/workload_jobs.h"

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

namespace drivewatch::aging::workload_detail {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr std::uint64_t kKiB = 1024;

TEST(WorkloadJobSpecs, SequentialSlicesAreContiguousWholeBlocksFirstOnesLonger) {
  WorkloadSpec s;
  s.block_size = 64 * kKiB;
  s.jobs = 4;
  s.offset = 1024 * kKiB;
  s.seed = 10;
  s.data_seed = 20;
  const Plan plan{.region_offset = 1024 * kKiB, .region_length = 10 * 64 * kKiB};
  const std::vector<WorkloadSpec> jobs = JobSpecs(s, plan);
  ASSERT_EQ(jobs.size(), 4u);
  const std::uint64_t blocks[] = {3, 3, 2, 2};
  std::uint64_t at = plan.region_offset;
  for (std::size_t j = 0; j < 4; ++j) {
    EXPECT_EQ(jobs[j].jobs, 1u);
    EXPECT_EQ(jobs[j].offset, at) << j;
    EXPECT_EQ(jobs[j].length, blocks[j] * 64 * kKiB) << j;
    EXPECT_EQ(jobs[j].start, 0u);
    EXPECT_EQ(jobs[j].seed, 10 + j);
    EXPECT_EQ(jobs[j].data_seed, 20 + j);
    EXPECT_EQ(jobs[j].max_bytes, 0u);
    at += jobs[j].length;
  }
  EXPECT_EQ(at, plan.region_offset + plan.region_length);
}

TEST(WorkloadJobSpecs, RandomJobsEachCoverTheRegionAndShareMaxBytes) {
  WorkloadSpec s;
  s.access = Access::kRandom;
  s.block_size = 4 * kKiB;
  s.jobs = 3;
  s.max_bytes = 11 * 4 * kKiB - 100;  // 11 blocks, rounded up
  s.max_time = seconds(5);
  const Plan plan{.region_offset = 0, .region_length = 1024 * kKiB};
  const std::vector<WorkloadSpec> jobs = JobSpecs(s, plan);
  ASSERT_EQ(jobs.size(), 3u);
  const std::uint64_t shares[] = {4, 4, 3};
  for (std::size_t j = 0; j < 3; ++j) {
    EXPECT_EQ(jobs[j].offset, 0u);
    EXPECT_EQ(jobs[j].length, 1024 * kKiB);
    EXPECT_EQ(jobs[j].max_bytes, shares[j] * 4 * kKiB) << j;
    EXPECT_EQ(jobs[j].max_time, seconds(5));  // each job's
    EXPECT_EQ(jobs[j].seed, 1 + j);
  }

  // Fewer blocks than jobs: the ones with nothing to do are left out.
  s.max_bytes = 2 * 4 * kKiB;
  const std::vector<WorkloadSpec> two = JobSpecs(s, plan);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0].max_bytes, 4 * kKiB);
  EXPECT_EQ(two[1].max_bytes, 4 * kKiB);
  EXPECT_EQ(two[1].seed, 2u);
}

JobRun Job(std::vector<ThroughputSample> samples, double seconds_total,
           WorkloadResult::End end = WorkloadResult::End::kCompleted) {
  JobRun j;
  j.result.end = end;
  j.result.samples = std::move(samples);
  j.result.total.seconds = seconds_total;
  for (const ThroughputSample& s : j.result.samples) {
    j.result.total.read_bytes += s.read_bytes;
    j.result.total.read_ios += s.read_ios;
    for (std::uint64_t i = 0; i < s.read_ios; ++i) j.result.read_latency.Add(1000 + i);
  }
  return j;
}

ThroughputSample Reads(std::uint64_t ios, double seconds = 1.0) {
  return ThroughputSample{.seconds = seconds, .read_bytes = ios * 4096, .read_ios = ios};
}

TEST(WorkloadMergeJobs, SumsSecondBySecondAndKeepsTheLongestTime) {
  std::vector<JobRun> jobs;
  jobs.push_back(Job({Reads(10), Reads(20), Reads(3, 0.4)}, 2.4));
  jobs.push_back(Job({Reads(7), Reads(5, 0.9)}, 1.9));
  const WorkloadResult r = MergeJobs(jobs, false);
  EXPECT_EQ(r.end, WorkloadResult::End::kCompleted);
  ASSERT_EQ(r.samples.size(), 3u);
  EXPECT_EQ(r.samples[0].read_ios, 17u);
  EXPECT_DOUBLE_EQ(r.samples[0].seconds, 1.0);
  EXPECT_EQ(r.samples[1].read_ios, 25u);
  EXPECT_DOUBLE_EQ(r.samples[1].seconds, 1.0);  // the longer of 1.0 and 0.9
  EXPECT_EQ(r.samples[2].read_ios, 3u);
  EXPECT_DOUBLE_EQ(r.samples[2].seconds, 0.4);
  EXPECT_EQ(r.total.read_ios, 45u);
  EXPECT_EQ(r.total.read_bytes, 45u * 4096);
  EXPECT_DOUBLE_EQ(r.total.seconds, 2.4);
  EXPECT_EQ(r.read_latency.count(), 45u);
  EXPECT_EQ(r.write_latency.count(), 0u);
  EXPECT_EQ(r.next_start, 0u);
}

TEST(WorkloadMergeJobs, ErrorsSumWithTheEarliestFirstAndEndOnTheWorst) {
  std::vector<JobRun> jobs;
  jobs.push_back(Job({Reads(1)}, 1, WorkloadResult::End::kStopped));
  jobs.push_back(Job({Reads(1)}, 1, WorkloadResult::End::kErrors));
  jobs.push_back(Job({Reads(1)}, 1, WorkloadResult::End::kStopped));
  jobs[1].result.errors = 3;
  jobs[1].result.first_error = "read at offset 8192: late";
  jobs[1].first_error_ns = 500;
  jobs[2].result.errors = 1;
  jobs[2].result.first_error = "read at offset 4096: early";
  jobs[2].first_error_ns = 400;
  jobs[0].result.late = 2;
  jobs[2].result.late = 1;
  WorkloadResult r = MergeJobs(jobs, false);
  EXPECT_EQ(r.errors, 4u);
  EXPECT_EQ(r.first_error, "read at offset 4096: early");
  EXPECT_EQ(r.late, 3u);
  // Job 1's errors stopped the others.
  EXPECT_EQ(r.end, WorkloadResult::End::kErrors);
  // A stop from outside wins.
  r = MergeJobs(jobs, true);
  EXPECT_EQ(r.end, WorkloadResult::End::kStopped);
  // Stopped from outside after every job completed: completed.
  for (JobRun& j : jobs) j.result.end = WorkloadResult::End::kCompleted;
  EXPECT_EQ(MergeJobs(jobs, true).end, WorkloadResult::End::kCompleted);
}

WorkloadProgress Progress(std::uint64_t ios, std::uint64_t done, milliseconds elapsed,
                          double fraction, double seconds = 1.0) {
  WorkloadProgress p;
  p.last_second = Reads(ios, seconds);
  p.bytes_done = done;
  p.elapsed = elapsed;
  p.fraction = fraction;
  return p;
}

TEST(WorkloadProgressMerger, HandsOutEachSecondOnceEveryJobHasIt) {
  ProgressMerger m(2);
  EXPECT_FALSE(m.Next());
  m.Add(0, Progress(10, 100, seconds(1), 0.2));
  EXPECT_FALSE(m.Next());  // job 1 is still in its first second
  m.Add(0, Progress(20, 300, seconds(2), 0.4));
  m.Add(1, Progress(5, 50, seconds(1), 0.1));
  std::optional<WorkloadProgress> p = m.Next();
  ASSERT_TRUE(p);
  EXPECT_EQ(p->last_second.read_ios, 15u);
  EXPECT_DOUBLE_EQ(p->last_second.seconds, 1.0);
  EXPECT_EQ(p->bytes_done, 150u);
  EXPECT_EQ(p->elapsed, seconds(1));
  EXPECT_DOUBLE_EQ(p->fraction, 0.15);
  EXPECT_FALSE(m.Next());

  // Job 1 ends part way through its second second: that second is job 0's
  // and job 1's last part; job 1 then counts with its last.
  m.Add(1, Progress(2, 60, milliseconds(1300), 1.0, 0.3));
  m.End(1);
  EXPECT_FALSE(m.all_ended());
  p = m.Next();
  ASSERT_TRUE(p);
  EXPECT_EQ(p->last_second.read_ios, 22u);
  EXPECT_DOUBLE_EQ(p->last_second.seconds, 1.0);
  EXPECT_EQ(p->bytes_done, 360u);
  EXPECT_EQ(p->elapsed, seconds(2));
  EXPECT_DOUBLE_EQ(p->fraction, 0.7);
  EXPECT_FALSE(m.Next());
  m.Add(0, Progress(1, 301, milliseconds(2100), 0.5, 0.1));
  m.End(0);
  EXPECT_TRUE(m.all_ended());
  p = m.Next();
  ASSERT_TRUE(p);
  EXPECT_EQ(p->last_second.read_ios, 1u);
  EXPECT_DOUBLE_EQ(p->last_second.seconds, 0.1);
  EXPECT_EQ(p->bytes_done, 361u);
  EXPECT_DOUBLE_EQ(p->fraction, 0.75);
  EXPECT_FALSE(m.Next());
}

TEST(WorkloadProgressMerger, JobsThatEndWithoutReportingHoldNothingUp) {
  ProgressMerger m(3);
  m.End(2);
  m.Add(0, Progress(1, 10, seconds(1), 0.5));
  EXPECT_FALSE(m.Next());
  m.Add(1, Progress(1, 10, seconds(1), 0.5));
  std::optional<WorkloadProgress> p = m.Next();
  ASSERT_TRUE(p);
  EXPECT_EQ(p->last_second.read_ios, 2u);
  EXPECT_DOUBLE_EQ(p->fraction, 1.0 / 3);
  m.End(0);
  m.End(1);
  EXPECT_FALSE(m.Next());
  EXPECT_TRUE(m.all_ended());
}

TEST(WorkloadDescribe, NamesTheJobs) {
  WorkloadSpec s;
  s.access = Access::kRandom;
  s.read_percent = 100;
  s.write_percent = 0;
  s.block_size = 4096;
  s.jobs = 4;
  EXPECT_EQ(Describe(s), "random read 4KiB QD32 x4 jobs");
  s.jobs = 1;
  EXPECT_EQ(Describe(s), "random read 4KiB QD32");
}

}  // namespace
}  // namespace drivewatch::aging::workload_detail
