// SPDX-License-Identifier: Apache-2.0
// The workload engine: the I/O every heavy phase is made of. One call runs
// one workload (say "sequential 128 KiB writes at QD32 until 50% of the
// drive is written") on one target through a private io_uring, and returns
// what happened: a throughput sample per second, a latency histogram per
// operation (the read latency probe's type, probes/latency/latency_histogram.h),
// and the errors.
//
//   auto target = WorkloadTarget::Open("/dev/nvme1n1", WorkloadTarget::kReadWrite);
//   WorkloadSpec spec;                      // sequential 128 KiB writes, QD32
//   spec.max_bytes = target->size() / 2;
//   auto result = RunWorkload(**target, spec, stop, [](const WorkloadProgress& p) {
//     std::printf("%.0f MB/s\n", p.last_second.bytes() / 1e6);
//   });
//
// The engine never decides whether writing is allowed: the phases check the
// interlocks (aging/safety/interlocks.h) before they open a target read-write.
//
// Reads and writes go through io_uring with registered buffers and the
// registered file, O_DIRECT, so neither the page cache nor buffer copies sit
// between the engine and the drive. Deallocate (trim) has no io_uring
// operation for block devices on 6.1 kernels, so it is a synchronous
// BLKDISCARD ioctl on a block device and fallocate(PUNCH_HOLE) on a file,
// issued from the engine thread between ring submissions, as fio does.
// Reads and writes already in the ring keep going meanwhile, but their
// completions are reaped only after the trim returns, which adds up to the
// trim's duration to their measured latency.
//
// Stop is noticed within 50 ms even with I/O outstanding; in-flight I/O is
// then given up to a second to land before the run returns (block I/O
// cannot be recalled; the kernel finishes any that is left).
//
// Write buffers hold data from aging/engine/data_pattern.h: random bytes that do not
// compress, stamped per 4 KiB with where and when they were written, so any
// block read back can be checked.
//
// A target belongs to the thread that opened it. A run of several jobs
// (WorkloadSpec::jobs) shares it with its job threads while it runs: each
// job registers the one descriptor in a ring of its own, and trims are
// ioctl or fallocate calls on it, which any thread may make at once.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "config/util/expected.h"
#include "probes/latency/latency_histogram.h"

namespace drivewatch::aging {

class WorkloadTarget {
 public:
  enum Mode { kReadOnly, kReadWrite };
  // Opens a block device or an existing regular file with O_DIRECT; a
  // block device opened kReadWrite also with O_EXCL, so that nothing can
  // mount or claim it while the engine writes (EBUSY while something
  // does).
  static Expected<std::unique_ptr<WorkloadTarget>> Open(const std::string& path,
                                                        Mode mode);
  ~WorkloadTarget();
  WorkloadTarget(const WorkloadTarget&) = delete;
  WorkloadTarget& operator=(const WorkloadTarget&) = delete;

  const std::string& path() const { return path_; }
  int fd() const { return fd_; }
  bool is_block_device() const { return rdev_ != 0; }
  // st_rdev of a block device (0 for a file), for identity checks.
  dev_t device_number() const { return rdev_; }
  std::uint64_t size() const { return size_; }
  // The smallest I/O the target accepts with O_DIRECT: the logical block
  // size of the device (or of the file system's device for a file).
  std::uint32_t logical_block_size() const { return logical_block_size_; }
  bool writable() const { return mode_ == kReadWrite; }

 private:
  WorkloadTarget() = default;
  std::string path_;
  int fd_ = -1;
  dev_t rdev_ = 0;
  std::uint64_t size_ = 0;
  std::uint32_t logical_block_size_ = 512;
  Mode mode_ = kReadOnly;
};

// I/Os decided outside the engine, in place of a generated workload: a
// replayed block trace (aging/phases/replay_phase.cc). WorkloadSpec::source.
class IoSource {
 public:
  enum class Op : std::uint8_t { kRead, kWrite, kTrim };
  struct Io {
    Op op = Op::kRead;
    // Bytes; both multiples of the target's logical block size, the I/O
    // inside the target, size at most WorkloadSpec::block_size.
    std::uint64_t offset = 0;
    std::uint32_t size = 0;
    // When it is due, from the run's start; unset: at once.
    std::optional<std::chrono::nanoseconds> due;
  };
  virtual ~IoSource() = default;
  // The next I/O, or nullopt when there is none left: the run then ends
  // once what is in flight has landed. Called on the engine thread,
  // between submissions, so it must be fast.
  virtual std::optional<Io> Next() = 0;
  // 0..1: how far through its I/Os the source is (the run's progress).
  virtual double Fraction() const = 0;
};

// Random access visits every block of the region once per pass, in an
// order scrambled by `seed` (as fio's random map does), so a bound of one
// region's worth of bytes touches each block exactly once.
enum class Access { kSequential, kRandom };

// A mixed-size workload's share: `percent` of the I/Os are `size` bytes.
struct SizeShare {
  std::uint32_t size = 0;
  std::uint32_t percent = 0;
};
// A skewed workload's zone: `access_percent` of the I/Os fall in the next
// `region_percent` of the region (zones follow one another from its start).
struct LbaZone {
  double region_percent = 0;
  std::uint32_t access_percent = 0;
};

struct WorkloadSpec {
  // The operation mix in percent; the three sum to 100. Each I/O's kind is
  // drawn so that over any 100 I/Os the shares hold within one I/O (a
  // deterministic interleave, not a coin toss per I/O).
  std::uint32_t read_percent = 0;
  std::uint32_t write_percent = 100;
  std::uint32_t trim_percent = 0;

