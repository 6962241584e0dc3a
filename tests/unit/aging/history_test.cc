// SPDX-License-Identifier: Apache-2.0
#include "aging/history/history.h"
#include "tests/common/scratch_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

namespace drivewatch::aging {
namespace {

namespace fs = std::filesystem;

const std::string kFixtures = std::string(DW_FIXTURE_DIR) + "/history/";

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void Spit(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
}

Json Record(const std::string& phase, const std::string& serial, int start) {
  Json r;
  r["version"] = 1;
  r["run"] = "run-" + std::to_string(start);
  r["phase"] = phase;
  r["kind"] = "fill";
  r["target"] = "scratch";
  r["serial"] = serial;
  r["model"] = "Model X";
  r["firmware"] = "FW1";
  r["start"] = start;
  r["end"] = start + 3720;
  r["duration_seconds"] = 3720;
  r["outcome"] = "completed";
  r["reason"] = "";
  r["results"]["written_bytes"] = std::numeric_limits<std::uint64_t>::max();
  r["results"]["throughput_bytes_per_second"] = 1.25e9;
  r["series"]["throughput_bytes_per_second"].push_back(1.0e9);
  return r;
}

class HistoryTest : public ::testing::Test {
 protected:

  HistoryContents MustRead(const std::string& path) {
    Expected<HistoryContents> c = HistoryFile(path).Read();
    EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.error().message);
    return c.ok() ? std::move(c).value() : HistoryContents{};
  }

  const testing::ScratchDir scratch_{"history"};
  const std::string dir_ = scratch_.path();
  const std::string path_ = dir_ + "/history.log";
};

TEST_F(HistoryTest, MissingFileIsEmpty) {
  HistoryContents c = MustRead(path_);
  EXPECT_TRUE(c.records.empty());
  EXPECT_EQ(c.torn_tail_bytes, 0u);
  EXPECT_TRUE(c.damaged.empty());
}

TEST_F(HistoryTest, AppendsThreeAndReadsThemBack) {
  HistoryFile history(path_);
  const ::mode_t old_umask = ::umask(022);
  for (int i = 0; i < 3; ++i) {
    Status s = history.Append(Record("fill-half", "SN" + std::to_string(i), i));
    ASSERT_TRUE(s.ok()) << s.error().message;
    EXPECT_EQ(history.repaired_bytes(), 0u);
  }
  ::umask(old_umask);
  HistoryContents c = MustRead(path_);
  ASSERT_EQ(c.records.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(c.records[i], Record("fill-half", "SN" + std::to_string(i), i));
  }
  EXPECT_EQ(AsUint(*Find(*Find(c.records[2], "results"), "written_bytes")),
            std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(c.torn_tail_bytes, 0u);
  EXPECT_TRUE(c.damaged.empty());

  struct stat st;
  ASSERT_EQ(::stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);

  // The framing, byte for byte: "DWH1 <len> <crc32c> <json>\n".
  const std::string data = Slurp(path_);
  const std::string json = DumpJson(Record("fill-half", "SN0", 0));
  char crc[9];
  std::snprintf(crc, sizeof crc, "%08x", Crc32c(json.data(), json.size()));
  const std::string first =
      "DWH1 " + std::to_string(json.size()) + " " + crc + " " + json + "\n";
  EXPECT_EQ(data.substr(0, first.size()), first);
}

TEST_F(HistoryTest, AppendRefusesNonObjects) {
  HistoryFile history(path_);
  Status s = history.Append(Json(3));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, path_ + ": history record is not a JSON object");
  EXPECT_FALSE(fs::exists(path_));
}

TEST_F(HistoryTest, AppendErrorNamesFileAndCall) {
  HistoryFile history(dir_ + "/no/such/dir/history.log");
  Status s = history.Append(Record("p", "s", 1));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message,
            dir_ + "/no/such/dir/history.log: open: No such file or directory");
  EXPECT_EQ(s.error().errnum, ENOENT);
}

