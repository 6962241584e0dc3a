// SPDX-License-Identifier: Apache-2.0
#include "aging/retention/retention_block.h"

#include <cstring>
#include <vector>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace drivewatch::aging {
namespace {

constexpr std::size_t kLanes = 8;
constexpr std::size_t kStripe = kLanes * 8;
static_assert(kStripe == kRetentionHeaderSize,
              "the header is exactly the hash's first stripe");
static_assert(kRetentionMinBlockSize % kStripe == 0);

// Arbitrary odd 64-bit constants (xxHash and splitmix64 primes and digits of
// pi): only their being distinct, odd and dense in bits matters.
constexpr std::uint64_t kHashKey[kLanes] = {
    0x9E3779B185EBCA87ULL, 0xC2B2AE3D27D4EB4FULL, 0x165667B19E3779F9ULL,
    0x85EBCA77C2B2AE63ULL, 0x27D4EB2F165667C5ULL, 0x243F6A8885A308D3ULL,
    0x13198A2E03707345ULL, 0xA4093822299F31D1ULL};
constexpr std::uint64_t kHashInit[kLanes] = {
    0x082EFA98EC4E6C89ULL, 0x452821E638D01377ULL, 0xBE5466CF34E90C6DULL,
    0xC0AC29B7C97C50DDULL, 0x3F84D5B5B5470917ULL, 0x9216D5D98979FB1BULL,
    0xD1310BA698DFB5ACULL, 0x2FFD72DBD01ADFB7ULL};
// Added to every lane's key from one stripe to the next, so equal words at
// different places multiply differently.
constexpr std::uint64_t kHashStep = 0x9FB21C651E98DF25ULL;
constexpr std::uint64_t kHeaderHashInit = 0xB7E151628AED2A6BULL;
// How far ahead of the stripe being hashed or written to prefetch. Without
// it a 4 KiB block ran at half the speed of a 64 KiB one out of cache: the
// hardware prefetcher loses the stream at every block's fold. One page
// ahead measured best (2-4 KiB tried); prefetching past the end of the
// caller's buffer is harmless, a prefetch never faults.
constexpr std::size_t kPrefetchDistance = 4096;
// Keeps lba 0 of seed s from seeding like lba s of seed 0.
constexpr std::uint64_t kLbaSalt = 0x6A09E667F3BCC909ULL;

// Stafford's Mix13 (splitmix64's finalizer): a bijection on 64 bits with
// full avalanche.
std::uint64_t Mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

std::uint64_t SplitMix64(std::uint64_t& state) {
  return Mix64(state += 0x9E3779B97F4A7C15ULL);
}

std::uint64_t Load64(const unsigned char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

void Store64(unsigned char* p, std::uint64_t v) { std::memcpy(p, &v, 8); }

std::uint32_t Load32(const unsigned char* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Folds the lanes as a sum of bijections, each keyed by its lane: a change
// in exactly one lane always changes the sum. The eight Mix64 calls are
// independent, so the fold costs one Mix64's latency, not eight (it is paid
// once per block, which matters at 4 KiB).
std::uint64_t Fold(const std::uint64_t acc[kLanes], std::size_t size) {
  std::uint64_t h = 0;
  for (std::size_t i = 0; i < kLanes; ++i) h += Mix64(acc[i] ^ kHashKey[i]);
  return Mix64(h ^ (size * kHashStep));
}

// Bytes 0..39, folded the same way: damage to any one field always shows.
std::uint64_t HeaderHash(const unsigned char* block) {
  std::uint64_t h = 0;
  for (std::size_t i = 0; i < 5; ++i) {
    h += Mix64(Load64(block + 8 * i) ^ kHashKey[i]);
  }
  return Mix64(h ^ kHeaderHashInit);
}

// The first stripe as the checksum sees it: the two check fields zeroed.
void HashedHeaderStripe(const unsigned char* block, unsigned char out[kStripe]) {
  std::memcpy(out, block, kStripe);
  std::memset(out + kRetentionChecksumOffset, 0, 16);
}

void WriteHeader(const RetentionPattern& p, std::uint64_t lba,
                 std::uint64_t write_time_ns, unsigned char* b) {
  Store64(b, kRetentionMagic);
  std::memcpy(b + 8, &kRetentionBlockVersion, 4);
  std::memcpy(b + 12, &p.block_size, 4);
  Store64(b + 16, p.study_id);
  Store64(b + 24, lba);
  Store64(b + 32, write_time_ns);
  std::memset(b + 40, 0, 24);  // checksum, header_check, reserved
}

void SealHeader(unsigned char* b, std::uint64_t checksum) {
  Store64(b + kRetentionChecksumOffset, checksum);
  Store64(b + kRetentionHeaderCheckOffset, HeaderHash(b));
}

// Eight xorshift128+ lanes for one block's body.
struct BodyGenerator {
  BodyGenerator(std::uint64_t seed, std::uint64_t lba) {
    std::uint64_t state = seed ^ Mix64(lba + kLbaSalt);
    for (std::size_t i = 0; i < kLanes; ++i) {
      s0[i] = SplitMix64(state);
      s1[i] = SplitMix64(state);
      if ((s0[i] | s1[i]) == 0) s0[i] = 1;  // the one state it cannot leave
    }
  }
  std::uint64_t Next(std::size_t i) {
    std::uint64_t x = s0[i];
    const std::uint64_t y = s1[i];
    const std::uint64_t out = x + y;
    s0[i] = y;
    x ^= x << 23;
    s1[i] = x ^ y ^ (x >> 18) ^ (y >> 5);
    return out;
  }
  std::uint64_t s0[kLanes];
  std::uint64_t s1[kLanes];
};

// ---- Portable path ----

void AccumulatePortable(std::uint64_t acc[kLanes], const unsigned char* p,
                        std::size_t stripes, std::uint64_t first_stripe) {
  std::uint64_t key[kLanes];
  for (std::size_t i = 0; i < kLanes; ++i) {
    key[i] = kHashKey[i] + first_stripe * kHashStep;
  }
  for (std::size_t s = 0; s < stripes; ++s, p += kStripe) {
    __builtin_prefetch(p + kPrefetchDistance);
    for (std::size_t i = 0; i < kLanes; ++i) {
      const std::uint64_t d = Load64(p + 8 * i);
      const std::uint64_t k = d ^ key[i];
      acc[i] += (k & 0xFFFFFFFFULL) * (k >> 32);
      acc[i ^ 1] += d;
      key[i] += kHashStep;
    }
  }
}

// Generates and hashes each stripe while it is in registers, as the AVX2
// path does; the arithmetic is AccumulatePortable's, one stripe at a time.
void EncodeOnePortable(const RetentionPattern& p, std::uint64_t lba,
                       std::uint64_t write_time_ns, unsigned char* b) {
  WriteHeader(p, lba, write_time_ns, b);
  std::uint64_t acc[kLanes];
  std::memcpy(acc, kHashInit, sizeof(acc));
  AccumulatePortable(acc, b, 1, 0);  // check fields are still zero
  std::uint64_t key[kLanes];
  for (std::size_t i = 0; i < kLanes; ++i) key[i] = kHashKey[i] + kHashStep;
  BodyGenerator gen(p.seed, lba);
  for (std::size_t off = kStripe; off < p.block_size; off += kStripe) {
    __builtin_prefetch(b + off + kPrefetchDistance, 1);
    std::uint64_t d[kLanes];
    for (std::size_t i = 0; i < kLanes; ++i) d[i] = gen.Next(i);
    std::memcpy(b + off, d, kStripe);
    for (std::size_t i = 0; i < kLanes; ++i) {
      const std::uint64_t k = d[i] ^ key[i];
      acc[i] += (k & 0xFFFFFFFFULL) * (k >> 32);
      acc[i ^ 1] += d[i];
      key[i] += kHashStep;
    }
  }
  SealHeader(b, Fold(acc, p.block_size));
}

// ---- AVX2 path: the same arithmetic, lanes 0..3 and 4..7 in two registers.

#if defined(__x86_64__)
#define DW_TARGET_AVX2 __attribute__((target("avx2")))

struct Avx2Hash {
  __m256i acc0, acc1, key0, key1;
};

DW_TARGET_AVX2 inline void Avx2HashStart(Avx2Hash& h, std::uint64_t stripe) {
  h.acc0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kHashInit));
  h.acc1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kHashInit + 4));
  const __m256i offset = _mm256_set1_epi64x(static_cast<long long>(stripe * kHashStep));
  h.key0 = _mm256_add_epi64(
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kHashKey)), offset);
  h.key1 = _mm256_add_epi64(
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kHashKey + 4)), offset);
}

