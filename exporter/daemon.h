// The three ways drivewatch runs: as a daemon, one-shot collection, and
// config validation. Each returns the process exit status.
#pragma once

#include "exporter/cli.h"

namespace drivewatch {

int RunDaemon(const CommandLine& cli);
int RunCollectOnce(const CommandLine& cli);
int RunCheckConfig(const CommandLine& cli);

}  // namespace drivewatch
