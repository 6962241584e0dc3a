// SPDX-License-Identifier: Apache-2.0
// A fake controller for the exporter tests of the admin log probes and
// `selftest run`: its Identify says serial S1, OACS self-test and ELPE 1,
// and its Error Information and self-test logs are what a test sets. A
// fake because no real controller (QEMU's included) lets a test choose
// those logs' contents.
#pragma once

#include <cstdint>
#include <vector>

#include "probes/drive/identify.h"
#include "probes/error_log.h"
#include "probes/self_test.h"

namespace drivewatch::testing {

class LogController : public Controller {
 public:
  Bytes error_log = Bytes(2 * 64);
  std::vector<Bytes> self_test_logs;  // served in turn, the last one repeats
  int self_tests_started = 0;

  Expected<Bytes> Identify(std::uint8_t, std::uint32_t) override {
    Bytes id(kIdentifySize, ' ');
    id[4] = 'S';
    id[5] = '1';
    id[256] = 1 << 4;
    id[257] = 0;
    id[262] = 1;
    return id;
  }
  Expected<Bytes> GetLogPage(std::uint8_t lid, std::uint32_t,
                             std::size_t length) override {
    if (lid == kErrorLogId) {
      Bytes out = error_log;
      out.resize(length);
      return out;
    }
    if (lid == kSelfTestLogId && !self_test_logs.empty()) {
      Bytes out = self_test_logs.front();
      if (self_test_logs.size() > 1) self_test_logs.erase(self_test_logs.begin());
      return out;
    }
    return Error{0, 0x4002, "log: Invalid Field in Command (0x4002)"};
  }
  Expected<FeatureValue> GetFeature(std::uint8_t, std::uint32_t, std::size_t) override {
    return Error{0, 0x4002, "feature: Invalid Field in Command (0x4002)"};
  }
  Status DeviceSelfTest(std::uint8_t, std::uint32_t) override {
    ++self_tests_started;
    return Ok{};
  }
};

// Puts an error log entry with error count `count` and status SCT 2h/SC 81h
// (media: unrecovered read error) in `slot`.
inline void SetEntry(Bytes& log, int slot, std::uint64_t count) {
  for (int i = 0; i < 8; ++i) log[slot * 64 + i] = static_cast<std::uint8_t>(count >> (8 * i));
  log[slot * 64 + 12] = static_cast<std::uint8_t>(0x81 << 1);  // SC 81h
  log[slot * 64 + 13] = static_cast<std::uint8_t>((2 << 1) | (0x81 >> 7));  // SCT 2
}

}  // namespace drivewatch::testing
