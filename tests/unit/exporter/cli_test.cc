// SPDX-License-Identifier: Apache-2.0
#include "exporter/commands/cli.h"

#include <gtest/gtest.h>

#include "exporter/http/http_server.h"

namespace drivewatch {
namespace {

ParsedCommandLine Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "drivewatch");
  return ParseCommandLine(args);
}

TEST(CommandLineTest, ServeWithFlagsInBothForms) {
  auto p = Parse({"--config.file=/etc/dw.toml", "--web.listen-address", ":9999",
                  "--log.level=debug"});
  ASSERT_TRUE(p.cli) << p.error;
  EXPECT_EQ(p.cli->command, CommandLine::Command::kServe);
  EXPECT_EQ(p.cli->config_file, "/etc/dw.toml");
  EXPECT_EQ(p.cli->listen_address, ":9999");
  EXPECT_EQ(p.cli->log_level, "debug");
}

TEST(CommandLineTest, Subcommands) {
  auto check = Parse({"check-config", "a.toml"});
  ASSERT_TRUE(check.cli);
  EXPECT_EQ(check.cli->command, CommandLine::Command::kCheckConfig);
  EXPECT_EQ(check.cli->args, std::vector<std::string>{"a.toml"});

  auto collect = Parse({"collect", "--once", "--config.file", "x.toml"});
  ASSERT_TRUE(collect.cli) << collect.error;
  EXPECT_EQ(collect.cli->command, CommandLine::Command::kCollect);
  EXPECT_EQ(collect.cli->config_file, "x.toml");

  EXPECT_EQ(Parse({"--version"}).cli->command, CommandLine::Command::kVersion);
  EXPECT_EQ(Parse({"-h"}).cli->command, CommandLine::Command::kHelp);
}

TEST(CommandLineTest, Errors) {
  EXPECT_EQ(Parse({"--web.listen-adress=:1"}).error,
            "unknown flag --web.listen-adress (see --help)");
  EXPECT_EQ(Parse({"--config.file"}).error, "flag --config.file needs a value");
  EXPECT_EQ(Parse({"--config.file="}).error,
            "flag --config.file needs a non-empty value");
  EXPECT_EQ(Parse({"serve"}).error,
            "unknown command \"serve\" (expected check-config, collect, "
            "selftest, phase, endurance, history, retention or report; see --help)");
  EXPECT_EQ(Parse({"check-config"}).error, "check-config takes exactly one FILE");
  EXPECT_EQ(Parse({"collect"}).error,
            "collect needs --once (it runs the probes one time)");
  EXPECT_EQ(Parse({"--once"}).error, "--once goes with the collect command");
}