TEST_F(HistoryTest, ReadsRecordedFixture) {
  HistoryContents c = MustRead(kFixtures + "three_records.dwh");
  ASSERT_EQ(c.records.size(), 3u);
  EXPECT_TRUE(c.damaged.empty());
  EXPECT_EQ(AsString(*Find(c.records[0], "phase")), "fill-half");
  EXPECT_EQ(AsString(*Find(c.records[1], "outcome")), "aborted");
  EXPECT_EQ(AsUint(*Find(*Find(c.records[2], "results"), "written_bytes")),
            18446744073709551615u);
}

TEST_F(HistoryTest, TornTailIsReportedThenRepairedByAppend) {
  fs::copy_file(kFixtures + "torn_tail.dwh", path_);
  HistoryContents before = MustRead(path_);
  ASSERT_EQ(before.records.size(), 2u);
  EXPECT_EQ(before.torn_tail_bytes, 57u);
  EXPECT_TRUE(before.damaged.empty());

  HistoryFile history(path_);
  Json third = Record("fill-half", "SN3", 3);
  ASSERT_TRUE(history.Append(third).ok());
  EXPECT_EQ(history.repaired_bytes(), 57u);

  HistoryContents after = MustRead(path_);
  ASSERT_EQ(after.records.size(), 3u);
  EXPECT_EQ(after.records[0], before.records[0]);
  EXPECT_EQ(after.records[1], before.records[1]);
  EXPECT_EQ(after.records[2], third);
  EXPECT_EQ(after.torn_tail_bytes, 0u);
  EXPECT_TRUE(after.damaged.empty());
}

TEST_F(HistoryTest, OwnRecordCutMidwayIsTornAtEveryLength) {
  HistoryFile writer(path_);
  ASSERT_TRUE(writer.Append(Record("a", "s", 1)).ok());
  ASSERT_TRUE(writer.Append(Record("b", "s", 2)).ok());
  const std::uint64_t two = fs::file_size(path_);
  ASSERT_TRUE(writer.Append(Record("c", "s", 3)).ok());
  const std::uint64_t three = fs::file_size(path_);
  const std::string full = Slurp(path_);
  // Every cut inside the third record, including just before its newline.
  for (std::uint64_t cut = two + 1; cut < three; cut += 7) {
    Spit(path_, full.substr(0, cut));
    HistoryContents c = MustRead(path_);
    ASSERT_EQ(c.records.size(), 2u) << cut;
    EXPECT_EQ(c.torn_tail_bytes, cut - two) << cut;
    EXPECT_TRUE(c.damaged.empty()) << cut << ": " << c.damaged[0];
  }
  Spit(path_, full.substr(0, three - 1));
  EXPECT_EQ(MustRead(path_).torn_tail_bytes, three - 1 - two);

  HistoryFile fresh(path_);
  ASSERT_TRUE(fresh.Append(Record("d", "s", 4)).ok());
  EXPECT_EQ(fresh.repaired_bytes(), three - 1 - two);
  HistoryContents c = MustRead(path_);
  ASSERT_EQ(c.records.size(), 3u);
  EXPECT_EQ(AsString(*Find(c.records[2], "phase")), "d");
}

TEST_F(HistoryTest, DamagedMiddleRecordIsSkippedWithItsLineAndOffset) {
  HistoryContents c = MustRead(kFixtures + "damaged_middle.dwh");
  ASSERT_EQ(c.records.size(), 2u);
  EXPECT_EQ(AsString(*Find(c.records[0], "run")), "20261130T030000-fill-half");
  EXPECT_EQ(AsString(*Find(c.records[1], "run")), "20261202T030000-fill-half");
  EXPECT_EQ(c.torn_tail_bytes, 0u);
  ASSERT_EQ(c.damaged.size(), 1u);
  // The recorded checksum of the second record (make_fixtures.py).
  const std::string good = Slurp(kFixtures + "three_records.dwh");
  const std::string recorded = good.substr(515 + 9, 8);
  EXPECT_EQ(c.damaged[0].rfind("line 2 (offset 515): checksum ", 0), 0u) << c.damaged[0];
  EXPECT_NE(c.damaged[0].find(", expected " + recorded), std::string::npos)
      << c.damaged[0];
}

