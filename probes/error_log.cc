// SPDX-License-Identifier: Apache-2.0
// Every metric the error log probe emits is defined here.
#include "probes/error_log.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "config/util/log.h"
#include "config/util/text.h"
#include "probes/drive/byte_order.h"
#include "probes/drive/identify.h"

namespace drivewatch {
namespace {

using detail::LoadLe;

constexpr MetricDesc kEntries{
    "drivewatch_error_log_new_entries_total",
    "Error Information log (01h) entries new since drivewatch first saw the "
    "drive, by status code type (sct=generic|command_specific|media|path|"
    "vendor_specific|other) and status code (status=name, or other); kept "
    "across restarts in the state directory.",
    MetricType::kCounter};
constexpr MetricDesc kMissed{
    "drivewatch_error_log_missed_entries_total",
    "Errors the controller counted that left its ELPE+1 entry ring before "
    "drivewatch read them (a gap in the error count), so their status is "
    "unknown.",
    MetricType::kCounter};
constexpr MetricDesc kNewestCount{
    "drivewatch_error_log_newest_sequence",
    "Error Count field of the newest Error Information log entry: the "
    "controller's own sequence number for its errors (0 when the log is "
    "empty), not a time.",
    MetricType::kGauge};
constexpr MetricDesc kNewestSeen{
    "drivewatch_error_log_newest_seen_timestamp_seconds",
    "Unix time drivewatch first saw the newest Error Information log entry; "
    "the log carries no wall time. Absent while the log is empty.",
    MetricType::kGauge};

// The health probe exports the ring's size (drivewatch_error_log_capacity_entries)
// and the drive's lifetime count (drivewatch_error_log_entries_total).
const MetricDesc* const kAllMetrics[] = {&kEntries, &kMissed, &kNewestCount,
                                         &kNewestSeen};

std::int64_t UnixSeconds(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch())
      .count();
}

std::string Hex(unsigned v, int width) { return util::Hex(v, width, "", "h"); }

}  // namespace

std::vector<ErrorLogEntry> DecodeErrorLog(std::span<const std::uint8_t> b) {
  std::vector<ErrorLogEntry> out;
  for (std::size_t o = 0; o + kErrorLogEntrySize <= b.size();
       o += kErrorLogEntrySize) {
    ErrorLogEntry e;
    e.error_count = LoadLe<std::uint64_t>(b, o);
    if (e.error_count == 0) continue;
    e.sqid = LoadLe<std::uint16_t>(b, o + 8);
    e.cid = LoadLe<std::uint16_t>(b, o + 10);
    const auto status = LoadLe<std::uint16_t>(b, o + 12);
    e.sc = static_cast<std::uint8_t>((status >> 1) & 0xff);
    e.sct = static_cast<std::uint8_t>((status >> 9) & 0x7);
    e.dnr = (status & 0x8000) != 0;
    e.parameter_error_location = LoadLe<std::uint16_t>(b, o + 14);
    e.lba = LoadLe<std::uint64_t>(b, o + 16);
    e.nsid = LoadLe<std::uint32_t>(b, o + 24);
    out.push_back(e);
  }
  return out;
}

bool ErrorCountAfter(std::uint64_t a, std::uint64_t b) {
  return a != b && a - b < (std::uint64_t{1} << 63);
}

std::string_view StatusCodeTypeName(std::uint8_t sct) {
  switch (sct) {
    case 0: return "generic";
    case 1: return "command_specific";
    case 2: return "media";
    case 3: return "path";
    case 7: return "vendor_specific";
    default: return "other";
  }
}

std::string_view StatusCodeName(std::uint8_t sct, std::uint8_t sc) {
  // NVMe 2.0 §4.1.3 (generic, Figure 100 and 101), command specific (Figure
  // 102) and media and data integrity errors (Figure 103).
  if (sct == 0) {
    switch (sc) {
      case 0x01: return "invalid_opcode";
      case 0x02: return "invalid_field";
      case 0x04: return "data_transfer_error";
      case 0x05: return "power_loss_abort";
      case 0x06: return "internal_error";
      case 0x07: return "abort_requested";
      case 0x0b: return "invalid_namespace_or_format";
      case 0x80: return "lba_out_of_range";
      case 0x81: return "capacity_exceeded";
      case 0x82: return "namespace_not_ready";
      default: return "other";
    }
  }
  if (sct == 1) {
    switch (sc) {
      case 0x09: return "invalid_log_page";
      case 0x0a: return "invalid_format";
      case 0x80: return "conflicting_attributes";
      case 0x82: return "write_to_read_only_range";
      default: return "other";
    }
  }
  if (sct == 2) {
    switch (sc) {
      case 0x80: return "write_fault";
      case 0x81: return "unrecovered_read_error";
      case 0x82: return "end_to_end_guard_check_error";
      case 0x83: return "end_to_end_application_tag_check_error";
      case 0x84: return "end_to_end_reference_tag_check_error";
      case 0x85: return "compare_failure";
      case 0x86: return "access_denied";
      case 0x87: return "deallocated_or_unwritten_block";
      default: return "other";
    }
  }
  return "other";
}

ErrorLogProbe::ErrorLogProbe(WallNowFn now, LogFn log)
    : now_(std::move(now)), log_(std::move(log)) {
  if (!now_) now_ = [] { return std::chrono::system_clock::now(); };
  if (!log_) log_ = [](std::string_view line) { log::Warn(line); };
}

std::span<const MetricDesc* const> ErrorLogProbe::Metrics() {
  return kAllMetrics;
}

void ErrorLogProbe::SetStateStore(std::shared_ptr<StateStore> state) {
  std::lock_guard lock(mu_);
  if (state) state_ = std::move(state);
}

