// SPDX-License-Identifier: Apache-2.0
// NVME_AEN uevents: the pure parser on datagrams as the kernel sends them,
// and the relay that turns an event into counted, immediate probe runs.
#include "exporter/async_events.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "tests/common/fake_clock.h"

namespace drivewatch {
namespace {

using std::chrono::seconds;

std::string Datagram(std::initializer_list<std::string> fields) {
  std::string out;
  for (const auto& f : fields) {
    out += f;
    out += '\0';
  }
  return out;
}

// What kernel 6.1 sends after QEMU raises a temperature-threshold event
// (nvme_aen_uevent: "NVME_AEN=%#08x"; nvme_class_uevent adds NVME_TRTYPE).
const std::string kTemperatureAen = Datagram({
    "change@/devices/pci0000:00/0000:00:04.0/nvme/nvme0",
    "ACTION=change",
    "DEVPATH=/devices/pci0000:00/0000:00:04.0/nvme/nvme0",
    "SUBSYSTEM=nvme",
    "NVME_AEN=0x020101",
    "NVME_TRTYPE=pcie",
    "MAJOR=242",
    "MINOR=0",
    "DEVNAME=nvme0",
    "SEQNUM=2712",
});

TEST(UeventTest, ParsesTheKernelFormat) {
  const auto u = ParseUevent(kTemperatureAen);
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(u->action, "change");
  EXPECT_EQ(u->devpath, "/devices/pci0000:00/0000:00:04.0/nvme/nvme0");
  EXPECT_EQ(u->env.at("NVME_AEN"), "0x020101");
  EXPECT_EQ(u->env.at("SEQNUM"), "2712");
  EXPECT_EQ(u->env.size(), 9u);
}

TEST(UeventTest, RejectsWhatIsNotAKernelUevent) {
  EXPECT_FALSE(ParseUevent(std::string_view("")).has_value());
  // udevd's re-broadcast on group 2 starts with a binary "libudev" header.
  EXPECT_FALSE(ParseUevent(Datagram({"libudev", "ACTION=change"})).has_value());
  EXPECT_FALSE(ParseUevent(Datagram({"@/devices/x"})).has_value());
  EXPECT_FALSE(ParseUevent(Datagram({"change@"})).has_value());
  EXPECT_FALSE(ParseUevent(Datagram({"change@/d", "NOEQUALS"})).has_value());
  EXPECT_FALSE(ParseUevent(Datagram({"change@/d", "=value"})).has_value());
  // Without the final NUL, and with empty values, it still parses.
  const auto u = ParseUevent(std::string_view("add@/d\0A=\0B=1", 13));
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(u->env.at("A"), "");
  EXPECT_EQ(u->env.at("B"), "1");
}

TEST(UeventTest, NvmeAenFromTheTemperatureEvent) {
  const auto event = NvmeAsyncEventFromUevent(*ParseUevent(kTemperatureAen));
  ASSERT_TRUE(event.has_value());
  EXPECT_EQ(event->kernel_name, "nvme0");
  EXPECT_EQ(event->result, 0x00020101u);
}

TEST(UeventTest, NvmeAenVariants) {
  // A SMART reliability event with the value the kernel's "%#08x" gives for
  // a full dword, and no DEVNAME: the name comes from DEVPATH.
  auto event = NvmeAsyncEventFromUevent(*ParseUevent(Datagram(
      {"change@/devices/virtual/nvme-fabrics/ctl/nvme12", "ACTION=change",
       "SUBSYSTEM=nvme", "NVME_AEN=0x00020001"})));
  ASSERT_TRUE(event.has_value());
  EXPECT_EQ(event->kernel_name, "nvme12");
  EXPECT_EQ(event->result, 0x00020001u);
  // Not ours: another subsystem, another action, no NVME_AEN, bad values.
  for (const auto& d : {
           Datagram({"change@/d/nvme0", "SUBSYSTEM=block", "NVME_AEN=0x020101"}),
           Datagram({"add@/d/nvme0", "SUBSYSTEM=nvme", "NVME_AEN=0x020101"}),
           Datagram({"change@/d/nvme0", "SUBSYSTEM=nvme"}),
           Datagram({"change@/d/nvme0", "SUBSYSTEM=nvme", "NVME_AEN=zz"}),
           Datagram({"change@/d/nvme0", "SUBSYSTEM=nvme", "NVME_AEN="}),
           Datagram({"change@/d/nvme0", "SUBSYSTEM=nvme", "NVME_AEN=-1"}),
           Datagram({"change@/d/nvme0", "SUBSYSTEM=nvme",
                     "NVME_AEN=0x100000000"}),
       }) {
    const auto u = ParseUevent(d);
    ASSERT_TRUE(u.has_value());
    EXPECT_FALSE(NvmeAsyncEventFromUevent(*u).has_value()) << d;
  }
}

// The relay, with the real DriveMonitor and scheduler on a fake clock.
class CountingProbe : public DriveProbe {
 public:
  CountingProbe(const char* name, int* runs) : name_(name), runs_(runs) {}
  const char* name() const override { return name_; }
  Status Run(Controller&, const ControllerInfo&, SampleSink&) override {
    ++*runs_;
    return Ok{};
  }

