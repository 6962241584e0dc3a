// SPDX-License-Identifier: Apache-2.0
#include "aging/retention/retention_block.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace drivewatch::aging {
namespace {

constexpr RetentionPattern kStudy{0x5EED5EED00000001ULL, 0x0123456789ABCDEFULL, 4096};
constexpr std::uint64_t kTime = 1'700'000'000'123'456'789ULL;

std::vector<unsigned char> Encode(const RetentionPattern& p, std::uint64_t lba,
                                  std::uint64_t time = kTime) {
  std::vector<unsigned char> b(p.block_size);
  EncodeRetentionBlock(p, lba, time, b.data());
  return b;
}

std::uint64_t Field64(const std::vector<unsigned char>& b, std::size_t off) {
  std::uint64_t v;
  std::memcpy(&v, b.data() + off, 8);
  return v;
}

TEST(RetentionBlock, LayoutIsAsDocumented) {
  const auto b = Encode(kStudy, 77);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(b.data()), 8), "DWRETBLK");
  std::uint32_t version, size;
  std::memcpy(&version, b.data() + 8, 4);
  std::memcpy(&size, b.data() + 12, 4);
  EXPECT_EQ(version, kRetentionBlockVersion);
  EXPECT_EQ(size, 4096u);
  EXPECT_EQ(Field64(b, 16), kStudy.study_id);
  EXPECT_EQ(Field64(b, 24), 77u);
  EXPECT_EQ(Field64(b, 32), kTime);
  EXPECT_EQ(Field64(b, 56), 0u);
  EXPECT_EQ(Field64(b, 40), detail::RetentionBlockHash(b.data(), b.size()));
}

TEST(RetentionBlock, RoundTripsForSeveralSizesAndLbas) {
  for (std::uint32_t size : {512u, 1024u, 4096u, 8192u, 65536u}) {
    const RetentionPattern p{kStudy.study_id, kStudy.seed, size};
    ASSERT_TRUE(IsValidRetentionPattern(p));
    for (std::uint64_t lba : {0ULL, 1ULL, 4095ULL, 1ULL << 40, ~0ULL}) {
      const auto b = Encode(p, lba);
      const BlockCheck c = CheckRetentionBlock(p, lba, b.data());
      EXPECT_EQ(c.verdict, BlockVerdict::kOk) << "size " << size << " lba " << lba;
      EXPECT_EQ(c.write_time_ns, kTime);
      const auto h = DecodeRetentionHeader(b.data(), b.size());
      ASSERT_TRUE(h.has_value());
      EXPECT_EQ(h->version, kRetentionBlockVersion);
      EXPECT_EQ(h->block_size, size);
      EXPECT_EQ(h->study_id, p.study_id);
      EXPECT_EQ(h->lba, lba);
      EXPECT_EQ(h->write_time_ns, kTime);
      EXPECT_EQ(h->checksum, Field64(b, kRetentionChecksumOffset));
    }
  }
}

TEST(RetentionBlock, PatternValidity) {
  EXPECT_FALSE(IsValidRetentionPattern({0, 1, 4096}));
  EXPECT_FALSE(IsValidRetentionPattern({1, 1, 256}));
  EXPECT_FALSE(IsValidRetentionPattern({1, 1, 1000}));
  EXPECT_FALSE(IsValidRetentionPattern({1, 1, 65536 + 512}));
  EXPECT_TRUE(IsValidRetentionPattern({1, 0, 65536}));
}