TEST_F(HistoryTest, FlippedByteInOwnMiddleRecord) {
  HistoryFile writer(path_);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(writer.Append(Record("p", "s", i)).ok());
  std::string data = Slurp(path_);
  const std::size_t second = data.find('\n') + 1;
  data[second + 60] ^= 0x20;
  Spit(path_, data);
  HistoryContents c = MustRead(path_);
  ASSERT_EQ(c.records.size(), 2u);
  EXPECT_EQ(c.records[0], Record("p", "s", 0));
  EXPECT_EQ(c.records[1], Record("p", "s", 2));
  ASSERT_EQ(c.damaged.size(), 1u);
  EXPECT_EQ(c.damaged[0].rfind("line 2 (offset " + std::to_string(second) + "): checksum", 0),
            0u)
      << c.damaged[0];
}

// One flipped byte in the newline that ends a record loses that record
// only: reading goes on at the next record's magic, which no longer has a
// newline before it.
TEST_F(HistoryTest, AFlippedNewlineLosesOnlyItsOwnRecord) {
  HistoryFile writer(path_);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(writer.Append(Record("p", "s", i)).ok());
  std::string data = Slurp(path_);
  const std::size_t first_end = data.find('\n');
  data[first_end] = 'X';
  Spit(path_, data);
  HistoryContents c = MustRead(path_);
  ASSERT_EQ(c.records.size(), 2u);
  EXPECT_EQ(c.records[0], Record("p", "s", 1));
  EXPECT_EQ(c.records[1], Record("p", "s", 2));
  ASSERT_EQ(c.damaged.size(), 1u);
  EXPECT_EQ(c.damaged[0], "line 1 (offset 0): length " +
                              data.substr(5, data.find(' ', 5) - 5) +
                              " does not end at the record's newline; skipped " +
                              std::to_string(first_end + 1) + " bytes");
  EXPECT_EQ(c.torn_tail_bytes, 0u);
}

TEST_F(HistoryTest, ResyncsAfterGarbageAndBadLengths) {
  HistoryFile writer(path_);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(writer.Append(Record("p", "s", i)).ok());
  std::string data = Slurp(path_);
  const std::size_t r1 = data.find('\n') + 1;
  const std::size_t r2 = data.find('\n', r1) + 1;
  // Record 1's length made longer (it now runs into record 2) and record 2's
  // magic smashed: both are lost, records 0 and 3 still read.
  ASSERT_EQ(data.substr(r1, 5), "DWH1 ");
  data.insert(r1 + 5, "9");
  data[r2 + 1 + 1] = 'X';  // +1 for the inserted digit
  Spit(path_, "junk\n" + data);
  HistoryContents c = MustRead(path_);
  ASSERT_EQ(c.records.size(), 2u);
  EXPECT_EQ(c.records[0], Record("p", "s", 0));
  EXPECT_EQ(c.records[1], Record("p", "s", 3));
  ASSERT_EQ(c.damaged.size(), 2u);
  EXPECT_EQ(c.damaged[0],
            "line 1 (offset 0): not a record header (expected \"DWH1 <length> "
            "<crc32c> \"); skipped 5 bytes");
  // Records 1 and 2 are one damaged stretch: the resync after record 1
  // finds no record start until record 3.
  const std::size_t r3 = data.find('\n', r2 + 1) + 1;
  EXPECT_EQ(c.damaged[1], "line 3 (offset " + std::to_string(r1 + 5) + "): length 9" +
                              data.substr(r1 + 6, data.find(' ', r1 + 6) - r1 - 6) +
                              " runs past the end of the file; skipped " +
                              std::to_string(r3 - r1) + " bytes");
  EXPECT_EQ(c.torn_tail_bytes, 0u);
}

