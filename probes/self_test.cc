// SPDX-License-Identifier: Apache-2.0
// Every metric the self-test probe emits is defined here.
#include "probes/self_test.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <utility>

#include "config/util/log.h"
#include "config/util/text.h"
#include "probes/drive/byte_order.h"
#include "probes/drive/identify.h"

namespace drivewatch {
namespace {

using detail::LoadLe;

constexpr MetricDesc kInProgress{
    "drivewatch_self_test_in_progress",
    "1 while a device self-test of this type runs on the drive (log page 06h "
    "current operation), else 0. type=short|extended|vendor_specific.",
    MetricType::kGauge};
constexpr MetricDesc kCompletion{
    "drivewatch_self_test_completion_ratio",
    "Completion of the running device self-test, 0 to 1 (log page 06h). "
    "Present only while a test runs.",
    MetricType::kGauge};
constexpr MetricDesc kLastResult{
    "drivewatch_self_test_last_result",
    "Always 1; the newest result of each self-test type in the drive's log, "
    "as result=passed|aborted_by_command|aborted_by_reset|"
    "aborted_namespace_removed|aborted_by_format|fatal_error|"
    "failed_unknown_segment|failed_segment|aborted_unknown|"
    "aborted_by_sanitize|reserved.",
    MetricType::kGauge};
constexpr MetricDesc kLastPowerOnHours{
    "drivewatch_self_test_last_power_on_seconds",
    "Power-on time of the drive when the newest self-test of this type "
    "completed or aborted, in seconds (the log's whole power-on hours x "
    "3600).",
    MetricType::kGauge};
constexpr MetricDesc kLastSeen{
    "drivewatch_self_test_last_seen_timestamp_seconds",
    "Unix time drivewatch first saw the newest self-test result of this type "
    "(the log carries no wall time; results already in the log when "
    "drivewatch first saw the drive get that first time).",
    MetricType::kGauge};
constexpr MetricDesc kFailures{
    "drivewatch_self_test_failures_total",
    "Self-test results with a failure (fatal_error, failed_unknown_segment, "
    "failed_segment) that appeared in the log since drivewatch first saw "
    "the drive; kept across restarts in the state directory.",
    MetricType::kCounter};
constexpr MetricDesc kStarted{
    "drivewatch_self_test_started_total",
    "Self-tests drivewatch started on its schedule since it first saw the "
    "drive; kept across restarts.",
    MetricType::kCounter};
constexpr MetricDesc kFailingLba{
    "drivewatch_self_test_failing_lba",
    "First failing LBA of the newest self-test of this type, when the drive "
    "reports one (FLBA valid); see nsid.",
    MetricType::kGauge};
constexpr MetricDesc kFailingSegment{
    "drivewatch_self_test_failing_segment",
    "Segment number of the first failure in the newest self-test of this "
    "type, when its result is failed_segment.",
    MetricType::kGauge};

const MetricDesc* const kAllMetrics[] = {
    &kInProgress,      &kCompletion, &kLastResult, &kLastPowerOnHours,
    &kLastSeen,        &kFailures,   &kStarted,    &kFailingLba,
    &kFailingSegment,  &FeatureSupportedMetric(),
};

constexpr std::uint8_t kTypeCodes[] = {kSelfTestShort, kSelfTestExtended,
                                       kSelfTestVendor};
constexpr std::size_t kResultsOffset = 4;
constexpr std::size_t kResultSize = 28;
constexpr std::size_t kResultCount = 20;
constexpr std::uint8_t kResultUnused = 0xf;

std::int64_t UnixSeconds(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch())
      .count();
}

using util::Hex;

}  // namespace

std::string SelfTestResult::Identity() const {
  return Hex(power_on_hours) + ":" + Hex(code) + ":" + Hex(result) + ":" +
         Hex(segment) + ":" + Hex(valid) + ":" + Hex(nsid) + ":" +
         Hex(failing_lba) + ":" + Hex(sct) + ":" + Hex(sc);
}

Expected<SelfTestLog> DecodeSelfTestLog(std::span<const std::uint8_t> b) {
  if (b.size() < kSelfTestLogSize) {
    return Error{EBADMSG, -1,
                 "self-test log: " + std::to_string(b.size()) +
                     " bytes (expected " + std::to_string(kSelfTestLogSize) +
                     ")"};
  }
  SelfTestLog log;
  log.current_operation = b[0] & 0xf;
  log.completion_percent = std::min<std::uint8_t>(b[1] & 0x7f, 100);
  for (std::size_t i = 0; i < kResultCount; ++i) {
    const std::size_t o = kResultsOffset + i * kResultSize;
    SelfTestResult r;
    r.result = b[o] & 0xf;
    if (r.result == kResultUnused) continue;
    r.code = b[o] >> 4;
    r.segment = b[o + 1];
    r.valid = b[o + 2];
    r.power_on_hours = LoadLe<std::uint64_t>(b, o + 4);
    r.nsid = LoadLe<std::uint32_t>(b, o + 12);
    r.failing_lba = LoadLe<std::uint64_t>(b, o + 16);
    r.sct = b[o + 24] & 0x7;
    r.sc = b[o + 25];
    log.results.push_back(r);
  }
  return log;
}

