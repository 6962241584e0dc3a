// SPDX-License-Identifier: Apache-2.0
#include "exporter/async_events.h"

#include <linux/netlink.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <utility>

#include "config/util/log.h"
#include "config/util/text.h"
#include "probes/drive/features.h"

namespace drivewatch {
namespace {

constexpr MetricDesc kAsyncEvents{
    "drivewatch_async_events_total",
    "NVMe asynchronous events the kernel reported for the drive (NVME_AEN "
    "uevents) since drivewatch started, by AER type (error, smart, notice, "
    "io_command_set, vendor) and event (e.g. temperature, reliability, "
    "spare_below_threshold for type smart). Each one makes the health and "
    "thermal probes run on the drive at once.",
    MetricType::kCounter};
constexpr MetricDesc kListenerUp{
    "drivewatch_async_event_listener_up",
    "1 if drivewatch listens for the kernel's NVMe asynchronous event "
    "uevents, 0 if it could not open the netlink socket and relies on "
    "polling alone. Absent when [probes.thermal] async_events is false.",
    MetricType::kGauge};

const MetricDesc* const kAllMetrics[] = {&kAsyncEvents, &kListenerUp};

// The probes whose data an asynchronous event can change.
const std::vector<std::string> kProbesToRun = {"health", "thermal"};

}  // namespace

std::optional<Uevent> ParseUevent(std::span<const char> datagram) {
  std::string_view rest(datagram.data(), datagram.size());
  auto next = [&]() -> std::optional<std::string_view> {
    if (rest.empty()) return std::nullopt;
    const auto nul = rest.find('\0');
    std::string_view field = rest.substr(0, nul);
    rest = nul == std::string_view::npos ? std::string_view{}
                                          : rest.substr(nul + 1);
    return field;
  };
  const auto header = next();
  if (!header) return std::nullopt;
  const auto at = header->find('@');
  if (at == std::string_view::npos || at == 0 || at + 1 == header->size()) {
    return std::nullopt;  // "libudev" and other non-kernel formats
  }
  Uevent uevent;
  uevent.action = std::string(header->substr(0, at));
  uevent.devpath = std::string(header->substr(at + 1));
  while (const auto field = next()) {
    if (field->empty()) continue;  // trailing NULs
    const auto eq = field->find('=');
    if (eq == std::string_view::npos || eq == 0) return std::nullopt;
    uevent.env[std::string(field->substr(0, eq))] =
        std::string(field->substr(eq + 1));
  }
  return uevent;
}

std::optional<NvmeAsyncEvent> NvmeAsyncEventFromUevent(const Uevent& uevent) {
  const auto subsystem = uevent.env.find("SUBSYSTEM");
  const auto aen = uevent.env.find("NVME_AEN");
  if (uevent.action != "change" || subsystem == uevent.env.end() ||
      subsystem->second != "nvme" || aen == uevent.env.end()) {
    return std::nullopt;
  }
  const std::string& text = aen->second;
  char* end = nullptr;
  errno = 0;
  const unsigned long value = std::strtoul(text.c_str(), &end, 16);
  if (text.empty() || *end != '\0' || errno != 0 || value > 0xffffffffUL ||
      text[0] == '-' || text[0] == '+') {
    return std::nullopt;
  }
  NvmeAsyncEvent event;
  event.result = static_cast<std::uint32_t>(value);
  if (const auto devname = uevent.env.find("DEVNAME");
      devname != uevent.env.end() && !devname->second.empty()) {
    event.kernel_name = devname->second;
    // DEVNAME may be a path below /dev.
    event.kernel_name = event.kernel_name.substr(
        event.kernel_name.rfind('/') + 1);
  } else {
    event.kernel_name = uevent.devpath.substr(uevent.devpath.rfind('/') + 1);
  }
  if (event.kernel_name.empty()) return std::nullopt;
  return event;
}

AsyncEventRelay::AsyncEventRelay(DriveMonitor& monitor, MetricStore& store,
                                 const Clock& clock, LogLimiter::Sink log_sink)
    : monitor_(monitor),
      store_(store),
      log_limiter_(clock, kLogBurst, kLogPeriod, std::move(log_sink)) {}

std::span<const MetricDesc* const> AsyncEventRelay::Metrics() {
  return kAllMetrics;
}

void AsyncEventRelay::OnEvent(const NvmeAsyncEvent& event) {
  const AsyncEvent aen = DecodeAsyncEvent(event.result);
  const auto serial = monitor_.RunProbesSoon(event.kernel_name, kProbesToRun);
  const std::string hex = util::Hex(event.result, 6, "0x");
  if (!serial) {
    log::Debug(std::string("asynchronous event ") + hex + " from " +
               event.kernel_name + ", which is not a watched drive; ignored");
    return;
  }
  log_limiter_.Write(
      log::Level::kInfo,
      "asynchronous events " + std::string(aen.TypeName()) + "/" +
          aen.InfoName() + " from drive serial=" + *serial,
      "drive serial=" + *serial + " (" + event.kernel_name +
          ") raised asynchronous event " + hex + " (type " + aen.TypeName() +
          ", " + aen.InfoName() + ", log page " +
          std::to_string(aen.log_page) + "); running health and thermal now");
  std::vector<Sample> samples;
  {
    std::lock_guard lock(mu_);
    auto& counts = counts_[*serial];
    counts[{aen.TypeName(), aen.InfoName()}] += 1;
    for (const auto& [key, count] : counts) {
      samples.push_back({&kAsyncEvents,
                         {{"serial", *serial},
                          {"type", key.first},
                          {"event", key.second}},
                         count});
    }
  }
  store_.Publish(*serial + "/async_events", std::move(samples));
}

void AsyncEventRelay::SetListening(std::optional<bool> listening) {
  if (!listening) {
    store_.Remove("exporter/async_events");
    return;
  }
  store_.Publish("exporter/async_events",
                 {{&kListenerUp, {}, *listening ? 1.0 : 0.0}});
}

AsyncEventListener::AsyncEventListener(Handler handler)
    : handler_(std::move(handler)) {}

AsyncEventListener::~AsyncEventListener() { Stop(); }

Status AsyncEventListener::Start() {
  if (thread_.joinable()) return Ok{};
  const int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC,
                        NETLINK_KOBJECT_UEVENT);
  if (fd < 0) {
    const int err = errno;
    return Error{err, -1,
                 std::string("netlink uevent socket: ") + std::strerror(err)};
  }
  sockaddr_nl addr{};
  addr.nl_family = AF_NETLINK;
  addr.nl_groups = 1;  // the kernel's uevents (udevd re-broadcasts on 2)
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int err = errno;
    close(fd);
    return Error{err, -1,
                 std::string("netlink uevent socket: bind: ") +
                     std::strerror(err)};
  }
  const int wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0) {
    const int err = errno;
    close(fd);
    return Error{err, -1, std::string("eventfd: ") + std::strerror(err)};
  }
  socket_fd_ = fd;
  wake_fd_ = wake;
  thread_ = std::thread([this] { Loop(); });
  return Ok{};
}

