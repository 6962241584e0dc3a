// SPDX-License-Identifier: Apache-2.0
// The floor programs of tests/bench/paced_probe_vs_fio.sh: what the read
// latency probe's default schedule costs with none of drivewatch's code in
// the way. The schedule: 10 then 100 IOPS for `--rate-period` seconds each,
// then `--idle` seconds without an arrival, for `--seconds` in all, every
// target from one epoch (as the daemon paces its targets).
//
// With no FILE (the floor): `--targets` threads, each sleeping with
// clock_nanosleep (absolute CLOCK_MONOTONIC deadlines) to every arrival; no
// I/O. With FILEs (the I/O floor): one thread and one ring (set up, and the
// files opened, as the daemon's reactor does: InitSingleIssuerRing,
// util::OpenDirect; one registered buffer), and at every arrival one 4 KiB
// O_DIRECT read at a random block of each FILE, submitted together, the
// completions reaped (and timestamped) while waiting for the next arrival:
// what any reader of these files on this schedule pays, with nothing around
// the reads. A failed or short read ends it with status 1. Prints one line:
// "cpu_seconds wakeups_or_reads max_rss_kib".
//
//   build/tests/paced_floor_bench [--targets=8] [--seconds=180]
//                                 [--rate-period=60] [--idle=30] [FILE...]
//                                 (rates: 10 then 100 IOPS, the defaults)
#include <liburing.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "config/util/direct_open.h"
#include "probes/drive/io_target.h"
#include "tests/bench/bench_util.h"

namespace {

using drivewatch::bench::CpuSeconds;
using drivewatch::bench::Flag;
using drivewatch::bench::NowNs;
using drivewatch::bench::Relative;
using drivewatch::bench::SleepUntilNs;

constexpr unsigned kBlock = 4096;

struct Schedule {
  long long start = 0, end = 0;
  double period = 60, idle = 30;

  // Calls `arrive(at)` for every arrival in [start, end), in order.
  template <class F>
  void ForEach(F&& arrive) const {
    const double rates[] = {10, 100};
    const long long cycle = static_cast<long long>((2 * period + idle) * 1e9);
    for (long long c = start; c < end; c += cycle) {
      for (int r = 0; r < 2; ++r) {
        const long long turn = c + static_cast<long long>(r * period * 1e9);
        const long long turn_end = std::min(end, turn + static_cast<long long>(period * 1e9));
        const double gap = 1e9 / rates[r];
        for (long long k = 0;; ++k) {
          const long long at = turn + static_cast<long long>(k * gap);
          if (at >= turn_end) break;
          arrive(at);
        }
      }
      // The idle turn: no arrival until the next cycle.
    }
  }
};

long long SleepFloor(int targets, const Schedule& schedule) {
  std::atomic<long long> wakeups{0};
  std::vector<std::jthread> threads;
  for (int t = 0; t < targets; ++t) {
    threads.emplace_back([&] {
      long long woken = 0;
      schedule.ForEach([&](long long at) {
        SleepUntilNs(at);
        NowNs();  // the read's timestamp, as a probe takes it
        ++woken;
      });
      wakeups += woken;
    });
  }
  threads.clear();  // joins
  return wakeups.load();
}

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "paced_floor_bench: %s\n", what.c_str());
  std::exit(1);
}

[[noreturn]] void Fail(const std::string& what, int errnum) {
  Fail(what + ": " + std::strerror(errnum));
}

// The reads of the I/O floor; returns how many completed.
long long ReadFloor(const std::vector<std::string>& files, const Schedule& schedule) {
  io_uring ring;
  // Room for every file's read of an arrival: they are all submitted
  // before the next arrival's are prepared.
  const int rc = drivewatch::InitSingleIssuerRing(
      std::max<unsigned>(64, static_cast<unsigned>(files.size())), &ring);
  if (rc < 0) Fail("io_uring_queue_init", -rc);
  std::vector<int> fds;
  std::vector<unsigned long long> blocks;
  for (const std::string& f : files) {
    auto file = drivewatch::util::OpenDirect(f, drivewatch::util::DirectAccess::kRead);
    if (!file) Fail(file.error().message);  // names the file and what failed
    fds.push_back(file->fd);
    if (file->size < kBlock) Fail(f + " (smaller than one block)", EINVAL);
    blocks.push_back(file->size / kBlock);
  }
  void* buffer = nullptr;
  if (posix_memalign(&buffer, kBlock, kBlock * files.size()) != 0) Fail("buffer", ENOMEM);
  const iovec iov{buffer, kBlock * files.size()};
  if (const int r = io_uring_register_buffers(&ring, &iov, 1); r < 0) Fail("register buffer", -r);
  std::mt19937_64 rng(1);
  long long reads = 0, in_flight = 0;
  const auto reap = [&] {
    NowNs();  // the completions' timestamp
    io_uring_cqe* cqe = nullptr;
    while (io_uring_peek_cqe(&ring, &cqe) == 0 && cqe != nullptr) {
      if (cqe->res != static_cast<int>(kBlock)) Fail("read", cqe->res < 0 ? -cqe->res : EIO);
      io_uring_cqe_seen(&ring, cqe);
      --in_flight;
      ++reads;
    }
  };
  // Submits what is prepared and reaps until `deadline`.
  const auto wait_until = [&](long long deadline) {
    for (long long now = NowNs(); now < deadline; now = NowNs()) {
      __kernel_timespec ts = Relative(deadline - now);
      io_uring_cqe* cqe = nullptr;
      const int r = io_uring_submit_and_wait_timeout(&ring, &cqe, 1, &ts, nullptr);
      if (r < 0 && r != -ETIME && r != -EINTR) Fail("io_uring_submit_and_wait_timeout", -r);
      reap();
    }
    if (io_uring_sq_ready(&ring) > 0) io_uring_submit(&ring);  // late: at once
  };
  schedule.ForEach([&](long long at) {
    wait_until(at);
    for (std::size_t i = 0; i < fds.size(); ++i) {
      io_uring_sqe* sqe = io_uring_get_sqe(&ring);
      io_uring_prep_read_fixed(sqe, fds[i], static_cast<char*>(buffer) + i * kBlock, kBlock,
                               rng() % blocks[i] * kBlock, 0);
      ++in_flight;
    }
    NowNs();  // the submissions' timestamp
  });
  io_uring_submit(&ring);
  while (in_flight > 0) {
    io_uring_cqe* cqe = nullptr;
    if (const int r = io_uring_wait_cqe(&ring, &cqe); r < 0 && r != -EINTR) Fail("wait", -r);
    reap();
  }
  io_uring_queue_exit(&ring);
  for (int fd : fds) ::close(fd);
  std::free(buffer);
  return reads;
}

}  // namespace

int main(int argc, char** argv) {
  const int targets = static_cast<int>(Flag(argc, argv, "targets", 8));
  const double seconds = Flag(argc, argv, "seconds", 180);
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--", 2) != 0) files.emplace_back(argv[i]);
  }
  Schedule schedule;
  schedule.period = Flag(argc, argv, "rate-period", 60);
  schedule.idle = Flag(argc, argv, "idle", 30);
  const double cpu0 = CpuSeconds();
  schedule.start = NowNs();
  schedule.end = schedule.start + static_cast<long long>(seconds * 1e9);
  const long long count =
      files.empty() ? SleepFloor(targets, schedule) : ReadFloor(files, schedule);
  const double cpu = CpuSeconds() - cpu0;
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  std::printf("%.6f %lld %ld\n", cpu, count, ru.ru_maxrss);
  return 0;
}
