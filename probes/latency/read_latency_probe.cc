// SPDX-License-Identifier: Apache-2.0
// The read latency probe's reads: the target opened and opened again,
// reads paced on the drive's turns through the reactor, and each
// outcome counted (its metrics: read_latency_metrics.cc).
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
#include "probes/latency/read_latency_probe_detail.h"

namespace drivewatch {
namespace {

using Clock = std::chrono::steady_clock;
using read_latency_detail::kBounds;

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

}  // namespace

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
    // rates_ is made once, in the constructor: its entries stay where they are.
    rate_state_ = p_.rates_.at(rate).get();
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
  RateState* rate_state_ = nullptr;  // the pacer's rate's
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
  if (rate_state_ != nullptr) p_.Record(*rate_state_, outcome);
  if (p_.load_) p_.load_->ReadIssued();
  if (burst_ && burst_left_ > 0) --burst_left_;
  if (outcome.kind == ReadOutcome::Kind::kError && TargetGone(outcome.errnum)) {
    log::Warn("read latency: " + reader_.io()->path() + ": " + ErrorName(outcome.errnum) +
              "; reopening the target");
    Close(outcome.completed);
    return;
  }
  const TimePoint now = outcome.completed;  // read once per reap, for every read reaped
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
    rate_state_->skipped += skipped;
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

void ReadLatencyProbe::Record(RateState& rs, const ReadOutcome& outcome) {
  std::lock_guard lock(mu_);
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

}  // namespace drivewatch
