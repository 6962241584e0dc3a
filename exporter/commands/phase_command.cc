// SPDX-License-Identifier: Apache-2.0
#include "exporter/commands/phase_command.h"

#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <thread>

#include "aging/history/history.h"
#include "aging/history/run_record.h"
#include "aging/phases/endurance.h"
#include "aging/phases/perf_summary.h"
#include "aging/report/retention_report.h"
#include "aging/retention/retention_study.h"
#include "aging/runner/phase_runner.h"
#include "config/util/log.h"
#include "exporter/daemon.h"

namespace drivewatch {
namespace {

std::string Clock(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--:--";
  const long s = std::lround(seconds);
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof(buf), "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  } else {
    std::snprintf(buf, sizeof(buf), "%02ld:%02ld", s / 60, s % 60);
  }
  return buf;
}

class ProgressPrinter : public aging::PhaseObserver {
 public:
  explicit ProgressPrinter(bool tty) : tty_(tty) {}

  void OnProgress(const aging::PhaseStatus& s) override {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::milliseconds{tty_ ? 200 : 1000}) return;
    last_ = now;
    const double elapsed = std::chrono::duration<double>(s.elapsed).count();
    const double eta = s.fraction > 0.001 ? elapsed * (1 - s.fraction) / s.fraction : -1;
    char rate[64];
    std::snprintf(rate, sizeof(rate), "%8.1f MB/s %8.0f IOPS", s.bytes_per_second / 1e6, s.iops);
    if (tty_) {
      constexpr int kWidth = 30;
      const int filled = static_cast<int>(s.fraction * kWidth);
      std::string bar(static_cast<std::size_t>(filled), '#');
      bar.resize(kWidth, '.');
      std::fprintf(stderr, "\r\033[K%s [%s] %5.1f%% %-18.18s %s  elapsed %s  ETA %s",
                   s.phase.c_str(), bar.c_str(), s.fraction * 100, s.step.c_str(), rate,
                   Clock(elapsed).c_str(), Clock(eta).c_str());
    } else {
      std::fprintf(stderr, "phase %s: %.1f%% %s %s elapsed %s ETA %s\n", s.phase.c_str(),
                   s.fraction * 100, s.step.c_str(), rate, Clock(elapsed).c_str(),
                   Clock(eta).c_str());
    }
    std::fflush(stderr);
  }

  void OnEnd(const Json&) override {
    if (tty_) std::fputs("\n", stderr);
  }

 private:
  bool tty_;
  std::chrono::steady_clock::time_point last_{};
};

// Records the runs a crash left unrecorded, and says which phases they were.
void SayRecovered(const std::string& state_directory) {
  for (const Json& r : aging::RecoverInterrupted(state_directory)) {
    const auto run = aging::ReadRunHeader(r, aging::RecordFields::kPresent);
    std::fprintf(stderr, "drivewatch: recorded an interrupted run of phase %s\n",
                 run && !run->phase.empty() ? run->phase.c_str() : "?");
  }
}

}  // namespace