TEST(RetentionBlock, DeterministicAndBodyIndependentOfTime) {
  const auto a = Encode(kStudy, 9, kTime);
  EXPECT_EQ(a, Encode(kStudy, 9, kTime));
  const auto later = Encode(kStudy, 9, kTime + 1);
  EXPECT_NE(a, later);
  EXPECT_TRUE(std::equal(a.begin() + kRetentionHeaderSize, a.end(),
                         later.begin() + kRetentionHeaderSize));
  // The body follows the seed and the LBA, and the study id does not enter it.
  // Both paths, whichever the dispatch picks here.
  for (auto* encode : {&detail::EncodeRetentionBlocksPortable,
                       &detail::EncodeRetentionBlocksAvx2}) {
    if (encode == &detail::EncodeRetentionBlocksAvx2 && !detail::HaveAvx2()) continue;
    std::vector<unsigned char> x(kStudy.block_size), y(kStudy.block_size);
    encode(kStudy, 9, 1, kTime, x.data());
    encode(kStudy, 9, 1, kTime + 123456789, y.data());
    EXPECT_TRUE(std::equal(x.begin() + kRetentionHeaderSize, x.end(),
                           y.begin() + kRetentionHeaderSize));
  }
  const RetentionPattern other_study{kStudy.study_id + 1, kStudy.seed, kStudy.block_size};
  const auto b = Encode(other_study, 9);
  EXPECT_TRUE(std::equal(a.begin() + kRetentionHeaderSize, a.end(),
                         b.begin() + kRetentionHeaderSize));
  const RetentionPattern other_seed{kStudy.study_id, kStudy.seed + 1, kStudy.block_size};
  EXPECT_FALSE(std::equal(a.begin() + kRetentionHeaderSize, a.end(),
                          Encode(other_seed, 9).begin() + kRetentionHeaderSize));
  EXPECT_FALSE(std::equal(a.begin() + kRetentionHeaderSize, a.end(),
                          Encode(kStudy, 10).begin() + kRetentionHeaderSize));
}

TEST(RetentionBlock, BatchEqualsSingleBlocks) {
  const std::size_t n = 7;
  std::vector<unsigned char> buf(n * kStudy.block_size);
  EncodeRetentionBlocks(kStudy, 100, n, kTime, buf.data());
  for (std::size_t i = 0; i < n; ++i) {
    const auto one = Encode(kStudy, 100 + i);
    EXPECT_TRUE(std::equal(one.begin(), one.end(), buf.begin() + i * kStudy.block_size))
        << "block " << i;
  }
}

// Every bit of the block, flipped alone, is caught, and where it is
// reported is exact except in the write-time field (see the header).
TEST(RetentionBlock, EveryBitFlipIsWrongContentAtItsByte) {
  const RetentionPattern p{kStudy.study_id, kStudy.seed, 512};
  const auto good = Encode(p, 3);
  for (std::size_t bit = 0; bit < good.size() * 8; ++bit) {
    auto b = good;
    b[bit / 8] ^= static_cast<unsigned char>(1u << (bit % 8));
    const BlockCheck c = CheckRetentionBlock(p, 3, b.data());
    ASSERT_EQ(c.verdict, BlockVerdict::kWrongContent) << "bit " << bit;
    const std::size_t byte = bit / 8;
    const bool in_time = byte >= kRetentionWriteTimeOffset &&
                         byte < kRetentionWriteTimeOffset + 8;
    ASSERT_EQ(c.first_difference, in_time ? kRetentionWriteTimeOffset : byte)
        << "bit " << bit;
  }
}

TEST(RetentionBlock, BodyFlipIn64KiBBlock) {
  const RetentionPattern p{kStudy.study_id, kStudy.seed, 65536};
  auto b = Encode(p, 12345);
  b[40000] ^= 0x10;
  const BlockCheck c = CheckRetentionBlock(p, 12345, b.data());
  EXPECT_EQ(c.verdict, BlockVerdict::kWrongContent);
  EXPECT_EQ(c.first_difference, 40000u);
  // The header is intact, so its time is still reported.
  EXPECT_EQ(c.write_time_ns, kTime);
}