void ErrorLogProbe::Load(const std::string& serial) {
  loaded_ = true;
  std::shared_ptr<StateStore> store;
  {
    std::lock_guard lock(mu_);
    if (!state_) state_ = std::make_shared<MemoryStateStore>();
    store = state_;
  }
  auto text = store->Load("error-log-" + serial);
  if (!text) {
    if (text.error().errnum != ENOENT) {
      log::Warn("error log state of drive serial=" + serial + ": " +
                text.error().message +
                "; taking the entries in the log now as already counted");
    }
    return;
  }
  try {
    for (const auto& [key, value] : ParseStateLines(*text)) {
      if (key == "highest") {
        const std::size_t space = value.find(' ');
        highest_ = std::stoull(value.substr(0, space));
        if (space != std::string::npos) {
          highest_seen_at_ = std::stoll(value.substr(space + 1));
        }
        known_ = true;
      } else if (key == "missed") {
        missed_ = std::stoull(value);
      } else if (key == "count") {
        // "SCT STATUS N"
        const std::size_t a = value.find(' ');
        const std::size_t b = value.find(' ', a + 1);
        if (a == std::string::npos || b == std::string::npos) continue;
        counts_[{value.substr(0, a), value.substr(a + 1, b - a - 1)}] =
            std::stoull(value.substr(b + 1));
      }
    }
  } catch (const std::exception&) {
    log::Warn("error log state of drive serial=" + serial +
              " has a malformed number; ignoring the rest of it");
  }
}

void ErrorLogProbe::Save(const std::string& serial) {
  std::string out = "highest " + std::to_string(highest_) + " " +
                    std::to_string(highest_seen_at_) + "\n";
  out += "missed " + std::to_string(missed_) + "\n";
  for (const auto& [key, n] : counts_) {
    out += "count " + key.first + " " + key.second + " " + std::to_string(n) +
           "\n";
  }
  std::shared_ptr<StateStore> store;
  {
    std::lock_guard lock(mu_);
    store = state_;
  }
  Status s = store->Save("error-log-" + serial, out);
  if (!s && !save_failing_) {
    log::Warn("cannot save the error log state of drive serial=" + serial +
              ": " + s.error().message +
              "; entries may be counted again after a restart");
  }
  save_failing_ = !s;
}

Status ErrorLogProbe::Run(Controller& ctrl, const ControllerInfo& info,
                          SampleSink& sink) {
  auto id_bytes = ctrl.Identify(kIdentifyCnsController, 0);
  if (!id_bytes) return id_bytes.error();
  auto id = DecodeIdentifyController(*id_bytes);
  if (!id) return id.error();
  const std::size_t capacity = static_cast<std::size_t>(id->ErrorLogCapacity());
  auto bytes =
      ctrl.GetLogPage(kErrorLogId, kNsidAll, capacity * kErrorLogEntrySize);
  if (!bytes) return bytes.error();
  std::vector<ErrorLogEntry> entries = DecodeErrorLog(*bytes);
  if (!loaded_) Load(info.serial);
  const std::int64_t now_s = UnixSeconds(now_());

  // The newest entry: the one no other entry comes after. Ring order is
  // the controller's business, so it is not trusted.
  const ErrorLogEntry* newest = nullptr;
  for (const ErrorLogEntry& e : entries) {
    if (newest == nullptr || ErrorCountAfter(e.error_count, newest->error_count))
      newest = &e;
  }
  bool changed = false;
  if (!known_) {
    known_ = true;
    changed = true;
    if (newest != nullptr) {
      highest_ = newest->error_count;
      highest_seen_at_ = now_s;
    }
  } else {
    std::vector<const ErrorLogEntry*> fresh;
    for (const ErrorLogEntry& e : entries) {
      if (ErrorCountAfter(e.error_count, highest_)) fresh.push_back(&e);
    }
    std::sort(fresh.begin(), fresh.end(), [&](auto* a, auto* b) {
      return a->error_count - highest_ < b->error_count - highest_;
    });
    for (const ErrorLogEntry* e : fresh) {
      const std::string sct(StatusCodeTypeName(e->sct));
      const std::string status(StatusCodeName(e->sct, e->sc));
      ++counts_[{sct, status}];
      log_("drive serial=" + info.serial + ": error log entry " +
           std::to_string(e->error_count) + ": queue " +
           std::to_string(e->sqid) + " command " + std::to_string(e->cid) +
           " status " + Hex(e->sct, 1) + "/" + Hex(e->sc, 2) + " (" + sct +
           " " + status + (e->dnr ? ", do not retry" : "") + ") LBA " +
           std::to_string(e->lba) + " nsid " + std::to_string(e->nsid));
    }
    if (!fresh.empty()) {
      const std::uint64_t gap = fresh.back()->error_count - highest_;
      if (gap > fresh.size()) missed_ += gap - fresh.size();
      highest_ = fresh.back()->error_count;
      highest_seen_at_ = now_s;
      changed = true;
    }
  }
  if (changed) Save(info.serial);

  const Labels serial{{"serial", info.serial}};
  sink.Add(kMissed, serial, static_cast<double>(missed_));
  sink.Add(kNewestCount, serial,
           newest != nullptr ? static_cast<double>(newest->error_count) : 0);
  if (newest != nullptr && highest_seen_at_ != 0) {
    sink.Add(kNewestSeen, serial, static_cast<double>(highest_seen_at_));
  }
  for (const auto& [key, n] : counts_) {
    sink.Add(kEntries,
             {{"serial", info.serial}, {"sct", key.first}, {"status", key.second}},
             static_cast<double>(n));
  }
  return Ok{};
}

}  // namespace drivewatch
