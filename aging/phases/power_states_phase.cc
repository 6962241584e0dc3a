// SPDX-License-Identifier: Apache-2.0
// power-states: every power state the drive lists (Identify Controller
// NPSS and its power state descriptors), operational and non-operational,
// entered in turn with Set Features 02h while APST (feature 0Ch) is off:
// its power over `dwell`, from the best source (meter, the drive's SMART
// Interval Power Measurement, the PSD estimate), confirmed with Get
// Features 02h; then its exit latency, one timed 4 KiB read, `exit_samples`
// times, each after entering the state again and waiting `settle`. Then,
// with the drive's own power settings back, its power at idle and at 10
// IOPS, as the power draw probe measures them (probes/power_draw_probe.h).
//
// The APST table and the power state found at the start are put back when
// the phase ends, whatever the end (completed, aborted, SIGTERM); they are
// in the checkpoint too, so recovery puts them back after a crash
// (RestoreDriveSettings). A state whose Set Features 02h fails is recorded
// as unsupported and the phase goes on. Nothing is written to the drive's
// media: Set Features with SV=0 changes only the controller's current
// settings, which a controller reset also undoes.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stop_token>
#include <thread>
#include <vector>

#include "aging/phases/phase.h"
#include "config/util/log.h"
#include "probes/drive/features.h"
#include "probes/drive/identify.h"
#include "probes/drive/smart_log.h"
#include "probes/latency/pacing.h"
#include "probes/power_draw_probe.h"
#include "probes/power_estimate.h"

namespace drivewatch::aging {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::uint32_t kReadSize = 4096;

std::string Ps(int state) { return "ps" + std::to_string(state); }

// What the phase changes and puts back.
struct Saved {
  std::string serial;  // Identify SN: recovery checks it is the same drive
  int power_state = 0;
  bool has_apst = false;
  bool apst_enabled = false;
  Bytes apst_table;  // kApstTableSize bytes, as Get Features 0Ch gave them
};

Json ToJson(const Saved& s) {
  Json j = Json::object();
  j["kind"] = "power-states";
  j["serial"] = s.serial;
  j["power_state"] = std::uint64_t(s.power_state);
  if (s.has_apst) {
    Json apst = Json::object();
    apst["enabled"] = s.apst_enabled;
    Json table = Json::array();
    for (std::uint8_t b : s.apst_table) table.push_back(std::uint64_t{b});
    apst["table"] = table;
    j["apst"] = apst;
  }
  return j;
}

Expected<Saved> FromJson(const Json& j) {
  const auto bad = [](const std::string& what) {
    return Error{EBADMSG, -1,
                 "damaged checkpoint: restore " + what +
                     " (expected the serial, power_state 0 to 31 and optionally the "
                     "256-byte APST table the power-states phase saved)"};
  };
  Saved s;
  const Json* serial = Find(j, "serial");
  const Json* ps = Find(j, "power_state");
  if (serial == nullptr || !serial->is_string() || AsString(*serial).empty()) {
    return bad("has no serial");
  }
  if (ps == nullptr || !ps->is_number() || AsDouble(*ps, -1) < 0 ||
      AsDouble(*ps, -1) > 31 || AsDouble(*ps, -1) != static_cast<int>(AsDouble(*ps, -1))) {
    return bad("has no valid power_state");
  }
  s.serial = AsString(*serial);
  s.power_state = static_cast<int>(AsDouble(*ps));
  if (const Json* apst = Find(j, "apst"); apst && !apst->is_null()) {
    const Json* enabled = Find(*apst, "enabled");
    const Json* table = Find(*apst, "table");
    if (enabled == nullptr || !enabled->is_boolean() || table == nullptr ||
        !table->is_array() || Items(*table).size() != kApstTableSize) {
      return bad("has an APST entry without enabled and 256 table bytes");
    }
    for (const Json& b : Items(*table)) {
      const double v = AsDouble(b, -1);
      if (!b.is_number() || v < 0 || v > 255 || v != static_cast<int>(v)) {
        return bad("has an APST table byte out of 0..255");
      }
      s.apst_table.push_back(static_cast<std::uint8_t>(v));
    }
    s.has_apst = true;
    s.apst_enabled = AsBool(*enabled);
  }
  return s;
}

// The power state first (with APST still off, nothing moves it), then the
// APST table with its enable as it was.
// A drive already in its saved state is not sent Set Features 02h: one
// that refuses it (QEMU's, "Feature Not Changeable") was never moved.
Expected<std::string> PutBack(Controller& ctrl, const Saved& s) {
  std::string errors;
  auto now = ctrl.GetFeature(kFeaturePowerManagement, 0, 0);
  const bool in_place = now && DecodePowerManagement(now->result).power_state == s.power_state;
  if (!in_place) {
    if (auto r = ctrl.SetFeature(kFeaturePowerManagement, std::uint32_t(s.power_state)); !r) {
      errors += "power state " + std::to_string(s.power_state) + ": " + r.error().message;
    }
  }
  if (s.has_apst) {
    if (auto r = ctrl.SetFeatureWithData(kFeatureAutonomousPowerStateTransition,
                                         s.apst_enabled ? 1u : 0u, s.apst_table);
        !r) {
      errors += std::string(errors.empty() ? "" : "; ") + "APST table: " + r.error().message;
    }
  }
  if (!errors.empty()) return Error{EIO, -1, errors};
  return std::string(in_place ? "power state " + std::to_string(s.power_state) + " was in place"
                               : "restored power state " + std::to_string(s.power_state)) +
         (s.has_apst ? std::string(" and the APST table (APST ") +
                           (s.apst_enabled ? "enabled" : "disabled") + ")"
                     : std::string());
}

// Puts the drive's settings back once, when told or on destruction.
class Restorer {
 public:
  Restorer(Controller& ctrl, Saved saved, std::string phase)
      : ctrl_(ctrl), saved_(std::move(saved)), phase_(std::move(phase)) {}
  ~Restorer() { static_cast<void>(Restore()); }
  Status Restore() {
    if (done_) return Ok{};
    done_ = true;
    auto r = PutBack(ctrl_, saved_);
    if (!r) {
      log::Error("phase " + phase_ + ": cannot restore the drive's power settings: " +
                 r.error().message + " (a controller reset restores them)");
      return r.error();
    }
    log::Info("phase " + phase_ + ": " + *r);
    return Ok{};
  }