// One stripe's four words `d` into four lanes. vpmuludq multiplies the low
// 32 bits of each 64-bit element; the shift brings the high half down. The
// 0x4E shuffle swaps the 64-bit halves of each 128-bit pair: lane i^1.
DW_TARGET_AVX2 inline void Avx2Lanes(__m256i& acc, __m256i& key, __m256i d,
                                     __m256i step) {
  const __m256i k = _mm256_xor_si256(d, key);
  const __m256i product = _mm256_mul_epu32(k, _mm256_srli_epi64(k, 32));
  acc = _mm256_add_epi64(acc, product);
  acc = _mm256_add_epi64(acc, _mm256_shuffle_epi32(d, 0x4E));
  key = _mm256_add_epi64(key, step);
}

DW_TARGET_AVX2 inline void Avx2Stripe(Avx2Hash& h, __m256i d0, __m256i d1) {
  const __m256i step = _mm256_set1_epi64x(static_cast<long long>(kHashStep));
  Avx2Lanes(h.acc0, h.key0, d0, step);
  Avx2Lanes(h.acc1, h.key1, d1, step);
}

DW_TARGET_AVX2 inline std::uint64_t Avx2HashFinish(const Avx2Hash& h,
                                                   std::size_t size) {
  alignas(32) std::uint64_t acc[kLanes];
  _mm256_store_si256(reinterpret_cast<__m256i*>(acc), h.acc0);
  _mm256_store_si256(reinterpret_cast<__m256i*>(acc + 4), h.acc1);
  return Fold(acc, size);
}

