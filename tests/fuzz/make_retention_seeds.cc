// SPDX-License-Identifier: Apache-2.0
// Writes the retention_block seed corpus: blocks of the study that
// retention_block_fuzz.cc checks against (kOk, misplaced, stale, damaged
// body, damaged write time) at 512 and 4096 bytes. Built with the fuzz
// targets, run by hand:
//   build-fuzz/tests/fuzz/make_retention_seeds tests/fuzz/corpus/retention_block
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "aging/retention/retention_block.h"

using namespace drivewatch::aging;

namespace {

void Write(const std::string& dir, const std::string& name, const std::vector<std::uint8_t>& b) {
  std::ofstream(dir + "/" + name, std::ios::binary)
      .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const std::uint64_t t = 1'750'000'000'000'000'000ULL;
  for (std::uint32_t bs : {512u, 4096u}) {
    const std::string s = std::to_string(bs);
    const RetentionPattern p{0x0123456789abcdefULL, 42, bs};
    std::vector<std::uint8_t> b(bs);
    EncodeRetentionBlock(p, 1000, t, b.data());
    Write(dir, "ok-" + s, b);
    auto body = b;
    body[bs - 1] ^= 0x10;
    Write(dir, "damaged-body-" + s, body);
    auto time = b;
    time[kRetentionWriteTimeOffset + 2] ^= 1;
    Write(dir, "damaged-write-time-" + s, time);
    EncodeRetentionBlock(p, 1001, t, b.data());
    Write(dir, "misplaced-" + s, b);
    const RetentionPattern other{0xfedcba9876543210ULL, 7, bs};
    EncodeRetentionBlock(other, 1000, t, b.data());
    Write(dir, "stale-" + s, b);
  }
  Write(dir, "zeros-512", std::vector<std::uint8_t>(512));
  return 0;
}
