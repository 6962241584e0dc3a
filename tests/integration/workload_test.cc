// SPDX-License-Identifier: Apache-2.0
// The workload engine on real io_uring: a file in /var/tmp and a loop
// device backed by one (root, as in CI). What the engine wrote is read back
// with plain pread and checked chunk by chunk (aging/engine/data_pattern.h).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "aging/engine/data_pattern.h"
#include "aging/engine/workload.h"

namespace drivewatch::aging {
namespace {

constexpr std::uint64_t kKiB = 1024;
constexpr std::uint64_t kMiB = 1024 * 1024;

std::string TempFile(std::uint64_t size) {
  char name[] = "/var/tmp/dw_workload_test.XXXXXX";
  const int fd = mkstemp(name);
  if (fd < 0) return "";
  // Allocated, so O_DIRECT writes never extend or allocate mid-run.
  const bool ok = fallocate(fd, 0, 0, static_cast<off_t>(size)) == 0;
  close(fd);
  return ok ? name : "";
}

// `size` bytes at `offset`, through the page cache (coherent with O_DIRECT
// writes, which invalidate it).
std::vector<unsigned char> ReadBack(const std::string& path, std::uint64_t offset,
                                    std::uint64_t size) {
  std::vector<unsigned char> data(size);
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  if (pread(fd, data.data(), size, static_cast<off_t>(offset)) !=
      static_cast<ssize_t>(size)) {
    data.clear();
  }
  close(fd);
  return data;
}

// The verdict of every 4 KiB chunk in [offset, offset + size).
std::vector<ChunkVerdict> Verify(const std::string& path, std::uint64_t offset,
                                 std::uint64_t size, std::uint64_t data_seed) {
  const std::vector<unsigned char> data = ReadBack(path, offset, size);
  std::vector<ChunkVerdict> out;
  for (std::uint64_t at = 0; at + kChunkSize <= data.size(); at += kChunkSize) {
    out.push_back(VerifyChunk(data.data() + at, kChunkSize, offset + at, data_seed));
  }
  return out;
}

WorkloadResult RunOk(WorkloadTarget& target, const WorkloadSpec& spec,
                   const std::stop_token& stop = {}) {
  auto r = RunWorkload(target, spec, stop);
  EXPECT_TRUE(r) << r.error().message;
  return r ? std::move(*r) : WorkloadResult{};
}

WorkloadSpec Spec(std::uint32_t read, std::uint32_t write, std::uint32_t trim,
                  std::uint32_t block_size, std::uint32_t queue_depth) {
  WorkloadSpec s;
  s.read_percent = read;
  s.write_percent = write;
  s.trim_percent = trim;
  s.block_size = block_size;
  s.queue_depth = queue_depth;
  return s;
}

// A field of the /proc/self/smaps mapping holding `p` ("AnonHugePages",
// in kB; "THPeligible", 0 or 1); -1 when no mapping holds it.
long SmapsField(const void* p, const std::string& field) {
  std::FILE* f = std::fopen("/proc/self/smaps", "re");
  if (f == nullptr) return -1;
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  const std::string format = field + ": %ld";
  char line[512];
  bool inside = false;
  long value = -1;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {  // a mapping's first line
      inside = at >= lo && at < hi;
      continue;
    }
    long v = 0;
    if (inside && std::sscanf(line, format.c_str(), &v) == 1) {
      value = v;
      break;
    }
  }
  std::fclose(f);
  return value;
}

// /proc/vmstat's thp_fault_fallback: huge page faults the kernel could not
// serve (no free huge page at hand), machine-wide.
long ThpFaultFallbacks() {
  std::FILE* f = std::fopen("/proc/vmstat", "re");
  if (f == nullptr) return -1;
  char line[128];
  long n = -1;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::sscanf(line, "thp_fault_fallback %ld", &n) == 1) break;
  }
  std::fclose(f);
  return n;
}

// Transparent huge pages are on for an madvise()d mapping.
bool HugePagesOnRequest() {
  std::FILE* f = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "re");
  if (f == nullptr) return false;
  char line[128] = {};
  const bool read = std::fgets(line, sizeof line, f) != nullptr;
  std::fclose(f);
  return read && (std::strstr(line, "[always]") != nullptr || std::strstr(line, "[madvise]") != nullptr);
}

class WorkloadFile : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = TempFile(kSize);
    ASSERT_FALSE(path_.empty());
    auto t = WorkloadTarget::Open(path_, WorkloadTarget::kReadWrite);
    ASSERT_TRUE(t) << t.error().message;
    target_ = std::move(*t);
  }
  void TearDown() override {
    target_.reset();
    if (!path_.empty()) unlink(path_.c_str());
  }
  static constexpr std::uint64_t kSize = 16 * kMiB;
  std::string path_;
  std::unique_ptr<WorkloadTarget> target_;
};

TEST_F(WorkloadFile, SequentialWriteReadsBackStamped) {
  WorkloadSpec s = Spec(0, 100, 0, 64 * kKiB, 8);
  s.offset = 1 * kMiB;
  s.length = 4 * kMiB;
  s.data_seed = 77;
  const WorkloadResult r = RunOk(*target_, s);
  EXPECT_EQ(r.end, WorkloadResult::End::kCompleted);
  EXPECT_EQ(r.errors, 0u) << r.first_error;
  EXPECT_EQ(r.total.write_bytes, 4 * kMiB);
  EXPECT_EQ(r.total.write_ios, 64u);
  EXPECT_EQ(r.write_latency.count(), 64u);
  EXPECT_GT(r.write_latency.Quantile(0.5), 0);
  EXPECT_EQ(r.next_start, 4 * kMiB);
  EXPECT_FALSE(r.samples.empty());

  std::set<std::uint64_t> sequences;
  for (const ChunkVerdict& v : Verify(path_, 1 * kMiB, 4 * kMiB, 77)) {
    ASSERT_EQ(v.check, ChunkCheck::kOk) << ToString(v.check);
    sequences.insert(v.header.sequence);
  }
  EXPECT_EQ(sequences.size(), 64u);  // one per write
  // Nothing outside the region was written.
  for (const ChunkVerdict& v : Verify(path_, 0, 1 * kMiB, 77)) {
    ASSERT_EQ(v.check, ChunkCheck::kUnwritten);
  }
  for (const ChunkVerdict& v : Verify(path_, 5 * kMiB, 1 * kMiB, 77)) {
    ASSERT_EQ(v.check, ChunkCheck::kUnwritten);
  }
  // The engine reads it back without error; another seed would not verify.
  WorkloadSpec read = Spec(100, 0, 0, 64 * kKiB, 8);
  read.offset = 1 * kMiB;
  read.length = 4 * kMiB;
  const WorkloadResult rr = RunOk(*target_, read);
  EXPECT_EQ(rr.errors, 0u) << rr.first_error;
  EXPECT_EQ(rr.total.read_ios, 64u);
  EXPECT_EQ(Verify(path_, 1 * kMiB, 4 * kKiB, 78)[0].check, ChunkCheck::kWrongSeed);
}

