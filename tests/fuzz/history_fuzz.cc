// SPDX-License-Identifier: Apache-2.0
// HistoryFile::Read on a file holding the fuzz bytes (a memfd, so no disk
// is touched), then every record through the three renderers of
// `drivewatch history`.
#include <cstddef>
#include <cstdint>
#include <string>

#include "aging/history/history.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace drivewatch;
  using namespace drivewatch::aging;
  const HistoryFile file(FuzzFile(data, size));
  const auto contents = file.Read();
  DW_FUZZ_CHECK(contents.ok(), "reading a readable file failed");
  DW_FUZZ_CHECK(contents->torn_tail_bytes <= size, "torn tail longer than the file");
  for (const auto& r : contents->records) {
    DW_FUZZ_CHECK(r.is_object(), "a record that is not an object");
  }
  for (auto format : {HistoryFormat::kTable, HistoryFormat::kJson, HistoryFormat::kCsv}) {
    (void)RenderHistory(contents->records, {}, format);
    (void)RenderHistory(contents->records, {"S5X", "fill"}, format);
  }
  return 0;
}
