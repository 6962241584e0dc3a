// SPDX-License-Identifier: Apache-2.0
#include "aging/engine/workload.h"

#include <fcntl.h>
#include <liburing.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>

#include "aging/engine/data_pattern.h"
#include "aging/engine/workload_jobs.h"
#include "aging/engine/workload_plan.h"
#include "aging/engine/workload_run.h"
#include "config/util/sys.h"
#include "probes/drive/io_target.h"
#include "probes/latency/pacing.h"

namespace drivewatch::aging {
namespace {

using workload_detail::Op;
using workload_detail::kNsPerSecond;
using workload_detail::NowNs;
using workload_detail::Plan;
using workload_detail::RunState;
using workload_detail::ToTimePoint;

// Longest a wait blocks before the stop token and the bounds are looked at
// again. liburing may wait twice in one call (once with the submission,
// once after), so half of the 50 ms promised.
constexpr std::uint64_t kWaitSliceNs = 20'000'000;
// After a stop, how long in-flight I/O is given to land before the ring is
// torn down anyway (the kernel then finishes it on its own).
constexpr std::uint64_t kStopDrainNs = 1'000'000'000;
// Buffers start on a page boundary (O_DIRECT wants at most this) and are
// populated a page at a time.
constexpr std::size_t kPage = 4096;

using util::SysError;

// One run: the ring and the buffers, over the run's bookkeeping
// (workload_run.h).
class Engine : private RunState {
 public:
  using RunState::first_error_ns;

  Engine(WorkloadTarget& target, const WorkloadSpec& spec, const Plan& plan,
         const std::stop_token& stop, const ProgressCallback& progress)
      : RunState(target, spec, plan, stop, progress) {}
  ~Engine();

  Status Setup();
  Status MapBuffers(std::size_t bytes);
  // Buffer `buf` (0..qd-1, then the reads' own in a mix).
  char* Buffer(std::uint32_t buf) const {
    return static_cast<char*>(memory_) + std::size_t{buf} * stride_;
  }
  // start_ns: when the run counts from (CLOCK_MONOTONIC); 0 is now. The
  // jobs of a multi-job run share one, so their seconds line up.
  Expected<WorkloadResult> Run(std::uint64_t start_ns = 0);

 private:
  struct Slot {
    Op op = Op::kRead;
    bool late = false;          // waited for a free slot past its due time
    std::uint32_t buffer = 0;   // the registered buffer it reads or writes
    std::uint64_t offset = 0;
    std::uint32_t size = 0;
    std::uint64_t due_ns = 0;    // paced runs: when it was due
    std::uint64_t start_ns = 0;  // response latency counts from here
    std::uint64_t submit_ns = 0;  // service latency counts from here
    std::uint64_t freed_ns = 0;  // when the slot last became free
  };

  // Returns the time it ended.
  std::uint64_t Trim(std::uint64_t offset, std::uint32_t size);
  void Complete(std::uint32_t slot_index, int res, std::uint64_t now);
  // Runs on_read for the reads completed since the last call, and gives
  // their buffers back to the pool.
  void CheckCompletedReads();
  // The registered buffer for an I/O of `op` in slot `index`: the slot's
  // write buffer, its read buffer, or for reads checked by on_read a spare
  // from the pool.
  std::uint32_t TakeBuffer(Op op, std::uint32_t index);
  // Run()'s parts: issuing one read or write, waiting for completions (the
  // run's time after them, or why the ring failed), and the end.
  Status Issue(const PlannedIo& io);
  Expected<std::uint64_t> WaitAndReap(std::uint64_t now, std::uint64_t next_due);
  void Finish();

