// SPDX-License-Identifier: Apache-2.0
// A fake NVMe drive for the power-states phase's tests
// (tests/unit/aging/power_states_phase_test.cc,
// tests/integration/power_states_test.cc), described below.
#pragma once

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "probes/drive/drive_layer.h"
#include "probes/drive/features.h"
#include "probes/drive/identify.h"
#include "tests/common/recorded_drive_layer.h"

namespace drivewatch::testing {

inline const std::filesystem::path kHandmade = std::filesystem::path(DW_FIXTURE_DIR) / "handmade";

// A fake NVMe controller's state, fed with the recorded Identify Controller
// and APST table of the handmade PM981 fixture. A fake because no real part
// here can show several power states: QEMU's NVMe implements feature 02h
// with a single state, and a real drive on the test machine is not ours to
// put through its states. It keeps the power state and the APST table as
// Set Features leaves them, refuses the states in `refused` as a drive
// lacking them would (Invalid Field), serves the recorded SMART log with
// its Interval Power Measurement cleared (so the PSD estimate is the
// source), and simulates exit latency: the first read after the drive
// entered a non-operational state takes that state's EXLAT, and wakes it
// to the last operational state, as NVMe 2.0 §8.15 says.
struct FakePowerStatesDrive {
  std::mutex mu;
  Bytes id_ctrl = ReadFixture(kHandmade / "id-ctrl-HANDMADE-PM981.bin");
  Bytes smart = ReadFixture(kHandmade / "smart-log-HANDMADE-PM981.bin");
  Bytes apst_table = ReadFixture(kHandmade / "feature-HANDMADE-PM981-0c.bin");
  bool apst_enabled = true;
  int state = 3;  // as the fixture's features-HANDMADE-PM981.txt
  int operational = 0;
  std::set<int> refused;
  std::vector<std::uint32_t> set_states;  // every Set Features 02h, in order
  int apst_sets = 0;
  // Called (under mu) with every Set Features the drive takes.
  std::function<void()> on_set_features;

  FakePowerStatesDrive() { std::fill(smart.begin() + 240, smart.begin() + 244, 0); }
  IdentifyController Id() { return *DecodeIdentifyController(id_ctrl); }
  // How long a read issued now waits for the drive to leave its state.
  std::chrono::microseconds WakeForRead() {
    std::lock_guard lock(mu);
    const PowerStateDescriptor psd = Id().power_states[static_cast<std::size_t>(state)];
    if (!psd.NonOperational()) return {};
    state = operational;
    return std::chrono::microseconds{psd.exit_latency_us};
  }
};

class FakePowerStatesController : public Controller {
 public:
  explicit FakePowerStatesController(std::shared_ptr<FakePowerStatesDrive> d) : d_(std::move(d)) {}
  Expected<Bytes> Identify(std::uint8_t cns, std::uint32_t) override {
    if (cns == kIdentifyCnsController) return d_->id_ctrl;
    return Invalid("identify");
  }
  Expected<Bytes> GetLogPage(std::uint8_t lid, std::uint32_t, std::size_t length) override {
    if (lid != 0x02) return Invalid("get log page");
    std::lock_guard lock(d_->mu);
    Bytes out = d_->smart;
    out.resize(length);
    return out;
  }
  Expected<FeatureValue> GetFeature(std::uint8_t fid, std::uint32_t, std::size_t length) override {
    std::lock_guard lock(d_->mu);
    if (fid == kFeaturePowerManagement) return FeatureValue{std::uint32_t(d_->state), {}};
    if (fid == kFeatureAutonomousPowerStateTransition && length == kApstTableSize) {
      return FeatureValue{d_->apst_enabled ? 1u : 0u, d_->apst_table};
    }
    return Invalid("get features");
  }
  Expected<std::uint32_t> SetFeature(std::uint8_t fid, std::uint32_t cdw11) override {
    std::lock_guard lock(d_->mu);
    if (fid != kFeaturePowerManagement) return Invalid("set features");
    d_->set_states.push_back(cdw11);
    if (d_->on_set_features) d_->on_set_features();
    const int ps = static_cast<int>(cdw11 & 0x1f);
    if (ps >= d_->Id().PowerStateCount() || d_->refused.count(ps)) return Invalid("set features");
    d_->state = ps;
    if (!d_->Id().power_states[static_cast<std::size_t>(ps)].NonOperational()) d_->operational = ps;
    return 0u;
  }
  Expected<std::uint32_t> SetFeatureWithData(std::uint8_t fid, std::uint32_t cdw11,
                                             const Bytes& data) override {
    std::lock_guard lock(d_->mu);
    if (fid != kFeatureAutonomousPowerStateTransition || data.size() != kApstTableSize) {
      return Invalid("set features");
    }
    if (d_->on_set_features) d_->on_set_features();
    d_->apst_enabled = (cdw11 & 1) != 0;
    d_->apst_table = data;
    ++d_->apst_sets;
    return 0u;
  }

 private:
  static Error Invalid(const std::string& what) {
    return Error{0, 0x4002, "fake: " + what + ": Invalid Field in Command (0x4002)"};
  }
  std::shared_ptr<FakePowerStatesDrive> d_;
};

}  // namespace drivewatch::testing
