// SPDX-License-Identifier: Apache-2.0
// `drivewatch phase run NAME` and `drivewatch history`: heavy phases by
// hand, and the long-term record they leave.
#pragma once

#include "exporter/commands/cli.h"

namespace drivewatch {

// Runs the phase in the foreground under the same interlocks as the
// daemon: a progress bar with throughput and ETA on a terminal (stderr),
// a plain line per second otherwise; the history record as JSON on
// stdout. SIGINT and SIGTERM abort the phase cleanly (recorded as
// aborted). Exit status: 0 completed, 1 aborted or failed, 2 refused or a
// bad command line or config, kExitDataDamaged (3) completed but the data
// did not read back as written (a retention verify that found bad blocks).
inline constexpr int kExitDataDamaged = 3;
int RunPhaseCommand(const CommandLine& cli);

// `drivewatch endurance reset NAME`: ends endurance phase NAME's test so
// its next run starts a new one (aging::ResetEnduranceTest). Exit status 0
// reset, 1 nothing to reset or a run holds the target, 2 no such endurance
// phase or a bad config.
int RunEnduranceCommand(const CommandLine& cli);

// Prints the history in the config's state directory. Exit status 0, or 1
// when it cannot be read.
int RunHistoryCommand(const CommandLine& cli);

// `drivewatch retention list` and `drivewatch retention report STUDY`: the
// studies in the config's state directory. Exit status 0, 1 when a study
// cannot be read, 2 when there is no such study.
int RunRetentionCommand(const CommandLine& cli);

}  // namespace drivewatch