TEST_F(HistoryTest, ValidFramingAroundBadJsonIsDamaged) {
  const std::string json = R"({"a":1,})";
  char crc[9];
  std::snprintf(crc, sizeof crc, "%08x", Crc32c(json.data(), json.size()));
  Spit(path_, "DWH1 " + std::to_string(json.size()) + " " + crc + " " + json +
                  "\nDWH1 2 " + crc + " []\n");
  HistoryContents c = MustRead(path_);
  EXPECT_TRUE(c.records.empty());
  ASSERT_EQ(c.damaged.size(), 2u);
  EXPECT_EQ(c.damaged[0],
            "line 1 (offset 0): JSON: column 8: unexpected '}' (expected a "
            "string key)");
  EXPECT_EQ(c.damaged[1].rfind("line 2 (offset 25): checksum ", 0), 0u) << c.damaged[1];
}

TEST_F(HistoryTest, AnotherWriterBetweenAppendsIsNoticed) {
  HistoryFile a(path_), b(path_);
  ASSERT_TRUE(a.Append(Record("a1", "s", 1)).ok());
  ASSERT_TRUE(b.Append(Record("b1", "s", 2)).ok());
  // A torn append by someone else: `a` must check again, not trust its
  // remembered end.
  std::string data = Slurp(path_);
  Spit(path_, data + "DWH1 100 0000");
  ASSERT_TRUE(a.Append(Record("a2", "s", 3)).ok());
  EXPECT_EQ(a.repaired_bytes(), 13u);
  HistoryContents c = MustRead(path_);
  ASSERT_EQ(c.records.size(), 3u);
  EXPECT_EQ(AsString(*Find(c.records[2], "phase")), "a2");
  EXPECT_EQ(c.torn_tail_bytes, 0u);
  EXPECT_TRUE(c.damaged.empty());
}

TEST_F(HistoryTest, LaterAppendsTrustTheRememberedEnd) {
  // Append must not reread a long file each time: once it has checked the
  // tail it trusts its remembered end while the file keeps that size and
  // inode. Overwriting the last newline in place (same size) is therefore
  // not noticed by the same object...
  HistoryFile history(path_);
  ASSERT_TRUE(history.Append(Record("p", "s", 1)).ok());
  const std::uint64_t size = fs::file_size(path_);
  const int fd = ::open(path_.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::pwrite(fd, "x", 1, static_cast<off_t>(size - 1)), 1);
  ::close(fd);
  ASSERT_TRUE(history.Append(Record("p", "s", 2)).ok());
  EXPECT_EQ(history.repaired_bytes(), 0u);
  // Without its newline the first record no longer ends where its length
  // says; the second, glued to it, is still found by its magic and read.
  HistoryContents glued = MustRead(path_);
  ASSERT_EQ(glued.records.size(), 1u);
  EXPECT_EQ(glued.records[0], Record("p", "s", 2));
  EXPECT_EQ(glued.damaged.size(), 1u);
  // ...and a new object (a restarted daemon) checks the tail: the damage
  // is in the middle, not a torn tail, so nothing is cut.
  HistoryFile restarted(path_);
  ASSERT_TRUE(restarted.Append(Record("p", "s", 3)).ok());
  EXPECT_EQ(restarted.repaired_bytes(), 0u);
  HistoryContents c = MustRead(path_);
  ASSERT_EQ(c.records.size(), 2u);
  EXPECT_EQ(c.records[0], Record("p", "s", 2));
  EXPECT_EQ(c.records[1], Record("p", "s", 3));
  EXPECT_EQ(fs::file_size(path_), 3 * size);
}

TEST_F(HistoryTest, LongHistoryIsCheckedOnceThenAppendedTo) {
  // 20000 records (~8 MB): the first Append checks the tail of the whole
  // file; later ones trust the remembered end (see the test above).
  HistoryFile history(path_);
  Json r = Record("p", "s", 1);
  std::string blob;
  for (int i = 0; i < 20000; ++i) {
    const std::string json = DumpJson(r);
    char crc[9];
    std::snprintf(crc, sizeof crc, "%08x", Crc32c(json.data(), json.size()));
    blob += "DWH1 " + std::to_string(json.size()) + " " + crc + " " + json + "\n";
  }
  Spit(path_, blob);
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(history.Append(r).ok());
  EXPECT_EQ(MustRead(path_).records.size(), 20050u);
}