void AsyncEventListener::Stop() {
  if (!thread_.joinable()) return;
  const std::uint64_t one = 1;
  [[maybe_unused]] auto n = write(wake_fd_, &one, sizeof(one));
  thread_.join();
  close(socket_fd_);
  close(wake_fd_);
  socket_fd_ = wake_fd_ = -1;
}

void AsyncEventListener::Loop() {
  // A uevent is at most UEVENT_BUFFER_SIZE (2048) bytes of environment
  // plus its header.
  char buf[8192];
  for (;;) {
    pollfd fds[2] = {{socket_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      log::Error(std::string("netlink uevent listener: poll: ") +
                 std::strerror(errno) + "; asynchronous events now wait for "
                 "the next poll");
      return;
    }
    if (fds[1].revents != 0) return;
    if (fds[0].revents == 0) continue;
    sockaddr_nl from{};
    iovec iov{buf, sizeof(buf)};
    msghdr msg{};
    msg.msg_name = &from;
    msg.msg_namelen = sizeof(from);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    const ssize_t n = recvmsg(socket_fd_, &msg, MSG_DONTWAIT);
    if (n < 0) {
      // ENOBUFS: the socket overflowed during an event storm; later events
      // still arrive, and polling covers what was lost.
      if (errno != EAGAIN && errno != EINTR && errno != ENOBUFS) {
        log::Warn(std::string("netlink uevent listener: recv: ") +
                  std::strerror(errno));
      }
      continue;
    }
    // Only the kernel (port 0) speaks for the hardware.
    if (from.nl_pid != 0 || (msg.msg_flags & MSG_TRUNC) != 0) continue;
    const auto uevent =
        ParseUevent(std::span<const char>(buf, static_cast<std::size_t>(n)));
    if (!uevent) continue;
    if (const auto event = NvmeAsyncEventFromUevent(*uevent)) {
      handler_(*event);
    }
  }
}

}  // namespace drivewatch
