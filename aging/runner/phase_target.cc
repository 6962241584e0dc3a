// SPDX-License-Identifier: Apache-2.0
#include "aging/runner/phase_target.h"

#include <cerrno>
#include <utility>

#include "aging/retention/retention_study.h"  // FindNvmeNamespace
#include "config/util/log.h"
#include "probes/drive/identify.h"
#include "probes/drive/nvme_drive_layer.h"

namespace drivewatch::aging::phase_detail {
namespace {

Error Refuse(std::string why) { return Error{EPERM, -1, std::move(why)}; }

// The path to open: the block device, or the directory target's own file,
// made and allocated first for a phase that writes.
Expected<std::string> TargetPath(const TargetRequest& run, bool reads_only) {
  const config::AgingTarget& target = run.target;
  // A phase that changes the drive's power settings needs to know which
  // drive: a block device target, which names its serial.
  if (config::PhaseKindChangesPowerState(run.phase.params) &&
      (target.block_device.empty() || target.serial.empty())) {
    return Refuse("phase kind " + std::string(config::PhaseKindName(run.phase.params)) +
                  " changes the drive's power settings, but target " + target.name +
                  " names no drive (expected an [[aging.targets]] entry with block_device "
                  "and serial)");
  }
  if (!target.block_device.empty()) return target.block_device;
  if (reads_only) return AgingFilePath(target);
  auto prepared = PrepareAgingFile(target, run.whole_pass, run.options.paths);
  if (!prepared) return Refuse(prepared.error().message);
  return *prepared;
}

// Opens `path` for the phase: read-write through the write gate, or
// read-only (then a block device target must be one).
Expected<std::unique_ptr<WorkloadTarget>> OpenChecked(const TargetRequest& run,
                                                      const std::string& path,
                                                      bool reads_only) {
  const config::AgingTarget& target = run.target;
  auto io = WorkloadTarget::Open(path, reads_only ? WorkloadTarget::kReadOnly
                                                  : WorkloadTarget::kReadWrite);
  if (!io && io.error().errnum == EBUSY && !target.block_device.empty()) {
    // Something holds the device: the interlocks, run on a read-only
    // descriptor, say what (a mounted partition, swap, a holder).
    if (auto ro = WorkloadTarget::Open(path, WorkloadTarget::kReadOnly)) {
      if (Status s = CheckWritePass(target, (*ro)->fd(), run.whole_pass, run.options.paths);
          !s) {
        return Refuse(s.error().message);
      }
    }
  }
  if (!io) {
    return Refuse(path + ": cannot open for " + (reads_only ? "reading: " : "writing: ") +
                  io.error().message);
  }
  if (!reads_only) {
    if (Status s = CheckWritePass(target, (*io)->fd(), run.whole_pass, run.options.paths); !s) {
      return Refuse(s.error().message);
    }
  } else if (!target.block_device.empty() && !(*io)->is_block_device()) {
    return Refuse(target.block_device +
                  ": refusing to read: it is not a block device "
                  "(aging.targets.block_device names a whole device)");
  }
  return io;
}

// A phase that only reads: the block device must be the configured drive.
// Kernel names change across boots and hot-plugs, so it follows the drive
// by its serial (one that writes never does): `io` and `t.path` then move.
Status CheckReadTarget(const TargetRequest& run, std::unique_ptr<WorkloadTarget>& io,
                       OpenedTarget& t) {
  const config::AgingTarget& target = run.target;
  const PhaseRunnerOptions& options = run.options;
  Status checked = CheckIdentity(target, io->fd(), io->device_number(), options.paths);
  if (!checked && target.nsid != 0) {
    if (auto moved = FindNvmeNamespace(target.serial, target.nsid, options.paths.sysfs);
        moved && *moved != t.path) {
      auto reopened = WorkloadTarget::Open(*moved, WorkloadTarget::kReadOnly);
      if (reopened) {
        Status again = CheckIdentity(target, (*reopened)->fd(), (*reopened)->device_number(),
                                     options.paths);
        if (again) {
          log::Info("phase " + run.phase.name + ": " + target.serial + " namespace " +
                    std::to_string(target.nsid) + " is " + *moved + " now, not " + t.path);
          io = std::move(*reopened);
          t.path = *moved;
          run.device = t.path;
          checked = Ok{};
        }
      }
    }
  }
  if (!checked) return Refuse(checked.error().message);
  return Ok{};
}

// What the block device is: its namespace, and for an NVMe drive its model
// and firmware, its health source and its controller.
void LearnDrive(const TargetRequest& run, const WorkloadTarget& io, OpenedTarget& t) {
  auto identity = ReadDeviceIdentity(io.fd(), io.device_number(), run.options.paths);
  if (identity) t.nsid = identity->nsid;
  if (!identity || !identity->nvme) return;
  t.nvme = true;
  if (auto id = NvmeControllerOn(io.fd())->Identify(kIdentifyCnsController, 0)) {
    if (auto c = DecodeIdentifyController(*id)) {
      run.model = c->model;
      run.firmware = c->firmware;
    }
  }
  if (!run.options.health) t.health = NvmeHealthSource(io.fd());
  if (!run.options.controller) t.controller = NvmeControllerOn(io.fd(), t.path);
}

}  // namespace

Expected<OpenedTarget> OpenTarget(const TargetRequest& run) {
  const PhaseRunnerOptions& options = run.options;
  const bool reads_only = !config::PhaseKindWrites(run.phase.params);
  OpenedTarget t;
  auto path = TargetPath(run, reads_only);
  if (!path) return path.error();
  t.path = std::move(*path);
  auto io = OpenChecked(run, t.path, reads_only);
  if (!io) return io.error();
  if ((*io)->is_block_device()) {
    // A writer's identity was checked by the write gate.
    if (reads_only) {
      if (Status s = CheckReadTarget(run, *io, t); !s) return s.error();
    }
    LearnDrive(run, **io, t);
  }
  if (options.health) t.health = options.health((*io)->fd());
  if (options.controller) t.controller = options.controller(t.path);
  if (auto storage = ResolveStorage((*io)->fd(), options.paths)) {
    t.storage = std::move(*storage);
    NoteTargetIdentity(run.target, t.storage);
  } else if (!reads_only) {
    return Refuse(storage.error().message);
  }
  t.size = (*io)->size();
  t.capacity = t.size >> 20 << 20;
  if (t.capacity == 0) return Refuse(t.path + ": smaller than 1 MiB");
  t.io = std::move(*io);
  return t;
}

}  // namespace drivewatch::aging::phase_detail
