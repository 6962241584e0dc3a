// SPDX-License-Identifier: Apache-2.0
#include "exporter/commands/cli.h"

#include <algorithm>

#include "exporter/build_info.h"

namespace drivewatch {
namespace {

struct FlagSpec {
  const char* name;
  std::optional<std::string> CommandLine::*field;
};

constexpr FlagSpec kValueFlags[] = {
    {"--config.file", &CommandLine::config_file},
    {"--web.listen-address", &CommandLine::listen_address},
    {"--web.config.file", &CommandLine::web_config_file},
    {"--log.level", &CommandLine::log_level},
    {"--drive", &CommandLine::drive},
    {"--type", &CommandLine::test_type},
    {"--target", &CommandLine::target},
    {"--phase", &CommandLine::phase},
    {"--format", &CommandLine::format},
    {"--baseline", &CommandLine::baseline},
    {"--runs", &CommandLine::runs},
    {"--output", &CommandLine::output},
};

}  // namespace

std::string UsageText() {
  return R"(usage: drivewatch [flags]                 run the daemon
       drivewatch check-config FILE        validate a config file and exit
       drivewatch check-config [FILE] --web.config.file=WEBFILE
                                           validate the web config too (or
                                           only it)
       drivewatch collect --once [flags]   run every enabled light probe once,
                                           print the metrics to stdout and exit
       drivewatch selftest run --drive SERIAL --type short|extended [--wait]
                                           start a device self-test on the
                                           drive; with --wait, show progress
                                           (a line per second when not on a
                                           terminal) and the result
       drivewatch phase run NAME --config.file=FILE [--target=NAME]
                                           run one heavy phase ([[aging.phases]])
                                           in the foreground: progress on
                                           stderr, the result as JSON on
                                           stdout, saved to the history
       drivewatch endurance reset NAME --config.file=FILE
                                           end endurance phase NAME's test so
                                           its next run starts a new one (its
                                           progress file is kept aside)
       drivewatch history [--drive=SERIAL] [--phase=NAME]
                          [--format=table|json|csv]
                                           print the phase history kept in
                                           the state directory; a damaged
                                           record, or one over 1 MiB or with
                                           over 10,000 keys in an object, is
                                           named on stderr by its line and
                                           left out
       drivewatch retention list           list the data-retention studies
       drivewatch retention report STUDY [--format=text|json|html]
                                           one study's report (html: a
                                           self-contained page with charts)
       drivewatch retention end STUDY      end a study: its region may be
                                           written by other phases again
       drivewatch report [--drive=SERIAL]... [--baseline=SERIAL]
                         [--runs=first,latest|RUN_ID,...]
                         [--format=text|markdown|json|html] [--output=FILE]
                         [HISTORY_FILE|STUDY_FILE...]
                                           the test report: each drive's
                                           aging runs fresh against aged and
                                           a baseline drive, by measure, with
                                           verdicts (html: self-contained,
                                           with charts); from the state
                                           directory's history and retention
                                           studies, or from the history files
                                           and study records named (several
                                           hosts' histories merge)

drivewatch watches NVMe drives age and exports what it sees as Prometheus
metrics.

flags:
  --config.file=FILE          TOML config file (default: built-in defaults)
  --web.listen-address=ADDR   address to serve /metrics on, host:port,
                              [ipv6]:port or :port (overrides [web])
  --web.config.file=FILE      Prometheus exporter-toolkit web config (YAML):
                              TLS, client certificates, basic auth, extra
                              headers (see docs/security.md)
  --log.level=LEVEL           debug, info, warn or error (overrides [log])
  --once                      with collect: run once (the only mode)
  --drive=SERIAL              with selftest run: the drive, by serial;
                              with history: only this drive's runs; with
                              report: a drive to report on (repeat it for
                              several; default: every drive on record but
                              the baseline)
  --baseline=SERIAL           with report: the drive whose latest run of
                              each measure is every table's baseline row
  --runs=LIST                 with report: the rows of each table, first
                              (fresh), latest (aged) or run ids, separated
                              by commas (default first,latest)
  --output=FILE               with report: write it to FILE (html: and each
                              retention study's own report beside it)
  --target=NAME               with phase run: check that the phase runs
                              on this [[aging.targets]] name
  --phase=NAME                with history: only this phase's runs
  --format=FORMAT             with history: table (default), json (one
                              object per line) or csv; with retention
                              report: text (default), json or html; with
                              report: text (default), markdown, json or
                              html
  --type=short|extended       with selftest run: which test
  --wait                      with selftest run: wait for the result (exit
                              status 0 passed, 1 otherwise)
  -h, --help                  show this help
  --version                   show the version and the libraries built with

exit status: 0 success, 1 runtime failure, 2 bad command line or config, 3 a
phase run whose retention verify found blocks that no longer read back as
written.
)";
}

namespace {

// The entries of a block of the help: an entry starts at a line for which
// `starts` holds, and goes on over the lines indented under it.
std::vector<std::string> Entries(const std::string& block, bool (*starts)(const std::string&)) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < block.size()) {
    const std::size_t end = std::min(block.find('\n', at), block.size());
    const std::string line = block.substr(at, end - at);
    if (starts(line) || out.empty()) {
      out.push_back(line + "\n");
    } else {
      out.back() += line + "\n";
    }
    at = end + 1;
  }
  return out;
}

