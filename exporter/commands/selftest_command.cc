// SPDX-License-Identifier: Apache-2.0
#include "exporter/commands/selftest_command.h"

#include <unistd.h>

#include <thread>

#include "probes/drive/identify.h"
#include "probes/drive/nvme_drive_layer.h"
#include "probes/self_test.h"

namespace drivewatch {

int RunSelfTest(DriveLayer& layer, const SelfTestRun& run) {
  auto say = [&](const std::string& line) {
    std::FILE* to = line.rfind("drivewatch: ", 0) == 0 ? run.err : run.out;
    std::fputs((line + "\n").c_str(), to);
    std::fflush(to);
  };
  auto scan = layer.Scan();
  if (!scan) {
    say("drivewatch: cannot list NVMe controllers: " + scan.error().message);
    return 1;
  }
  const ControllerInfo* found = nullptr;
  std::string serials;
  for (const ControllerInfo& c : *scan) {
    if (c.serial == run.serial) found = &c;
    serials += (serials.empty() ? "" : ", ") + c.serial;
  }
  if (found == nullptr) {
    say("drivewatch: no NVMe drive with serial \"" + run.serial +
        "\" (found: " + (serials.empty() ? "none" : serials) + ")");
    return 2;
  }
  auto ctrl = layer.Open(*found);
  if (!ctrl) {
    say("drivewatch: " + ctrl.error().message);
    return 1;
  }
  auto id_bytes = (*ctrl)->Identify(kIdentifyCnsController, 0);
  if (!id_bytes) {
    say("drivewatch: " + id_bytes.error().message);
    return 1;
  }
  auto id = DecodeIdentifyController(*id_bytes);
  if (!id) {
    say("drivewatch: " + found->device + ": " + id.error().message);
    return 1;
  }
  const std::string type(SelfTestTypeName(run.code));
  const std::string who = found->device + " (serial " + run.serial + ")";
  if ((id->oacs & kOacsSelfTest) == 0) {
    say("drivewatch: " + who +
        " does not support device self-test (Identify Controller OACS bit 4 "
        "is clear)");
    return 2;
  }
  // The newest result before the start, to tell ours from the history.
  std::string before;
  if (auto b = (*ctrl)->GetLogPage(kSelfTestLogId, kNsidAll, kSelfTestLogSize)) {
    if (auto log = DecodeSelfTestLog(*b); log && !log->results.empty()) {
      before = log->results.front().Identity();
    }
  }
  if (Status s = (*ctrl)->DeviceSelfTest(run.code, kNsidAll); !s) {
    say("drivewatch: cannot start a " + type + " self-test on " + who + ": " +
        s.error().message);
    return 1;
  }
  say("started a " + type + " self-test on " + who);
  if (!run.wait) return 0;
  int last_percent = -1;
  for (;;) {
    run.sleep(std::chrono::seconds(1));
    auto b = (*ctrl)->GetLogPage(kSelfTestLogId, kNsidAll, kSelfTestLogSize);
    if (!b) {
      say("drivewatch: " + b.error().message);
      return 1;
    }
    auto log = DecodeSelfTestLog(*b);
    if (!log) {
      say("drivewatch: " + log.error().message);
      return 1;
    }
    if (log->current_operation != 0) {
      const int percent = log->completion_percent;
      if (run.terminal) {
        if (percent != last_percent) {
          std::fprintf(run.out, "\r%s self-test: %3d%% complete", type.c_str(),
                       percent);
          std::fflush(run.out);
        }
      } else {
        say(type + " self-test: " + std::to_string(percent) + "% complete");
      }
      last_percent = percent;
      continue;
    }
    if (run.terminal && last_percent >= 0) std::fputs("\n", run.out);
    if (log->results.empty() || log->results.front().Identity() == before) {
      say("drivewatch: the self-test is no longer running but left no result "
          "in log page 06h");
      return 1;
    }
    const SelfTestResult& r = log->results.front();
    std::string line = std::string(SelfTestTypeName(r.code)) +
                       " self-test result: " +
                       std::string(SelfTestResultName(r.result)) + " at " +
                       std::to_string(r.power_on_hours) + " power-on hours";
    if (r.result == 0x7) line += ", segment " + std::to_string(r.segment);
    if (r.LbaValid()) line += ", failing LBA " + std::to_string(r.failing_lba);
    if (r.NsidValid()) line += ", nsid " + std::to_string(r.nsid);
    say(line);
    return r.result == 0 ? 0 : 1;
  }
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
