// SPDX-License-Identifier: Apache-2.0
// sd_notify(3) without libsystemd: one datagram to $NOTIFY_SOCKET.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

namespace drivewatch::systemd {

// Sends `state` ("READY=1", "WATCHDOG=1", "STOPPING=1", ...). Returns false
// when not run by systemd or the send failed; callers need not care.
bool Notify(std::string_view state);

// The watchdog period systemd asks for ($WATCHDOG_USEC, if $WATCHDOG_PID is
// unset or ours), or nothing when the watchdog is off.
std::optional<std::chrono::microseconds> WatchdogInterval();

}  // namespace drivewatch::systemd
