// SPDX-License-Identifier: Apache-2.0
// Running one heavy phase, whole: everything around a phase's own story
// (aging/phases/phase.h), in this order:
//   1. find the phase and its target in the config;
//   2. take the target's lock, and the drive's (by serial), in the state
//      directory (flock), so at most one heavy phase runs per drive across
//      the daemon and `drivewatch phase run`;
//   3. checkpoint "running" in <state>/phases/<phase>.checkpoint, before
//      anything is written (a directory target's file is created and
//      allocated in step 4), so every run that wrote anything is on record;
//   4. open the target read-write (a block device exclusively, O_EXCL, so
//      the kernel refuses to mount it while we write) and pass the write
//      gate (CheckWritePass, aging/safety/interlocks.h) — again before every
//      write pass;
//   5. run the kind's story, checking the abort conditions
//      (aging/runner/abort_conditions.h) every second on a watcher thread;
//   6. append one record to the history (aging/history/history.h) with the
//      outcome, the reason, and the results so far; remove the checkpoint.
// A checkpoint found at start-up belongs to a run that never reached step
// 6 (a crash, SIGKILL or power cut): RecoverInterrupted() records it as
// "interrupted" with the results it had checkpointed. Runs never resume:
// an SLC fill or a latency measurement split across a reboot would
// measure something else. An endurance test is the one made of many runs:
// it keeps its own progress file, and its next run goes on from there
// (aging/phases/endurance.h).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <vector>

#include "aging/engine/workload.h"
#include "aging/runner/abort_conditions.h"
#include "aging/safety/interlocks.h"
#include "config/config.h"
#include "config/util/json.h"
#include "probes/drive/drive_layer.h"

namespace drivewatch::aging {

// What a running phase looks like from outside, about once a second.
struct PhaseStatus {
  std::string phase;
  std::string kind;
  std::string target;
  std::string serial;  // block device targets
  std::string step;    // "sequential write", "idle_1m", ...
  double fraction = 0; // 0..1 of the whole phase
  double bytes_per_second = 0;  // the last second, all operations
  double iops = 0;
  std::chrono::steady_clock::duration elapsed{};
};

class PhaseObserver {
 public:
  virtual ~PhaseObserver() = default;
  virtual void OnStart(const PhaseStatus& status) { (void)status; }
  virtual void OnProgress(const PhaseStatus& status) = 0;
  // `record` is what was appended to the history.
  virtual void OnEnd(const Json& record) = 0;
  // The run found its phase's checkpoint left by a run killed earlier (by
  // hand, while the daemon went on) and appended `record` for it, outcome
  // "interrupted", before starting.
  virtual void OnInterruptedRecorded(const Json& record) { (void)record; }
};

// Opens the NVMe controller behind a block device, for the phases that
// send admin commands (power-states) and for recovery, which puts back
// what such a run changed (PhaseReport::restore). Unset (drivewatch):
// NvmeControllerOn on the device. Set (tests): a fake controller, since
// no real drive at hand has the power states a test needs.
using ControllerOpener = std::function<std::unique_ptr<Controller>(const std::string& device)>;

struct PhaseRunnerOptions {
  std::string state_directory;
  SystemPaths paths;
  // The abort conditions' view of the drive. Unset (drivewatch): an NVMe
  // namespace target gets NvmeHealthSource on its descriptor, other
  // targets none. Set (tests): used for every target, since no real part
  // heats up or raises a warning on cue.
  std::function<std::unique_ptr<HealthSource>(int fd)> health;
  std::chrono::milliseconds check_interval{1'000};
  // Called with the drive's serial when a phase on it starts and ends, so
  // the daemon can pause its light probes there (DESIGN.md decision 8).
  std::function<void(const std::string& serial, const std::string& phase)> on_drive_busy;
  std::function<void(const std::string& serial)> on_drive_idle;
  // Used for every target when set; unset, NVMe namespace targets get
  // NvmeControllerOn on the run's descriptor, other targets none.
  ControllerOpener controller;
};

// Paths in the state directory.
std::string HistoryPath(const std::string& state_directory);
std::string CheckpointPath(const std::string& state_directory,
                           const std::string& phase);

// Runs `phase_name` of `config` to its end on the calling thread, then
// returns the record appended to the history. A refusal (interlocks, a
// busy drive, an unknown phase) is a record too, with outcome "refused";
// only an error appending to the history is an Error.
Expected<Json> RunPhase(const config::Config& config,
                        const std::string& phase_name,
                        const PhaseRunnerOptions& options,
                        std::stop_token stop, PhaseObserver* observer);

// Records every checkpoint left by a run that did not finish as
// "interrupted", and removes it. Returns the records appended. A checkpoint
// whose target lock another process holds is left alone: its run is still
// going.
// A checkpoint carrying what its run changed on the drive (power-states)
// has it put back first, through `open` (unset: the device's own
// controller), if the device still shows the drive's serial.
std::vector<Json> RecoverInterrupted(const std::string& state_directory,
                                     const ControllerOpener& open = {});

// The fraction of `target` written from its start, as the history leaves
// it: the last completed fill's, or 1 after a perf run that preconditioned
// it; negative when unknown (no fill on record, a trim phase or an
// unfinished fill since, a purge or preconditioning cut short, a perf cell
// that trims, a replay that trimmed or was interrupted).
double LastFillRatio(const std::vector<Json>& history, const std::string& target);
// One record's step of that: the level after record `r`, from `level`
// before it (so a streamed history folds record by record).
double FillRatioAfter(const Json& r, const std::string& target, double level);

}  // namespace drivewatch::aging
