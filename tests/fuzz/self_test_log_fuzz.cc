// SPDX-License-Identifier: Apache-2.0
// DecodeSelfTestLog (log page 06h) on any bytes, and the names and
// identities the probe builds from it.
#include <cstddef>
#include <cstdint>
#include <span>

#include "probes/self_test.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto log = drivewatch::DecodeSelfTestLog(std::span(data, size));
  DW_FUZZ_CHECK(log.ok() == (size >= drivewatch::kSelfTestLogSize), "accepts exactly 564+ bytes");
  if (!log.ok()) return 0;
  DW_FUZZ_CHECK(log->results.size() <= 20, "more than the log's 20 results");
  (void)drivewatch::SelfTestTypeName(log->current_operation);
  for (const auto& r : log->results) {
    (void)drivewatch::SelfTestTypeName(r.code);
    (void)drivewatch::SelfTestResultName(r.result);
    (void)drivewatch::SelfTestFailed(r.result);
    (void)r.Identity();
  }
  return 0;
}
