// SPDX-License-Identifier: Apache-2.0
#include "exporter/commands/cli.h"

#include <CLI/CLI.hpp>

#include <algorithm>

#include "exporter/build_info.h"

namespace drivewatch {
namespace {

using Command = CommandLine::Command;

// The subcommands, by the word that names them on the command line.
struct CommandName {
  const char* word;
  Command command;
};
constexpr CommandName kCommands[] = {
    {"check-config", Command::kCheckConfig}, {"collect", Command::kCollect},
    {"selftest", Command::kSelfTest},        {"phase", Command::kPhase},
    {"endurance", Command::kEndurance},      {"history", Command::kHistory},
    {"retention", Command::kRetention},      {"report", Command::kReport},
};

// The --help text; a command's help is cut from it (UsageText(Command)),
// and gen-man.py makes drivewatch(1) of it.
constexpr char kUsage[] = R"(usage: drivewatch [flags]                 run the daemon
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
  -h, --help                  show this help; after a command, only that
                              command's usage and flags
  --version                   show the version and the libraries built with

exit status: 0 success, 1 runtime failure, 2 bad command line or config, 3 a
phase run whose retention verify found blocks that no longer read back as
written.
)";

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
  for (const CommandName& name : kCommands) {
    if (name.command == c) return name.word;
  }
  return "";
}

}  // namespace

std::string UsageText() { return kUsage; }

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

namespace {

// The errors of flags given to a command they do not go with, by flag.
struct GoesWith {
  const char* flag;
  const char* error;
};
constexpr GoesWith kGoesWith[] = {
    {"--once", "--once goes with the collect command"},
    {"--drive", "--drive goes with selftest run, history or report"},
    {"--type", "--type and --wait go with selftest run"},
    {"--wait", "--type and --wait go with selftest run"},
    {"--target", "--target goes with phase run"},
    {"--phase", "--phase goes with history"},
    {"--format", "--format goes with history, retention report or report"},
    {"--baseline", "--baseline goes with report"},
    {"--runs", "--runs goes with report"},
    {"--output", "--output goes with report"},
};

// A value the command accepts from a fixed set, checked as CLI11 parses.
// The message is the whole error; CLI11 puts the flag's name and a colon
// in front of it, which ErrorText takes off again.
CLI::Validator OneOf(std::vector<std::string> values, std::string error) {
  return CLI::Validator(
      [values = std::move(values), error = std::move(error)](std::string& value) {
        if (std::find(values.begin(), values.end(), value) != values.end()) return std::string();
        return error + " (got \"" + value + "\")";
      },
      "");
}

std::string ErrorText(const CLI::ParseError& e) {
  const std::string what = e.what();
  if (dynamic_cast<const CLI::ValidationError*>(&e) != nullptr) {
    return what.substr(what.find(": ") + 2);
  }
  // Only thrown when the arguments end before a flag's value.
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) != nullptr) {
    return "flag " + what.substr(0, what.find(':')) + " needs a value";
  }
  // A flag given a value CLI11 does not read as true or false (--once=x).
  if (dynamic_cast<const CLI::ConversionError*>(&e) != nullptr) {
    return what + " (a flag takes no value; see --help)";
  }
  return what + " (see --help)";
}

// What CLI11 cannot say: how many words each subcommand takes, the flags
// a command needs, and which go together.
std::string CheckSelfTest(const CommandLine& cli) {
  if (cli.args.size() != 1 || cli.args[0] != "run") {
    return "selftest takes the subcommand run: selftest run --drive SERIAL --type "
           "short|extended [--wait]";
  }
  if (!cli.drive) return "selftest run needs --drive SERIAL";
  if (!cli.test_type) return "selftest run needs --type short or --type extended";
  return "";
}

std::string CheckPhase(const CommandLine& cli) {
  if (cli.args.size() != 2 || cli.args[0] != "run") {
    return "phase takes the subcommand run: phase run NAME --config.file=FILE [--target=NAME]";
  }
  if (!cli.config_file) {
    return "phase run needs --config.file=FILE (the phase and its target are defined there)";
  }
  return "";
}

std::string CheckEndurance(const CommandLine& cli) {
  if (cli.args.size() != 2 || cli.args[0] != "reset") {
    return "endurance takes the subcommand reset: endurance reset NAME --config.file=FILE";
  }
  if (!cli.config_file) {
    return "endurance reset needs --config.file=FILE (the phase and its state directory are "
           "defined there)";
  }
  return "";
}

std::string CheckRetention(const CommandLine& cli) {
  const bool list = cli.args.size() == 1 && cli.args[0] == "list";
  const bool report = cli.args.size() == 2 && cli.args[0] == "report";
  const bool end = cli.args.size() == 2 && cli.args[0] == "end";
  if (!list && !report && !end) {
    return "retention takes list, report STUDY or end STUDY: retention list | retention report "
           "STUDY [--format=text|json|html] | retention end STUDY";
  }
  if (cli.format && !report) return "--format goes with retention report";
  return "";
}

