// SPDX-License-Identifier: Apache-2.0
// The read reactor (probes/latency/read_reactor.h) with a real io_uring: reads of
// files, /dev/zero and pipes. A pipe is how these tests hold a read in
// flight for as long as they like (an io_uring read of an empty pipe waits
// for data), which no block device here can do on demand; the timeout, the
// late completion and removal mid-read are shown with it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <iterator>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "probes/latency/completion_cpus.h"
#include "probes/latency/read_reactor.h"

namespace drivewatch {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using Plan = PacedReader::Plan;

// A reader whose plans the test sets: each Next() returns what `plan`
// gives, and every call and outcome is counted.
class ScriptedReader : public PacedReader {
 public:
  std::function<Plan(TimePoint)> plan = [](TimePoint) { return Plan{}; };
  std::function<void()> open = [] {};

  Plan Next(TimePoint now) override {
    Plan p = plan(now);
    std::lock_guard lock(mu);
    ++asked;
    if (p.kind == Plan::Kind::kRead) ++reads_planned;
    return p;
  }
  void Open() override {
    {
      std::lock_guard lock(mu);
      open_tid = ::gettid();
    }
    open();
    std::lock_guard lock(mu);
    ++opened;
  }
  void Completed(const ReadOutcome& outcome) override {
    std::lock_guard lock(mu);
    outcomes.push_back(outcome);
  }

  int Asked() {
    std::lock_guard lock(mu);
    return asked;
  }
  int ReadsPlanned() {
    std::lock_guard lock(mu);
    return reads_planned;
  }
  std::vector<ReadOutcome> Outcomes() {
    std::lock_guard lock(mu);
    return outcomes;
  }

