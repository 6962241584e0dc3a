// SPDX-License-Identifier: Apache-2.0
// The drive layer: everything drivewatch knows about how to reach an NVMe
// controller. The rest of the program sees only these two small interfaces,
// so the very same probe code runs against real controllers (libnvme and
// ioctls, see nvme_drive_layer.h) and, in the golden test, against recorded
// log-page bytes.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config/util/expected.h"

namespace drivewatch {

using Bytes = std::vector<std::uint8_t>;

struct NamespaceInfo {
  std::uint32_t nsid = 0;
  std::string name;          // kernel name, e.g. "nvme0n1"
  std::string block_device;  // e.g. "/dev/nvme0n1"
};

// What discovery learns about a controller without sending it a command.
struct ControllerInfo {
  std::string name;       // kernel name, e.g. "nvme0"; may change across boots
  std::string device;     // character device, e.g. "/dev/nvme0"
  std::string serial;     // Identify SN, trimmed; the drive's identity
  std::string model;      // Identify MN, trimmed
  std::string firmware;   // Identify FR, trimmed
  std::string transport;  // "pcie", "tcp", "rdma", "fc", "loop"
  std::string address;    // transport address, e.g. PCI BDF "0000:00:04.0"
  std::vector<NamespaceInfo> namespaces;
};

// Prefixes `error`'s message with the controller's device. Decoders name the
// structure but not the device; a probe's error is logged once, so it has to
// say which drive.
inline Error OnDevice(const ControllerInfo& info, Error error) {
  error.message = info.device + ": " + error.message;
  return error;
}

// A feature's Get Features completion: dword 0 of the completion queue entry
// plus the data buffer, for features that return one.
struct FeatureValue {
  std::uint32_t result = 0;
  Bytes data;
};

// Admin commands to one controller. Implementations are not thread-safe; the
// scheduler serializes all work on a controller.
class Controller {
 public:
  virtual ~Controller() = default;

  // Identify (NVMe 2.0 §5.17). Returns the 4096-byte data structure.
  virtual Expected<Bytes> Identify(std::uint8_t cns, std::uint32_t nsid) = 0;
  // Get Log Page (NVMe 2.0 §5.16). Returns exactly `length` bytes.
  virtual Expected<Bytes> GetLogPage(std::uint8_t lid, std::uint32_t nsid,
                                     std::size_t length) = 0;
  // Get Features (NVMe 2.0 §5.15) with SEL=current. `data_length` is the size
  // of the feature's data buffer, 0 for features that return only dword 0.
  virtual Expected<FeatureValue> GetFeature(std::uint8_t fid,
                                            std::uint32_t cdw11,
                                            std::size_t data_length) = 0;
  // Set Features (NVMe 2.0 §5.27) for a feature that takes only dword 11,
  // with SV=0: the value lasts until the next controller reset, so callers
  // that need it re-apply it (a reset also makes the kernel rewrite some
  // features, e.g. Asynchronous Event Configuration 0Bh). Returns dword 0 of
  // the completion. The light probes change only what monitoring needs (the
  // AEN enables of feature 0Bh); only the power-states heavy phase
  // (aging/phases/power_states_phase.cc) changes power settings (Power Management
  // 02h, APST 0Ch), and it restores them. Nothing changes data settings.
  // Controllers that cannot change features (recordings) keep this default,
  // which fails the way a controller lacking the command does (EOPNOTSUPP).
  virtual Expected<std::uint32_t> SetFeature(std::uint8_t /*fid*/,
                                             std::uint32_t /*cdw11*/) {
    return Error{EOPNOTSUPP, -1,
                 "set feature: this controller cannot change features"};
  }
  // Set Features with a data buffer sent to the controller (e.g. the
  // 256-byte APST table of feature 0Ch), SV=0. Same default as SetFeature.
  virtual Expected<std::uint32_t> SetFeatureWithData(std::uint8_t /*fid*/,
                                                     std::uint32_t /*cdw11*/,
                                                     const Bytes& /*data*/) {
    return Error{EOPNOTSUPP, -1,
                 "set feature: this controller cannot change features"};
  }
  // Get Log Page with a log specific field and a byte offset (NVMe 2.0
  // §5.16: LSP in CDW10 bits 11:8, LPOL/LPOU). The persistent event log
  // needs both (LSP 1 establishes a reporting context, 2 releases it).
  // Controllers that cannot (recordings) keep this default, which serves
  // the plain case from GetLogPage and fails the rest as unsupported.
  virtual Expected<Bytes> GetLogPageAt(std::uint8_t lid, std::uint32_t nsid,
                                       std::size_t length, std::uint8_t lsp,
                                       std::uint64_t offset) {
    if (lsp == 0 && offset == 0) return GetLogPage(lid, nsid, length);
    return Error{EOPNOTSUPP, -1,
                 "get log page: this controller cannot read with LSP or "
                 "an offset"};
  }
  // Get Log Page of a vendor specific log with a UUID index (NVMe 2.0
  // §5.16: CDW14 bits 6:0): index N names entry N of the Identify UUID list
  // (CNS 17h), 0 none. The OCP SMART / Health Information Extended log
  // (C0h) is read this way. Controllers that cannot (recordings) keep this
  // default, which serves index 0 from GetLogPage and fails the rest as
  // unsupported.
  virtual Expected<Bytes> GetLogPageUuid(std::uint8_t lid, std::uint32_t nsid,
                                         std::size_t length,
                                         std::uint8_t uuid_index) {
    if (uuid_index == 0) return GetLogPage(lid, nsid, length);
    return Error{EOPNOTSUPP, -1,
                 "get log page: this controller cannot read with a UUID "
                 "index"};
  }
  // Device Self-test (NVMe 2.0 §5.9), opcode 14h. `stc` is the self-test
  // code: 1h short, 2h extended, Fh abort the running test. `nsid` is the
  // namespace to test, FFFFFFFFh for the controller and every namespace.
  // The command only starts (or aborts) the operation; progress and results
  // are read from log page 06h. Controllers that cannot (recordings) keep
  // this default, which fails as a controller lacking the command does.
  virtual Status DeviceSelfTest(std::uint8_t /*stc*/, std::uint32_t /*nsid*/) {
    return Error{EOPNOTSUPP, -1,
                 "device self-test: this controller cannot run self-tests"};
  }
};

class DriveLayer {
 public:
  virtual ~DriveLayer() = default;
  // Lists the NVMe controllers present now, with their namespaces.
  virtual Expected<std::vector<ControllerInfo>> Scan() = 0;
  // Opens a controller found by Scan() for admin commands.
  virtual Expected<std::unique_ptr<Controller>> Open(
      const ControllerInfo& info) = 0;
};

}  // namespace drivewatch