  io_uring ring_{};
  bool ring_ok_ = false;
  void* memory_ = nullptr;
  std::size_t memory_size_ = 0;
  // Buffers start a page apart at least: a block size that is not a whole
  // number of pages (a replay's largest I/O plus a logical block) would
  // otherwise leave every buffer after the first straddling pages, one
  // more scatter-gather segment each, and unaligned to the page.
  std::size_t stride_ = 0;
  // The first read buffer. Mixed read/write runs read into their own
  // buffers after the qd write buffers, so a read never overwrites a write
  // buffer's precomputed body; runs without writes read from buffer 0.
  std::uint32_t read_base_ = 0;
  // Reads with an on_read hook (retention-verify's check of every block)
  // take their buffers from a pool of 2 x queue_depth. A completed read
  // keeps its buffer until its check has run, its slot goes back to work
  // at once with a spare, and the checks run once the ring is full again:
  // checking overlaps the next reads instead of holding them back.
  // fio checks each completion before it issues the next I/O; done that way
  // here, the checks added about 0.05 s per GiB to a 128 KiB QD32 verify.
  bool pooled_reads_ = false;
  std::vector<std::uint32_t> free_read_buffers_;
  struct CompletedRead {
    std::uint64_t offset;
    std::uint32_t buffer;
    std::uint32_t size;
    int result;
    std::uint64_t latency_ns;
  };
  std::vector<CompletedRead> completed_reads_;
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_;
  std::vector<std::uint32_t> queued_;  // prepared this round, not submitted
  std::vector<io_uring_cqe*> cqes_;
  std::optional<DataPattern> pattern_;
  std::uint32_t in_flight_ = 0;
  std::uint64_t write_sequence_ = 0;
};

Engine::~Engine() {
  // I/O still in flight after a stop keeps its pages pinned past the ring's
  // exit; unmapping only drops our mapping.
  if (ring_ok_) {
    // The ring's own reference to the registered file goes only when the
    // kernel tears the ring down, asynchronously after the close in
    // io_uring_queue_exit. For a block device opened O_EXCL that kept the
    // device claimed after the phase ended, and the next phase's exclusive
    // open failed with EBUSY. Unregistering waits until the ring holds the
    // file no more.
    io_uring_unregister_files(&ring_);
    io_uring_queue_exit(&ring_);
  }
  if (memory_ != nullptr) ::munmap(memory_, memory_size_);
}

// The buffers: anonymous memory, page aligned as O_DIRECT wants, populated
// up front so no page fault lands inside a timed I/O.
//
// Large buffers sit on 2 MiB transparent huge pages where the kernel gives
// them. With 4 KiB pages a 2 MiB buffer is 512 physically scattered pages:
// one segment each, and a device whose requests take fewer segments (a
// virtio disk without indirect descriptors takes 254) gets each I/O split
// in several. fio's buffers happen to come out of larger runs; ours came
// out at one page per run, and large sequential I/O ran at 0.56-0.82x of
// fio's throughput on a loop device over such a disk. So the mapping is
// 2 MiB aligned, advised MADV_HUGEPAGE and then populated. Where huge
// pages are off or short the same memory is plain 4 KiB pages: slower on
// such devices, never wrong.
Status Engine::MapBuffers(std::size_t bytes) {
  constexpr std::size_t kHuge = std::size_t{2} << 20;
  const std::string what = "workload on " + target_.path() + ": mmap " +
                           std::to_string(bytes) + " bytes of buffers";
  if (bytes < kHuge) {
    void* mem = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (mem == MAP_FAILED) return SysError(errno, what);
    memory_ = mem;
    memory_size_ = bytes;
    return Ok{};
  }
  // Map one huge page more than needed and keep the aligned middle.
  const std::size_t size = (bytes + kHuge - 1) / kHuge * kHuge;
  void* raw = ::mmap(nullptr, size + kHuge, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return SysError(errno, what);
  const auto start = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = (start + kHuge - 1) / kHuge * kHuge;
  if (aligned > start) ::munmap(raw, aligned - start);
  const std::uintptr_t end = aligned + size;
  const std::uintptr_t raw_end = start + size + kHuge;
  if (raw_end > end) ::munmap(reinterpret_cast<void*>(end), raw_end - end);
  memory_ = reinterpret_cast<void*>(aligned);
  memory_size_ = size;
  // Advice only: EINVAL where transparent huge pages are compiled out.
  (void)::madvise(memory_, memory_size_, MADV_HUGEPAGE);
#ifdef MADV_POPULATE_WRITE
  if (::madvise(memory_, memory_size_, MADV_POPULATE_WRITE) == 0) return Ok{};
  // Kernels before 5.14 do not know it (EINVAL): touch every page instead.
  // ENOMEM here is a real shortage, reported as the mmap's failure.
  if (errno == ENOMEM) return SysError(errno, what);
#endif
  for (std::size_t off = 0; off < memory_size_; off += kPage) {
    static_cast<volatile char*>(memory_)[off] = 0;
  }
  return Ok{};
}

Status Engine::Setup() {
  const std::uint32_t qd = spec_.queue_depth;
  const std::size_t bs = spec_.block_size;
  const bool reads = spec_.read_percent > 0;
  const bool writes = spec_.write_percent > 0;
  pooled_reads_ = reads && spec_.on_read != nullptr;
  // Write buffers 0..qd-1 (their bodies precomputed per slot), then the
  // reads': qd of them, or the pool of 2 x qd.
  read_base_ = writes ? qd : 0;
  const std::size_t read_buffers = !reads ? 0 : pooled_reads_ ? 2 * std::size_t{qd} : qd;
  const std::size_t buffers = read_base_ + read_buffers;
  if (pooled_reads_) {
    free_read_buffers_.reserve(read_buffers);
    for (std::size_t b = buffers; b-- > read_base_;) {
      free_read_buffers_.push_back(static_cast<std::uint32_t>(b));
    }
    completed_reads_.reserve(read_buffers);
  }
  stride_ = (bs + kPage - 1) / kPage * kPage;
  if (reads || writes) {
    if (Status st = MapBuffers(buffers * stride_); !st) return st;
  }

  // DEFER_TASKRUN (InitSingleIssuerRing) runs completion work only when the
  // engine enters to wait, so a completion posted while the engine submits
  // or checks a block does not interrupt it (fio 3.33 sets the same flags).
  // The engine reaps at that wait in any case, so no latency is taken later
  // than before. Verify reads on tmpfs (io-wq copies, the engine checks):
  // 7 % faster than with COOP_TASKRUN, median of 8 A/B rounds.
  int rc = InitSingleIssuerRing(qd, &ring_);
  if (rc < 0) return SysError(-rc, "io_uring_queue_init for " + target_.path());
  ring_ok_ = true;

  if (memory_ != nullptr) {
    std::vector<iovec> iov(buffers);
    for (std::size_t i = 0; i < buffers; ++i) {
      iov[i] = {Buffer(static_cast<std::uint32_t>(i)), bs};
    }
    if ((rc = io_uring_register_buffers(&ring_, iov.data(), iov.size())) < 0) {
      return SysError(-rc, "io_uring_register_buffers (" +
                               std::to_string(memory_size_) + " bytes) for " +
                               target_.path());
    }
  }
  int fd = target_.fd();
  if ((rc = io_uring_register_files(&ring_, &fd, 1)) < 0) {
    return SysError(-rc, "io_uring_register_files for " + target_.path());
  }

  if (writes) {
    std::vector<void*> write_buffers(qd);
    for (std::uint32_t i = 0; i < qd; ++i) {
      write_buffers[i] = Buffer(i);
    }
    pattern_.emplace(spec_.data_seed, spec_.block_size, std::move(write_buffers));
  }
  slots_.resize(qd);
  free_.reserve(qd);
  for (std::uint32_t i = qd; i-- > 0;) free_.push_back(i);
  queued_.reserve(qd);
  cqes_.resize(qd);
  return Ok{};
}

// Synchronous, on the engine thread: neither BLKDISCARD nor a hole punch
// has an io_uring operation on 6.1 kernels. Reads and writes already in
// the ring keep going meanwhile; their completions wait to be reaped, which
// can add up to the trim's duration to their measured latency (as in fio).
std::uint64_t Engine::Trim(std::uint64_t offset, std::uint32_t size) {
  const std::uint64_t len = size;
  const std::uint64_t start_ns = NowNs();
  int rc;
  if (target_.is_block_device()) {
    std::uint64_t range[2] = {offset, len};
    rc = ::ioctl(target_.fd(), BLKDISCARD, range);
  } else {
    rc = ::fallocate(target_.fd(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                     static_cast<off_t>(offset), static_cast<off_t>(len));
  }
  const int err = rc == 0 ? 0 : errno;
  const std::uint64_t now = NowNs();
  if (err == 0) {
    Count(Op::kTrim, now - start_ns, now - start_ns, len);
  } else {
    RecordError(Op::kTrim, offset, std::strerror(err));
  }
  RollSamples(now);
  return now;
}

void Engine::Complete(std::uint32_t index, int res, std::uint64_t now) {
  Slot& s = slots_[index];
  if (s.op == Op::kRead && pooled_reads_) {
    completed_reads_.push_back({s.offset, s.buffer, s.size, res, now - s.start_ns});
  }
  if (res == static_cast<int>(s.size)) {
    Count(s.op, now - s.start_ns, now - s.submit_ns, s.size);
  } else if (res < 0) {
    RecordError(s.op, s.offset, std::strerror(-res));
  } else {
    // A short transfer: past the end of a file, or a device that gave up
    // part way. The block was not transferred as asked.
    RecordError(s.op, s.offset,
                "short transfer, " + std::to_string(res) + " of " +
                    std::to_string(s.size) + " bytes");
  }
  s.freed_ns = now;
  free_.push_back(index);
  --in_flight_;
}

void Engine::CheckCompletedReads() {
  for (const CompletedRead& r : completed_reads_) {
    spec_.on_read(r.offset, Buffer(r.buffer), r.size, r.result, r.latency_ns);
    free_read_buffers_.push_back(r.buffer);
  }
  completed_reads_.clear();
}

std::uint32_t Engine::TakeBuffer(Op op, std::uint32_t index) {
  if (op != Op::kRead) return index;
  if (!pooled_reads_) return read_base_ + index;
  // The pool holds 2 x qd: qd reads in flight at most, and the completed
  // ones are checked before every wait, so a spare is there; checking now
  // covers the case anyway.
  if (free_read_buffers_.empty()) CheckCompletedReads();
  const std::uint32_t b = free_read_buffers_.back();
  free_read_buffers_.pop_back();
  return b;
}

// Puts a planned read or write in a free slot and submits it.
Status Engine::Issue(const PlannedIo& io) {
  // Late when no slot was free when it was due. free_ holds the free
  // slots in the order they were freed, so its first has been free
  // longest; the one taken is its last, maybe freed after the due
  // time while others waited (the engine's own wake-up was late).
  const bool late = io.due_ns != 0 && slots_[free_.front()].freed_ns > io.due_ns;
  const std::uint32_t index = free_.back();
  free_.pop_back();
  Slot& s = slots_[index];
  s.op = io.op;
  s.offset = io.offset;
  s.size = io.size;
  s.due_ns = io.due_ns;
  s.late = late;
  if (s.late) ++result_.late;
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);  // never null: qd entries
  const std::uint32_t buf = TakeBuffer(io.op, index);
  s.buffer = buf;
  void* addr = Buffer(buf);
  if (io.op == Op::kWrite && spec_.fill) {
    spec_.fill(io.offset, addr, io.size);
    io_uring_prep_write_fixed(sqe, 0, addr, io.size, io.offset, buf);
  } else if (io.op == Op::kWrite) {
    pattern_->Stamp(index, io.offset, write_sequence_++, io.size);
    io_uring_prep_write_fixed(sqe, 0, addr, io.size, io.offset, buf);
  } else {
    io_uring_prep_read_fixed(sqe, 0, addr, io.size, io.offset, buf);
  }
  sqe->flags |= IOSQE_FIXED_FILE;
  io_uring_sqe_set_data64(sqe, index);
  // Every I/O goes to the kernel on its own, stamped just before its
  // own submitting call, as fio does by default
  // (iodepth_batch_submit=1). Submitting a round's I/Os as one batch
  // makes completions arrive in convoys: with 4 KiB reads at QD32 on
  // virtio that lost a fifth of the throughput and raised p50 by a
  // quarter, and with 128 KiB sequential reads and writes at QD32 it
  // ran at 0.90-0.94x of the I/O-at-a-time rate (2 MiB: no
  // difference either way; tests/bench/workload_vs_fio.sh).
  s.submit_ns = NowNs();
  s.start_ns = s.late ? s.due_ns : s.submit_ns;
  const int submitted = io_uring_submit(&ring_);
  if (submitted == 1) {
    ++in_flight_;
  } else if (submitted < 0 && submitted != -EAGAIN && submitted != -EBUSY) {
    return SysError(-submitted, "io_uring_enter on " + target_.path());
  } else {
    queued_.push_back(index);  // submitted with WaitAndReap's batch
  }
  return Ok{};
}

// Waits for completions and counts them; returns the time after.
Expected<std::uint64_t> Engine::WaitAndReap(std::uint64_t now, std::uint64_t next_due) {
  // Wait for at least one completion, a slice at most (the stop token),
  // and in a paced run no later than the next arrival.
  std::uint64_t wait_ns = kWaitSliceNs;
  if (next_due != 0) wait_ns = std::min(wait_ns, next_due - now);
  __kernel_timespec ts{static_cast<long long>(wait_ns / kNsPerSecond),
                       static_cast<long long>(wait_ns % kNsPerSecond)};
  io_uring_cqe* cqe = nullptr;
  int rc;
  if (!queued_.empty()) {
    // SQEs the kernel could not take at once (EAGAIN/EBUSY in Issue): one
    // clock read for them, right before the submitting call.
    const std::uint64_t submit_ns = NowNs();
    for (std::uint32_t index : queued_) {
      Slot& s = slots_[index];
      s.submit_ns = submit_ns;
      s.start_ns = s.late ? s.due_ns : submit_ns;
    }
    in_flight_ += static_cast<std::uint32_t>(queued_.size());
    queued_.clear();
    rc = io_uring_submit_and_wait_timeout(&ring_, &cqe, 1, &ts, nullptr);
  } else if (in_flight_ > 0) {
    rc = io_uring_wait_cqe_timeout(&ring_, &cqe, &ts);
  } else if (next_due == 0) {
    // Nothing in the ring (a trim-only run): go on issuing.
    now = NowNs();
    RollSamples(now);
    return now;
  } else {
    // Paced and idle until the next arrival.
    timespec sleep{static_cast<time_t>(wait_ns / kNsPerSecond),
                   static_cast<long>(wait_ns % kNsPerSecond)};
    ::nanosleep(&sleep, nullptr);
    rc = 0;
  }
  if (rc < 0 && rc != -ETIME && rc != -EINTR && rc != -EAGAIN &&
      rc != -EBUSY) {
    return SysError(-rc, "io_uring_enter on " + target_.path());
  }
  const unsigned n = io_uring_peek_batch_cqe(&ring_, cqes_.data(), spec_.queue_depth);
  for (unsigned i = 0; i < n; ++i) {
    // Per completion, so each I/O's latency is its own.
    now = NowNs();
    Complete(static_cast<std::uint32_t>(cqes_[i]->user_data), cqes_[i]->res, now);
  }
  io_uring_cq_advance(&ring_, n);
  if (n == 0) now = NowNs();
  RollSamples(now);
  return now;
}

// The run's last sample and its totals.
void Engine::Finish() {
  const std::uint64_t end_ns = NowNs();
  if (end_ns > sample_start_ns_ && (sample_.ios() > 0 || result_.samples.empty() ||
                                    end_ns - sample_start_ns_ > 1'000'000)) {
    CloseSample(end_ns);
  }
  result_.total = ThroughputSample{};
  for (const ThroughputSample& s : result_.samples) {
    result_.total.read_bytes += s.read_bytes;
    result_.total.write_bytes += s.write_bytes;
    result_.total.trim_bytes += s.trim_bytes;
    result_.total.read_ios += s.read_ios;
    result_.total.write_ios += s.write_ios;
    result_.total.trim_ios += s.trim_ios;
  }
  result_.total.seconds = static_cast<double>(end_ns - start_ns_) / 1e9;
  result_.next_start = spec_.access == Access::kSequential
                           ? (seq_pos_ >= plan_.region_length && spec_.wrap ? 0 : seq_pos_)
                           : 0;
}

Expected<WorkloadResult> Engine::Run(std::uint64_t start_ns) {
  start_ns_ = start_ns != 0 ? start_ns : NowNs();
  sample_start_ns_ = start_ns_;
  if (spec_.rate_iops > 0) {
    pacer_.emplace(spec_.rate_iops, ArrivalProcess::kFixed, ToTimePoint(start_ns_));
  }
  std::uint64_t now = start_ns_;
  std::uint64_t drain_deadline = 0;  // set once issuing has ended by a stop
  bool issuing = true;

  for (;;) {
    if (issuing && !IssueAllowed(now)) {
      issuing = false;
      if (result_.end == WorkloadResult::End::kStopped) {
        drain_deadline = now + kStopDrainNs;
      }
    }
    // Prepare an I/O for every free slot (in a paced run, for every
    // arrival already due).
    std::uint64_t next_due = 0;
    while (issuing && !free_.empty()) {
      if (!pending_ && !(pending_ = NextIo())) {
        region_done_ = true;
        issuing = false;
        break;
      }
      if (pending_->due_ns > now) {
        next_due = pending_->due_ns;
        break;
      }
      const PlannedIo io = *pending_;
      pending_.reset();
      const Op op = io.op;
      const std::uint32_t size = io.size;
      issued_bytes_ += size;
      if (op == Op::kTrim) {
        // A trim needs no slot, so it is never late for want of one.
        now = Trim(io.offset, size);
      } else if (Status issued = Issue(io); !issued) {
        return issued.error();
      }
      if (!IssueAllowed(now)) issuing = false;
    }
    if (!issuing && result_.end == WorkloadResult::End::kStopped &&
        drain_deadline == 0) {
      drain_deadline = now + kStopDrainNs;
    }
    // The slots are refilled: check what the last wait brought in while
    // the new reads are on their way.
    if (!completed_reads_.empty()) CheckCompletedReads();

    if (queued_.empty() && in_flight_ == 0 && !issuing) break;
    if (drain_deadline != 0 && now >= drain_deadline) break;

    Expected<std::uint64_t> waited = WaitAndReap(now, next_due);
    if (!waited) return waited.error();
    now = *waited;
  }

  Finish();
  return std::move(result_);
}

}  // namespace

namespace workload_detail {

Expected<JobRun> RunJob(WorkloadTarget& target, const WorkloadSpec& spec, const Plan& plan,
                        const std::stop_token& stop, const ProgressCallback& progress,
                        const JobReady& ready) {
  Engine engine(target, spec, plan, stop, progress);
  const Status setup = engine.Setup();
  const std::optional<std::uint64_t> start_ns = ready(setup);
  if (!setup) return setup.error();
  if (!start_ns) {
    return Error{ECANCELED, -1, "workload on " + target.path() + ": another job did not start"};
  }
  Expected<WorkloadResult> result = engine.Run(*start_ns);
  if (!result) return result.error();
  return JobRun{std::move(*result), engine.first_error_ns()};
}

}  // namespace workload_detail

Expected<WorkloadResult> RunWorkload(WorkloadTarget& target,
                                     const WorkloadSpec& spec,
                                     const std::stop_token& stop,
                                     const ProgressCallback& progress) {
  Expected<Plan> plan = workload_detail::Validate(target, spec);
  if (!plan) return plan.error();
  // Several jobs: each its own Engine on its own thread (workload_jobs.cc).
  if (spec.jobs > 1) return workload_detail::RunJobs(target, spec, *plan, stop, progress);
  Engine engine(target, spec, *plan, stop, progress);
  if (Status s = engine.Setup(); !s) return s.error();
  return engine.Run();
}

}  // namespace drivewatch::aging