// on_read sees each read's own bytes, though its check runs after the
// freed slots have been given new reads (into spare buffers of the pool):
// the whole file written by the engine, read back at random at QD16 with
// every 4 KiB chunk checked in the hook against the offset it came from.
TEST_F(WorkloadFile, ReadHooksSeeTheirOwnBytesWhileTheNextReadsAreInFlight) {
  WorkloadSpec w = Spec(0, 100, 0, 64 * kKiB, 16);
  w.data_seed = 5;
  ASSERT_EQ(RunOk(*target_, w).total.write_bytes, kSize);

  WorkloadSpec s = Spec(100, 0, 0, 64 * kKiB, 16);
  s.access = Access::kRandom;
  s.max_bytes = kSize;  // one pass: the permutation visits each block once
  std::set<std::uintptr_t> buffers;
  std::set<std::uint64_t> offsets;
  std::uint64_t chunks = 0, bad = 0;
  s.on_read = [&](std::uint64_t offset, const void* data, std::uint32_t size, int result,
                  std::uint64_t latency_ns) {
    EXPECT_EQ(result, static_cast<int>(size));
    EXPECT_GT(latency_ns, 0u);
    buffers.insert(reinterpret_cast<std::uintptr_t>(data));
    offsets.insert(offset);
    for (std::uint32_t at = 0; at < size; at += kChunkSize, ++chunks) {
      const ChunkVerdict v =
          VerifyChunk(static_cast<const unsigned char*>(data) + at, kChunkSize, offset + at, 5);
      bad += v.check != ChunkCheck::kOk;
    }
  };
  const WorkloadResult r = RunOk(*target_, s);
  EXPECT_EQ(r.errors, 0u) << r.first_error;
  EXPECT_EQ(r.total.read_ios, kSize / (64 * kKiB));
  EXPECT_EQ(offsets.size(), kSize / (64 * kKiB));  // each block once, each seen once
  EXPECT_EQ(chunks, kSize / kChunkSize);
  EXPECT_EQ(bad, 0u);
  EXPECT_GT(buffers.size(), 16u);
  EXPECT_LE(buffers.size(), 32u);
}

TEST_F(WorkloadFile, RandomWriteCoversTheRegionOncePerPassAndStaysInIt) {
  // One pass of 4 KiB random writes over 256 blocks: every block once.
  WorkloadSpec s = Spec(0, 100, 0, 4 * kKiB, 16);
  s.access = Access::kRandom;
  s.offset = 2 * kMiB;
  s.length = 1 * kMiB;
  s.max_bytes = 1 * kMiB;
  s.seed = 5;
  const WorkloadResult r = RunOk(*target_, s);
  EXPECT_EQ(r.errors, 0u) << r.first_error;
  EXPECT_EQ(r.total.write_ios, 256u);
  std::set<std::uint64_t> sequences;
  std::vector<std::uint64_t> order(256);
  for (const ChunkVerdict& v : Verify(path_, 2 * kMiB, 1 * kMiB, s.data_seed)) {
    ASSERT_EQ(v.check, ChunkCheck::kOk);
    sequences.insert(v.header.sequence);
    order[v.header.sequence] = v.header.offset;
  }
  EXPECT_EQ(sequences.size(), 256u);
  // Not sequential in disguise: most neighbours in time are not neighbours
  // on the target.
  int adjacent = 0;
  for (std::size_t i = 1; i < order.size(); ++i) adjacent += order[i] == order[i - 1] + 4 * kKiB;
  EXPECT_LT(adjacent, 16);
  for (const ChunkVerdict& v : Verify(path_, 0, 2 * kMiB, s.data_seed)) {
    ASSERT_EQ(v.check, ChunkCheck::kUnwritten);
  }
  for (const ChunkVerdict& v : Verify(path_, 3 * kMiB, kSize - 3 * kMiB, s.data_seed)) {
    ASSERT_EQ(v.check, ChunkCheck::kUnwritten);
  }
}

TEST_F(WorkloadFile, RandomReadStaysInsideARegionEndingAtEndOfFile) {
  // A read past the end of the file would come back short and count.
  WorkloadSpec s = Spec(100, 0, 0, 4 * kKiB, 32);
  s.access = Access::kRandom;
  s.offset = kSize - 256 * kKiB;
  s.max_bytes = 4000 * 4 * kKiB;
  const WorkloadResult r = RunOk(*target_, s);
  EXPECT_EQ(r.errors, 0u) << r.first_error;
  EXPECT_EQ(r.total.read_ios, 4000u);
  EXPECT_EQ(r.read_latency.count(), 4000u);
}