const char* CommandWord(CommandLine::Command c) {
  switch (c) {
    case CommandLine::Command::kCheckConfig: return "check-config";
    case CommandLine::Command::kCollect: return "collect";
    case CommandLine::Command::kSelfTest: return "selftest";
    case CommandLine::Command::kPhase: return "phase";
    case CommandLine::Command::kEndurance: return "endurance";
    case CommandLine::Command::kHistory: return "history";
    case CommandLine::Command::kRetention: return "retention";
    case CommandLine::Command::kReport: return "report";
    default: return "";
  }
}

}  // namespace

std::string UsageText(CommandLine::Command command) {
  const std::string all = UsageText();
  const std::string word = CommandWord(command);
  if (word.empty()) return all;
  const std::size_t usage_end = all.find("\n\n");
  const std::size_t flags_at = all.find("flags:\n");
  const std::size_t exit_at = all.find("\nexit status:");
  // Usage lines: "usage: drivewatch ..." and "       drivewatch ...".
  std::string out;
  for (std::string e : Entries(all.substr(0, usage_end + 1), [](const std::string& l) {
         return l.rfind("usage: ", 0) == 0 || l.rfind("       drivewatch", 0) == 0;
       })) {
    const std::size_t name = e.find("drivewatch ");
    if (e.compare(name + 11, word.size() + 1, word + " ") != 0 &&
        e.compare(name + 11, word.size() + 1, word + "\n") != 0) {
      continue;
    }
    e.replace(0, name, out.empty() ? "usage: " : "       ");
    out += e;
  }
  // Flags: those that say they go "with <word>", and the ones every
  // command takes.
  std::string flags;
  const std::string with = "with " + word;
  for (const std::string& e :
       Entries(all.substr(flags_at + 7, exit_at - flags_at - 7), [](const std::string& l) {
         return l.rfind("  -", 0) == 0;
       })) {
    std::string flat = e;
    for (char& c : flat) c = c == '\n' ? ' ' : c;
    std::string squeezed;
    for (char c : flat) {
      if (c != ' ' || squeezed.empty() || squeezed.back() != ' ') squeezed += c;
    }
    if (squeezed.find(with) != std::string::npos || e.rfind("  --config.file", 0) == 0 ||
        e.rfind("  --log.level", 0) == 0 || e.rfind("  -h, --help", 0) == 0) {
      flags += e;
    }
  }
  return out + "\nflags:\n" + flags + all.substr(exit_at);
}

std::string VersionText() {
  return std::string("drivewatch ") + kVersion + " (revision " + kRevision +
         ")\n  built with libnvme " + kLibnvmeVersion + ", liburing " +
         kLiburingVersion + ", prometheus-cpp " + kPrometheusCppVersion + "\n";
}

