// SPDX-License-Identifier: Apache-2.0
// The replay phase end to end: traces made by tests/tools/make_trace.py (one
// seeded workload in each format) loaded through the real config path and
// trace reader, replayed through the runner onto a file and a loop device
// with real io_uring. Counts per operation and of what mapping did, written
// blocks at their folded offsets carrying the pattern's stamp, recorded
// timing never faster than the trace, "max" faster than recorded; and the
// interlocks: a writing trace without destroy_data (check-config and the
// runner), a trace changed between load and run, a read-only trace on a
// block device with only its serial, which leaves the device as it was;
// a damaged trace; a scheduled replay's metrics.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "aging/engine/data_pattern.h"
#include "aging/engine/workload.h"
#include "aging/history/history.h"
#include "aging/phases/phase.h"
#include "aging/runner/phase_runner.h"
#include "aging/safety/interlocks.h"
#include "exporter/metric_store.h"
#include "exporter/phase_service.h"
#include "tests/common/file_text.h"
#include "tests/integration/loop_device.h"
#include "tests/integration/phase_run_fixture.h"

namespace drivewatch::aging {
namespace {

using drivewatch::testing::LoopDevice;
using drivewatch::testing::ReadFileText;
using drivewatch::testing::WriteFileText;
using std::chrono::milliseconds;

constexpr std::uint64_t kCapacity = 8u << 20;

// The phase's progress as the runner reports it.
class Progress : public PhaseObserver {
 public:
  void OnProgress(const PhaseStatus& s) override {
    if (s.fraction > 0 && s.fraction < 1 && s.step == "replay") ++between;
  }
  void OnEnd(const Json&) override {}
  int between = 0;
};

class ReplayTest : public PhaseRunFixture {
 protected:
  void SetUp() override {
    PhaseRunFixture::SetUp();
    state_ = config_.state_directory;
  }

  // Writes a trace with the generator, its summary for a target of
  // kCapacity bytes with `lbs`-byte blocks in *summary. `args` are the
  // generator's.
  std::string MakeTrace(const std::string& name, const std::string& format,
                        const std::string& args, std::uint32_t lbs = 512,
                        Json* summary = nullptr) {
    const std::string path = (dir_ / name).string();
    const std::string json = path + ".json";
    // Debian's own interpreter when it is there: a python3 found first on
    // PATH (a version manager's shim) can take a second to start.
    const std::string python = ::access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3"
                                                                       : "python3";
    const std::string command = python + " " DW_SOURCE_DIR "/tests/tools/make_trace.py --format " +
                                format + " --out " + path + " --summary " + json +
                                " --capacity " + std::to_string(kCapacity) + " --lbs " +
                                std::to_string(lbs) + " " + args;
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
    if (summary != nullptr) {
      auto parsed = ParseJson(ReadFileText(json));
      EXPECT_TRUE(parsed);
      if (parsed) *summary = *parsed;
    }
    return path;
  }

  // The config text's targets and one replay phase "r" of `trace` on
  // `target`, loaded as check-config loads it (the real trace reader).
  config::LoadResult Load(const std::string& targets, const std::string& target,
                          const std::string& trace, const std::string& more = "") {
    const std::string text = "[state]\ndirectory = \"" + state_ + "\"\n" + targets +
                             "\n[[aging.phases]]\nname = \"r\"\nkind = \"replay\"\ntarget = \"" +
                             target + "\"\ntrace = \"" + trace + "\"\n" + more;
    return config::LoadString(text, "c.toml", config::LoadOptions{.inspect_trace = InspectTrace});
  }
  std::string FileTargetText() const {
    return "[[aging.targets]]\nname = \"t\"\ndirectory = \"" + (dir_ / "data").string() +
           "\"\nfile_size = \"8MiB\"\nfree_space_reserve = 0.01\n";
  }
  static std::string LoopTargetText(const LoopDevice& loop, bool destroy) {
    return "[[aging.targets]]\nname = \"loop\"\nblock_device = \"" + loop.device() +
           "\"\nserial = \"" + loop.serial() + "\"\ndestroy_data = " +
           (destroy ? "true" : "false") + "\n";
  }

  Json Run(const config::Config& config, PhaseObserver* observer = nullptr) {
    auto r = RunPhase(config, "r", options_, {}, observer);
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    return r ? *r : Json();
  }

