// SPDX-License-Identifier: Apache-2.0
// DecodeSmartLog (log page 02h) on any bytes.
#include <cstddef>
#include <cstdint>
#include <span>

#include "probes/drive/smart_log.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto log = drivewatch::DecodeSmartLog(std::span(data, size));
  DW_FUZZ_CHECK(log.ok() == (size >= drivewatch::kSmartLogSize), "accepts exactly 512+ bytes");
  if (log.ok()) (void)log->IntervalPowerWatts();
  return 0;
}
