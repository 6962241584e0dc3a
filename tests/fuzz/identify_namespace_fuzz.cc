// SPDX-License-Identifier: Apache-2.0
// DecodeIdentifyNamespace (CNS 00h) on any bytes.
#include <cstddef>
#include <cstdint>
#include <span>

#include "probes/drive/identify.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto ns = drivewatch::DecodeIdentifyNamespace(std::span(data, size));
  // Also refused: an inactive (all-zero) namespace, a format out of range.
  DW_FUZZ_CHECK(!ns.ok() || size >= drivewatch::kIdentifySize, "accepts a short buffer");
  if (ns.ok()) {
    DW_FUZZ_CHECK(ns->format_index < ns->lba_formats.size(), "format in use out of range");
    (void)ns->BlocksToBytes(0);
    (void)ns->BlocksToBytes(1);
    (void)ns->BlocksToBytes(~0ull);
  }
  return 0;
}
