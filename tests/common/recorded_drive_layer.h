// SPDX-License-Identifier: Apache-2.0
// A drive layer that answers from recorded bytes: Identify and SMART/health
// log pages captured from real controllers (QEMU's emulated one, through the
// real kernel driver and nvme-cli; see tests/vm/) or built by hand. A fake,
// because no NVMe hardware exists on the build machines; the VM harness runs
// the real drive layer against the same controller.
//
// A fixture directory holds, per controller with serial SN:
//   id-ctrl-SN.bin          Identify Controller (CNS 01h), 4096 bytes
//   smart-log-SN.bin        SMART / Health Information (log 02h), 512 bytes
//   error-log-SN.bin        optional Error Information (log 01h), ELPE+1
//                           entries of 64 bytes
//   self-test-log-SN.bin    optional Device Self-test (log 06h), 564 bytes
//   id-ns-SN-nN.bin         Identify Namespace (CNS 00h) of namespace N
//   features-SN.txt         optional Get Features answers, one per line:
//                           "FID CDW11 RESULT [DATAFILE]" in hex, DATAFILE
//                           (in the same directory) holding the data buffer;
//                           '#' starts a comment. Set Features of a listed
//                           FID with no data buffer changes what later Gets
//                           of it (CDW11 0) return, as on a real controller.
// Commands with no recording answer Invalid Field in Command (0x4002), the
// way a controller answers for what it does not implement.
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "probes/drive/drive_layer.h"
#include "probes/drive/identify.h"