// ---- Bounds on what is read ---------------------------------------------------

std::string Framed(const std::string& json) {
  char crc[9];
  std::snprintf(crc, sizeof crc, "%08x", Crc32c(json.data(), json.size()));
  return "DWH1 " + std::to_string(json.size()) + " " + crc + " " + json + "\n";
}

// A record whose JSON is `bytes` long: Record() with a string padded out.
std::string RecordOfSize(std::size_t bytes) {
  Json r = Record("big", "s", 7);
  const std::size_t base = DumpJson(r).size() + std::string(R"(,"pad":"")").size();
  r["pad"] = std::string(bytes - base, 'x');
  const std::string json = DumpJson(r);
  EXPECT_EQ(json.size(), bytes);
  return json;
}

TEST_F(HistoryTest, ARecordLargerThanTheBoundIsDamagedAndTheRestKept) {
  const std::string first = Framed(DumpJson(Record("p", "s", 1)));
  const std::string most = Framed(RecordOfSize(kMaxRecordBytes));
  const std::string over = Framed(RecordOfSize(kMaxRecordBytes + 1));
  Spit(path_, first + over + most + Framed(DumpJson(Record("p", "s", 2))));
  HistoryContents c = MustRead(path_);
  ASSERT_EQ(c.records.size(), 3u);
  EXPECT_EQ(c.records[0], Record("p", "s", 1));
  EXPECT_EQ(DumpJson(c.records[1]).size(), kMaxRecordBytes);
  EXPECT_EQ(c.records[2], Record("p", "s", 2));
  ASSERT_EQ(c.damaged.size(), 1u);
  EXPECT_EQ(c.damaged[0], "line 2 (offset " + std::to_string(first.size()) + "): record of " +
                              std::to_string(kMaxRecordBytes + 1) +
                              " bytes, larger than a record may be (expected at most " +
                              std::to_string(kMaxRecordBytes) + " bytes)");
  EXPECT_EQ(c.torn_tail_bytes, 0u);
  // It is damage, not a torn tail: an append leaves it.
  HistoryFile history(path_);
  ASSERT_TRUE(history.Append(Record("p", "s", 3)).ok());
  EXPECT_EQ(history.repaired_bytes(), 0u);
  EXPECT_EQ(MustRead(path_).records.size(), 4u);
}

// A line of garbage far longer than a record (a damaged file, a hand
// edit) is skipped to its newline: the records around it are read, and the
// line is never held whole.
TEST_F(HistoryTest, AHugeGarbageLineIsSkippedToItsNewline) {
  const std::string first = Framed(DumpJson(Record("p", "s", 1)));
  std::string garbage(8 * kMaxRecordBytes, 'g');
  // What would be a record, glued far into the line, is not taken: the
  // line as a whole is more than a record may be.
  garbage += Framed(DumpJson(Record("glued", "s", 9)));
  garbage.pop_back();
  Spit(path_, first + garbage + "\n" + Framed(DumpJson(Record("p", "s", 2))));
  HistoryContents c = MustRead(path_);
  ASSERT_EQ(c.records.size(), 2u);
  EXPECT_EQ(c.records[0], Record("p", "s", 1));
  EXPECT_EQ(c.records[1], Record("p", "s", 2));
  ASSERT_EQ(c.damaged.size(), 1u);
  EXPECT_EQ(c.damaged[0], "line 2 (offset " + std::to_string(first.size()) +
                              "): not a record header (expected \"DWH1 <length> <crc32c> \"); "
                              "skipped " + std::to_string(garbage.size() + 1) + " bytes");
  EXPECT_EQ(c.torn_tail_bytes, 0u);
}

