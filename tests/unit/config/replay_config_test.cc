// SPDX-License-Identifier: Apache-2.0
// The replay kind's keys (trace, trace_device, replay_speed, queue_depth):
// read, defaulted, written back, their located errors; and what the loader
// does with what a trace holds: a trace that writes needs destroy_data on a
// block device, one that only reads does not, one that cannot be read is an
// error at its `trace` key.
#include <gtest/gtest.h>

#include "config/config.h"
#include "tests/common/kind_lists.h"

namespace drivewatch::config {
namespace {

std::string Errors(const LoadResult& r) {
  std::string out;
  for (const ConfigError& e : r.errors) out += e.ToString() + "\n";
  return out;
}

// A fake inspector: config/ cannot link the trace reader (aging/), and what
// is tested here is what the loader makes of its answers. The reader has
// tests of its own (tests/unit/aging/block_trace_test.cc), and the
// integration test (tests/integration/replay_test.cc) loads configs with
// the real one.
LoadOptions FakeTraces(int* calls = nullptr) {
  return LoadOptions{.inspect_trace = [calls](const ReplayParams& p) -> Expected<TraceFacts> {
    if (calls != nullptr) ++*calls;
    if (p.trace == "/traces/reads.log") return TraceFacts{.read = true};
    if (p.trace == "/traces/writes.log") {
      return TraceFacts{.read = true, .first_write_line = 12};
    }
    return Error{EINVAL, -1, p.trace + ":7: unknown action \"flsh\" (expected ...)"};
  }};
}

constexpr const char* kTargets = R"(
[[aging.targets]]
name = "dev"
block_device = "/dev/sdzz"
serial = "S1"

[[aging.targets]]
name = "tmp"
directory = "/var/tmp/dw"
)";

TEST(ReplayConfigTest, ReadsItsKeysAndWritesThemBack) {
  const std::string text = std::string(kTargets) + R"(
[[aging.phases]]
name = "client"
kind = "replay"
target = "dev"
trace = "/traces/reads.log"
trace_device = "259,0"
replay_speed = 2.5
queue_depth = 8
interval = "7d"

[[aging.phases]]
name = "fast"
kind = "replay"
target = "tmp"
trace = "/traces/writes.log"
replay_speed = "max"

[[aging.phases]]
name = "plain"
kind = "replay"
target = "tmp"
trace = "/traces/writes.log"
replay_speed = "recorded"
)";
  int calls = 0;
  const LoadResult r = LoadString(text, "r.toml", FakeTraces(&calls));
  ASSERT_TRUE(r.config) << Errors(r);
  EXPECT_EQ(calls, 3);
  const auto& a = std::get<ReplayParams>(r.config->aging.phases[0].params);
  EXPECT_EQ(a.trace, "/traces/reads.log");
  EXPECT_EQ(a.trace_device, "259,0");
  EXPECT_EQ(a.replay_speed, (ReplaySpeed{.max = false, .scale = 2.5}));
  EXPECT_EQ(a.queue_depth, 8u);
  EXPECT_EQ(a.trace_facts, (TraceFacts{.read = true, .first_write_line = 0}));
  // A trace of reads only: the phase writes nothing, so a block device
  // target needs no destroy_data.
  EXPECT_FALSE(PhaseKindWrites(a));
  const auto& b = std::get<ReplayParams>(r.config->aging.phases[1].params);
  EXPECT_TRUE(b.replay_speed.max);
  EXPECT_TRUE(PhaseKindWrites(b));
  const auto& c = std::get<ReplayParams>(r.config->aging.phases[2].params);
  EXPECT_EQ(c.replay_speed, ReplaySpeed{});
  EXPECT_EQ(c.trace_device, "");
  EXPECT_EQ(c.queue_depth, 32u);

  const std::string toml = ToToml(*r.config);
  EXPECT_NE(toml.find("trace = \"/traces/reads.log\", trace_device = \"259,0\", replay_speed = "
                      "2.5, queue_depth = 8"),
            std::string::npos)
      << toml;
  EXPECT_NE(toml.find("replay_speed = \"max\""), std::string::npos) << toml;
  EXPECT_NE(toml.find("trace = \"/traces/writes.log\", replay_speed = \"recorded\""),
            std::string::npos)
      << toml;
  const LoadResult again = LoadString(toml, "again.toml", FakeTraces());
  ASSERT_TRUE(again.config) << Errors(again) << toml;
  EXPECT_EQ(*again.config, *r.config);
}

