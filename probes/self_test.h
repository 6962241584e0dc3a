// SPDX-License-Identifier: Apache-2.0
// Device self-tests (NVMe 2.0 §5.9, log page 06h §5.16.1.7), as smartd runs
// them: short and extended tests on a schedule, their progress, and the
// results the drive keeps. docs/metrics.md "Self-test probe" tells the whole
// story.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/schedule.h"
#include "probes/feature_support.h"
#include "probes/probe.h"
#include "probes/probe_state.h"
#include "probes/sample_sink.h"

namespace drivewatch {

inline constexpr std::uint8_t kSelfTestLogId = 0x06;
inline constexpr std::size_t kSelfTestLogSize = 564;
inline constexpr std::uint8_t kSelfTestOpcode = 0x14;
// Self-test codes (STC), in the command and in the log.
inline constexpr std::uint8_t kSelfTestShort = 0x1;
inline constexpr std::uint8_t kSelfTestExtended = 0x2;
inline constexpr std::uint8_t kSelfTestVendor = 0xe;
inline constexpr std::uint8_t kSelfTestAbort = 0xf;
// Identify Controller OACS bit 4: Device Self-test supported.
inline constexpr std::uint16_t kOacsSelfTest = 1 << 4;

// One Self-test Result Data Structure (28 bytes).
struct SelfTestResult {
  std::uint8_t code = 0;     // STC, byte 0 bits 7:4
  std::uint8_t result = 0;   // byte 0 bits 3:0, see SelfTestResultName
  std::uint8_t segment = 0;  // first failing segment, when result is 7h
  std::uint8_t valid = 0;    // valid diagnostic information bits
  std::uint64_t power_on_hours = 0;
  std::uint32_t nsid = 0;    // valid when valid bit 0
  std::uint64_t failing_lba = 0;  // valid when valid bit 1
  std::uint8_t sct = 0;      // valid when valid bit 2
  std::uint8_t sc = 0;       // valid when valid bit 3

  bool NsidValid() const { return (valid & 1) != 0; }
  bool LbaValid() const { return (valid & 2) != 0; }
  // The fields that tell two results apart, as one string: the log has no
  // timestamp or sequence number, so this is the result's identity.
  std::string Identity() const;
};

struct SelfTestLog {
  std::uint8_t current_operation = 0;  // 0 none, else the running test's STC
  std::uint8_t completion_percent = 0; // of the running test, 0..100
  std::vector<SelfTestResult> results; // newest first; unused entries dropped
};

// Decodes log page 06h. Fails with EBADMSG on a buffer shorter than
// kSelfTestLogSize. Pure: bytes in, struct out.
Expected<SelfTestLog> DecodeSelfTestLog(std::span<const std::uint8_t> bytes);

// "short", "extended", "vendor_specific", or "other".
std::string_view SelfTestTypeName(std::uint8_t code);
// The result code's name: passed, aborted_by_command, aborted_by_reset,
// aborted_namespace_removed, aborted_by_format, fatal_error,
// failed_unknown_segment, failed_segment, aborted_unknown,
// aborted_by_sanitize, or reserved.
std::string_view SelfTestResultName(std::uint8_t result);
// Result codes 5h, 6h and 7h: the test found a fault.
bool SelfTestFailed(std::uint8_t result);

// For an already scheduled test that could not start at its time (another
// test running, the drive busy with a heavy phase, drivewatch down), how
// long after the slot it may still start.
inline constexpr std::chrono::hours kSelfTestCatchUp{1};

struct SelfTestSettings {
  config::Schedule short_test;
  config::Schedule extended_test;
  bool abort_on_shutdown = false;
};

class SelfTestProbe : public DriveProbe {
 public:
  using WallNowFn = std::function<std::chrono::system_clock::time_point()>;
  explicit SelfTestProbe(WallNowFn now = {}, FeatureSupport::LogFn log = {});

  const char* name() const override { return "self_test"; }

  // Any thread. `state` keeps what was counted (null: memory only); `busy`
  // says when a heavy phase has the drive (null: never).
  void Configure(const SelfTestSettings& settings,
                 std::shared_ptr<StateStore> state,
                 const DriveBusyBoard* busy);

  // Identify Controller (OACS bit 4), then log page 06h: counts results new
  // since the last run (or since drivewatch first saw the drive), exports
  // progress and the last result per type, and starts a scheduled test
  // when one is due, none is running and the drive is not busy. A drive
  // without self-test support is reported once and succeeds.
  Status Run(Controller& ctrl, const ControllerInfo& info,
             SampleSink& sink) override;

  // Aborts (STC Fh) a test this probe started and still sees running, when
  // the settings ask for it (abort_on_shutdown).
  void Stop(Controller& ctrl, const ControllerInfo& info) override;

  void SetWallClock(WallClock now) override {
    if (now) now_ = std::move(now);
  }

  static std::span<const MetricDesc* const> Metrics();

 private:
  struct TypeState {
    std::uint64_t failures = 0;
    std::uint64_t started = 0;
    std::int64_t attempted = 0;  // unix seconds of the slot last tried
  };
  void LoadState(const std::string& serial);
  void SaveState(const std::string& serial);
  TypeState& Type(std::uint8_t code);
  // Run's steps. New results in the log: counted, logged and remembered
  // with when they were first seen; true when the state changed.
  bool TakeResults(const SelfTestLog& log, const std::string& serial, std::int64_t now_s);
  // Progress and the newest result per type as samples.
  void ExportLog(const SelfTestLog& log, const std::string& serial, SampleSink& sink);
  // Starts the scheduled test that is due, if the drive is free; true when
  // a slot was attempted.
  bool StartDueTest(Controller& ctrl, const std::string& serial, const SelfTestLog& log,
                    std::chrono::system_clock::time_point now);

  WallNowFn now_;
  FeatureSupport support_;
  FeatureSupport::LogFn log_;

  std::mutex mu_;  // guards the three below (Configure is any thread)
  SelfTestSettings settings_;
  std::shared_ptr<StateStore> state_;
  const DriveBusyBoard* busy_ = nullptr;

  // Drive strand only.
  bool loaded_ = false;
  bool known_ = false;  // the state was read, or one log was processed
  bool save_failing_ = false;
  std::vector<std::pair<std::string, std::int64_t>> seen_;  // identity, unix
  std::array<TypeState, 3> types_{};  // short, extended, vendor_specific
  bool started_running_ = false;      // a test we started is running
  std::string busy_logged_;
};

}  // namespace drivewatch
