// SPDX-License-Identifier: Apache-2.0
#include "probes/nvme_drive_layer.h"

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
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "probes/identify.h"
#include "probes/log.h"

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
    std::uint32_t result = 0;
    nvme_set_features_args args{};
    args.args_size = sizeof(args);
    args.fd = fd_;
    args.timeout = kAdminCommandTimeoutMs;
    args.result = &result;
    args.cdw11 = cdw11;
    args.fid = fid;
    args.save = false;
    const int rc = nvme_set_features(&args);
    const int saved_errno = errno;
    if (rc != 0) {
      return detail::AdminCommandError(device_, "set feature " + Hex2(fid), rc,
                                       saved_errno);
    }
    return result;
  }

  Expected<Bytes> GetLogPageAt(std::uint8_t lid, std::uint32_t nsid,
                               std::size_t length, std::uint8_t lsp,
                               std::uint64_t offset) override {
    std::string what = "get log page " + Hex2(lid);
    if (lsp != 0 || offset != 0) {
      what += " LSP " + std::to_string(lsp) + " offset " + std::to_string(offset);
    }
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
  const std::string device_;
  const int fd_;
  const bool owns_fd_;
};

std::string Copy(const char* s) { return s != nullptr ? s : ""; }

// "nvme12" -> 12, so nvme2 sorts before nvme10.
long Instance(const std::string& name) {
  return std::strtol(name.c_str() + std::strlen("nvme"), nullptr, 10);
}

NamespaceInfo ToNamespaceInfo(nvme_ns_t ns) {
  NamespaceInfo info;
  info.nsid = static_cast<std::uint32_t>(nvme_ns_get_nsid(ns));
  info.name = Copy(nvme_ns_get_name(ns));
  info.block_device = "/dev/" + info.name;
  return info;
}

// libnvme 1.3 sends Identify Namespace while it scans (nvme_ns_init) and
// drops a namespace when that fails, which it does for every namespace
// when admin passthrough is refused (no CAP_SYS_ADMIN). Sysfs lists them
// all without a command: nvmeXnY under the controller (no multipath), or
// the hidden path nvmeAcBnC whose namespace head is nvmeAnC. Adds the ones
// libnvme did not report, with the nsid from /sys/block/NAME/nsid.
void AddSysfsNamespaces(const std::string& ctrl_name,
                        std::set<std::string>& claimed,
                        std::vector<NamespaceInfo>& out) {
  const std::string dir = "/sys/class/nvme/" + ctrl_name;
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
    std::FILE* f = std::fopen(("/sys/block/" + head + "/nsid").c_str(), "re");
    if (f == nullptr) continue;
    unsigned nsid = 0;
    const bool ok = std::fscanf(f, "%u", &nsid) == 1 && nsid != 0;
    std::fclose(f);
    if (!ok) continue;
    claimed.insert(head);
    out.push_back(NamespaceInfo{nsid, head, "/dev/" + head});
  }
  closedir(d);
}

// libnvme prints its own diagnostics to the FILE* its root is created with
// (stderr by default), without level or timestamp; during hot-plug it
// reports harmless sysfs races as errors. Every failure that matters comes
// back to us as a return code, so its messages go to our log at debug level.
FILE* LibnvmeLogStream() {
  static FILE* const stream = [] {
    cookie_io_functions_t io{};
    io.write = [](void*, const char* buf, size_t size) -> ssize_t {
      std::string_view text(buf, size);
      while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) {
        text.remove_suffix(1);
      }
      if (!text.empty()) log::Debug("libnvme: " + std::string(text));
      return static_cast<ssize_t>(size);
    };
    FILE* f = fopencookie(nullptr, "w", io);
    if (f != nullptr) std::setvbuf(f, nullptr, _IOLBF, 0);
    return f;  // nullptr: libnvme falls back to stderr
  }();
  return stream;
}

