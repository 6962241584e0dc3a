// SPDX-License-Identifier: Apache-2.0
// The block format of a data-retention study: write a verifiable pattern to
// a drive, power it off for months, read every block back and classify it.
//
// Every block of the study's block size begins with a 64-byte header; the
// rest is a body of pseudo-random bytes derived from (seed, lba) alone, so a
// verifier can regenerate any block without state saved per block, and the
// body neither compresses nor dedupes (a drive that compresses would
// otherwise hold less than the study thinks it wrote).
//
//   off size field
//   0   8    magic          "DWRETBLK"
//   8   4    version        kRetentionBlockVersion
//   12  4    block_size     the study's logical block, bytes
//   16  8    study_id       random per study, never 0
//   24  8    lba            byte offset / block_size, from the device start
//   32  8    write_time_ns  Unix ns when the writer filled the block
//   40  8    checksum       BlockHash of the whole block, bytes 40..55 as 0
//   48  8    header_check   HeaderHash of bytes 0..39:
//                             M(sum_i M(word_i ^ key_i) ^ constant)
//   56  8    reserved       0
//   64  ...  body           generator output for (seed, lba)
//
// All fields little-endian, as the hosts (x86-64, arm64) are.
//
// Why two checks. `checksum` covers every byte that is not a check, so one
// comparison proves the block intact. `header_check` covers only the
// identity fields, so a tool can trust (study, lba, time) of a block whose
// body is damaged, and so the verifier can tell damage in the write time
// (both checks fail) from damage in the checksum field (only it fails).
//
// BlockHash (not CRC-32C, which at one 8-byte crc32 per 3 cycles is the
// bottleneck fio's verify hits): eight 64-bit lanes over 64-byte stripes.
// For word d of lane i in stripe s, with k = d ^ (key_i + s * step):
//   acc[i]   += lo32(k) * hi32(k)
//   acc[i^1] += d
// then hash = M(sum_i M(acc[i] ^ key_i) ^ size * step), M a bijective
// 64-bit mixer (splitmix64's finalizer). Properties: damage that changes
// one lane always changes the hash; a one-bit flip always changes acc[i^1]
// by +-2^b, and fails to show only if the change it also makes to acc[i]
// cancels in the sum (about 2^-64); random damage passes with about 2^-64;
// the per-stripe key
// makes swapped words or stripes change the products. 32x32->64 multiplies
// are what AVX2 has (vpmuludq), so the vector and scalar paths give the
// same bits. It is not cryptographic: anyone can forge a block.
//
// Body generator: xorshift128+ (Vigna), eight independent lanes, each
// seeded by splitmix64 from (seed, lba); word j of the body comes from lane
// j % 8. Shifts, xors and adds only, so AVX2 runs two lanes-of-four at once.
// Output fails only linearity tests in its lowest bits: plenty for data that
// must not compress.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>

