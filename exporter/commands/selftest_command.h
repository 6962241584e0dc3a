// SPDX-License-Identifier: Apache-2.0
// `drivewatch selftest run --drive SERIAL --type short|extended [--wait]`:
// one device self-test by hand, outside the daemon's schedule.
#pragma once

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>

#include "exporter/commands/cli.h"
#include "probes/drive/drive_layer.h"

namespace drivewatch {

// Exit status: 0 started (or, with --wait, passed); 1 failed, aborted or
// the drive refused; 2 bad arguments (no such drive, no self-test support).
int RunSelfTestCommand(const CommandLine& cli);

struct SelfTestRun {
  std::string serial;
  std::uint8_t code = 0;  // kSelfTestShort or kSelfTestExtended
  bool wait = false;
  // Progress: rewritten in place on a terminal, else a plain line per poll.
  std::FILE* out = stdout;
  bool terminal = false;
  std::function<void(std::chrono::milliseconds)> sleep;  // between polls
  std::FILE* err = stderr;  // "drivewatch: ..." failures
};
// The command's work on any drive layer (tests pass a fake).
int RunSelfTest(DriveLayer& layer, const SelfTestRun& run);

}  // namespace drivewatch