std::string_view SelfTestTypeName(std::uint8_t code) {
  switch (code) {
    case kSelfTestShort: return "short";
    case kSelfTestExtended: return "extended";
    case kSelfTestVendor: return "vendor_specific";
    default: return "other";
  }
}

std::string_view SelfTestResultName(std::uint8_t result) {
  // NVMe 2.0 Figure 211, Device Self-test Status bits 3:0.
  switch (result) {
    case 0x0: return "passed";
    case 0x1: return "aborted_by_command";
    case 0x2: return "aborted_by_reset";
    case 0x3: return "aborted_namespace_removed";
    case 0x4: return "aborted_by_format";
    case 0x5: return "fatal_error";
    case 0x6: return "failed_unknown_segment";
    case 0x7: return "failed_segment";
    case 0x8: return "aborted_unknown";
    case 0x9: return "aborted_by_sanitize";
    default: return "reserved";
  }
}

bool SelfTestFailed(std::uint8_t result) {
  return result == 0x5 || result == 0x6 || result == 0x7;
}

SelfTestProbe::SelfTestProbe(WallNowFn now, FeatureSupport::LogFn log)
    : now_(std::move(now)), support_(log), log_(std::move(log)) {
  if (!now_) now_ = [] { return std::chrono::system_clock::now(); };
  if (!log_) log_ = [](std::string_view line) { log::Info(line); };
}

std::span<const MetricDesc* const> SelfTestProbe::Metrics() {
  return kAllMetrics;
}

void SelfTestProbe::Configure(const SelfTestSettings& settings,
                              std::shared_ptr<StateStore> state,
                              const DriveBusyBoard* busy) {
  std::lock_guard lock(mu_);
  settings_ = settings;
  if (state) state_ = std::move(state);
  busy_ = busy;
}

SelfTestProbe::TypeState& SelfTestProbe::Type(std::uint8_t code) {
  switch (code) {
    case kSelfTestShort: return types_[0];
    case kSelfTestExtended: return types_[1];
    default: return types_[2];
  }
}

void SelfTestProbe::LoadState(const std::string& serial) {
  loaded_ = true;
  std::shared_ptr<StateStore> store;
  {
    std::lock_guard lock(mu_);
    if (!state_) state_ = std::make_shared<MemoryStateStore>();
    store = state_;
  }
  auto text = store->Load("self-test-" + serial);
  if (!text) {
    if (text.error().errnum != ENOENT) {
      log::Warn("self-test state of drive serial=" + serial + ": " +
                text.error().message +
                "; taking the results in the log now as already counted");
    }
    return;
  }
  for (const auto& [key, value] : ParseStateLines(*text)) {
    const std::size_t space = value.find(' ');
    if (space == std::string::npos) continue;
    const std::string first = value.substr(0, space);
    const std::string rest = value.substr(space + 1);
    try {
      if (key == "entry") {
        seen_.emplace_back(first, std::stoll(rest));
        continue;
      }
      std::uint8_t code = first == "short" ? kSelfTestShort
                          : first == "extended" ? kSelfTestExtended
                                                : kSelfTestVendor;
      if (key == "failures") Type(code).failures = std::stoull(rest);
      if (key == "started") Type(code).started = std::stoull(rest);
      if (key == "attempted") Type(code).attempted = std::stoll(rest);
    } catch (const std::exception&) {
      // A hand-edited number; the key keeps its default.
    }
  }
  known_ = true;
}

void SelfTestProbe::SaveState(const std::string& serial) {
  std::string out;
  for (const auto& [identity, at] : seen_) {
    out += "entry " + identity + " " + std::to_string(at) + "\n";
  }
  for (std::uint8_t code : kTypeCodes) {
    const TypeState& t = Type(code);
    const std::string type(SelfTestTypeName(code));
    out += "failures " + type + " " + std::to_string(t.failures) + "\n";
    out += "started " + type + " " + std::to_string(t.started) + "\n";
    out += "attempted " + type + " " + std::to_string(t.attempted) + "\n";
  }
  std::shared_ptr<StateStore> store;
  {
    std::lock_guard lock(mu_);
    store = state_;
  }
  Status s = store->Save("self-test-" + serial, out);
  if (!s && !save_failing_) {
    log::Warn("cannot save the self-test state of drive serial=" + serial +
              ": " + s.error().message +
              "; results may be counted again after a restart");
  }
  if (s && save_failing_) {
    log::Info("saved the self-test state of drive serial=" + serial + " again");
  }
  save_failing_ = !s;
}

