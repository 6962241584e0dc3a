// SPDX-License-Identifier: Apache-2.0
// DecodePersistentEventLog (log page 0Dh) on any bytes: the decoder
// promises to be total and never to read outside the buffer, which the
// fuzzer checks by handing it an exactly sized heap copy.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "probes/persistent_event_log.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto log = drivewatch::DecodePersistentEventLog(std::span(data, size));
  std::size_t event_bytes = 0;
  for (const auto& e : log.events) {
    event_bytes += e.data.size();
    (void)drivewatch::PersistentEventTypeName(e.type);
    if (e.type == drivewatch::kPelThermalExcursion) {
      (void)drivewatch::DecodeThermalExcursion(e.data);
    }
  }
  DW_FUZZ_CHECK(event_bytes <= size, "events hold more data than the log");
  return 0;
}
