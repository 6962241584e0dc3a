// SPDX-License-Identifier: Apache-2.0
// Every metric the persistent event log probe emits is defined here.
#include "probes/persistent_event_log.h"

#include <algorithm>
#include <cerrno>
#include <utility>

#include "config/util/log.h"
#include "probes/drive/byte_order.h"
#include "probes/drive/identify.h"

namespace drivewatch {
namespace {

using detail::LoadLe;

constexpr MetricDesc kEventsTotal{
    "drivewatch_persistent_event_log_events_total",
    "Persistent event log (0Dh) events stamped after the last one drivewatch "
    "processed, by type (see docs/metrics.md); history present when "
    "drivewatch first saw the drive is not counted. Kept across restarts.",
    MetricType::kCounter};
constexpr MetricDesc kEvents{
    "drivewatch_persistent_event_log_events",
    "Events in the drive's persistent event log as last read, by type.",
    MetricType::kGauge};
constexpr MetricDesc kExcursionTemp{
    "drivewatch_persistent_event_log_thermal_excursion_celsius",
    "Temperature of the newest thermal excursion event in the log (its "
    "threshold plus the excursion above it).",
    MetricType::kGauge};
constexpr MetricDesc kExcursionThreshold{
    "drivewatch_persistent_event_log_thermal_excursion_threshold_celsius",
    "Threshold the newest thermal excursion event in the log went over.",
    MetricType::kGauge};
constexpr MetricDesc kExcursionTime{
    "drivewatch_persistent_event_log_thermal_excursion_timestamp_seconds",
    "Unix time of the newest thermal excursion event, by the drive's clock "
    "(the Timestamp feature the host set); absent when not reported.",
    MetricType::kGauge};
constexpr MetricDesc kLastProcessed{
    "drivewatch_persistent_event_log_last_processed_timestamp_seconds",
    "Drive timestamp of the newest event drivewatch has processed; kept "
    "across restarts.",
    MetricType::kGauge};
constexpr MetricDesc kProblems{
    "drivewatch_persistent_event_log_decode_problems",
    "Length fields in the last read log that did not fit the buffer "
    "(truncated or oversized events); decoding stops at the first.",
    MetricType::kGauge};

const MetricDesc* const kAllMetrics[] = {
    &kEventsTotal,   &kEvents,       &kExcursionTemp, &kExcursionThreshold,
    &kExcursionTime, &kLastProcessed, &kProblems,     &FeatureSupportedMetric(),
};

// Event header: type, revision, EHL (header bytes after byte 2), additional
// info, controller id (5:4), timestamp (13:6), port id (15:14), reserved,
// VSIL (21:20), EL (23:22: bytes after the header, VSI included).
constexpr std::size_t kEventHeaderMin = 24;

}  // namespace

PersistentEventLog DecodePersistentEventLog(std::span<const std::uint8_t> b) {
  PersistentEventLog log;
  if (b.size() < kPersistentEventLogHeaderSize) {
    log.problems.push_back("header: " + std::to_string(b.size()) +
                           " bytes (expected at least " +
                           std::to_string(kPersistentEventLogHeaderSize) + ")");
    return log;
  }
  log.total_events = LoadLe<std::uint32_t>(b, 4);
  log.total_length = LoadLe<std::uint64_t>(b, 8);
  std::size_t end = b.size();
  if (log.total_length < kPersistentEventLogHeaderSize) {
    log.problems.push_back("header: total log length " +
                           std::to_string(log.total_length) +
                           " is shorter than the header");
    return log;
  }
  if (log.total_length < end) end = static_cast<std::size_t>(log.total_length);
  if (log.total_length > b.size()) {
    log.problems.push_back("header: total log length " +
                           std::to_string(log.total_length) + " exceeds the " +
                           std::to_string(b.size()) + " bytes read");
  }
  std::size_t o = kPersistentEventLogHeaderSize;
  for (std::uint32_t i = 0; i < log.total_events; ++i) {
    const std::string where = "event " + std::to_string(i) + " at byte " +
                              std::to_string(o);
    if (end - o < kEventHeaderMin) {
      log.problems.push_back(where + ": header truncated (" +
                             std::to_string(end - o) + " bytes left)");
      break;
    }
    const std::size_t header = 3 + static_cast<std::size_t>(b[o + 2]);
    const std::size_t vsil = LoadLe<std::uint16_t>(b, o + 20);
    const std::size_t el = LoadLe<std::uint16_t>(b, o + 22);
    if (header < kEventHeaderMin) {
      log.problems.push_back(where + ": header length " +
                             std::to_string(header) + " is shorter than " +
                             std::to_string(kEventHeaderMin));
      break;
    }
    if (header > end - o || el > end - o - header) {
      log.problems.push_back(where + ": length " + std::to_string(header + el) +
                             " runs past the log end (" +
                             std::to_string(end) + " bytes)");
      break;
    }
    PersistentEvent e;
    e.type = b[o];
    e.revision = b[o + 1];
    e.controller_id = LoadLe<std::uint16_t>(b, o + 4);
    e.timestamp_ms = LoadLe<std::uint64_t>(b, o + 6) & 0xffffffffffffull;
    if (vsil > el) {
      log.problems.push_back(where + ": vendor specific length " +
                             std::to_string(vsil) + " exceeds event length " +
                             std::to_string(el));
    } else {
      e.data.assign(b.begin() + static_cast<std::ptrdiff_t>(o + header + vsil),
                    b.begin() + static_cast<std::ptrdiff_t>(o + header + el));
    }
    log.events.push_back(std::move(e));
    o += header + el;
  }
  return log;
}

std::string_view PersistentEventTypeName(std::uint8_t type) {
  switch (type) {
    case 0x01: return "smart_snapshot";
    case 0x02: return "firmware_commit";
    case 0x03: return "timestamp_change";
    case 0x04: return "power_on_or_reset";
    case 0x05: return "hardware_error";
    case 0x06: return "change_namespace";
    case 0x07: return "format_start";
    case 0x08: return "format_completion";
    case 0x09: return "sanitize_start";
    case 0x0a: return "sanitize_completion";
    case 0x0b: return "set_feature";
    case 0x0c: return "telemetry_log_created";
    case 0x0d: return "thermal_excursion";
    case 0xde: return "vendor_specific";
    case 0xdf: return "tcg_defined";
    default: return "other";
  }
}

std::optional<ThermalExcursion> DecodeThermalExcursion(
    std::span<const std::uint8_t> data) {
  if (data.size() < 2) return std::nullopt;
  return ThermalExcursion{data[0], data[1]};
}

PersistentEventLogProbe::PersistentEventLogProbe(FeatureSupport::LogFn log)
    : support_(std::move(log)) {}

std::span<const MetricDesc* const> PersistentEventLogProbe::Metrics() {
  return kAllMetrics;
}

void PersistentEventLogProbe::SetStateStore(std::shared_ptr<StateStore> state) {
  std::lock_guard lock(mu_);
  if (state) state_ = std::move(state);
}

void PersistentEventLogProbe::Load(const std::string& serial) {
  loaded_ = true;
  std::shared_ptr<StateStore> store;
  {
    std::lock_guard lock(mu_);
    if (!state_) state_ = std::make_shared<MemoryStateStore>();
    store = state_;
  }
  auto text = store->Load("persistent-event-log-" + serial);
  if (!text) {
    if (text.error().errnum != ENOENT) {
      log::Warn("persistent event log state of drive serial=" + serial + ": " +
                text.error().message +
                "; taking the events in the log now as already counted");
    }
    return;
  }
  try {
    for (const auto& [key, value] : ParseStateLines(*text)) {
      if (key == "last_timestamp_ms") {
        last_ms_ = std::stoull(value);
        known_ = true;
      } else if (key == "count") {
        const std::size_t space = value.find(' ');
        if (space == std::string::npos) continue;
        counts_[value.substr(0, space)] = std::stoull(value.substr(space + 1));
      }
    }
  } catch (const std::exception&) {
    log::Warn("persistent event log state of drive serial=" + serial +
              " has a malformed number; ignoring the rest of it");
  }
}

void PersistentEventLogProbe::Save(const std::string& serial) {
  std::string out = "last_timestamp_ms " + std::to_string(last_ms_) + "\n";
  for (const auto& [type, n] : counts_) {
    out += "count " + type + " " + std::to_string(n) + "\n";
  }
  std::shared_ptr<StateStore> store;
  {
    std::lock_guard lock(mu_);
    store = state_;
  }
  Status s = store->Save("persistent-event-log-" + serial, out);
  if (!s && !save_failing_) {
    log::Warn("cannot save the persistent event log state of drive serial=" +
              serial + ": " + s.error().message +
              "; events may be counted again after a restart");
  }
  save_failing_ = !s;
}

namespace {

// With the context the header's read established: the whole log (up to
// kPersistentEventLogMaxBytes), then the context released, whatever
// happened in between.
Expected<Bytes> ReadAndRelease(Controller& ctrl, const Bytes& header) {
  Expected<Bytes> whole = header;
  const std::uint64_t tll = LoadLe<std::uint64_t>(header, 8);
  if (tll > kPersistentEventLogHeaderSize) {
    std::size_t length =
        static_cast<std::size_t>(std::min<std::uint64_t>(tll, kPersistentEventLogMaxBytes));
    length = (length + 3) / 4 * 4;
    whole = ctrl.GetLogPageAt(kPersistentEventLogId, kNsidAll, length,
                              kPelLspRead, 0);
  }
  auto released = ctrl.GetLogPageAt(kPersistentEventLogId, kNsidAll,
                                    kPersistentEventLogHeaderSize,
                                    kPelLspRelease, 0);
  if (!whole) return whole.error();
  if (!released) return released.error();
  return whole;
}

// The counts since drivewatch first saw the drive, what the log holds now
// by type, its newest thermal excursion, and how far it was read.
void ExportEvents(SampleSink& sink, const std::string& serial_number,
                  const PersistentEventLog& log,
                  const std::map<std::string, std::uint64_t>& counts,
                  std::uint64_t last_ms) {
  std::map<std::string, std::uint64_t> in_log;
  const PersistentEvent* excursion = nullptr;
  for (const PersistentEvent& e : log.events) {
    ++in_log[std::string(PersistentEventTypeName(e.type))];
    if (e.type == kPelThermalExcursion && DecodeThermalExcursion(e.data) &&
        (excursion == nullptr || e.timestamp_ms >= excursion->timestamp_ms)) {
      excursion = &e;
    }
  }
  const Labels serial{{"serial", serial_number}};
  for (const auto& [type, n] : counts) {
    sink.Add(kEventsTotal, {{"serial", serial_number}, {"type", type}},
             static_cast<double>(n));
  }
  if (counts.find("thermal_excursion") == counts.end()) {
    sink.Add(kEventsTotal,
             {{"serial", serial_number}, {"type", "thermal_excursion"}}, 0);
  }
  for (const auto& [type, n] : in_log) {
    sink.Add(kEvents, {{"serial", serial_number}, {"type", type}},
             static_cast<double>(n));
  }
  if (excursion != nullptr) {
    const ThermalExcursion t = *DecodeThermalExcursion(excursion->data);
    sink.Add(kExcursionTemp, serial, t.threshold_celsius + t.over_celsius);
    sink.Add(kExcursionThreshold, serial, t.threshold_celsius);
    if (excursion->timestamp_ms != 0) {
      sink.Add(kExcursionTime, serial, excursion->timestamp_ms / 1000.0);
    }
  }
  if (last_ms != 0) sink.Add(kLastProcessed, serial, last_ms / 1000.0);
  sink.Add(kProblems, serial, static_cast<double>(log.problems.size()));
}

}  // namespace

void PersistentEventLogProbe::TakeNewEvents(const PersistentEventLog& log,
                                            const std::string& serial) {
  std::uint64_t newest = last_ms_;
  for (const PersistentEvent& e : log.events) {
    // Events without a timestamp cannot be placed, so are never counted.
    if (known_ && e.timestamp_ms > last_ms_) {
      ++counts_[std::string(PersistentEventTypeName(e.type))];
    }
    newest = std::max(newest, e.timestamp_ms);
  }
  if (!known_ || newest != last_ms_) {
    known_ = true;
    last_ms_ = newest;
    Save(serial);
  }
}

Status PersistentEventLogProbe::Run(Controller& ctrl,
                                    const ControllerInfo& info,
                                    SampleSink& sink) {
  auto id_bytes = ctrl.Identify(kIdentifyCnsController, 0);
  if (!id_bytes) return id_bytes.error();
  auto id = DecodeIdentifyController(*id_bytes);
  if (!id) return id.error();
  constexpr std::string_view kFeature = "persistent_event_log";
  constexpr std::string_view kDescription = "the persistent event log (0Dh)";
  if ((id->lpa & kLpaPersistentEventLog) == 0) {
    support_.Report(sink, info.serial, kFeature, kDescription, false,
                    "Identify Controller LPA bit 4 is clear");
    return Ok{};
  }
  auto header = ctrl.GetLogPageAt(kPersistentEventLogId, kNsidAll,
                                  kPersistentEventLogHeaderSize,
                                  kPelLspEstablish, 0);
  if (!header) {
    if (!header.error().Unsupported()) return header.error();
    support_.Report(sink, info.serial, kFeature, kDescription, false,
                    header.error().message);
    return Ok{};
  }
  support_.Report(sink, info.serial, kFeature, kDescription, true, "");
  auto whole = ReadAndRelease(ctrl, *header);
  if (!whole) return whole.error();

  const PersistentEventLog log = DecodePersistentEventLog(*whole);
  for (std::size_t i = problems_logged_; i < log.problems.size(); ++i) {
    log::Warn("drive serial=" + info.serial + ": persistent event log: " +
              log.problems[i]);
  }
  problems_logged_ = std::max(problems_logged_, log.problems.size());
  if (!loaded_) Load(info.serial);
  TakeNewEvents(log, info.serial);
  ExportEvents(sink, info.serial, log, counts_, last_ms_);
  return Ok{};
}

}  // namespace drivewatch
