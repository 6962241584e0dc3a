// SPDX-License-Identifier: Apache-2.0
// `drivewatch report` over a history holding the fuzz bytes (a memfd, so no
// disk is touched): BuildDriveReport streaming it (HistoryFile::ForEach) for every drive,
// with the first one as the baseline too, then all four renderings.
#include <cstddef>
#include <cstdint>
#include <string>

#include "aging/report/drive_report.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace drivewatch;
  using namespace drivewatch::aging;
  const std::string file = FuzzFile(data, size);
  std::vector<HistorySource> histories = {HistorySource::File("fuzz.dwh", file)};
  auto model = BuildDriveReport(histories, {}, {});
  DW_FUZZ_CHECK(model.ok(), "a report that names no drive, baseline or run was refused, or "
                            "reading a readable file failed");
  // The JSON printed is the model.
  auto parsed = ParseJson(RenderDriveReport(*model, DriveReportFormat::kJson));
  DW_FUZZ_CHECK(parsed.ok() && *parsed == *model, "the JSON report does not parse back to the model");
  const std::string html = RenderDriveReport(*model, DriveReportFormat::kHtml);
  DW_FUZZ_CHECK(html.find("<script") == std::string::npos, "a script in the HTML report");
  DW_FUZZ_CHECK(html.find("<img") == std::string::npos, "an image in the HTML report");
  for (auto format : {DriveReportFormat::kText, DriveReportFormat::kMarkdown}) {
    for (char c : RenderDriveReport(*model, format)) {
      DW_FUZZ_CHECK(static_cast<unsigned char>(c) >= 0x20 || c == '\n',
                    "a control character in the text or markdown report");
    }
  }
  // With its first drive as the baseline of the others.
  const auto& drives = Items(*Find(*model, "drives"));
  if (!drives.empty()) {
    DriveReportRequest r;
    r.baseline = AsString(*Find(drives.front(), "drive"));
    auto with = BuildDriveReport(histories, {}, r);
    DW_FUZZ_CHECK(with.ok(), "a baseline on record was refused");
    (void)RenderDriveReport(*with, DriveReportFormat::kHtml);
    (void)RenderDriveReport(*with, DriveReportFormat::kText);
  }
  return 0;
}