// A huge last line with no newline is a torn append, whatever length its
// header claims: it is left out, and the next append cuts it off (reading
// the file as a reader does, never holding the line).
TEST_F(HistoryTest, AHugeUnfinishedLastLineIsATornTail) {
  const std::string first = Framed(DumpJson(Record("p", "s", 1)));
  const std::string tail = "DWH1 99999999 00000000 " + std::string(3 * kMaxRecordBytes, '{');
  Spit(path_, first + tail);
  HistoryContents c = MustRead(path_);
  ASSERT_EQ(c.records.size(), 1u);
  EXPECT_TRUE(c.damaged.empty()) << c.damaged[0];
  EXPECT_EQ(c.torn_tail_bytes, tail.size());
  HistoryFile history(path_);
  ASSERT_TRUE(history.Append(Record("p", "s", 2)).ok());
  EXPECT_EQ(history.repaired_bytes(), tail.size());
  EXPECT_EQ(fs::file_size(path_), first.size() + Framed(DumpJson(Record("p", "s", 2))).size());
}

TEST_F(HistoryTest, ARecordWithTooManyKeysIsDamagedAndTheRestKept) {
  const auto with_results = [](std::size_t keys) {
    Json r = Record("keys", "s", 5);
    for (std::size_t i = 0; i < keys; ++i) r["results"]["k" + std::to_string(i)] = i;
    return r;
  };
  // results already holds two members.
  const Json most = with_results(kMaxJsonObjectMembers - 2);
  const std::string over = DumpJson(with_results(kMaxJsonObjectMembers - 1));
  const std::string first = Framed(DumpJson(Record("p", "s", 1)));
  Spit(path_, first + Framed(over) + Framed(DumpJson(most)));
  HistoryContents c = MustRead(path_);
  ASSERT_EQ(c.records.size(), 2u);
  EXPECT_EQ(c.records[0], Record("p", "s", 1));
  EXPECT_EQ(c.records[1], most);
  ASSERT_EQ(c.damaged.size(), 1u);
  const std::string bound = std::to_string(kMaxJsonObjectMembers);
  const std::size_t column = over.rfind(",\"k") + 2;
  EXPECT_EQ(c.damaged[0], "line 2 (offset " + std::to_string(first.size()) + "): JSON: column " +
                              std::to_string(column) + ": more than " + bound +
                              " members in one object (expected at most " + bound + ")");
}

// Every kind of damage names its line, counted in the file as it is.
TEST_F(HistoryTest, DamageIsNamedByLineAmongManyRecords) {
  std::string data;
  for (int i = 0; i < 40; ++i) data += Framed(DumpJson(Record("p", "s", i)));
  std::size_t offset = 0;
  for (int line = 1; line < 30; ++line) offset = data.find('\n', offset) + 1;
  data[offset + 80] ^= 0x01;  // line 30's JSON: its checksum fails
  Spit(path_, data);
  HistoryContents c = MustRead(path_);
  EXPECT_EQ(c.records.size(), 39u);
  ASSERT_EQ(c.damaged.size(), 1u);
  EXPECT_EQ(c.damaged[0].rfind("line 30 (offset " + std::to_string(offset) + "): checksum ", 0),
            0u)
      << c.damaged[0];
}

// ---- RenderHistory -----------------------------------------------------------

std::vector<Json> FixtureRecords() {
  Expected<HistoryContents> c =
      HistoryFile(kFixtures + "three_records.dwh").Read();
  EXPECT_TRUE(c.ok());
  return c.ok() ? c->records : std::vector<Json>{};
}

TEST(HistoryRenderTest, Table) {
  const std::string table =
      RenderHistory(FixtureRecords(), {}, HistoryFormat::kTable);
  EXPECT_EQ(table,
            "START (UTC)          PHASE           KIND  TARGET    SERIAL      "
            "    OUTCOME    DURATION  RESULTS\n"
            "2026-11-30 03:00:00  fill-half       fill  scratch   S5GXNX0R123"
            "456  completed  1h02m     written_bytes=465.76 GiB "
            "throughput_bytes_per_second=134.4 MB/s "
            "latency.p99_seconds=812 µs latency.max_seconds=21.3 ms\n"
            "2026-12-01 03:00:00  retention-read  read  scratch   S5GXNX0R123"
            "456  aborted    42s       read_bytes=1.00 GiB mismatched_blocks=0 "
            "reason=\"composite temperature 71 C, warning 70 C\"\n"
            "2026-12-02 03:00:00  fill-half       fill  lab-file  PHBT8123456"
            "78   completed  10m05s    written_bytes=16.00 EiB "
            "fill_ratio=50.0% write_amplification=1.07\n");
}