 private:
  Controller& ctrl_;
  Saved saved_;
  std::string phase_;
  bool done_ = false;
};

// Samples power once a second for `duration`, as the power draw probe
// does, into one PowerWindow: from `from` to `to` of the phase's progress.
// Runs Idle() on the calling thread unless `busy` is set: then it only
// samples, while the caller's workload runs elsewhere.
Expected<std::optional<PowerWindow::Estimate>> MeasurePower(
    PhaseContext& ctx, Controller& ctrl, const IdentifyController& id,
    const std::optional<PowerMeterSpec>& meter, std::chrono::milliseconds duration,
    std::string_view step, double from, double to, std::stop_token busy = {},
    bool sample_only = false) {
  PowerWindow window;
  std::string meter_error;
  const auto sample = [&]() -> Status {
    auto smart = ReadSmartLog(ctrl);
    if (!smart) return smart.error();
    auto s = SampleDrivePower(ctrl, id, *smart, Clock::now());
    if (!s) return s.error();
    if (meter) {
      if (auto w = ReadPowerMeter(*meter)) {
        s->meter_watts = *w;
      } else if (meter_error.empty()) {
        meter_error = w.error().message;
      }
    }
    window.Add(*s);
    return Ok{};
  };
  const auto start = Clock::now();
  const auto end = start + duration;
  if (Status s = sample(); !s) return s.error();
  for (auto next = start + std::chrono::seconds{1};; next += std::chrono::seconds{1}) {
    const auto until = std::min(next, end);
    const double f0 = std::chrono::duration<double>(Clock::now() - start) / duration;
    const double f1 = std::chrono::duration<double>(until - start) / duration;
    if (sample_only) {
      if (!SleepUntil(until, busy)) break;
    } else if (!ctx.Idle(std::max(Clock::duration{0}, until - Clock::now()), step,
                         from + (to - from) * f0, from + (to - from) * f1)) {
      break;
    }
    if (Status s = sample(); !s) return s.error();
    if (until >= end) break;
  }
  if (!meter_error.empty()) {
    log::Warn("phase " + ctx.phase().name + ": " + std::string(step) + ": power meter failed: " +
              meter_error + "; power falls back to the drive's reading or the PSD estimate");
  }
  return window.Average(Clock::now());
}

// Results key <measure>_power_<source>_watts: the source in the measure,
// as the probes' `source` label says it (docs/metrics.md).
void ReportPower(PhaseReport& report, const std::string& measure,
                 const std::optional<PowerWindow::Estimate>& e, Json* entry) {
  if (!e) return;
  const std::string source = PowerSourceName(e->source);
  report.results[measure + "_power_" + source + "_watts"] = e->watts;
  if (entry == nullptr) return;
  (*entry)["power_watts"] = e->watts;
  (*entry)["power_source"] = source;
  (*entry)["power_samples"] = std::uint64_t(e->samples);
}

double Quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const std::size_t i = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

}  // namespace

