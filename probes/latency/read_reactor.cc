// SPDX-License-Identifier: Apache-2.0
#include "probes/latency/read_reactor.h"

#include <sched.h>

#include <liburing.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <string>

#include "config/util/log.h"
#include "config/util/sys.h"
#include "probes/latency/completion_cpus.h"

namespace drivewatch {
namespace {

using Clock = std::chrono::steady_clock;
using util::SysError;

// Submission queue entries: a read per reader, its cancel, the eventfd
// read; more readers than this only means a submit before the queue fills.
constexpr unsigned kRingEntries = 256;
// Registered buffer slots, one per reader. A reader past them reads into
// an unregistered buffer (the kernel then pins its page at each read).
constexpr unsigned kBufferSlots = 1024;
constexpr std::uint32_t kNoSlot = UINT32_MAX;

// user_data: the entry's address and what the request is (an Entry is
// 8-byte aligned, so its two low bits are free). An entry lives until its
// last read lands (a removed one waits in orphans_), so a read's completion
// always finds it; a cancel's completion is never followed back.
enum Tag : std::uint64_t { kRead = 1, kCancel = 2, kWakeRead = 3 };
Tag TagOf(std::uint64_t user_data) { return static_cast<Tag>(user_data & 3); }

__kernel_timespec Relative(Clock::duration d) {
  const auto ns = std::max<std::int64_t>(
      0, std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
  return {ns / 1'000'000'000, ns % 1'000'000'000};
}

struct Counters {
  std::atomic<std::uint64_t> wakeups{0}, submits{0}, reads{0};
};

}  // namespace

std::uint64_t ReadReactor::UserData(const Entry* e, std::uint64_t tag) {
  return reinterpret_cast<std::uintptr_t>(e) | tag;
}

struct ReadReactor::Ring {
  io_uring ring{};
  bool up = false;
  bool fixed_buffers = false;
  bool wake_read_pending = false;
  // The eventfd read's buffer. Heap, so that a read the kernel still holds
  // at exit (it cannot be waited for) writes into memory nobody reuses.
  std::uint64_t* wake_buf = new std::uint64_t(0);
  Counters counters;
};

struct alignas(8) ReadReactor::Entry {
  PacedReader* reader = nullptr;  // nullptr: removed, its read still in flight
  enum class State { kAsk, kWait, kOpening, kReading, kLate, kDone };
  State state = State::kAsk;
  TimePoint at{};             // kWait: ask again then; kReading: its timeout
  TimePoint submitted{};      // kReading
  bool stamped = false;       // kReading: `submitted` is set
  std::chrono::nanoseconds timeout{0};  // kReading; 0: none
  std::uint32_t length = 0;   // kReading
  bool remove_after_open = false;
  std::uint32_t slot = kNoSlot;
  void* buffer = nullptr;     // mmap'd, `bytes` long
  std::uint32_t bytes = 0;
  int placed_fd = -1;         // the fd `completions` is of; -1: none yet
  CompletionCpus completions;
};

ReadReactor::ReadReactor() : ring_(std::make_unique<Ring>()) {
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  opener_ = std::thread([this] { OpenerLoop(); });
  thread_ = std::thread([this] { Loop(); });
}

ReadReactor::~ReadReactor() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    PokeLocked();
  }
  cv_.notify_all();
  opener_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (opener_.joinable()) opener_.join();
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

Status ReadReactor::status() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return setup_done_; });
  return setup_;
}

int ReadReactor::thread_id() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return setup_done_; });
  return tid_;
}

ReadReactor::Stats ReadReactor::stats() const {
  Stats s;
  s.wakeups = ring_->counters.wakeups.load();
  s.submits = ring_->counters.submits.load();
  s.reads = ring_->counters.reads.load();
  return s;
}

void ReadReactor::PostLocked(Request request) {
  requests_in_.push_back(request);
  PokeLocked();
}

void ReadReactor::PokeLocked() {
  ++requests_;
  if (posted_ || wake_fd_ < 0) return;
  posted_ = true;
  const std::uint64_t one = 1;
  // EAGAIN only when the counter is at its maximum: a wake-up is pending.
  [[maybe_unused]] const ssize_t n = ::write(wake_fd_, &one, sizeof one);
}