  std::mutex mu;
  int asked = 0, reads_planned = 0, opened = 0;
  int open_tid = 0;
  std::vector<ReadOutcome> outcomes;
};

Plan Read(int fd, std::uint64_t offset, std::uint32_t length,
          std::chrono::nanoseconds timeout = 0ns) {
  Plan p;
  p.kind = Plan::Kind::kRead;
  p.fd = fd;
  p.offset = offset;
  p.length = length;
  p.timeout = timeout;
  return p;
}

Plan WaitUntil(Clock::time_point at) {
  Plan p;
  p.kind = Plan::Kind::kWait;
  p.at = at;
  return p;
}

bool WaitFor(const std::function<bool()>& cond, std::chrono::milliseconds limit = 5000ms) {
  const auto end = Clock::now() + limit;
  while (!cond()) {
    if (Clock::now() > end) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

class Pipe {
 public:
  Pipe() { EXPECT_EQ(::pipe2(fds_, O_CLOEXEC), 0); }
  ~Pipe() {
    ::close(fds_[0]);
    ::close(fds_[1]);
  }
  int read_end() const { return fds_[0]; }
  void Write(std::size_t n) {
    const std::string data(n, 'x');
    EXPECT_EQ(::write(fds_[1], data.data(), n), static_cast<ssize_t>(n));
  }

 private:
  int fds_[2] = {-1, -1};
};

class TempFile {
 public:
  explicit TempFile(std::size_t size) {
    char name[] = "/var/tmp/dw-reactor-test.XXXXXX";
    const int fd = ::mkstemp(name);
    path_ = name;
    const std::string data(size, 'd');
    EXPECT_EQ(::write(fd, data.data(), size), static_cast<ssize_t>(size));
    ::close(fd);
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  }
  ~TempFile() {
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

TEST(ReadReactorTest, AWholeReadIsOkAndOnePastTheEndIsShort) {
  TempFile file(8192);
  ReadReactor reactor;
  ASSERT_TRUE(reactor.status().ok()) << reactor.status().error().message;
  ScriptedReader r;
  std::atomic<int> step{0};
  r.plan = [&](PacedReader::TimePoint) {
    const int k = step++;
    if (k == 0) return Read(file.fd(), 4096, 4096);     // the last whole block
    if (k == 1) return Read(file.fd(), 8192 - 100, 4096);  // runs past the end
    return WaitUntil(PacedReader::TimePoint::max());
  };
  reactor.Add(&r, 4096);
  ASSERT_TRUE(WaitFor([&] { return r.Outcomes().size() == 2; }));
  const auto out = r.Outcomes();
  EXPECT_EQ(out[0].kind, ReadOutcome::Kind::kOk);
  EXPECT_GE(out[0].completed, out[0].submitted);
  EXPECT_EQ(out[1].kind, ReadOutcome::Kind::kError);
  EXPECT_EQ(out[1].errnum, 0);  // short: the target is smaller than asked
  reactor.Remove(&r);
}

// A read past its timeout is told as a timeout once; the reactor then asks
// for it back. A pipe read can be recalled, so its completion comes at once
// (-ECANCELED), is dropped, and the reader is asked again. (A read the
// device already holds usually cannot be: the reader is then asked only
// when it lands, as a late completion, dropped alike.)
TEST(ReadReactorTest, ATimedOutReadIsToldOnceAndItsRecalledCompletionDropped) {
  Pipe pipe;
  ReadReactor reactor;
  ScriptedReader r;
  std::atomic<int> step{0};
  r.plan = [&](PacedReader::TimePoint) {
    if (step++ == 0) return Read(pipe.read_end(), 0, 16, 100ms);
    return WaitUntil(PacedReader::TimePoint::max());
  };
  const auto start = Clock::now();
  reactor.Add(&r, 16);
  ASSERT_TRUE(WaitFor([&] { return r.Asked() >= 2; }));
  const auto out = r.Outcomes();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, ReadOutcome::Kind::kTimeout);
  EXPECT_GE(out[0].completed - out[0].submitted, 100ms);
  EXPECT_GE(out[0].completed - start, 100ms);
  // The data that comes later is nobody's read.
  pipe.Write(16);
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(r.Outcomes().size(), 1u);
  EXPECT_EQ(r.Asked(), 2);
  reactor.Remove(&r);
}

TEST(ReadReactorTest, ARemovedReaderIsNeverCalledAgainEvenWithAReadInFlight) {
  Pipe pipe;
  TempFile file(4096);
  ReadReactor reactor;
  ScriptedReader held, other;
  held.plan = [&](PacedReader::TimePoint) { return Read(pipe.read_end(), 0, 16); };
  other.plan = [&](PacedReader::TimePoint) { return Read(file.fd(), 0, 4096); };
  reactor.Add(&held, 16);
  reactor.Add(&other, 4096);
  ASSERT_TRUE(WaitFor([&] { return held.ReadsPlanned() == 1 && other.Outcomes().size() > 10; }));
  reactor.Remove(&held);
  const int asked = held.Asked();
  pipe.Write(16);  // the orphaned read lands into the buffer the reactor kept
  const auto before = other.Outcomes().size();
  ASSERT_TRUE(WaitFor([&] { return other.Outcomes().size() > before + 10; }));
  EXPECT_EQ(held.Asked(), asked);
  EXPECT_TRUE(held.Outcomes().empty());
  reactor.Remove(&other);
}

TEST(ReadReactorTest, AWaitingReaderCostsOneWakeUpAndAnIdleOneNone) {
  ReadReactor reactor;
  ScriptedReader r;
  const auto until = Clock::now() + 300ms;
  r.plan = [&](PacedReader::TimePoint now) {
    return WaitUntil(now < until ? until : PacedReader::TimePoint::max());
  };
  reactor.Add(&r, 16);
  ASSERT_TRUE(WaitFor([&] { return r.Asked() >= 1; }));
  // Wait until the reactor sleeps in the kernel with the deadline armed.
  std::this_thread::sleep_for(100ms);
  const auto before = reactor.stats().wakeups;
  ASSERT_TRUE(WaitFor([&] { return r.Asked() >= 2; }));
  EXPECT_GE(Clock::now(), until);
  // One wake-up for the deadline; then nothing is due, and nothing wakes
  // the reactor at all.
  std::this_thread::sleep_for(50ms);
  const auto after_deadline = reactor.stats().wakeups;
  EXPECT_EQ(after_deadline - before, 1u);
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(reactor.stats().wakeups, after_deadline);
  EXPECT_EQ(r.Asked(), 2);
  reactor.Remove(&r);
}

TEST(ReadReactorTest, AfterWakeReturnsNoReadDecidedBeforeItIsLeftUnsent) {
  const int zero = ::open("/dev/zero", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(zero, 0);
  ReadReactor reactor;
  ScriptedReader r;
  std::atomic<bool> paused{false};
  r.plan = [&](PacedReader::TimePoint) {
    return paused ? WaitUntil(PacedReader::TimePoint::max()) : Read(zero, 0, 512);
  };
  reactor.Add(&r, 512);
  ASSERT_TRUE(WaitFor([&] { return r.Outcomes().size() > 100; }));  // reading flat out
  paused = true;
  reactor.Wake(&r);
  const int planned = r.ReadsPlanned();
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(r.ReadsPlanned(), planned);
  // A read in flight at the Wake lands; nothing after it.
  EXPECT_LE(r.Outcomes().size(), static_cast<std::size_t>(planned));
  EXPECT_GE(r.Outcomes().size() + 1, static_cast<std::size_t>(planned));
  paused = false;
  reactor.Wake(&r);
  ASSERT_TRUE(WaitFor([&] { return r.ReadsPlanned() > planned + 10; }));
  reactor.Remove(&r);
  ::close(zero);
}

TEST(ReadReactorTest, ASlowOpenRunsOnTheOpenerAndHoldsUpNoOtherReader) {
  const int zero = ::open("/dev/zero", O_RDONLY | O_CLOEXEC);
  ReadReactor reactor;
  ScriptedReader opening, reading;
  std::atomic<bool> open_done{false};
  opening.plan = [&](PacedReader::TimePoint) {
    Plan p;
    p.kind = open_done ? Plan::Kind::kDone : Plan::Kind::kOpen;
    return p;
  };
  std::atomic<std::size_t> reads_during_open{0};
  opening.open = [&] {
    const auto before = reading.Outcomes().size();
    std::this_thread::sleep_for(300ms);  // a test file being written
    reads_during_open = reading.Outcomes().size() - before;
    open_done = true;
  };
  reading.plan = [&](PacedReader::TimePoint) { return Read(zero, 0, 512); };
  reactor.Add(&reading, 512);
  reactor.Add(&opening, 512);
  ASSERT_TRUE(WaitFor([&] { return opening.Asked() >= 2; }));
  EXPECT_EQ(opening.opened, 1);
  EXPECT_NE(opening.open_tid, reactor.thread_id());
  EXPECT_GT(reads_during_open.load(), 10u);
  reactor.Remove(&opening);
  reactor.Remove(&reading);
  ::close(zero);
}

TEST(ReadReactorTest, RemoveWaitsForAnOpenInProgress) {
  ReadReactor reactor;
  ScriptedReader r;
  std::atomic<bool> in_open{false}, open_returned{false};
  r.plan = [&](PacedReader::TimePoint) {
    Plan p;
    p.kind = Plan::Kind::kOpen;
    return p;
  };
  r.open = [&] {
    in_open = true;
    std::this_thread::sleep_for(200ms);
    open_returned = true;
  };
  reactor.Add(&r, 16);
  ASSERT_TRUE(WaitFor([&] { return in_open.load(); }));
  reactor.Remove(&r);
  EXPECT_TRUE(open_returned.load());
  const int asked = r.Asked();
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(r.Asked(), asked);  // not asked after its open
}

std::vector<int> AffinityOf(int tid) {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (::sched_getaffinity(tid, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

// On the real /sys of whatever machine runs this: the reactor reading a
// file of /var/tmp moves onto the CPUs that take its disk's completion
// interrupts when they are fewer than this process may use (one vCPU of
// two for the development VM's virtio disk), and stays on all of them
// otherwise; a target whose completions may come anywhere (a pipe) puts it
// back on all of them.
TEST(ReadReactorTest, RunsOnTheCpusThatTakeItsTargetsCompletions) {
  TempFile file(4096);
  Pipe pipe;
  const std::vector<int> allowed = AffinityOf(0);
  ASSERT_FALSE(allowed.empty());
  const CompletionCpus completions = FindCompletionCpus(file.fd());
  std::vector<int> expected;
  std::set_intersection(completions.cpus.begin(), completions.cpus.end(), allowed.begin(),
                        allowed.end(), std::back_inserter(expected));
  if (expected.empty()) expected = allowed;
  std::printf("allowed %zu CPUs; %s's completions: %s -> expected %zu CPUs\n", allowed.size(),
              file.path().c_str(), completions.via.empty() ? "unknown" : completions.via.c_str(),
              expected.size());

  ReadReactor reactor;
  ASSERT_TRUE(reactor.status().ok()) << reactor.status().error().message;
  const int tid = reactor.thread_id();
  ScriptedReader r;
  std::atomic<int> step{0};
  r.plan = [&](PacedReader::TimePoint) {
    if (step++ == 0) return Read(file.fd(), 0, 4096);
    return WaitUntil(PacedReader::TimePoint::max());
  };
  reactor.Add(&r, 4096);
  ASSERT_TRUE(WaitFor([&] { return r.Outcomes().size() == 1; }));
  EXPECT_EQ(AffinityOf(tid), expected);

  ScriptedReader p;
  p.plan = [&](PacedReader::TimePoint) { return Read(pipe.read_end(), 0, 16); };
  reactor.Add(&p, 16);
  ASSERT_TRUE(WaitFor([&] { return p.ReadsPlanned() == 1; }));
  reactor.Wake(&r);  // a turn after the pipe's read was planned
  EXPECT_EQ(AffinityOf(tid), allowed);
  reactor.Remove(&p);
  reactor.Remove(&r);
}

}  // namespace
}  // namespace drivewatch