namespace {

// How many results at the front of the log are new. The current log,
// newest first, lines up with what was seen before after `fresh` new
// entries were pushed in front. The log keeps the newest kResultCount
// results, so the remembered list must fit behind the new ones exactly,
// or be cut off by that limit.
std::size_t CountFresh(const std::vector<std::string>& ids,
                       const std::vector<std::pair<std::string, std::int64_t>>& seen) {
  std::size_t fresh = ids.empty() ? 0 : ids.size();
  for (std::size_t k = 0; k <= ids.size(); ++k) {
    const std::size_t overlap = std::min(seen.size(), ids.size() - k);
    const bool fits = k + seen.size() == ids.size() ||
                      (ids.size() == kResultCount && k + seen.size() > kResultCount);
    bool match = fits;
    for (std::size_t i = 0; i < overlap && match; ++i) {
      match = ids[k + i] == seen[i].first;
    }
    if (match) {
      fresh = k;
      break;
    }
  }
  return fresh;
}

// The log line that announces a new result.
std::string ResultLine(const std::string& serial, const SelfTestResult& r) {
  std::string line = "drive serial=" + serial + ": " + std::string(SelfTestTypeName(r.code)) +
                     " self-test " + std::string(SelfTestResultName(r.result)) + " at " +
                     std::to_string(r.power_on_hours) + " power-on hours";
  if (r.result == 0x7) line += ", segment " + std::to_string(r.segment);
  if (r.NsidValid()) line += ", nsid " + std::to_string(r.nsid);
  if (r.LbaValid()) line += ", failing LBA " + std::to_string(r.failing_lba);
  return line;
}

// A sample labelled with the drive's serial, then `extra`.
void AddSample(SampleSink& sink, const MetricDesc& d, const std::string& serial, double v,
               Labels extra) {
  Labels labels{{"serial", serial}};
  for (auto& l : extra) labels.push_back(std::move(l));
  sink.Add(d, std::move(labels), v);
}

}  // namespace

bool SelfTestProbe::TakeResults(const SelfTestLog& log, const std::string& serial,
                                std::int64_t now_s) {
  std::vector<std::string> ids;
  for (const SelfTestResult& r : log.results) ids.push_back(r.Identity());
  // Before any memory of the drive, everything in the log is history.
  const bool first_sight = !known_;
  const std::size_t fresh = first_sight ? 0 : CountFresh(ids, seen_);
  std::vector<std::pair<std::string, std::int64_t>> seen;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    std::int64_t at = now_s;
    if (i >= fresh && !first_sight) {
      for (const auto& [identity, when] : seen_) {
        if (identity == ids[i]) {
          at = when;
          break;
        }
      }
    }
    seen.emplace_back(ids[i], at);
  }
  // Oldest first, so the log reads in order.
  for (std::size_t i = fresh; i-- > 0;) {
    const SelfTestResult& r = log.results[i];
    const bool failed = SelfTestFailed(r.result);
    if (failed) ++Type(r.code).failures;
    const std::string line = ResultLine(serial, r);
    if (failed) {
      log::Warn(line);
    } else {
      log_(line);
    }
  }
  const bool changed = first_sight || fresh > 0 || seen.size() != seen_.size();
  seen_ = std::move(seen);
  known_ = true;
  return changed;
}

void SelfTestProbe::ExportLog(const SelfTestLog& log, const std::string& serial,
                              SampleSink& sink) {
  for (std::uint8_t code : kTypeCodes) {
    const std::string type(SelfTestTypeName(code));
    AddSample(sink, kInProgress, serial, log.current_operation == code ? 1 : 0,
              {{"type", type}});
    AddSample(sink, kFailures, serial, static_cast<double>(Type(code).failures),
              {{"type", type}});
    for (std::size_t i = 0; i < log.results.size(); ++i) {
      const SelfTestResult& r = log.results[i];
      if (r.code != code) continue;
      AddSample(sink, kLastResult, serial, 1,
                {{"type", type}, {"result", std::string(SelfTestResultName(r.result))}});
      AddSample(sink, kLastPowerOnHours, serial, static_cast<double>(r.power_on_hours) * 3600,
                {{"type", type}});
      AddSample(sink, kLastSeen, serial, static_cast<double>(seen_[i].second),
                {{"type", type}});
      if (r.LbaValid()) {
        AddSample(sink, kFailingLba, serial, static_cast<double>(r.failing_lba),
                  {{"type", type}, {"nsid", r.NsidValid() ? std::to_string(r.nsid) : "unknown"}});
      }
      if (r.result == 0x7) {
        AddSample(sink, kFailingSegment, serial, r.segment, {{"type", type}});
      }
      break;
    }
  }
  if (log.current_operation != 0) {
    sink.Add(kCompletion, Labels{{"serial", serial}}, log.completion_percent / 100.0);
  } else {
    started_running_ = false;
  }
}