TEST(HistoryRenderTest, TableFiltersBySerialAndPhase) {
  const std::vector<Json> records = FixtureRecords();
  const std::string by_serial = RenderHistory(
      records, {.serial = "PHBT812345678"}, HistoryFormat::kTable);
  EXPECT_EQ(by_serial,
            "START (UTC)          PHASE      KIND  TARGET    SERIAL         "
            "OUTCOME    DURATION  RESULTS\n"
            "2026-12-02 03:00:00  fill-half  fill  lab-file  PHBT812345678  "
            "completed  10m05s    written_bytes=16.00 EiB fill_ratio=50.0% "
            "write_amplification=1.07\n");
  const std::string by_phase = RenderHistory(
      records, {.phase = "retention-read"}, HistoryFormat::kTable);
  EXPECT_EQ(by_phase.substr(by_phase.find('\n') + 1),
            "2026-12-01 03:00:00  retention-read  read  scratch  "
            "S5GXNX0R123456  aborted  42s       read_bytes=1.00 GiB "
            "mismatched_blocks=0 reason=\"composite temperature 71 C, warning "
            "70 C\"\n");
  EXPECT_EQ(RenderHistory(records, {.serial = "S5GXNX0R123456",
                                    .phase = "fill-half"},
                          HistoryFormat::kTable)
                .find("retention-read"),
            std::string::npos);
}

TEST(HistoryRenderTest, EmptySelection) {
  const std::vector<Json> records = FixtureRecords();
  const HistoryFilter none{.serial = "NOPE"};
  EXPECT_EQ(RenderHistory(records, none, HistoryFormat::kTable),
            "START (UTC)  PHASE  KIND  TARGET  SERIAL  OUTCOME  DURATION  "
            "RESULTS\n");
  EXPECT_EQ(RenderHistory(records, none, HistoryFormat::kJson), "");
  EXPECT_EQ(RenderHistory(records, none, HistoryFormat::kCsv),
            "version,run,phase,kind,target,serial,model,firmware,start,end,"
            "duration_seconds,outcome,reason\n");
  EXPECT_EQ(RenderHistory({}, {}, HistoryFormat::kJson), "");
}

TEST(HistoryRenderTest, JsonLines) {
  const std::vector<Json> records = FixtureRecords();
  const std::string out = RenderHistory(records, {.serial = "S5GXNX0R123456"},
                                        HistoryFormat::kJson);
  std::istringstream lines(out);
  std::string line;
  std::vector<Json> back;
  while (std::getline(lines, line)) {
    Expected<Json> j = ParseJson(line);
    ASSERT_TRUE(j.ok()) << line;
    back.push_back(*j);
  }
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0], records[0]);
  EXPECT_EQ(back[1], records[1]);
  EXPECT_EQ(out, DumpJson(records[0]) + "\n" + DumpJson(records[1]) + "\n");
}

