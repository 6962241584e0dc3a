// SPDX-License-Identifier: Apache-2.0
// What a heavy phase is made of. Each kind (config/phase_kinds.h) tells
// its whole story in one file (aging/phases/fill_phase.cc, ...) as a function of
// its parameters over a PhaseContext: the workloads it runs, the idle it waits,
// and the results it reports. Everything around that story, the
// interlocks, the drive's health, checkpoints, history and metrics, is the
// runner's (aging/runner/phase_runner.h), so a phase cannot forget any of it.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "aging/engine/workload.h"
#include "aging/safety/storage.h"
#include "config/config.h"
#include "config/util/expected.h"
#include "config/util/json.h"
#include "probes/drive/drive_layer.h"
#include "probes/power_meter.h"
#include "probes/sample_sink.h"

namespace drivewatch::aging {

// What a phase reports, filled in as it goes so that an aborted run still
// records its partial results. `results` holds numbers only, each key
// ending in its unit: _bytes, _bytes_per_second, _iops, _seconds, _watts,
// _ios (a count of I/Os), _operations and _operations_per_second (an
// application's: SQLite inserts) or _ratio (the exporter turns each into
// drivewatch_phase_result_<unit>{measure="<key without unit>"},
// docs/metrics.md). `series` holds arrays,
// kept in history only. `restore`, when not null, is what the phase changed
// on the drive and must be put back if the run dies: it is saved with the
// checkpoint (not in the history), and recovery restores it
// (aging/runner/phase_recovery.cc, RestoreDriveSettings). `resume`, when not
// null, is the state file the kind keeps beside the history, as of this
// checkpoint (endurance: its progress file): {"file": its path under the
// state directory, "<directory>/<phase>.<ext>", "content": its JSON}. A
// kind that keeps one checkpoints before it saves the file, and recovery
// writes the file back from the checkpoint before it records the run, so
// the interrupted record and the file always agree (a crash between the
// two saves loses neither).
struct PhaseReport {
  Json results = Json::object();
  Json series = Json::object();
  Json restore;
  Json resume;
};

class PhaseContext {
 public:
  virtual ~PhaseContext() = default;
  virtual const config::PhaseConfig& phase() const = 0;
  // Bytes the phase may use: the target's size rounded down to whole
  // MiB, so every block size divides it.
  virtual std::uint64_t capacity() const = 0;
  virtual std::uint32_t logical_block_size() const = 0;
  // What the history says about this target: the fraction of it the last
  // completed fill left written, or a negative number when unknown.
  virtual double fill_ratio() const = 0;
  // Runs one workload. One that writes or trims is a write pass: the
  // interlocks are checked again first. The phase's progress moves from
  // `progress_from` to `progress_to` (0..1) as the workload advances.
  virtual Expected<WorkloadResult> Run(const WorkloadSpec& spec,
                                       std::string_view step,
                                       double progress_from,
                                       double progress_to) = 0;
  // Waits `duration` doing no I/O; false when the phase was stopped.
  virtual bool Idle(std::chrono::nanoseconds duration, std::string_view step,
                    double progress_from, double progress_to) = 0;
  // True once the phase must end (abort condition, SIGTERM, reload).
  virtual bool stopped() const = 0;
  // Saves `report` with the checkpoint, so a crash keeps what was measured.
  virtual void Checkpoint(const PhaseReport& report) = 0;