Expected<std::chrono::nanoseconds> PhaseContext::TimedRead(std::uint64_t offset,
                                                           std::uint32_t size) {
  void* buffer = nullptr;
  if (posix_memalign(&buffer, 4096, size) != 0) {
    return Error{ENOMEM, -1, "timed read: no memory for a buffer"};
  }
  std::unique_ptr<void, decltype(&std::free)> owner(buffer, &std::free);
  const auto start = Clock::now();
  const ssize_t n = ::pread(fd(), buffer, size, static_cast<off_t>(offset));
  const auto took = Clock::now() - start;
  if (n != static_cast<ssize_t>(size)) {
    return Error{n < 0 ? errno : EIO, -1,
                 target().name + ": read of " + std::to_string(size) + " bytes at " +
                     std::to_string(offset) + ": " +
                     (n < 0 ? std::strerror(errno) : "short read of " + std::to_string(n))};
  }
  return std::chrono::duration_cast<std::chrono::nanoseconds>(took);
}

Expected<std::string> RestoreDriveSettings(Controller& ctrl, const Json& restore) {
  auto saved = FromJson(restore);
  if (!saved) return saved.error();
  auto bytes = ctrl.Identify(kIdentifyCnsController, 0);
  if (!bytes) return bytes.error();
  auto id = DecodeIdentifyController(*bytes);
  if (!id) return id.error();
  if (id->serial != saved->serial) {
    return Error{ENODEV, -1,
                 "the device shows serial \"" + id->serial + "\", not \"" + saved->serial +
                     "\" (its kernel name moved; a reboot reset the drive's settings anyway)"};
  }
  return PutBack(ctrl, *saved);
}

