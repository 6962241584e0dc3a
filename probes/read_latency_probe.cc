// SPDX-License-Identifier: Apache-2.0
// Every metric of the read latency probe is defined here. Series carry the
// target's identity (serial and nsid for a namespace, target for a
// configured device or file); the rate-dependent ones add rate (IOPS).
#include "probes/read_latency_probe.h"

#include <string.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <random>

#include "probes/io_target.h"
#include "probes/log.h"
#include "probes/namespace_identity.h"

namespace drivewatch {
namespace {

using Clock = std::chrono::steady_clock;
constexpr MetricType kGauge = MetricType::kGauge;
constexpr MetricType kCounter = MetricType::kCounter;

constexpr MetricDesc kLatency{
    "drivewatch_read_latency_seconds",
    "Latency of the probe's O_DIRECT random reads since drivewatch started "
    "reading the target, by rate (IOPS): submission to completion, each "
    "read timestamped on its own with CLOCK_MONOTONIC. Timed-out reads are "
    "counted only in the +Inf bucket.",
    MetricType::kHistogram};
constexpr MetricDesc kWindowQuantile{
    "drivewatch_read_latency_window_seconds",
    "Read latency percentile (50, 99, 99.9) over the sliding window, by "
    "rate; from a log-linear histogram with at most 0.78% error. +Inf when "
    "the percentile falls among timed-out reads. Absent while the window has "
    "no reads; check drivewatch_read_latency_window_enough_samples.",
    kGauge};
constexpr MetricDesc kWindowMax{
    "drivewatch_read_latency_window_max_seconds",
    "Slowest read in the sliding window, by rate (exact); +Inf if a read "
    "timed out.",
    kGauge};
constexpr MetricDesc kWindowSamples{
    "drivewatch_read_latency_window_samples",
    "Reads (completed or timed out) the window's percentiles rest on, by "
    "rate.",
    kGauge};
constexpr MetricDesc kWindowEnough{
    "drivewatch_read_latency_window_enough_samples",
    "1 when the window holds enough reads for the percentile to mean "
    "something: at least 10 reads beyond it, i.e. samples * (1 - p/100) >= "
    "10 (20 for p50, 1000 for p99, 10000 for p99.9: about 17 minutes at 10 "
    "IOPS); else 0.",
    kGauge};
constexpr MetricDesc kIdleGapQuantile{
    "drivewatch_read_latency_idle_gap_seconds",
    "Read latency percentile (50, 99, 99.9) over the sliding window, all "
    "rates together, by the idle gap before the read (time since the "
    "previous read on the target completed). Separates power-state exit "
    "from media latency; see docs/read-latency.md.",
    kGauge};
constexpr MetricDesc kIdleGapSamples{
    "drivewatch_read_latency_idle_gap_samples",
    "Reads in the sliding window after an idle gap of this class.", kGauge};
constexpr MetricDesc kErrors{
    "drivewatch_read_errors_total",
    "Probe reads that failed, by error: the errno name (EIO, ENODEV, ...), "
    "short_read for a read past the end of a shrunk target, or ENOENT for a "
    "test file that was removed.",
    kCounter};
constexpr MetricDesc kTimeouts{
    "drivewatch_read_timeouts_total",
    "Probe reads without a completion within the timeout.", kCounter};
constexpr MetricDesc kSkipped{
    "drivewatch_read_latency_skipped_arrivals_total",
    "Scheduled reads not issued because the previous read at queue depth 1 "
    "ran more than one interval late, by rate.",
    kCounter};
constexpr MetricDesc kPaused{
    "drivewatch_read_latency_paused",
    "1 while the probe is paused on the target (a heavy phase is using the "
    "drive), else 0.",
    kGauge};
constexpr MetricDesc kTargetUp{
    "drivewatch_read_latency_target_up",
    "1 when the target is open for reading, 0 when it could not be opened "
    "(the error is logged).",
    kGauge};
constexpr MetricDesc kIdentityMismatches{
    "drivewatch_read_latency_identity_mismatches_total",
    "Times the namespace's block device, when opened, belonged to another "
    "drive or namespace (sysfs serial and nsid of the opened device); "
    "nothing was read from it and the probe retries with what the next "
    "discovery finds.",
    kCounter};
constexpr MetricDesc kTargetInfo{
    "drivewatch_read_latency_target_info",
    "The target's kind (namespace, block_device, file), path and read block "
    "size in bytes; always 1.",
    kGauge};

constexpr const MetricDesc* kAllMetrics[] = {
    &kLatency,        &kWindowQuantile, &kWindowMax, &kWindowSamples,
    &kWindowEnough,   &kIdleGapQuantile, &kIdleGapSamples, &kErrors,
    &kTimeouts,       &kSkipped,        &kPaused,    &kTargetUp,
    &kTargetInfo,     &kIdentityMismatches,
};

// Exported bucket bounds: 1-2-5 steps from 10 us to 10 s, so alerts can
// name round thresholds (le="0.005").
constexpr double kBounds[] = {10e-6, 20e-6, 50e-6, 100e-6, 200e-6, 500e-6,
                              1e-3,  2e-3,  5e-3,  10e-3,  20e-3,  50e-3,
                              100e-3, 200e-3, 500e-3, 1,    2,     5,
                              10};
constexpr std::size_t kNumBounds = std::size(kBounds);

constexpr double kQuantiles[] = {0.5, 0.99, 0.999};
// The `percentile` label ("quantile" is reserved for summaries).
constexpr const char* kPercentileNames[] = {"50", "99", "99.9"};

// Errors after which the target is closed and opened again.
bool TargetGone(int errnum) {
  return errnum == 0 /* short read */ || errnum == ENODEV || errnum == ENXIO ||
         errnum == EBADF || errnum == ESTALE || errnum == ENOENT;
}

std::string ErrorName(int errnum) {
  if (errnum == 0) return "short_read";
  if (const char* name = strerrorname_np(errnum)) return name;
  return "errno_" + std::to_string(errnum);
}

Labels With(const Labels& base, Labels extra) {
  Labels out = base;
  for (auto& l : extra) out.push_back(std::move(l));
  return out;
}

const char* KindName(ReadTarget::Kind kind) {
  switch (kind) {
    case ReadTarget::Kind::kNamespace: return "namespace";
    case ReadTarget::Kind::kBlockDevice: return "block_device";
    case ReadTarget::Kind::kFile: return "file";
  }
  return "";
}

}  // namespace

struct ReadLatencyProbe::RateState {
  RateState(const std::vector<std::chrono::milliseconds>& windows, TimePoint start)
      : windows(windows, start) {}
  LatencyHistogram lifetime;
  std::array<std::uint64_t, kNumBounds> exported{};  // non-cumulative
  std::uint64_t exported_count = 0;  // including timeouts (+Inf)
  double exported_sum = 0;
  LatencyWindows windows;
  std::uint64_t skipped = 0;
};

// The open target plus where to read next; lives on the Run() thread.
class ReadLatencyProbe::Reader {
 public:
  Reader(const ReadTarget& target, std::uint32_t block_size, double min_free)
      : target_(target), block_size_(block_size), min_free_(min_free),
        rng_(std::random_device{}()) {}

