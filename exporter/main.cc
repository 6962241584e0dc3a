// SPDX-License-Identifier: Apache-2.0
#include <cstdio>
#include <string>
#include <vector>

#include "exporter/commands/cli.h"
#include "exporter/commands/phase_command.h"
#include "exporter/commands/report_command.h"
#include "exporter/commands/selftest_command.h"
#include "exporter/daemon.h"

int main(int argc, char** argv) {
  using drivewatch::CommandLine;
  const std::vector<std::string> args(argv, argv + argc);
  const auto parsed = drivewatch::ParseCommandLine(args);
  if (!parsed.cli) {
    std::fprintf(stderr, "drivewatch: %s\n", parsed.error.c_str());
    return 2;
  }
  const CommandLine& cli = *parsed.cli;
  switch (cli.command) {
    case CommandLine::Command::kHelp:
      std::fputs(drivewatch::UsageText(cli.help_for).c_str(), stdout);
      return 0;
    case CommandLine::Command::kVersion:
      std::fputs(drivewatch::VersionText().c_str(), stdout);
      return 0;
    case CommandLine::Command::kCheckConfig:
      return drivewatch::RunCheckConfig(cli);
    case CommandLine::Command::kCollect:
      return drivewatch::RunCollectOnce(cli);
    case CommandLine::Command::kSelfTest:
      return drivewatch::RunSelfTestCommand(cli);
    case CommandLine::Command::kPhase:
      return drivewatch::RunPhaseCommand(cli);
    case CommandLine::Command::kEndurance:
      return drivewatch::RunEnduranceCommand(cli);
    case CommandLine::Command::kHistory:
      return drivewatch::RunHistoryCommand(cli);
    case CommandLine::Command::kRetention:
      return drivewatch::RunRetentionCommand(cli);
    case CommandLine::Command::kReport:
      return drivewatch::RunReportCommand(cli);
    case CommandLine::Command::kServe:
      return drivewatch::RunDaemon(cli);
  }
  return 1;
}