TEST_F(WorkloadFile, FixedRateHoldsTheRate) {
  WorkloadSpec s = Spec(100, 0, 0, 4 * kKiB, 4);
  s.access = Access::kRandom;
  s.rate_iops = 200;
  s.max_time = std::chrono::seconds(2);
  int callbacks = 0;
  std::stop_source stop;
  auto r = RunWorkload(*target_, s, stop.get_token(),
                       [&](const WorkloadProgress& p) {
                         ++callbacks;
                         EXPECT_GT(p.fraction, 0);
                         EXPECT_LE(p.fraction, 1);
                       });
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_GE(r->total.ios(), 300u);
  EXPECT_LE(r->total.ios(), 500u);
  EXPECT_NEAR(r->total.seconds, 2.0, 0.3);
  EXPECT_GE(callbacks, 2);
  ASSERT_GE(r->samples.size(), 2u);
  EXPECT_NEAR(r->samples[0].iops(), 200, 30);
}

// Response latency counts from when a paced I/O was due, service latency
// from its submission (fio's). At a rate no device keeps up with, every
// I/O is issued late and the schedule's backlog grows, so the response
// quantiles hold the wait for a slot and the service ones do not; an
// unpaced run's two histograms are the same.
TEST_F(WorkloadFile, ALateIoCountsItsWaitInResponseLatencyNotInService) {
  WorkloadSpec s = Spec(100, 0, 0, 4 * kKiB, 1);
  s.access = Access::kRandom;
  s.rate_iops = 1e6;
  s.max_time = std::chrono::milliseconds(300);
  const WorkloadResult paced = RunOk(*target_, s);
  ASSERT_GT(paced.read_latency.count(), 20u);
  EXPECT_GT(paced.late, 0u);
  EXPECT_EQ(paced.read_service.count(), paced.read_latency.count());
  // By the run's middle the schedule is about 0.15 s ahead of the reads:
  // far more than any one read's own time.
  EXPECT_GT(paced.read_latency.Quantile(0.5), 10 * paced.read_service.Quantile(0.5))
      << "response p50 " << paced.read_latency.Quantile(0.5) << " s, service p50 "
      << paced.read_service.Quantile(0.5) << " s";
  EXPECT_LT(paced.read_service.Quantile(0.99), paced.read_latency.Quantile(0.99));

  WorkloadSpec unpaced = Spec(100, 0, 0, 4 * kKiB, 4);
  unpaced.access = Access::kRandom;
  unpaced.max_bytes = 400 * 4 * kKiB;
  const WorkloadResult r = RunOk(*target_, unpaced);
  EXPECT_EQ(r.read_service.count(), r.read_latency.count());
  for (double q : {0.5, 0.99, 0.999}) {
    EXPECT_EQ(r.read_service.Quantile(q), r.read_latency.Quantile(q)) << q;
  }
}

TEST_F(WorkloadFile, BoundsByBytesTimeAndRegion) {
  WorkloadSpec bytes = Spec(0, 100, 0, 16 * kKiB, 4);
  bytes.wrap = true;
  bytes.length = 64 * kKiB;
  bytes.max_bytes = 10 * 16 * kKiB;
  EXPECT_EQ(RunOk(*target_, bytes).total.write_ios, 10u);

  WorkloadSpec time = Spec(100, 0, 0, 4 * kKiB, 4);
  time.access = Access::kRandom;
  time.max_time = std::chrono::milliseconds(300);
  const WorkloadResult t = RunOk(*target_, time);
  EXPECT_EQ(t.end, WorkloadResult::End::kCompleted);
  EXPECT_GE(t.total.seconds, 0.3);
  EXPECT_LT(t.total.seconds, 0.6);

  WorkloadSpec region = Spec(100, 0, 0, 8 * kKiB, 4);
  region.offset = 8 * kKiB;
  region.length = 8 * 8 * kKiB;
  region.start = 3 * 8 * kKiB;
  const WorkloadResult g = RunOk(*target_, region);
  EXPECT_EQ(g.total.read_ios, 5u);  // from block 3 to the region's end
  EXPECT_EQ(g.next_start, region.length);
}

TEST_F(WorkloadFile, SequentialWrapsToTheRegionStart) {
  // Blocks 2, 3, 0, 1, 2, 3 of a 4-block region.
  WorkloadSpec s = Spec(0, 100, 0, 4 * kKiB, 1);
  s.offset = 1 * kMiB;
  s.length = 4 * 4 * kKiB;
  s.start = 2 * 4 * kKiB;
  s.wrap = true;
  s.max_bytes = 6 * 4 * kKiB;
  const WorkloadResult r = RunOk(*target_, s);
  EXPECT_EQ(r.total.write_ios, 6u);
  EXPECT_EQ(r.next_start, 0u);
  const std::vector<ChunkVerdict> v = Verify(path_, 1 * kMiB, 4 * 4 * kKiB, s.data_seed);
  ASSERT_EQ(v.size(), 4u);
  const std::uint64_t expected[] = {2, 3, 4, 5};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(v[i].check, ChunkCheck::kOk);
    EXPECT_EQ(v[i].header.sequence, expected[i]) << "block " << i;
  }
}

TEST_F(WorkloadFile, MixedRatioIsExactOver100Ios) {
  WorkloadSpec s = Spec(70, 20, 10, 4 * kKiB, 4);
  s.access = Access::kRandom;
  s.max_bytes = 100 * 4 * kKiB;
  const WorkloadResult r = RunOk(*target_, s);
  EXPECT_EQ(r.errors, 0u) << r.first_error;
  EXPECT_EQ(r.total.read_ios, 70u);
  EXPECT_EQ(r.total.write_ios, 20u);
  EXPECT_EQ(r.total.trim_ios, 10u);
  EXPECT_EQ(r.trim_latency.count(), 10u);
}