  bool open() const { return io_ != nullptr; }
  IoTarget* io() { return io_.get(); }
  void Close() { io_.reset(); }

  // `device` replaces target_.path for block devices (MoveBlockDevice).
  Status Open(const std::string& device) {
    std::string path = target_.kind == ReadTarget::Kind::kFile ? target_.path : device;
    Expected<std::unique_ptr<IoTarget>> opened = Error{};
    if (target_.kind == ReadTarget::Kind::kFile) {
      auto file = PrepareTestFile(target_.path, target_.file_name,
                                  target_.file_size, min_free_);
      if (!file) return file.error();
      path = *file;
      opened = IoTarget::OpenFile(path, block_size_);
    } else {
      opened = IoTarget::OpenBlockDevice(device, block_size_);
    }
    if (!opened) return opened.error();
    std::unique_ptr<IoTarget> io = std::move(*opened);
    if (target_.kind == ReadTarget::Kind::kNamespace) {
      Status same = CheckNamespaceIdentity(target_.sysfs_root, io->device_number(),
                                           target_.serial, target_.nsid);
      if (!same) {
        Error e = same.error();
        e.message = path + ": " + e.message;
        return e;  // EXDEV: another drive's namespace
      }
    }
    const std::uint64_t size = io->size();
    const std::uint64_t begin = target_.offset;
    const std::uint64_t end =
        target_.length == 0 ? size : std::min(size, target_.offset + target_.length);
    if (begin % block_size_ != 0 || end < begin + block_size_) {
      return Error{EINVAL, -1,
                   path + ": read range [" + std::to_string(begin) + ", " +
                       std::to_string(end) + ") holds no whole aligned " +
                       std::to_string(block_size_) + "-byte block (size " +
                       std::to_string(size) + ")"};
    }
    first_block_ = begin / block_size_;
    blocks_ = (end - begin) / block_size_;
    io_ = std::move(io);
    return Ok{};
  }