TEST(CommandLineTest, PhaseAndHistory) {
  auto run = Parse({"phase", "run", "fill-half", "--config.file=/etc/dw.toml",
                    "--target", "scratch"});
  ASSERT_TRUE(run.cli) << run.error;
  EXPECT_EQ(run.cli->command, CommandLine::Command::kPhase);
  EXPECT_EQ(run.cli->args, (std::vector<std::string>{"run", "fill-half"}));
  EXPECT_EQ(run.cli->target, "scratch");
  auto history = Parse({"history", "--drive=SN1", "--phase", "fill", "--format=csv"});
  ASSERT_TRUE(history.cli) << history.error;
  EXPECT_EQ(history.cli->command, CommandLine::Command::kHistory);
  EXPECT_EQ(history.cli->drive, "SN1");
  EXPECT_EQ(history.cli->format, "csv");

  EXPECT_EQ(Parse({"phase", "run", "x"}).error,
            "phase run needs --config.file=FILE (the phase and its target are "
            "defined there)");
  EXPECT_EQ(Parse({"phase", "start", "x", "--config.file=a"}).error,
            "phase takes the subcommand run: phase run NAME "
            "--config.file=FILE [--target=NAME]");
  EXPECT_EQ(Parse({"history", "--format=xml"}).error,
            "--format must be table, json or csv (got \"xml\")");
  EXPECT_EQ(Parse({"--target=x"}).error, "--target goes with phase run");
  EXPECT_EQ(Parse({"collect", "--once", "--phase=x"}).error, "--phase goes with history");
  EXPECT_EQ(Parse({"collect", "--once", "--format=csv"}).error,
            "--format goes with history, retention report or report");
  auto report = Parse({"retention", "report", "lab-q4", "--format=html"});
  ASSERT_TRUE(report.cli) << report.error;
  EXPECT_EQ(report.cli->command, CommandLine::Command::kRetention);
  EXPECT_TRUE(Parse({"retention", "list"}).cli);
  EXPECT_EQ(Parse({"retention", "report"}).error,
            "retention takes list, report STUDY or end STUDY: retention list | retention "
            "report STUDY [--format=text|json|html] | retention end STUDY");
  EXPECT_EQ(Parse({"retention", "report", "x", "--format=csv"}).error,
            "--format must be text, json or html (got \"csv\")");
  EXPECT_TRUE(Parse({"retention", "end", "lab-q4"}).cli);
  EXPECT_EQ(Parse({"retention", "end", "lab-q4", "--format=json"}).error,
            "--format goes with retention report");
}

TEST(CommandLineTest, Report) {
  auto plain = Parse({"report"});
  ASSERT_TRUE(plain.cli) << plain.error;
  EXPECT_EQ(plain.cli->command, CommandLine::Command::kReport);
  EXPECT_EQ(plain.cli->run_items, (std::vector<std::string>{"first", "latest"}));
  EXPECT_TRUE(plain.cli->args.empty());

  auto full = Parse({"report", "--drive=SN1", "--drive", "SN2", "--baseline=SN3",
                     "--runs=first,fill-20260105T030000.000Z,latest", "--format=markdown",
                     "--output", "/tmp/r.md", "a/history.log", "b/history.log"});
  ASSERT_TRUE(full.cli) << full.error;
  EXPECT_EQ(full.cli->drives, (std::vector<std::string>{"SN1", "SN2"}));
  EXPECT_EQ(full.cli->baseline, "SN3");
  EXPECT_EQ(full.cli->run_items,
            (std::vector<std::string>{"first", "fill-20260105T030000.000Z", "latest"}));
  EXPECT_EQ(full.cli->format, "markdown");
  EXPECT_EQ(full.cli->output, "/tmp/r.md");
  EXPECT_EQ(full.cli->args, (std::vector<std::string>{"a/history.log", "b/history.log"}));

  EXPECT_EQ(Parse({"report", "--format=pdf"}).error,
            "--format must be text, markdown, json or html (got \"pdf\")");
  EXPECT_EQ(Parse({"report", "--runs=first,,latest"}).error,
            "--runs \"first,,latest\" has an empty item (expected first, latest or run ids, "
            "separated by commas, e.g. --runs first,latest)");
  EXPECT_EQ(Parse({"report", "--runs=first,"}).error,
            "--runs \"first,\" has an empty item (expected first, latest or run ids, "
            "separated by commas, e.g. --runs first,latest)");
  EXPECT_EQ(Parse({"report", "--runs=latest,latest"}).error,
            "--runs \"latest,latest\" names latest twice");
  EXPECT_EQ(Parse({"report", "--drive=SN1", "--baseline=SN1"}).error,
            "--baseline SN1 is also a --drive (expected another drive to compare with)");
  EXPECT_EQ(Parse({"history", "--baseline=SN1"}).error, "--baseline goes with report");
  EXPECT_EQ(Parse({"history", "--runs=first"}).error, "--runs goes with report");
  EXPECT_EQ(Parse({"retention", "list", "--output=x"}).error, "--output goes with report");
  EXPECT_EQ(Parse({"history", "--drive=SN1", "--drive=SN2"}).error,
            "--drive is given 2 times (expected one drive; only report takes several)");
  EXPECT_EQ(Parse({"report", "--once"}).error, "--once goes with the collect command");
  const std::string help = UsageText();
  for (const char* flag : {"drivewatch report", "--baseline", "--runs", "--output", "markdown"}) {
    EXPECT_NE(help.find(flag), std::string::npos) << flag;
  }
}

