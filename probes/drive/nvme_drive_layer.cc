// SPDX-License-Identifier: Apache-2.0
#include "probes/drive/nvme_drive_layer.h"

#include <dirent.h>
#include <fcntl.h>
#include <libnvme.h>
#include <syslog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/util/log.h"
#include "config/util/sys.h"
#include "probes/drive/identify.h"

namespace drivewatch {
namespace {

std::string Hex2(unsigned value) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "%02Xh", value & 0xff);
  return buf;
}

class NvmeController : public Controller {
 public:
  // With `owns_fd` the controller closes `fd` when it goes.
  NvmeController(std::string device, int fd, bool owns_fd = true)
      : device_(std::move(device)), fd_(fd), owns_fd_(owns_fd) {}
  ~NvmeController() override {
    if (owns_fd_) close(fd_);
  }
  NvmeController(const NvmeController&) = delete;
  NvmeController& operator=(const NvmeController&) = delete;

  Expected<Bytes> Identify(std::uint8_t cns, std::uint32_t nsid) override {
    Bytes data(NVME_IDENTIFY_DATA_SIZE);
    nvme_identify_args args{};
    args.args_size = sizeof(args);
    args.fd = fd_;
    args.timeout = kAdminCommandTimeoutMs;
    args.data = data.data();
    args.cns = static_cast<nvme_identify_cns>(cns);
    args.csi = NVME_CSI_NVM;
    args.nsid = nsid;
    const int rc = nvme_identify(&args);
    const int saved_errno = errno;
    if (rc != 0) {
      return detail::AdminCommandError(
          device_,
          "identify CNS " + Hex2(cns) + " NSID " + std::to_string(nsid), rc,
          saved_errno);
    }
    return data;
  }

  Expected<Bytes> GetLogPage(std::uint8_t lid, std::uint32_t nsid,
                             std::size_t length) override {
    return GetLogPageAt(lid, nsid, length, 0, 0);
  }

  Expected<FeatureValue> GetFeature(std::uint8_t fid, std::uint32_t cdw11,
                                    std::size_t data_length) override {
    if (data_length > UINT32_MAX) {
      return Error{EINVAL, -1,
                   device_ + ": get feature " + Hex2(fid) + ": data length " +
                       std::to_string(data_length) + " too large"};
    }
    FeatureValue value;
    value.data.resize(data_length);
    nvme_get_features_args args{};
    args.args_size = sizeof(args);
    args.fd = fd_;
    args.timeout = kAdminCommandTimeoutMs;
    args.result = &value.result;
    args.data = data_length > 0 ? value.data.data() : nullptr;
    args.data_len = static_cast<std::uint32_t>(data_length);
    args.sel = NVME_GET_FEATURES_SEL_CURRENT;
    args.cdw11 = cdw11;
    args.fid = fid;
    const int rc = nvme_get_features(&args);
    const int saved_errno = errno;
    if (rc != 0) {
      return detail::AdminCommandError(device_, "get feature " + Hex2(fid), rc,
                                       saved_errno);
    }
    return value;
  }

  Expected<std::uint32_t> SetFeature(std::uint8_t fid,
                                     std::uint32_t cdw11) override {
    return SetFeatures(fid, cdw11, nullptr);
  }

  Expected<std::uint32_t> SetFeatureWithData(std::uint8_t fid, std::uint32_t cdw11,
                                             const Bytes& data) override {
    if (data.empty() || data.size() > UINT32_MAX) {
      return Error{EINVAL, -1,
                   device_ + ": set feature " + Hex2(fid) + ": data of " +
                       std::to_string(data.size()) + " bytes (expected 1 byte to 4 GiB)"};
    }
    Bytes buffer = data;  // libnvme takes a non-const buffer
    return SetFeatures(fid, cdw11, &buffer);
  }