DW_TARGET_AVX2 inline __m256i LoadU(const unsigned char* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

// One xorshift128+ step on four lanes; returns their outputs.
DW_TARGET_AVX2 inline __m256i Avx2Next(__m256i& s0, __m256i& s1) {
  __m256i x = s0;
  const __m256i y = s1;
  const __m256i out = _mm256_add_epi64(x, y);
  s0 = y;
  x = _mm256_xor_si256(x, _mm256_slli_epi64(x, 23));
  s1 = _mm256_xor_si256(_mm256_xor_si256(x, y),
                        _mm256_xor_si256(_mm256_srli_epi64(x, 18),
                                         _mm256_srli_epi64(y, 5)));
  return out;
}

// Generates the body and hashes it while it is still in registers, so the
// writer touches each byte once.
DW_TARGET_AVX2 void EncodeOneAvx2(const RetentionPattern& p, std::uint64_t lba,
                                  std::uint64_t write_time_ns,
                                  unsigned char* b) {
  WriteHeader(p, lba, write_time_ns, b);
  Avx2Hash h;
  Avx2HashStart(h, 0);
  Avx2Stripe(h, LoadU(b), LoadU(b + 32));  // check fields are still zero

  const BodyGenerator gen(p.seed, lba);
  __m256i a0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(gen.s0));
  __m256i a1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(gen.s0 + 4));
  __m256i c0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(gen.s1));
  __m256i c1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(gen.s1 + 4));
  for (std::size_t off = kStripe; off < p.block_size; off += kStripe) {
    __builtin_prefetch(b + off + kPrefetchDistance, 1);
    const __m256i d0 = Avx2Next(a0, c0);
    const __m256i d1 = Avx2Next(a1, c1);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(b + off), d0);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(b + off + 32), d1);
    Avx2Stripe(h, d0, d1);
  }
  SealHeader(b, Avx2HashFinish(h, p.block_size));
}

const bool kHaveAvx2 = __builtin_cpu_supports("avx2");
#endif  // __x86_64__

// Everything but the checksum comparison that makes a block kOk.
bool HeaderMatches(const RetentionPattern& p, std::uint64_t lba,
                   const unsigned char* b) {
  const std::uint64_t version_and_size =
      kRetentionBlockVersion | (std::uint64_t{p.block_size} << 32);
  return Load64(b) == kRetentionMagic && Load64(b + 8) == version_and_size &&
         Load64(b + 16) == p.study_id && Load64(b + 24) == lba &&
         Load64(b + 56) == 0 &&
         Load64(b + kRetentionHeaderCheckOffset) == HeaderHash(b);
}

