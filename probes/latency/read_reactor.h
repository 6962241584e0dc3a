// SPDX-License-Identifier: Apache-2.0
// The read reactor: one thread and one io_uring that serve every paced
// reader (the read latency probe's targets, each on its own schedule),
// instead of a thread sleeping per target.
//
//   reader (probe)            reactor thread                 kernel
//   Next(now) -> Read now --> prep read, one submit per tick  ---> device
//   Next(now) -> Wait T       (earliest T of every reader)
//                             io_uring_enter: wait for a CQE or until T
//   Completed(outcome) <----- timestamp at the reap           <--- CQE
//
// Waiting ends on the earliest deadline of all readers (a read due, a
// timeout, the end of a turn), on a completion, or on an event from
// another thread (Add, Remove, Wake: an eventfd read pending in the same
// ring). Nothing wakes the thread periodically: a paused or idle reader
// costs no wake-up, and reads that fall due together (drives on one
// schedule) are submitted by one system call.
//
// The ring is single-issuer with deferred task work (InitSingleIssuerRing):
// completions are posted when the reactor thread enters the kernel to
// wait, on its own CPU, so no other thread is involved in a read. Each
// reader has a registered buffer of its own; a read's submission time is
// taken just before the submitting system call and its completion time
// just after the call that reaped it returned, one clock read per batch,
// as fio does.
//
// The reactor runs on the CPUs that take the completion interrupts of the
// devices under its targets, when those are fewer than the CPUs it may use
// (a one-queue device: probes/latency/completion_cpus.h), so that a completion
// wakes it on the CPU the interrupt came to; found again whenever a target
// is opened. Otherwise it stays where the scheduler puts it.
//
// Opening a target can block (a test file is written, a device is opened,
// sysfs is read), so Open() runs on the reactor's opener thread, which
// sleeps on a condition variable when there is nothing to open.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "config/util/expected.h"
#include "probes/drive/io_target.h"

struct io_uring_sqe;  // liburing's, kept out of this header's includes

namespace drivewatch {

// What the reactor serves: one target read at queue depth 1.
class PacedReader {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  virtual ~PacedReader() = default;

  struct Plan {
    enum class Kind {
      kRead,  // read `length` bytes at `offset` of `fd` now
      kOpen,  // call Open() (on the opener thread), then ask again
      kWait,  // nothing until `at`; TimePoint::max(): until the next Wake
      kDone,  // finished (a burst's last read): never asked again
    };
    Kind kind = Kind::kWait;
    TimePoint at = TimePoint::max();
    int fd = -1;
    std::uint64_t offset = 0;
    std::uint32_t length = 0;
    std::chrono::nanoseconds timeout{0};  // kRead: a completion later is a timeout
  };
  // What to do now, asked on the reactor thread: when the reader is added
  // or woken, after its read ended, after Open() returned, and when the
  // `at` of its last kWait has come. Never asked while its read is in
  // flight.
  virtual Plan Next(TimePoint now) = 0;
  // The opener thread: open the target (it may block). Next() is asked
  // afterwards on the reactor thread.
  virtual void Open() = 0;
  // The reactor thread: the read of the last kRead ended (kOk, kError, or
  // kTimeout, after which the read stays in flight: block I/O cannot be
  // recalled once the device has it, so the reader is asked again only
  // when that completion lands, and its result is dropped).
  virtual void Completed(const ReadOutcome& outcome) = 0;
};

class ReadReactor {
 public:
  // Starts the reactor and opener threads; the ring is set up on the
  // reactor thread (a single-issuer ring belongs to the thread that made
  // it). If it cannot be, status() says why and readers are never read.
  ReadReactor();
  // Stops both threads. Readers still added are dropped unasked.
  ~ReadReactor();
  ReadReactor(const ReadReactor&) = delete;
  ReadReactor& operator=(const ReadReactor&) = delete;

  // Whether the ring is up (waits for the set-up).
  Status status();

  // Serves `reader` from now on, with a registered buffer of `buffer_bytes`
  // (the largest read it will ask for). Returns at once.
  void Add(PacedReader* reader, std::uint32_t buffer_bytes);
  // Stops serving `reader`. When this returns the reactor never calls it
  // again (it waits for an Open() in progress). A read in flight keeps its
  // buffer until it lands; its result is dropped.
  void Remove(PacedReader* reader);
  // Asks `reader` again at once, dropping the plan it gave last (a read in
  // flight is let land). When this returns, every read of `reader` that
  // was decided before the call has been submitted, so a change the reader
  // made before calling (a pause) holds for every read after it. A reader
  // not added is ignored. Not from the reactor thread.
  void Wake(PacedReader* reader);