TEST(CommandLineTest, HelpListsEveryFlag) {
  const std::string help = UsageText();
  for (const char* flag : {"--config.file", "--web.listen-address",
                           "--log.level", "--version", "--help", "--once",
                           "check-config", "collect"}) {
    EXPECT_NE(help.find(flag), std::string::npos) << flag;
  }
}

TEST(ListenAddressTest, Forms) {
  auto any = ParseListenAddress(":9647");
  ASSERT_TRUE(any.ok());
  EXPECT_EQ(any->host, "");
  EXPECT_EQ(any->port, 9647);
  auto v4 = ParseListenAddress("127.0.0.1:0");
  ASSERT_TRUE(v4.ok());
  EXPECT_EQ(v4->host, "127.0.0.1");
  EXPECT_EQ(v4->port, 0);
  auto v6 = ParseListenAddress("[::1]:9647");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
}

// --help after a subcommand is that subcommand's help: its usage lines and
// the flags that go with it, not every command's.
TEST(CommandLineTest, HelpOfOneSubcommand) {
  auto p = ParseCommandLine({"drivewatch", "phase", "run", "--help"});
  ASSERT_TRUE(p.cli) << p.error;
  EXPECT_EQ(p.cli->command, CommandLine::Command::kHelp);
  EXPECT_EQ(p.cli->help_for, CommandLine::Command::kPhase);
  const std::string phase = UsageText(CommandLine::Command::kPhase);
  EXPECT_EQ(phase.rfind("usage: drivewatch phase run NAME --config.file=FILE", 0), 0u) << phase;
  EXPECT_NE(phase.find("--target=NAME"), std::string::npos) << phase;
  EXPECT_NE(phase.find("--config.file=FILE "), std::string::npos) << phase;
  EXPECT_NE(phase.find("exit status:"), std::string::npos) << phase;
  for (const char* other : {"drivewatch history", "drivewatch report", "--baseline", "--wait"}) {
    EXPECT_EQ(phase.find(other), std::string::npos) << other << "\n" << phase;
  }
  const std::string retention = UsageText(CommandLine::Command::kRetention);
  EXPECT_NE(retention.find("       drivewatch retention end STUDY"), std::string::npos) << retention;
  EXPECT_NE(retention.find("--format=FORMAT"), std::string::npos) << retention;
  EXPECT_EQ(retention.find("--drive"), std::string::npos) << retention;
  // Before any subcommand: the whole help.
  p = ParseCommandLine({"drivewatch", "--help", "phase"});
  ASSERT_TRUE(p.cli);
  EXPECT_EQ(UsageText(p.cli->help_for), UsageText());
}

