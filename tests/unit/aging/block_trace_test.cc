// SPDX-License-Identifier: Apache-2.0
// The block trace reader on small traces written by hand: each format's
// events, times and counts; every refusal with its file, line, problem and
// expectation; and how a trace's I/O is aligned, folded and split onto a
// target.
#include "aging/engine/block_trace.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/common/file_text.h"

namespace drivewatch::aging {
namespace {

using Op = TraceIo::Op;

class BlockTraceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("dw-trace-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "t.log").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Every event of `text`, read with `options`; fails the test on an error.
  std::vector<TraceIo> Events(const std::string& text, TraceReadOptions options = {}) {
    testing::WriteFileText(path_, text);
    std::vector<TraceIo> out;
    auto r = BlockTraceReader::Open(path_, options);
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    if (!r) return out;
    for (;;) {
      auto io = (*r)->Next();
      EXPECT_TRUE(io) << (io ? "" : io.error().message);
      if (!io || !*io) return out;
      out.push_back(**io);
    }
  }

  // The error reading all of `text` gives, or "" when there is none.
  std::string ErrorOf(const std::string& text) {
    testing::WriteFileText(path_, text);
    auto r = BlockTraceReader::Open(path_, {});
    if (!r) return r.error().message;
    for (;;) {
      auto io = (*r)->Next();
      if (!io) return io.error().message;
      if (!*io) return "";
    }
  }

  std::filesystem::path dir_;
  std::string path_;
};

MATCHER_P6(IsIo, op, offset, length, time_ns, line, action, "") {
  return arg.op == op && arg.offset == static_cast<std::uint64_t>(offset) &&
         arg.length == static_cast<std::uint64_t>(length) &&
         arg.time_ns == static_cast<std::uint64_t>(time_ns) &&
         arg.line == static_cast<std::uint64_t>(line) && arg.action == action;
}

TEST_F(BlockTraceTest, IologVersion2WaitIsMillisecondsFromTheStart) {
  const auto events = Events(
      "fio version 2 iolog\n"
      "/dev/sdb add\n"
      "/dev/sdb open\n"
      "/dev/sdb read 4096 8192\n"
      "/dev/sdb wait 5 0\n"
      "/dev/sdb write 1000 3000\n"
      "\n"
      "/dev/sdb wait 2 0\n"  // earlier than the last: no going back
      "/dev/sdb trim 0 1048576\n"
      "/dev/sdb sync 0 0\n"
      "/dev/sdb wait 12 0\n"
      "/dev/sdb datasync 0 0\n"
      "/dev/sdb close\n");
  ASSERT_EQ(events.size(), 5u);
  EXPECT_THAT(events[0], IsIo(Op::kRead, 4096, 8192, 0, 4, 0));
  EXPECT_THAT(events[1], IsIo(Op::kWrite, 1000, 3000, 5'000'000, 6, 0));
  EXPECT_THAT(events[2], IsIo(Op::kTrim, 0, 1048576, 5'000'000, 9, 0));
  EXPECT_THAT(events[3], IsIo(Op::kFlush, 0, 0, 5'000'000, 10, 0));
  EXPECT_THAT(events[4], IsIo(Op::kFlush, 0, 0, 12'000'000, 12, 0));
}

TEST_F(BlockTraceTest, IologVersion3TimestampsAreMicroseconds) {
  // As fio 3.33's write_iolog writes them (checked against a run of it).
  const auto events = Events(
      "fio version 3 iolog\r\n"
      "299 /tmp/f add\r\n"
      "1413 /tmp/f open\r\n"
      "1426 /tmp/f read 249856 4096\r\n"
      "26424 /tmp/f write 3104768 4096\r\n"
      "1002624 /tmp/f close");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_THAT(events[0], IsIo(Op::kRead, 249856, 4096, 1'426'000, 4, 0));
  EXPECT_THAT(events[1], IsIo(Op::kWrite, 3104768, 4096, 26'424'000, 5, 0));
}

TEST_F(BlockTraceTest, IologFileFilterKeepsOneFilesIo) {
  const std::string text =
      "fio version 2 iolog\n"
      "/a add\n/b add\n/a open\n/b open\n"
      "/a read 0 512\n/b write 512 512\n/a read 1024 512\n";
  EXPECT_EQ(Events(text).size(), 3u);
  const auto only_b = Events(text, TraceReadOptions{"/b", 0});
  ASSERT_EQ(only_b.size(), 1u);
  EXPECT_EQ(only_b[0].op, Op::kWrite);
}

constexpr char kBlkparse[] =
    "\n"
    "259,0    3        1     0.000000000   697  Q  WS 223490 + 8 [kworker/u8:2]\n"
    "259,0    3        2     0.000002000   697  G  WS 223490 + 8 [kworker/u8:2]\n"
    "259,0    3        3     0.000003000   697  P   N [kworker/u8:2]\n"
    "259,0    3        4     0.000010000   697  D  WS 223490 + 8 [kworker/u8:2]\n"
    "259,0    0        0     0.000011000     0  m   N cfq697 slice expired t=0\n"
    "  8,16   1        5     0.000100000   700  Q   R 8 + 16 [Web Content]\n"
    "  8,16   1        6     0.000105000   700  D   R 8 + 16 [Web Content]\n"
    "259,0    3        7     0.000200000   697  Q FWS [jbd2/nvme0n1-8]\n"
    "259,0    3        8     0.000201000   697  D FWS [jbd2/nvme0n1-8]\n"
    "259,0    2        9     0.000300000     1  Q   D 4096 + 2048 [fstrim]\n"
    "259,0    2       10     0.000301000     1  X   D 4096 / 6144 [fstrim]\n"
    "259,0    2       11     0.000302000     1  D   D 4096 + 2048 [fstrim]\n"
    "259,0    3       12     1.500000000   697  D FWFS 100 + 8 [kworker/3:1H]\n"
    "259,0    3       13     1.500100000   697  C FWFS 100 + 8 [0]\n"
    "259,0    1       14     1.600000000     0  D   N 0 (12 00 ..) [scsi_id]\n"
    "CPU0 (259,0):\n"
    " Reads Queued:           0,        0KiB\t Writes Queued:           1,        4KiB\n"
    "Total (259,0):\n"
    "Throughput (R/W): 0KiB/s / 2KiB/s\n";

TEST_F(BlockTraceTest, BlkparseGivesItsIssueAndQueueEvents) {
  const auto issued = Events(kBlkparse, TraceReadOptions{"", 'D'});
  ASSERT_EQ(issued.size(), 5u);
  EXPECT_THAT(issued[0], IsIo(Op::kWrite, 223490 * 512ULL, 4096, 10'000, 5, 'D'));
  EXPECT_THAT(issued[1], IsIo(Op::kRead, 8 * 512, 16 * 512, 105'000, 8, 'D'));
  EXPECT_THAT(issued[2], IsIo(Op::kFlush, 0, 0, 201'000, 10, 'D'));
  EXPECT_THAT(issued[3], IsIo(Op::kTrim, 4096 * 512ULL, 2048 * 512, 302'000, 13, 'D'));
  // A preflushed FUA write is replayed as a write.
  EXPECT_THAT(issued[4], IsIo(Op::kWrite, 100 * 512, 8 * 512, 1'500'000'000, 14, 'D'));
  const auto queued = Events(kBlkparse, TraceReadOptions{"", 'Q'});
  ASSERT_EQ(queued.size(), 4u);
  EXPECT_THAT(queued[0], IsIo(Op::kWrite, 223490 * 512ULL, 4096, 0, 2, 'Q'));
  // One device of two; "259,00" names the same device as "259,0".
  const auto nvme = Events(kBlkparse, TraceReadOptions{"259,00", 'D'});
  ASSERT_EQ(nvme.size(), 4u);
  EXPECT_EQ(nvme[1].op, Op::kFlush);
}

TEST_F(BlockTraceTest, ScanPicksIssueEventsAndSaysWhatTheTraceHolds) {
  testing::WriteFileText(path_, kBlkparse);
  auto s = ScanTrace(path_, "");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->format, TraceFormat::kBlkparse);
  EXPECT_EQ(s->blkparse_action, 'D');
  EXPECT_EQ(s->reads, 1u);
  EXPECT_EQ(s->writes, 2u);
  EXPECT_EQ(s->trims, 1u);
  EXPECT_EQ(s->flushes, 1u);
  EXPECT_EQ(s->write_bytes, 8192u);
  EXPECT_EQ(s->trim_bytes, 2048u * 512);
  EXPECT_EQ(s->first_write_line, 5u);
  EXPECT_EQ(s->largest_io, 2048u * 512);
  EXPECT_EQ(s->span(), std::chrono::nanoseconds(1'500'000'000 - 10'000));
  EXPECT_EQ(s->devices, (std::vector<std::string>{"259,0", "8,16"}));

  // Recorded with queue events only: those are the I/O.
  std::string queue_only;
  for (std::string_view line : {
           "259,0 0 1 0.000000000 1 Q R 0 + 8 [a]\n", "259,0 0 2 0.000001000 1 C R 0 + 8 [0]\n",
           "259,0 0 3 0.250000000 1 Q R 8 + 8 [a]\n"}) {
    queue_only += line;
  }
  testing::WriteFileText(path_, queue_only);
  s = ScanTrace(path_, "");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->blkparse_action, 'Q');
  EXPECT_EQ(s->reads, 2u);
  EXPECT_EQ(s->first_write_line, 0u);
  EXPECT_FALSE(s->writes_data());
  EXPECT_EQ(s->span(), std::chrono::milliseconds(250));
}

TEST_F(BlockTraceTest, ScanRefusesATraceWithoutIoForItsFilter) {
  testing::WriteFileText(path_, kBlkparse);
  auto s = ScanTrace(path_, "8,1");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message,
            path_ + ": no I/O of trace_device \"8,1\" (expected one of the trace's: 259,0, 8,16)");
  testing::WriteFileText(path_, "fio version 2 iolog\n/a add\n/a open\n/a sync 0 0\n/a close\n");
  s = ScanTrace(path_, "");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message,
            path_ + ": no read, write or trim in this fio iolog version 2 trace (expected at "
                    "least one I/O to replay)");
}

TEST_F(BlockTraceTest, EveryProblemNamesTheFileTheLineAndWhatWasExpected) {
  const std::string v2 = "fio version 2 iolog\n/a add\n/a open\n";
  const std::string p = path_ + ":";
  const std::pair<std::string, std::string> cases[] = {
      {"", path_ + ": empty (expected a block trace: fio's iolog version 2 or 3, or blkparse's "
                   "default output)"},
      {"fio version 1 iolog\n", p + "1: \"fio version 1 iolog\" is an iolog version drivewatch "
                                    "cannot read (expected \"fio version 2 iolog\" or \"fio "
                                    "version 3 iolog\")"},
      {"read 0 4096\n", p + "1: not a block trace drivewatch can replay (expected a first line "
                            "\"fio version 2 iolog\" or \"fio version 3 iolog\", or blkparse's "
                            "default output such as \"8,0 3 1 0.000000000 697 Q WS 223490 + 8 "
                            "[proc]\")"},
      {v2 + "/a flush 0 0\n",
       p + "4: unknown action \"flush\" (expected add, open or close, or read, write, trim, "
           "sync, datasync or wait with an offset and a length)"},
      {v2 + "/a read 0\n",
       p + "4: 3 fields (expected FILE ACTION, or FILE ACTION OFFSET LENGTH)"},
      {v2 + "/a read\n", p + "4: read without an offset and a length (expected FILE ACTION, "
                             "or FILE ACTION OFFSET LENGTH)"},
      {v2 + "/a open 0 0\n",
       p + "4: open with an offset and a length (expected \"/a open\" alone)"},
      {v2 + "/a read -1 4096\n",
       p + "4: offset \"-1\" and length \"4096\" (expected whole numbers of bytes)"},
      {v2 + "/a read 0 0\n", p + "4: read of 0 bytes (expected 1 to 4294967295 bytes)"},
      {v2 + "/a write 0 4294967296\n",
       p + "4: write of 4294967296 bytes (expected 1 to 4294967295 bytes)"},
      {v2 + "/a trim 1152921504606846976 512\n",
       p + "4: trim at offset 1152921504606846976 (expected an offset that, with its length, "
           "stays below 1 EiB)"},
      {v2 + "/b read 0 512\n",
       p + "4: read on \"/b\", which is not open (expected \"/b add\" and \"/b open\" before "
           "its I/O)"},
      {"fio version 2 iolog\n/b open\n",
       p + "2: open of \"/b\", which no add named before (expected \"/b add\" first)"},
      {"fio version 2 iolog\n/b add\n/b close\n",
       p + "3: close of \"/b\", which is not open (expected \"/b open\" before it)"},
      {v2 + "/a wait 31622400001 0\n",
       p + "4: wait until 31622400001 ms (expected at most 366 days of milliseconds)"},
      {"fio version 3 iolog\n1 /a add\nx /a open\n",
       p + "3: timestamp \"x\" is not a number of microseconds up to 366 days (expected "
           "TIMESTAMP FILE ACTION, or TIMESTAMP FILE ACTION OFFSET LENGTH)"},
      {"fio version 3 iolog\n1 /a add\n2 /a wait 5 0\n",
       p + "3: wait in an iolog of version 3 (expected the timestamps to carry the timing, as "
           "fio writes them)"},
      {v2 + "/a read 0 512 extra words\n",
       p + "4: 6 fields (expected FILE ACTION, or FILE ACTION OFFSET LENGTH)"},
      {"8,0 0 1 0.000000000 1 D R 0 + 8 [a]\nsomething else\n",
       p + "2: \"something else\" is not a blkparse event (expected blkparse's default "
           "output, DEVICE CPU SEQUENCE SECONDS PID ACTION RWBS ..., such as \"8,0 3 1 "
           "0.000000000 697 Q WS 223490 + 8 [proc]\")"},
      {"8,0 0 1 0.000000000 1 D R 0 + 0 [a]\n",
       p + "1: sector \"0\" + \"0\" (expected a sector below 1 EiB and 1 to 8388607 sectors of "
           "512 bytes)"},
      {v2 + "/a read 0 512\n" + std::string("/a read 0 5\0\n", 13),
       p + "5: a NUL byte (expected text: a block trace is a text file)"},
  };
  for (const auto& [text, error] : cases) EXPECT_EQ(ErrorOf(text), error) << text;

  EXPECT_EQ(ErrorOf(v2 + "/a read 0 " + std::string(5000, '1') + "\n"),
            p + "4: a line of 5010 bytes (expected at most 4096 bytes a line)");
  EXPECT_EQ(ErrorOf(v2 + std::string(70000, 'x')),
            p + "4: a line longer than 4096 bytes (expected at most that a line)");
  // blktrace's own binary file, rather than blkparse's text of it.
  EXPECT_EQ(ErrorOf(std::string("\x07tae\0\0\0\0", 8)),
            path_ + ": a binary blktrace file (expected blkparse's text output of it: blkparse "
                    "-i DEVICE -o trace.txt)");
  auto dir = BlockTraceReader::Open(dir_.string(), {});
  ASSERT_FALSE(dir);
  EXPECT_EQ(dir.error().message,
            dir_.string() + ": not a regular file (expected a trace file, which a replay "
                            "reads twice: once to check it, once to replay it)");
  auto missing = BlockTraceReader::Open(path_ + ".gone", {});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message, path_ + ".gone: No such file or directory");
}

TEST_F(BlockTraceTest, AddingMoreFilesThanTheLimitIsRefused) {
  std::string text = "fio version 2 iolog\n";
  for (std::size_t i = 0; i <= kMaxTraceFiles; ++i) text += "/f" + std::to_string(i) + " add\n";
  EXPECT_EQ(ErrorOf(text), path_ + ":1026: more than 1024 files added (expected at most that many)");
}

std::vector<MappedIo> Map(Op op, std::uint64_t offset, std::uint64_t length,
                          const TraceMapping& m, MappingCounts& counts) {
  std::vector<MappedIo> out;
  MapTraceIo(TraceIo{op, offset, length, 0, 1, 0}, m, out, counts);
  return out;
}

MATCHER_P3(IsMapped, op, offset, size, "") {
  return arg.op == op && arg.offset == static_cast<std::uint64_t>(offset) &&
         arg.size == static_cast<std::uint32_t>(size);
}

TEST(TraceMapping, AlignsFoldsAndSplits) {
  const TraceMapping m{8u << 20, 4096, 2u << 20};
  MappingCounts c;
  // In place: nothing counted.
  EXPECT_THAT(Map(Op::kRead, 4096, 8192, m, c), ::testing::ElementsAre(IsMapped(Op::kRead, 4096, 8192)));
  EXPECT_EQ(c.aligned + c.folded + c.split, 0u);
  // Byte offsets: the offset down and the end up to 4 KiB.
  EXPECT_THAT(Map(Op::kWrite, 5000, 100, m, c), ::testing::ElementsAre(IsMapped(Op::kWrite, 4096, 4096)));
  EXPECT_THAT(Map(Op::kWrite, 4000, 200, m, c), ::testing::ElementsAre(IsMapped(Op::kWrite, 0, 8192)));
  EXPECT_EQ(c.aligned, 2u);
  // Past the end: modulo the capacity.
  EXPECT_THAT(Map(Op::kRead, (8u << 20) * 3 + 65536, 4096, m, c),
              ::testing::ElementsAre(IsMapped(Op::kRead, 65536, 4096)));
  EXPECT_EQ(c.folded, 1u);
  // Straddling the end: cut there, the rest at the start.
  EXPECT_THAT(Map(Op::kTrim, (8u << 20) - 4096, 12288, m, c),
              ::testing::ElementsAre(IsMapped(Op::kTrim, (8u << 20) - 4096, 4096),
                                     IsMapped(Op::kTrim, 0, 8192)));
  EXPECT_EQ(c.folded, 2u);
  EXPECT_EQ(c.split, 1u);
  // Larger than the engine's 2 MiB: split, each counted once.
  EXPECT_THAT(Map(Op::kWrite, 1u << 20, (5u << 20) + 1, m, c),
              ::testing::ElementsAre(IsMapped(Op::kWrite, 1u << 20, 2u << 20),
                                     IsMapped(Op::kWrite, 3u << 20, 2u << 20),
                                     IsMapped(Op::kWrite, 5u << 20, (1u << 20) + 4096)));
  EXPECT_EQ(c.split, 2u);
  EXPECT_EQ(c.aligned, 3u);
  EXPECT_EQ(c.folded, 2u);
  // Longer than the whole target: around and around.
  const TraceMapping tiny{1u << 20, 512, 2u << 20};
  MappingCounts t;
  EXPECT_THAT(Map(Op::kTrim, 512, (2u << 20) + 512, tiny, t),
              ::testing::ElementsAre(IsMapped(Op::kTrim, 512, (1u << 20) - 512),
                                     IsMapped(Op::kTrim, 0, 1u << 20),
                                     IsMapped(Op::kTrim, 0, 1024)));
  EXPECT_EQ(t.folded, 1u);
  EXPECT_EQ(t.split, 1u);
  // A flush maps to nothing.
  EXPECT_TRUE(Map(Op::kFlush, 0, 0, m, c).empty());
}

}  // namespace
}  // namespace drivewatch::aging