  // Counts for tests and benchmarks (any thread).
  struct Stats {
    std::uint64_t wakeups = 0;  // returns from waiting in the kernel
    std::uint64_t submits = 0;  // system calls that submitted reads
    std::uint64_t reads = 0;    // reads submitted
  };
  Stats stats() const;
  // The reactor thread's id (Linux tid), for tests that look at it in /proc.
  int thread_id();

 private:
  using TimePoint = std::chrono::steady_clock::time_point;
  struct Entry;
  struct Ring;
  // What other threads asked of the reactor, taken in order.
  struct Request {
    enum class Kind { kAdd, kRemove, kWake, kOpened } kind;
    PacedReader* reader;
    std::uint32_t bytes = 0;  // kAdd
  };
  void Loop();
  // Loop's steps, on the reactor thread. SetUp records the CPUs the thread
  // may use, makes the ring and tells status() how that went; false when
  // there is no ring.
  bool SetUp();
  Status InitRing();
  // One turn: ask the readers that are due, submit their reads with one
  // call that waits for a completion or the earliest deadline, then reap.
  void Turn();
  // The earliest time a waiting reader or a read in flight needs a turn.
  TimePoint Deadline() const;
  // Stopping: the eventfd read let land, the ring closed, buffers unmapped.
  void ShutDown();
  void OpenerLoop();
  // mu_ held: the reactor picks `request` up at its next turn; PokeLocked
  // only wakes it (a stop, an open done).
  void PostLocked(Request request);
  void PokeLocked();
  // Reactor thread. Returns false when stopping.
  bool TakeRequests();
  void AddEntry(PacedReader* reader, std::uint32_t bytes);
  void RemoveEntry(PacedReader* reader, std::vector<PacedReader*>& let_go);
  void Ask(Entry& e, TimePoint now);
  void Reap(TimePoint reaped);
  void TimeOut(TimePoint now);
  void ArmWakeRead();
  // A submission queue entry; when the queue is full, what it holds is
  // submitted first (its reads stamped with that call's time).
  io_uring_sqe* Sqe();
  // Stamps the reads prepared and not yet stamped as submitted at
  // `submitted` (their timeouts count from it).
  void StampReads(TimePoint submitted);
  std::vector<std::unique_ptr<Entry>>::iterator Position(PacedReader* reader);  // in entries_
  Entry* Find(PacedReader* reader);
  std::unique_ptr<Entry> Extract(PacedReader* reader);  // out of entries_
  // A request's user_data: the entry it is for (nullptr: the eventfd read)
  // and its tag.
  static std::uint64_t UserData(const Entry* e, std::uint64_t tag);
  void Release(std::unique_ptr<Entry> e);  // frees its buffer slot
  // Moves the reactor thread onto the completion CPUs of the targets it
  // reads (every target's known), or back onto all it may use.
  void Place();

  std::unique_ptr<Ring> ring_;  // reactor thread after set-up
  int wake_fd_ = -1;  // other threads write it; the ring reads it

  mutable std::mutex mu_;
  std::condition_variable cv_;  // set-up done, a request taken, an open done
  bool setup_done_ = false;             // mu_
  Status setup_ = Ok{};                 // mu_
  int tid_ = 0;                         // mu_
  bool stopping_ = false;               // mu_
  bool posted_ = false;                 // mu_: eventfd written, not yet taken
  std::uint64_t requests_ = 0;          // mu_: requests posted (and the stop)
  std::uint64_t taken_ = 0;             // mu_: requests the reactor has taken
  std::vector<Request> requests_in_;    // mu_
  std::vector<PacedReader*> removed_;   // mu_: the reactor let go of these

  // The opener's queue.
  std::deque<PacedReader*> to_open_;    // mu_
  PacedReader* opening_ = nullptr;      // mu_: Open() running
  std::condition_variable opener_cv_;

  // Reactor thread only.
  // In the order added; few enough to look through (a request is rare, a
  // turn goes through all of them anyway).
  std::vector<std::unique_ptr<Entry>> entries_;
  std::map<Entry*, std::unique_ptr<Entry>> orphans_;  // removed, read in flight
  std::vector<std::uint32_t> free_slots_;
  std::vector<int> allowed_cpus_;  // the thread's affinity as it started
  std::vector<int> placed_cpus_;   // what Place() set last
  bool place_ = false;             // a target's completion CPUs changed
  bool take_ = true;               // the eventfd read landed: requests to take

  std::thread opener_;
  std::thread thread_;  // last: started once everything above exists
};

}  // namespace drivewatch
