// SPDX-License-Identifier: Apache-2.0
// `drivewatch selftest run` (exporter/commands/selftest_command.h): its
// arguments, its progress output off a terminal, and the drives it names
// when the serial asked for is not found.
#include "exporter/commands/selftest_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "exporter/commands/cli.h"
#include "log_controller.h"

namespace drivewatch {
namespace {

using ::testing::HasSubstr;
using testing::LogController;

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
