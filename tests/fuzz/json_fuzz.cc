// SPDX-License-Identifier: Apache-2.0
// Json::Parse on any text; what it accepts must survive Dump(), compact
// and pretty: Parse(Dump(j)) == j.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string_view>

#include "aging/json.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using drivewatch::aging::Json;
  const auto json = Json::Parse(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!json) return 0;
  for (int indent : {-1, 2}) {
    const std::string text = json->Dump(indent);
    const auto again = Json::Parse(text);
    if (!again || !(*again == *json)) std::fprintf(stderr, "Dump(%d): %s\n", indent, text.c_str());
    DW_FUZZ_CHECK(again.ok(), "Dump() output does not parse");
    DW_FUZZ_CHECK(*again == *json, "Dump() round trip changed the value");
    DW_FUZZ_CHECK(again->Dump(indent) == text, "Dump() is not stable");
  }
  return 0;
}