  Expected<Bytes> GetLogPageAt(std::uint8_t lid, std::uint32_t nsid,
                               std::size_t length, std::uint8_t lsp,
                               std::uint64_t offset) override {
    return ReadLog(lid, nsid, length, lsp, offset, 0);
  }

  Expected<Bytes> GetLogPageUuid(std::uint8_t lid, std::uint32_t nsid,
                                 std::size_t length,
                                 std::uint8_t uuid_index) override {
    // CDW14 UUID Index is 7 bits wide (NVMe 2.0 Figure 199).
    if (uuid_index > 0x7f) {
      return Error{EINVAL, -1,
                   device_ + ": get log page " + Hex2(lid) + ": UUID index " +
                       std::to_string(uuid_index) + " exceeds 127"};
    }
    return ReadLog(lid, nsid, length, 0, 0, uuid_index);
  }

  Status DeviceSelfTest(std::uint8_t stc, std::uint32_t nsid) override {
    std::uint32_t result = 0;
    nvme_dev_self_test_args args{};
    args.args_size = sizeof(args);
    args.fd = fd_;
    args.timeout = kAdminCommandTimeoutMs;
    args.result = &result;
    args.nsid = nsid;
    args.stc = static_cast<nvme_dst_stc>(stc);
    const int rc = nvme_dev_self_test(&args);
    const int saved_errno = errno;
    if (rc != 0) {
      return detail::AdminCommandError(device_, "device self-test " + Hex2(stc),
                                       rc, saved_errno);
    }
    return Ok{};
  }

 private:
  // Set Features with SV=0, with a data buffer when `data` is set.
  Expected<std::uint32_t> SetFeatures(std::uint8_t fid, std::uint32_t cdw11, Bytes* data) {
    std::uint32_t result = 0;
    nvme_set_features_args args{};
    args.args_size = sizeof(args);
    args.fd = fd_;
    args.timeout = kAdminCommandTimeoutMs;
    args.result = &result;
    args.cdw11 = cdw11;
    args.fid = fid;
    args.save = false;
    if (data != nullptr) {
      args.data_len = static_cast<std::uint32_t>(data->size());
      args.data = data->data();
    }
    const int rc = nvme_set_features(&args);
    const int saved_errno = errno;
    if (rc != 0) {
      return detail::AdminCommandError(device_, "set feature " + Hex2(fid), rc,
                                       saved_errno);
    }
    return result;
  }

  // Get Log Page with every field drivewatch sets (LSP, LPO, UUID index).
  Expected<Bytes> ReadLog(std::uint8_t lid, std::uint32_t nsid,
                          std::size_t length, std::uint8_t lsp,
                          std::uint64_t offset, std::uint8_t uuid_index) {
    std::string what = "get log page " + Hex2(lid);
    if (lsp != 0 || offset != 0) {
      what += " LSP " + std::to_string(lsp) + " offset " + std::to_string(offset);
    }
    if (uuid_index != 0) what += " UUID index " + std::to_string(uuid_index);
    // NUMD counts dwords and LPO must be dword aligned (NVMe 2.0 §5.16).
    if (length == 0 || length % 4 != 0 || length > UINT32_MAX) {
      return Error{EINVAL, -1,
                   device_ + ": " + what + ": length " +
                       std::to_string(length) +
                       " is not a positive multiple of 4 bytes"};
    }
    if (offset % 4 != 0) {
      return Error{EINVAL, -1,
                   device_ + ": " + what + ": offset is not a multiple of 4 "
                                           "bytes"};
    }
    Bytes data(length);
    nvme_get_log_args args{};
    args.args_size = sizeof(args);
    args.fd = fd_;
    args.timeout = kAdminCommandTimeoutMs;
    args.log = data.data();
    args.lid = static_cast<nvme_cmd_get_log_lid>(lid);
    args.len = static_cast<std::uint32_t>(length);
    args.nsid = nsid;
    args.csi = NVME_CSI_NVM;
    args.lsp = lsp;
    args.lpo = offset;
    args.uuidx = uuid_index;
    // RAE cleared, as nvme-cli and the kernel's hwmon reads do: reading the
    // log acknowledges its asynchronous event, so the controller can raise
    // the next one (NVMe 2.0 §5.2). Chunks of 4 KiB stay within any
    // controller's MDTS; libnvme keeps RAE set on all but the last chunk.
    args.rae = false;
    const int rc = nvme_get_log_page(fd_, NVME_LOG_PAGE_PDU_SIZE, &args);
    const int saved_errno = errno;
    if (rc != 0)
      return detail::AdminCommandError(device_, what, rc, saved_errno);
    return data;
  }