// --runs as its comma-separated items (first,latest when not given).
std::string CheckReport(CommandLine& cli) {
  if (!cli.runs) {
    cli.run_items = {"first", "latest"};
  } else {
    const std::string& runs = *cli.runs;
    std::size_t start = 0;
    while (start <= runs.size()) {
      const std::size_t comma = std::min(runs.find(',', start), runs.size());
      const std::string item = runs.substr(start, comma - start);
      if (item.empty()) {
        return "--runs \"" + runs +
               "\" has an empty item (expected first, latest or run ids, separated by commas, "
               "e.g. --runs first,latest)";
      }
      if (std::find(cli.run_items.begin(), cli.run_items.end(), item) != cli.run_items.end()) {
        return "--runs \"" + runs + "\" names " + item + " twice";
      }
      cli.run_items.push_back(item);
      start = comma + 1;
    }
  }
  if (cli.baseline &&
      std::find(cli.drives.begin(), cli.drives.end(), *cli.baseline) != cli.drives.end()) {
    return "--baseline " + *cli.baseline +
           " is also a --drive (expected another drive to compare with)";
  }
  return "";
}

std::string CheckCommand(CommandLine& cli) {
  if ((cli.command == Command::kSelfTest || cli.command == Command::kHistory) &&
      cli.drives.size() > 1) {
    return "--drive is given " + std::to_string(cli.drives.size()) +
           " times (expected one drive; only report takes several)";
  }
  switch (cli.command) {
    case Command::kCheckConfig:
      if (cli.web_config_file && cli.args.size() <= 1) return "";
      return cli.args.size() == 1 ? "" : "check-config takes exactly one FILE";
    case Command::kCollect:
      return cli.once ? "" : "collect needs --once (it runs the probes one time)";
    case Command::kSelfTest: return CheckSelfTest(cli);
    case Command::kPhase: return CheckPhase(cli);
    case Command::kEndurance: return CheckEndurance(cli);
    case Command::kRetention: return CheckRetention(cli);
    case Command::kReport: return CheckReport(cli);
    default: return "";
  }
}

// --help and --version end the parse where they stand: the first of them
// decides what runs, whatever follows.
struct StopParsing {};

// The command line as CLI11 apps: the flags every command takes on the
// top-level app, each subcommand's own on it. Subcommands fall through to
// the top level, so its flags may also come after the subcommand. Nothing
// is refused as an extra while parsing: ExtraArgumentError names a stray
// argument after the parse, as a flag that goes with another command, an
// unknown flag or command, or an unexpected argument.
class Parser {
 public:
  Parser() {
    app_.set_help_flag();
    app_.allow_extras();
    app_.require_subcommand(0, 1);
    app_.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    AddCommonFlags();
    AddCheckConfig();
    AddCollect();
    AddSelfTest();
    AddPhase();
    AddEndurance();
    AddHistory();
    AddRetention();
    AddReport();
  }

  ParsedCommandLine Parse(const std::vector<std::string>& argv) {
    if (std::string error = EmptyValueError(argv); !error.empty()) return {std::nullopt, error};
    std::vector<std::string> reversed(argv.rbegin(), argv.rend());
    if (!reversed.empty()) reversed.pop_back();  // the program's name
    try {
      app_.parse(reversed);
    } catch (const StopParsing&) {
      return {cli_, ""};
    } catch (const CLI::ParseError& e) {
      return {std::nullopt, ErrorText(e)};
    }
    if (std::string error = ExtraArgumentError(); !error.empty()) return {std::nullopt, error};
    if (!cli_.drives.empty()) cli_.drive = cli_.drives.back();
    if (std::string error = CheckCommand(cli_); !error.empty()) return {std::nullopt, error};
    return {cli_, ""};
  }

 private:
  CLI::App* AddCommand(Command command) {
    CLI::App* sub = app_.add_subcommand(CommandWord(command));
    sub->fallthrough();
    sub->allow_extras();
    sub->preparse_callback([this, command](std::size_t) { cli_.command = command; });
    return sub;
  }
  // The subcommand's words and files, checked after the parse.
  void AddArgs(CLI::App* sub, const char* name) { sub->add_option(name, cli_.args); }
  // --drive: report takes it again and again; selftest run and history
  // count the times to refuse a second.
  void AddDrives(CLI::App* sub) { sub->add_option("--drive", cli_.drives)->allow_extra_args(false); }

