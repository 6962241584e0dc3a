// SPDX-License-Identifier: Apache-2.0
#include "aging/engine/data_pattern.h"
#include "config/util/crc32c.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <set>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace drivewatch::aging {
namespace {

struct Buffers {
  Buffers(std::size_t slots, std::size_t block_size) : size(block_size) {
    for (std::size_t i = 0; i < slots; ++i) {
      storage.emplace_back(new unsigned char[block_size]());
      pointers.push_back(storage.back().get());
    }
  }
  unsigned char* operator[](std::size_t i) { return storage[i].get(); }
  std::size_t size;
  std::vector<std::unique_ptr<unsigned char[]>> storage;
  std::vector<void*> pointers;
};

TEST(DataPattern, StampedChunksVerify) {
  Buffers b(2, 16384);
  DataPattern pattern(42, 16384, b.pointers);
  pattern.Stamp(1, 1 << 20, 7);
  for (std::size_t c = 0; c < 4; ++c) {
    const ChunkVerdict v = VerifyChunk(b[1] + c * 4096, 4096, (1 << 20) + c * 4096, 42);
    EXPECT_EQ(v.check, ChunkCheck::kOk) << ToString(v.check);
    EXPECT_EQ(v.header.sequence, 7u);
    EXPECT_EQ(v.header.offset, (1u << 20) + c * 4096);
  }
}

TEST(DataPattern, ClassifiesWhatWentWrong) {
  Buffers b(1, 8192);
  DataPattern pattern(5, 8192, b.pointers);
  pattern.Stamp(0, 8192, 1);
  EXPECT_EQ(VerifyChunk(b[0], 4096, 0, 5).check, ChunkCheck::kWrongOffset);
  EXPECT_EQ(VerifyChunk(b[0], 4096, 8192, 6).check, ChunkCheck::kWrongSeed);
  std::vector<unsigned char> zero(4096, 0);
  EXPECT_EQ(VerifyChunk(zero.data(), 4096, 8192, 5).check, ChunkCheck::kUnwritten);
  // One flipped bit in the body, then in the header.
  b[0][3000] ^= 0x10;
  EXPECT_EQ(VerifyChunk(b[0], 4096, 8192, 5).check, ChunkCheck::kCorrupt);
  b[0][3000] ^= 0x10;
  ASSERT_EQ(VerifyChunk(b[0], 4096, 8192, 5).check, ChunkCheck::kOk);
  b[0][17] ^= 0x01;  // inside the offset field: caught by the header CRC
  EXPECT_EQ(VerifyChunk(b[0], 4096, 8192, 5).check, ChunkCheck::kCorrupt);
  // Random bytes are not a chunk.
  EXPECT_EQ(VerifyChunk(b[0] + 100, 512, 8192, 5).check, ChunkCheck::kCorrupt);
}

TEST(DataPattern, SmallAndOddBlocksAreCutIntoChunks) {
  EXPECT_EQ(ChunkSizes(512), (std::vector<std::size_t>{512}));
  EXPECT_EQ(ChunkSizes(6144), (std::vector<std::size_t>{4096, 2048}));
  Buffers b(1, 6144);
  DataPattern pattern(9, 6144, b.pointers);
  pattern.Stamp(0, 6144 * 3, 2);
  EXPECT_EQ(VerifyChunk(b[0], 4096, 6144 * 3, 9).check, ChunkCheck::kOk);
  EXPECT_EQ(VerifyChunk(b[0] + 4096, 2048, 6144 * 3 + 4096, 9).check, ChunkCheck::kOk);
  Buffers small(1, 512);
  DataPattern p512(9, 512, small.pointers);
  p512.Stamp(0, 512, 3);
  EXPECT_EQ(VerifyChunk(small[0], 512, 512, 9).check, ChunkCheck::kOk);
}

TEST(DataPattern, SlotsDifferAndSameSeedsRepeat) {
  Buffers a(2, 4096), b(2, 4096);
  DataPattern pa(1, 4096, a.pointers), pb(1, 4096, b.pointers);
  EXPECT_NE(std::memcmp(a[0] + 64, a[1] + 64, 4000), 0);
  EXPECT_EQ(std::memcmp(a[0], b[0], 4096), 0);
  Buffers c(1, 4096);
  DataPattern pc(2, 4096, c.pointers);
  EXPECT_NE(std::memcmp(a[0] + 64, c[0] + 64, 4000), 0);
}

TEST(DataPattern, BodiesAreRefreshedAfterRefillUses) {
  Buffers b(1, 4096);
  DataPattern pattern(3, 4096, b.pointers);
  std::vector<unsigned char> first(b[0] + 64, b[0] + 4096);
  for (std::uint32_t i = 0; i < DataPattern::kRefillUses; ++i) pattern.Stamp(0, 0, i);
  EXPECT_EQ(std::memcmp(first.data(), b[0] + 64, first.size()), 0);
  pattern.Stamp(0, 0, DataPattern::kRefillUses);
  EXPECT_NE(std::memcmp(first.data(), b[0] + 64, first.size()), 0);
  EXPECT_EQ(VerifyChunk(b[0], 4096, 0, 3).check, ChunkCheck::kOk);
}

TEST(DataPattern, LooksRandom) {
  // A compressor's view without linking one: byte entropy close to 8 bits
  // and no 8-byte word seen twice in 128 KiB.
  const std::size_t size = 128 * 1024;
  Buffers b(1, size);
  DataPattern pattern(11, size, b.pointers);
  double counts[256] = {};
  for (std::size_t i = 0; i < size; ++i) ++counts[b[0][i]];
  double entropy = 0;
  for (double c : counts) {
    if (c > 0) entropy -= c / size * std::log2(c / size);
  }
  EXPECT_GT(entropy, 7.99);
  std::set<std::uint64_t> words;
  for (std::size_t i = 0; i < size; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, b[0] + i, 8);
    words.insert(w);
  }
  EXPECT_EQ(words.size(), size / 8);
}

// A write smaller than the slot (a trace's, a mix of sizes) stamps and
// wears only the chunks it carries.
TEST(DataPattern, ASmallerWriteStampsAndRefillsOnlyItsChunks) {
  Buffers b(1, 16384);
  DataPattern pattern(4, 16384, b.pointers);
  pattern.Stamp(0, 0, 0);
  std::vector<unsigned char> last(b[0] + 12288, b[0] + 16384);
  // 6 KiB: chunk 0 and the start of chunk 1.
  pattern.Stamp(0, 1 << 20, 1, 6144);
  EXPECT_EQ(VerifyChunk(b[0], 4096, 1 << 20, 4).header.sequence, 1u);
  EXPECT_EQ(VerifyChunk(b[0] + 4096, 4096, (1 << 20) + 4096, 4).header.sequence, 1u);
  EXPECT_EQ(VerifyChunk(b[0] + 8192, 4096, 8192, 4).header.sequence, 0u);  // untouched
  // Chunk 0 is refreshed after its own uses; the last chunk, never carried
  // since, keeps its bytes.
  for (std::uint32_t i = 2; i <= DataPattern::kRefillUses + 1; ++i) pattern.Stamp(0, 0, i, 4096);
  EXPECT_EQ(VerifyChunk(b[0], 4096, 0, 4).check, ChunkCheck::kOk);
  EXPECT_EQ(std::memcmp(last.data(), b[0] + 12288, last.size()), 0);
  EXPECT_EQ(VerifyChunk(b[0] + 12288, 4096, 12288, 4).check, ChunkCheck::kOk);
}

}  // namespace
}  // namespace drivewatch::aging
