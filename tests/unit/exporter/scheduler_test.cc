#include "exporter/scheduler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <future>
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

TEST(StrandExecutorTest, RunsWorkOffThreadAndDropsWhileBusy) {
  StrandExecutor executor;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<std::thread::id> ran_on;
  ASSERT_TRUE(executor.Post("SN1", [&] {
    ran_on.set_value(std::this_thread::get_id());
    released.wait();
  }));
  EXPECT_NE(ran_on.get_future().get(), std::this_thread::get_id());
  // SN1 is still busy, SN2 is not.
  EXPECT_FALSE(executor.Post("SN1", [] {}));
  std::promise<void> sn2_done;
  ASSERT_TRUE(executor.Post("SN2", [&] { sn2_done.set_value(); }));
  sn2_done.get_future().wait();
  release.set_value();
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