bool FastOk(const RetentionPattern& p, std::uint64_t lba,
            const unsigned char* b) {
  return HeaderMatches(p, lba, b) &&
         Load64(b + kRetentionChecksumOffset) ==
             detail::RetentionBlockHash(b, p.block_size);
}

// See BlockCheck::first_difference for what this promises.
std::uint32_t FirstDifference(const RetentionPattern& p, std::uint64_t lba,
                              const unsigned char* b) {
  std::vector<unsigned char> expected(p.block_size);
  EncodeRetentionBlock(p, lba, Load64(b + kRetentionWriteTimeOffset),
                       expected.data());
  std::size_t d = 0;
  while (d < p.block_size && b[d] == expected[d]) ++d;
  if (d == p.block_size) return 0;  // a block equal to `expected` is kOk
  // Bytes 0..39 as expected (the time as read), the checksum not: either
  // the time or the checksum field is damaged. Only damage to the time also
  // breaks the header check.
  if (d >= kRetentionChecksumOffset && d < kRetentionHeaderCheckOffset &&
      std::memcmp(b + kRetentionHeaderCheckOffset,
                  expected.data() + kRetentionHeaderCheckOffset, 8) != 0) {
    return kRetentionWriteTimeOffset;
  }
  return static_cast<std::uint32_t>(d);
}

}  // namespace

namespace detail {

bool HaveAvx2() {
#if defined(__x86_64__)
  return kHaveAvx2;
#else
  return false;
#endif
}

std::uint64_t RetentionBlockHashPortable(const void* block, std::size_t size) {
  const auto* b = static_cast<const unsigned char*>(block);
  std::uint64_t acc[kLanes];
  std::memcpy(acc, kHashInit, sizeof(acc));
  unsigned char first[kStripe];
  HashedHeaderStripe(b, first);
  AccumulatePortable(acc, first, 1, 0);
  AccumulatePortable(acc, b + kStripe, size / kStripe - 1, 1);
  return Fold(acc, size);
}

#if defined(__x86_64__)
DW_TARGET_AVX2 std::uint64_t RetentionBlockHashAvx2(const void* block,
                                                    std::size_t size) {
  const auto* b = static_cast<const unsigned char*>(block);
  Avx2Hash h;
  Avx2HashStart(h, 0);
  // The checksum and header_check words (5 and 6) are lanes 1 and 2 of the
  // second register: blend zeros over them.
  const __m256i upper = _mm256_blend_epi32(LoadU(b + 32), _mm256_setzero_si256(),
                                           0b00111100);
  Avx2Stripe(h, LoadU(b), upper);
  const unsigned char* end = b + size;
  for (const unsigned char* s = b + kStripe; s < end; s += kStripe) {
    __builtin_prefetch(s + kPrefetchDistance);
    Avx2Stripe(h, LoadU(s), LoadU(s + 32));
  }
  return Avx2HashFinish(h, size);
}

void EncodeRetentionBlocksAvx2(const RetentionPattern& p,
                               std::uint64_t first_lba, std::size_t n,
                               std::uint64_t write_time_ns, void* buf) {
  auto* b = static_cast<unsigned char*>(buf);
  for (std::size_t i = 0; i < n; ++i, b += p.block_size) {
    EncodeOneAvx2(p, first_lba + i, write_time_ns, b);
  }
}
#else
std::uint64_t RetentionBlockHashAvx2(const void* block, std::size_t size) {
  return RetentionBlockHashPortable(block, size);
}
void EncodeRetentionBlocksAvx2(const RetentionPattern& p,
                               std::uint64_t first_lba, std::size_t n,
                               std::uint64_t write_time_ns, void* buf) {
  EncodeRetentionBlocksPortable(p, first_lba, n, write_time_ns, buf);
}
#endif

void EncodeRetentionBlocksPortable(const RetentionPattern& p,
                                   std::uint64_t first_lba, std::size_t n,
                                   std::uint64_t write_time_ns, void* buf) {
  auto* b = static_cast<unsigned char*>(buf);
  for (std::size_t i = 0; i < n; ++i, b += p.block_size) {
    EncodeOnePortable(p, first_lba + i, write_time_ns, b);
  }
}

std::uint64_t RetentionBlockHash(const void* block, std::size_t size) {
  return HaveAvx2() ? RetentionBlockHashAvx2(block, size)
                    : RetentionBlockHashPortable(block, size);
}

}  // namespace detail