bool SelfTestProbe::StartDueTest(Controller& ctrl, const std::string& serial,
                                 const SelfTestLog& log,
                                 std::chrono::system_clock::time_point now) {
  SelfTestSettings settings;
  const DriveBusyBoard* busy = nullptr;
  {
    std::lock_guard lock(mu_);
    settings = settings_;
    busy = busy_;
  }
  bool changed = false;
  // Extended first, since it covers what short tests.
  for (std::uint8_t code : {kSelfTestExtended, kSelfTestShort}) {
    const config::Schedule& schedule =
        code == kSelfTestExtended ? settings.extended_test : settings.short_test;
    const auto slot = config::LatestSlot(schedule, now);
    if (!slot) continue;
    const std::int64_t slot_s = UnixSeconds(*slot);
    TypeState& t = Type(code);
    if (slot_s <= t.attempted || now - *slot > kSelfTestCatchUp) continue;
    const std::string type(SelfTestTypeName(code));
    if (log.current_operation != 0) {
      // The running test ends first; extended then short at the same slot
      // is pointless, so a slot that finds a test running is given up on
      // only when its catch-up window ends.
      continue;
    }
    const std::string why = busy != nullptr ? busy->Busy(serial) : "";
    if (!why.empty()) {
      if (busy_logged_ != why) {
        log_("drive serial=" + serial + ": scheduled " + type +
             " self-test waits: the drive is busy (" + why + ")");
        busy_logged_ = why;
      }
      continue;
    }
    busy_logged_.clear();
    t.attempted = slot_s;
    changed = true;
    Status s = ctrl.DeviceSelfTest(code, kNsidAll);
    if (!s) {
      log::Warn("drive serial=" + serial + ": cannot start the scheduled " + type +
                " self-test: " + s.error().message);
      continue;
    }
    ++t.started;
    started_running_ = true;
    log_("drive serial=" + serial + ": started the scheduled " + type + " self-test (" +
         config::FormatSchedule(schedule) + ")");
    // One slot handled per run: a test is now running.
    if (code == kSelfTestExtended) Type(kSelfTestShort).attempted = slot_s;
    break;
  }
  return changed;
}

Status SelfTestProbe::Run(Controller& ctrl, const ControllerInfo& info,
                          SampleSink& sink) {
  auto id_bytes = ctrl.Identify(kIdentifyCnsController, 0);
  if (!id_bytes) return id_bytes.error();
  auto id = DecodeIdentifyController(*id_bytes);
  if (!id) return id.error();
  constexpr std::string_view kFeature = "self_test";
  constexpr std::string_view kDescription = "device self-test (opcode 14h)";
  if ((id->oacs & kOacsSelfTest) == 0) {
    support_.Report(sink, info.serial, kFeature, kDescription, false,
                    "Identify Controller OACS bit 4 is clear");
    return Ok{};
  }
  auto bytes = ctrl.GetLogPage(kSelfTestLogId, kNsidAll, kSelfTestLogSize);
  if (!bytes) {
    if (!bytes.error().Unsupported()) return bytes.error();
    support_.Report(sink, info.serial, kFeature, kDescription, false,
                    bytes.error().message);
    return Ok{};
  }
  support_.Report(sink, info.serial, kFeature, kDescription, true, "");
  auto log = DecodeSelfTestLog(*bytes);
  if (!log) return OnDevice(info, log.error());
  const auto now = now_();
  if (!loaded_) LoadState(info.serial);
  bool changed = TakeResults(*log, info.serial, UnixSeconds(now));
  ExportLog(*log, info.serial, sink);
  // The schedule: a due test starts once nothing else has the drive.
  if (StartDueTest(ctrl, info.serial, *log, now)) changed = true;
  for (std::uint8_t code : {kSelfTestShort, kSelfTestExtended}) {
    AddSample(sink, kStarted, info.serial, static_cast<double>(Type(code).started),
              {{"type", std::string(SelfTestTypeName(code))}});
  }
  if (changed) SaveState(info.serial);
  return Ok{};
}

void SelfTestProbe::Stop(Controller& ctrl, const ControllerInfo& info) {
  bool abort = false;
  {
    std::lock_guard lock(mu_);
    abort = settings_.abort_on_shutdown;
  }
  if (!abort || !started_running_) return;
  Status s = ctrl.DeviceSelfTest(kSelfTestAbort, kNsidAll);
  if (s) {
    log_("drive serial=" + info.serial +
         ": aborted the running self-test drivewatch started "
         "(abort_on_shutdown)");
  } else {
    log::Warn("drive serial=" + info.serial +
              ": cannot abort the running self-test: " + s.error().message);
  }
  started_running_ = false;
}

}  // namespace drivewatch
