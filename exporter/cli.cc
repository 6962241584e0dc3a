#include "exporter/cli.h"

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
    {"--log.level", &CommandLine::log_level},
    {"--drive", &CommandLine::drive},
    {"--type", &CommandLine::test_type},
};

}  // namespace

std::string UsageText() {
  return R"(usage: drivewatch [flags]                 run the daemon
       drivewatch check-config FILE        validate a config file and exit
       drivewatch collect --once [flags]   run every enabled light probe once,
                                           print the metrics to stdout and exit
       drivewatch selftest run --drive SERIAL --type short|extended [--wait]
                                           start a device self-test on the
                                           drive; with --wait, show progress
                                           (a line per second when not on a
                                           terminal) and the result

drivewatch watches NVMe drives age and exports what it sees as Prometheus
metrics.

flags:
  --config.file=FILE          TOML config file (default: built-in defaults)
  --web.listen-address=ADDR   address to serve /metrics on, host:port,
                              [ipv6]:port or :port (overrides [web])
  --log.level=LEVEL           debug, info, warn or error (overrides [log])
  --once                      with collect: run once (the only mode)
  --drive=SERIAL              with selftest run: the drive, by serial
  --type=short|extended       with selftest run: which test
  --wait                      with selftest run: wait for the result (exit
                              status 0 passed, 1 otherwise)
  -h, --help                  show this help
  --version                   show the version and the libraries built with

exit status: 0 success, 1 runtime failure, 2 bad command line or config.
)";
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
      continue;
    }
    if (!have_subcommand && cli.args.empty()) {
      if (arg == "check-config") {
        cli.command = CommandLine::Command::kCheckConfig;
      } else if (arg == "collect") {
        cli.command = CommandLine::Command::kCollect;
      } else if (arg == "selftest") {
        cli.command = CommandLine::Command::kSelfTest;
      } else {
        return {std::nullopt, "unknown command \"" + arg +
                                  "\" (expected check-config, collect or "
                                  "selftest; see --help)"};
      }
      have_subcommand = true;
      continue;
    }
    cli.args.push_back(arg);
  }
  const bool selftest = cli.command == CommandLine::Command::kSelfTest;
  if (!selftest && (cli.drive || cli.test_type || cli.wait)) {
    return {std::nullopt, "--drive, --type and --wait go with selftest run"};
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
    case CommandLine::Command::kCheckConfig:
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