bool IsValidRetentionPattern(const RetentionPattern& p) {
  return p.study_id != 0 && p.block_size >= kRetentionMinBlockSize &&
         p.block_size <= kRetentionMaxBlockSize &&
         p.block_size % kRetentionMinBlockSize == 0;
}

const char* ToString(BlockVerdict verdict) {
  switch (verdict) {
    case BlockVerdict::kOk: return "ok";
    case BlockVerdict::kWrongContent: return "wrong content";
    case BlockVerdict::kMisplaced: return "misplaced";
    case BlockVerdict::kStale: return "stale";
  }
  return "?";
}

void EncodeRetentionBlocks(const RetentionPattern& p, std::uint64_t first_lba,
                           std::size_t n, std::uint64_t write_time_ns,
                           void* buf) {
  if (detail::HaveAvx2()) {
    detail::EncodeRetentionBlocksAvx2(p, first_lba, n, write_time_ns, buf);
  } else {
    detail::EncodeRetentionBlocksPortable(p, first_lba, n, write_time_ns, buf);
  }
}

void EncodeRetentionBlock(const RetentionPattern& p, std::uint64_t lba,
                          std::uint64_t write_time_ns, void* block) {
  EncodeRetentionBlocks(p, lba, 1, write_time_ns, block);
}

std::optional<RetentionBlockHeader> DecodeRetentionHeader(const void* block,
                                                          std::size_t size) {
  if (block == nullptr || size < kRetentionHeaderSize) return std::nullopt;
  const auto* b = static_cast<const unsigned char*>(block);
  if (Load64(b) != kRetentionMagic ||
      Load64(b + kRetentionHeaderCheckOffset) != HeaderHash(b)) {
    return std::nullopt;
  }
  RetentionBlockHeader h;
  h.version = Load32(b + 8);
  h.block_size = Load32(b + 12);
  h.study_id = Load64(b + 16);
  h.lba = Load64(b + 24);
  h.write_time_ns = Load64(b + kRetentionWriteTimeOffset);
  h.checksum = Load64(b + kRetentionChecksumOffset);
  return h;
}

BlockCheck CheckRetentionBlock(const RetentionPattern& p, std::uint64_t lba,
                               const void* block) {
  const auto* b = static_cast<const unsigned char*>(block);
  BlockCheck c;
  const auto header = DecodeRetentionHeader(b, p.block_size);
  if (header) c.write_time_ns = header->write_time_ns;
  // Intact: a version-1 block of our block size whose every byte is as its
  // writer sealed it, whoever that was.
  const bool intact = header && header->version == kRetentionBlockVersion &&
                      header->block_size == p.block_size &&
                      Load64(b + 56) == 0 &&
                      header->checksum ==
                          detail::RetentionBlockHash(b, p.block_size);
  if (intact) {
    const bool ours = header->study_id == p.study_id;
    if (ours && header->lba == lba) return c;
    if (ours) {
      c.verdict = BlockVerdict::kMisplaced;
      c.found_lba = header->lba;
      return c;
    }
    if (header->lba == lba) {
      c.verdict = BlockVerdict::kStale;
      c.found_study = header->study_id;
      return c;
    }
  }
  c.verdict = BlockVerdict::kWrongContent;
  c.first_difference = FirstDifference(p, lba, b);
  return c;
}

std::size_t CheckRetentionBlocks(
    const RetentionPattern& p, std::uint64_t first_lba, std::size_t n,
    const void* buf,
    const std::function<void(std::size_t, const BlockCheck&)>& bad) {
  const auto* b = static_cast<const unsigned char*>(buf);
  std::size_t ok = 0;
  for (std::size_t i = 0; i < n; ++i, b += p.block_size) {
    if (FastOk(p, first_lba + i, b)) {
      ++ok;
      continue;
    }
    const BlockCheck c = CheckRetentionBlock(p, first_lba + i, b);
    if (c.verdict == BlockVerdict::kOk) {
      ++ok;  // unreachable unless the two paths disagree; never drop a block
    } else if (bad) {
      bad(i, c);
    }
  }
  return ok;
}

}  // namespace drivewatch::aging