  static double Result(const Json& record, const std::string& key) {
    const Json* r = Find(record, "results");
    const Json* v = r ? Find(*r, key) : nullptr;
    return v ? AsDouble(*v, -1) : -1;
  }
  static std::uint64_t Count(const Json& summary, const std::string& key) {
    return Find(summary, key) ? AsUint(*Find(summary, key)) : 0;
  }

  // The trace's writes that no other write or trim overlaps (I/Os in
  // flight together may land in either order) start on the target with a
  // chunk the pattern stamped for that offset.
  static void ExpectWritesLanded(const std::string& path, const Json& summary) {
    const std::string bytes = ReadFileText(path);
    ASSERT_GE(bytes.size(), kCapacity);
    const std::vector<Json>& mapped = Items(*Find(summary, "mapped"));
    int checked = 0;
    for (std::size_t i = 0; i < mapped.size(); ++i) {
      const auto& m = Items(mapped[i]);
      if (AsString(m[0]) != "write") continue;
      const std::uint64_t begin = AsUint(m[1]), end = begin + AsUint(m[2]);
      bool overwritten = false;
      for (std::size_t j = 0; j < mapped.size() && !overwritten; ++j) {
        const auto& n = Items(mapped[j]);
        if (j == i || AsString(n[0]) == "read") continue;
        const std::uint64_t b = AsUint(n[1]), e = b + AsUint(n[2]);
        overwritten = b < std::min(end, begin + sizeof(ChunkHeader)) && begin < e;
      }
      if (overwritten) continue;
      ChunkHeader h;
      std::memcpy(&h, bytes.data() + begin, sizeof(h));
      EXPECT_EQ(h.magic, kChunkMagic) << "write " << i << " at " << begin;
      EXPECT_EQ(h.offset, begin) << "write " << i;
      ++checked;
    }
    EXPECT_GT(checked, 5);
  }

