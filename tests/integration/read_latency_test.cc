// SPDX-License-Identifier: Apache-2.0
// Integration tests of the read latency probe with real io_uring and
// O_DIRECT: on a file on the machine's file system (ext4 in CI) and on a
// loop device created with --direct-io=on. Run as root (CI does); the loop
// device tests skip otherwise.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "exporter/metric_store.h"
#include "probes/drive/io_target.h"
#include "probes/latency/read_latency_probe.h"

namespace drivewatch {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

std::string Run(const std::string& command) {
  std::string out;
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  char buf[512];
  while (p && std::fgets(buf, sizeof buf, p)) out += buf;
  const int status = p ? ::pclose(p) : -1;
  if (status != 0) return "";
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// /var/tmp rather than /tmp: /tmp may be tmpfs, where O_DIRECT needs
// kernel 6.6.
class TempDir {
 public:
  TempDir() {
    char name[] = "/var/tmp/dw-latency-test.XXXXXX";
    path_ = ::mkdtemp(name);
  }
  ~TempDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A loop device over `file` with direct I/O, detached on destruction.
class LoopDevice {
 public:
  explicit LoopDevice(const std::string& file) {
    device_ = Run("losetup --direct-io=on --show -f " + file);
  }
  ~LoopDevice() {
    if (!device_.empty()) Run("losetup -d " + device_);
  }
  const std::string& device() const { return device_; }

 private:
  std::string device_;
};

ReadLatencySettings Settings(std::uint32_t rate) {
  ReadLatencySettings s;
  s.rates = {rate};
  s.rate_period = 1h;
  s.timeout = 2s;
  s.windows = {15min};
  s.window_names = {"15m"};
  return s;
}

ReadTarget FileTarget(const std::string& dir, const std::string& name = "test",
                      std::uint64_t size = 16 << 20) {
  ReadTarget t;
  t.kind = ReadTarget::Kind::kFile;
  t.labels = {{"target", name}};
  t.path = dir;
  t.file_name = "drivewatch-" + name + ".dat";
  t.file_size = size;
  return t;
}

double Value(const std::vector<Sample>& samples, const std::string& name,
             const Labels& subset) {
  for (const Sample& s : samples) {
    if (name != s.desc->name) continue;
    bool all = true;
    for (const auto& l : subset) {
      all = all && std::find(s.labels.begin(), s.labels.end(), l) != s.labels.end();
    }
    if (all) return s.histogram ? static_cast<double>(s.histogram->count) : s.value;
  }
  return -1;
}

std::vector<Sample> Snapshot(const ReadLatencyProbe& probe) {
  BatchSink sink;
  probe.Emit(sink);
  return std::move(sink.samples());
}

void WaitFor(const std::function<bool()>& cond, std::chrono::seconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!cond() && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(20ms);
  }
}

// Seconds this process's live threads have spent runnable but waiting for
// a CPU (run_delay in /proc/<tid>/schedstat, summed): what a loaded host
// took from them.
double RunQueueDelaySeconds() {
  std::uint64_t total = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream f(task.path() / "schedstat");
    std::uint64_t on_cpu = 0, delay = 0;
    if (f >> on_cpu >> delay) total += delay;
  }
  return static_cast<double>(total) / 1e9;
}

// Checks the achieved rate over a run of `seconds` and that every read was
// recorded with a plausible latency.
void ExpectRateAndLatencies(ReadLatencyProbe& probe, double rate, double seconds) {
  double host_delay = 0;
  {
    const double before = RunQueueDelaySeconds();
    std::jthread t([&](std::stop_token stop) { probe.Run(stop); });
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    // Read while the probe's thread is alive: its delay is in the sum.
    host_delay = RunQueueDelaySeconds() - before;
  }
  const auto s = probe.stats();
  ASSERT_GT(s.reads, rate * seconds * 0.8);
  EXPECT_EQ(s.errors, 0u);
  EXPECT_EQ(s.timeouts, 0u);
  // The schedule holds the rate: every arrival is either read or, when the
  // host stalled the thread for more than an interval, counted as skipped
  // (not made up later in a burst). The host's stalls are measured (the
  // run-queue delay of this process's threads): each interval of it may
  // cost an arrival. Beyond that and 5 % more, the pacer falls behind on
  // its own.
  const double allowed = s.reads * 0.05 + host_delay * rate;
  EXPECT_LE(static_cast<double>(s.skipped_arrivals), allowed)
      << s.skipped_arrivals << " of " << s.reads + s.skipped_arrivals
      << " arrivals skipped; the host delayed this process's threads " << host_delay << " s";
  const double span = std::chrono::duration<double>(s.last_submit - s.first_submit).count();
  const double scheduled = static_cast<double>(s.reads + s.skipped_arrivals - 1) / span;
  EXPECT_NEAR(scheduled, rate, rate * 0.02)
      << s.reads << " reads and " << s.skipped_arrivals << " skipped in " << span << " s";

  const LatencyHistogram h = probe.Lifetime(static_cast<std::uint32_t>(rate));
  EXPECT_EQ(h.count(), s.reads);
  EXPECT_GT(h.Quantile(0.5), 1e-6);   // a real device read, not a cache hit
  EXPECT_LT(h.Quantile(0.5), 0.1);
  const auto samples = Snapshot(probe);
  EXPECT_EQ(Value(samples, "drivewatch_read_latency_seconds",
                  {{"rate", std::to_string(static_cast<int>(rate))}}),
            static_cast<double>(s.reads));
  EXPECT_EQ(Value(samples, "drivewatch_read_latency_target_up", {}), 1);
}

TEST(ReadLatencyFileTest, PacedReadsAreRecordedAtTheConfiguredRate) {
  TempDir dir;
  ReadLatencyProbe probe(FileTarget(dir.path()), Settings(100));
  ExpectRateAndLatencies(probe, 100, 5);
  // The file was created once, with data, and is reused.
  struct stat st {};
  ASSERT_EQ(::stat((dir.path() + "/drivewatch-test.dat").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 16 << 20);
  EXPECT_GE(st.st_blocks * 512, 16 << 20);  // written, not sparse
}

TEST(ReadLatencyFileTest, PoissonArrivalsFeedSeveralIdleGapClasses) {
  TempDir dir;
  ReadLatencySettings s = Settings(50);
  s.arrivals = ArrivalProcess::kPoisson;
  ReadLatencyProbe probe(FileTarget(dir.path()), s);
  {
    std::jthread t([&](std::stop_token stop) { probe.Run(stop); });
    std::this_thread::sleep_for(4s);
  }
  const auto samples = Snapshot(probe);
  int classes = 0;
  for (const char* gap : {"0-1ms", "1-10ms", "10-100ms", "100ms-1s"}) {
    classes += Value(samples, "drivewatch_read_latency_idle_gap_samples",
                     {{"idle_gap", gap}}) > 0;
  }
  EXPECT_GE(classes, 3);
}

TEST(ReadLatencyFileTest, TruncatedFileIsACountedErrorAndReadingGoesOn) {
  TempDir dir;
  ReadLatencyProbe probe(FileTarget(dir.path()), Settings(100));
  const std::string file = dir.path() + "/drivewatch-test.dat";
  std::jthread t([&](std::stop_token stop) { probe.Run(stop); });
  WaitFor([&] { return probe.stats().reads >= 20; }, 5s);
  ASSERT_EQ(::truncate(file.c_str(), 0), 0);
  WaitFor([&] { return probe.stats().errors >= 1; }, 5s);
  EXPECT_GE(Value(Snapshot(probe), "drivewatch_read_errors_total",
                  {{"error", "short_read"}}),
            1);
  // The probe lays the file out again and reads on.
  const auto reads = probe.stats().reads;
  WaitFor([&] { return probe.stats().reads >= reads + 50; }, 10s);
  EXPECT_GE(probe.stats().reads, reads + 50);
}

TEST(ReadLatencyFileTest, RemovedFileIsACountedErrorAndReadingGoesOn) {
  TempDir dir;
  ReadLatencyProbe probe(FileTarget(dir.path()), Settings(100));
  const std::string file = dir.path() + "/drivewatch-test.dat";
  std::jthread t([&](std::stop_token stop) { probe.Run(stop); });
  WaitFor([&] { return probe.stats().reads >= 20; }, 5s);
  ASSERT_EQ(::unlink(file.c_str()), 0);
  WaitFor([&] { return probe.stats().errors >= 1; }, 5s);
  EXPECT_GE(Value(Snapshot(probe), "drivewatch_read_errors_total",
                  {{"error", "ENOENT"}}),
            1);
  const auto reads = probe.stats().reads;
  WaitFor([&] { return probe.stats().reads >= reads + 50; }, 10s);
  EXPECT_GE(probe.stats().reads, reads + 50);
  EXPECT_TRUE(fs::exists(file));
}

TEST(ReadLatencyFileTest, PauseStopsReadsUntilResume) {
  TempDir dir;
  ReadLatencyProbe probe(FileTarget(dir.path()), Settings(100));
  std::jthread t([&](std::stop_token stop) { probe.Run(stop); });
  WaitFor([&] { return probe.stats().reads >= 10; }, 5s);
  probe.Pause();
  std::this_thread::sleep_for(50ms);  // a read in flight may still land
  const auto paused_at = probe.stats().reads;
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(probe.stats().reads, paused_at);
  EXPECT_EQ(Value(Snapshot(probe), "drivewatch_read_latency_paused", {}), 1);
  probe.Resume();
  WaitFor([&] { return probe.stats().reads >= paused_at + 10; }, 5s);
  EXPECT_GE(probe.stats().reads, paused_at + 10);
  EXPECT_EQ(Value(Snapshot(probe), "drivewatch_read_latency_paused", {}), 0);
}

TEST(ReadLatencyFileTest, MissingDirectoryIsReportedNotFatal) {
  ReadTarget target = FileTarget("/nonexistent/drivewatch");
  ReadLatencyProbe probe(target, Settings(10));
  {
    std::jthread t([&](std::stop_token stop) { probe.Run(stop); });
    std::this_thread::sleep_for(300ms);
  }
  EXPECT_EQ(Value(Snapshot(probe), "drivewatch_read_latency_target_up", {}), 0);
}

// The test file is written only as a new file of drivewatch's own: a
// symlink planted under its name or its temp name (the directory may be
// shared, /var/tmp) is never written through.
TEST(ReadLatencyFileTest, APlantedSymlinkIsNeverWrittenThrough) {
  TempDir dir;
  const std::string victim = dir.path() + "/victim";
  { std::ofstream(victim) << "somebody's data"; }
  ASSERT_EQ(::symlink(victim.c_str(), (dir.path() + "/t.dat.tmp").c_str()), 0);
  auto file = PrepareTestFile(dir.path(), "t.dat", 1 << 20, 0.01);
  ASSERT_TRUE(file.ok()) << file.error().message;
  struct stat st {};
  ASSERT_EQ(::lstat(file->c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_size, 1 << 20);
  std::ifstream in(victim);
  EXPECT_TRUE(std::string(std::istreambuf_iterator<char>(in), {}) == "somebody's data")
      << "written through the symlink";

  ASSERT_EQ(::symlink(victim.c_str(), (dir.path() + "/u.dat").c_str()), 0);
  auto refused = PrepareTestFile(dir.path(), "u.dat", 1 << 20, 0.01);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message,
            "test file " + dir.path() + "/u.dat: it exists and is not a regular file (remove it)");
  std::ifstream again(victim);
  EXPECT_TRUE(std::string(std::istreambuf_iterator<char>(again), {}) == "somebody's data");
}

// A file of somebody's under the test file's name is never replaced,
// whatever its size; drivewatch's own test file, made for another size,
// is.
TEST(ReadLatencyFileTest, ASomebodysFileUnderItsNameIsNeverReplaced) {
  TempDir dir;
  const std::string path = dir.path() + "/t.dat";
  { std::ofstream(path) << std::string(4096, 'u'); }
  auto refused = PrepareTestFile(dir.path(), "t.dat", 1 << 20, 0.01);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().errnum, EPERM);
  EXPECT_EQ(refused.error().message,
            "test file " + path + ": it exists and drivewatch did not write it (4096 bytes that "
            "do not begin with drivewatch's test pattern); move it away, or remove it if its "
            "data may be lost");
  std::ifstream in(path);
  EXPECT_TRUE(std::string(std::istreambuf_iterator<char>(in), {}) == std::string(4096, 'u'));

  ASSERT_EQ(::unlink(path.c_str()), 0);
  ASSERT_TRUE(PrepareTestFile(dir.path(), "t.dat", 1 << 20, 0.01).ok());
  auto resized = PrepareTestFile(dir.path(), "t.dat", 2 << 20, 0.01);
  ASSERT_TRUE(resized.ok()) << resized.error().message;
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 2 << 20);
}

class ReadLatencyLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "loop devices need root";
    auto file = PrepareTestFile(dir_.path(), "backing.img", 64 << 20, 0.05);
    ASSERT_TRUE(file.ok()) << file.error().message;
    loop_ = std::make_unique<LoopDevice>(*file);
    if (loop_->device().empty()) GTEST_SKIP() << "losetup --direct-io=on failed";
  }
  TempDir dir_;
  std::unique_ptr<LoopDevice> loop_;  // detached before dir_ is removed
};

TEST_F(ReadLatencyLoopTest, PacedReadsOnALoopDevice) {
  ReadTarget t;
  t.kind = ReadTarget::Kind::kBlockDevice;
  t.labels = {{"target", "loop"}};
  t.path = loop_->device();
  ReadLatencyProbe probe(t, Settings(100));
  ExpectRateAndLatencies(probe, 100, 4);
}

// The probe on a shared read reactor (probes/latency/read_reactor.h): many
// targets, one thread, and no wake-up for a target that is not reading.
class ProbesOnOneReactor : public ::testing::Test {
 protected:
  const std::string& dir() const { return dir_.path(); }
  TempDir dir_;
};

int ThreadsOfThisProcess() {
  int n = 0;
  for ([[maybe_unused]] const auto& t : fs::directory_iterator("/proc/self/task")) ++n;
  return n;
}

