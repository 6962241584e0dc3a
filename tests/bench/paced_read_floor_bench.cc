// SPDX-License-Identifier: Apache-2.0
// The floor under the read latency probe's CPU cost on this machine: what
// paced 4 KiB O_DIRECT reads cost however they are arranged, with none of
// drivewatch's code in the way. It answers whether a design can bring the
// daemon_cost_bench figure (8 drives at the defaults) under a goal before
// anyone builds that design.
//
// Modes, each over `--drives` loop devices (--direct-io=on over 64 MiB
// files in /var/tmp; needs root) at `--rate` reads per second per drive:
//   sleep   no I/O: one thread sleeping to absolute CLOCK_MONOTONIC
//           deadlines at drives x rate wake-ups per second; the cost of the
//           wake-ups alone, which any design that times each read must pay
//           at least once per read turn;
//   thread  today's shape: a thread and a ring per drive, clock_nanosleep to
//           each read's deadline, then one io_uring_submit_and_wait;
//   ring    one thread and one ring for every drive, all drives on one
//           aligned schedule: one wake-up submits every drive's read, and
//           completions are reaped (each timestamped) while waiting for the
//           next deadline (io_uring_wait_cqe_timeout).
// Each prints CPU (getrusage, user + system) per read and per minute.
//
//   build/tests/paced_read_floor_bench [--seconds=10] [--rate=44]
//                                      [--drives=8] [--rounds=5]
// Rounds run the modes interleaved (sleep, thread, ring, sleep, ...), and
// the medians come last.
#include <fcntl.h>
#include <liburing.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/bench/bench_util.h"
#include "tests/integration/loop_device.h"

