// SPDX-License-Identifier: Apache-2.0
// When a scheduled heavy phase is due (config::PhaseSchedule), as a pure
// function of the last run's start and the current time, in the host's
// local time zone (TZ), so tests drive it with a fake clock.
//   interval: due when `interval` has passed since the last run started,
//     or at once when it never ran;
//   window:   due while now is inside today's window (or inside last
//     night's window that wraps past midnight) on one of its weekdays (the
//     day the window opens), unless a run already started in this
//     occurrence of the window.
// A run that was refused or aborted counts as the run of its interval or
// window: a drive that refuses is not retried every minute.
#pragma once

#include <chrono>
#include <optional>

#include "config/config.h"

namespace drivewatch::aging {

bool PhaseDue(const config::PhaseSchedule& schedule,
              std::optional<std::chrono::system_clock::time_point> last_start,
              std::chrono::system_clock::time_point now);

}  // namespace drivewatch::aging