TEST(ReplayConfigTest, ErrorsNameTheKeyAndWhatWasExpected) {
  struct Case {
    const char* lines;
    std::string error;
  };
  const Case cases[] = {
      {"", "r.toml:11:1: aging.phases.trace: missing trace (expected the absolute path of a "
           "block trace: fio's iolog version 2 or 3, or blkparse's default output)"},
      {R"(trace = "traces/a.log")",
       "r.toml:15:9: aging.phases.trace: \"traces/a.log\" is not an absolute path (expected a "
       "path starting with \"/\")"},
      {"trace = 3", "r.toml:15:9: aging.phases.trace: wrong type: integer 3 (expected an absolute "
                    "path)"},
      {"trace = \"/traces/reads.log\"\ntrace_device = \"\"",
       "r.toml:16:16: aging.phases.trace_device: \"\" is empty or holds a control character "
       "(expected a non-empty string)"},
      {"trace = \"/traces/reads.log\"\nreplay_speed = \"fast\"",
       "r.toml:16:16: aging.phases.replay_speed: \"fast\" is not a replay speed (expected "
       "\"recorded\", \"max\", or a number from 0.001 to 1000 that scales the recorded rate)"},
      {"trace = \"/traces/reads.log\"\nreplay_speed = 0",
       "r.toml:16:16: aging.phases.replay_speed: integer 0 is out of range (expected "
       "\"recorded\", \"max\", or a number from 0.001 to 1000 that scales the recorded rate)"},
      {"trace = \"/traces/reads.log\"\nreplay_speed = true",
       "r.toml:16:16: aging.phases.replay_speed: wrong type: boolean true (expected "
       "\"recorded\", \"max\", or a number from 0.001 to 1000 that scales the recorded rate)"},
      {"trace = \"/traces/reads.log\"\nqueue_depth = 0",
       "r.toml:16:15: aging.phases.queue_depth: 0 is out of range (expected a whole number "
       "from 1 to 256)"},
      {"trace = \"/traces/reads.log\"\nblock_size = \"4KiB\"",
       "r.toml:16:14: aging.phases.block_size: not used by kind \"replay\" (expected only on "
       "kind " +
           testing::QuotedKindList("block_size") + ")"},
      // What the trace reader says, at the trace key.
      {R"(trace = "/traces/bad.log")",
       "r.toml:15:9: aging.phases.trace: /traces/bad.log:7: unknown action \"flsh\" (expected "
       "...)"},
  };
  for (const Case& c : cases) {
    const std::string text = std::string(kTargets) +
                             "\n[[aging.phases]]\nname = \"p\"\nkind = \"replay\"\n"
                             "target = \"tmp\"\n" +
                             c.lines + "\n";
    const LoadResult r = LoadString(text, "r.toml", FakeTraces());
    EXPECT_FALSE(r.config) << text;
    EXPECT_EQ(Errors(r), c.error + "\n") << text;
  }
  // `trace` belongs to replay alone.
  const LoadResult fill = LoadString(
      std::string(kTargets) + "[[aging.phases]]\nname = \"f\"\nkind = \"fill\"\ntarget = "
                              "\"tmp\"\ntrace = \"/traces/reads.log\"\n",
      "r.toml", FakeTraces());
  EXPECT_EQ(Errors(fill),
            "r.toml:14:9: aging.phases.trace: not used by kind \"fill\" (expected only on kind "
            "\"replay\")\n");
}

