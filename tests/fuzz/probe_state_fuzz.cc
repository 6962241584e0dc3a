// SPDX-License-Identifier: Apache-2.0
// ParseStateLines: the probes' "key value" state files, which a hand edit
// (or a bad disk) can leave in any shape.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "probes/probe_state.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto lines = drivewatch::ParseStateLines(text);
  std::size_t bytes = 0;
  for (const auto& [key, value] : lines) {
    DW_FUZZ_CHECK(!key.empty(), "an empty key");
    DW_FUZZ_CHECK(key.find_first_of(" \n") == std::string::npos, "a key with a separator");
    DW_FUZZ_CHECK(value.find('\n') == std::string::npos, "a value across lines");
    bytes += key.size() + value.size();
  }
  DW_FUZZ_CHECK(bytes <= size, "more state than text");
  return 0;
}
