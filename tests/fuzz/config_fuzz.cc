// SPDX-License-Identifier: Apache-2.0
// config::LoadString on any text must return a Config or located errors,
// never crash or throw; and a Config it accepts must survive ToToml():
// config.h promises LoadString(ToToml(c)) gives back c.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "config/config.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using drivewatch::config::LoadString;
  using drivewatch::config::ToToml;
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto loaded = LoadString(text, "fuzz.toml");
  if (!loaded.config) {
    DW_FUZZ_CHECK(!loaded.errors.empty(), "rejected without an error");
    for (const auto& e : loaded.errors) (void)e.ToString();
    return 0;
  }
  const std::string toml = ToToml(*loaded.config);
  const auto again = LoadString(toml, "fuzz-roundtrip.toml");
  if (!again.config || !(*again.config == *loaded.config)) {
    std::fprintf(stderr, "--- ToToml output:\n%s\n---\n", toml.c_str());
    for (const auto& e : again.errors) std::fprintf(stderr, "%s\n", e.ToString().c_str());
  }
  DW_FUZZ_CHECK(again.config, "ToToml() output does not load");
  DW_FUZZ_CHECK(*again.config == *loaded.config, "ToToml() round trip changed the config");
  return 0;
}
