// SPDX-License-Identifier: Apache-2.0
// stall_witness: records when the guest could not run anything, for the
// aging VM scenario's S7 (tests/vm/aging). Runs in the guest:
//
//   stall_witness PERIOD_MS OUT
//
// It sleeps to absolute deadlines PERIOD_MS apart (CLOCK_MONOTONIC) until
// SIGINT or SIGTERM, and writes to OUT every wake-up that came more than
// PERIOD_MS late:
//   # realtime_s late_s (period P s, W wake-ups, the latest L s late)
//   T LATE
// T is the wake-up's time on CLOCK_REALTIME (fio's --log_unix_epoch clock
// and the run record's), LATE how long after its deadline it woke. Exits 0
// once OUT is written, 2 on a usage or write error.
//
// Why: S7 compares the slowest read of drivewatch's cell with fio's slowest,
// each the only one of its kind among ~26 reads. When the guest stops as a
// whole (its one vCPU or QEMU's main loop kept waiting: 70 to 110 ms were
// seen on a loaded host), every read due in that time completes late, each
// by a different amount depending on when it was due, so the two slowest
// reads can differ by up to the stall. The witness measures the stall, so
// that the p99 comparison allows exactly that much more.
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <utility>
#include <vector>

namespace {

volatile std::sig_atomic_t g_stop = 0;

void OnSignal(int) { g_stop = 1; }

double Seconds(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

int main(int argc, char** argv) {
  char* end = nullptr;
  const long period_ms = argc == 3 ? std::strtol(argv[1], &end, 10) : 0;
  if (argc != 3 || end == argv[1] || *end != '\0' || period_ms <= 0 || period_ms > 1000) {
    std::fprintf(stderr, "usage: stall_witness PERIOD_MS OUT (PERIOD_MS 1..1000)\n");
    return 2;
  }
  struct sigaction sa {};
  sa.sa_handler = OnSignal;  // no SA_RESTART: the sleep returns EINTR
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  const long period_ns = period_ms * 1'000'000L;
  const double period = static_cast<double>(period_ms) / 1000.0;
  std::vector<std::pair<double, double>> late;  // (realtime, seconds late)
  double latest = 0;
  long wakeups = 0;
  timespec deadline{};
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  while (g_stop == 0) {
    deadline.tv_nsec += period_ns;
    while (deadline.tv_nsec >= 1'000'000'000L) {
      deadline.tv_nsec -= 1'000'000'000L;
      ++deadline.tv_sec;
    }
    if (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, nullptr) == EINTR) continue;
    ++wakeups;
    const double lateness =
        Seconds(CLOCK_MONOTONIC) -
        (static_cast<double>(deadline.tv_sec) + static_cast<double>(deadline.tv_nsec) * 1e-9);
    if (lateness > latest) latest = lateness;
    if (lateness > period) {
      late.emplace_back(Seconds(CLOCK_REALTIME), lateness);
      // Start again from now: one stall is one line, not one per missed period.
      clock_gettime(CLOCK_MONOTONIC, &deadline);
    }
  }
  std::FILE* f = std::fopen(argv[2], "w");
  if (f == nullptr) {
    std::fprintf(stderr, "stall_witness: cannot write %s: %s\n", argv[2], std::strerror(errno));
    return 2;
  }
  std::fprintf(f, "# realtime_s late_s (period %.3f s, %ld wake-ups, the latest %.6f s late)\n",
               period, wakeups, latest);
  for (const auto& [t, l] : late) std::fprintf(f, "%.6f %.6f\n", t, l);
  if (std::fclose(f) != 0) {
    std::fprintf(stderr, "stall_witness: cannot write %s: %s\n", argv[2], std::strerror(errno));
    return 2;
  }
  return 0;
}
