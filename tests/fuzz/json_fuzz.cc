// SPDX-License-Identifier: Apache-2.0
// ParseJson on any text; what it accepts must survive DumpJson, compact
// and pretty: ParseJson(DumpJson(j)) == j. What it refuses has an error
// located in the text: "line L, column C: what", with L and C inside the
// input (C may be one past the end of its line).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string_view>

#include "config/util/json.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

// Whether `message` starts with a line and column inside `text`; columns
// count characters (UTF-8 lead bytes and ASCII), as ParseJson does.
bool LocatedIn(std::string_view text, const std::string& message) {
  std::size_t line = 0, column = 0;
  int consumed = 0;
  if (std::sscanf(message.c_str(), "line %zu, column %zu: %n", &line, &column, &consumed) != 2 ||
      consumed == 0 || static_cast<std::size_t>(consumed) >= message.size()) {
    return false;
  }
  std::size_t at_line = 1, characters = 0;
  for (const char c : text) {
    if (c == '\n') {
      if (at_line == line) break;
      ++at_line;
      characters = 0;
    } else if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) {
      ++characters;
    }
  }
  return at_line == line && column >= 1 && column <= characters + 1;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using drivewatch::DumpJson;
  using drivewatch::ParseJson;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto json = ParseJson(input);
  if (!json) {
    if (!LocatedIn(input, json.error().message)) {
      std::fprintf(stderr, "error: %s\n", json.error().message.c_str());
    }
    DW_FUZZ_CHECK(LocatedIn(input, json.error().message), "an error is not located in the input");
    return 0;
  }
  for (int indent : {-1, 2}) {
    const std::string text = DumpJson(*json, indent);
    const auto again = ParseJson(text);
    if (!again || !(*again == *json)) {
      std::fprintf(stderr, "DumpJson(%d): %s\n", indent, text.c_str());
    }
    DW_FUZZ_CHECK(again.ok(), "DumpJson output does not parse");
    DW_FUZZ_CHECK(*again == *json, "DumpJson round trip changed the value");
    DW_FUZZ_CHECK(DumpJson(*again, indent) == text, "DumpJson is not stable");
  }
  return 0;
}