int RunPhaseCommand(const CommandLine& cli) {
  const auto cfg = LoadConfig(cli);
  if (!cfg) return 2;
  const std::string& name = cli.args[1];
  const config::PhaseConfig* phase = cfg->aging.FindPhase(name);
  if (phase == nullptr) {
    std::string known;
    for (const auto& p : cfg->aging.phases) known += (known.empty() ? "" : ", ") + p.name;
    std::fprintf(stderr, "drivewatch: %s: no phase \"%s\" in [[aging.phases]] (%s)\n",
                 cli.config_file->c_str(), name.c_str(),
                 known.empty() ? "none are configured" : ("expected one of: " + known).c_str());
    return 2;
  }
  if (cli.target && *cli.target != phase->target) {
    std::fprintf(stderr,
                 "drivewatch: phase \"%s\" runs on target \"%s\", not \"%s\" (its "
                 "aging.phases.target)\n",
                 name.c_str(), phase->target.c_str(), cli.target->c_str());
    return 2;
  }
  log::SetLevel(cfg->log_level == config::LogLevel::kDebug ? log::Level::kDebug
                                                           : log::Level::kWarn);
  SayRecovered(cfg->state_directory);

  // SIGINT/SIGTERM end the phase through its stop token, from a thread
  // that waits for them, so the run is recorded as aborted.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::stop_source stop;
  std::jthread waiter([&](std::stop_token done) {
    while (!done.stop_requested()) {
      timespec timeout{0, 100'000'000};
      if (sigtimedwait(&signals, nullptr, &timeout) > 0) {
        stop.request_stop();
        return;
      }
    }
  });

  aging::PhaseRunnerOptions options;
  options.state_directory = cfg->state_directory;
  options.paths.study_register = cfg->study_register;
  ProgressPrinter printer(isatty(STDERR_FILENO) == 1);
  auto record = aging::RunPhase(*cfg, name, options, stop.get_token(), &printer);
  waiter.request_stop();
  waiter.join();
  if (!record) {
    std::fprintf(stderr, "drivewatch: phase %s: %s\n", name.c_str(), record.error().message.c_str());
    return record.error().errnum == ENOENT ? 2 : 1;
  }
  std::fputs((DumpJson(*record, 2) + "\n").c_str(), stdout);
  // A perf run's matrix as a table, beside the JSON (docs/aging.md).
  if (const std::string table = aging::RenderPerfSummary(*record); !table.empty()) {
    std::fflush(stdout);
    std::fputs(table.c_str(), stderr);
  }
  // The runner has logged the outcome and its reason (once: it was
  // printed twice); what is left to say is data found damaged.
  const auto run = aging::ReadRunRecord(*record);
  if (!run) {
    std::fprintf(stderr, "drivewatch: phase %s: %s\n", name.c_str(), run.error().message.c_str());
    return 1;
  }
  if (run->outcome != "completed") return run->outcome == "refused" ? 2 : 1;
  const Json* bad = Find(run->results, "bad_bytes");
  if (bad != nullptr && AsDouble(*bad) > 0) {
    std::fprintf(stderr,
                 "drivewatch: phase %s: the verify found %.0f bytes that no longer read back as "
                 "written (exit status 3; drivewatch retention report names the blocks)\n",
                 name.c_str(), AsDouble(*bad));
    return kExitDataDamaged;
  }
  return 0;
}

int RunEnduranceCommand(const CommandLine& cli) {
  const auto cfg = LoadConfig(cli);
  if (!cfg) return 2;
  const std::string& name = cli.args[1];
  const config::PhaseConfig* phase = cfg->aging.FindPhase(name);
  std::string endurance;
  for (const auto& p : cfg->aging.phases) {
    if (std::holds_alternative<config::EnduranceParams>(p.params)) {
      endurance += (endurance.empty() ? "" : ", ") + p.name;
    }
  }
  if (phase == nullptr || !std::holds_alternative<config::EnduranceParams>(phase->params)) {
    std::fprintf(stderr, "drivewatch: %s: %s (%s)\n", cli.config_file->c_str(),
                 phase == nullptr
                     ? ("no phase \"" + name + "\" in [[aging.phases]]").c_str()
                     : ("phase \"" + name + "\" is of kind " +
                        std::string(config::PhaseKindName(phase->params)) + ", not endurance")
                           .c_str(),
                 endurance.empty() ? "no endurance phase is configured"
                                   : ("expected an endurance phase: " + endurance).c_str());
    return 2;
  }
  SayRecovered(cfg->state_directory);
  auto done = aging::ResetEnduranceTest(cfg->state_directory, name, phase->target);
  if (!done) {
    std::fprintf(stderr, "drivewatch: %s\n", done.error().message.c_str());
    return 1;
  }
  std::printf("%s\n", done->c_str());
  return 0;
}