// A trace that writes on a block device without the acknowledgement is
// refused at the phase's target, naming the trace and its first write; one
// that only reads is fine; one the loader could not read counts as writing.
TEST(ReplayConfigTest, AWritingTraceNeedsTheAcknowledgement) {
  auto load = [](const std::string& trace, const LoadOptions& options) {
    return LoadString(std::string(kTargets) +
                          "\n[[aging.phases]]\nname = \"p\"\nkind = \"replay\"\n"
                          "target = \"dev\"\ntrace = \"" +
                          trace + "\"\n",
                      "r.toml", options);
  };
  const LoadResult writes = load("/traces/writes.log", FakeTraces());
  EXPECT_EQ(Errors(writes),
            "r.toml:14:10: aging.phases.target: phase kind \"replay\" writes target \"dev\" "
            "(trace /traces/writes.log writes or trims from line 12 on), which does not "
            "acknowledge that all data on /dev/sdzz will be destroyed (expected destroy_data = "
            "true in its [[aging.targets]] entry at line 2, column 1)\n");
  const LoadResult reads = load("/traces/reads.log", FakeTraces());
  EXPECT_TRUE(reads.config) << Errors(reads);
  // No inspector (a caller without the aging side): unread, so writing.
  const LoadResult unread = load("/traces/reads.log", LoadOptions{});
  EXPECT_EQ(Errors(unread),
            "r.toml:14:10: aging.phases.target: phase kind \"replay\" writes target \"dev\" "
            "(trace /traces/reads.log was not read, so it counts as writing), which does not "
            "acknowledge that all data on /dev/sdzz will be destroyed (expected destroy_data = "
            "true in its [[aging.targets]] entry at line 2, column 1)\n");
  // A trace that cannot be read gets its own error, not a second one.
  const LoadResult bad = load("/traces/bad.log", FakeTraces());
  EXPECT_EQ(Errors(bad),
            "r.toml:15:9: aging.phases.trace: /traces/bad.log:7: unknown action \"flsh\" "
            "(expected ...)\n");
}

// A writing replay is a writer like any other where a retention study
// holds a region of the drive; a replay of reads is not.
TEST(ReplayConfigTest, AWritingReplayMayNotShareADriveWithAStudy) {
  auto load = [](const std::string& trace) {
    return LoadString(std::string(R"(
[[aging.targets]]
name = "tmp"
directory = "/var/tmp/dw"

[[aging.phases]]
name = "lab"
kind = "retention-write"
target = "tmp"
study = "lab"

[[aging.phases]]
name = "client"
kind = "replay"
target = "tmp"
trace = ")") + trace + "\"\n",
                      "r.toml", FakeTraces());
  };
  const LoadResult writes = load("/traces/writes.log");
  ASSERT_FALSE(writes.config);
  EXPECT_EQ(Errors(writes),
            "r.toml:12:1: aging.phases: phase \"client\" (kind \"replay\", at line 12, column 1) "
            "writes target \"tmp\", where retention study \"lab\" of phase \"lab\" (at line 6, "
            "column 1) holds the region [0B, the end of the target) (expected another target "
            "for it; once the study is over, end it with drivewatch retention end lab and "
            "remove phase \"lab\")\n");
  const LoadResult reads = load("/traces/reads.log");
  EXPECT_TRUE(reads.config) << Errors(reads);
}

TEST(ReplayConfigTest, KeyRangesAndDefaultsForTheManPage) {
  EXPECT_EQ(PhaseKeyRange(kTraceKey), "an absolute path");
  EXPECT_EQ(PhaseKeyRange(kTraceDeviceKey), "a non-empty string");
  EXPECT_EQ(PhaseKeyRange(kReplaySpeedKey),
            "\"recorded\", \"max\", or a number from 0.001 to 1000 that scales the recorded "
            "rate");
  EXPECT_EQ(PhaseValueText(kReplaySpeedKey, ReplayParams{}.replay_speed), "\"recorded\"");
  EXPECT_EQ(PhaseValueText(kReplaySpeedKey, ReplaySpeed{.max = true}), "\"max\"");
  EXPECT_EQ(PhaseValueText(kReplaySpeedKey, ReplaySpeed{.scale = 0.5}), "0.5");
  // Unset: left out.
  EXPECT_EQ(PhaseValueText(kTraceDeviceKey, ReplayParams{}.trace_device), "");
  EXPECT_EQ(PhaseValueText(kTraceKey, std::string("/t.log")), "\"/t.log\"");
}

}  // namespace
}  // namespace drivewatch::config