  std::uint64_t NextOffset() {
    std::uniform_int_distribution<std::uint64_t> pick(0, blocks_ - 1);
    return (first_block_ + pick(rng_)) * block_size_;
  }

 private:
  const ReadTarget& target_;
  const std::uint32_t block_size_;
  const double min_free_;
  std::unique_ptr<IoTarget> io_;
  std::mt19937_64 rng_;
  std::uint64_t first_block_ = 0;
  std::uint64_t blocks_ = 0;
};

ReadLatencyProbe::ReadLatencyProbe(ReadTarget target, ReadLatencySettings settings)
    : target_(std::move(target)), settings_(std::move(settings)), start_(Clock::now()) {
  for (std::uint32_t rate : settings_.rates) {
    rates_.emplace(rate, std::make_unique<RateState>(settings_.windows, start_));
  }
  for (auto& w : idle_) {
    w = std::make_unique<LatencyWindows>(settings_.windows, start_);
  }
  device_path_ = target_.kind == ReadTarget::Kind::kFile
                     ? target_.path + "/" + target_.file_name
                     : target_.path;
}

ReadLatencyProbe::~ReadLatencyProbe() = default;

std::span<const MetricDesc* const> ReadLatencyProbe::Metrics() {
  return kAllMetrics;
}

void ReadLatencyProbe::MoveBlockDevice(const std::string& path) {
  std::lock_guard lock(mu_);
  if (target_.kind == ReadTarget::Kind::kFile || path == device_path_) return;
  device_path_ = path;
  moved_ = true;
}

void ReadLatencyProbe::SetLoadObserver(std::unique_ptr<LoadObserver> observer) {
  load_ = std::move(observer);
}

void ReadLatencyProbe::SetDrivePacing(std::shared_ptr<DrivePacing> pacing) {
  pacing_ = std::move(pacing);
}

void ReadLatencyProbe::Pause() {
  std::lock_guard lock(mu_);
  ++paused_;
}

void ReadLatencyProbe::Resume() {
  {
    std::lock_guard lock(mu_);
    if (paused_ > 0) --paused_;
  }
  resumed_.notify_all();
}

bool ReadLatencyProbe::WaitWhilePaused(const std::stop_token& stop) {
  std::unique_lock lock(mu_);
  return resumed_.wait(lock, stop, [this] { return paused_ == 0; });
}

void ReadLatencyProbe::Record(std::uint32_t rate, const ReadOutcome& outcome) {
  std::lock_guard lock(mu_);
  RateState& rs = *rates_.at(rate);
  if (stats_.first_submit == TimePoint{}) stats_.first_submit = outcome.submitted;
  stats_.last_submit = outcome.submitted;
  const auto now = outcome.completed;
  switch (outcome.kind) {
    case ReadOutcome::Kind::kOk: {
      const std::uint64_t ns = outcome.latency_ns();
      const double seconds = static_cast<double>(ns) * 1e-9;
      rs.lifetime.Add(ns);
      rs.windows.Add(ns, now);
      const auto* b = std::lower_bound(std::begin(kBounds), std::end(kBounds), seconds);
      if (b != std::end(kBounds)) ++rs.exported[b - std::begin(kBounds)];
      ++rs.exported_count;
      rs.exported_sum += seconds;
      if (have_completion_) {
        const auto gap = outcome.submitted - last_completion_;
        idle_[static_cast<int>(ClassifyIdleGap(gap))]->Add(ns, now);
      }
      ++stats_.reads;
      break;
    }
    case ReadOutcome::Kind::kTimeout: {
      const std::uint64_t ns = outcome.latency_ns();
      rs.lifetime.AddTimeout(ns);
      rs.windows.AddTimeout(ns, now);
      ++rs.exported_count;  // +Inf only
      rs.exported_sum += static_cast<double>(ns) * 1e-9;
      if (have_completion_) {
        const auto gap = outcome.submitted - last_completion_;
        idle_[static_cast<int>(ClassifyIdleGap(gap))]->AddTimeout(ns, now);
      }
      ++timeouts_;
      ++stats_.timeouts;
      break;
    }
    case ReadOutcome::Kind::kError:
      ++errors_[ErrorName(outcome.errnum)];
      ++stats_.errors;
      break;
    case ReadOutcome::Kind::kStillBusy:
    case ReadOutcome::Kind::kStopped:
      return;
  }
  // Only a completion ends an idle gap; after a timeout the gap is unknown.
  have_completion_ = outcome.kind != ReadOutcome::Kind::kTimeout;
  last_completion_ = outcome.completed;
}

bool ReadLatencyProbe::Paced(Reader& reader, std::uint32_t rate, TimePoint turn_start,
                             TimePoint until, const std::stop_token& stop,
                             std::size_t max_reads, bool shared) {
  using namespace std::chrono_literals;
  const auto timeout = std::chrono::duration_cast<std::chrono::nanoseconds>(settings_.timeout);
  std::random_device seed;
  // This target's share of the drive's arrivals: every count-th of the
  // fixed schedule, or a Poisson process of rate / count (the drive's
  // namespaces together make one of the rate).
  DrivePacing::Share share = shared ? pacing_->ShareOf(this) : DrivePacing::Share{};
  const auto make_pacer = [&](TimePoint now) {
    const TimePoint first = settings_.arrivals == ArrivalProcess::kFixed
                                ? FirstShareArrival(turn_start, rate, share, now)
                                : now;
    return Pacer(static_cast<double>(rate) / static_cast<double>(share.count),
                 settings_.arrivals, first, (std::uint64_t{seed()} << 32) | seed());
  };
  Pacer pacer = make_pacer(Clock::now());
  auto next_check = Clock::now() + 1s;
  std::size_t done = 0;
  // The load observer hears of this rate's turn, its pauses and its end.
  struct LoadTurn {
    LoadObserver* load;
    ~LoadTurn() { if (load) load->LoadStopped(Clock::now()); }
  } turn{load_.get()};
  if (load_) load_->LoadStarted(ShareRate(rate, share), Clock::now());
  while (done < max_reads) {
    bool was_paused;
    {
      std::lock_guard lock(mu_);
      was_paused = paused_ > 0;
    }
    if (was_paused) {
      if (load_) load_->LoadStopped(Clock::now());
      if (!WaitWhilePaused(stop)) return false;
      // The drive was busy with something else: start a fresh schedule.
      pacer = make_pacer(Clock::now());
      if (load_) load_->LoadStarted(ShareRate(rate, share), Clock::now());
      continue;
    }
    if (shared) {  // a namespace of the drive opened or closed: deal again
      if (const auto now_share = pacing_->ShareOf(this); now_share.generation != share.generation) {
        share = now_share;
        pacer = make_pacer(Clock::now());
        if (load_) load_->LoadStarted(ShareRate(rate, share), Clock::now());
      }
    }
    if (pacer.next() >= until) return true;
    if (!SleepUntil(pacer.next(), stop)) return false;
    {
      std::lock_guard lock(mu_);
      if (paused_ > 0) continue;  // paused while we slept
    }
    const ReadOutcome outcome = reader.io()->Read(reader.NextOffset(), timeout, stop);
    if (outcome.kind == ReadOutcome::Kind::kStopped) return false;
    Record(rate, outcome);
    if (load_) load_->ReadIssued();
    ++done;
    if (outcome.kind == ReadOutcome::Kind::kError && TargetGone(outcome.errnum)) {
      log::Warn("read latency: " + reader.io()->path() + ": " +
                ErrorName(outcome.errnum) + "; reopening the target");
      reader.Close();
      return true;
    }
    const auto now = Clock::now();
    if (now >= next_check) {
      next_check = now + 1s;
      bool moved;
      {
        std::lock_guard lock(mu_);
        moved = moved_;
      }
      if (moved) {
        reader.Close();  // Run() opens the new path
        return true;
      }
      if (Status there = reader.io()->CheckStillThere(); !there) {
        log::Warn("read latency: " + there.error().message + "; reopening");
        {
          std::lock_guard lock(mu_);
          ++errors_[ErrorName(there.error().errnum)];
          ++stats_.errors;
        }
        reader.Close();
        return true;
      }
    }
    if (const std::uint64_t skipped = pacer.Advance(now)) {
      std::lock_guard lock(mu_);
      rates_.at(rate)->skipped += skipped;
      stats_.skipped_arrivals += skipped;
    }
  }
  return true;
}

Status ReadLatencyProbe::OpenTarget(Reader& reader) {
  std::string device;
  {
    std::lock_guard lock(mu_);
    device = device_path_;
    moved_ = false;
  }
  Status s = reader.Open(device);
  std::lock_guard lock(mu_);
  up_ = s.ok();
  if (!s && s.error().errnum == EXDEV && target_.kind == ReadTarget::Kind::kNamespace) {
    ++identity_mismatches_;
    ++stats_.identity_mismatches;
  }
  return s;
}

void ReadLatencyProbe::Run(std::stop_token stop) {
  using namespace std::chrono_literals;
  if (!pacing_) pacing_ = std::make_shared<DrivePacing>(start_);
  Reader reader(target_, settings_.block_size, settings_.min_free_ratio);
  struct Member {
    DrivePacing& pacing;
    const void* self;
    ~Member() { pacing.Leave(self); }
  } member{*pacing_, this};
  auto backoff = Clock::duration(1s);
  bool failing = false;
  // The turn comes from the drive's clock (TurnAt), so a reopen in the
  // middle of a turn (a new path from discovery, a target that went away)
  // goes on with the same turn, and every namespace of the drive is in it.
  while (!stop.stop_requested()) {
    if (!reader.open()) {
      Status s = OpenTarget(reader);
      std::string device;
      {
        std::lock_guard lock(mu_);  // MoveBlockDevice may change it
        device = device_path_;
      }
      if (!s) {
        if (!failing) {
          log::Warn("read latency: cannot read " + device + ": " +
                    s.error().message + " (logged once until it works; retrying)");
        }
        failing = true;
        // A new path from discovery (MoveBlockDevice) is tried at once.
        const auto retry_at = Clock::now() + backoff;
        while (Clock::now() < retry_at) {
          if (!SleepUntil(std::min(retry_at, Clock::now() + Clock::duration(1s)), stop)) return;
          std::lock_guard lock(mu_);
          if (moved_) break;
        }
        backoff = std::min<Clock::duration>(backoff * 2, 60s);
        continue;
      }
      if (failing) log::Info("read latency: " + device + " readable again");
      failing = false;
      backoff = 1s;
      pacing_->Join(this);
    }
    const Turn turn = TurnAt(pacing_->epoch(), settings_.rates.size(), settings_.rate_period,
                             settings_.idle_period, Clock::now());
    if (!turn.idle && !Paced(reader, settings_.rates[turn.rate_index], turn.start, turn.end,
                             stop, static_cast<std::size_t>(-1), /*shared=*/true)) {
      return;
    }
    if (!reader.open()) {  // reopen, same turn
      pacing_->Leave(this);
      continue;
    }
    if (!SleepUntil(turn.end, stop)) return;  // the turn's last share, or idle
  }
}

bool ReadLatencyProbe::RunBurst(std::size_t reads, std::stop_token stop) {
  Reader reader(target_, settings_.block_size, settings_.min_free_ratio);
  Status s = OpenTarget(reader);
  if (!s) {
    log::Warn("read latency: cannot read " + device_path_ + ": " + s.error().message);
    return false;
  }
  const std::uint32_t rate =
      *std::max_element(settings_.rates.begin(), settings_.rates.end());
  std::size_t done = 0;
  while (done < reads && !stop.stop_requested() && reader.open()) {
    const auto before = stats();
    if (!Paced(reader, rate, Clock::now(), TimePoint::max(), stop, reads - done,
               /*shared=*/false)) {
      break;
    }
    const auto after = stats();
    done += (after.reads + after.errors + after.timeouts) -
            (before.reads + before.errors + before.timeouts);
  }
  return true;
}

ReadLatencyProbe::Stats ReadLatencyProbe::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

LatencyHistogram ReadLatencyProbe::Lifetime(std::uint32_t rate) const {
  std::lock_guard lock(mu_);
  auto it = rates_.find(rate);
  return it == rates_.end() ? LatencyHistogram() : it->second->lifetime;
}

void ReadLatencyProbe::Emit(SampleSink& sink) const { EmitAt(sink, Clock::now()); }

void ReadLatencyProbe::EmitAt(SampleSink& sink, TimePoint now) const {
  std::lock_guard lock(mu_);
  const Labels& id = target_.labels;
  sink.Add(kTargetInfo,
           With(id, {{"kind", KindName(target_.kind)},
                     {"path", device_path_},
                     {"block_size", std::to_string(settings_.block_size)}}),
           1);
  sink.Add(kTargetUp, id, up_ ? 1 : 0);
  sink.Add(kPaused, id, paused_ > 0 ? 1 : 0);
  sink.Add(kTimeouts, id, static_cast<double>(timeouts_));
  if (target_.kind == ReadTarget::Kind::kNamespace) {
    sink.Add(kIdentityMismatches, id, static_cast<double>(identity_mismatches_));
  }
  for (const auto& [name, n] : errors_) {
    sink.Add(kErrors, With(id, {{"error", name}}), static_cast<double>(n));
  }

  for (const auto& [rate, rs] : rates_) {
    const Labels by_rate = With(id, {{"rate", std::to_string(rate)}});
    auto h = std::make_shared<HistogramValue>();
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < kNumBounds; ++i) {
      cumulative += rs->exported[i];
      h->upper_bounds.push_back(kBounds[i]);
      h->cumulative_counts.push_back(cumulative);
    }
    h->count = rs->exported_count;
    h->sum = rs->exported_sum;
    sink.AddHistogram(kLatency, by_rate, std::move(h));
    sink.Add(kSkipped, by_rate, static_cast<double>(rs->skipped));

    for (std::size_t w = 0; w < settings_.windows.size(); ++w) {
      const Labels by_window = With(by_rate, {{"window", settings_.window_names[w]}});
      const LatencyHistogram window = rs->windows.Window(w, now);
      const double n = static_cast<double>(window.count());
      sink.Add(kWindowSamples, by_window, n);
      for (std::size_t q = 0; q < std::size(kQuantiles); ++q) {
        const Labels by_quantile = With(by_window, {{"percentile", kPercentileNames[q]}});
        sink.Add(kWindowEnough, by_quantile,
                 n * (1 - kQuantiles[q]) >= 10 - 1e-9 ? 1 : 0);
        if (n > 0) sink.Add(kWindowQuantile, by_quantile, window.Quantile(kQuantiles[q]));
      }
      if (n > 0) sink.Add(kWindowMax, by_window, window.MaxSeconds());
    }
  }

  for (std::size_t c = 0; c < kIdleGapClasses; ++c) {
    const Labels by_gap = With(id, {{"idle_gap", IdleGapName(static_cast<IdleGap>(c))}});
    for (std::size_t w = 0; w < settings_.windows.size(); ++w) {
      const LatencyHistogram window = idle_[c]->Window(w, now);
      if (window.count() == 0) continue;  // keeps rare classes from adding series
      const Labels by_window = With(by_gap, {{"window", settings_.window_names[w]}});
      sink.Add(kIdleGapSamples, by_window, static_cast<double>(window.count()));
      for (std::size_t q = 0; q < std::size(kQuantiles); ++q) {
        sink.Add(kIdleGapQuantile, With(by_window, {{"percentile", kPercentileNames[q]}}),
                 window.Quantile(kQuantiles[q]));
      }
    }
  }
}

}  // namespace drivewatch
