// SPDX-License-Identifier: Apache-2.0
// Many drives out of a few recorded ones, for the benchmarks and the load
// test: each recorded controller (tests/common/recorded_drive_layer.h)
// presented N times under distinct serials. A fake by design: the point is
// a fleet's worth of series and probe work without a fleet of drives.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "probes/drive/drive_layer.h"
#include "probes/drive/identify.h"

namespace drivewatch::fleet {

// A recorded controller answering Identify with another serial (SN, bytes
// 23:04), so each copy is a drive of its own (SERIAL-i).
class RenamedController : public Controller {
 public:
  RenamedController(std::unique_ptr<Controller> base, std::string serial)
      : base_(std::move(base)), serial_(std::move(serial)) {}
  Expected<Bytes> Identify(std::uint8_t cns, std::uint32_t nsid) override {
    auto data = base_->Identify(cns, nsid);
    if (data && cns == kIdentifyCnsController) {
      std::string sn = serial_;
      sn.resize(20, ' ');
      std::copy(sn.begin(), sn.end(), data->begin() + 4);
    }
    return data;
  }
  Expected<Bytes> GetLogPage(std::uint8_t lid, std::uint32_t nsid,
                             std::size_t n) override {
    return base_->GetLogPage(lid, nsid, n);
  }
  Expected<FeatureValue> GetFeature(std::uint8_t fid, std::uint32_t cdw11,
                                    std::size_t n) override {
    return base_->GetFeature(fid, cdw11, n);
  }
  Expected<Bytes> GetLogPageAt(std::uint8_t lid, std::uint32_t nsid,
                               std::size_t length, std::uint8_t lsp,
                               std::uint64_t offset) override {
    return base_->GetLogPageAt(lid, nsid, length, lsp, offset);
  }
  Expected<Bytes> GetLogPageUuid(std::uint8_t lid, std::uint32_t nsid,
                                 std::size_t length,
                                 std::uint8_t uuid_index) override {
    return base_->GetLogPageUuid(lid, nsid, length, uuid_index);
  }

 private:
  std::unique_ptr<Controller> base_;
  std::string serial_;
};

// Presents each recorded controller `copies` times under distinct serials
// (its serial with -0, -1, ... appended) and kernel names nvme0, nvme1, ...
class ReplicatedDriveLayer : public DriveLayer {
 public:
  ReplicatedDriveLayer(DriveLayer& base, int copies)
      : base_(base), copies_(copies) {}
  Expected<std::vector<ControllerInfo>> Scan() override {
    auto scan = base_.Scan();
    if (!scan) return scan;
    std::vector<ControllerInfo> out;
    for (int i = 0; i < copies_; ++i) {
      ControllerInfo c = (*scan)[i % scan->size()];
      c.name = "nvme" + std::to_string(i);
      c.device = "/dev/" + c.name;
      c.serial += "-" + std::to_string(i);
      out.push_back(c);
    }
    return out;
  }
  Expected<std::unique_ptr<Controller>> Open(
      const ControllerInfo& info) override {
    ControllerInfo base = info;
    base.serial = info.serial.substr(0, info.serial.rfind('-'));
    auto opened = base_.Open(base);
    if (!opened) return opened;
    return std::unique_ptr<Controller>(
        std::make_unique<RenamedController>(std::move(*opened), info.serial));
  }

 private:
  DriveLayer& base_;
  int copies_;
};

}  // namespace drivewatch::fleet