  std::string state_;
};

// One workload in each format: what was replayed, folded, aligned and split
// is what the generator put in it, and every written block is where the
// trace folds it, stamped.
TEST_F(ReplayTest, EachFormatOfOneWorkloadReplaysOnAFileWithItsCounts) {
  std::uint32_t lbs = 512;
  {
    // The logical block size of the file system the target's file is on.
    WriteFileText((dir_ / "probe").string(), std::string(4096, 'x'));
    auto probe = WorkloadTarget::Open((dir_ / "probe").string(), WorkloadTarget::kReadOnly);
    ASSERT_TRUE(probe) << probe.error().message;
    lbs = (*probe)->logical_block_size();
  }
  for (const std::string format : {"iolog2", "iolog3", "blkparse"}) {
    SCOPED_TRACE(format);
    std::filesystem::remove_all(state_);
    Json summary;
    const std::string trace =
        MakeTrace("t." + format, format,
                  "--ios 600 --seed 7 --beyond 10 --unaligned 5 --mix 55,35,10 --think-us 50 "
                  "--flush-every 40",
                  lbs, &summary);
    const config::LoadResult loaded = Load(FileTargetText(), "t", trace);
    ASSERT_TRUE(loaded.config) << loaded.errors[0].ToString();
    // A fresh state directory knows no file: the last format's goes too.
    std::filesystem::remove(AgingFilePath(loaded.config->aging.targets[0]));
    const Json r = Run(*loaded.config);
    ASSERT_EQ(AsString(*Find(r, "outcome")), "completed") << DumpJson(r, 2);
    EXPECT_EQ(Result(r, "replayed_ios"), 600);
    EXPECT_EQ(Result(r, "trace_ios"), 600);
    for (const std::string op : {"read", "write", "trim"}) {
      EXPECT_EQ(Result(r, op + "_ios"), Count(summary, op + "_pieces")) << op;
    }
    EXPECT_GT(Count(summary, "split"), 0u);
    EXPECT_EQ(Result(r, "read_bytes"), Count(summary, "read_bytes"));
    EXPECT_EQ(Result(r, "written_bytes"), Count(summary, "write_bytes"));
    EXPECT_EQ(Result(r, "trimmed_bytes"), Count(summary, "trim_bytes"));
    EXPECT_EQ(Result(r, "folded_ios"), Count(summary, "folded"));
    EXPECT_GT(Result(r, "folded_ios"), 30);
    EXPECT_EQ(Result(r, "aligned_ios"), Count(summary, "aligned"));
    EXPECT_EQ(Result(r, "split_ios"), Count(summary, "split"));
    EXPECT_EQ(Result(r, "flush_ios"), 15);
    EXPECT_GT(Result(r, "read_p99_9_seconds"), 0);
    EXPECT_GE(Result(r, "read_p99_9_seconds"), Result(r, "read_p50_seconds"));
    EXPECT_GT(Result(r, "write_p50_seconds"), 0);
    EXPECT_GT(Result(r, "trim_max_seconds"), 0);
    EXPECT_GT(Result(r, "replay_bytes_per_second"), 0);
    EXPECT_GT(Result(r, "replay_iops"), 0);
    // Recorded timing: never done before the trace's own span. iolog 2
    // holds whole milliseconds only.
    const double span = AsDouble(*Find(summary, "span_seconds"));
    EXPECT_NEAR(Result(r, "recorded_span_seconds"), span, format == "iolog2" ? 1e-3 : 1e-9);
    EXPECT_GE(Result(r, "replay_duration_seconds"), Result(r, "recorded_span_seconds"));
    ExpectWritesLanded(AgingFilePath(loaded.config->aging.targets[0]), summary);
  }
  // The blkparse trace from the unaligned workload holds whole sectors.
  if (lbs == 512) {
    Json summary;
    MakeTrace("aligned.blkparse", "blkparse", "--ios 100 --unaligned 50", 512, &summary);
    EXPECT_EQ(Count(summary, "aligned"), 0u);
  }
}

TEST_F(ReplayTest, OnALoopDeviceWithTheAcknowledgement) {
  LoopDevice loop(8);
  if (loop.device().empty()) GTEST_SKIP() << "losetup failed (needs root)";
  Json summary;
  const std::string trace = MakeTrace("t.txt", "blkparse",
                                      "--ios 400 --seed 3 --mix 40,50,10 --other-device 8,16",
                                      512, &summary);
  // Two devices in the trace: one picked.
  const config::LoadResult loaded =
      Load(LoopTargetText(loop, true), "loop", trace, "trace_device = \"259,0\"\nqueue_depth = 4\n");
  ASSERT_TRUE(loaded.config) << loaded.errors[0].ToString();
  const Json r = Run(*loaded.config);
  ASSERT_EQ(AsString(*Find(r, "outcome")), "completed") << DumpJson(r, 2);
  EXPECT_EQ(Result(r, "replayed_ios"), 400);
  EXPECT_EQ(Result(r, "write_ios"), Count(summary, "write_pieces"));
  EXPECT_EQ(Result(r, "trim_ios"), Count(summary, "trim_pieces"));
  EXPECT_EQ(AsString(*Find(r, "serial")), loop.serial());
  ExpectWritesLanded(loop.backing(), summary);
}

// Think time makes a recorded replay as long as the trace, at least, and
// moves the progress; "max" ignores it, and a speed of 2 halves it.
TEST_F(ReplayTest, RecordedTimingKeepsTheTracesSpanAndMaxDoesNot) {
  const std::string trace = MakeTrace("slow.log", "iolog3",
                                      "--ios 120 --mix 100,0,0 --think-us 20000 --max-size 65536");
  config::LoadResult loaded = Load(FileTargetText(), "t", trace);
  ASSERT_TRUE(loaded.config) << loaded.errors[0].ToString();
  // A replay of reads opens the target's file as it is, as a verify does:
  // something wrote it before (here, the file is only made).
  ASSERT_TRUE(PrepareAgingFile(loaded.config->aging.targets[0], WritePass{state_}, options_.paths));
  Progress progress;
  const Json recorded = Run(*loaded.config, &progress);
  ASSERT_EQ(AsString(*Find(recorded, "outcome")), "completed") << DumpJson(recorded, 2);
  const double span = Result(recorded, "recorded_span_seconds");
  EXPECT_GT(span, 1.5);
  EXPECT_GE(Result(recorded, "replay_duration_seconds"), span);
  EXPECT_GE(progress.between, 1) << "the progress did not move during the replay";

  loaded = Load(FileTargetText(), "t", trace, "replay_speed = \"max\"\n");
  ASSERT_TRUE(loaded.config);
  const Json max = Run(*loaded.config);
  ASSERT_EQ(AsString(*Find(max, "outcome")), "completed") << DumpJson(max, 2);
  EXPECT_LT(Result(max, "replay_duration_seconds"), span / 2);
  EXPECT_EQ(Result(max, "late_ios"), 0);  // nothing is due in "max"

  loaded = Load(FileTargetText(), "t", trace, "replay_speed = 2\n");
  ASSERT_TRUE(loaded.config);
  const Json twice = Run(*loaded.config);
  EXPECT_GE(Result(twice, "replay_duration_seconds"), span / 2);
}

// A trace of reads needs only the serial: no destroy_data, the device
// opened for reading, its identity checked, and left as it was.
TEST_F(ReplayTest, AReadOnlyTraceOnABlockDeviceNeedsOnlyTheSerial) {
  LoopDevice loop(8);
  if (loop.device().empty()) GTEST_SKIP() << "losetup failed (needs root)";
  {
    std::ofstream out(loop.backing(), std::ios::binary | std::ios::in);
    for (int i = 0; i < 2048; ++i) out << "somebody's data " << i << "\n";
  }
  const std::string before = ReadFileText(loop.backing());
  const std::string trace = MakeTrace("reads.log", "iolog2", "--ios 300 --mix 100,0,0");
  config::LoadResult loaded = Load(LoopTargetText(loop, false), "loop", trace);
  ASSERT_TRUE(loaded.config) << loaded.errors[0].ToString();
  EXPECT_FALSE(config::PhaseKindWrites(loaded.config->aging.phases[0].params));
  Json r = Run(*loaded.config);
  ASSERT_EQ(AsString(*Find(r, "outcome")), "completed") << DumpJson(r, 2);
  EXPECT_EQ(Result(r, "read_ios"), Result(r, "replayed_ios") + Result(r, "split_ios"));
  EXPECT_EQ(Result(r, "written_bytes"), 0);
  EXPECT_EQ(ReadFileText(loop.backing()), before);

  // The identity is still checked.
  loaded.config->aging.targets[0].serial = "loop:/elsewhere.img";
  r = Run(*loaded.config);
  EXPECT_EQ(AsString(*Find(r, "outcome")), "refused");
  EXPECT_NE(AsString(*Find(r, "reason")).find("refusing to read"), std::string::npos)
      << AsString(*Find(r, "reason"));
  EXPECT_EQ(ReadFileText(loop.backing()), before);
}

// Writes without the acknowledgement: check-config refuses, naming the
// trace and its first write's line; a config that gets past it (built by
// hand) is refused by the runner's write gate, which writes nothing.
TEST_F(ReplayTest, AWritingTraceWithoutTheAcknowledgementIsRefused) {
  LoopDevice loop(8);
  if (loop.device().empty()) GTEST_SKIP() << "losetup failed (needs root)";
  const std::string before = ReadFileText(loop.backing());
  const std::string trace = MakeTrace("writes.log", "iolog3", "--ios 50 --mix 0,100,0");
  const config::LoadResult loaded = Load(LoopTargetText(loop, false), "loop", trace);
  ASSERT_FALSE(loaded.config);
  ASSERT_EQ(loaded.errors.size(), 1u);
  // Line 4: the header, add and open, then the first write.
  EXPECT_EQ(loaded.errors[0].ToString(),
            "c.toml:12:10: aging.phases.target: phase kind \"replay\" writes target \"loop\" "
            "(trace " + trace + " writes or trims from line 4 on), which does not acknowledge "
            "that all data on " + loop.device() + " will be destroyed (expected destroy_data = "
            "true in its [[aging.targets]] entry at line 3, column 1)");

  config::Config config;
  config.state_directory = state_;
  config::AgingTarget t;
  t.name = "loop";
  t.block_device = loop.device();
  t.serial = loop.serial();
  config.aging.targets = {t};
  config::PhaseConfig p;
  p.name = "r";
  p.target = "loop";
  config::ReplayParams params;
  params.trace = trace;
  p.params = params;  // the trace unread: it counts as writing
  config.aging.phases = {p};
  const Json r = Run(config);
  EXPECT_EQ(AsString(*Find(r, "outcome")), "refused");
  EXPECT_NE(AsString(*Find(r, "reason")).find("destroy_data"), std::string::npos)
      << AsString(*Find(r, "reason"));
  EXPECT_EQ(ReadFileText(loop.backing()), before);
}

// The config loaded a trace of reads; the file then grew a write. The run
// reads it again and refuses before it touches the device.
TEST_F(ReplayTest, ATraceThatTurnedToWritingSinceTheConfigLoadedIsRefused) {
  LoopDevice loop(8);
  if (loop.device().empty()) GTEST_SKIP() << "losetup failed (needs root)";
  const std::string before = ReadFileText(loop.backing());
  const std::string trace = MakeTrace("t.log", "iolog2", "--ios 20 --mix 100,0,0");
  const config::LoadResult loaded = Load(LoopTargetText(loop, false), "loop", trace);
  ASSERT_TRUE(loaded.config) << loaded.errors[0].ToString();
  // Before the closing "close".
  std::string text = ReadFileText(trace);
  text.insert(text.rfind('\n', text.size() - 2) + 1, "/dev/nvme0n1 write 0 4096\n");
  WriteFileText(trace, text);
  const std::string line = std::to_string(std::count(text.begin(), text.end(), '\n') - 1);
  const Json r = Run(*loaded.config);
  EXPECT_EQ(AsString(*Find(r, "outcome")), "refused");
  EXPECT_NE(AsString(*Find(r, "reason")).find(
                trace + ":" + line + ": refusing to replay: the trace writes or trims from "
                                      "this line on, but held only reads when the config was "
                                      "loaded"),
            std::string::npos)
      << AsString(*Find(r, "reason"));
  EXPECT_EQ(ReadFileText(loop.backing()), before);
}

// A damaged trace: check-config names it at the trace key; a trace damaged
// after the config loaded fails the run before any I/O.
TEST_F(ReplayTest, ADamagedTraceIsNamedWithItsLine) {
  const std::string trace = MakeTrace("t.log", "iolog3", "--ios 30");
  config::LoadResult loaded = Load(FileTargetText(), "t", trace);
  ASSERT_TRUE(loaded.config) << loaded.errors[0].ToString();
  std::string text = ReadFileText(trace);
  text.insert(text.find('\n', text.find("read")) + 1, "1500 /dev/nvme0n1 reed 0 4096\n");
  WriteFileText(trace, text);
  const Json r = Run(*loaded.config);
  EXPECT_EQ(AsString(*Find(r, "outcome")), "failed");
  const std::string reason = AsString(*Find(r, "reason"));
  EXPECT_NE(reason.find(trace + ":"), std::string::npos) << reason;
  EXPECT_NE(reason.find(": unknown action \"reed\" (expected add, open or close"),
            std::string::npos)
      << reason;
  EXPECT_EQ(Result(r, "replayed_ios"), -1);  // nothing was replayed
  const config::LoadResult again = Load(FileTargetText(), "t", trace);
  ASSERT_FALSE(again.config);
  EXPECT_EQ(again.errors[0].ToString().rfind("c.toml:13:9: aging.phases.trace: " + trace + ":", 0),
            0u)
      << again.errors[0].ToString();
  EXPECT_FALSE(Load(FileTargetText(), "t", trace + ".missing").config);
}

// A writing replay is one write pass over the whole target: a study's
// region on it is never written.
TEST_F(ReplayTest, AWritingReplayStaysOffARetentionStudysRegion) {
  const std::string trace = MakeTrace("t.log", "iolog3", "--ios 20 --mix 0,100,0");
  config::LoadResult loaded = Load(FileTargetText(), "t", trace);
  ASSERT_TRUE(loaded.config) << loaded.errors[0].ToString();
  config::Config config = *loaded.config;
  config::PhaseConfig study;
  study.name = "lab";
  study.target = "t";
  config::RetentionWriteParams s;
  s.study = "lab";
  s.region_length = 1u << 20;
  study.params = s;
  config.aging.phases.push_back(study);
  auto written = RunPhase(config, "lab", options_, {}, nullptr);
  ASSERT_TRUE(written);
  ASSERT_EQ(AsString(*Find(*written, "outcome")), "completed") << DumpJson(*written, 2);
  const Json r = Run(config);
  EXPECT_EQ(AsString(*Find(r, "outcome")), "refused");
  EXPECT_NE(AsString(*Find(r, "reason")).find("held by retention study \"lab\""),
            std::string::npos)
      << AsString(*Find(r, "reason"));
}

// The daemon runs a scheduled replay and exports its results.
TEST_F(ReplayTest, AScheduledReplayIsExported) {
  const std::string trace = MakeTrace("t.log", "blkparse", "--ios 100");
  config::LoadResult loaded = Load(FileTargetText(), "t", trace, "interval = \"1h\"\n");
  ASSERT_TRUE(loaded.config) << loaded.errors[0].ToString();
  MetricStore store;
  PhaseService service(store, nullptr, nullptr);
  service.Start(*loaded.config);  // due at once: never ran
  std::vector<Json> history;
  for (int i = 0; i < 500 && history.empty(); ++i) {
    std::this_thread::sleep_for(milliseconds{20});
    if (auto h = HistoryFile(HistoryPath(state_)).Read()) history = h->records;
  }
  ASSERT_EQ(history.size(), 1u);
  EXPECT_EQ(AsString(*Find(history[0], "outcome")), "completed") << DumpJson(history[0], 2);
  service.Stop();
  // A restarted daemon exports them from the history.
  PhaseService again(store, nullptr, nullptr);
  again.Start(*loaded.config);
  const std::string text = *store.Render();
  again.Stop();
  for (const char* pattern :
       {R"(drivewatch_phase_result_seconds\{[^}]*kind="replay"[^}]*measure="replay_duration"[^}]*\} [0-9])",
        R"(drivewatch_phase_result_seconds\{[^}]*measure="read_p99_9"[^}]*phase="r")",
        R"(drivewatch_phase_result_ios\{[^}]*measure="replayed"[^}]*phase="r"[^}]*\} 100)",
        R"(drivewatch_phase_result_bytes_per_second\{[^}]*measure="replay"[^}]*phase="r")",
        R"(drivewatch_phase_runs_total\{[^}]*outcome="completed"[^}]*phase="r"[^}]*\} 1)"}) {
    EXPECT_TRUE(std::regex_search(text, std::regex(pattern))) << pattern << "\n" << text;
  }
}

// The engine's side of a source: it issues what the source hands it, when
// it is due, and never an I/O that breaks the source's rules.
class ListSource : public IoSource {
 public:
  explicit ListSource(std::vector<Io> ios) : ios_(std::move(ios)) {}
  std::optional<Io> Next() override {
    if (next_ == ios_.size()) return std::nullopt;
    return ios_[next_++];
  }
  double Fraction() const override { return static_cast<double>(next_) / ios_.size(); }