class NvmeDriveLayer : public DriveLayer {
 public:
  Expected<std::vector<ControllerInfo>> Scan() override {
    // A fresh tree per scan: libnvme 1.3 has no cheap "refresh", and a new
    // tree is what makes hot-plug and removal visible.
    std::unique_ptr<nvme_root, void (*)(nvme_root_t)> root(
        nvme_create_root(LibnvmeLogStream(), LOG_WARNING), nvme_free_tree);
    if (!root) {
      return Error{
          errno, -1,
          std::string("libnvme: create root: ") + std::strerror(errno)};
    }
    errno = 0;
    if (nvme_scan_topology(root.get(), nullptr, nullptr) < 0 &&
        errno != ENOENT) {
      // ENOENT: /sys/class/nvme or /sys/class/nvme-subsystem is missing,
      // i.e. no driver loaded or nothing attached. Whatever was found before
      // that is in the tree either way.
      const int saved_errno = errno;
      return Error{saved_errno, -1,
                   std::string("libnvme: scan /sys/class/nvme: ") +
                       std::strerror(saved_errno)};
    }

    std::vector<std::pair<nvme_ctrl_t, ControllerInfo>> found;
    nvme_host_t host;
    nvme_subsystem_t subsystem;
    nvme_ctrl_t ctrl;
    nvme_for_each_host(root.get(), host) {
      nvme_for_each_subsystem(host, subsystem) {
        nvme_subsystem_for_each_ctrl(subsystem, ctrl) {
          ControllerInfo info;
          info.name = Copy(nvme_ctrl_get_name(ctrl));
          info.device = "/dev/" + info.name;
          info.serial = TrimIdentifyString(Copy(nvme_ctrl_get_serial(ctrl)));
          info.model = TrimIdentifyString(Copy(nvme_ctrl_get_model(ctrl)));
          info.firmware =
              TrimIdentifyString(Copy(nvme_ctrl_get_firmware(ctrl)));
          info.transport = Copy(nvme_ctrl_get_transport(ctrl));
          info.address = Copy(nvme_ctrl_get_address(ctrl));
          found.emplace_back(ctrl, std::move(info));
        }
      }
    }
    std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
      return Instance(a.second.name) < Instance(b.second.name);
    });

    // libnvme 1.3 files a namespace in one of two places. When the kernel
    // puts nvmeXnY under the controller (multipath off, or a controller
    // whose CMIC says it shares no namespaces, like QEMU's by default),
    // libnvme lists it in nvme_ctrl_for_each_ns. With native multipath
    // (Debian's default) and a multi-controller subsystem, the controller
    // holds only the hidden path nvmeXcYnZ, the namespace nvmeXnZ hangs off
    // the subsystem, and libnvme links the two through
    // nvme_ctrl_for_each_path / nvme_path_get_ns. A namespace shared by
    // several controllers has a path from each; the first claims it so that
    // it is reported once.
    std::set<std::string> claimed;
    std::vector<ControllerInfo> out;
    out.reserve(found.size());
    for (auto& [c, info] : found) {
      auto claim = [&, &info = info](nvme_ns_t ns) {  // clang < 16 cannot capture a binding
        if (ns == nullptr) return;
        NamespaceInfo ns_info = ToNamespaceInfo(ns);
        if (claimed.insert(ns_info.name).second) {
          info.namespaces.push_back(std::move(ns_info));
        }
      };
      nvme_ns_t ns;
      nvme_ctrl_for_each_ns(c, ns) { claim(ns); }
      nvme_path_t path;
      nvme_ctrl_for_each_path(c, path) { claim(nvme_path_get_ns(path)); }
      AddSysfsNamespaces(info.name, claimed, info.namespaces);
      std::sort(info.namespaces.begin(), info.namespaces.end(),
                [](const NamespaceInfo& a, const NamespaceInfo& b) {
                  return a.nsid < b.nsid;
                });
      out.push_back(std::move(info));
    }
    return out;
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
