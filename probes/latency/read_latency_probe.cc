// SPDX-License-Identifier: Apache-2.0
// Every metric of the read latency probe is defined here. Series carry the
// target's identity (serial and nsid for a namespace, target for a
// configured device or file); the rate-dependent ones add rate (IOPS).
#include "probes/latency/read_latency_probe.h"

#include <string.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <optional>
#include <random>

#include "config/util/log.h"
#include "probes/drive/io_target.h"
#include "probes/drive/namespace_identity.h"

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

// The open target plus where to read next. Opened on the reactor's opener
// thread, used on the reactor thread, never on both at once (the reactor
// does not ask a reader whose Open() is running).
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

// What the reactor asks the probe and tells it: the pacing of reads on
// the drive's turns (drive_pacing.h), opening and reopening the target, and
// each read's outcome. Every call but Open() is on the reactor thread.
class ReadLatencyProbe::Driver final : public PacedReader {
 public:
  explicit Driver(ReadLatencyProbe& probe)
      : p_(probe),
        reader_(probe.target_, probe.settings_.block_size, probe.settings_.min_free_ratio) {}

  // Burst mode: `reads` reads at the highest rate, the target alone (not
  // the drive's turns), then done. Before the reactor has the driver.
  void SetBurst(std::size_t reads) {
    burst_ = true;
    burst_left_ = reads;
  }

  Plan Next(TimePoint now) override;
  void Open() override;
  void Completed(const ReadOutcome& outcome) override;

  // The reactor let go of the driver: close, leave the drive's pacing, and
  // stop the load. The caller's thread (Detach).
  void Stopped() {
    Close(Clock::now());
    open_done_ = false;
  }

 private:
  static Plan Wait(TimePoint at) {
    Plan plan;
    plan.kind = Plan::Kind::kWait;
    plan.at = at;
    return plan;
  }
  static Plan Kind(Plan::Kind kind) {
    Plan plan;
    plan.kind = kind;
    return plan;
  }
  // The open's result, taken on the reactor thread.
  void AfterOpen(TimePoint now);
  // The pacer for the drive's turn (or the burst), from `now`.
  void StartPacing(std::uint32_t rate, TimePoint turn_start, const DrivePacing::Share& share,
                   TimePoint now) {
    rate_ = rate;
    turn_start_ = turn_start;
    share_ = share;
    const TimePoint first = p_.settings_.arrivals == ArrivalProcess::kFixed
                                ? FirstShareArrival(turn_start, rate, share, now)
                                : now;
    pacer_.emplace(static_cast<double>(rate) / static_cast<double>(share.count),
                   p_.settings_.arrivals, first, (std::uint64_t{seed_()} << 32) | seed_());
    if (p_.load_) p_.load_->LoadStarted(ShareRate(rate, share), now);
    loading_ = true;
  }
  void StopLoad(TimePoint now) {
    if (loading_ && p_.load_) p_.load_->LoadStopped(now);
    loading_ = false;
  }
  void Close(TimePoint now) {
    reader_.Close();
    if (joined_) p_.pacing_->Leave(&p_);
    joined_ = false;
    pacer_.reset();
    StopLoad(now);
  }
  Plan Finish() {
    StopLoad(Clock::now());
    {
      std::lock_guard lock(p_.mu_);
      p_.burst_done_ = true;
    }
    p_.burst_cv_.notify_all();
    return Kind(Plan::Kind::kDone);
  }

  ReadLatencyProbe& p_;
  Reader reader_;
  std::random_device seed_;
  // Set by Open() on the opener thread; the reactor hands it over.
  bool open_done_ = false;
  Status open_status_ = Ok{};
  // Retrying a target that would not open.
  bool failing_ = false;
  Clock::duration backoff_ = std::chrono::seconds(1);
  TimePoint retry_at_{};
  bool joined_ = false;  // in the drive's pacing
  // The current turn's schedule.
  std::optional<Pacer> pacer_;
  std::uint32_t rate_ = 0;
  TimePoint turn_start_{};
  DrivePacing::Share share_{};
  bool loading_ = false;  // the load observer was told of a rate
  TimePoint next_check_{};
  bool burst_ = false;
  std::size_t burst_left_ = 0;
};

void ReadLatencyProbe::Driver::Open() {
  open_status_ = p_.OpenTarget(reader_);
  open_done_ = true;
}