  void AddCommonFlags() {
    app_.add_option("--config.file", cli_.config_file);
    app_.add_option("--web.listen-address", cli_.listen_address);
    app_.add_option("--web.config.file", cli_.web_config_file);
    app_.add_option("--log.level", cli_.log_level);
    app_.add_flag_callback("-h,--help", [this] {
          cli_.help_for = cli_.command;
          cli_.command = Command::kHelp;
          throw StopParsing();
        })->trigger_on_parse();
    app_.add_flag_callback("--version", [this] {
          cli_.command = Command::kVersion;
          throw StopParsing();
        })->trigger_on_parse();
  }
  void AddCheckConfig() { AddArgs(AddCommand(Command::kCheckConfig), "FILE"); }
  void AddCollect() { AddCommand(Command::kCollect)->add_flag("--once", cli_.once); }
  void AddSelfTest() {
    CLI::App* sub = AddCommand(Command::kSelfTest);
    AddArgs(sub, "run");
    AddDrives(sub);
    sub->add_option("--type", cli_.test_type)
        ->check(OneOf({"short", "extended"}, "selftest run needs --type short or --type extended"));
    sub->add_flag("--wait", cli_.wait);
  }
  void AddPhase() {
    CLI::App* sub = AddCommand(Command::kPhase);
    AddArgs(sub, "run NAME");
    sub->add_option("--target", cli_.target);
  }
  void AddEndurance() { AddArgs(AddCommand(Command::kEndurance), "reset NAME"); }
  void AddHistory() {
    CLI::App* sub = AddCommand(Command::kHistory);
    AddDrives(sub);
    sub->add_option("--phase", cli_.phase);
    sub->add_option("--format", cli_.format)
        ->check(OneOf({"table", "json", "csv"}, "--format must be table, json or csv"));
  }
  void AddRetention() {
    CLI::App* sub = AddCommand(Command::kRetention);
    AddArgs(sub, "list|report STUDY|end STUDY");
    sub->add_option("--format", cli_.format)
        ->check(OneOf({"text", "json", "html"}, "--format must be text, json or html"));
  }
  void AddReport() {
    CLI::App* sub = AddCommand(Command::kReport);
    AddArgs(sub, "HISTORY_FILE|STUDY_FILE");
    AddDrives(sub);
    sub->add_option("--baseline", cli_.baseline);
    sub->add_option("--runs", cli_.runs);
    sub->add_option("--format", cli_.format)
        ->check(OneOf({"text", "markdown", "json", "html"},
                      "--format must be text, markdown, json or html"));
    sub->add_option("--output", cli_.output);
  }

  // A flag of ours written "--flag=": CLI11 would take the argument after
  // it as the value.
  std::string EmptyValueError(const std::vector<std::string>& argv) const {
    for (std::size_t i = 1; i < argv.size() && argv[i] != "--"; ++i) {
      const std::string& arg = argv[i];
      if (arg.rfind("--", 0) != 0 || arg.find('=') != arg.size() - 1) continue;
      const std::string name = arg.substr(0, arg.size() - 1);
      if (IsFlag(name)) return "flag " + name + " needs a non-empty value";
    }
    return "";
  }

  bool IsFlag(const std::string& name) const {
    if (app_.get_option_no_throw(name) != nullptr) return true;
    for (const CLI::App* sub : app_.get_subcommands({})) {
      if (sub->get_option_no_throw(name) != nullptr) return true;
    }
    return false;
  }

  // The first argument no command took. CLI11 keeps a "--" among them
  // too, for apps that pass their extras on; it is not an argument.
  std::string ExtraArgumentError() const {
    std::vector<std::string> extras = app_.remaining(true);
    std::erase(extras, "--");
    if (extras.empty()) return "";
    const std::string& arg = extras.front();
    const std::vector<CLI::App*> command = app_.get_subcommands();
    if (arg.size() > 1 && arg[0] == '-') {
      const std::string name = arg.substr(0, arg.find('='));
      if (!command.empty() && command[0]->get_option_no_throw(name) != nullptr) {
        return name + " goes after " + command[0]->get_name() + " (a command's own flags follow it)";
      }
      for (const GoesWith& g : kGoesWith) {
        if (name == g.flag) return g.error;
      }
      return "unknown flag " + name + " (see --help)";
    }
    if (command.empty()) {
      return "unknown command \"" + arg +
             "\" (expected check-config, collect, selftest, phase, endurance, history, retention "
             "or report; see --help)";
    }
    return "unexpected argument \"" + arg + "\"";
  }

  CLI::App app_{"drivewatch watches NVMe drives age", "drivewatch"};
  CommandLine cli_;
};

}  // namespace

ParsedCommandLine ParseCommandLine(const std::vector<std::string>& argv) {
  Parser parser;
  return parser.Parse(argv);
}

}  // namespace drivewatch