ParsedCommandLine ParseCommandLine(const std::vector<std::string>& argv) {
  CommandLine cli;
  bool have_subcommand = false;
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      if (have_subcommand) cli.help_for = cli.command;
      cli.command = CommandLine::Command::kHelp;
      return {cli, ""};
    }
    if (arg == "--version") {
      cli.command = CommandLine::Command::kVersion;
      return {cli, ""};
    }
    if (arg == "--once") {
      cli.once = true;
      continue;
    }
    if (arg == "--wait") {
      cli.wait = true;
      continue;
    }
    if (arg.rfind("--", 0) == 0) {
      const size_t eq = arg.find('=');
      const std::string name = arg.substr(0, eq);
      const FlagSpec* spec = nullptr;
      for (const auto& f : kValueFlags) {
        if (name == f.name) spec = &f;
      }
      if (spec == nullptr) {
        return {std::nullopt, "unknown flag " + name + " (see --help)"};
      }
      std::string value;
      if (eq != std::string::npos) {
        value = arg.substr(eq + 1);
      } else if (i + 1 < argv.size()) {
        value = argv[++i];
      } else {
        return {std::nullopt, "flag " + name + " needs a value"};
      }
      if (value.empty()) {
        return {std::nullopt, "flag " + name + " needs a non-empty value"};
      }
      cli.*(spec->field) = value;
      if (name == "--drive") cli.drives.push_back(value);
      continue;
    }
    if (!have_subcommand && cli.args.empty()) {
      if (arg == "check-config") {
        cli.command = CommandLine::Command::kCheckConfig;
      } else if (arg == "collect") {
        cli.command = CommandLine::Command::kCollect;
      } else if (arg == "selftest") {
        cli.command = CommandLine::Command::kSelfTest;
      } else if (arg == "phase") {
        cli.command = CommandLine::Command::kPhase;
      } else if (arg == "endurance") {
        cli.command = CommandLine::Command::kEndurance;
      } else if (arg == "history") {
        cli.command = CommandLine::Command::kHistory;
      } else if (arg == "retention") {
        cli.command = CommandLine::Command::kRetention;
      } else if (arg == "report") {
        cli.command = CommandLine::Command::kReport;
      } else {
        return {std::nullopt, "unknown command \"" + arg +
                                  "\" (expected check-config, collect, "
                                  "selftest, phase, endurance, history, retention or report; "
                                  "see --help)"};
      }
      have_subcommand = true;
      continue;
    }
    cli.args.push_back(arg);
  }
  const bool selftest = cli.command == CommandLine::Command::kSelfTest;
  const bool history = cli.command == CommandLine::Command::kHistory;
  const bool reporting = cli.command == CommandLine::Command::kReport;
  if (!selftest && (cli.test_type || cli.wait)) {
    return {std::nullopt, "--type and --wait go with selftest run"};
  }
  if (!selftest && !history && !reporting && cli.drive) {
    return {std::nullopt, "--drive goes with selftest run, history or report"};
  }
  if (!reporting && (cli.baseline || cli.runs || cli.output)) {
    return {std::nullopt, std::string(cli.baseline ? "--baseline" : cli.runs ? "--runs" : "--output") +
                              " goes with report"};
  }
  if ((selftest || history) && cli.drives.size() > 1) {
    return {std::nullopt, "--drive is given " + std::to_string(cli.drives.size()) +
                              " times (expected one drive; only report takes several)"};
  }
  if (cli.command != CommandLine::Command::kPhase && cli.target) {
    return {std::nullopt, "--target goes with phase run"};
  }
  if (!history && cli.phase) return {std::nullopt, "--phase goes with history"};
  if (!history && !reporting && cli.format && cli.command != CommandLine::Command::kRetention) {
    return {std::nullopt, "--format goes with history, retention report or report"};
  }
  switch (cli.command) {
    case CommandLine::Command::kSelfTest:
      if (cli.args.size() != 1 || cli.args[0] != "run") {
        return {std::nullopt,
                "selftest takes the subcommand run: selftest run --drive "
                "SERIAL --type short|extended [--wait]"};
      }
      if (!cli.drive) return {std::nullopt, "selftest run needs --drive SERIAL"};
      if (!cli.test_type ||
          (*cli.test_type != "short" && *cli.test_type != "extended")) {
        return {std::nullopt, "selftest run needs --type short or --type "
                              "extended" +
                                  (cli.test_type ? " (got \"" +
                                                       *cli.test_type + "\")"
                                                 : std::string())};
      }
      if (cli.once) return {std::nullopt, "--once goes with the collect command"};
      break;
    case CommandLine::Command::kPhase:
      if (cli.args.size() != 2 || cli.args[0] != "run") {
        return {std::nullopt,
                "phase takes the subcommand run: phase run NAME "
                "--config.file=FILE [--target=NAME]"};
      }
      if (!cli.config_file) {
        return {std::nullopt, "phase run needs --config.file=FILE (the phase and "
                              "its target are defined there)"};
      }
      if (cli.once) return {std::nullopt, "--once goes with the collect command"};
      break;
    case CommandLine::Command::kEndurance:
      if (cli.args.size() != 2 || cli.args[0] != "reset") {
        return {std::nullopt,
                "endurance takes the subcommand reset: endurance reset NAME --config.file=FILE"};
      }
      if (!cli.config_file) {
        return {std::nullopt, "endurance reset needs --config.file=FILE (the phase and its "
                              "state directory are defined there)"};
      }
      if (cli.once) return {std::nullopt, "--once goes with the collect command"};
      break;
    case CommandLine::Command::kHistory:
      if (!cli.args.empty()) {
        return {std::nullopt, "unexpected argument \"" + cli.args[0] + "\""};
      }
      if (cli.format && *cli.format != "table" && *cli.format != "json" &&
          *cli.format != "csv") {
        return {std::nullopt, "--format must be table, json or csv (got \"" +
                                  *cli.format + "\")"};
      }
      if (cli.once) return {std::nullopt, "--once goes with the collect command"};
      break;
    case CommandLine::Command::kRetention: {
      const bool list = cli.args.size() == 1 && cli.args[0] == "list";
      const bool report = cli.args.size() == 2 && cli.args[0] == "report";
      const bool end = cli.args.size() == 2 && cli.args[0] == "end";
      if (!list && !report && !end) {
        return {std::nullopt,
                "retention takes list, report STUDY or end STUDY: retention list | retention "
                "report STUDY [--format=text|json|html] | retention end STUDY"};
      }
      if (cli.format && (!report || (*cli.format != "text" && *cli.format != "json" &&
                                     *cli.format != "html"))) {
        return {std::nullopt, !report ? std::string("--format goes with retention report")
                                   : "--format must be text, json or html (got \"" +
                                         *cli.format + "\")"};
      }
      if (cli.once) return {std::nullopt, "--once goes with the collect command"};
      break;
    }
    case CommandLine::Command::kReport: {
      if (cli.format && *cli.format != "text" && *cli.format != "markdown" &&
          *cli.format != "json" && *cli.format != "html") {
        return {std::nullopt, "--format must be text, markdown, json or html (got \"" +
                                  *cli.format + "\")"};
      }
      if (cli.runs) {
        std::size_t start = 0;
        while (start <= cli.runs->size()) {
          const std::size_t comma = std::min(cli.runs->find(',', start), cli.runs->size());
          const std::string item = cli.runs->substr(start, comma - start);
          if (item.empty()) {
            return {std::nullopt, "--runs \"" + *cli.runs +
                                      "\" has an empty item (expected first, latest or run ids, "
                                      "separated by commas, e.g. --runs first,latest)"};
          }
          if (std::find(cli.run_items.begin(), cli.run_items.end(), item) != cli.run_items.end()) {
            return {std::nullopt, "--runs \"" + *cli.runs + "\" names " + item + " twice"};
          }
          cli.run_items.push_back(item);
          start = comma + 1;
        }
      } else {
        cli.run_items = {"first", "latest"};
      }
      if (cli.baseline && std::find(cli.drives.begin(), cli.drives.end(), *cli.baseline) !=
                              cli.drives.end()) {
        return {std::nullopt, "--baseline " + *cli.baseline +
                                  " is also a --drive (expected another drive to compare with)"};
      }
      if (cli.once) return {std::nullopt, "--once goes with the collect command"};
      break;
    }
    case CommandLine::Command::kCheckConfig:
      if (cli.web_config_file && cli.args.size() <= 1) break;
      if (cli.args.size() != 1) {
        return {std::nullopt, "check-config takes exactly one FILE"};
      }
      break;
    case CommandLine::Command::kCollect:
      if (!cli.once) {
        return {std::nullopt, "collect needs --once (it runs the probes one time)"};
      }
      [[fallthrough]];
    case CommandLine::Command::kServe:
      if (!cli.args.empty()) {
        return {std::nullopt, "unexpected argument \"" + cli.args[0] + "\""};
      }
      if (cli.once && cli.command == CommandLine::Command::kServe) {
        return {std::nullopt, "--once goes with the collect command"};
      }
      break;
    default:
      break;
  }
  return {cli, ""};
}

}  // namespace drivewatch