void ReadLatencyProbe::Driver::AfterOpen(TimePoint now) {
  open_done_ = false;
  std::string device;
  {
    std::lock_guard lock(p_.mu_);  // MoveBlockDevice may change it
    device = p_.device_path_;
  }
  if (!open_status_) {
    if (!failing_) {
      log::Warn("read latency: cannot read " + device + ": " +
                open_status_.error().message + " (logged once until it works; retrying)");
    }
    failing_ = true;
    retry_at_ = now + backoff_;
    backoff_ = std::min<Clock::duration>(backoff_ * 2, std::chrono::minutes(1));
    if (burst_) {
      {
        std::lock_guard lock(p_.mu_);
        p_.burst_failed_ = true;
      }
      burst_left_ = 0;
    }
    return;
  }
  if (failing_) log::Info("read latency: " + device + " readable again");
  failing_ = false;
  backoff_ = std::chrono::seconds(1);
  if (!burst_) {
    p_.pacing_->Join(&p_);
    joined_ = true;
  }
  next_check_ = now + std::chrono::seconds(1);
}

PacedReader::Plan ReadLatencyProbe::Driver::Next(TimePoint now) {
  if (open_done_) AfterOpen(now);
  if (burst_ && burst_left_ == 0) return Finish();
  bool paused, moved;
  {
    std::lock_guard lock(p_.mu_);
    paused = p_.paused_ > 0;
    moved = p_.moved_;
  }
  if (!reader_.open()) {
    StopLoad(now);
    // A new path from discovery (MoveBlockDevice) is tried at once.
    if (!moved && now < retry_at_) return Wait(retry_at_);
    return Kind(Plan::Kind::kOpen);
  }
  if (moved) {  // the kernel renamed the device: open the new path
    Close(now);
    return Kind(Plan::Kind::kOpen);
  }
  if (paused) {  // the drive is busy with something else: a fresh schedule after
    StopLoad(now);
    pacer_.reset();
    return Wait(TimePoint::max());
  }
  if (burst_) {
    if (!pacer_) {
      StartPacing(*std::max_element(p_.settings_.rates.begin(), p_.settings_.rates.end()),
                  now, DrivePacing::Share{}, now);
    }
  } else {
    // The turn comes from the drive's clock (TurnAt), so a reopen in the
    // middle of a turn goes on with the same turn, and every namespace of
    // the drive is in it.
    const Turn turn = TurnAt(p_.pacing_->epoch(), p_.settings_.rates.size(),
                             p_.settings_.rate_period, p_.settings_.idle_period, now);
    if (turn.idle) {
      StopLoad(now);
      pacer_.reset();
      return Wait(turn.end);
    }
    // This target's share of the drive's arrivals: every count-th of the
    // fixed schedule, or a Poisson process of rate / count; dealt again
    // when a namespace of the drive opens or closes.
    const DrivePacing::Share share = p_.pacing_->ShareOf(&p_);
    if (!pacer_ || turn.start != turn_start_ || share.generation != share_.generation) {
      StartPacing(p_.settings_.rates[turn.rate_index], turn.start, share, now);
    }
    if (pacer_->next() >= turn.end) {  // this turn's share is read
      StopLoad(now);
      return Wait(turn.end);
    }
  }
  if (pacer_->next() > now) return Wait(pacer_->next());
  Plan plan;
  plan.kind = Plan::Kind::kRead;
  plan.at = pacer_->next();
  plan.fd = reader_.io()->fd();
  plan.offset = reader_.NextOffset();
  plan.length = p_.settings_.block_size;
  plan.timeout = std::chrono::duration_cast<std::chrono::nanoseconds>(p_.settings_.timeout);
  return plan;
}

