// SPDX-License-Identifier: Apache-2.0
// DecodeIdentifyController (CNS 01h) on any bytes, with the power state
// descriptors it carries (NVMe 2.0 Figure 276) and the PSD-based power
// estimate built on them.
#include <cstddef>
#include <cstdint>
#include <span>

#include "probes/drive/identify.h"
#include "probes/power_estimate.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto id = drivewatch::DecodeIdentifyController(std::span(data, size));
  DW_FUZZ_CHECK(id.ok() == (size >= drivewatch::kIdentifySize), "accepts exactly 4096+ bytes");
  if (!id.ok()) return 0;
  (void)id->Version();
  (void)id->ErrorLogCapacity();
  const int states = id->PowerStateCount();
  DW_FUZZ_CHECK(states >= 1 && states <= 32, "power state count out of range");
  for (int i = -1; i <= states; ++i) {
    if (i >= 0 && i < states) {
      const auto& psd = id->power_states[static_cast<std::size_t>(i)];
      (void)psd.MaxPowerWatts();
      (void)psd.IdlePowerWatts();
      (void)psd.ActivePowerWatts();
    }
    (void)drivewatch::PsdIdleEstimateWatts(*id, i);
  }
  return 0;
}