TEST(CommandLineTest, SelfTestAndEndurance) {
  auto selftest = Parse({"selftest", "run", "--drive=S1", "--type", "short", "--wait"});
  ASSERT_TRUE(selftest.cli) << selftest.error;
  EXPECT_EQ(selftest.cli->command, CommandLine::Command::kSelfTest);
  EXPECT_EQ(selftest.cli->args, std::vector<std::string>{"run"});
  EXPECT_EQ(selftest.cli->drive, "S1");
  EXPECT_EQ(selftest.cli->drives, std::vector<std::string>{"S1"});
  EXPECT_EQ(selftest.cli->test_type, "short");
  EXPECT_TRUE(selftest.cli->wait);
  EXPECT_EQ(Parse({"selftest", "run", "--drive=S1"}).error,
            "selftest run needs --type short or --type extended");
  EXPECT_EQ(Parse({"selftest", "run", "--drive=S1", "--drive=S2", "--type=short"}).error,
            "--drive is given 2 times (expected one drive; only report takes several)");

  auto reset = Parse({"endurance", "reset", "wear", "--config.file=/etc/dw.toml"});
  ASSERT_TRUE(reset.cli) << reset.error;
  EXPECT_EQ(reset.cli->command, CommandLine::Command::kEndurance);
  EXPECT_EQ(reset.cli->args, (std::vector<std::string>{"reset", "wear"}));
  EXPECT_EQ(reset.cli->config_file, "/etc/dw.toml");
  EXPECT_EQ(Parse({"endurance", "reset", "wear"}).error,
            "endurance reset needs --config.file=FILE (the phase and its state directory are "
            "defined there)");
  EXPECT_EQ(Parse({"endurance", "wear", "--config.file=a"}).error,
            "endurance takes the subcommand reset: endurance reset NAME --config.file=FILE");
}

TEST(CommandLineTest, HistoryRetentionAndServeDefaults) {
  auto history = Parse({"history"});
  ASSERT_TRUE(history.cli) << history.error;
  EXPECT_EQ(history.cli->command, CommandLine::Command::kHistory);
  EXPECT_FALSE(history.cli->drive);
  EXPECT_FALSE(history.cli->phase);
  EXPECT_FALSE(history.cli->format);
  EXPECT_EQ(Parse({"history", "x"}).error, "unexpected argument \"x\"");

  auto end = Parse({"retention", "end", "lab-q4"});
  ASSERT_TRUE(end.cli) << end.error;
  EXPECT_EQ(end.cli->args, (std::vector<std::string>{"end", "lab-q4"}));
  EXPECT_FALSE(end.cli->format);
  // "report" is a command of its own, and a word of retention after it.
  auto study = Parse({"retention", "report", "report"});
  ASSERT_TRUE(study.cli) << study.error;
  EXPECT_EQ(study.cli->command, CommandLine::Command::kRetention);
  EXPECT_EQ(study.cli->args, (std::vector<std::string>{"report", "report"}));

  auto serve = Parse({});
  ASSERT_TRUE(serve.cli) << serve.error;
  EXPECT_EQ(serve.cli->command, CommandLine::Command::kServe);
  EXPECT_FALSE(serve.cli->config_file);
  EXPECT_FALSE(serve.cli->listen_address);
  EXPECT_FALSE(serve.cli->log_level);
  EXPECT_FALSE(serve.cli->once);
  EXPECT_TRUE(serve.cli->args.empty());
}

// The flags every command takes may come before or after the command, the
// last of a repeated one wins; a command's own flags follow it.
TEST(CommandLineTest, WhereFlagsGo) {
  auto before = Parse({"--config.file=a.toml", "--log.level", "warn", "collect", "--once"});
  ASSERT_TRUE(before.cli) << before.error;
  EXPECT_EQ(before.cli->command, CommandLine::Command::kCollect);
  EXPECT_EQ(before.cli->config_file, "a.toml");
  EXPECT_EQ(before.cli->log_level, "warn");
  auto after = Parse({"phase", "run", "x", "--config.file", "a.toml", "--config.file=b.toml",
                      "--web.listen-address=:1"});
  ASSERT_TRUE(after.cli) << after.error;
  EXPECT_EQ(after.cli->config_file, "b.toml");
  EXPECT_EQ(after.cli->listen_address, ":1");
  EXPECT_EQ(Parse({"--drive=SN1", "history"}).error,
            "--drive goes after history (a command's own flags follow it)");
  EXPECT_EQ(Parse({"--once", "collect"}).error,
            "--once goes after collect (a command's own flags follow it)");
}