namespace {

using drivewatch::bench::CpuSeconds;
using drivewatch::bench::Flag;
using drivewatch::bench::NowNs;
using drivewatch::bench::Relative;
using drivewatch::bench::SleepUntilNs;

constexpr unsigned kBlock = 4096;
constexpr std::uint64_t kBlocks = (64u << 20) / kBlock;

struct Result {
  long long reads = 0;  // wake-ups, in sleep mode
  double cpu = 0;
};

Result SleepOnly(double seconds, double per_second) {
  const long long period = static_cast<long long>(1e9 / per_second);
  const double cpu0 = CpuSeconds();
  const long long end = NowNs() + static_cast<long long>(seconds * 1e9);
  Result r;
  for (long long next = NowNs() + period; next < end; next += period) {
    SleepUntilNs(next);
    ++r.reads;
  }
  r.cpu = CpuSeconds() - cpu0;
  return r;
}

Result ThreadPerDrive(double seconds, double rate, const std::vector<std::string>& devices) {
  const long long period = static_cast<long long>(1e9 / rate);
  std::vector<long long> reads(devices.size());
  std::vector<io_uring> rings(devices.size());
  std::vector<int> fds;
  std::vector<void*> buffers;
  for (std::size_t i = 0; i < devices.size(); ++i) {  // set up before the clock starts
    fds.push_back(::open(devices[i].c_str(), O_RDONLY | O_DIRECT));
    io_uring_queue_init(4, &rings[i], 0);
    void* b = nullptr;
    if (posix_memalign(&b, kBlock, kBlock) != 0) std::abort();
    buffers.push_back(b);
  }
  const double cpu0 = CpuSeconds();
  const long long start = NowNs(), end = start + static_cast<long long>(seconds * 1e9);
  {
    std::vector<std::jthread> threads;
    for (std::size_t i = 0; i < devices.size(); ++i) {
      threads.emplace_back([&, i] {
        std::mt19937_64 rng(i + 1);
        for (long long next = start + period; next < end; next += period) {
          SleepUntilNs(next);
          io_uring_sqe* sqe = io_uring_get_sqe(&rings[i]);
          io_uring_prep_read(sqe, fds[i], buffers[i], kBlock, rng() % kBlocks * kBlock);
          io_uring_cqe* cqe = nullptr;
          __kernel_timespec timeout = Relative(5'000'000'000LL);
          if (io_uring_submit_and_wait_timeout(&rings[i], &cqe, 1, &timeout, nullptr) >= 0 && cqe) {
            NowNs();  // the completion's timestamp
            io_uring_cqe_seen(&rings[i], cqe);
            ++reads[i];
          }
        }
      });
    }
  }
  Result r;
  r.cpu = CpuSeconds() - cpu0;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    r.reads += reads[i];
    io_uring_queue_exit(&rings[i]);
    ::close(fds[i]);
    std::free(buffers[i]);
  }
  return r;
}

Result OneRing(double seconds, double rate, const std::vector<std::string>& devices) {
  const long long period = static_cast<long long>(1e9 / rate);
  io_uring ring;
  io_uring_queue_init(64, &ring, 0);
  std::vector<int> fds;
  for (const auto& d : devices) fds.push_back(::open(d.c_str(), O_RDONLY | O_DIRECT));
  void* buffer = nullptr;
  if (posix_memalign(&buffer, kBlock, kBlock * devices.size()) != 0) std::abort();
  std::mt19937_64 rng(1);
  Result r;
  int in_flight = 0;
  const auto reap = [&](io_uring_cqe* cqe) {
    NowNs();  // the completion's timestamp
    io_uring_cqe_seen(&ring, cqe);
    --in_flight;
    ++r.reads;
  };
  const double cpu0 = CpuSeconds();
  const long long start = NowNs(), end = start + static_cast<long long>(seconds * 1e9);
  for (long long next = start + period; next < end; next += period) {
    for (long long now = NowNs(); now < next; now = NowNs()) {
      io_uring_cqe* cqe = nullptr;
      __kernel_timespec timeout = Relative(next - now);
      if (io_uring_wait_cqe_timeout(&ring, &cqe, &timeout) == 0 && cqe) reap(cqe);
    }
    for (std::size_t i = 0; i < fds.size(); ++i) {
      io_uring_sqe* sqe = io_uring_get_sqe(&ring);
      io_uring_prep_read(sqe, fds[i], static_cast<char*>(buffer) + i * kBlock, kBlock,
                         rng() % kBlocks * kBlock);
      ++in_flight;
    }
    NowNs();  // the submissions' timestamp
    io_uring_submit(&ring);
  }
  while (in_flight > 0) {
    io_uring_cqe* cqe = nullptr;
    if (io_uring_wait_cqe(&ring, &cqe) == 0) reap(cqe);
  }
  r.cpu = CpuSeconds() - cpu0;
  io_uring_queue_exit(&ring);
  for (int fd : fds) ::close(fd);
  std::free(buffer);
  return r;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = Flag(argc, argv, "seconds", 10);
  const double rate = Flag(argc, argv, "rate", 44);
  const int drives = static_cast<int>(Flag(argc, argv, "drives", 8));
  const int rounds = static_cast<int>(Flag(argc, argv, "rounds", 5));
  if (::geteuid() != 0) {
    std::fprintf(stderr, "paced_read_floor_bench: needs root (loop devices)\n");
    return 2;
  }
  // Written through, not sparse: a read of a hole would reach no blocks.
  std::vector<std::unique_ptr<drivewatch::testing::LoopDevice>> loops;
  std::vector<std::string> devices;
  const std::vector<char> chunk(1 << 20, 0x5a);
  for (int d = 0; d < drives; ++d) {
    auto loop = std::make_unique<drivewatch::testing::LoopDevice>(64);
    if (loop->device().empty()) {
      std::fprintf(stderr, "paced_read_floor_bench: no loop device for drive %d\n", d);
      return 2;
    }
    {
      std::ofstream out(loop->backing(), std::ios::binary);
      for (int m = 0; m < 64; ++m) out.write(chunk.data(), static_cast<long>(chunk.size()));
    }
    devices.push_back(loop->device());
    loops.push_back(std::move(loop));
  }
  ::sync();

  std::map<std::string, std::vector<double>> per_read_us, per_minute_ms;
  const auto note = [&](const char* mode, int round, const Result& r) {
    const double us = r.reads ? r.cpu * 1e6 / static_cast<double>(r.reads) : 0;
    const double ms = r.cpu * 1e3 * 60 / seconds;
    per_read_us[mode].push_back(us);
    per_minute_ms[mode].push_back(ms);
    std::printf("round %d %-6s %7lld %s  cpu %6.1f ms  %6.2f us each  %6.0f ms per minute\n",
                round, mode, r.reads, std::string(mode) == "sleep" ? "wake-ups" : "reads   ",
                r.cpu * 1e3, us, ms);
    std::fflush(stdout);
  };
  for (int round = 1; round <= rounds; ++round) {
    note("sleep", round, SleepOnly(seconds, rate * drives));
    note("thread", round, ThreadPerDrive(seconds, rate, devices));
    note("ring", round, OneRing(seconds, rate, devices));
  }
  std::printf("medians over %d rounds, %d drives at %.0f reads/s each (%.0f/s in all):\n", rounds,
              drives, rate, rate * drives);
  for (const char* mode : {"sleep", "thread", "ring"}) {
    std::printf("  %-6s %6.2f us per %s, %6.0f ms CPU per minute\n", mode,
                Median(per_read_us[mode]), std::string(mode) == "sleep" ? "wake-up" : "read",
                Median(per_minute_ms[mode]));
  }
  return 0;
}