TEST_F(WorkloadFile, SizeMixAndLbaZonesHoldTheirSharesAndAlignment) {
  // 20000 reads of a 4/8/64 KiB mix over a 50/30/20 skew of a 15 MiB region:
  // every I/O seen as it completes (on_read) for its size and offset.
  WorkloadSpec s = Spec(100, 0, 0, 64 * kKiB, 16);
  s.access = Access::kRandom;
  s.offset = 1 * kMiB;
  s.length = 15 * kMiB;
  s.size_mix = {{4 * kKiB, 60}, {8 * kKiB, 30}, {64 * kKiB, 10}};
  s.lba_zones = {{5, 50}, {15, 30}, {80, 20}};
  s.seed = 9;
  std::uint64_t by_size[3] = {}, by_zone[3] = {}, bytes = 0, misaligned = 0, outside = 0;
  std::uint64_t reads = 0;
  s.on_read = [&](std::uint64_t offset, const void*, std::uint32_t size, int result,
                  std::uint64_t) {
    ++reads;
    bytes += size;
    by_size[size == 4 * kKiB ? 0 : size == 8 * kKiB ? 1 : 2]++;
    misaligned += offset % (4 * kKiB) != 0 || result != static_cast<int>(size);
    outside += offset < s.offset || offset + size > s.offset + s.length;
    const double at = static_cast<double>(offset - s.offset) / static_cast<double>(s.length);
    by_zone[at < 0.05 ? 0 : at < 0.20 ? 1 : 2]++;
  };
  s.max_time = std::chrono::seconds(30);  // a safety bound; the bytes end it
  // About 20000 I/Os: max_bytes of their mean size.
  s.max_bytes = 20000ull * (4 * 60 + 8 * 30 + 64 * 10) * kKiB / 100;
  const WorkloadResult r = RunOk(*target_, s);
  EXPECT_EQ(r.errors, 0u) << r.first_error;
  ASSERT_GT(reads, 15000u);
  EXPECT_EQ(r.total.read_ios, reads);
  EXPECT_EQ(r.total.read_bytes, bytes);  // each I/O counts its own size
  EXPECT_EQ(misaligned, 0u);
  EXPECT_EQ(outside, 0u);
  const double n = static_cast<double>(reads);
  EXPECT_NEAR(by_size[0] / n, 0.60, 0.02);
  EXPECT_NEAR(by_size[1] / n, 0.30, 0.02);
  EXPECT_NEAR(by_size[2] / n, 0.10, 0.02);
  EXPECT_NEAR(by_zone[0] / n, 0.50, 0.02);
  EXPECT_NEAR(by_zone[1] / n, 0.30, 0.02);
  EXPECT_NEAR(by_zone[2] / n, 0.20, 0.02);
  EXPECT_NE(Describe(s).find("mixed sizes up to 64KiB skewed over 3 zones"), std::string::npos)
      << Describe(s);

  // Writes of the same mix land whole: the bytes counted are the bytes asked.
  WorkloadSpec w = s;
  w.on_read = nullptr;
  w.read_percent = 0;
  w.write_percent = 100;
  w.max_bytes = 4 * kMiB;
  const WorkloadResult wr = RunOk(*target_, w);
  EXPECT_EQ(wr.errors, 0u) << wr.first_error;
  EXPECT_GE(wr.total.write_bytes, 4 * kMiB);
  EXPECT_LT(wr.total.write_bytes, 4 * kMiB + 64 * kKiB);
  // Nothing before the region was written.
  for (const ChunkVerdict& v : Verify(path_, 0, 1 * kMiB, w.data_seed)) {
    ASSERT_EQ(v.check, ChunkCheck::kUnwritten);
  }
}

TEST_F(WorkloadFile, SizeMixAndLbaZonesAreChecked) {
  WorkloadSpec s = Spec(0, 100, 0, 64 * kKiB, 4);
  s.access = Access::kRandom;
  s.max_bytes = 1 * kMiB;
  s.size_mix = {{4 * kKiB, 50}, {64 * kKiB, 40}};
  auto r = RunWorkload(*target_, s, {});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("size_mix: percents sum to 90"), std::string::npos)
      << r.error().message;
  s.size_mix = {{4 * kKiB, 60}, {8 * kKiB, 40}};  // block_size 64 KiB is not the largest
  r = RunWorkload(*target_, s, {});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("the largest size"), std::string::npos) << r.error().message;
  s.size_mix = {};
  s.lba_zones = {{5, 50}, {15, 30}, {70, 20}};
  r = RunWorkload(*target_, s, {});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("region_percent to 90"), std::string::npos)
      << r.error().message;
  s.lba_zones = {{100, 100}};
  s.access = Access::kSequential;
  r = RunWorkload(*target_, s, {});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("expected random access"), std::string::npos)
      << r.error().message;
}