namespace {

// The settings the phase changes, as the drive has them now: its power
// state (Get Features 02h) and, when it has APST, the APST table (0Ch).
Expected<Saved> ReadSettings(Controller& ctrl, const IdentifyController& id,
                             const std::string& target) {
  const int states = id.PowerStateCount();
  Saved saved;
  saved.serial = id.serial;
  auto pm = ctrl.GetFeature(kFeaturePowerManagement, 0, 0);
  if (!pm) return pm.error();
  saved.power_state = DecodePowerManagement(pm->result).power_state;
  if (saved.power_state >= states) {
    return Error{EBADMSG, -1,
                 "target " + target + ": Get Features 02h reports power state " +
                     std::to_string(saved.power_state) + ", but Identify Controller lists " +
                     std::to_string(states) + " (NPSS " + std::to_string(id.npss) +
                     "; expected a state below NPSS + 1)"};
  }
  if ((id.apsta & 1) != 0) {
    auto apst = ctrl.GetFeature(kFeatureAutonomousPowerStateTransition, 0, kApstTableSize);
    if (!apst && !apst.error().Unsupported()) return apst.error();
    if (apst) {
      if (auto table = DecodeApstTable(apst->result, apst->data); !table) {
        return Error{EBADMSG, -1, "target " + target + ": " + table.error().message};
      } else {
        saved.has_apst = true;
        saved.apst_enabled = table->enabled;
        saved.apst_table.assign(apst->data.begin(), apst->data.begin() + kApstTableSize);
      }
    }
  }
  return saved;
}

// What the drive and the run have that every state's measurement uses.
struct Measuring {
  const config::PowerStatesParams& phase;
  PhaseContext& ctx;
  Controller& ctrl;
  const IdentifyController& id;
  const std::optional<PowerMeterSpec>& meter;
  std::uint64_t blocks;  // kReadSize blocks of the target, for the timed reads
};

enum class StateOutcome { kMeasured, kUnsupported, kStopped };

// Power state `s`, in [from, from + per_state) of the progress: its
// declared figures, then (entered with Set Features 02h) its power over
// the dwell, and its exit latency: one timed read after entering it again
// and waiting `settle`, exit_samples times. Into `entry` and the report;
// a state the drive refuses is kUnsupported, with entry["error"].
Expected<StateOutcome> MeasureState(const Measuring& m, int s, double from, double per_state,
                                    Json& entry, PhaseReport& report) {
  PhaseContext& ctx = m.ctx;
  const PowerStateDescriptor& psd = m.id.power_states[static_cast<std::size_t>(s)];
  entry["state"] = std::uint64_t(s);
  entry["operational"] = !psd.NonOperational();
  if (auto mp = psd.MaxPowerWatts()) {
    entry["max_power_watts"] = *mp;
    report.results[Ps(s) + "_max_power_declared_watts"] = *mp;
  }
  entry["entry_latency_seconds"] = psd.entry_latency_us * 1e-6;
  entry["exit_latency_seconds"] = psd.exit_latency_us * 1e-6;
  report.results[Ps(s) + "_entry_latency_declared_seconds"] = psd.entry_latency_us * 1e-6;
  report.results[Ps(s) + "_exit_latency_declared_seconds"] = psd.exit_latency_us * 1e-6;
  auto set = m.ctrl.SetFeature(kFeaturePowerManagement, std::uint32_t(s));
  if (!set) {
    entry["supported"] = false;
    entry["error"] = set.error().message;
    return StateOutcome::kUnsupported;
  }
  entry["supported"] = true;
  auto power = MeasurePower(ctx, m.ctrl, m.id, m.meter, m.phase.dwell, Ps(s) + " power", from,
                            from + per_state / 2);
  if (!power) return power.error();
  if (ctx.stopped()) return StateOutcome::kStopped;
  ReportPower(report, Ps(s), *power, &entry);
  auto now = m.ctrl.GetFeature(kFeaturePowerManagement, 0, 0);
  if (!now) return now.error();
  const int in = DecodePowerManagement(now->result).power_state;
  entry["confirmed"] = in == s;
  entry["reported_state"] = std::uint64_t(in);
  if (in != s) {
    log::Warn("phase " + ctx.phase().name + ": set power state " + std::to_string(s) +
              ", but Get Features 02h reports " + std::to_string(in) + " after the dwell");
  }

  std::vector<double> exits;
  for (std::uint32_t i = 0; i < m.phase.exit_samples && !ctx.stopped(); ++i) {
    if (auto again = m.ctrl.SetFeature(kFeaturePowerManagement, std::uint32_t(s)); !again) {
      return Error{again.error().errnum, again.error().nvme_status,
                   "set power state " + std::to_string(s) + " again: " + again.error().message};
    }
    const double f = from + per_state / 2 + per_state / 2 * i / m.phase.exit_samples;
    if (!ctx.Idle(m.phase.settle, Ps(s) + " exit latency", f, f)) break;
    const std::uint64_t block = (std::uint64_t(s) * 104'729 + i * 7'919) % m.blocks;
    auto took = ctx.TimedRead(block * kReadSize, kReadSize);
    if (!took) return took.error();
    exits.push_back(std::chrono::duration<double>(*took).count());
  }
  if (!exits.empty()) {
    const double p50 = Quantile(exits, 0.5);
    const double max = *std::max_element(exits.begin(), exits.end());
    report.results[Ps(s) + "_exit_latency_p50_seconds"] = p50;
    report.results[Ps(s) + "_exit_latency_max_seconds"] = max;
    entry["exit_latency_p50_seconds"] = p50;
    entry["exit_latency_max_seconds"] = max;
    entry["exit_samples"] = std::uint64_t(exits.size());
  }
  return StateOutcome::kMeasured;
}

// With the drive's own settings back: its power at idle, then under 4 KiB
// random reads at the power draw probe's 10 IOPS, sampled on a thread while
// the workload runs here. The last fifth of the progress.
Status MeasureIdleAndLoad(const Measuring& m, PhaseReport& report) {
  PhaseContext& ctx = m.ctx;
  auto idle = MeasurePower(ctx, m.ctrl, m.id, m.meter, m.phase.dwell, "idle power", 0.8, 0.9);
  if (!idle) return idle.error();
  if (ctx.stopped()) return Ok{};
  ReportPower(report, "idle", *idle, nullptr);

  WorkloadSpec spec;
  spec.access = Access::kRandom;
  spec.read_percent = 100;
  spec.write_percent = 0;
  spec.block_size = kReadSize;
  spec.queue_depth = 1;
  spec.rate_iops = PowerDrawProbe::kLoadRate;
  spec.max_time = m.phase.dwell;
  Expected<std::optional<PowerWindow::Estimate>> loaded = std::optional<PowerWindow::Estimate>{};
  std::stop_source sampling;
  {
    std::jthread sampler([&] {
      loaded = MeasurePower(ctx, m.ctrl, m.id, m.meter, m.phase.dwell, "", 0, 0,
                            sampling.get_token(), /*sample_only=*/true);
    });
    auto r = ctx.Run(spec, "10 IOPS power", 0.9, 1.0);
    sampling.request_stop();
    sampler.join();
    if (!r) return r.error();
    report.results["at_10_iops_iops"] = r->total.iops();
  }
  if (!loaded) return loaded.error();
  ReportPower(report, "at_10_iops", *loaded, nullptr);
  return Ok{};
}

}  // namespace

