// SPDX-License-Identifier: Apache-2.0
// The floor under the read latency probe's figures: the same interval the
// probe times, with none of drivewatch's code in it. For
// tests/bench/read_latency_vs_fio.sh:
//   read_latency_floor PATH RATE READS
// reads PATH (a file or a block device, O_DIRECT) at RATE IOPS (fixed
// arrivals, QD1, 4 KiB at uniformly random 4 KiB-aligned offsets) READS
// times and prints "p50 p99 p99.9 cpu_us_per_read reads" (seconds, then
// µs), as read_latency_bench does. Each read: sleep to its due time
// (clock_nanosleep, absolute), read the clock, one io_uring_submit_and_wait
// that submits it and waits for it, read the clock. The ring is set up as
// the probe's (single issuer, deferred task work, a registered buffer), and
// the latencies go into the probe's histogram class, so that the two
// quantiles differ only by what the probe does around the read.
//
// fio measures neither end the same way (its `lat` starts before its own
// user-space work on the request, its `clat` after the submitting call has
// returned), so a probe that adds nothing lies between fio's two figures
// and should match this one.
#include <fcntl.h>
#include <liburing.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

#include "probes/latency/latency_histogram.h"
#include "tests/bench/bench_util.h"

using drivewatch::LatencyHistogram;
using drivewatch::bench::CpuSeconds;

namespace {

constexpr unsigned kBlock = 4096;

int Fail(const char* what, int err) {
  std::fprintf(stderr, "read_latency_floor: %s: %s\n", what, std::strerror(err));
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s PATH RATE READS\n", argv[0]);
    return 2;
  }
  const char* path = argv[1];
  const long rate = std::atol(argv[2]);
  const long reads = std::atol(argv[3]);
  if (rate <= 0 || reads <= 0) {
    std::fprintf(stderr, "read_latency_floor: RATE and READS must be positive\n");
    return 2;
  }
  const int fd = ::open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
  if (fd < 0) return Fail(path, errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) return Fail(path, errno);
  std::uint64_t size = static_cast<std::uint64_t>(st.st_size);
  if (S_ISBLK(st.st_mode) && ::ioctl(fd, BLKGETSIZE64, &size) != 0) return Fail(path, errno);
  const std::uint64_t blocks = size / kBlock;
  if (blocks == 0) {
    std::fprintf(stderr, "read_latency_floor: %s: smaller than one 4 KiB block\n", path);
    return 1;
  }

  io_uring ring{};
  int rc = io_uring_queue_init(
      8, &ring, IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN);
  if (rc == -EINVAL) rc = io_uring_queue_init(8, &ring, 0);
  if (rc < 0) return Fail("io_uring_queue_init", -rc);
  void* buffer = nullptr;
  if (::posix_memalign(&buffer, kBlock, kBlock) != 0) return Fail("posix_memalign", ENOMEM);
  iovec iov{buffer, kBlock};
  const bool fixed = io_uring_register_buffers(&ring, &iov, 1) == 0;

  std::mt19937_64 random(0x5eed);
  std::uniform_int_distribution<std::uint64_t> pick(0, blocks - 1);
  LatencyHistogram histogram;
  const std::int64_t period_ns = 1'000'000'000 / rate;
  timespec due{};
  clock_gettime(CLOCK_MONOTONIC, &due);
  const double cpu0 = CpuSeconds();
  for (long i = 0; i < reads; ++i) {
    due.tv_nsec += period_ns;
    while (due.tv_nsec >= 1'000'000'000) {
      due.tv_nsec -= 1'000'000'000;
      ++due.tv_sec;
    }
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &due, nullptr) == EINTR) {
    }
    io_uring_sqe* sqe = io_uring_get_sqe(&ring);
    const std::uint64_t offset = pick(random) * kBlock;
    if (fixed) {
      io_uring_prep_read_fixed(sqe, fd, buffer, kBlock, offset, 0);
    } else {
      io_uring_prep_read(sqe, fd, buffer, kBlock, offset);
    }
    const auto submitted = std::chrono::steady_clock::now();
    io_uring_cqe* cqe = nullptr;
    rc = io_uring_submit_and_wait_timeout(&ring, &cqe, 1, nullptr, nullptr);
    const auto reaped = std::chrono::steady_clock::now();
    if (rc < 0) return Fail("io_uring_submit_and_wait", -rc);
    if (cqe->res != static_cast<int>(kBlock)) {
      return Fail("read", cqe->res < 0 ? -cqe->res : EIO);
    }
    io_uring_cqe_seen(&ring, cqe);
    histogram.Add(static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(reaped - submitted).count()));
  }
  const double cpu = CpuSeconds() - cpu0;
  std::printf("%.9f %.9f %.9f %.3f %llu\n", histogram.Quantile(0.5), histogram.Quantile(0.99),
              histogram.Quantile(0.999), cpu * 1e6 / static_cast<double>(histogram.count()),
              static_cast<unsigned long long>(histogram.count()));
  io_uring_queue_exit(&ring);
  std::free(buffer);
  ::close(fd);
  return 0;
}
