// SPDX-License-Identifier: Apache-2.0
// Retention-block encode and check throughput in memory, beside CRC-32C
// over the same buffers (what fio's --verify=crc32c computes per block;
// config/util/crc32c.h's SSE4.2 path stands in for fio's crc32c-intel).
//
//   build-R1/tests/retention_block_bench --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true   (one command line)
//
// Each benchmark walks a 64 MiB buffer (larger than the L3 of the machines
// we run on) block by block, so the numbers include memory traffic, as a
// writer or verifier streaming through its I/O buffers would see. Arguments
// are the block size. BM_EncodeThenCheck counts each byte once: its rate is
// bytes / (encode time + check time).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "aging/retention/retention_block.h"
#include "config/util/crc32c.h"

namespace {

using drivewatch::aging::CheckRetentionBlocks;
using drivewatch::aging::Crc32c;
using drivewatch::aging::EncodeRetentionBlocks;
using drivewatch::aging::RetentionPattern;
namespace detail = drivewatch::aging::detail;

constexpr std::size_t kBufferSize = 64 << 20;
constexpr std::uint64_t kTime = 1'700'000'000'000'000'000ULL;
constexpr std::uint64_t kFirstLba = 1'000'000;

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

// One page-aligned buffer per process, touched once so page faults stay out
// of the timings.
unsigned char* Buffer() {
  static const std::unique_ptr<void, FreeDeleter> buffer = [] {
    void* p = std::aligned_alloc(4096, kBufferSize);
    std::memset(p, 0, kBufferSize);
    return std::unique_ptr<void, FreeDeleter>(p);
  }();
  return static_cast<unsigned char*>(buffer.get());
}

RetentionPattern Pattern(const benchmark::State& state) {
  return {0x5EED5EED00000001ULL, 0x0123456789ABCDEFULL,
          static_cast<std::uint32_t>(state.range(0))};
}

std::size_t Blocks(const RetentionPattern& p) { return kBufferSize / p.block_size; }

void Verify(benchmark::State& state, const RetentionPattern& p) {
  const std::size_t ok =
      CheckRetentionBlocks(p, kFirstLba, Blocks(p), Buffer(), nullptr);
  if (ok != Blocks(p)) state.SkipWithError("blocks failed their check");
}

void BM_Encode(benchmark::State& state) {
  const RetentionPattern p = Pattern(state);
  for (auto _ : state) {
    EncodeRetentionBlocks(p, kFirstLba, Blocks(p), kTime, Buffer());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * kBufferSize);
  Verify(state, p);
}

void BM_EncodePortable(benchmark::State& state) {
  const RetentionPattern p = Pattern(state);
  for (auto _ : state) {
    detail::EncodeRetentionBlocksPortable(p, kFirstLba, Blocks(p), kTime, Buffer());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * kBufferSize);
  Verify(state, p);
}

void BM_Check(benchmark::State& state) {
  const RetentionPattern p = Pattern(state);
  EncodeRetentionBlocks(p, kFirstLba, Blocks(p), kTime, Buffer());
  for (auto _ : state) {
    const std::size_t ok =
        CheckRetentionBlocks(p, kFirstLba, Blocks(p), Buffer(), nullptr);
    benchmark::DoNotOptimize(ok);
    if (ok != Blocks(p)) state.SkipWithError("blocks failed their check");
  }
  state.SetBytesProcessed(state.iterations() * kBufferSize);
}

// The checksum alone over every block, portable path, for the dispatch's
// worth.
void BM_HashPortable(benchmark::State& state) {
  const RetentionPattern p = Pattern(state);
  EncodeRetentionBlocks(p, kFirstLba, Blocks(p), kTime, Buffer());
  for (auto _ : state) {
    std::uint64_t h = 0;
    for (std::size_t off = 0; off < kBufferSize; off += p.block_size) {
      h ^= detail::RetentionBlockHashPortable(Buffer() + off, p.block_size);
    }
    benchmark::DoNotOptimize(h);
  }
  state.SetBytesProcessed(state.iterations() * kBufferSize);
}

void BM_EncodeThenCheck(benchmark::State& state) {
  const RetentionPattern p = Pattern(state);
  for (auto _ : state) {
    EncodeRetentionBlocks(p, kFirstLba, Blocks(p), kTime, Buffer());
    benchmark::ClobberMemory();
    const std::size_t ok =
        CheckRetentionBlocks(p, kFirstLba, Blocks(p), Buffer(), nullptr);
    benchmark::DoNotOptimize(ok);
    if (ok != Blocks(p)) state.SkipWithError("blocks failed their check");
  }
  state.SetBytesProcessed(state.iterations() * kBufferSize);
}

// One CRC per block, as fio's verify does per verify_interval (= bs).
void BM_Crc32c(benchmark::State& state) {
  const RetentionPattern p = Pattern(state);
  EncodeRetentionBlocks(p, kFirstLba, Blocks(p), kTime, Buffer());
  for (auto _ : state) {
    std::uint32_t crc = 0;
    for (std::size_t off = 0; off < kBufferSize; off += p.block_size) {
      crc ^= Crc32c(Buffer() + off, p.block_size);
    }
    benchmark::DoNotOptimize(crc);
  }
  state.SetBytesProcessed(state.iterations() * kBufferSize);
}

BENCHMARK(BM_Encode)->Arg(4096)->Arg(65536);
BENCHMARK(BM_Check)->Arg(4096)->Arg(65536);
BENCHMARK(BM_EncodeThenCheck)->Arg(4096)->Arg(65536);
BENCHMARK(BM_Crc32c)->Arg(4096)->Arg(65536);
BENCHMARK(BM_EncodePortable)->Arg(4096)->Arg(65536);
BENCHMARK(BM_HashPortable)->Arg(4096)->Arg(65536);

}  // namespace

BENCHMARK_MAIN();
