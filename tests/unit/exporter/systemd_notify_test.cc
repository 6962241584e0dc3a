// SPDX-License-Identifier: Apache-2.0
#include "exporter/systemd_notify.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace drivewatch {
namespace {

// A real AF_UNIX datagram socket standing in for systemd's notify socket.
class NotifySocket {
 public:
  NotifySocket() {
    path_ = ::testing::TempDir() + "dw-notify-" + std::to_string(::getpid());
    ::unlink(path_.c_str());
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    path_.copy(addr.sun_path, sizeof(addr.sun_path) - 1);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  }
  ~NotifySocket() {
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  std::string Receive() {
    char buf[256];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

TEST(SystemdNotifyTest, SendsStateToTheNotifySocket) {
  NotifySocket socket;
  ::setenv("NOTIFY_SOCKET", socket.path().c_str(), 1);
  EXPECT_TRUE(systemd::Notify("READY=1"));
  EXPECT_EQ(socket.Receive(), "READY=1");
  ::unsetenv("NOTIFY_SOCKET");
  EXPECT_FALSE(systemd::Notify("READY=1"));
}

TEST(SystemdNotifyTest, WatchdogIntervalFollowsTheEnvironment) {
  ::unsetenv("WATCHDOG_PID");
  ::setenv("WATCHDOG_USEC", "30000000", 1);
  ASSERT_TRUE(systemd::WatchdogInterval().has_value());
  EXPECT_EQ(*systemd::WatchdogInterval(), std::chrono::seconds(30));
  ::setenv("WATCHDOG_PID", std::to_string(::getpid() + 1).c_str(), 1);
  EXPECT_FALSE(systemd::WatchdogInterval().has_value()) << "meant for another process";
  ::setenv("WATCHDOG_PID", std::to_string(::getpid()).c_str(), 1);
  EXPECT_TRUE(systemd::WatchdogInterval().has_value());
  ::setenv("WATCHDOG_USEC", "soon", 1);
  EXPECT_FALSE(systemd::WatchdogInterval().has_value());
  ::unsetenv("WATCHDOG_USEC");
  ::unsetenv("WATCHDOG_PID");
  EXPECT_FALSE(systemd::WatchdogInterval().has_value());
}

}  // namespace
}  // namespace drivewatch
