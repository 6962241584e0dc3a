// SPDX-License-Identifier: Apache-2.0
// Internal to the phase runner (aging/runner/phase_runner.cc): the target a
// phase runs on, opened and checked (step 4 of aging/runner/phase_runner.h),
// with what the run needs to know of it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "aging/engine/workload.h"
#include "aging/runner/abort_conditions.h"
#include "aging/runner/phase_runner.h"
#include "aging/safety/interlocks.h"
#include "config/config.h"
#include "probes/drive/drive_layer.h"

namespace drivewatch::aging::phase_detail {

struct OpenedTarget {
  std::unique_ptr<WorkloadTarget> io;
  std::string path;
  std::unique_ptr<HealthSource> health;  // for the abort conditions
  std::unique_ptr<Controller> controller;  // NVMe, or options.controller
  bool nvme = false;
  std::uint32_t nsid = 0;
  std::uint64_t capacity = 0;  // whole MiB
  std::uint64_t size = 0;      // bytes
  StorageMap storage;          // what it reaches (aging/safety/storage.h)
};

// What opening needs of the run, and the run's drive facts, which it fills
// in as it learns them (so a refusal's record has them too).
struct TargetRequest {
  const config::AgingTarget& target;
  const config::PhaseConfig& phase;
  const PhaseRunnerOptions& options;
  WritePass whole_pass;  // what the phase as a whole may write
  std::string& device;   // followed when a phase that only reads finds the drive moved
  std::string& model;
  std::string& firmware;
};

// Opens the run's target and checks it. A phase that writes opens it
// read-write and passes the write gate (CheckWritePass) on that very
// descriptor; one that only reads (retention-verify) opens it read-only and
// checks only that it is the configured drive, following the drive by its
// serial if its kernel name changed. Every error is a refusal (EPERM), and
// says why.
Expected<OpenedTarget> OpenTarget(const TargetRequest& run);

}  // namespace drivewatch::aging::phase_detail