void ReadReactor::Add(PacedReader* reader, std::uint32_t buffer_bytes) {
  std::lock_guard lock(mu_);
  if (stopping_) return;
  PostLocked({Request::Kind::kAdd, reader, buffer_bytes});
}

void ReadReactor::Remove(PacedReader* reader) {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return setup_done_; });
  if (!setup_.ok() || stopping_) return;
  PostLocked({Request::Kind::kRemove, reader});
  cv_.wait(lock, [&] {
    return stopping_ || std::find(removed_.begin(), removed_.end(), reader) != removed_.end();
  });
  std::erase(removed_, reader);
}

void ReadReactor::Wake(PacedReader* reader) {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return setup_done_; });
  if (!setup_.ok() || stopping_ || ::gettid() == tid_) return;
  PostLocked({Request::Kind::kWake, reader});
  const std::uint64_t mine = requests_;
  cv_.wait(lock, [&] { return stopping_ || taken_ >= mine; });
}

void ReadReactor::OpenerLoop() {
  pthread_setname_np(pthread_self(), "dw-read-open");
  std::unique_lock lock(mu_);
  for (;;) {
    opener_cv_.wait(lock, [this] { return stopping_ || !to_open_.empty(); });
    if (stopping_) return;
    PacedReader* reader = to_open_.front();
    to_open_.pop_front();
    opening_ = reader;
    lock.unlock();
    reader->Open();
    lock.lock();
    opening_ = nullptr;
    PostLocked({Request::Kind::kOpened, reader});
  }
}

std::vector<std::unique_ptr<ReadReactor::Entry>>::iterator ReadReactor::Position(
    PacedReader* reader) {
  return std::find_if(entries_.begin(), entries_.end(),
                      [reader](const auto& e) { return e->reader == reader; });
}

ReadReactor::Entry* ReadReactor::Find(PacedReader* reader) {
  auto it = Position(reader);
  return it == entries_.end() ? nullptr : it->get();
}

std::unique_ptr<ReadReactor::Entry> ReadReactor::Extract(PacedReader* reader) {
  auto it = Position(reader);
  if (it == entries_.end()) return nullptr;
  std::unique_ptr<Entry> e = std::move(*it);
  entries_.erase(it);
  return e;
}

void ReadReactor::Release(std::unique_ptr<Entry> e) {
  if (e->slot != kNoSlot) {
    iovec empty{nullptr, 0};
    io_uring_register_buffers_update_tag(&ring_->ring, e->slot, &empty, nullptr, 1);
    free_slots_.push_back(e->slot);
  }
  if (e->buffer != nullptr) ::munmap(e->buffer, e->bytes);
}

void ReadReactor::StampReads(TimePoint submitted) {
  bool any = false;
  for (auto& e : entries_) {
    if (e->state != Entry::State::kReading || e->stamped) continue;
    e->submitted = submitted;
    e->at = e->timeout.count() > 0
                ? submitted + std::chrono::duration_cast<Clock::duration>(e->timeout)
                : TimePoint::max();
    e->stamped = true;
    any = true;
  }
  if (any) ring_->counters.submits.fetch_add(1, std::memory_order_relaxed);
}

io_uring_sqe* ReadReactor::Sqe() {
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_->ring);
  if (sqe != nullptr) return sqe;
  // The queue is full of this turn's requests: send them now, the reads
  // among them timed from this call.
  StampReads(Clock::now());
  io_uring_submit(&ring_->ring);
  return io_uring_get_sqe(&ring_->ring);
}

void ReadReactor::ArmWakeRead() {
  io_uring_sqe* sqe = Sqe();
  io_uring_prep_read(sqe, wake_fd_, ring_->wake_buf, sizeof *ring_->wake_buf, 0);
  io_uring_sqe_set_data64(sqe, UserData(nullptr, kWakeRead));
  ring_->wake_read_pending = true;
}