 private:
  std::vector<Io> ios_;
  std::size_t next_ = 0;
};

TEST(IoSourceTest, TheEngineIssuesWhatIsDueAndRefusesWhatBreaksTheRules) {
  char name[] = "/var/tmp/dw-source-XXXXXX";
  const int fd = mkstemp(name);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 1 << 20), 0);
  close(fd);
  auto target = WorkloadTarget::Open(name, WorkloadTarget::kReadWrite);
  ASSERT_TRUE(target) << target.error().message;
  using Op = IoSource::Op;
  const auto at = [](int ms) { return std::optional(std::chrono::nanoseconds(milliseconds{ms})); };
  ListSource source({
      {Op::kWrite, 0, 4096, at(0)},
      {Op::kRead, 1u << 20, 4096, {}},   // past the end
      {Op::kRead, 100, 4096, {}},        // not on a logical block
      {Op::kWrite, 4096, 16384, {}},     // above block_size
      {Op::kTrim, 0, 4096, {}},          // trims are not in the run's mix
      {Op::kRead, 0, 4096, at(300)},
      {Op::kRead, 4096, 8192, at(300)},  // due with the one before: late at QD1
  });
  WorkloadSpec spec;
  spec.source = &source;
  spec.read_percent = 50;
  spec.write_percent = 50;
  spec.block_size = 8192;
  spec.queue_depth = 1;
  auto r = RunWorkload(**target, spec, {});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->total.write_ios, 1u);
  EXPECT_EQ(r->total.read_ios, 2u);
  EXPECT_EQ(r->total.trim_ios, 0u);
  EXPECT_EQ(r->errors, 4u);
  EXPECT_NE(r->first_error.find("read at offset 1048576: not issued"), std::string::npos)
      << r->first_error;
  EXPECT_EQ(r->late, 1u);
  EXPECT_GE(r->total.seconds, 0.3);
  struct stat st;
  ASSERT_EQ(::stat(name, &st), 0);
  EXPECT_EQ(st.st_size, 1 << 20);  // nothing past the end: the file did not grow
  target->reset();
  unlink(name);
}

}  // namespace
}  // namespace drivewatch::aging
