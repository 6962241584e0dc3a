// SPDX-License-Identifier: Apache-2.0
// The three ways drivewatch runs: as a daemon, one-shot collection, and
// config validation. Each returns the process exit status.
#pragma once

#include <optional>

#include "config/config.h"
#include "exporter/commands/cli.h"

namespace drivewatch {

int RunDaemon(const CommandLine& cli);
int RunCollectOnce(const CommandLine& cli);
int RunCheckConfig(const CommandLine& cli);

// Loads --config.file (or the defaults) and applies the command-line
// overrides. Prints every problem to stderr; returns nothing on error.
// Sets *out_of_descriptors (when given) if reading failed because the
// process or the system ran out of file descriptors: then the file was not
// checked at all, and saying it is invalid would be wrong.
std::optional<config::Config> LoadConfig(const CommandLine& cli,
                                         bool* out_of_descriptors = nullptr);

}  // namespace drivewatch
