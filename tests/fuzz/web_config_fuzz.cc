// SPDX-License-Identifier: Apache-2.0
// ParseWebConfig (the --web.config.file YAML) on any text, without
// opening certificate files; and the YAML reader under it (libyaml's event
// parser and the checks drivewatch puts on its events).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "exporter/http/web_config.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto loaded = drivewatch::ParseWebConfig(text, "fuzz.yml", "/nonexistent",
                                                 /*check_files=*/false);
  DW_FUZZ_CHECK(loaded.config.has_value() == loaded.errors.empty(),
                "a config comes exactly when there are no errors");
  for (const auto& e : loaded.errors) (void)e.ToString();
  (void)drivewatch::detail::ParseYamlSubset(text);
  return 0;
}
