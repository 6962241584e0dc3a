// SPDX-License-Identifier: Apache-2.0
// Finding the SLC cache in a throughput series. A consumer drive writes
// into a fast pseudo-SLC cache first; once the cache is full, writes go
// to TLC/QLC directly (or while the drive folds the cache) and throughput
// drops to a lower, often noisier level. A review reads the cache size off
// the 1-second throughput series of a sequential fill of an empty drive as
// the bytes written until throughput stays down. This file is that
// reading, as a pure function, so it is tested on synthetic and recorded
// series alone.
//
// The method, with the parameters in SlcDetectionParams:
//  1. Smooth: m[i] is the median of the samples within median_window
//     centred on i (truncated at the ends). A median, not a mean, so one
//     slow second (a garbage-collection hiccup) or one fast one does not
//     move it; centred, because the analysis runs on the finished series
//     and a trailing window would place a step median_window/2 late.
//  2. Plateau: the highest m[i] over the first plateau_search of the run.
//     The highest, so a short cache still sets the plateau; of the
//     median, so a single spike cannot.
//  3. Drop: the first i from which m stays below drop_fraction x plateau
//     for at least `sustain`. A dip shorter than that is noise; a series
//     that never drops that long (no cache, or a cache larger than what
//     was written) has no drop, and the result says so rather than
//     guessing.
//  4. Size: the bytes written before the drop. The second the cache ran
//     out in is partly fast and partly slow; the seconds around the
//     boundary are split by time at the plateau ("before") and the slow
//     ("after") level so that the size is not quantised to a second's
//     worth of writes.
// Limits: the throughput "before" is measured on this run, so a drive that
// starts with a part-full cache reports the part that was free. A drive
// whose cache shrinks as it fills (dynamic SLC) reports the cache at this
// fill level. A series with fewer than `sustain` seconds after the drop
// reports no drop.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace drivewatch::aging {

struct SlcDetectionParams {
  double drop_fraction = 0.6;
  std::chrono::seconds sustain{10};
  std::chrono::seconds median_window{5};
  std::chrono::seconds plateau_search{30};
};

struct SlcDetection {
  // True when a sustained drop was found; otherwise cache_bytes is all
  // bytes of the series (the cache is at least that big, or absent: a
  // flat series from a drive without a cache looks the same, and
  // before_bytes_per_second then equals the whole run's level).
  bool exhausted = false;
  double cache_bytes = 0;
  double seconds_to_exhaust = 0;      // time at the fast level
  double plateau_bytes_per_second = 0;  // step 2
  double before_bytes_per_second = 0;   // mean before the drop
  double after_bytes_per_second = 0;    // median after it (0 without one)
  std::size_t drop_index = 0;           // first sample of the slow stage
};

// `bytes_per_second` holds one sample per second, oldest first.
SlcDetection DetectSlcCache(const std::vector<double>& bytes_per_second,
                            const SlcDetectionParams& params = {});

}  // namespace drivewatch::aging
