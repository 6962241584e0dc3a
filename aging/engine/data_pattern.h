// SPDX-License-Identifier: Apache-2.0
// What the workload engine writes, and how a read-back checks it.
//
// A write buffer holds random bytes that neither compress nor dedupe within
// a buffer (a drive that compresses would otherwise age slower than its
// users' drives do). The buffer is cut, from its start, into chunks of
// kChunkSize bytes (the whole block when the block is smaller; the last
// chunk is shorter when the block is not a multiple of kChunkSize). Each
// chunk begins with a ChunkHeader saying where and when it was written:
//
//   0  magic       "DWCHUNK1"
//   8  data_seed   the workload's data seed
//   16 offset      the target byte offset the chunk was written to
//   24 sequence    the write's sequence number within its run
//   32 body_crc    CRC-32C of the chunk after the header
//   36 header_crc  CRC-32C of bytes 0..35
//
// All fields little-endian, as the host (x86-64 and arm64 are).
//
// Cost. Each chunk's body is generated once (xoshiro256**) and its CRC
// computed once; a write only stamps the 40-byte headers of the chunks it
// carries, so the CPU per write is a few stores per 4 KiB, like fio's
// "scramble_buffers". The trade-off: every use of a chunk writes the same
// body, so a drive that dedupes at 4 KiB (after the header is stripped,
// which none is known to do) would see repeats. A chunk's body is
// regenerated after kRefillUses writes that carried it, so the repeats are
// bounded, and a write smaller than the slot (a trace's, a mix of sizes)
// costs what it writes, not the slot; a dedupe that includes the header
// never sees two equal chunks, since offset and sequence differ.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace drivewatch::aging {

inline constexpr std::size_t kChunkSize = 4096;
inline constexpr std::uint64_t kChunkMagic = 0x314b4e5548435744ULL;  // "DWCHUNK1"

struct ChunkHeader {
  std::uint64_t magic;
  std::uint64_t data_seed;
  std::uint64_t offset;
  std::uint64_t sequence;
  std::uint32_t body_crc;
  std::uint32_t header_crc;
};
static_assert(sizeof(ChunkHeader) == 40);

// The smallest chunk VerifyChunk accepts: a header and one byte of body.
inline constexpr std::size_t kMinChunkSize = sizeof(ChunkHeader) + 1;

enum class ChunkCheck {
  kOk,
  kUnwritten,    // all zero: never written, or trimmed on a drive that zeroes
  kCorrupt,      // no magic, or a header or body that fails its CRC
  kWrongSeed,    // intact, but written by a run with another data_seed
  kWrongOffset,  // intact, but written for another offset (misdirected I/O)
};
const char* ToString(ChunkCheck check);

// The outcome of checking one chunk; `header` is meaningful unless the
// chunk is unwritten or has no magic.
struct ChunkVerdict {
  ChunkCheck check = ChunkCheck::kCorrupt;
  ChunkHeader header{};
};

// Checks one chunk read back from `expected_offset` (the target byte offset
// of its first byte). `size` is the chunk's length: kChunkSize, or less for
// a small block or the tail of a block (see above); at least kMinChunkSize.
ChunkVerdict VerifyChunk(const void* chunk, std::size_t size,
                         std::uint64_t expected_offset,
                         std::uint64_t data_seed);

// The byte lengths of the chunks of a block of `block_size` bytes.
std::vector<std::size_t> ChunkSizes(std::size_t block_size);

// The write buffers of one run: `slots` buffers of `block_size` bytes each,
// owned by the caller (the engine registers them with io_uring). Not
// thread-safe; one per engine.
class DataPattern {
 public:
  // Regenerate a chunk's body after this many writes that carried it.
  static constexpr std::uint32_t kRefillUses = 64;

  // `buffers[i]` is slot i's memory, block_size bytes, alive as long as
  // this object. Fills every slot.
  DataPattern(std::uint64_t data_seed, std::uint32_t block_size,
              std::vector<void*> buffers);

  // Prepares slot `slot` for a write of its first `size` bytes (0: the
  // whole block) to target byte `offset`: stamps the header of each chunk
  // they hold, or begin (first refilling the body of a chunk that is due).
  // `sequence` is the write's number in the run.
  void Stamp(std::size_t slot, std::uint64_t offset, std::uint64_t sequence,
             std::uint32_t size = 0);

 private:
  void Fill(std::size_t slot, std::size_t chunk);

  std::uint64_t data_seed_;
  std::vector<void*> buffers_;
  std::vector<std::size_t> chunk_sizes_;
  // Slot-major, one per chunk: its body's CRC, the writes that carried it
  // since its last fill, and its fills so far.
  std::vector<std::uint32_t> body_crcs_;
  std::vector<std::uint32_t> uses_;
  std::vector<std::uint64_t> fills_;
};

namespace detail {


// xoshiro256** (Blackman and Vigna), seeded through splitmix64: fast, and
// good enough that its bytes do not compress.
class Xoshiro256 {
 public:
  explicit Xoshiro256(std::uint64_t seed);
  std::uint64_t Next() {
    const std::uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }

 private:
  static std::uint64_t Rotl(std::uint64_t x, int k) {
    return (x << k) | (x >> (64 - k));
  }
  std::uint64_t s_[4];
};

std::uint64_t SplitMix64(std::uint64_t& state);

}  // namespace detail
}  // namespace drivewatch::aging
