// SPDX-License-Identifier: Apache-2.0
// The Persistent Event log (log page 0Dh, NVMe 2.0 §5.16.1.14): events the
// drive keeps across power cycles, read where Identify LPA bit 4 says it
// exists. docs/metrics.md "Persistent event log probe".
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "probes/feature_support.h"
#include "probes/probe.h"
#include "probes/probe_state.h"
#include "probes/sample_sink.h"

namespace drivewatch {

inline constexpr std::uint8_t kPersistentEventLogId = 0x0d;
inline constexpr std::size_t kPersistentEventLogHeaderSize = 512;
// Identify Controller LPA bit 4: persistent event log supported.
inline constexpr std::uint8_t kLpaPersistentEventLog = 1 << 4;
// Log specific field values (NVMe 2.0 Figure 201).
inline constexpr std::uint8_t kPelLspRead = 0;
inline constexpr std::uint8_t kPelLspEstablish = 1;
inline constexpr std::uint8_t kPelLspRelease = 2;
// Thermal Excursion event type.
inline constexpr std::uint8_t kPelThermalExcursion = 0x0d;
// drivewatch reads at most this much of a log, whatever its header claims.
inline constexpr std::size_t kPersistentEventLogMaxBytes = 4u << 20;

struct PersistentEvent {
  std::uint8_t type = 0;
  std::uint8_t revision = 0;
  std::uint16_t controller_id = 0;
  // Event timestamp bits 47:0, milliseconds since the Unix epoch as the
  // controller kept it (0: not reported).
  std::uint64_t timestamp_ms = 0;
  std::vector<std::uint8_t> data;  // event data, vendor specific part skipped
};

struct PersistentEventLog {
  std::uint32_t total_events = 0;    // TNEV
  std::uint64_t total_length = 0;    // TLL, bytes with the header
  std::vector<PersistentEvent> events;
  // What the decoder refused, e.g. "event 3 at byte 1200: length 65535
  // runs past the log end (1500 bytes)". Decoding stops at the first event
  // whose length cannot be trusted.
  std::vector<std::string> problems;
};

// Decodes a persistent event log. Pure and total: any bytes in, the events
// it could read out, with every length field checked against the buffer
// and against the header's TLL. Never reads outside `bytes`.
PersistentEventLog DecodePersistentEventLog(std::span<const std::uint8_t> bytes);

// Bounded names of the event types (NVMe 2.0 Figure 273): smart_snapshot,
// firmware_commit, timestamp_change, power_on_or_reset, hardware_error,
// change_namespace, format_start, format_completion, sanitize_start,
// sanitize_completion, set_feature, telemetry_log_created,
// thermal_excursion, vendor_specific, tcg_defined, other.
std::string_view PersistentEventTypeName(std::uint8_t type);

struct ThermalExcursion {
  int over_celsius = 0;       // how far above the threshold
  int threshold_celsius = 0;  // the threshold it went over
};
// Thermal Excursion event data (2 bytes); nullopt when too short.
std::optional<ThermalExcursion> DecodeThermalExcursion(
    std::span<const std::uint8_t> data);

class PersistentEventLogProbe : public DriveProbe {
 public:
  explicit PersistentEventLogProbe(FeatureSupport::LogFn log = {});

  const char* name() const override { return "persistent_event_log"; }

  void SetStateStore(std::shared_ptr<StateStore> state);

  // Identify (LPA bit 4); then establishes a reporting context (LSP 1),
  // reads the whole log, and releases the context (LSP 2). Events stamped
  // after the last processed timestamp are counted; on first sight of a
  // drive its events are history.
  Status Run(Controller& ctrl, const ControllerInfo& info,
             SampleSink& sink) override;

  static std::span<const MetricDesc* const> Metrics();

 private:
  void Load(const std::string& serial);
  void Save(const std::string& serial);
  // Counts the events newer than the last one processed (none on the first
  // sight of the drive) and saves how far the log was read.
  void TakeNewEvents(const PersistentEventLog& log, const std::string& serial);

  FeatureSupport support_;
  std::mutex mu_;
  std::shared_ptr<StateStore> state_;  // mu_

  bool loaded_ = false;
  bool known_ = false;
  bool save_failing_ = false;
  std::uint64_t last_ms_ = 0;
  std::map<std::string, std::uint64_t> counts_;
  std::size_t problems_logged_ = 0;
};

}  // namespace drivewatch