TEST(RetentionBlock, AllZeroIsWrongContentAtZero) {
  std::vector<unsigned char> zeros(kStudy.block_size, 0);
  const BlockCheck c = CheckRetentionBlock(kStudy, 5, zeros.data());
  EXPECT_EQ(c.verdict, BlockVerdict::kWrongContent);
  EXPECT_EQ(c.first_difference, 0u);
  EXPECT_EQ(c.write_time_ns, 0u);
}

TEST(RetentionBlock, AnotherLbasBlockIsMisplaced) {
  const auto b = Encode(kStudy, 1000);
  const BlockCheck c = CheckRetentionBlock(kStudy, 999, b.data());
  EXPECT_EQ(c.verdict, BlockVerdict::kMisplaced);
  EXPECT_EQ(c.found_lba, 1000u);
  EXPECT_EQ(c.write_time_ns, kTime);
}

TEST(RetentionBlock, AnotherStudysBlockIsStale) {
  const RetentionPattern old_study{0xA1D0000000000042ULL, 99, kStudy.block_size};
  const auto b = Encode(old_study, 50, kTime - 1000);
  const BlockCheck c = CheckRetentionBlock(kStudy, 50, b.data());
  EXPECT_EQ(c.verdict, BlockVerdict::kStale);
  EXPECT_EQ(c.found_study, old_study.study_id);
  EXPECT_EQ(c.write_time_ns, kTime - 1000);
  // Another study's block for another LBA is nothing we can name.
  EXPECT_EQ(CheckRetentionBlock(kStudy, 51, b.data()).verdict,
            BlockVerdict::kWrongContent);
  // Nor is another study's block of another block size.
  const RetentionPattern small{old_study.study_id, 99, 512};
  std::vector<unsigned char> mixed(kStudy.block_size);
  EncodeRetentionBlocks(small, 50 * 8, 8, kTime, mixed.data());
  const BlockCheck m = CheckRetentionBlock(kStudy, 50, mixed.data());
  EXPECT_EQ(m.verdict, BlockVerdict::kWrongContent);
  EXPECT_EQ(m.first_difference, 13u);  // block_size: 0x0200 against 0x1000
}

TEST(RetentionBlock, HeaderOnlyDamage) {
  const auto good = Encode(kStudy, 8);
  struct Case {
    std::size_t offset;
    std::uint32_t expected;
    bool header_decodes;
  };
  const Case cases[] = {
      {0, 0, false},     // magic
      {9, 9, false},     // version
      {13, 13, false},   // block size
      {20, 20, false},   // study id
      {25, 25, false},   // lba
      {35, 32, false},   // write time: reported at the field's start
      {44, 44, true},    // checksum: the header check does not cover it
      {50, 50, false},   // header check
      {60, 60, true},    // reserved
  };
  for (const Case& k : cases) {
    auto b = good;
    b[k.offset] ^= 0x80;
    const BlockCheck c = CheckRetentionBlock(kStudy, 8, b.data());
    EXPECT_EQ(c.verdict, BlockVerdict::kWrongContent) << "offset " << k.offset;
    EXPECT_EQ(c.first_difference, k.expected) << "offset " << k.offset;
    EXPECT_EQ(DecodeRetentionHeader(b.data(), b.size()).has_value(), k.header_decodes)
        << "offset " << k.offset;
  }
  // A well-formed header whose lba was rewritten (checks recomputed) but
  // whose body is still lba 8's: the checksum catches the mismatch.
  auto forged = good;
  const auto lba9 = Encode(kStudy, 9);
  std::memcpy(forged.data(), lba9.data(), kRetentionHeaderSize);
  const BlockCheck c = CheckRetentionBlock(kStudy, 9, forged.data());
  EXPECT_EQ(c.verdict, BlockVerdict::kWrongContent);
  EXPECT_EQ(c.first_difference, kRetentionHeaderSize);
}