TEST_F(WorkloadFile, TrimPunchesHoles) {
  WorkloadSpec w = Spec(0, 100, 0, 64 * kKiB, 8);
  w.length = 4 * kMiB;
  ASSERT_EQ(RunOk(*target_, w).errors, 0u);
  struct stat before {};
  ASSERT_EQ(stat(path_.c_str(), &before), 0);

  WorkloadSpec t = Spec(0, 0, 100, 64 * kKiB, 8);
  t.offset = 1 * kMiB;
  t.length = 1 * kMiB;
  const WorkloadResult r = RunOk(*target_, t);
  EXPECT_EQ(r.errors, 0u) << r.first_error;
  EXPECT_EQ(r.total.trim_ios, 16u);
  EXPECT_EQ(r.total.trim_bytes, 1 * kMiB);
  EXPECT_EQ(r.trim_latency.count(), 16u);

  struct stat after {};
  ASSERT_EQ(stat(path_.c_str(), &after), 0);
  EXPECT_EQ(after.st_size, before.st_size);  // FALLOC_FL_KEEP_SIZE
  EXPECT_LE(after.st_blocks, before.st_blocks - static_cast<blkcnt_t>(kMiB / 512));
  const int fd = open(path_.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(lseek(fd, 0, SEEK_HOLE), static_cast<off_t>(1 * kMiB));
  EXPECT_EQ(lseek(fd, 1 * kMiB, SEEK_DATA), static_cast<off_t>(2 * kMiB));
  close(fd);
  EXPECT_EQ(Verify(path_, 1 * kMiB, 4 * kKiB, w.data_seed)[0].check, ChunkCheck::kUnwritten);
  EXPECT_EQ(Verify(path_, 2 * kMiB, 4 * kKiB, w.data_seed)[0].check, ChunkCheck::kOk);
}

TEST_F(WorkloadFile, ShortReadsPastEndOfFileAreErrors) {
  // The file shrinks under the open target: reads of the lost tail come
  // back short (or empty), each counted once, none fatal.
  ASSERT_EQ(truncate(path_.c_str(), 8 * kMiB - 32 * kKiB), 0);
  WorkloadSpec s = Spec(100, 0, 0, 64 * kKiB, 1);
  s.offset = 8 * kMiB - 64 * kKiB;
  s.length = 4 * 64 * kKiB;
  s.max_errors = 0;
  WorkloadResult r = RunOk(*target_, s);
  EXPECT_EQ(r.end, WorkloadResult::End::kCompleted);
  EXPECT_EQ(r.errors, 4u);
  EXPECT_EQ(r.total.read_ios, 0u);
  EXPECT_EQ(r.first_error.rfind("read at offset " + std::to_string(8 * kMiB - 64 * kKiB) +
                                ": short transfer, 32768 of 65536 bytes", 0), 0u)
      << r.first_error;

  s.max_errors = 2;
  r = RunOk(*target_, s);
  EXPECT_EQ(r.end, WorkloadResult::End::kErrors);
  EXPECT_EQ(r.errors, 2u);  // QD1: nothing else was in flight
}

// The stop ends the wait for the next arrival, 30 s away: a run that
// waited for it instead would take that long. The bound is a third of it,
// room for any load on the machine, so the test says the same on every run.
TEST_F(WorkloadFile, StopIsNoticedPromptly) {
  WorkloadSpec s = Spec(100, 0, 0, 4 * kKiB, 8);
  s.access = Access::kRandom;
  s.rate_iops = 1.0 / 30;  // one arrival now, the next in 30 s
  s.max_time = std::chrono::seconds(120);
  std::stop_source stop;
  std::chrono::steady_clock::time_point stopped_at;
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stopped_at = std::chrono::steady_clock::now();
    stop.request_stop();
  });
  const WorkloadResult r = RunOk(*target_, s, stop.get_token());
  const auto ended_at = std::chrono::steady_clock::now();
  stopper.join();
  EXPECT_EQ(r.end, WorkloadResult::End::kStopped);
  EXPECT_LT(ended_at - stopped_at, std::chrono::seconds(10));
}

// Buffers start on a page even when the block size is not whole pages (a
// replay's largest I/O plus a logical block): 4608-byte reads land in
// buffers 8 KiB apart, each on its own page boundary. (Reads seen by
// on_read use a pool of 2 x QD buffers: more than QD of them, at most 2 x.)
TEST_F(WorkloadFile, BuffersOfAnOddBlockSizeStartOnPages) {
  constexpr std::uint32_t kBlock = 4608;
  WorkloadSpec s = Spec(100, 0, 0, kBlock, 8);
  s.length = 64 * kBlock;
  std::set<std::uintptr_t> buffers;
  s.on_read = [&](std::uint64_t, const void* data, std::uint32_t size, int result, std::uint64_t) {
    EXPECT_EQ(result, static_cast<int>(size));
    buffers.insert(reinterpret_cast<std::uintptr_t>(data));
  };
  const WorkloadResult r = RunOk(*target_, s);
  EXPECT_EQ(r.errors, 0u) << r.first_error;
  EXPECT_EQ(r.total.read_ios, 64u);
  // The ninth read goes out while a completed one's buffer waits for its
  // check.
  ASSERT_GT(buffers.size(), 8u);
  ASSERT_LE(buffers.size(), 16u);
  for (std::uintptr_t b : buffers) {
    EXPECT_EQ(b % 4096, 0u) << std::hex << b;
    EXPECT_EQ((b - *buffers.begin()) % 8192, 0u) << std::hex << b;
  }
}

// 2 MiB reads at QD4 seen by on_read: a pool of 8 buffers (16 MiB), each
// on a 2 MiB boundary, and (where transparent huge pages are on for
// madvise()d memory) on huge pages: on 4 KiB pages a 2 MiB buffer is 512 scattered segments, which a
// device with fewer segments per request splits (docs/aging.md "Buffers").
TEST_F(WorkloadFile, LargeBuffersSitOnHugePages) {
  constexpr std::uint32_t kBlock = 2 * kMiB;
  WorkloadSpec s = Spec(100, 0, 0, kBlock, 4);
  s.length = 8 * kBlock;
  std::set<std::uintptr_t> buffers;
  long huge_kib = -1, eligible = -1;
  const long fallbacks_before = ThpFaultFallbacks();
  s.on_read = [&](std::uint64_t, const void* data, std::uint32_t size, int result, std::uint64_t) {
    EXPECT_EQ(result, static_cast<int>(size));
    if (buffers.insert(reinterpret_cast<std::uintptr_t>(data)).second && huge_kib < 0) {
      huge_kib = SmapsField(data, "AnonHugePages");
      eligible = SmapsField(data, "THPeligible");
    }
  };
  const WorkloadResult r = RunOk(*target_, s);
  const long fallbacks = ThpFaultFallbacks() - fallbacks_before;
  EXPECT_EQ(r.errors, 0u) << r.first_error;
  EXPECT_EQ(r.total.read_ios, 8u);
  // The on_read pool: 2 x QD buffers of 2 MiB, 16 MiB in all. The fifth
  // read goes out while the first completed one's buffer waits for its
  // check, so more than QD are used.
  ASSERT_GT(buffers.size(), 4u);
  ASSERT_LE(buffers.size(), 8u);
  for (std::uintptr_t b : buffers) EXPECT_EQ(b % kBlock, 0u) << std::hex << b;
  ASSERT_GE(huge_kib, 0) << "no mapping in /proc/self/smaps holds the buffers";
  if (!HugePagesOnRequest()) {
    GTEST_SKIP() << "transparent huge pages are off here; alignment checked only";
  }
  // What the engine controls: the mapping asks for huge pages.
  EXPECT_EQ(eligible, 1) << "the buffers' mapping is not THPeligible";
  // What the kernel makes of it: at least half on huge pages, unless it
  // said it had none at hand (a fragmented machine; the I/O is then
  // slower on some devices, never wrong).
  if (huge_kib < 8 * 1024 && fallbacks > 0) {
    GTEST_SKIP() << "the kernel fell back to 4 KiB pages " << fallbacks
                 << " times during the run; " << huge_kib << " KiB of 16 MiB on huge pages";
  }
  EXPECT_GE(huge_kib, 8 * 1024) << "KiB of 16 MiB of buffers on huge pages";
}

