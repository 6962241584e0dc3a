// SPDX-License-Identifier: Apache-2.0
// Instant alerts: the kernel's NVMe driver turns each Asynchronous Event
// Request completion it does not handle itself (SMART / health, error,
// vendor events) into a KOBJ_CHANGE uevent on the controller's device,
// carrying NVME_AEN=<completion dword 0> (drivers/nvme/host/core.c,
// nvme_aen_uevent). drivewatch listens for those on a
// NETLINK_KOBJECT_UEVENT socket, counts them per drive and type, and runs
// the health and thermal probes on that drive at once instead of at their
// next interval. The async_events probe (probes/async_event_probe.h) makes
// the drive send temperature and health events in the first place.
//
// Listening needs no privilege (the kernel lets anyone join the uevent
// multicast group) but does need AF_NETLINK, which a sandbox may deny; then
// drivewatch says so once and relies on polling.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "config/util/expected.h"
#include "exporter/clock.h"
#include "exporter/drive_monitor.h"
#include "exporter/log_limiter.h"
#include "exporter/metric_store.h"

namespace drivewatch {

// A kernel uevent datagram: "ACTION@DEVPATH\0KEY=VALUE\0KEY=VALUE\0...".
struct Uevent {
  std::string action;
  std::string devpath;
  std::map<std::string, std::string> env;
};

// Parses one datagram as the kernel sends it. nullopt for anything else,
// including udevd's re-broadcasts (which start "libudev\0"), a missing
// '@' header or an entry without '='.
std::optional<Uevent> ParseUevent(std::span<const char> datagram);

// An NVMe AEN as the kernel reports it.
struct NvmeAsyncEvent {
  std::string kernel_name;  // the controller, "nvme0"
  std::uint32_t result = 0; // AER completion dword 0
};

// The NVMe AEN a uevent carries: SUBSYSTEM=nvme, ACTION=change and a
// NVME_AEN=0x... value (the kernel prints it with "%#08x"). The controller
// is DEVNAME, or the last DEVPATH component. nullopt for any other uevent.
std::optional<NvmeAsyncEvent> NvmeAsyncEventFromUevent(const Uevent& uevent);

// Counts events per drive and type and asks the monitor to run the health
// and thermal probes on the drive at once. Publishes
// drivewatch_async_events_total and drivewatch_async_event_listener_up.
class AsyncEventRelay {
 public:
  // Event log lines go through a LogLimiter on `clock` into `log_sink`: at
  // most kLogBurst a minute per drive and event kind, then a summary a
  // minute (the counter still counts every event).
  AsyncEventRelay(DriveMonitor& monitor, MetricStore& store, const Clock& clock,
                  LogLimiter::Sink log_sink = log::Write);
  // Any thread.
  void OnEvent(const NvmeAsyncEvent& event);
  // Whether the listener runs; publishes the gauge (nothing when
  // `listening` is nullopt: async events are switched off).
  void SetListening(std::optional<bool> listening);

  static std::span<const MetricDesc* const> Metrics();

  // Writes the summaries of event storms whose minute has ended. The daemon
  // calls it every kLogFlushInterval.
  void FlushLogs() { log_limiter_.Flush(); }

  static constexpr int kLogBurst = 5;
  static constexpr std::chrono::seconds kLogPeriod{60};
  static constexpr std::chrono::seconds kLogFlushInterval{10};

 private:
  DriveMonitor& monitor_;
  MetricStore& store_;
  LogLimiter log_limiter_;
  std::mutex mu_;
  // serial -> (type, event) -> count
  std::map<std::string, std::map<std::pair<std::string, std::string>, double>>
      counts_;
};

// The netlink listener: one thread blocked in poll(2) on the uevent socket
// and an eventfd that Stop() signals.
class AsyncEventListener {
 public:
  using Handler = std::function<void(const NvmeAsyncEvent&)>;
  explicit AsyncEventListener(Handler handler);
  ~AsyncEventListener();
  AsyncEventListener(const AsyncEventListener&) = delete;
  AsyncEventListener& operator=(const AsyncEventListener&) = delete;

  // Opens and binds the socket and starts the thread. Fails (nothing
  // started) when the socket cannot be opened, e.g. EAFNOSUPPORT under a
  // RestrictAddressFamilies= that lacks AF_NETLINK.
  Status Start();
  // Stops and joins the thread. Idempotent.
  void Stop();

 private:
  void Loop();

  Handler handler_;
  int socket_fd_ = -1;
  int wake_fd_ = -1;
  std::thread thread_;
};

}  // namespace drivewatch