TEST(RetentionBlock, CheckBlocksReportsExactlyTheBadIndices) {
  const std::size_t n = 64;
  const std::size_t bs = kStudy.block_size;
  std::vector<unsigned char> buf(n * bs);
  EncodeRetentionBlocks(kStudy, 2000, n, kTime, buf.data());
  buf[3 * bs + 100] ^= 1;                            // body flip
  std::memset(buf.data() + 17 * bs, 0, bs);          // zeroed
  EncodeRetentionBlock(kStudy, 5, kTime, buf.data() + 40 * bs);  // misplaced
  EncodeRetentionBlock({7, 7, 4096}, 2063, kTime, buf.data() + 63 * bs);  // stale

  std::vector<std::pair<std::size_t, BlockCheck>> seen;
  const std::size_t ok = CheckRetentionBlocks(
      kStudy, 2000, n, buf.data(),
      [&](std::size_t i, const BlockCheck& c) { seen.emplace_back(i, c); });
  EXPECT_EQ(ok, n - 4);
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0].first, 3u);
  EXPECT_EQ(seen[0].second.verdict, BlockVerdict::kWrongContent);
  EXPECT_EQ(seen[0].second.first_difference, 100u);
  EXPECT_EQ(seen[1].first, 17u);
  EXPECT_EQ(seen[1].second.verdict, BlockVerdict::kWrongContent);
  EXPECT_EQ(seen[1].second.first_difference, 0u);
  EXPECT_EQ(seen[2].first, 40u);
  EXPECT_EQ(seen[2].second.verdict, BlockVerdict::kMisplaced);
  EXPECT_EQ(seen[2].second.found_lba, 5u);
  EXPECT_EQ(seen[3].first, 63u);
  EXPECT_EQ(seen[3].second.verdict, BlockVerdict::kStale);
  EXPECT_EQ(seen[3].second.found_study, 7u);

  // A null callback still counts.
  EXPECT_EQ(CheckRetentionBlocks(kStudy, 2000, n, buf.data(), nullptr), n - 4);
}

TEST(RetentionBlock, Avx2AndPortableGiveIdenticalBytes) {
  if (!detail::HaveAvx2()) GTEST_SKIP() << "no AVX2 on this CPU";
  for (std::uint32_t size : {512u, 4096u, 65536u}) {
    const RetentionPattern p{kStudy.study_id, kStudy.seed ^ size, size};
    const std::size_t n = 5;
    // Odd offsets: both paths must take unaligned buffers.
    std::vector<unsigned char> a(n * size + 1), b(n * size + 3);
    detail::EncodeRetentionBlocksPortable(p, 31, n, kTime, a.data() + 1);
    detail::EncodeRetentionBlocksAvx2(p, 31, n, kTime, b.data() + 3);
    ASSERT_EQ(0, std::memcmp(a.data() + 1, b.data() + 3, n * size)) << size;
    for (std::size_t i = 0; i < n; ++i) {
      const unsigned char* block = a.data() + 1 + i * size;
      EXPECT_EQ(detail::RetentionBlockHashPortable(block, size),
                detail::RetentionBlockHashAvx2(block, size));
    }
  }
  // And on bytes no encoder made, with the check fields non-zero.
  std::vector<unsigned char> junk(4096);
  for (std::size_t i = 0; i < junk.size(); ++i) junk[i] = static_cast<unsigned char>(i * 131 + 7);
  EXPECT_EQ(detail::RetentionBlockHashPortable(junk.data(), junk.size()),
            detail::RetentionBlockHashAvx2(junk.data(), junk.size()));
}

TEST(RetentionBlock, ChecksumIgnoresItsOwnFieldsOnly) {
  auto b = Encode(kStudy, 4);
  const std::uint64_t h = detail::RetentionBlockHash(b.data(), b.size());
  for (std::size_t off = 40; off < 56; ++off) {
    auto c = b;
    c[off] ^= 0xFF;
    EXPECT_EQ(detail::RetentionBlockHash(c.data(), c.size()), h) << off;
  }
  // Swapping two body words of the same lane (8 words apart) is seen.
  auto s = b;
  std::swap_ranges(s.begin() + 128, s.begin() + 136, s.begin() + 192);
  EXPECT_NE(detail::RetentionBlockHash(s.data(), s.size()), h);
  // So is swapping two 512-byte sectors.
  auto t = b;
  std::swap_ranges(t.begin() + 512, t.begin() + 1024, t.begin() + 1024);
  EXPECT_NE(detail::RetentionBlockHash(t.data(), t.size()), h);
}