TEST(HistoryRenderTest, Csv) {
  const std::string csv =
      RenderHistory(FixtureRecords(), {}, HistoryFormat::kCsv);
  EXPECT_EQ(csv,
            "version,run,phase,kind,target,serial,model,firmware,start,end,"
            "duration_seconds,outcome,reason,results.written_bytes,"
            "results.throughput_bytes_per_second,results.latency.p99_seconds,"
            "results.latency.max_seconds,results.read_bytes,"
            "results.mismatched_blocks,results.fill_ratio,"
            "results.write_amplification\n"
            "1,20261130T030000-fill-half,fill-half,fill,scratch,S5GXNX0R123456,"
            "Samsung SSD 980 PRO 1TB,5B2QGXA7,1796007600,1796011320,3720,"
            "completed,,500107862016,134437597.3,0.000812,0.0213,,,,\n"
            "1,20261201T030000-retention-read,retention-read,read,scratch,"
            "S5GXNX0R123456,Samsung SSD 980 PRO 1TB,5B2QGXA7,1796094000,"
            "1796094042,42,aborted,\"composite temperature 71 C, warning 70 "
            "C\",,,,,1073741824,0,,\n"
            "1,20261202T030000-fill-half,fill-half,fill,lab-file,PHBT812345678,"
            "INTEL SSDPEKNW010T8,004C,1796180400,1796181005,605,completed,,"
            "18446744073709551615,,,,,,0.5,1.07\n");
}

TEST(HistoryRenderTest, TableHumanizesUnitsAndCopesWithOddRecords) {
  Json r;
  r["phase"] = "odd\tphase\nname";
  r["start"] = 0;
  r["end"] = 90061;  // 1 day, 1 hour, 1 minute, 1 second: no duration field
  r["results"]["tiny_seconds"] = 0.0000004;
  r["results"]["slow_seconds"] = 2.5;
  r["results"]["block_size_bytes"] = 4096;
  r["results"]["small_bytes"] = 512;
  r["results"]["label"] = "two words";
  r["results"]["iops"] = 1234.5678;
  r["results"]["points"].push_back(1);  // arrays are left out
  const std::string table = RenderHistory({r}, {}, HistoryFormat::kTable);
  EXPECT_EQ(table.substr(table.find('\n') + 1),
            "1970-01-01 00:00:00  odd phase name  -     -       -       -      "
            "  1d01h     tiny_seconds=0.4 µs slow_seconds=2.5 s "
            "block_size_bytes=4.0 KiB small_bytes=512 B "
            "label=\"two words\" iops=1234.57\n");
}

TEST(HistoryRenderTest, CsvQuotesPerRfc4180) {
  Json r;
  r["phase"] = "p";
  r["reason"] = "said \"no\", twice\nthen stopped";
  r["results"]["deep"]["er"] = 1;
  r["results"]["list"].push_back(1);
  const std::string csv = RenderHistory({r}, {}, HistoryFormat::kCsv);
  EXPECT_EQ(csv,
            "version,run,phase,kind,target,serial,model,firmware,start,end,"
            "duration_seconds,outcome,reason,results.deep.er\n"
            ",,p,,,,,,,,,,\"said \"\"no\"\", twice\nthen stopped\",1\n");
}

TEST(HistoryRenderTest, CsvOfARecordWithManyFieldsKeepsTheirOrder) {
  Json r;
  r["phase"] = "p";
  for (std::size_t i = 0; i < kMaxJsonObjectMembers; ++i) {
    r["results"]["k" + std::to_string(i)] = i;
  }
  // Two fields with one flattened name: the first is shown.
  r["results.k0"] = "second";
  const std::string csv = RenderHistory({r, Record("p", "s", 1)}, {}, HistoryFormat::kCsv);
  const std::string header = csv.substr(0, csv.find('\n'));
  const std::string row = csv.substr(header.size() + 1, csv.find('\n', header.size() + 1) - header.size() - 1);
  EXPECT_EQ(std::count(header.begin(), header.end(), ','), 12 + kMaxJsonObjectMembers + 2);
  EXPECT_NE(header.find(",reason,results.k0,results.k1,"), std::string::npos);
  EXPECT_TRUE(header.ends_with(",results.k9999,results.written_bytes,"
                               "results.throughput_bytes_per_second"))
      << header.substr(header.size() - 100);
  EXPECT_TRUE(row.starts_with(",,p,,,,,,,,,,,0,1,2,")) << row.substr(0, 40);
  EXPECT_TRUE(row.ends_with(",9998,9999,,")) << row.substr(row.size() - 40);
}

}  // namespace
}  // namespace drivewatch::aging