namespace drivewatch::aging {

inline constexpr std::uint64_t kRetentionMagic = 0x4b4c425445525744ULL;  // "DWRETBLK"
inline constexpr std::uint32_t kRetentionBlockVersion = 1;
inline constexpr std::size_t kRetentionHeaderSize = 64;
inline constexpr std::uint32_t kRetentionMinBlockSize = 512;
inline constexpr std::uint32_t kRetentionMaxBlockSize = 65536;

// Byte offsets of the header fields (see the table above).
inline constexpr std::size_t kRetentionWriteTimeOffset = 32;
inline constexpr std::size_t kRetentionChecksumOffset = 40;
inline constexpr std::size_t kRetentionHeaderCheckOffset = 48;

struct RetentionPattern {
  std::uint64_t study_id;    // random per study, never 0
  std::uint64_t seed;        // body data derives from (seed, lba)
  std::uint32_t block_size;  // 512..65536, multiple of 512: the study's logical block
};

// True when the pattern meets the constraints above. Every other function
// here takes a valid pattern as a precondition (it sizes the buffers).
bool IsValidRetentionPattern(const RetentionPattern& p);

// Fills `block` (p.block_size bytes, any alignment) for logical block `lba`
// (byte offset / block_size, counted from the start of the device or file,
// not of the region tested), written at `write_time_ns` (Unix ns). The body
// depends on (p.seed, lba) only; the header carries the rest.
void EncodeRetentionBlock(const RetentionPattern& p, std::uint64_t lba,
                          std::uint64_t write_time_ns, void* block);

// `n` consecutive blocks from `first_lba` into `buf` (n * block_size bytes),
// all stamped with one write time; the writer's fast path.
void EncodeRetentionBlocks(const RetentionPattern& p, std::uint64_t first_lba,
                           std::size_t n, std::uint64_t write_time_ns,
                           void* buf);

enum class BlockVerdict {
  kOk,            // intact block of this study for this LBA
  kWrongContent,  // anything else: damage, zeros, garbage, a foreign format
  kMisplaced,     // intact block of this study for another LBA
  kStale,         // intact block for this LBA of another study
};
const char* ToString(BlockVerdict verdict);

struct BlockCheck {
  BlockVerdict verdict = BlockVerdict::kOk;
  // The block's write time when its header is intact (header_check holds),
  // whatever the verdict; 0 otherwise.
  std::uint64_t write_time_ns = 0;
  // kMisplaced: the LBA the block belongs to.
  std::uint64_t found_lba = 0;
  // kStale: the other study's id.
  std::uint64_t found_study = 0;
  // kWrongContent: the first byte offset within the block that differs
  // from what the study wrote, found by regenerating the block. The study
  // keeps no per-block write time, so the write-time field (bytes 32..39)
  // has no expected value and is never compared byte by byte: the
  // regenerated block takes the time as read. Damage to that field alone is
  // seen as both checks failing with bytes 0..31 intact and is reported as
  // 32 (the field's first byte, not the exact byte). With damage confined
  // to one field or to the body the offset is exact; with damage in several
  // places it is the first of them.
  std::uint32_t first_difference = 0;
};

// Classifies the p.block_size bytes read back from `lba`. The body is
// regenerated only when the block is not kOk, so the intact case costs one
// BlockHash.
BlockCheck CheckRetentionBlock(const RetentionPattern& p, std::uint64_t lba,
                               const void* block);

// Checks `n` consecutive blocks of `buf` read from `first_lba` on; calls
// `bad(index, check)`, in index order, for each block that is not kOk, and
// returns the number of kOk blocks. The verifier's fast path.
std::size_t CheckRetentionBlocks(
    const RetentionPattern& p, std::uint64_t first_lba, std::size_t n,
    const void* buf,
    const std::function<void(std::size_t, const BlockCheck&)>& bad);

// The header fields as read, for tools and fuzzing.
struct RetentionBlockHeader {
  std::uint32_t version;
  std::uint32_t block_size;
  std::uint64_t study_id, lba, write_time_ns;
  std::uint64_t checksum;  // as stored; not checked against the body here
};

// Reads the header of `size` bytes at `block` (any alignment): nullopt when
// size < kRetentionHeaderSize or the magic or header_check is wrong. Reads
// no byte at or past `size`. Any version is returned as found.
std::optional<RetentionBlockHeader> DecodeRetentionHeader(const void* block,
                                                          std::size_t size);

namespace detail {

// The BlockHash of `size` bytes (a multiple of 64, at least 64), with bytes
// 40..55 taken as zero: the value stored in the checksum field.
std::uint64_t RetentionBlockHash(const void* block, std::size_t size);

// The two implementations behind the dispatch, so tests hold them to the
// same bytes. The AVX2 ones require HaveAvx2().
bool HaveAvx2();
std::uint64_t RetentionBlockHashPortable(const void* block, std::size_t size);
std::uint64_t RetentionBlockHashAvx2(const void* block, std::size_t size);
void EncodeRetentionBlocksPortable(const RetentionPattern& p,
                                   std::uint64_t first_lba, std::size_t n,
                                   std::uint64_t write_time_ns, void* buf);
void EncodeRetentionBlocksAvx2(const RetentionPattern& p,
                               std::uint64_t first_lba, std::size_t n,
                               std::uint64_t write_time_ns, void* buf);

}  // namespace detail
}  // namespace drivewatch::aging