 private:
  const char* name_;
  int* runs_;
};

class OneDriveLayer : public DriveLayer {
 public:
  class Ctrl : public Controller {
   public:
    Expected<Bytes> Identify(std::uint8_t, std::uint32_t) override { return Bytes(4096); }
    Expected<Bytes> GetLogPage(std::uint8_t, std::uint32_t, std::size_t n) override {
      return Bytes(n);
    }
    Expected<FeatureValue> GetFeature(std::uint8_t, std::uint32_t, std::size_t) override {
      return FeatureValue{};
    }
  };
  Expected<std::vector<ControllerInfo>> Scan() override {
    ControllerInfo c;
    c.name = "nvme0";
    c.device = "/dev/nvme0";
    c.serial = "SN1";
    return std::vector<ControllerInfo>{c};
  }
  Expected<std::unique_ptr<Controller>> Open(const ControllerInfo&) override {
    return std::unique_ptr<Controller>(std::make_unique<Ctrl>());
  }
};

// One watched drive (SN1 at nvme0) whose health, thermal and power probes
// count their runs, after discovery and the first runs.
class AsyncEventRelayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_.state_directory = (std::filesystem::temp_directory_path() /
                               ("dw-aen-test-" + std::to_string(::getpid())))
                                  .string();
    monitor_.Start(config_);
    scheduler_.Tick();  // discovery
    scheduler_.Tick();  // first runs
    ASSERT_EQ(health_, 1);
    ASSERT_EQ(thermal_, 1);
  }
  void TearDown() override { std::filesystem::remove_all(config_.state_directory); }

  testing::FakeClock clock_;
  InlineExecutor executor_;
  Scheduler scheduler_{clock_, executor_};
  MetricStore store_;
  OneDriveLayer layer_;
  int health_ = 0, thermal_ = 0, power_ = 0;
  const std::vector<ProbeRegistration> probes_ = {
      {"health", [this] { return std::make_unique<CountingProbe>("health", &health_); },
       [](const config::Config& c) { return c.probe("health"); }},
      {"thermal", [this] { return std::make_unique<CountingProbe>("thermal", &thermal_); },
       [](const config::Config& c) { return c.probe("thermal"); }},
      {"power", [this] { return std::make_unique<CountingProbe>("power", &power_); },
       [](const config::Config& c) { return c.probe("power"); }},
  };
  config::Config config_ = config::Defaults();
  DriveMonitor monitor_{layer_, store_, scheduler_, clock_, probes_};
};

TEST_F(AsyncEventRelayTest, RunsHealthAndThermalAtOnceAndCountsByType) {
  AsyncEventRelay relay(monitor_, store_, clock_);
  clock_.Advance(seconds(5));  // well before the 60 s interval
  relay.OnEvent({"nvme0", 0x00020101});
  scheduler_.Tick();
  EXPECT_EQ(health_, 2);
  EXPECT_EQ(thermal_, 2);
  EXPECT_EQ(power_, 1);  // not one the event can change
  relay.OnEvent({"nvme0", 0x00020101});
  relay.OnEvent({"nvme0", 0x00040002});
  relay.OnEvent({"nvme9", 0x00020101});  // not watched: ignored
  scheduler_.Tick();
  const std::string text = *store_.Render();
  EXPECT_NE(text.find("drivewatch_async_events_total{event=\"temperature\","
                      "serial=\"SN1\",type=\"smart\"} 2\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("drivewatch_async_events_total{event=\"namespace_"
                      "attribute_changed\",serial=\"SN1\",type=\"notice\"} 1\n"),
            std::string::npos)
      << text;
  relay.SetListening(true);
  EXPECT_NE(store_.Render()->find("drivewatch_async_event_listener_up 1\n"),
            std::string::npos);
  relay.SetListening(std::nullopt);
  EXPECT_EQ(store_.Render()->find("drivewatch_async_event_listener_up"),
            std::string::npos);
}

TEST_F(AsyncEventRelayTest, AnEventStormLogsTheFirstFewThenASummaryAMinute) {
  std::vector<std::string> lines;
  AsyncEventRelay relay(monitor_, store_, clock_,
                        [&lines](log::Level, std::string_view l) { lines.emplace_back(l); });
  for (int i = 0; i < 300; ++i) relay.OnEvent({"nvme0", 0x00020101});
  ASSERT_EQ(lines.size(), static_cast<std::size_t>(AsyncEventRelay::kLogBurst));
  EXPECT_NE(lines[0].find("drive serial=SN1 (nvme0) raised asynchronous event 0x020101"),
            std::string::npos) << lines[0];
  clock_.Advance(AsyncEventRelay::kLogPeriod);
  relay.FlushLogs();
  ASSERT_EQ(lines.size(), AsyncEventRelay::kLogBurst + 1u);
  EXPECT_NE(lines.back().find("asynchronous events smart/temperature from drive "
                              "serial=SN1: 295 more lines like this in the last 60 s"),
            std::string::npos) << lines.back();
  // The counter still counts every event.
  EXPECT_NE(store_.Render()->find("drivewatch_async_events_total{event=\"temperature\","
                                  "serial=\"SN1\",type=\"smart\"} 300\n"),
            std::string::npos);
}

TEST(AsyncEventListenerTest, StartsAndStops) {
  AsyncEventListener listener([](const NvmeAsyncEvent&) {});
  const Status s = listener.Start();
  if (!s.ok()) {
    GTEST_SKIP() << "no netlink uevent socket here: " << s.error().message;
  }
  ASSERT_TRUE(listener.Start().ok());  // idempotent
  listener.Stop();
  listener.Stop();
}

}  // namespace
}  // namespace drivewatch
