// SPDX-License-Identifier: Apache-2.0
// The smartd-parity pieces that live in exporter/: the state directory
// behind the probes' memory (a restart is a new probe reading the same
// files), `selftest run` on the command line, and its progress output.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "exporter/commands/cli.h"
#include "exporter/commands/selftest_command.h"
#include "exporter/state_store.h"
#include "probes/drive/identify.h"
#include "probes/error_log.h"
#include "probes/self_test.h"

namespace drivewatch {
namespace {

using ::testing::HasSubstr;

class TempDir {
 public:
  TempDir()
      : path_(::testing::TempDir() + "dw-smartd-" + std::to_string(::getpid()) +
              "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name()) {
    std::filesystem::remove_all(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A controller with an Identify (serial S1, OACS self-test, ELPE 1) and
// settable error and self-test logs.
class LogController : public Controller {
 public:
  Bytes error_log = Bytes(2 * 64);
  std::vector<Bytes> self_test_logs;  // served in turn, the last one repeats
  int self_tests_started = 0;

  Expected<Bytes> Identify(std::uint8_t, std::uint32_t) override {
    Bytes id(kIdentifySize, ' ');
    id[4] = 'S';
    id[5] = '1';
    id[256] = 1 << 4;
    id[257] = 0;
    id[262] = 1;
    return id;
  }
  Expected<Bytes> GetLogPage(std::uint8_t lid, std::uint32_t,
                             std::size_t length) override {
    if (lid == kErrorLogId) {
      Bytes out = error_log;
      out.resize(length);
      return out;
    }
    if (lid == kSelfTestLogId && !self_test_logs.empty()) {
      Bytes out = self_test_logs.front();
      if (self_test_logs.size() > 1) self_test_logs.erase(self_test_logs.begin());
      return out;
    }
    return Error{0, 0x4002, "log: Invalid Field in Command (0x4002)"};
  }
  Expected<FeatureValue> GetFeature(std::uint8_t, std::uint32_t, std::size_t) override {
    return Error{0, 0x4002, "feature: Invalid Field in Command (0x4002)"};
  }
  Status DeviceSelfTest(std::uint8_t, std::uint32_t) override {
    ++self_tests_started;
    return Ok{};
  }
};

void SetEntry(Bytes& log, int slot, std::uint64_t count) {
  for (int i = 0; i < 8; ++i) log[slot * 64 + i] = static_cast<std::uint8_t>(count >> (8 * i));
  log[slot * 64 + 12] = static_cast<std::uint8_t>(0x81 << 1);  // SC 81h
  log[slot * 64 + 13] = static_cast<std::uint8_t>((2 << 1) | (0x81 >> 7));  // SCT 2
}

struct Counter : SampleSink {
  double media = 0;
  void Add(const MetricDesc& d, Labels, double v) override {
    if (std::string(d.name) == "drivewatch_error_log_new_entries_total") media = v;
  }
  void AddHistogram(const MetricDesc&, Labels, std::shared_ptr<const HistogramValue>) override {}
};

TEST(DirectoryStateStoreTest, ErrorLogRestartDoesNotCountTwice) {
  TempDir dir;
  ControllerInfo info{"nvme0", "/dev/nvme0", "S1"};
  LogController ctrl;
  SetEntry(ctrl.error_log, 0, 41);
  {
    ErrorLogProbe probe;
    probe.SetStateStore(std::make_shared<DirectoryStateStore>(dir.path()));
    Counter sink;
    ASSERT_TRUE(probe.Run(ctrl, info, sink).ok());
    EXPECT_EQ(sink.media, 0);
    SetEntry(ctrl.error_log, 1, 42);
    ASSERT_TRUE(probe.Run(ctrl, info, sink).ok());
    EXPECT_EQ(sink.media, 1);
  }
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/error-log-S1.state"));
  // The daemon restarts: a new probe, the same directory, the same log.
  ErrorLogProbe restarted;
  restarted.SetStateStore(std::make_shared<DirectoryStateStore>(dir.path()));
  Counter sink;
  ASSERT_TRUE(restarted.Run(ctrl, info, sink).ok());
  EXPECT_EQ(sink.media, 1) << "the counter continues and nothing is re-counted";
}

TEST(DirectoryStateStoreTest, AFileLargerThanAnyStateIsRefusedUnread) {
  TempDir dir;
  DirectoryStateStore store(dir.path());
  ASSERT_TRUE(store.Save("error-log-S1", "highest 3 0\n").ok());
  const std::string path = dir.path() + "/error-log-S1.state";
  std::filesystem::resize_file(path, std::uintmax_t{1} << 30);  // sparse
  auto r = store.Load("error-log-S1");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().errnum, EFBIG);
  EXPECT_EQ(r.error().message, path + ": 1073741824 bytes, larger than a probe state file may be "
                                      "(expected at most 1048576 bytes)");
}

TEST(DirectoryStateStoreTest, MissingFileIsEnoent) {
  TempDir dir;
  DirectoryStateStore store(dir.path());
  auto r = store.Load("nothing");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().errnum, ENOENT);
  ASSERT_TRUE(store.Save("a/b c", "x 1\n").ok());
  EXPECT_EQ(*store.Load("a/b c"), "x 1\n");
}

TEST(SelfTestCommandTest, ParsesAndValidates) {
  auto parse = [](std::vector<std::string> a) {
    a.insert(a.begin(), "drivewatch");
    return ParseCommandLine(a);
  };
  auto ok = parse({"selftest", "run", "--drive", "S1", "--type=extended", "--wait"});
  ASSERT_TRUE(ok.cli) << ok.error;
  EXPECT_EQ(ok.cli->command, CommandLine::Command::kSelfTest);
  EXPECT_EQ(ok.cli->drive, "S1");
  EXPECT_EQ(ok.cli->test_type, "extended");
  EXPECT_TRUE(ok.cli->wait);
  EXPECT_THAT(parse({"selftest", "run", "--drive", "S1", "--type", "long"}).error,
              HasSubstr("--type short or --type extended (got \"long\")"));
  EXPECT_THAT(parse({"selftest", "run", "--type", "short"}).error, HasSubstr("needs --drive"));
  EXPECT_THAT(parse({"selftest", "--drive", "S1", "--type", "short"}).error,
              HasSubstr("subcommand run"));
  EXPECT_THAT(parse({"--wait"}).error, HasSubstr("go with selftest run"));
}

class OneDrive : public DriveLayer {
 public:
  LogController* ctrl = nullptr;
  Expected<std::vector<ControllerInfo>> Scan() override {
    return std::vector<ControllerInfo>{{"nvme0", "/dev/nvme0", "S1"}};
  }
  Expected<std::unique_ptr<Controller>> Open(const ControllerInfo&) override {
    struct Borrowed : Controller {
      LogController* c;
      explicit Borrowed(LogController* c) : c(c) {}
      Expected<Bytes> Identify(std::uint8_t a, std::uint32_t b) override { return c->Identify(a, b); }
      Expected<Bytes> GetLogPage(std::uint8_t a, std::uint32_t b, std::size_t l) override { return c->GetLogPage(a, b, l); }
      Expected<FeatureValue> GetFeature(std::uint8_t a, std::uint32_t b, std::size_t l) override { return c->GetFeature(a, b, l); }
      Status DeviceSelfTest(std::uint8_t a, std::uint32_t b) override { return c->DeviceSelfTest(a, b); }
    };
    return std::unique_ptr<Controller>(std::make_unique<Borrowed>(ctrl));
  }
};

Bytes StLog(std::uint8_t current, std::uint8_t percent, int results, std::uint8_t result) {
  Bytes b(kSelfTestLogSize);
  b[0] = current;
  b[1] = percent;
  for (int i = 0; i < 20; ++i) b[4 + i * 28] = 0x0f;
  for (int i = 0; i < results; ++i) {
    b[4 + i * 28] = static_cast<std::uint8_t>(kSelfTestShort << 4 | result);
    b[4 + i * 28 + 4] = static_cast<std::uint8_t>(10 + results - i);
  }
  return b;
}

TEST(SelfTestCommandTest, WaitsWithALinePerSecondOffTerminal) {
  LogController ctrl;
  ctrl.self_test_logs = {StLog(0, 0, 1, 0), StLog(1, 10, 1, 0), StLog(1, 60, 1, 0),
                         StLog(0, 0, 2, 0)};
  OneDrive layer;
  layer.ctrl = &ctrl;
  char* buf = nullptr;
  std::size_t len = 0;
  std::FILE* out = open_memstream(&buf, &len);
  int sleeps = 0;
  SelfTestRun run{"S1", kSelfTestShort, true, out, false,
                  [&](std::chrono::milliseconds) { ++sleeps; }, out};
  EXPECT_EQ(RunSelfTest(layer, run), 0);
  std::fclose(out);
  const std::string text(buf, len);
  free(buf);
  EXPECT_EQ(ctrl.self_tests_started, 1);
  EXPECT_EQ(sleeps, 3);
  EXPECT_THAT(text, HasSubstr("started a short self-test on /dev/nvme0 (serial S1)\n"
                              "short self-test: 10% complete\n"
                              "short self-test: 60% complete\n"
                              "short self-test result: passed at 12 power-on hours\n"));
}

TEST(SelfTestCommandTest, UnknownDriveNamesTheOnesFound) {
  LogController ctrl;
  OneDrive layer;
  layer.ctrl = &ctrl;
  char* buf = nullptr;
  std::size_t len = 0;
  std::FILE* out = open_memstream(&buf, &len);
  SelfTestRun run{"S9", kSelfTestShort, false, out, false, {}, out};
  EXPECT_EQ(RunSelfTest(layer, run), 2);
  std::fclose(out);
  EXPECT_THAT(std::string(buf, len), HasSubstr("no NVMe drive with serial \"S9\" (found: S1)"));
  free(buf);
}

}  // namespace
}  // namespace drivewatch
