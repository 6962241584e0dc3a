// SPDX-License-Identifier: Apache-2.0
// What the benchmarks under tests/bench share: the process's CPU time,
// their --name=value flags, CLOCK_MONOTONIC readings and sleeps, and
// relative timeouts for io_uring.
#pragma once

#include <linux/time_types.h>
#include <sys/resource.h>
#include <time.h>

#include <cerrno>

#include <cstdlib>
#include <string>

namespace drivewatch::bench {

// User + system CPU seconds of the process so far, every thread.
inline double CpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// The value of --`name`=VALUE among the arguments, or `def`.
inline double Flag(int argc, char** argv, const std::string& name, double def) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--" + name + "=", 0) == 0) return std::atof(a.c_str() + name.size() + 3);
  }
  return def;
}

// CLOCK_MONOTONIC now, in nanoseconds.
inline long long NowNs() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1'000'000'000LL + t.tv_nsec;
}

// `ns` nanoseconds as io_uring takes a relative timeout.
inline __kernel_timespec Relative(long long ns) {
  return {ns / 1'000'000'000LL, ns % 1'000'000'000LL};
}

// Sleeps until the absolute CLOCK_MONOTONIC time `deadline` (ns).
inline void SleepUntilNs(long long deadline) {
  const timespec ts{static_cast<time_t>(deadline / 1'000'000'000LL), deadline % 1'000'000'000LL};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

}  // namespace drivewatch::bench