bool ReadReactor::TakeRequests() {
  take_ = false;
  std::vector<Request> requests;
  {
    std::lock_guard lock(mu_);
    if (stopping_) return false;
    posted_ = false;
    taken_ = requests_;
    requests.swap(requests_in_);
  }
  cv_.notify_all();  // Wake() callers: their request is taken
  std::vector<PacedReader*> let_go;
  for (const Request& r : requests) {
    Entry* e = Find(r.reader);
    switch (r.kind) {
      case Request::Kind::kAdd:
        if (e == nullptr) AddEntry(r.reader, r.bytes);
        break;
      case Request::Kind::kWake:
        if (e != nullptr && e->state == Entry::State::kWait) e->state = Entry::State::kAsk;
        break;
      case Request::Kind::kOpened:
        if (e == nullptr) break;
        if (e->remove_after_open) {
          Release(Extract(r.reader));
          let_go.push_back(r.reader);
        } else {
          e->state = Entry::State::kAsk;
          e->placed_fd = -1;  // a new open: its fd number may be an old one's
        }
        break;
      case Request::Kind::kRemove:
        RemoveEntry(r.reader, let_go);
        place_ = true;
        break;
    }
  }
  if (!let_go.empty()) {
    {
      std::lock_guard lock(mu_);
      removed_.insert(removed_.end(), let_go.begin(), let_go.end());
    }
    cv_.notify_all();
  }
  return true;
}

