// SPDX-License-Identifier: Apache-2.0
// Command line: flags follow the Prometheus exporter conventions
// (--web.listen-address, --config.file, --log.level, --version, --help).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace drivewatch {

struct CommandLine {
  enum class Command {
    kServe, kCheckConfig, kCollect, kSelfTest, kPhase, kEndurance, kHistory, kRetention, kReport,
    kHelp, kVersion };
  Command command = Command::kServe;
  // With kHelp: the subcommand --help came after ("phase run --help"),
  // whose help is printed alone; kServe for the whole help.
  Command help_for = Command::kServe;
  std::optional<std::string> config_file;
  std::optional<std::string> listen_address;
  std::optional<std::string> web_config_file;  // exporter-toolkit web-config YAML
  std::optional<std::string> log_level;
  std::vector<std::string> args;  // positional arguments of the subcommand
  bool once = false;              // collect --once
  std::optional<std::string> drive;  // selftest run --drive SERIAL
  std::optional<std::string> test_type;  // selftest run --type short|extended
  bool wait = false;              // selftest run --wait
  std::optional<std::string> target;  // phase run --target NAME
  std::optional<std::string> phase;   // history --phase NAME
  std::optional<std::string> format;  // history --format table|json|csv; retention report --format text|json|html
  // report: every --drive given, in order; --baseline SERIAL; --runs as
  // given and as its comma-separated items; --output FILE.
  std::vector<std::string> drives;
  std::optional<std::string> baseline;
  std::optional<std::string> runs;
  std::vector<std::string> run_items;
  std::optional<std::string> output;
};

struct ParsedCommandLine {
  std::optional<CommandLine> cli;
  std::string error;  // set when cli is empty
};

ParsedCommandLine ParseCommandLine(const std::vector<std::string>& argv);

// The --help text.
std::string UsageText();
// The help of one subcommand: its usage lines, the flags that go with it
// and the exit status; the whole text for kServe.
std::string UsageText(CommandLine::Command command);
// The --version text.
std::string VersionText();

}  // namespace drivewatch