  const std::string device_;
  const int fd_;
  const bool owns_fd_;
};

// "nvme12" -> 12, so nvme2 sorts before nvme10.
long Instance(const std::string& name) {
  return std::strtol(name.c_str() + std::strlen("nvme"), nullptr, 10);
}

// One sysfs attribute without its newline; nullopt when it cannot be read
// (the controller is going away, for one).
std::optional<std::string> ReadAttribute(const std::string& path) {
  auto value = util::ReadAttribute(path);
  if (!value) return std::nullopt;
  return std::move(*value);
}

// The namespaces of controller `ctrl_name`, from sysfs alone: nvmeXnY under
// the controller (no multipath, or a controller that shares no namespaces,
// like QEMU's by default), or the hidden path nvmeAcBnC whose namespace
// head is nvmeAnC (native multipath, Debian's default, with a
// multi-controller subsystem). A namespace shared by several controllers
// has a path from each; the first to claim it reports it.
void AddSysfsNamespaces(const std::string& sysfs, const std::string& ctrl_name,
                        std::set<std::string>& claimed,
                        std::vector<NamespaceInfo>& out) {
  const std::string dir = sysfs + "/class/nvme/" + ctrl_name;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return;
  while (const dirent* e = readdir(d)) {
    unsigned a = 0, b = 0, c = 0;
    int used = 0;
    std::string head;
    const std::string entry = e->d_name;
    if (std::sscanf(entry.c_str(), "nvme%uc%un%u%n", &a, &b, &c, &used) == 3 &&
        used == static_cast<int>(entry.size())) {
      head = "nvme" + std::to_string(a) + "n" + std::to_string(c);
    } else if (std::sscanf(entry.c_str(), "nvme%un%u%n", &a, &c, &used) == 2 &&
               used == static_cast<int>(entry.size())) {
      head = entry;
    } else {
      continue;
    }
    if (claimed.count(head) != 0) continue;
    const auto nsid_text = ReadAttribute(sysfs + "/block/" + head + "/nsid");
    if (!nsid_text) continue;
    char* end = nullptr;
    const unsigned long nsid = std::strtoul(nsid_text->c_str(), &end, 10);
    if (nsid_text->empty() || *end != '\0' || nsid == 0 || nsid > 0xffffffffUL) {
      continue;
    }
    claimed.insert(head);
    out.push_back(NamespaceInfo{static_cast<std::uint32_t>(nsid), head, "/dev/" + head});
  }
  closedir(d);
}

class NvmeDriveLayer : public DriveLayer {
 public:
  Expected<std::vector<ControllerInfo>> Scan() override {
    return detail::ScanSysfs("/sys");
  }

  Expected<std::unique_ptr<Controller>> Open(
      const ControllerInfo& info) override {
    const int fd = open(info.device.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      const int saved_errno = errno;
      return Error{saved_errno, -1,
                   info.device + ": open: " + std::strerror(saved_errno)};
    }
    return std::unique_ptr<Controller>(
        std::make_unique<NvmeController>(info.device, fd));
  }
};

}  // namespace

Expected<std::uint32_t> NamespaceIdOn(int fd) {
  __u32 nsid = 0;
  if (nvme_get_nsid(fd, &nsid) != 0) {
    const int err = errno;
    return Error{err, -1, std::strerror(err)};
  }
  return std::uint32_t{nsid};
}