// jobs = 4 over a region of 66 blocks: slices of 17, 17, 16 and 16 blocks,
// each written once, in order, by its own job with its own data seed.
TEST_F(WorkloadFile, FourJobsWriteEachSequentialBlockOnceInTheirSlices) {
  constexpr std::uint64_t kBlock = 64 * kKiB;
  WorkloadSpec s = Spec(0, 100, 0, kBlock, 4);
  s.jobs = 4;
  s.offset = 1 * kMiB;
  s.length = 66 * kBlock;
  s.data_seed = 40;
  std::vector<WorkloadProgress> seen;
  auto run = RunWorkload(*target_, s, {}, [&](const WorkloadProgress& p) { seen.push_back(p); });
  ASSERT_TRUE(run) << run.error().message;
  const WorkloadResult& r = *run;
  EXPECT_EQ(r.end, WorkloadResult::End::kCompleted);
  EXPECT_EQ(r.errors, 0u) << r.first_error;
  EXPECT_EQ(r.total.write_bytes, 66 * kBlock);
  EXPECT_EQ(r.total.write_ios, 66u);
  EXPECT_EQ(r.write_latency.count(), 66u);
  EXPECT_EQ(r.read_latency.count() + r.trim_latency.count(), 0u);
  EXPECT_EQ(r.next_start, 0u);
  // The samples add up to the total, and the progress saw the same seconds.
  ASSERT_FALSE(r.samples.empty());
  std::uint64_t sampled = 0;
  for (const ThroughputSample& x : r.samples) sampled += x.write_ios;
  EXPECT_EQ(sampled, 66u);
  ASSERT_EQ(seen.size(), r.samples.size());
  EXPECT_EQ(seen.back().bytes_done, 66 * kBlock);
  EXPECT_DOUBLE_EQ(seen.back().fraction, 1.0);
  for (std::size_t k = 0; k < seen.size(); ++k) {
    EXPECT_EQ(seen[k].last_second.write_ios, r.samples[k].write_ios) << k;
  }

  const std::uint64_t slices[] = {17, 17, 16, 16};
  std::uint64_t block = 0;
  for (std::uint64_t j = 0; j < 4; ++j) {
    for (std::uint64_t b = 0; b < slices[j]; ++b, ++block) {
      const std::uint64_t at = s.offset + block * kBlock;
      for (const ChunkVerdict& v : Verify(path_, at, kBlock, s.data_seed + j)) {
        ASSERT_EQ(v.check, ChunkCheck::kOk) << "job " << j << " block " << b;
        ASSERT_EQ(v.header.sequence, b) << "job " << j << " block " << b;
      }
    }
  }
  for (const ChunkVerdict& v : Verify(path_, 0, 1 * kMiB, s.data_seed)) {
    ASSERT_EQ(v.check, ChunkCheck::kUnwritten);
  }
  const std::uint64_t end = s.offset + s.length;
  for (const ChunkVerdict& v : Verify(path_, end, kSize - end, s.data_seed)) {
    ASSERT_EQ(v.check, ChunkCheck::kUnwritten);
  }
}

// Wrapping, each job stays in its slice: twice the region's bytes write
// every block twice, the second time with the sequence past the slice.
TEST_F(WorkloadFile, JobsWrapWithinTheirSlices) {
  WorkloadSpec s = Spec(0, 100, 0, 16 * kKiB, 2);
  s.jobs = 2;
  s.length = 10 * 16 * kKiB;
  s.wrap = true;
  s.max_bytes = 2 * s.length;
  const WorkloadResult r = RunOk(*target_, s);
  EXPECT_EQ(r.total.write_ios, 20u);
  for (std::uint64_t block = 0; block < 10; ++block) {
    const std::uint64_t job = block / 5;
    const std::vector<ChunkVerdict> v =
        Verify(path_, block * 16 * kKiB, 4 * kKiB, s.data_seed + job);
    ASSERT_EQ(v[0].check, ChunkCheck::kOk) << block;
    EXPECT_EQ(v[0].header.sequence, 5 + block % 5) << block;
  }
  EXPECT_EQ(Verify(path_, 10 * 16 * kKiB, 4 * kKiB, s.data_seed)[0].check, ChunkCheck::kUnwritten);
}

// max_bytes is the run's: 1001 blocks over two jobs (501 and 500), and a
// bound that is not whole blocks rounds up as one job's does.
TEST_F(WorkloadFile, TwoRandomJobsIssueExactlyTheBoundsBytes) {
  WorkloadSpec s = Spec(100, 0, 0, 4 * kKiB, 8);
  s.access = Access::kRandom;
  s.jobs = 2;
  s.max_bytes = 1001 * 4 * kKiB;
  WorkloadResult r = RunOk(*target_, s);
  EXPECT_EQ(r.end, WorkloadResult::End::kCompleted);
  EXPECT_EQ(r.errors, 0u) << r.first_error;
  EXPECT_EQ(r.total.read_bytes, 1001 * 4 * kKiB);
  EXPECT_EQ(r.total.read_ios, 1001u);
  EXPECT_EQ(r.read_latency.count(), 1001u);

  s.max_bytes = 1000 * 4 * kKiB + 1;
  r = RunOk(*target_, s);
  EXPECT_EQ(r.total.read_ios, 1001u);
  EXPECT_EQ(r.read_latency.count(), 1001u);
}

