// SPDX-License-Identifier: Apache-2.0
// The retention block format (aging/retention/retention_block.h): any bytes as one
// block read back from a drive. DecodeRetentionHeader gets the exact
// buffer; CheckRetentionBlock gets it as a block of a fixed study whose
// size is the input's, rounded down to a multiple of 512 (zero padded to
// 512 when shorter). Properties checked:
//   - a kOk verdict means the header decodes to this study and LBA;
//   - re-encoding the block the header names classifies as kOk;
//   - the batch path agrees with the single-block one;
//   - the AVX2 BlockHash gives the portable one's bits.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "aging/retention/retention_block.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using namespace drivewatch::aging;

// The study the seeds in corpus/retention_block/ were written for
// (make_retention_seeds.cc).
constexpr std::uint64_t kStudyId = 0x0123456789abcdefULL;
constexpr std::uint64_t kSeed = 42;
constexpr std::uint64_t kLba = 1000;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // Exactly `size` bytes on the heap, so a read past the end is caught.
  std::vector<std::uint8_t> exact(data, data + size);
  const auto header = DecodeRetentionHeader(exact.data(), exact.size());
  DW_FUZZ_CHECK(!header || size >= kRetentionHeaderSize, "a header from a short buffer");

  const std::size_t block_size = std::clamp<std::size_t>(
      size / kRetentionMinBlockSize * kRetentionMinBlockSize, kRetentionMinBlockSize,
      kRetentionMaxBlockSize);
  std::vector<std::uint8_t> block(block_size, 0);
  std::memcpy(block.data(), data, std::min(size, block_size));
  const RetentionPattern p{kStudyId, kSeed, static_cast<std::uint32_t>(block_size)};
  DW_FUZZ_CHECK(IsValidRetentionPattern(p), "the fuzz pattern is invalid");

  const BlockCheck check = CheckRetentionBlock(p, kLba, block.data());
  (void)ToString(check.verdict);
  const auto h = DecodeRetentionHeader(block.data(), block.size());
  if (check.verdict == BlockVerdict::kOk) {
    DW_FUZZ_CHECK(h && h->study_id == kStudyId && h->lba == kLba, "kOk with a foreign header");
    DW_FUZZ_CHECK(check.write_time_ns == h->write_time_ns, "kOk with another write time");
  } else {
    DW_FUZZ_CHECK(check.first_difference < block_size, "difference outside the block");
  }

  std::size_t bad_calls = 0;
  const std::size_t ok = CheckRetentionBlocks(
      p, kLba, 1, block.data(), [&](std::size_t index, const BlockCheck& c) {
        DW_FUZZ_CHECK(index == 0, "bad index");
        DW_FUZZ_CHECK(c.verdict == check.verdict, "batch and single verdicts differ");
        DW_FUZZ_CHECK(c.first_difference == check.first_difference, "batch and single differ");
        ++bad_calls;
      });
  DW_FUZZ_CHECK(ok + bad_calls == 1, "a block counted twice or not at all");
  DW_FUZZ_CHECK((ok == 1) == (check.verdict == BlockVerdict::kOk), "batch and single disagree");

  if (h && h->study_id == kStudyId && h->block_size == block_size) {
    std::vector<std::uint8_t> fresh(block_size);
    EncodeRetentionBlock(p, h->lba, h->write_time_ns, fresh.data());
    const BlockCheck again = CheckRetentionBlock(p, h->lba, fresh.data());
    DW_FUZZ_CHECK(again.verdict == BlockVerdict::kOk, "a freshly encoded block is not kOk");
    DW_FUZZ_CHECK(again.write_time_ns == h->write_time_ns, "write time lost");
  }

  if (detail::HaveAvx2()) {
    DW_FUZZ_CHECK(detail::RetentionBlockHashPortable(block.data(), block_size) ==
                      detail::RetentionBlockHashAvx2(block.data(), block_size),
                  "AVX2 and portable BlockHash differ");
  }
  return 0;
}