int RunHistoryCommand(const CommandLine& cli) {
  const auto cfg = LoadConfig(cli);
  if (!cfg) return 2;
  aging::HistoryFile file(aging::HistoryPath(cfg->state_directory));
  auto contents = file.Read();
  if (!contents) {
    std::fprintf(stderr, "drivewatch: %s\n", contents.error().message.c_str());
    return 1;
  }
  if (contents->torn_tail_bytes > 0) {
    std::fprintf(stderr,
                 "drivewatch: %s: the last %zu bytes are a torn record (a write cut "
                 "short by a crash) and are left out\n",
                 file.path().c_str(), contents->torn_tail_bytes);
  }
  for (const std::string& d : contents->damaged) {
    std::fprintf(stderr, "drivewatch: %s: damaged record skipped: %s\n", file.path().c_str(),
                 d.c_str());
  }
  if (contents->damaged_unlisted > 0) {
    std::fprintf(stderr, "drivewatch: %s: %llu more damaged records skipped\n",
                 file.path().c_str(), static_cast<unsigned long long>(contents->damaged_unlisted));
  }
  aging::HistoryFilter filter;
  if (cli.drive) filter.serial = *cli.drive;
  if (cli.phase) filter.phase = *cli.phase;
  const std::string fmt = cli.format.value_or("table");
  const aging::HistoryFormat format = fmt == "json"  ? aging::HistoryFormat::kJson
                                      : fmt == "csv" ? aging::HistoryFormat::kCsv
                                                     : aging::HistoryFormat::kTable;
  std::fputs(aging::RenderHistory(contents->records, filter, format).c_str(), stdout);
  // An empty table says where it looked: without --config.file that is the
  // built-in state directory, which may not be the daemon's.
  if (contents->records.empty()) {
    std::fprintf(stderr, "drivewatch: no runs on record in %s%s\n", file.path().c_str(),
                 cli.config_file ? ""
                                 : " (the built-in default state directory; --config.file "
                                   "names the config whose [state] directory to read)");
  }
  return 0;
}

int RunRetentionCommand(const CommandLine& cli) {
  const auto cfg = LoadConfig(cli);
  if (!cfg) return 2;
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  if (cli.args[0] == "end") {
    if (Status s = aging::EndStudy(cfg->state_directory, cli.args[1],
                                   "ended by the operator (drivewatch retention end)",
                                   cfg->study_register);
        !s) {
      std::fprintf(stderr, "drivewatch: %s\n", s.error().message.c_str());
      return s.error().errnum == ENOENT ? 2 : 1;
    }
    std::printf("retention study \"%s\" ended: its region may be written again\n",
                cli.args[1].c_str());
    return 0;
  }
  const std::string fmt = cli.format.value_or("text");
  const aging::ReportFormat format = fmt == "json"   ? aging::ReportFormat::kJson
                                     : fmt == "html" ? aging::ReportFormat::kHtml
                                                     : aging::ReportFormat::kText;
  if (cli.args[0] == "list") {
    std::vector<Json> studies;
    std::vector<aging::UnloadableStudy> unloadable;
    for (aging::StudyFile& f : aging::ReadStudies(cfg->state_directory)) {
      if (f.record) {
        studies.push_back(std::move(*f.record));
      } else {
        std::fprintf(stderr, "drivewatch: %s\n", f.record.error().message.c_str());
        unloadable.push_back({f.name, f.record.error().message, f.record.error().errnum == EBADMSG});
      }
    }
    std::fputs(aging::RenderRetentionList(studies, now, unloadable).c_str(), stdout);
    return unloadable.empty() ? 0 : 1;
  }
  auto study = aging::LoadStudy(cfg->state_directory, cli.args[1]);
  if (!study) {
    std::fprintf(stderr, "drivewatch: %s\n", study.error().message.c_str());
    if (study.error().errnum == ENOENT) return 2;
    std::fputs(aging::RenderDamagedStudyReport(cli.args[1], study.error().message,
                                               study.error().errnum == EBADMSG, format)
                   .c_str(),
               stdout);
    return 1;
  }
  std::fputs(aging::RenderRetentionReport(*study, format, now).c_str(), stdout);
  return 0;
}

}  // namespace drivewatch