  Access access = Access::kSequential;
  // 512 B to 2 MiB, a multiple of the target's logical block size.
  std::uint32_t block_size = 128 * 1024;
  // I/Os in flight at once, 1 to 256.
  std::uint32_t queue_depth = 32;
  // Independent engines, each with its own ring, buffers and counters and
  // queue_depth I/Os in flight, on their own threads (fio's numjobs); 1 to
  // 64, queue_depth x jobs at most 256. 1 runs on the calling thread, as
  // ever. With more, the work is divided as fio's numjobs divides it:
  //  - sequential: the region is cut into `jobs` contiguous slices of whole
  //    blocks (the first ones a block longer when they do not divide
  //    evenly), job j runs over slice j (fio's offset_increment) and wraps
  //    within it; `start` must be 0;
  //  - random: every job draws over the whole region with its own random
  //    map (seed + j);
  //  - each job writes with data_seed + j, so its bytes are its own and
  //    deterministic; a block is checked with its job's seed;
  //  - max_bytes is the run's: rounded up to whole blocks and shared out in
  //    whole blocks, the remainder to the first jobs (a job whose share is
  //    nothing does not run); max_time and max_errors hold for each job;
  //  - the jobs start together (one start time, so their seconds line up);
  //    one that reaches max_errors stops the others;
  //  - not with rate_iops, fill, on_read or source, which are one job's.
  // Results: samples summed second by second, totals summed (seconds: the
  // longest job's), latencies merged, errors and late summed, first_error
  // the earliest of any job's.
  std::uint32_t jobs = 1;
  // 0: as fast as the target goes. Otherwise I/Os start on a fixed
  // schedule of this many per second (probes/latency/pacing.h), never more than
  // queue_depth in flight; arrivals that find the queue full are late, and
  // their latency counts from when they were due, so a slow drive cannot
  // hide behind a full queue (no coordinated omission).
  double rate_iops = 0;

  // The region I/O falls in: [offset, offset + length) of the target; 0
  // length means to its end (whole blocks of it). Both multiples of
  // block_size.
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  // Sequential only: where in the region to begin, relative to `offset`,
  // and whether to wrap to the region's start at its end (otherwise the
  // run ends there).
  std::uint64_t start = 0;
  bool wrap = false;

  // The run ends at the first bound reached; 0 is no bound of that kind. A
  // random run or a wrapping sequential run needs at least one.
  // Bytes issued, all kinds; I/O is issued in whole blocks, so a bound that
  // is not a multiple of block_size is rounded up to one.
  std::uint64_t max_bytes = 0;
  std::chrono::nanoseconds max_time{0};

  // Random offsets and the data pattern derive from these; the same seeds
  // give the same offsets and the same bytes.
  std::uint64_t seed = 1;
  std::uint64_t data_seed = 1;

  // Random access only, each optional (JESD219-style workloads,
  // aging/phases/endurance_phase.cc). With either set, offsets are drawn at random
  // from `seed` instead of visiting each block once per pass. size_mix:
  // each I/O's size is drawn from these shares (percents summing to 100;
  // each size a multiple of the logical block size, block_size the largest
  // of them). lba_zones: each I/O first draws its zone by access_percent,
  // then an offset uniformly within it. An I/O of 4 KiB or more starts on
  // a 4 KiB boundary, a smaller one on a logical block (without size_mix,
  // every I/O starts on a block_size boundary); none crosses the region's
  // end, and one that starts near a zone's end may run into the next zone.
  std::vector<SizeShare> size_mix;
  std::vector<LbaZone> lba_zones;

  // Hooks for workloads whose bytes mean something (retention studies).
  // `fill`, when set, writes each write's bytes instead of the data
  // pattern, when the write is prepared. `on_read`, when set, sees every
  // read once it has completed: its offset, the bytes (valid during the
  // call only), the result (block_size, a short count, or -errno) and its
  // latency (taken at the completion). The reads a wait brought in are
  // handed over after the freed slots have been given new reads, so the
  // hook's work overlaps them; such runs read into 2 x queue_depth
  // buffers. Both hooks run on the engine thread, so they must be fast.
  std::function<void(std::uint64_t offset, void* buffer, std::uint32_t size)> fill;
  std::function<void(std::uint64_t offset, const void* buffer, std::uint32_t size,
                     int result, std::uint64_t latency_ns)>
      on_read;