TEST(RetentionBlock, BodyDoesNotCompress) {
  // Order-0 entropy of one 64 KiB body: random bytes give ~7.997 bits.
  const RetentionPattern p{kStudy.study_id, kStudy.seed, 65536};
  const auto b = Encode(p, 1);
  std::array<std::size_t, 256> histogram{};
  for (std::size_t i = kRetentionHeaderSize; i < b.size(); ++i) ++histogram[b[i]];
  double entropy = 0;
  const double total = static_cast<double>(b.size() - kRetentionHeaderSize);
  for (std::size_t count : histogram) {
    if (count == 0) continue;
    const double f = count / total;
    entropy -= f * std::log2(f);
  }
  EXPECT_GT(entropy, 7.99);

  // No two bodies, and no two 512-byte sectors anywhere, repeat across
  // 10000 blocks (a dedupe at sector granularity would find nothing).
  const RetentionPattern q{kStudy.study_id, kStudy.seed, 4096};
  const std::size_t n = 10000;
  std::vector<unsigned char> buf(n * q.block_size);
  EncodeRetentionBlocks(q, 0, n, kTime, buf.data());
  std::set<std::string> sectors;
  for (std::size_t off = 0; off < buf.size(); off += 512) {
    sectors.emplace(reinterpret_cast<const char*>(buf.data() + off), 512);
  }
  EXPECT_EQ(sectors.size(), buf.size() / 512);
}

TEST(RetentionBlock, DecodeHeaderRejectsGarbageAndShortInput) {
  EXPECT_FALSE(DecodeRetentionHeader(nullptr, 0).has_value());
  const auto good = Encode(kStudy, 1);
  // Every size short of a header is refused. Each copy is exactly `size`
  // bytes on the heap, so a read past it is a sanitizer or valgrind error.
  for (std::size_t size = 0; size < kRetentionHeaderSize; ++size) {
    auto copy = std::make_unique<unsigned char[]>(size == 0 ? 1 : size);
    std::memcpy(copy.get(), good.data(), size);
    EXPECT_FALSE(DecodeRetentionHeader(copy.get(), size).has_value()) << size;
  }
  {
    auto exact = std::make_unique<unsigned char[]>(kRetentionHeaderSize);
    std::memcpy(exact.get(), good.data(), kRetentionHeaderSize);
    EXPECT_TRUE(DecodeRetentionHeader(exact.get(), kRetentionHeaderSize).has_value());
  }
  // Garbage: a fixed pseudo-random stream, with and without the magic.
  std::uint64_t x = 88172645463325252ULL;
  std::vector<unsigned char> junk(kRetentionHeaderSize);
  for (int trial = 0; trial < 10000; ++trial) {
    for (auto& byte : junk) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      byte = static_cast<unsigned char>(x);
    }
    if (trial % 2) std::memcpy(junk.data(), &kRetentionMagic, 8);
    ASSERT_FALSE(DecodeRetentionHeader(junk.data(), junk.size()).has_value()) << trial;
  }
}

TEST(RetentionBlock, VerdictNames) {
  EXPECT_STREQ(ToString(BlockVerdict::kOk), "ok");
  EXPECT_STREQ(ToString(BlockVerdict::kWrongContent), "wrong content");
  EXPECT_STREQ(ToString(BlockVerdict::kMisplaced), "misplaced");
  EXPECT_STREQ(ToString(BlockVerdict::kStale), "stale");
}

}  // namespace
}  // namespace drivewatch::aging
