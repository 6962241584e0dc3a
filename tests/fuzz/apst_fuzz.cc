// SPDX-License-Identifier: Apache-2.0
// DecodeApstTable (Feature 0Ch data, NVMe 2.0 Figure 328) on any bytes:
// bytes 0..3 are the Get Features completion dword 0, the rest the data
// buffer. The same dword also goes through the AER decoder, which shares
// the features header.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "probes/drive/features.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 4) return 0;
  std::uint32_t dw0;
  std::memcpy(&dw0, data, 4);
  const auto rest = std::span(data + 4, size - 4);
  const auto table = drivewatch::DecodeApstTable(dw0, rest);
  DW_FUZZ_CHECK(table.ok() == (rest.size() >= drivewatch::kApstTableSize),
                "accepts exactly 256+ bytes");
  const auto event = drivewatch::DecodeAsyncEvent(dw0);
  (void)event.TypeName();
  (void)event.InfoName();
  (void)drivewatch::DecodePowerManagement(dw0);
  (void)drivewatch::DecodeHostThermalManagement(dw0);
  (void)drivewatch::DecodeTemperatureThresholdKelvin(dw0);
  return 0;
}
