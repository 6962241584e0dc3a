// SPDX-License-Identifier: Apache-2.0
#include "exporter/commands/selftest_command.h"

#include <unistd.h>

#include <optional>
#include <thread>

#include "probes/drive/identify.h"
#include "probes/drive/nvme_drive_layer.h"
#include "probes/self_test.h"

namespace drivewatch {

namespace {

// "drivewatch: ..." lines are failures and go to the error stream.
void Say(const SelfTestRun& run, const std::string& line) {
  std::FILE* to = line.rfind("drivewatch: ", 0) == 0 ? run.err : run.out;
  std::fputs((line + "\n").c_str(), to);
  std::fflush(to);
}

// The controller with the run's serial; else nothing, the problem said
// and *status the exit status.
std::optional<ControllerInfo> FindDrive(DriveLayer& layer, const SelfTestRun& run, int* status) {
  auto scan = layer.Scan();
  if (!scan) {
    Say(run, "drivewatch: cannot list NVMe controllers: " + scan.error().message);
    *status = 1;
    return std::nullopt;
  }
  const ControllerInfo* found = nullptr;
  std::string serials;
  for (const ControllerInfo& c : *scan) {
    if (c.serial == run.serial) found = &c;
    serials += (serials.empty() ? "" : ", ") + c.serial;
  }
  if (found == nullptr) {
    Say(run, "drivewatch: no NVMe drive with serial \"" + run.serial +
                 "\" (found: " + (serials.empty() ? "none" : serials) + ")");
    *status = 2;
    return std::nullopt;
  }
  return *found;
}

// The newest result in the log, to tell the one a new test leaves from the
// history; empty when there is none or the log cannot be read.
std::string NewestResult(Controller& ctrl) {
  if (auto b = ctrl.GetLogPage(kSelfTestLogId, kNsidAll, kSelfTestLogSize)) {
    if (auto log = DecodeSelfTestLog(*b); log && !log->results.empty()) {
      return log->results.front().Identity();
    }
  }
  return "";
}

std::string ResultLine(const SelfTestResult& r) {
  std::string line = std::string(SelfTestTypeName(r.code)) + " self-test result: " +
                     std::string(SelfTestResultName(r.result)) + " at " +
                     std::to_string(r.power_on_hours) + " power-on hours";
  if (r.result == 0x7) line += ", segment " + std::to_string(r.segment);
  if (r.LbaValid()) line += ", failing LBA " + std::to_string(r.failing_lba);
  if (r.NsidValid()) line += ", nsid " + std::to_string(r.nsid);
  return line;
}

// --wait: polls the log once a second, showing progress, until the test
// leaves a result newer than `before`; the exit status.
int WaitForResult(Controller& ctrl, const SelfTestRun& run, const std::string& type,
                  const std::string& before) {
  int last_percent = -1;
  for (;;) {
    run.sleep(std::chrono::seconds(1));
    auto b = ctrl.GetLogPage(kSelfTestLogId, kNsidAll, kSelfTestLogSize);
    if (!b) {
      Say(run, "drivewatch: " + b.error().message);
      return 1;
    }
    auto log = DecodeSelfTestLog(*b);
    if (!log) {
      Say(run, "drivewatch: " + log.error().message);
      return 1;
    }
    if (log->current_operation != 0) {
      const int percent = log->completion_percent;
      if (run.terminal) {
        if (percent != last_percent) {
          std::fprintf(run.out, "\r%s self-test: %3d%% complete", type.c_str(), percent);
          std::fflush(run.out);
        }
      } else {
        Say(run, type + " self-test: " + std::to_string(percent) + "% complete");
      }
      last_percent = percent;
      continue;
    }
    if (run.terminal && last_percent >= 0) std::fputs("\n", run.out);
    if (log->results.empty() || log->results.front().Identity() == before) {
      Say(run, "drivewatch: the self-test is no longer running but left no result "
               "in log page 06h");
      return 1;
    }
    const SelfTestResult& r = log->results.front();
    Say(run, ResultLine(r));
    return r.result == 0 ? 0 : 1;
  }
}

}  // namespace

int RunSelfTest(DriveLayer& layer, const SelfTestRun& run) {
  int status = 0;
  auto found = FindDrive(layer, run, &status);
  if (!found) return status;
  auto ctrl = layer.Open(*found);
  if (!ctrl) {
    Say(run, "drivewatch: " + ctrl.error().message);
    return 1;
  }
  auto id_bytes = (*ctrl)->Identify(kIdentifyCnsController, 0);
  if (!id_bytes) {
    Say(run, "drivewatch: " + id_bytes.error().message);
    return 1;
  }
  auto id = DecodeIdentifyController(*id_bytes);
  if (!id) {
    Say(run, "drivewatch: " + found->device + ": " + id.error().message);
    return 1;
  }
  const std::string type(SelfTestTypeName(run.code));
  const std::string who = found->device + " (serial " + run.serial + ")";
  if ((id->oacs & kOacsSelfTest) == 0) {
    Say(run, "drivewatch: " + who +
                 " does not support device self-test (Identify Controller OACS bit 4 "
                 "is clear)");
    return 2;
  }
  const std::string before = NewestResult(**ctrl);
  if (Status s = (*ctrl)->DeviceSelfTest(run.code, kNsidAll); !s) {
    Say(run, "drivewatch: cannot start a " + type + " self-test on " + who + ": " +
                 s.error().message);
    return 1;
  }
  Say(run, "started a " + type + " self-test on " + who);
  if (!run.wait) return 0;
  return WaitForResult(**ctrl, run, type, before);
}

int RunSelfTestCommand(const CommandLine& cli) {
  auto layer = MakeNvmeDriveLayer();
  SelfTestRun run;
  run.serial = *cli.drive;
  run.code = *cli.test_type == "extended" ? kSelfTestExtended : kSelfTestShort;
  run.wait = cli.wait;
  run.terminal = ::isatty(STDOUT_FILENO) == 1;
  run.sleep = [](std::chrono::milliseconds d) { std::this_thread::sleep_for(d); };
  return RunSelfTest(*layer, run);
}

}  // namespace drivewatch
