// SPDX-License-Identifier: Apache-2.0
// What the tests of the admin log probes (self-test log 06h, Error
// Information log 01h, persistent event log 0Dh) share: little-endian
// field writing for log bytes built field by field (NVMe 2.0 offsets), the
// hand-made controller's identify with chosen OACS/LPA/ELPE, and reading
// samples back from a RecordingSink.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "probe_test_util.h"
#include "probes/drive/identify.h"

namespace drivewatch::testing {

inline void PutLe(Bytes& b, std::size_t offset, std::uint64_t value, int width) {
  for (int i = 0; i < width; ++i) {
    b[offset + i] = static_cast<std::uint8_t>(value >> (8 * i));
  }
}

inline Bytes IdentifyWith(std::uint16_t oacs, std::uint8_t lpa, std::uint8_t elpe) {
  Bytes id = Handmade("id-ctrl-HANDMADE-PM981.bin");
  PutLe(id, 256, oacs, 2);
  id[261] = lpa;
  id[262] = elpe;
  return id;
}

inline ControllerInfo Info() {
  ControllerInfo info;
  info.device = "/dev/nvme0";
  info.serial = kHandmadeSerial;
  return info;
}

inline double Value(const RecordingSink& sink, const std::string& key) {
  for (const auto& s : sink.samples) {
    if (s.Key() == key) return s.value;
  }
  return -1;
}
inline bool Has(const RecordingSink& sink, const std::string& key) {
  return Value(sink, key) != -1;
}
inline std::string Key(const std::string& name, Labels labels) {
  labels.insert(labels.begin(), {"serial", kHandmadeSerial});
  return SeriesKey(name, std::move(labels));
}

}  // namespace drivewatch::testing