// A time-bound run's jobs share one start: their seconds close together,
// so the merged samples are whole seconds and the progress comes once a
// second, from the calling thread.
TEST_F(WorkloadFile, JobsSamplesLineUpSecondBySecond) {
  WorkloadSpec s = Spec(100, 0, 0, 4 * kKiB, 4);
  s.access = Access::kRandom;
  s.jobs = 2;
  s.max_time = std::chrono::milliseconds(2500);
  std::vector<WorkloadProgress> seen;
  const std::thread::id caller = std::this_thread::get_id();
  bool elsewhere = false;
  auto r = RunWorkload(*target_, s, {}, [&](const WorkloadProgress& p) {
    elsewhere |= std::this_thread::get_id() != caller;
    seen.push_back(p);
  });
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(elsewhere);
  EXPECT_EQ(r->errors, 0u) << r->first_error;
  ASSERT_EQ(r->samples.size(), 3u);
  EXPECT_DOUBLE_EQ(r->samples[0].seconds, 1.0);
  EXPECT_DOUBLE_EQ(r->samples[1].seconds, 1.0);
  EXPECT_NEAR(r->samples[2].seconds, 0.5, 0.2);
  EXPECT_NEAR(r->total.seconds, 2.5, 0.2);
  std::uint64_t ios = 0;
  for (const ThroughputSample& x : r->samples) ios += x.read_ios;
  EXPECT_EQ(ios, r->total.read_ios);
  EXPECT_EQ(r->read_latency.count(), r->total.read_ios);
  ASSERT_EQ(seen.size(), 3u);
  for (std::size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(seen[k].last_second.read_ios, r->samples[k].read_ios) << k;
  }
  EXPECT_EQ(seen[0].elapsed, std::chrono::seconds(1));
  EXPECT_EQ(seen[1].elapsed, std::chrono::seconds(2));
  EXPECT_NEAR(seen[0].fraction, 0.4, 0.01);
  EXPECT_EQ(seen[2].bytes_done, r->total.read_bytes);
}

class NoIo : public IoSource {
 public:
  std::optional<Io> Next() override { return std::nullopt; }
  double Fraction() const override { return 1; }
};

// Refused before any I/O: every spec here writes, and nothing is written.
TEST_F(WorkloadFile, JobsRefuseWhatOneJobOwns) {
  WorkloadSpec good = Spec(0, 100, 0, 64 * kKiB, 4);
  good.length = 1 * kMiB;
  good.jobs = 2;
  NoIo source;
  const std::pair<std::function<void(WorkloadSpec&)>, std::string> cases[] = {
      {[](WorkloadSpec& s) { s.fill = [](std::uint64_t, void*, std::uint32_t) {}; },
       "jobs 2 with a fill or on_read hook: expected jobs 1"},
      {[](WorkloadSpec& s) {
         s.read_percent = 50;
         s.write_percent = 50;
         s.on_read = [](std::uint64_t, const void*, std::uint32_t, int, std::uint64_t) {};
       },
       "jobs 2 with a fill or on_read hook: expected jobs 1"},
      {[&](WorkloadSpec& s) { s.source = &source; }, "jobs 2 with an I/O source: expected jobs 1"},
      {[](WorkloadSpec& s) {
         s.access = Access::kRandom;
         s.rate_iops = 100;
         s.max_bytes = 1 * kMiB;
       },
       "jobs 2 with rate_iops: expected jobs 1 in a paced run"},
      {[](WorkloadSpec& s) { s.jobs = 0; }, "jobs 0: expected 1 to 64"},
      {[](WorkloadSpec& s) { s.jobs = 65; }, "jobs 65: expected 1 to 64"},
      {[](WorkloadSpec& s) { s.queue_depth = 200; },
       "queue_depth 200 x jobs 2 = 400 I/Os in flight: expected at most 256"},
      {[](WorkloadSpec& s) { s.start = 64 * kKiB; }, "jobs 2 with start 65536: expected start 0"},
      {[](WorkloadSpec& s) {
         s.jobs = 32;
         s.queue_depth = 1;
       },
       "jobs 32 over a region of 16 blocks of 65536: expected at least one block per job"},
  };
  for (const auto& [change, expected] : cases) {
    WorkloadSpec s = good;
    change(s);
    auto r = RunWorkload(*target_, s, {});
    ASSERT_FALSE(r) << expected;
    EXPECT_NE(r.error().message.find(expected), std::string::npos) << r.error().message;
    EXPECT_EQ(r.error().message.rfind("workload on " + path_ + ": ", 0), 0u) << r.error().message;
  }
  for (const ChunkVerdict& v : Verify(path_, 0, 2 * kMiB, good.data_seed)) {
    ASSERT_EQ(v.check, ChunkCheck::kUnwritten);
  }
  EXPECT_EQ(RunOk(*target_, good).total.write_bytes, 1 * kMiB);  // and the good one runs
}

TEST_F(WorkloadFile, AStopStopsEveryJob) {
  WorkloadSpec s = Spec(100, 0, 0, 4 * kKiB, 4);
  s.access = Access::kRandom;
  s.jobs = 4;
  s.max_time = std::chrono::seconds(60);
  std::stop_source stop;
  std::chrono::steady_clock::time_point stopped_at;
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stopped_at = std::chrono::steady_clock::now();
    stop.request_stop();
  });
  const WorkloadResult r = RunOk(*target_, s, stop.get_token());
  const auto ended_at = std::chrono::steady_clock::now();
  stopper.join();
  EXPECT_EQ(r.end, WorkloadResult::End::kStopped);
  EXPECT_GT(r.total.read_ios, 0u);
  // A job that missed the stop would run to max_time (60 s); the bound
  // leaves any load on the machine room.
  EXPECT_LT(ended_at - stopped_at, std::chrono::seconds(20));

  // Stopped before it starts: no job issues anything.
  const WorkloadResult early = RunOk(*target_, s, stop.get_token());
  EXPECT_EQ(early.end, WorkloadResult::End::kStopped);
  EXPECT_EQ(early.total.ios(), 0u);
}