void ReadLatencyProbe::Driver::Completed(const ReadOutcome& outcome) {
  p_.Record(rate_, outcome);
  if (p_.load_) p_.load_->ReadIssued();
  if (burst_ && burst_left_ > 0) --burst_left_;
  if (outcome.kind == ReadOutcome::Kind::kError && TargetGone(outcome.errnum)) {
    log::Warn("read latency: " + reader_.io()->path() + ": " + ErrorName(outcome.errnum) +
              "; reopening the target");
    Close(outcome.completed);
    return;
  }
  const TimePoint now = Clock::now();
  if (now >= next_check_) {  // at most once a second, and only while reading
    next_check_ = now + std::chrono::seconds(1);
    if (Status there = reader_.io()->CheckStillThere(); !there) {
      log::Warn("read latency: " + there.error().message + "; reopening");
      {
        std::lock_guard lock(p_.mu_);
        ++p_.errors_[ErrorName(there.error().errnum)];
        ++p_.stats_.errors;
      }
      Close(now);
      return;
    }
  }
  // Arrivals the read made late by more than an interval are skipped, not
  // issued back to back (pacing.h).
  if (!pacer_) return;
  if (const std::uint64_t skipped = pacer_->Advance(now)) {
    std::lock_guard lock(p_.mu_);
    if (auto it = p_.rates_.find(rate_); it != p_.rates_.end()) it->second->skipped += skipped;
    p_.stats_.skipped_arrivals += skipped;
  }
}

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
  driver_ = std::make_unique<Driver>(*this);
}

ReadLatencyProbe::~ReadLatencyProbe() { Detach(); }

std::span<const MetricDesc* const> ReadLatencyProbe::Metrics() {
  return kAllMetrics;
}

void ReadLatencyProbe::WakeReactor() {
  std::lock_guard lock(attach_mu_);
  if (reactor_ != nullptr) reactor_->Wake(driver_.get());
}

void ReadLatencyProbe::MoveBlockDevice(const std::string& path) {
  {
    std::lock_guard lock(mu_);
    if (target_.kind == ReadTarget::Kind::kFile || path == device_path_) return;
    device_path_ = path;
    moved_ = true;
  }
  WakeReactor();
}

void ReadLatencyProbe::SetLoadObserver(std::unique_ptr<LoadObserver> observer) {
  load_ = std::move(observer);
}

void ReadLatencyProbe::SetDrivePacing(std::shared_ptr<DrivePacing> pacing) {
  pacing_ = std::move(pacing);
}

void ReadLatencyProbe::Pause() {
  {
    std::lock_guard lock(mu_);
    ++paused_;
  }
  WakeReactor();  // returns once no read decided before the pause is unsent
}

void ReadLatencyProbe::Resume() {
  {
    std::lock_guard lock(mu_);
    if (paused_ > 0) --paused_;
  }
  WakeReactor();
}

void ReadLatencyProbe::Attach(ReadReactor& reactor) {
  if (!pacing_) pacing_ = std::make_shared<DrivePacing>(start_);
  std::lock_guard lock(attach_mu_);
  if (reactor_ != nullptr) return;
  reactor_ = &reactor;
  reactor.Add(driver_.get(), settings_.block_size);
}

void ReadLatencyProbe::Detach() {
  std::lock_guard lock(attach_mu_);
  if (reactor_ == nullptr) return;
  reactor_->Remove(driver_.get());
  reactor_ = nullptr;
  // target_up keeps its last value: collect --once publishes after the
  // burst, and the daemon removes a detached target's series.
  driver_->Stopped();
}

void ReadLatencyProbe::Run(std::stop_token stop) {
  ReadReactor reactor;
  Attach(reactor);
  SleepUntil(TimePoint::max(), stop);
  Detach();
}

void ReadLatencyProbe::StartBurst(ReadReactor& reactor, std::size_t reads) {
  {
    std::lock_guard lock(mu_);
    burst_done_ = false;
    burst_failed_ = false;
  }
  driver_->SetBurst(reads);
  Attach(reactor);
}

bool ReadLatencyProbe::FinishBurst(const std::stop_token& stop) {
  bool failed;
  {
    std::unique_lock lock(mu_);
    burst_cv_.wait(lock, stop, [this] { return burst_done_; });
    failed = burst_failed_ || !burst_done_;
  }
  Detach();
  return !failed;
}

bool ReadLatencyProbe::RunBurst(std::size_t reads, std::stop_token stop) {
  ReadReactor reactor;
  StartBurst(reactor, reads);
  return FinishBurst(stop);
}

void ReadLatencyProbe::Record(std::uint32_t rate, const ReadOutcome& outcome) {
  std::lock_guard lock(mu_);
  RateState& rs = *rates_.at(rate);  // the pacer's rate, one of the configured
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
  }
  // Only a completion ends an idle gap; after a timeout the gap is unknown.
  have_completion_ = outcome.kind != ReadOutcome::Kind::kTimeout;
  last_completion_ = outcome.completed;
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
