// SPDX-License-Identifier: Apache-2.0
#include "aging/engine/data_pattern.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "config/util/crc32c.h"

namespace drivewatch::aging {
namespace detail {
namespace {


}  // namespace


std::uint64_t SplitMix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

Xoshiro256::Xoshiro256(std::uint64_t seed) {
  for (auto& s : s_) s = SplitMix64(seed);
}

}  // namespace detail

const char* ToString(ChunkCheck check) {
  switch (check) {
    case ChunkCheck::kOk: return "ok";
    case ChunkCheck::kUnwritten: return "unwritten";
    case ChunkCheck::kCorrupt: return "corrupt";
    case ChunkCheck::kWrongSeed: return "wrong seed";
    case ChunkCheck::kWrongOffset: return "wrong offset";
  }
  return "?";
}

namespace {

constexpr std::size_t kHeaderCrcSpan = offsetof(ChunkHeader, header_crc);

bool AllZero(const unsigned char* p, std::size_t n) {
  return n == 0 || (p[0] == 0 && std::memcmp(p, p + 1, n - 1) == 0);
}

}  // namespace

ChunkVerdict VerifyChunk(const void* chunk, std::size_t size,
                         std::uint64_t expected_offset,
                         std::uint64_t data_seed) {
  ChunkVerdict v;
  const auto* p = static_cast<const unsigned char*>(chunk);
  if (size < kMinChunkSize) return v;  // kCorrupt: too short to hold a stamp
  if (AllZero(p, size)) {
    v.check = ChunkCheck::kUnwritten;
    return v;
  }
  std::memcpy(&v.header, p, sizeof(ChunkHeader));
  const ChunkHeader& h = v.header;
  if (h.magic != kChunkMagic ||
      h.header_crc != Crc32c(p, kHeaderCrcSpan) ||
      h.body_crc != Crc32c(p + sizeof(ChunkHeader),
                                       size - sizeof(ChunkHeader))) {
    v.check = ChunkCheck::kCorrupt;
  } else if (h.data_seed != data_seed) {
    v.check = ChunkCheck::kWrongSeed;
  } else if (h.offset != expected_offset) {
    v.check = ChunkCheck::kWrongOffset;
  } else {
    v.check = ChunkCheck::kOk;
  }
  return v;
}

std::vector<std::size_t> ChunkSizes(std::size_t block_size) {
  std::vector<std::size_t> sizes;
  for (std::size_t at = 0; at < block_size; at += kChunkSize) {
    sizes.push_back(std::min(kChunkSize, block_size - at));
  }
  return sizes;
}

DataPattern::DataPattern(std::uint64_t data_seed, std::uint32_t block_size,
                         std::vector<void*> buffers)
    : data_seed_(data_seed),
      buffers_(std::move(buffers)),
      chunk_sizes_(ChunkSizes(block_size)),
      body_crcs_(buffers_.size() * chunk_sizes_.size()),
      uses_(body_crcs_.size()),
      fills_(body_crcs_.size()) {
  for (std::size_t slot = 0; slot < buffers_.size(); ++slot) {
    for (std::size_t c = 0; c < chunk_sizes_.size(); ++c) Fill(slot, c);
  }
}

void DataPattern::Fill(std::size_t slot, std::size_t chunk) {
  // Each (seed, slot, chunk, fill) gets its own stream, so no two chunks
  // share bytes and the same seeds reproduce the same data.
  const std::size_t i = slot * chunk_sizes_.size() + chunk;
  std::uint64_t mix = data_seed_ ^ (0xd1b54a32d192ed03ULL * (slot + 1)) ^
                      (0x9e3779b97f4a7c15ULL * (chunk + 1)) ^
                      (0x8cb92ba72f3d8dd7ULL * fills_[i]++);
  detail::Xoshiro256 rng(detail::SplitMix64(mix));
  auto* p = static_cast<unsigned char*>(buffers_[slot]) + chunk * kChunkSize;
  const std::size_t size = chunk_sizes_[chunk];
  std::size_t at = 0;
  for (; at + 8 <= size; at += 8) {
    const std::uint64_t word = rng.Next();
    std::memcpy(p + at, &word, 8);
  }
  // Chunks are multiples of 512 bytes, so nothing is left; kept for safety.
  for (; at < size; ++at) p[at] = static_cast<unsigned char>(rng.Next());
  body_crcs_[i] = Crc32c(p + sizeof(ChunkHeader), size - sizeof(ChunkHeader));
  uses_[i] = 0;
}

void DataPattern::Stamp(std::size_t slot, std::uint64_t offset,
                        std::uint64_t sequence, std::uint32_t size) {
  const std::size_t chunks =
      size == 0 ? chunk_sizes_.size()
                : std::min(chunk_sizes_.size(), (std::size_t{size} + kChunkSize - 1) / kChunkSize);
  auto* p = static_cast<unsigned char*>(buffers_[slot]);
  const std::size_t first = slot * chunk_sizes_.size();
  for (std::size_t c = 0; c < chunks; ++c) {
    if (++uses_[first + c] > kRefillUses) Fill(slot, c);
    const std::size_t at = c * kChunkSize;
    ChunkHeader h;
    h.magic = kChunkMagic;
    h.data_seed = data_seed_;
    h.offset = offset + at;
    h.sequence = sequence;
    h.body_crc = body_crcs_[first + c];
    std::memcpy(p + at, &h, kHeaderCrcSpan);
    h.header_crc = Crc32c(p + at, kHeaderCrcSpan);
    std::memcpy(p + at + kHeaderCrcSpan, &h.header_crc, sizeof(h.header_crc));
  }
}

}  // namespace drivewatch::aging