namespace drivewatch::testing {

inline Bytes ReadFixture(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

class RecordedDriveLayer : public DriveLayer {
 public:
  struct Recording {
    ControllerInfo info;
    Bytes id_ctrl;
    Bytes smart_log;
    std::map<std::uint8_t, Bytes> logs;  // other log pages, by LID
    std::map<std::uint32_t, Bytes> id_ns;
    // (FID, CDW11) -> answer
    std::map<std::pair<std::uint8_t, std::uint32_t>, FeatureValue> features;
  };

  class RecordedController : public Controller {
   public:
    explicit RecordedController(const Recording* r)
        : r_(r), features_(r->features) {}
    Expected<Bytes> Identify(std::uint8_t cns, std::uint32_t nsid) override {
      if (cns == kIdentifyCnsController) return r_->id_ctrl;
      if (cns == kIdentifyCnsNamespace) {
        auto it = r_->id_ns.find(nsid);
        if (it != r_->id_ns.end()) return it->second;
      }
      return Unsupported("identify");
    }
    Expected<Bytes> GetLogPage(std::uint8_t lid, std::uint32_t,
                               std::size_t length) override {
      if (lid == 0x02 && !r_->smart_log.empty()) {
        Bytes out = r_->smart_log;
        out.resize(length);
        return out;
      }
      if (auto it = r_->logs.find(lid); it != r_->logs.end()) {
        Bytes out = it->second;
        out.resize(length);
        return out;
      }
      return Unsupported("get log page");
    }
    Expected<FeatureValue> GetFeature(std::uint8_t fid, std::uint32_t cdw11,
                                      std::size_t length) override {
      auto it = features_.find({fid, cdw11});
      if (it == features_.end()) return Unsupported("get features");
      FeatureValue out = it->second;
      out.data.resize(length);
      return out;
    }
    Expected<std::uint32_t> SetFeature(std::uint8_t fid,
                                       std::uint32_t cdw11) override {
      auto it = features_.find({fid, 0});
      if (it == features_.end() || !it->second.data.empty()) {
        return Unsupported("set features");
      }
      it->second.result = cdw11;
      return 0u;
    }

   private:
    Error Unsupported(const std::string& what) const {
      return Error{0, 0x4002,
                   r_->info.device + ": " + what +
                       ": Invalid Field in Command (0x4002)"};
    }
    const Recording* r_;
    std::map<std::pair<std::uint8_t, std::uint32_t>, FeatureValue> features_;
  };

  // Loads every controller recorded in `dirs`; kernel names nvme0, nvme1,
  // ... follow the directories' order, then the serials' sorted order.
  explicit RecordedDriveLayer(const std::vector<std::filesystem::path>& dirs) {
    int index = 0;
    for (const auto& dir : dirs) Load(dir, index);
  }

  Expected<std::vector<ControllerInfo>> Scan() override {
    std::vector<ControllerInfo> out;
    for (const auto& r : recordings_) out.push_back(r.info);
    return out;
  }

  Expected<std::unique_ptr<Controller>> Open(const ControllerInfo& info) override {
    for (const auto& r : recordings_) {
      if (r.info.serial == info.serial) {
        return std::unique_ptr<Controller>(std::make_unique<RecordedController>(&r));
      }
    }
    return Error{ENODEV, -1, info.device + ": no such recorded controller"};
  }

  const std::vector<Recording>& recordings() const { return recordings_; }

 private:
  void Load(const std::filesystem::path& dir, int& index) {
    std::vector<std::string> serials;
    const std::regex id_ctrl("id-ctrl-(.+)\\.bin");
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      std::smatch m;
      const std::string name = entry.path().filename().string();
      if (std::regex_match(name, m, id_ctrl)) serials.push_back(m[1]);
    }
    std::sort(serials.begin(), serials.end());
    for (const auto& serial : serials) {
      Recording r;
      r.id_ctrl = ReadFixture(dir / ("id-ctrl-" + serial + ".bin"));
      r.smart_log = ReadFixture(dir / ("smart-log-" + serial + ".bin"));
      for (const auto& [lid, file] :
           {std::pair<std::uint8_t, const char*>{0x01, "error-log-"},
            {0x06, "self-test-log-"}}) {
        Bytes bytes = ReadFixture(dir / (file + serial + ".bin"));
        if (!bytes.empty()) r.logs[lid] = std::move(bytes);
      }
      const std::regex id_ns("id-ns-" + serial + "-n([0-9]+)\\.bin");
      for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        std::smatch m;
        const std::string name = entry.path().filename().string();
        if (std::regex_match(name, m, id_ns)) {
          r.id_ns[static_cast<std::uint32_t>(std::stoul(m[1]))] =
              ReadFixture(entry.path());
        }
      }
      LoadFeatures(dir, serial, r);
      const auto id = DecodeIdentifyController(r.id_ctrl);
      const int n = index++;
      r.info.name = "nvme" + std::to_string(n);
      r.info.device = "/dev/" + r.info.name;
      r.info.serial = id ? id->serial : serial;
      r.info.model = id ? id->model : "";
      r.info.firmware = id ? id->firmware : "";
      r.info.transport = "pcie";
      r.info.address = "0000:00:0" + std::to_string(n + 4) + ".0";
      for (const auto& [nsid, bytes] : r.id_ns) {
        const std::string ns = r.info.name + "n" + std::to_string(nsid);
        r.info.namespaces.push_back({nsid, ns, "/dev/" + ns});
      }
      recordings_.push_back(std::move(r));
    }
  }

  static void LoadFeatures(const std::filesystem::path& dir,
                           const std::string& serial, Recording& r) {
    std::ifstream in(dir / ("features-" + serial + ".txt"));
    std::string line;
    while (std::getline(in, line)) {
      line = line.substr(0, line.find('#'));
      std::istringstream fields(line);
      std::string fid, cdw11, result, data;
      if (!(fields >> fid >> cdw11 >> result)) continue;
      fields >> data;
      FeatureValue value;
      value.result = static_cast<std::uint32_t>(std::stoul(result, nullptr, 16));
      if (!data.empty()) value.data = ReadFixture(dir / data);
      r.features[{static_cast<std::uint8_t>(std::stoul(fid, nullptr, 16)),
                  static_cast<std::uint32_t>(std::stoul(cdw11, nullptr, 16))}] =
          std::move(value);
    }
  }

  // A deque would do too; a vector is fine because Load runs only in the
  // constructor, before any controller hands out a pointer.
  std::vector<Recording> recordings_;
};

}  // namespace drivewatch::testing