  // Stops the run after this many failed I/Os (an error counts once per
  // I/O); 0 never stops on errors.
  std::uint64_t max_errors = 100;

  // When set, every I/O comes from it, in its order, each when it is due
  // (one issued late for want of a free slot counts its latency from when
  // it was due, as in a paced run), until it has none left or a bound is
  // reached. The op mix's interleave, access, the region, start, wrap,
  // rate_iops, size_mix and lba_zones are not used; read, write and
  // trim_percent still say which operations it hands out (each it hands
  // out above 0: they size the buffers, and writes or trims make the run a
  // write pass), and block_size must hold its largest I/O. An I/O that
  // breaks IoSource::Io's rules or is of an operation at 0 percent is
  // never issued: it counts as a failed I/O.
  IoSource* source = nullptr;
};

// One second of a run (the last one may be shorter: see seconds).
struct ThroughputSample {
  double seconds = 1.0;  // length of the interval this sample covers
  std::uint64_t read_bytes = 0, write_bytes = 0, trim_bytes = 0;
  std::uint64_t read_ios = 0, write_ios = 0, trim_ios = 0;
  std::uint64_t bytes() const { return read_bytes + write_bytes + trim_bytes; }
  std::uint64_t ios() const { return read_ios + write_ios + trim_ios; }
  double bytes_per_second() const { return seconds > 0 ? bytes() / seconds : 0; }
  double iops() const { return seconds > 0 ? ios() / seconds : 0; }
};

struct WorkloadProgress {
  ThroughputSample last_second;
  std::uint64_t bytes_done = 0;  // all kinds, since the start
  std::chrono::nanoseconds elapsed{0};
  // 0..1 against the nearest bound (bytes, time, or the end of a
  // non-wrapping sequential region).
  double fraction = 0;
};

struct WorkloadResult {
  enum class End {
    kCompleted,  // a bound was reached
    kStopped,    // the stop token was requested
    kErrors,     // max_errors reached
  };
  End end = End::kCompleted;
  std::vector<ThroughputSample> samples;  // one per second, in order
  ThroughputSample total;                 // seconds = the run's length
  // Completed I/Os only; a failed one counts in errors instead. Reads and
  // writes: from just before the submitting system call (or from when a
  // paced I/O was due, if it waited for a free slot) to the reap of its
  // completion; trims: around the ioctl or fallocate.
  // This is response latency: for a late paced I/O it includes the wait
  // for a slot, what a user waiting on the schedule sees.
  LatencyHistogram read_latency, write_latency, trim_latency;
  // Service latency: from just before the submitting call to the reap,
  // always (fio's lat; fio times from the submission too). The same as
  // the above for I/Os that were not late, and for every I/O of an
  // unpaced run.
  LatencyHistogram read_service, write_service, trim_service;
  // Failed I/Os: an error completion, or a short transfer (a read past the
  // end of a file), which counts as failed and not in the throughput.
  std::uint64_t errors = 0;
  std::string first_error;  // "write at offset 1048576: Input/output error"
  // Paced or sourced runs: I/Os that found every slot busy when they were
  // due, and were issued late.
  std::uint64_t late = 0;
  // Sequential: where (relative to the region's offset) the next I/O would
  // have gone, so a later run can continue. 0 for a run of several jobs,
  // which cannot be continued (start must be 0).
  std::uint64_t next_start = 0;
};

// Called on the engine thread about once a second, after each sample. With
// several jobs, on the thread that called RunWorkload, once every job has
// closed that second (or ended): its sample and bytes_done summed over the
// jobs, elapsed the longest, fraction the mean of the jobs' (an ended
// job's counts with its last).
using ProgressCallback = std::function<void(const WorkloadProgress&)>;

// Runs `spec` on `target` until a bound, a stop, or max_errors. Fails
// (without doing any I/O) on a spec the target cannot run: a block size
// that is not a multiple of its logical block size, a region beyond its
// end, writes or trims on a read-only target, no bound where one is needed,
// jobs that cannot share the run (WorkloadSpec::jobs), or a job that cannot
// set up its ring.
Expected<WorkloadResult> RunWorkload(WorkloadTarget& target,
                                     const WorkloadSpec& spec,
                                     const std::stop_token& stop,
                                     const ProgressCallback& progress = {});

// "sequential write 128KiB QD32", "random 70/30 read/write 4KiB QD1 at
// 1000 IOPS" or "random read 4KiB QD32 x4 jobs": for logs and errors.
std::string Describe(const WorkloadSpec& spec);

}  // namespace drivewatch::aging