bool WaitUntil(const std::function<bool()>& cond, std::chrono::seconds limit = 5s) {
  WaitFor(cond, limit);
  return cond();
}

TEST_F(ProbesOnOneReactor, EightTargetsAreReadByOneThread) {
  const int threads_before = ThreadsOfThisProcess();
  std::vector<std::unique_ptr<ReadLatencyProbe>> probes;
  for (int i = 0; i < 8; ++i) {
    probes.push_back(std::make_unique<ReadLatencyProbe>(
        FileTarget(dir(), "t" + std::to_string(i), 1 << 20), Settings(50)));
  }
  {
    ReadReactor reactor;
    auto epoch = std::make_shared<DrivePacing>(std::chrono::steady_clock::now());
    for (auto& p : probes) {
      p->SetDrivePacing(std::make_shared<DrivePacing>(epoch->epoch()));
      p->Attach(reactor);
    }
    // The reactor and its opener: two threads for eight targets.
    EXPECT_EQ(ThreadsOfThisProcess(), threads_before + 2);
    ASSERT_TRUE(WaitUntil([&] {
      for (auto& p : probes) {
        if (p->stats().reads < 40) return false;
      }
      return true;
    }, 10s));
    // On one schedule, the eight targets' reads go to the kernel together:
    // far fewer submitting calls than reads.
    const auto s = reactor.stats();
    EXPECT_LT(s.submits * 2, s.reads) << s.submits << " submits for " << s.reads << " reads";
    for (auto& p : probes) p->Detach();
  }
  for (auto& p : probes) {
    EXPECT_EQ(p->stats().errors, 0u);
    EXPECT_EQ(p->stats().timeouts, 0u);
    EXPECT_EQ(p->Lifetime(50).count(), p->stats().reads);
  }
}