Status RunKind(const config::PowerStatesParams& phase, PhaseContext& ctx, PhaseReport& report) {
  const std::string& name = ctx.phase().name;
  Controller* ctrl = ctx.controller();
  if (ctrl == nullptr) {
    return Error{EINVAL, -1,
                 "target " + ctx.target().name +
                     " is not an NVMe namespace: power-states needs admin commands "
                     "(Identify, Set Features 02h and 0Ch) to the drive's controller"};
  }
  auto id_bytes = ctrl->Identify(kIdentifyCnsController, 0);
  if (!id_bytes) return id_bytes.error();
  auto id = DecodeIdentifyController(*id_bytes);
  if (!id) return id.error();
  const Json facts = ctx.DriveFacts();
  const std::string serial = Find(facts, "serial") ? AsString(*Find(facts, "serial")) : "";
  if (ctx.nvme() && id->serial != serial) {
    return Error{EPERM, -1,
                 "target " + ctx.target().name + ": the controller reports serial \"" +
                     id->serial + "\", not \"" + serial + "\" (aging.targets.serial)"};
  }
  const int states = id->PowerStateCount();
  auto saved = ReadSettings(*ctrl, *id, ctx.target().name);
  if (!saved) return saved.error();
  // On record before anything changes: a crash from here on is restored.
  report.restore = ToJson(*saved);
  ctx.Checkpoint(report);
  if (ctx.stopped()) return Ok{};
  Restorer restorer(*ctrl, *saved, name);
  if (saved->has_apst) {
    // APSTE off, the table kept: the drive stays where it is put.
    if (auto r = ctrl->SetFeatureWithData(kFeatureAutonomousPowerStateTransition, 0,
                                          saved->apst_table);
        !r) {
      return Error{r.error().errnum, r.error().nvme_status,
                   "cannot disable APST (Set Features 0Ch): " + r.error().message};
    }
  }

  const std::optional<PowerMeterSpec> meter = ctx.power_meter();
  const Measuring m{phase, ctx, *ctrl, *id, meter,
                    std::max<std::uint64_t>(1, ctx.capacity() / kReadSize)};
  Json entries = Json::array();
  std::vector<std::string> unsupported;
  std::string first_failure;
  // Progress: the states take 80%, idle and 10 IOPS the rest.
  const double per_state = 0.8 / states;
  for (int s = 0; s < states && !ctx.stopped(); ++s) {
    Json entry = Json::object();
    auto outcome = MeasureState(m, s, per_state * s, per_state, entry, report);
    if (!outcome) return outcome.error();
    if (*outcome == StateOutcome::kStopped) break;
    entries.push_back(entry);
    if (*outcome == StateOutcome::kUnsupported) {
      unsupported.push_back(Ps(s));
      if (first_failure.empty()) first_failure = AsString(*Find(entry, "error"));
      continue;
    }
    report.series["power_states"] = entries;
    ctx.Checkpoint(report);
  }
  report.series["power_states"] = entries;
  report.results["power_states_supported_ratio"] =
      static_cast<double>(states - static_cast<int>(unsupported.size())) / states;
  if (!unsupported.empty()) {
    std::string list;
    for (const auto& u : unsupported) list += (list.empty() ? "" : ", ") + u;
    log::Warn("phase " + name + ": power states " + list +
              " unsupported (Set Features 02h failed: " + first_failure + ")");
  }
  if (ctx.stopped()) return Ok{};

  // The drive's own settings back for the idle and 10-IOPS windows.
  if (Status r = restorer.Restore(); !r) return r.error();
  report.restore = Json();
  ctx.Checkpoint(report);
  return MeasureIdleAndLoad(m, report);
}

}  // namespace drivewatch::aging
