// SPDX-License-Identifier: Apache-2.0
#include "exporter/scheduler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <future>
#include <thread>
#include <string>
#include <vector>

#include "tests/common/fake_clock.h"

namespace drivewatch {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::FakeClock;

// Records the order of runs; reports "busy" for keys listed in `busy`.
class RecordingExecutor : public Executor {
 public:
  bool Post(const std::string& key, std::function<void()> work) override {
    if (busy.count(key)) return false;
    work();
    return true;
  }
  std::set<std::string> busy;
};

TEST(SchedulerTest, RunsJobsAtTheirIntervals) {
  FakeClock clock;
  RecordingExecutor executor;
  Scheduler scheduler(clock, executor);
  std::vector<std::string> runs;
  scheduler.Add("health", "SN1", seconds(60), [&] { runs.push_back("health"); });
  scheduler.Add("discovery", "discovery", seconds(30),
                [&] { runs.push_back("discovery"); });

  scheduler.Tick();  // both run at once on start
  EXPECT_EQ(runs, (std::vector<std::string>{"health", "discovery"}));
  runs.clear();

  clock.Advance(seconds(29));
  EXPECT_EQ(scheduler.Tick() - clock.Now(), seconds(1));
  EXPECT_TRUE(runs.empty());

  clock.Advance(seconds(1));
  scheduler.Tick();
  EXPECT_EQ(runs, (std::vector<std::string>{"discovery"}));
  runs.clear();

  clock.Advance(seconds(30));
  scheduler.Tick();
  EXPECT_EQ(runs, (std::vector<std::string>{"health", "discovery"}));
}

TEST(SchedulerTest, DoesNotCatchUpMissedRuns) {
  FakeClock clock;
  RecordingExecutor executor;
  Scheduler scheduler(clock, executor);
  int runs = 0;
  scheduler.Add("health", "SN1", seconds(60), [&] { ++runs; });
  scheduler.Tick();
  clock.Advance(seconds(600));  // the machine slept through nine periods
  scheduler.Tick();
  scheduler.Tick();
  EXPECT_EQ(runs, 2);
  EXPECT_EQ(scheduler.Tick() - clock.Now(), seconds(60));
}

TEST(SchedulerTest, KeepsThePhaseOfThePeriodWhenSlightlyLate) {
  FakeClock clock;
  RecordingExecutor executor;
  Scheduler scheduler(clock, executor);
  scheduler.Add("health", "SN1", seconds(60), [] {});
  scheduler.Tick();
  clock.Advance(seconds(61));  // woke one second late
  EXPECT_EQ(scheduler.Tick() - clock.Now(), seconds(59));
}

TEST(SchedulerTest, RunSoonRunsAtTheNextTick) {
  FakeClock clock;
  RecordingExecutor executor;
  Scheduler scheduler(clock, executor);
  int runs = 0;
  const auto id = scheduler.Add("health", "SN1", seconds(60), [&] { ++runs; });
  scheduler.Tick();
  clock.Advance(seconds(5));
  scheduler.RunSoon(id);
  scheduler.Tick();
  EXPECT_EQ(runs, 2);
}

TEST(SchedulerTest, SetIntervalReschedulesFromTheLastRun) {
  FakeClock clock;
  RecordingExecutor executor;
  Scheduler scheduler(clock, executor);
  const auto id = scheduler.Add("health", "SN1", seconds(60), [] {});
  scheduler.Tick();
  clock.Advance(seconds(5));
  scheduler.SetInterval(id, seconds(10));
  EXPECT_EQ(scheduler.Tick() - clock.Now(), seconds(5));
}

TEST(SchedulerTest, RemovedJobsNoLongerRun) {
  FakeClock clock;
  RecordingExecutor executor;
  Scheduler scheduler(clock, executor);
  int runs = 0;
  const auto id = scheduler.Add("health", "SN1", seconds(60), [&] { ++runs; });
  scheduler.Remove(id);
  EXPECT_EQ(scheduler.Tick(), Scheduler::TimePoint::max());
  EXPECT_EQ(runs, 0);
}

TEST(SchedulerTest, FirstDelayPostponesTheFirstRun) {
  FakeClock clock;
  RecordingExecutor executor;
  Scheduler scheduler(clock, executor);
  int runs = 0;
  scheduler.Add("health", "SN1", seconds(60), [&] { ++runs; }, seconds(3));
  scheduler.Tick();
  EXPECT_EQ(runs, 0);
  clock.Advance(seconds(3));
  scheduler.Tick();
  EXPECT_EQ(runs, 1);
}

TEST(SchedulerTest, CountsRunsSkippedBecauseTheDriveIsBusy) {
  FakeClock clock;
  RecordingExecutor executor;
  executor.busy.insert("SN1");
  Scheduler scheduler(clock, executor);
  int other = 0;
  scheduler.Add("health", "SN1", seconds(60), [] {});
  scheduler.Add("health", "SN2", seconds(60), [&] { ++other; });
  scheduler.Tick();
  clock.Advance(seconds(60));
  scheduler.Tick();
  EXPECT_EQ(scheduler.skipped(), 2u);
  EXPECT_EQ(other, 2);  // a busy drive does not hold up another
}

TEST(StrandExecutorTest, RunsWorkOffThreadAndQueuesWhileBusy) {
  StrandExecutor executor;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<std::thread::id> ran_on;
  ASSERT_TRUE(executor.Post("SN1", [&] {
    ran_on.set_value(std::this_thread::get_id());
    released.wait();
  }));
  EXPECT_NE(ran_on.get_future().get(), std::this_thread::get_id());
  // SN1 is still busy: its next work waits in line; SN2 is not held up.
  std::promise<void> sn1_second;
  ASSERT_TRUE(executor.Post("SN1", [&] { sn1_second.set_value(); }));
  std::promise<void> sn2_done;
  ASSERT_TRUE(executor.Post("SN2", [&] { sn2_done.set_value(); }));
  sn2_done.get_future().wait();
  auto second = sn1_second.get_future();
  EXPECT_EQ(second.wait_for(milliseconds(20)), std::future_status::timeout);
  release.set_value();
  second.wait();
  EXPECT_EQ(executor.Shutdown(seconds(5)), 0);
}

// Two jobs on one drive due at the same tick both run; a job whose last run
// has not finished is skipped, not queued a second time.
TEST(SchedulerTest, JobsOnOneKeyDueTogetherAllRunAndAStuckJobIsSkipped) {
  FakeClock clock;
  StrandExecutor executor;
  Scheduler scheduler(clock, executor);
  auto release = std::make_shared<std::promise<void>>();
  std::shared_future<void> released = release->get_future().share();
  std::atomic<int> slow_runs{0}, fast_runs{0};
  scheduler.Add("latency", "SN1", seconds(10), [&, released] {
    if (++slow_runs == 1) released.wait();
  });
  scheduler.Add("thermal", "SN1", seconds(10), [&] { ++fast_runs; });
  auto wait_for = [](const std::atomic<int>& n, int want) {
    for (int i = 0; i < 1000 && n < want; ++i) {
      std::this_thread::sleep_for(milliseconds(2));
    }
    return n.load();
  };
  scheduler.Tick();
  clock.Advance(seconds(10));
  // latency is still running and thermal waits behind it: neither is
  // posted a second time.
  scheduler.Tick();
  EXPECT_EQ(scheduler.skipped(), 2u);
  release->set_value();
  EXPECT_EQ(wait_for(fast_runs, 1), 1);
  EXPECT_EQ(slow_runs, 1);
  // Both done: the next tick runs both again, in the same strand.
  std::this_thread::sleep_for(milliseconds(20));
  clock.Advance(seconds(10));
  scheduler.Tick();
  EXPECT_EQ(wait_for(fast_runs, 2), 2);
  EXPECT_EQ(wait_for(slow_runs, 2), 2);
  EXPECT_EQ(scheduler.skipped(), 2u);
  EXPECT_EQ(executor.Shutdown(seconds(5)), 0);
}

TEST(StrandExecutorTest, ShutdownReportsWorkStuckPastTheDeadline) {
  auto executor = std::make_unique<StrandExecutor>();
  auto gate = std::make_shared<std::promise<void>>();
  std::shared_future<void> open = gate->get_future().share();
  ASSERT_TRUE(executor->Post("SN1", [open] { open.wait(); }));
  EXPECT_EQ(executor->Shutdown(milliseconds(50)), 1);
  executor.reset();  // the stuck worker holds only its own strand
  gate->set_value();
}

}  // namespace
}  // namespace drivewatch