TEST(CommandLineTest, FlagValueErrors) {
  // "--flag=" is refused, not read as "--flag" taking the next argument.
  EXPECT_EQ(Parse({"--config.file=", "check-config", "a.toml"}).error,
            "flag --config.file needs a non-empty value");
  EXPECT_EQ(Parse({"report", "--output="}).error, "flag --output needs a non-empty value");
  EXPECT_EQ(Parse({"report", "--drive"}).error, "flag --drive needs a value");
  EXPECT_EQ(Parse({"phase", "run", "x", "--config.file=a", "--target"}).error,
            "flag --target needs a value");
  // After "--", an argument is the command's even when it looks like a flag.
  auto file = Parse({"check-config", "--", "--odd.toml="});
  ASSERT_TRUE(file.cli) << file.error;
  EXPECT_EQ(file.cli->args, std::vector<std::string>{"--odd.toml="});
  EXPECT_EQ(Parse({"-x"}).error, "unknown flag -x (see --help)");
  EXPECT_EQ(Parse({"history", "--bogus=1"}).error, "unknown flag --bogus (see --help)");
  const std::string flag_value = Parse({"collect", "--once=often"}).error;
  EXPECT_NE(flag_value.find("--once"), std::string::npos) << flag_value;
  EXPECT_NE(flag_value.find("often"), std::string::npos) << flag_value;
}

// --help and --version decide at once, whatever follows; --help after a
// command is that command's.
TEST(CommandLineTest, HelpAndVersionStopTheParse) {
  auto help = Parse({"collect", "--help", "--no-such-flag", "--config.file"});
  ASSERT_TRUE(help.cli) << help.error;
  EXPECT_EQ(help.cli->command, CommandLine::Command::kHelp);
  EXPECT_EQ(help.cli->help_for, CommandLine::Command::kCollect);
  auto report = Parse({"report", "-h"});
  ASSERT_TRUE(report.cli) << report.error;
  EXPECT_EQ(report.cli->help_for, CommandLine::Command::kReport);
  auto version = Parse({"history", "--version", "--format=xml"});
  ASSERT_TRUE(version.cli) << version.error;
  EXPECT_EQ(version.cli->command, CommandLine::Command::kVersion);
  // A value, not a request for help.
  auto value = Parse({"--config.file", "--help"});
  ASSERT_TRUE(value.cli) << value.error;
  EXPECT_EQ(value.cli->config_file, "--help");
}

// Every flag the help lists is one the parser knows: given where it does
// not belong, it is named as such, never as unknown.
TEST(CommandLineTest, ParserKnowsEveryFlagOfTheHelp) {
  const std::string help = UsageText();
  const std::string flags = help.substr(help.find("flags:\n"));
  int seen = 0;
  for (std::size_t at = flags.find("\n  --"); at != std::string::npos;
       at = flags.find("\n  --", at + 1)) {
    const std::string flag = flags.substr(at + 3, flags.find_first_of("= ", at + 3) - at - 3);
    ++seen;
    const std::string error = Parse({"check-config", flag + "=x", "a.toml"}).error;
    EXPECT_EQ(error.find("unknown flag"), std::string::npos) << flag << ": " << error;
  }
  EXPECT_GE(seen, 15);
}

TEST(ListenAddressTest, Errors) {
  EXPECT_EQ(ParseListenAddress("9647").error().message,
            "listen address \"9647\": missing port (expected host:port, "
            "[ipv6]:port or :port)");
  EXPECT_EQ(ParseListenAddress("::1:9647").error().message,
            "listen address \"::1:9647\": IPv6 addresses need brackets "
            "(expected host:port, [ipv6]:port or :port)");
  EXPECT_EQ(ParseListenAddress(":70000").error().message,
            "listen address \":70000\": port \"70000\" is not a number from 0 "
            "to 65535 (expected host:port, [ipv6]:port or :port)");
  EXPECT_EQ(ParseListenAddress("[::1]9647").error().message,
            "listen address \"[::1]9647\": unterminated IPv6 address or missing "
            "port (expected host:port, [ipv6]:port or :port)");
}

}  // namespace
}  // namespace drivewatch