// One job reaching max_errors stops the others: job 1's slice lies past
// the end of the shrunk file, job 0's wraps over good blocks for a minute
// unless stopped.
TEST_F(WorkloadFile, OneJobsErrorsStopTheOthers) {
  ASSERT_EQ(truncate(path_.c_str(), kSize / 2), 0);
  WorkloadSpec s = Spec(100, 0, 0, 64 * kKiB, 1);
  s.jobs = 2;
  s.wrap = true;
  s.max_time = std::chrono::seconds(60);
  s.max_errors = 2;
  const auto begin = std::chrono::steady_clock::now();
  const WorkloadResult r = RunOk(*target_, s);
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(5));
  EXPECT_EQ(r.end, WorkloadResult::End::kErrors);
  EXPECT_EQ(r.errors, 2u);  // QD1: job 1 had nothing else in flight
  EXPECT_EQ(r.first_error.rfind("read at offset " + std::to_string(kSize / 2) + ": short", 0), 0u)
      << r.first_error;
  // (Whether job 0 read anything first is a race: job 1's reads past the
  // end fail at once.)
}

// A loop device over a file in /var/tmp; loop passes discard to the file
// as a hole punch.
class WorkloadLoop : public ::testing::Test {
 protected:
  void SetUp() override {
    file_ = TempFile(kSize);
    ASSERT_FALSE(file_.empty());
    FILE* p = popen(("losetup -f --show " + file_).c_str(), "r");
    ASSERT_NE(p, nullptr);
    char line[128] = {};
    if (fgets(line, sizeof(line), p) == nullptr) line[0] = '\0';
    pclose(p);
    device_ = line;
    while (!device_.empty() && device_.back() == '\n') device_.pop_back();
    ASSERT_EQ(device_.rfind("/dev/loop", 0), 0u) << "losetup: " << device_;
    auto t = WorkloadTarget::Open(device_, WorkloadTarget::kReadWrite);
    ASSERT_TRUE(t) << t.error().message;
    target_ = std::move(*t);
  }
  void TearDown() override {
    target_.reset();
    if (!device_.empty()) {
      EXPECT_EQ(std::system(("losetup -d " + device_).c_str()), 0);
    }
    if (!file_.empty()) unlink(file_.c_str());
  }
  static constexpr std::uint64_t kSize = 32 * kMiB;
  std::string file_, device_;
  std::unique_ptr<WorkloadTarget> target_;
};

TEST_F(WorkloadLoop, WriteVerifyAndDiscard) {
  EXPECT_TRUE(target_->is_block_device());
  EXPECT_EQ(target_->size(), kSize);
  EXPECT_EQ(target_->logical_block_size(), 512u);

  WorkloadSpec w = Spec(0, 100, 0, 128 * kKiB, 32);
  w.length = 8 * kMiB;
  w.data_seed = 9;
  WorkloadResult r = RunOk(*target_, w);
  EXPECT_EQ(r.errors, 0u) << r.first_error;
  EXPECT_EQ(r.total.write_bytes, 8 * kMiB);
  // Read back through the block device with O_DIRECT by the engine, and
  // through the page cache here.
  WorkloadSpec rd = Spec(100, 0, 0, 4 * kKiB, 32);
  rd.access = Access::kRandom;
  rd.length = 8 * kMiB;
  rd.max_bytes = 8 * kMiB;
  r = RunOk(*target_, rd);
  EXPECT_EQ(r.errors, 0u) << r.first_error;
  EXPECT_EQ(r.total.read_ios, 2048u);
  for (const ChunkVerdict& v : Verify(device_, 0, 8 * kMiB, 9)) {
    ASSERT_EQ(v.check, ChunkCheck::kOk) << ToString(v.check);
  }

  WorkloadSpec t = Spec(0, 0, 100, 1 * kMiB, 1);
  t.offset = 2 * kMiB;
  t.length = 2 * kMiB;
  r = RunOk(*target_, t);
  EXPECT_EQ(r.errors, 0u) << r.first_error;
  EXPECT_EQ(r.total.trim_ios, 2u);
  EXPECT_EQ(r.trim_latency.count(), 2u);
  // BLKDISCARD drops the device's page cache for the range, and loop
  // punched the backing file: the blocks read as zeros.
  for (const ChunkVerdict& v : Verify(device_, 2 * kMiB, 2 * kMiB, 9)) {
    ASSERT_EQ(v.check, ChunkCheck::kUnwritten);
  }
  EXPECT_EQ(Verify(device_, 4 * kMiB, 4 * kKiB, 9)[0].check, ChunkCheck::kOk);
  const int fd = open(file_.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(lseek(fd, 2 * kMiB, SEEK_HOLE), static_cast<off_t>(2 * kMiB));
  close(fd);
}

// The exclusive claim goes with the target: the next phase opens the device
// O_EXCL right after this one closed it. The io_uring ring's reference to
// its registered file used to outlive the run (the kernel frees a ring
// asynchronously), and that open failed with EBUSY now and then.
TEST_F(WorkloadLoop, DeviceIsFreeAsSoonAsTheTargetCloses) {
  for (int round = 0; round < 20; ++round) {
    WorkloadSpec w = Spec(0, 100, 0, 128 * kKiB, 8);
    w.length = 1 * kMiB;
    WorkloadResult r = RunOk(*target_, w);
    ASSERT_EQ(r.errors, 0u) << r.first_error;
    target_.reset();
    auto reopened = WorkloadTarget::Open(device_, WorkloadTarget::kReadWrite);
    ASSERT_TRUE(reopened) << "round " << round << ": " << reopened.error().message;
    target_ = std::move(*reopened);
  }
}

}  // namespace
}  // namespace drivewatch::aging
