// SPDX-License-Identifier: Apache-2.0
// When a heavy phase must stop early (DESIGN.md decision 8), checked at
// least every second while it runs:
//   - the composite temperature within `margin` kelvins of WCTEMP or, when
//     host controlled thermal management is on, of TMT1 (the drive would
//     soon throttle: the results would measure heat, not the drive, and
//     the heat is ours);
//   - a critical-warning bit that was clear when the phase started;
//   - the phase's max_duration exceeded.
// SIGTERM and a reload that removes the phase stop it through its stop
// token instead. The temperature and warnings come from a HealthSource:
// an NVMe namespace's own descriptor in drivewatch (NvmeHealthSource), a
// scripted one in tests (no real part heats up on cue).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "config/util/expected.h"

namespace drivewatch::aging {

struct HealthReading {
  std::uint16_t composite_k = 0;
  std::uint8_t critical_warning = 0;
  std::uint16_t wctemp_k = 0;  // 0: the drive reports none
  std::uint16_t tmt1_k = 0;    // 0: host controlled thermal management off
};

class HealthSource {
 public:
  virtual ~HealthSource() = default;
  virtual Expected<HealthReading> Read() = 0;
};

// Identify Controller once (WCTEMP), then SMART / Health (02h) and Get
// Features 10h (HCTM) on each Read, through admin passthrough on `fd`, an
// open NVMe namespace block device.
std::unique_ptr<HealthSource> NvmeHealthSource(int fd);

class AbortConditions {
 public:
  // `health` may be null (a file target, a non-NVMe device): then only
  // the duration is checked.
  AbortConditions(std::unique_ptr<HealthSource> health, double margin_k,
                  std::chrono::steady_clock::duration max_duration,
                  std::chrono::steady_clock::time_point start);

  // Reads the warnings present at the start, so only new ones abort.
  Status Start();
  // The reason to abort now ("composite temperature 341 K is within 5 K of
  // WCTEMP 343 K"), or nullopt. A failed health read is not a reason by
  // itself (the drive may be busy); three in a row are.
  std::optional<std::string> Check(std::chrono::steady_clock::time_point now);
  // The last reading, for the record.
  const std::optional<HealthReading>& last() const { return last_; }

 private:
  std::unique_ptr<HealthSource> health_;
  double margin_k_;
  std::chrono::steady_clock::duration max_duration_;
  std::chrono::steady_clock::time_point start_;
  std::uint8_t warnings_at_start_ = 0;
  int failed_reads_ = 0;
  std::optional<HealthReading> last_;
};

}  // namespace drivewatch::aging