std::unique_ptr<Controller> NvmeControllerOn(int fd, std::string device) {
  if (device.empty()) {
    std::error_code ec;
    const auto target =
        std::filesystem::read_symlink("/proc/self/fd/" + std::to_string(fd), ec);
    device = ec ? "fd " + std::to_string(fd) : target.string();
  }
  return std::make_unique<NvmeController>(std::move(device), fd, /*owns_fd=*/false);
}

namespace detail {

Expected<std::vector<ControllerInfo>> ScanSysfs(const std::string& sysfs) {
  const std::string class_dir = sysfs + "/class/nvme";
  DIR* d = opendir(class_dir.c_str());
  if (d == nullptr) {
    // ENOENT: no NVMe driver loaded, or nothing ever attached.
    if (errno == ENOENT) return std::vector<ControllerInfo>{};
    const int saved_errno = errno;
    return Error{saved_errno, -1,
                 "scan " + class_dir + ": " + std::strerror(saved_errno)};
  }
  std::vector<ControllerInfo> out;
  while (const dirent* e = readdir(d)) {
    unsigned instance = 0;
    int used = 0;
    const std::string name = e->d_name;
    if (std::sscanf(name.c_str(), "nvme%u%n", &instance, &used) != 1 ||
        used != static_cast<int>(name.size())) {
      continue;
    }
    const std::string dir = class_dir + "/" + name + "/";
    // A controller still being set up ("new": not identified yet, its
    // serial reads "(efault)") or going away has no identity to file it
    // under; the next scan decides. libnvme 1.3 lists only controllers
    // linked into a subsystem, which "new" ones are not yet.
    const auto state = ReadAttribute(dir + "state");
    if (!state || *state == "new" || *state == "dead" ||
        state->rfind("deleting", 0) == 0) {
      continue;
    }
    const auto serial = ReadAttribute(dir + "serial");
    if (!serial || TrimIdentifyString(*serial).empty() ||
        *serial == "(efault)") {
      continue;
    }
    ControllerInfo info;
    info.name = name;
    info.device = "/dev/" + name;
    info.serial = TrimIdentifyString(*serial);
    info.model = TrimIdentifyString(ReadAttribute(dir + "model").value_or(""));
    info.firmware =
        TrimIdentifyString(ReadAttribute(dir + "firmware_rev").value_or(""));
    info.transport = ReadAttribute(dir + "transport").value_or("");
    info.address = ReadAttribute(dir + "address").value_or("");
    out.push_back(std::move(info));
  }
  closedir(d);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return Instance(a.name) < Instance(b.name);
  });
  std::set<std::string> claimed;
  for (auto& info : out) {
    AddSysfsNamespaces(sysfs, info.name, claimed, info.namespaces);
    std::sort(info.namespaces.begin(), info.namespaces.end(),
              [](const NamespaceInfo& a, const NamespaceInfo& b) {
                return a.nsid < b.nsid;
              });
  }
  return out;
}

Error AdminCommandError(const std::string& device, const std::string& what,
                        int rc, int saved_errno) {
  if (rc > 0) {
    // libnvme's text is "Name: explanation"; the name is enough here.
    std::string text = nvme_status_to_string(rc, false);
    text = text.substr(0, text.find(": "));
    char status[16];
    std::snprintf(status, sizeof(status), "0x%x", static_cast<unsigned>(rc));
    return Error{0, rc,
                 device + ": " + what + ": " + text + " (" + status + ")"};
  }
  return Error{saved_errno, -1,
               device + ": " + what + ": " + std::strerror(saved_errno)};
}

}  // namespace detail

std::unique_ptr<DriveLayer> MakeNvmeDriveLayer() {
  return std::make_unique<NvmeDriveLayer>();
}

}  // namespace drivewatch