  // For the retention phases, which keep their own durable study record.
  virtual const config::AgingTarget& target() const = 0;
  virtual const std::string& state_directory() const = 0;
  // The open target's descriptor (admin passthrough for SMART on NVMe).
  virtual int fd() const = 0;
  virtual bool nvme() const = 0;
  // serial, nsid, model, firmware, device: what the run was made on.
  virtual Json DriveFacts() const = 0;
  // Which bytes of which storage the target reaches (aging/safety/storage.h), as
  // the run resolved it when it opened the target. State a phase resumes
  // from (a study's record, an endurance test's progress) records it, and
  // is refused on any other storage. The default, for contexts without a
  // real target: nothing resolved (no extents).
  virtual const StorageMap& storage() const;
  // The host's study register (aging/retention/study_register.h) the run's write
  // gate reads, where a retention study enters itself.
  virtual std::string study_register() const { return SystemPaths{}.study_register; }
  // Admin commands to the target's controller (power-states), or null
  // when the target is not an NVMe namespace.
  virtual Controller* controller() { return nullptr; }
  // The external power meter configured for the target's drive
  // ([[probes.power.meters]]), if any.
  virtual std::optional<PowerMeterSpec> power_meter() const { return std::nullopt; }
  // One read of `size` bytes at `offset` of the target, timed from
  // submission to completion (power-states' exit latency): a pread on the
  // O_DIRECT descriptor fd(), with a buffer of its own (defined in
  // aging/phases/power_states_phase.cc).
  virtual Expected<std::chrono::nanoseconds> TimedRead(std::uint64_t offset,
                                                       std::uint32_t size);
  // Puts one step of the run on the history (endurance: a pass), as a
  // step record (aging/history/history.h) with `fields`, durably, once: a step
  // record of this phase with the same `test` and `step` already there is
  // not appended again (a run killed between the append and its next
  // progress save does the step's append again when it resumes). The
  // default, for contexts that keep no history, refuses.
  virtual Status RecordStep(const std::string& test, std::uint64_t step, const Json& fields);
  // A directory of the run's own on the target's file system, for a kind
  // whose workload is an application's (sqlite, pgbench): made once per
  // run through the write gate (aging/safety/interlocks.h,
  // PrepareWorkDirectory), with `bytes` (the most the run puts there)
  // checked against the free-space reserve (`sized_by`: the keys that
  // set it, for the refusal's remedy). The runner removes it with
  // everything in it when the run ends, however it ends, and after a
  // crash (KindReleaseWork first). The default, for contexts without a
  // directory target, refuses.
  virtual Expected<std::string> WorkDirectory(std::uint64_t bytes, std::string_view sized_by);
  // The phase's progress (0..1) at `step`, for a kind whose workload is
  // not the engine's (Run reports its own). The default: nothing.
  virtual void Progress(std::string_view /*step*/, double /*fraction*/) {}
};

// Each kind's story, one overload per kind of config::PhaseParams
// (config/phase_kinds.h), in aging/phases/<kind>_phase.cc: the runner calls the
// one for the phase's kind, so a kind without one does not compile. They
// return early, with Ok, when ctx.stopped(); an Error means the phase could
// not go on (the report keeps what it had).
Status RunKind(const config::FillParams& phase, PhaseContext& ctx, PhaseReport& report);
Status RunKind(const config::ReclaimParams& phase, PhaseContext& ctx, PhaseReport& report);
Status RunKind(const config::PerfParams& phase, PhaseContext& ctx, PhaseReport& report);
Status RunKind(const config::TrimParams& phase, PhaseContext& ctx, PhaseReport& report);
Status RunKind(const config::RetentionWriteParams& phase, PhaseContext& ctx,
               PhaseReport& report);
Status RunKind(const config::RetentionVerifyParams& phase, PhaseContext& ctx,
               PhaseReport& report);
Status RunKind(const config::PowerStatesParams& phase, PhaseContext& ctx,
               PhaseReport& report);

// Puts back the drive settings a run saved in PhaseReport::restore
// (power-states: the APST table and the power state), after checking that
// `ctrl` is still the drive the run changed. Says what it restored.
Expected<std::string> RestoreDriveSettings(Controller& ctrl, const Json& restore);
Status RunKind(const config::EnduranceParams& phase, PhaseContext& ctx, PhaseReport& report);
Status RunKind(const config::ReplayParams& phase, PhaseContext& ctx, PhaseReport& report);
Status RunKind(const config::SqliteParams& phase, PhaseContext& ctx, PhaseReport& report);
Status RunKind(const config::PgbenchParams& phase, PhaseContext& ctx, PhaseReport& report);

// What a replay phase's trace holds, for the config check
// (config::LoadOptions::inspect_trace, aging/phases/replay_phase.cc): reads the
// whole trace; an Error names the trace file and line.
Expected<config::TraceFacts> InspectTrace(const config::ReplayParams& phase);

// What the runner asks of a kind beside its story. Each hook has a default
// here for every kind; a kind that needs another answer overloads the hook
// for its struct, declared under the hook's default and defined beside it in
// aging/phases/<kind>_phase.cc. The runner never tests a kind's name.

// The fill level (the fraction of the target written; negative: unknown)
// a run of this kind leaves, from its history record and the level before
// it. The runner hands over only run records of the target, with an
// outcome. The default: a kind that writes leaves the level unknown, so a
// new writing kind cannot leave a stale level behind; one that only reads
// leaves it as it was.
template <class Params>
double FillLevelAfter(const Params&, const Json& /*record*/, double level) {
  return Params::kWrites ? -1 : level;
}
double FillLevelAfter(const config::FillParams&, const Json& record, double level);
double FillLevelAfter(const config::ReclaimParams&, const Json& record, double level);
double FillLevelAfter(const config::PerfParams&, const Json& record, double level);
double FillLevelAfter(const config::RetentionWriteParams&, const Json& record, double level);
double FillLevelAfter(const config::EnduranceParams&, const Json& record, double level);
double FillLevelAfter(const config::ReplayParams&, const Json& record, double level);
double FillLevelAfter(const config::SqliteParams&, const Json& record, double level);
double FillLevelAfter(const config::PgbenchParams&, const Json& record, double level);

// What a phase may write, for the write gate (aging/safety/interlocks.h):
// [offset, offset + length) of the target (length 0: to its end), on
// behalf of `study` (a retention study may write its own region, and only
// it). The default: the whole target, for no study.
struct WriteScope {
  std::string study;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
};
template <class Params>
WriteScope KindWriteScope(const Params&) {
  return {};
}
WriteScope KindWriteScope(const config::RetentionWriteParams& phase);

// What a run of this kind needs before it opens its target: an Error ends
// the run as failed, the drive untouched. The default: nothing.
template <class Params>
Status KindPreflight(const Params&, const std::string& /*state_directory*/) {
  return Ok{};
}
Status KindPreflight(const config::RetentionVerifyParams& phase,
                     const std::string& state_directory);
// pgbench: KindTools.
Status KindPreflight(const config::PgbenchParams& phase, const std::string& state_directory);

// Whether what a kind runs is installed, for the config check
// (config::LoadOptions::check_tools) and before a run: an Error names what
// is missing and the Debian package that has it. The default: nothing to
// install.
template <class Params>
Status KindTools(const Params&) {
  return Ok{};
}
// pgbench: Debian's PostgreSQL server binaries, and an account to run them
// as (PostgreSQL refuses root).
Status KindTools(const config::PgbenchParams& phase);
// KindTools for the kind of `params`.
Status CheckKindTools(const config::PhaseParams& params);

// What must happen before a kind's work directory
// (PhaseContext::WorkDirectory) is removed, its run over or crashed, such
// as stopping a server the run started there. The default: nothing.
template <class Params>
Status KindReleaseWork(const Params&, const std::string& /*work_directory*/) {
  return Ok{};
}
// pgbench: a server still running in it is stopped (pg_ctl -m immediate).
Status KindReleaseWork(const config::PgbenchParams& phase, const std::string& work_directory);

// What a kind keeps outside the history and exports as metrics of its own,
// between its runs too (endurance: its test's progress file). One overload
// per kind that keeps such state, in aging/phases/<kind>_phase.cc; the template
// is every other kind's: nothing. `labels` are the phase's (phase, kind,
// target, serial). An Error (a damaged file) means nothing was added; the
// caller logs it.
template <class Params>
Status ExportKindState(const Params&, const config::PhaseConfig&, const std::string&,
                       const Labels&, SampleSink&) {
  return Ok{};
}
Status ExportKindState(const config::EnduranceParams& params, const config::PhaseConfig& phase,
                       const std::string& state_directory, const Labels& labels,
                       SampleSink& sink);

// Helpers the phases share.
// Repeated measures (perf's runs, sqlite's segments, pgbench's seconds):
// their mean and, from two on, the standard error of the mean (the sample
// standard deviation over the square root of n).
struct Spread {
  double mean = 0;
  std::optional<double> se;
  std::size_t n = 0;
};
Spread SpreadOf(const std::vector<double>& v);
// Bytes per second of each sample of `result`, all operations.
Json ThroughputSeries(const WorkloadResult& result);
// A fraction of the target in [0, 1] among a run record's results
// (fill_ratio), or nullopt.
std::optional<double> ResultRatio(const Json& record, std::string_view key);
// Trims [0, bytes) in 2 MiB deallocates (the largest block the engine
// takes), so a fill starts from an empty drive.
Expected<WorkloadResult> TrimRange(PhaseContext& ctx, std::uint64_t bytes,
                                   std::string_view step, double from,
                                   double to);

}  // namespace drivewatch::aging
