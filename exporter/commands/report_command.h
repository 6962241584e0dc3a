// SPDX-License-Identifier: Apache-2.0
// `drivewatch report`: the test report of the drives' aging runs
// (aging/report/drive_report.h, docs/report.md).
#pragma once

#include "exporter/commands/cli.h"

namespace drivewatch {

// Reads the history and retention studies of the config's state directory,
// or the history files and study records named on the command line (a
// study record is a file that starts with "{", a history one with "DWH1 "),
// and prints the report in --format to stdout or --output. Damaged records
// and studies are said on stderr and in the report, and give no result.
// The report's date is SOURCE_DATE_EPOCH when set (reproducible output),
// else now. Exit status: 0 written, 1 a file could not be read or written,
// 2 a bad command line or config, or a drive, baseline or run id that is
// not on record.
int RunReportCommand(const CommandLine& cli);

}  // namespace drivewatch
