// SPDX-License-Identifier: Apache-2.0
// DecodeErrorLog (log page 01h) on any bytes, and the label names of what
// it decodes.
#include <cstddef>
#include <cstdint>
#include <span>

#include "probes/error_log.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto entries = drivewatch::DecodeErrorLog(std::span(data, size));
  DW_FUZZ_CHECK(entries.size() <= size / drivewatch::kErrorLogEntrySize, "more entries than bytes");
  for (const auto& e : entries) {
    DW_FUZZ_CHECK(e.error_count != 0, "an unused entry was kept");
    (void)drivewatch::StatusCodeTypeName(e.sct);
    (void)drivewatch::StatusCodeName(e.sct, e.sc);
    (void)drivewatch::ErrorCountAfter(e.error_count, entries.front().error_count);
  }
  return 0;
}