TEST_F(ProbesOnOneReactor, PausedTargetsCostNoWakeUp) {
  ReadReactor reactor;
  std::vector<std::unique_ptr<ReadLatencyProbe>> probes;
  for (int i = 0; i < 4; ++i) {
    probes.push_back(std::make_unique<ReadLatencyProbe>(
        FileTarget(dir(), "p" + std::to_string(i), 1 << 20), Settings(100)));
    probes.back()->Attach(reactor);
  }
  ASSERT_TRUE(WaitUntil([&] {
    for (auto& p : probes) {
      if (p->stats().reads < 10) return false;
    }
    return true;
  }));
  for (auto& p : probes) p->Pause();
  // Every read the reactor submitted has been told to its probe: none is
  // in flight, so nothing can wake the reactor now.
  ASSERT_TRUE(WaitUntil([&] {
    std::uint64_t told = 0;
    for (auto& p : probes) {
      const auto s = p->stats();
      told += s.reads + s.errors + s.timeouts;
    }
    return told == reactor.stats().reads;
  }));
  const auto wakeups = reactor.stats().wakeups;
  std::vector<std::uint64_t> reads;
  for (auto& p : probes) reads.push_back(p->stats().reads);
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(reactor.stats().wakeups, wakeups);
  for (std::size_t i = 0; i < probes.size(); ++i) EXPECT_EQ(probes[i]->stats().reads, reads[i]);
  for (auto& p : probes) p->Resume();
  ASSERT_TRUE(WaitUntil([&] {
    for (std::size_t i = 0; i < probes.size(); ++i) {
      if (probes[i]->stats().reads < reads[i] + 10) return false;
    }
    return true;
  }));
  for (auto& p : probes) p->Detach();
}

TEST_F(ProbesOnOneReactor, AnIdleTurnCostsNoWakeUpUntilItEnds) {
  ReadReactor reactor;
  ReadLatencySettings s = Settings(100);
  s.rate_period = 500ms;
  s.idle_period = 2s;
  ReadLatencyProbe probe(FileTarget(dir(), "idle", 1 << 20), s);
  // The file first, so that the turn starts with reading.
  ASSERT_TRUE(PrepareTestFile(dir(), "drivewatch-idle.dat", 1 << 20, 0.01).ok());
  const auto epoch = std::chrono::steady_clock::now();
  probe.SetDrivePacing(std::make_shared<DrivePacing>(epoch));
  probe.Attach(reactor);
  // Reading during [0, 0.5 s), idle during [0.5 s, 2.5 s).
  std::this_thread::sleep_until(epoch + 1s);
  const auto wakeups = reactor.stats().wakeups;
  const auto reads = probe.stats().reads;
  std::this_thread::sleep_until(epoch + 2s);
  EXPECT_EQ(reactor.stats().wakeups, wakeups);
  EXPECT_EQ(probe.stats().reads, reads);
  EXPECT_GT(reads, 20u);
  probe.Detach();
}

}  // namespace
}  // namespace drivewatch