void ReadReactor::AddEntry(PacedReader* reader, std::uint32_t bytes) {
  auto e = std::make_unique<Entry>();
  e->reader = reader;
  e->bytes = std::max<std::uint32_t>(bytes, 1);
  void* mem = ::mmap(nullptr, e->bytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  // Without a buffer the reader's reads fail with ENOMEM, and it says so.
  e->buffer = mem == MAP_FAILED ? nullptr : mem;
  if (e->buffer != nullptr && ring_->fixed_buffers && !free_slots_.empty()) {
    iovec iov{e->buffer, e->bytes};
    const std::uint32_t slot = free_slots_.back();
    if (io_uring_register_buffers_update_tag(&ring_->ring, slot, &iov, nullptr, 1) == 1) {
      e->slot = slot;
      free_slots_.pop_back();
    }
  }
  entries_.push_back(std::move(e));
}

void ReadReactor::RemoveEntry(PacedReader* reader, std::vector<PacedReader*>& let_go) {
  Entry* e = Find(reader);
  if (e != nullptr && e->state == Entry::State::kOpening) {
    std::lock_guard lock(mu_);
    if (opening_ == reader) {  // let go when its Open() returns
      e->remove_after_open = true;
      return;
    }
    // Still queued, or its Open() returned and the news is not yet taken:
    // it is not opened now, and the news is dropped.
    std::erase(to_open_, reader);
    std::erase_if(requests_in_, [&](const Request& r) {
      return r.kind == Request::Kind::kOpened && r.reader == reader;
    });
  }
  if (e != nullptr) {
    std::unique_ptr<Entry> gone = Extract(reader);
    if (gone->state == Entry::State::kReading || gone->state == Entry::State::kLate) {
      gone->reader = nullptr;  // its read lands in the buffer it still holds
      orphans_.emplace(gone.get(), std::move(gone));
    } else {
      Release(std::move(gone));
    }
  }
  let_go.push_back(reader);
}

void ReadReactor::Ask(Entry& e, TimePoint now) {
  const PacedReader::Plan plan = e.reader->Next(now);
  switch (plan.kind) {
    case PacedReader::Plan::Kind::kWait:
      e.state = Entry::State::kWait;
      e.at = plan.at;
      return;
    case PacedReader::Plan::Kind::kDone:
      e.state = Entry::State::kDone;
      return;
    case PacedReader::Plan::Kind::kOpen: {
      e.state = Entry::State::kOpening;
      {
        std::lock_guard lock(mu_);
        to_open_.push_back(e.reader);
      }
      opener_cv_.notify_one();
      return;
    }
    case PacedReader::Plan::Kind::kRead:
      break;
  }
  if (e.buffer == nullptr || plan.length > e.bytes) {
    ReadOutcome failed;
    failed.kind = ReadOutcome::Kind::kError;
    failed.errnum = e.buffer == nullptr ? ENOMEM : EINVAL;
    failed.submitted = failed.completed = now;
    e.state = Entry::State::kAsk;
    e.reader->Completed(failed);
    // Asked again at the next turn of the loop; the reader's own schedule
    // (its next arrival) keeps this from spinning.
    return;
  }
  if (plan.fd != e.placed_fd) {
    e.placed_fd = plan.fd;
    e.completions = FindCompletionCpus(plan.fd);
    place_ = true;
  }
  io_uring_sqe* sqe = Sqe();
  if (e.slot != kNoSlot) {
    io_uring_prep_read_fixed(sqe, plan.fd, e.buffer, plan.length, plan.offset,
                             static_cast<int>(e.slot));
  } else {
    io_uring_prep_read(sqe, plan.fd, e.buffer, plan.length, plan.offset);
  }
  io_uring_sqe_set_data64(sqe, UserData(&e, kRead));
  e.state = Entry::State::kReading;
  e.length = plan.length;
  e.timeout = plan.timeout;
  e.stamped = false;
  ring_->counters.reads.fetch_add(1, std::memory_order_relaxed);
}

void ReadReactor::Reap(TimePoint reaped) {
  unsigned head = 0, seen = 0;
  io_uring_cqe* cqe = nullptr;
  io_uring_for_each_cqe(&ring_->ring, head, cqe) {
    ++seen;
    const std::uint64_t data = cqe->user_data;
    const int res = cqe->res;
    switch (TagOf(data)) {
      case kWakeRead:
        ring_->wake_read_pending = false;
        take_ = true;
        break;
      case kCancel:
        break;
      case kRead: {
        Entry* e = reinterpret_cast<Entry*>(data & ~std::uint64_t{3});
        if (e->reader == nullptr) {  // removed while its read was in flight
          auto o = orphans_.find(e);
          Release(std::move(o->second));
          orphans_.erase(o);
          break;
        }
        if (e->state == Entry::State::kReading) {
          ReadOutcome out;
          out.submitted = e->submitted;
          out.completed = reaped;
          if (res < 0) {
            out.kind = ReadOutcome::Kind::kError;
            out.errnum = -res;
          } else if (static_cast<std::uint32_t>(res) != e->length) {
            out.kind = ReadOutcome::Kind::kError;  // short: the target shrank
            out.errnum = 0;
          }
          e->state = Entry::State::kAsk;
          e->reader->Completed(out);
        } else if (e->state == Entry::State::kLate) {
          e->state = Entry::State::kAsk;  // counted as a timeout already
        }
        break;
      }
    }
  }
  io_uring_cq_advance(&ring_->ring, seen);
}

void ReadReactor::TimeOut(TimePoint now) {
  for (auto& e : entries_) {
    if (e->state != Entry::State::kReading || !e->stamped || e->at > now) continue;
    ReadOutcome out;
    out.kind = ReadOutcome::Kind::kTimeout;
    out.submitted = e->submitted;
    out.completed = now;
    e->state = Entry::State::kLate;
    e->reader->Completed(out);
    // Ask for it back; a read the device holds usually cannot be recalled
    // (-EALREADY), so its completion is still waited for.
    io_uring_sqe* sqe = Sqe();
    io_uring_prep_cancel64(sqe, UserData(e.get(), kRead), 0);
    io_uring_sqe_set_data64(sqe, UserData(e.get(), kCancel));
  }
}

void ReadReactor::Place() {
  place_ = false;
  std::vector<const CompletionCpus*> read;
  for (const auto& e : entries_) {
    if (e->placed_fd >= 0) read.push_back(&e->completions);  // else not read yet
  }
  if (read.empty()) return;  // nothing read now: stay until there is
  const ReactorPlace place = PlaceReactor(read, allowed_cpus_);
  if (place.cpus == placed_cpus_ || place.cpus.empty()) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : place.cpus) CPU_SET(c, &set);
  if (::sched_setaffinity(0, sizeof set, &set) != 0) {
    log::Warn(SysError(errno, "read latency: the reactor thread", "sched_setaffinity").message);
  } else {
    log::Info("read latency: the reactor runs on " + place.why);  // elsewhere than before
  }
  placed_cpus_ = place.cpus;  // a failure is not tried again until the targets change
}

void ReadReactor::Loop() {
  pthread_setname_np(pthread_self(), "dw-read-reactor");
  if (!SetUp()) return;
  // Requests are looked at only when the eventfd says there are some (or
  // a stop): a turn without them takes no lock.
  for (;;) {
    if (take_ && !TakeRequests()) break;
    Turn();
  }
  ShutDown();
}

