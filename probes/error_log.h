// SPDX-License-Identifier: Apache-2.0
// The Error Information log (log page 01h, NVMe 2.0 §5.16.1.2): a ring of
// ELPE + 1 entries of 64 bytes, each stamped with the controller's running
// 64-bit error count. It carries no wall time, so "when" is the time
// drivewatch first saw an entry. docs/metrics.md "Error log probe".
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "probes/probe.h"
#include "probes/probe_state.h"
#include "probes/sample_sink.h"

namespace drivewatch {

inline constexpr std::uint8_t kErrorLogId = 0x01;
inline constexpr std::size_t kErrorLogEntrySize = 64;

struct ErrorLogEntry {
  std::uint64_t error_count = 0;  // 0: the entry is unused
  std::uint16_t sqid = 0;         // submission queue (0 = admin)
  std::uint16_t cid = 0;          // command identifier
  std::uint8_t sct = 0;           // status code type, status field bits 11:9
  std::uint8_t sc = 0;            // status code, status field bits 8:1
  bool dnr = false;               // do not retry, bit 15
  std::uint16_t parameter_error_location = 0;
  std::uint64_t lba = 0;
  std::uint32_t nsid = 0;
};

// Decodes every whole 64-byte entry, dropping unused ones (error count 0),
// in log order. Pure; a short tail is ignored.
std::vector<ErrorLogEntry> DecodeErrorLog(std::span<const std::uint8_t> bytes);

// True when error count `a` comes after `b`, allowing for the 64-bit count
// wrapping: counts less than 2^63 ahead are after.
bool ErrorCountAfter(std::uint64_t a, std::uint64_t b);

// Bounded label values: the status code type (generic, command_specific,
// media, path, vendor_specific, other) and the status code's name for the
// codes drivewatch knows, else "other".
std::string_view StatusCodeTypeName(std::uint8_t sct);
std::string_view StatusCodeName(std::uint8_t sct, std::uint8_t sc);

class ErrorLogProbe : public DriveProbe {
 public:
  using WallNowFn = std::function<std::chrono::system_clock::time_point()>;
  using LogFn = std::function<void(std::string_view)>;
  explicit ErrorLogProbe(WallNowFn now = {}, LogFn log = {});

  const char* name() const override { return "error_log"; }

  // Any thread; null keeps the state in memory only.
  void SetStateStore(std::shared_ptr<StateStore> state);

  // Identify (ELPE), then log page 01h with ELPE + 1 entries. Entries whose
  // error count is after the highest seen are new: each is logged once and
  // counted. On first sight of a drive its entries are history.
  Status Run(Controller& ctrl, const ControllerInfo& info,
             SampleSink& sink) override;

  void SetWallClock(WallClock now) override {
    if (now) now_ = std::move(now);
  }

  static std::span<const MetricDesc* const> Metrics();

 private:
  void Load(const std::string& serial);
  void Save(const std::string& serial);

  WallNowFn now_;
  LogFn log_;
  std::mutex mu_;
  std::shared_ptr<StateStore> state_;  // mu_

  // Drive strand only.
  bool loaded_ = false;
  bool known_ = false;
  bool save_failing_ = false;
  std::uint64_t highest_ = 0;
  std::int64_t highest_seen_at_ = 0;
  std::uint64_t missed_ = 0;
  std::map<std::pair<std::string, std::string>, std::uint64_t> counts_;
};

}  // namespace drivewatch