bool ReadReactor::SetUp() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) allowed_cpus_.push_back(c);
    }
  }
  placed_cpus_ = allowed_cpus_;
  const Status setup = InitRing();
  {
    std::lock_guard lock(mu_);
    setup_ = setup;
    setup_done_ = true;
    tid_ = ::gettid();
  }
  cv_.notify_all();
  if (!setup.ok()) {
    log::Error(setup.error().message + "; no read latency target is read");
    if (ring_->up) io_uring_queue_exit(&ring_->ring);
    ring_->up = false;
    delete ring_->wake_buf;  // no read of it was ever armed
    return false;
  }
  return true;
}

Status ReadReactor::InitRing() {
  const int rc = InitSingleIssuerRing(kRingEntries, &ring_->ring);
  if (rc < 0) return SysError(-rc, "read latency: io_uring set-up (io_uring_queue_init)");
  ring_->up = true;
  if (io_uring_register_buffers_sparse(&ring_->ring, kBufferSlots) == 0) {
    ring_->fixed_buffers = true;
    for (std::uint32_t s = kBufferSlots; s-- > 0;) free_slots_.push_back(s);
  }
  if (wake_fd_ < 0) return SysError(EMFILE, "read latency: eventfd");
  return Ok{};
}

void ReadReactor::Turn() {
  if (!ring_->wake_read_pending) ArmWakeRead();
  const TimePoint now = Clock::now();
  for (auto& e : entries_) {
    if (e->state == Entry::State::kAsk ||
        (e->state == Entry::State::kWait && e->at <= now)) {
      Ask(*e, now);
    }
  }
  // A read of a newly opened target: the thread moves before it submits.
  if (place_) Place();
  // Every read prepared this turn goes with the call below; its
  // submission time is taken just before it.
  const TimePoint submitted = Clock::now();
  StampReads(submitted);
  const TimePoint deadline = Deadline();
  io_uring_cqe* cqe = nullptr;
  int rc = 0;
  if (deadline == TimePoint::max()) {
    rc = io_uring_submit_and_wait_timeout(&ring_->ring, &cqe, 1, nullptr, nullptr);
  } else {
    __kernel_timespec ts = Relative(deadline - submitted);
    rc = io_uring_submit_and_wait_timeout(&ring_->ring, &cqe, 1, &ts, nullptr);
  }
  const TimePoint reaped = Clock::now();
  ring_->counters.wakeups.fetch_add(1, std::memory_order_relaxed);
  if (rc < 0 && rc != -ETIME && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) {
    log::Error(SysError(-rc, "read latency: io_uring_enter").message);
  }
  Reap(reaped);
  TimeOut(reaped);
}

ReadReactor::TimePoint ReadReactor::Deadline() const {
  TimePoint deadline = TimePoint::max();
  for (const auto& e : entries_) {
    if (e->state == Entry::State::kWait || e->state == Entry::State::kReading) {
      deadline = std::min(deadline, e->at);
    }
  }
  return deadline;
}

void ReadReactor::ShutDown() {
  // The eventfd read completes at once (the destructor wrote the
  // counter); wait for it, briefly, so the kernel keeps nothing of ours.
  const TimePoint give_up = Clock::now() + std::chrono::seconds(1);
  while (ring_->wake_read_pending && Clock::now() < give_up) {
    io_uring_cqe* cqe = nullptr;
    __kernel_timespec ts = Relative(std::chrono::milliseconds(100));
    io_uring_submit_and_wait_timeout(&ring_->ring, &cqe, 1, &ts, nullptr);
    Reap(Clock::now());
  }
  io_uring_queue_exit(&ring_->ring);
  ring_->up = false;
  if (!ring_->wake_read_pending) delete ring_->wake_buf;  // else the kernel may still write it
  // Buffers of reads still in flight stay mapped: the device may still
  // write into them. The others are unmapped.
  for (auto& e : entries_) {
    if (e->state != Entry::State::kReading && e->state != Entry::State::kLate &&
        e->buffer != nullptr) {
      ::munmap(e->buffer, e->bytes);
    }
  }
  entries_.clear();
  orphans_.clear();
}

}  // namespace drivewatch
