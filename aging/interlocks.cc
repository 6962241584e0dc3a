// SPDX-License-Identifier: Apache-2.0
#include "aging/interlocks.h"

#include <blkid/blkid.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <linux/fs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <algorithm>
#include <optional>
#include <regex>
#include <sstream>
#include <string_view>
#include <vector>

#include "aging/interlocks_refusal.h"
#include "config/util/sys.h"
#include "config/util/text.h"
#include "probes/identify.h"
#include "probes/nvme_drive_layer.h"

namespace drivewatch::aging {

namespace interlocks_detail {

Error Refuse(std::string_view device, std::string_view reason,
             std::string_view remedy, std::string_view action) {
  return Error{EPERM, -1,
               std::string(device) + ": refusing to " + std::string(action) + ": " +
                   std::string(reason) + " (" + std::string(remedy) + ")"};
}

std::string KeyFor(const config::AgingTarget& target, std::string_view key,
                   std::string_view value) {
  std::string s = "aging.targets." + std::string(key);
  if (!value.empty()) s += " = " + std::string(value);
  return s + " for target " + util::Quote(target.name);
}

std::string Humanize(long double bytes) {
  return util::FormatBytes(bytes, util::ByteStyle::kOneDecimal);
}

}  // namespace interlocks_detail

namespace {

using util::FdCloser;
using util::Quote;
using util::SysError;
using interlocks_detail::KeyFor;
using interlocks_detail::kNoOverride;
using interlocks_detail::Refuse;

Expected<std::string> ReadAttribute(const std::string& path) {
  return util::ReadAttribute(path, util::kBlanksAndNul);
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}


std::string DevNumber(dev_t d) {
  return std::to_string(major(d)) + ":" + std::to_string(minor(d));
}

std::optional<dev_t> ParseDevNumber(std::string_view s) {
  unsigned maj = 0, min = 0;
  char tail = 0;
  if (std::sscanf(std::string(s).c_str(), "%u:%u%c", &maj, &min, &tail) != 2)
    return std::nullopt;
  return makedev(maj, min);
}

// mountinfo and /proc/swaps escape space, tab, newline and backslash as
// \ooo octal.
std::string UnescapeOctal(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' &&
        s[i + 1] <= '7' && s[i + 2] >= '0' && s[i + 2] <= '7' &&
        s[i + 3] >= '0' && s[i + 3] <= '7') {
      out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 +
                               (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}


// The sysfs directory of a block device: <sysfs>/dev/block/M:m (a symlink
// into /sys/devices on a real system, a plain directory in fixtures).
std::string BlockDir(dev_t device, const SystemPaths& paths) {
  return paths.sysfs + "/dev/block/" + DevNumber(device);
}

// The kernel's name of the device ("nvme0n1", "loop3").
std::string KernelName(const std::string& block_dir) {
  if (std::ifstream in(block_dir + "/uevent"); in) {
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("DEVNAME=", 0) == 0) {
        return util::Trim(line.substr(8), util::kBlanksAndNul);
      }
    }
  }
  char resolved[PATH_MAX];
  if (::realpath(block_dir.c_str(), resolved) != nullptr) {
    std::string_view r(resolved);
    return std::string(r.substr(r.rfind('/') + 1));
  }
  return "";
}

// Whether the device is an NVMe namespace (or a partition of one): its
// `device` link leads to an nvme controller or subsystem, or its name says
// so.
bool IsNvme(const std::string& block_dir, const std::string& name) {
  static const std::regex kNvmeName("nvme[0-9]+(c[0-9]+)?n[0-9]+(p[0-9]+)?");
  if (std::regex_match(name, kNvmeName)) return true;
  char resolved[PATH_MAX];
  if (::realpath((block_dir + "/device").c_str(), resolved) == nullptr)
    return false;
  const std::string_view r(resolved);
  const std::string_view base = r.substr(r.rfind('/') + 1);
  return base.rfind("nvme", 0) == 0 ||
         r.find("/nvme/") != std::string_view::npos ||
         r.find("/nvme-subsystem/") != std::string_view::npos;
}

// A partition has no `device` link or loop/ directory of its own; its
// identity is its disk's, the sysfs parent directory.
std::string IdentityDir(const std::string& block_dir) {
  if (!Exists(block_dir + "/partition")) return block_dir;
  char resolved[PATH_MAX];
  if (::realpath(block_dir.c_str(), resolved) == nullptr) return block_dir;
  std::string r(resolved);
  return r.substr(0, r.rfind('/'));
}

Expected<DeviceIdentity> ReadNvmeIdentity(int fd, const std::string& name) {
  DeviceIdentity id;
  id.nvme = true;
  auto data = NvmeControllerOn(fd, name)->Identify(kIdentifyCnsController, 0);
  if (!data) return data.error();
  auto ctrl = DecodeIdentifyController(*data);
  if (!ctrl) return Error{ctrl.error().errnum, -1, name + ": " + ctrl.error().message};
  id.serial = ctrl->serial;
  auto nsid = NamespaceIdOn(fd);
  if (!nsid) {
    return Error{nsid.error().errnum, -1, name + ": get namespace ID: " + nsid.error().message};
  }
  id.nsid = *nsid;
  return id;
}

// A device taking part in "in use" checks: the target or a partition.
struct Member {
  std::string path;  // for messages: the target's path or /dev/<partition>
  dev_t dev;
  std::string block_dir;
};

// The device and all its partitions: subdirectories of its sysfs directory
// that have a `partition` file (or, failing that, of class/block/<name>).
std::vector<Member> DeviceAndPartitions(const std::string& device_path,
                                        dev_t device,
                                        const SystemPaths& paths) {
  std::vector<Member> members;
  std::string dir = BlockDir(device, paths);
  if (!Exists(dir)) {
    const std::string base = device_path.substr(device_path.rfind('/') + 1);
    dir = paths.sysfs + "/class/block/" + base;
  }
  members.push_back({device_path, device, dir});
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return members;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    const std::string sub = dir + "/" + name;
    if (!Exists(sub + "/partition")) continue;
    const auto number = ReadAttribute(sub + "/dev");
    if (!number) continue;
    const auto dev = ParseDevNumber(*number);
    if (!dev) continue;
    members.push_back({"/dev/" + name, *dev, sub});
  }
  ::closedir(d);
  return members;
}

const Member* FindMember(const std::vector<Member>& members, dev_t dev) {
  for (const Member& m : members) {
    if (m.dev == dev) return &m;
  }
  return nullptr;
}

// Mounted: mountinfo field 3 is the st_dev of the mount, which is the
// block device for most file systems. btrfs (and others) report an
// anonymous 0:N there, so the mount source is also stat'ed.
std::optional<Error> CheckMounted(const std::string& device_path,
                                  const std::vector<Member>& members,
                                  const SystemPaths& paths) {
  std::ifstream in(paths.mountinfo);
  if (!in) {
    return Refuse(
        device_path,
        "cannot read " + paths.mountinfo +
            " to check whether it is mounted: " + std::strerror(errno),
        kNoOverride);
  }
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string id, parent, number, root, mount_point;
    if (!(fields >> id >> parent >> number >> root >> mount_point)) continue;
    const Member* hit = nullptr;
    if (const auto dev = ParseDevNumber(number))
      hit = FindMember(members, *dev);
    if (hit == nullptr) {
      const auto dash = line.find(" - ");
      if (dash != std::string::npos) {
        std::istringstream tail(line.substr(dash + 3));
        std::string fstype, source;
        struct stat st;
        if (tail >> fstype >> source && !source.empty() &&
            source.front() == '/' &&
            ::stat(UnescapeOctal(source).c_str(), &st) == 0 &&
            S_ISBLK(st.st_mode)) {
          hit = FindMember(members, st.st_rdev);
        }
      }
    }
    if (hit != nullptr) {
      const std::string what =
          hit->path == device_path ? std::string("it") : hit->path;
      return Refuse(device_path,
                    what + " is mounted on " + UnescapeOctal(mount_point),
                    "unmount it; " + std::string(kNoOverride));
    }
  }
  return std::nullopt;
}

// Swap: /proc/swaps names block devices and files; a swap file lives on a
// mounted file system, which CheckMounted already refuses.
std::optional<Error> CheckSwap(const std::string& device_path,
                               const std::vector<Member>& members,
                               const SystemPaths& paths) {
  std::ifstream in(paths.swaps);
  if (!in) {
    return Refuse(device_path,
                  "cannot read " + paths.swaps +
                      " to check whether it is swap: " + std::strerror(errno),
                  kNoOverride);
  }
  std::string line;
  std::getline(in, line);  // Filename Type Size Used Priority
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string name;
    if (!(fields >> name)) continue;
    const std::string path = UnescapeOctal(name);
    struct stat st;
    if (::stat(path.c_str(), &st) != 0 || !S_ISBLK(st.st_mode)) continue;
    if (const Member* hit = FindMember(members, st.st_rdev)) {
      const std::string what =
          hit->path == device_path ? std::string("it") : hit->path;
      return Refuse(device_path, what + " is in use as swap (" + path + ")",
                    "swapoff it; " + std::string(kNoOverride));
    }
  }
  return std::nullopt;
}

// Held: device-mapper, md and bcache list themselves in holders/.
std::optional<Error> CheckHolders(const std::string& device_path,
                                  const std::vector<Member>& members) {
  for (const Member& m : members) {
    DIR* d = ::opendir((m.block_dir + "/holders").c_str());
    if (d == nullptr) continue;
    std::string holders;
    while (dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      holders += (holders.empty() ? "" : ", ") + name;
    }
    ::closedir(d);
    if (!holders.empty()) {
      const std::string what =
          m.path == device_path ? std::string("it") : m.path;
      return Refuse(device_path, what + " is held by " + holders,
                    "remove the device-mapper or md device first; " +
                        std::string(kNoOverride));
    }
  }
  return std::nullopt;
}

// "an ext4", "a gpt": blkid names are lower case words or acronyms.
std::string WithArticle(std::string_view word) {
  const bool vowel =
      !word.empty() &&
      std::string_view("aeiouAEIOU").find(word[0]) != std::string_view::npos;
  return (vowel ? "an " : "a ") + std::string(word);
}

// What libblkid finds on the device, e.g. "an ext4 file system", or
// nothing. Probed through a fresh read-only open of the fd's own file
// (/proc/self/fd): still the same device, but without the writer's
// O_DIRECT (libblkid reads into unaligned buffers) and without moving its
// file offset.
Expected<std::optional<std::string>> ProbeSignatures(
    const std::string& device_path, int fd) {
  const std::string self = "/proc/self/fd/" + std::to_string(fd);
  FdCloser probe_fd(::open(self.c_str(), O_RDONLY | O_CLOEXEC));
  if (probe_fd.get() < 0) {
    return Refuse(device_path,
                  "cannot reopen it to look for signatures: " +
                      std::string(std::strerror(errno)),
                  kNoOverride);
  }
  blkid_probe pr = blkid_new_probe();
  if (pr == nullptr) {
    return Refuse(device_path, "blkid_new_probe failed", kNoOverride);
  }
  std::optional<std::string> found;
  int rc = blkid_probe_set_device(pr, probe_fd.get(), 0, 0);
  if (rc == 0) {
    blkid_probe_enable_superblocks(pr, 1);
    blkid_probe_set_superblocks_flags(pr,
                                      BLKID_SUBLKS_TYPE | BLKID_SUBLKS_USAGE);
    blkid_probe_enable_partitions(pr, 1);
    blkid_probe_set_partitions_flags(pr, BLKID_PARTS_MAGIC);
    rc = blkid_do_fullprobe(pr);
  }
  if (rc < 0) {
    blkid_free_probe(pr);
    return Refuse(device_path, "libblkid could not probe it for signatures",
                  kNoOverride);
  }
  if (rc == 0) {
    const char* type = nullptr;
    const char* usage = nullptr;
    const char* pttype = nullptr;
    blkid_probe_lookup_value(pr, "TYPE", &type, nullptr);
    blkid_probe_lookup_value(pr, "USAGE", &usage, nullptr);
    blkid_probe_lookup_value(pr, "PTTYPE", &pttype, nullptr);
    std::vector<std::string> what;
    if (pttype != nullptr)
      what.push_back(WithArticle(pttype) + " partition table");
    if (type != nullptr) {
      const std::string_view u = usage != nullptr ? usage : "";
      if (u == "filesystem") {
        what.push_back(WithArticle(type) + " file system");
      } else if (u == "raid") {
        what.push_back(WithArticle(type) + " RAID or LVM member signature");
      } else if (u == "crypto") {
        what.push_back(WithArticle(type) + " encryption header");
      } else {
        what.push_back(WithArticle(type) + " signature");
      }
    }
    if (what.empty()) what.push_back("an unnamed signature");
    std::string joined = what[0];
    for (std::size_t i = 1; i < what.size(); ++i) joined += " and " + what[i];
    found = joined;
  }
  blkid_free_probe(pr);
  return found;
}


}  // namespace

Expected<DeviceIdentity> ReadDeviceIdentity(int fd, dev_t device,
                                            const SystemPaths& paths) {
  const std::string block_dir = BlockDir(device, paths);
  std::string name = KernelName(block_dir);
  const std::string label =
      name.empty() ? "block device " + DevNumber(device) : "/dev/" + name;
  if (IsNvme(block_dir, name)) return ReadNvmeIdentity(fd, label);

  const std::string dir = IdentityDir(block_dir);
  DeviceIdentity id;
  if (const auto backing = ReadAttribute(dir + "/loop/backing_file")) {
    if (!backing->empty()) {
      id.serial = "loop:" + *backing;
      return id;
    }
  }
  for (const char* attr : {"/device/serial", "/serial"}) {
    if (const auto serial = ReadAttribute(dir + attr)) {
      if (!serial->empty()) {
        id.serial = *serial;
        return id;
      }
    }
  }
  return Error{ENODATA, -1,
               label + " (" + block_dir +
                   ") has no identity: no NVMe Identify, sysfs serial or "
                   "loop backing file"};
}

Status CheckIdentity(const config::AgingTarget& target, int fd, dev_t device,
                     const SystemPaths& paths, std::string_view action) {
  const std::string& dev_path = target.block_device;
  if (dev_path.empty()) {
    return Error{
        EINVAL, -1,
        "aging target " + Quote(target.name) + " is not a block device target"};
  }
  // The fd is what the phase writes through; a device number that is not
  // its own would make every sysfs check below look at another device.
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    return SysError(errno, dev_path, "fstat");
  }
  if (S_ISBLK(st.st_mode) && st.st_rdev != device) {
    return Refuse(dev_path,
                  "the open descriptor is device " + DevNumber(st.st_rdev) +
                      ", not " + DevNumber(device),
                  kNoOverride, action);
  }
  auto id = ReadDeviceIdentity(fd, device, paths);
  if (!id) {
    return Refuse(dev_path,
                  "its identity cannot be checked: " + id.error().message,
                  kNoOverride, action);
  }
  if (target.serial.empty()) {
    return Refuse(dev_path,
                  "target " + Quote(target.name) + " names no serial (it is " +
                      Quote(id->serial) + ")",
                  "set " + KeyFor(target, "serial"), action);
  }
  if (id->serial != target.serial) {
    return Refuse(dev_path,
                  "it is not the configured device: serial " +
                      Quote(target.serial) + " configured, " +
                      Quote(id->serial) + " found",
                  "check " + KeyFor(target, "serial") + " and the device path", action);
  }
  if (id->nvme) {
    if (target.nsid == 0) {
      return Refuse(dev_path,
                    "it is NVMe namespace " + std::to_string(id->nsid) +
                        " and target " + Quote(target.name) +
                        " names no namespace",
                    "set " + KeyFor(target, "namespace"), action);
    }
    if (id->nsid != target.nsid) {
      return Refuse(
          dev_path,
          "it is not the configured namespace: namespace " +
              std::to_string(target.nsid) + " configured, " +
              std::to_string(id->nsid) + " found",
          "check " + KeyFor(target, "namespace") + " and the device path", action);
    }
  } else if (target.nsid != 0) {
    return Refuse(
        dev_path,
        "namespace " + std::to_string(target.nsid) +
            " is configured but it is not an NVMe namespace",
        "check " + KeyFor(target, "namespace") + " and the device path", action);
  }
  return Ok{};
}

Status CheckBeforeWrite(const config::AgingTarget& target, int fd, dev_t device,
                        const SystemPaths& paths) {
  const std::string& dev_path = target.block_device;
  if (dev_path.empty()) {
    return Error{
        EINVAL, -1,
        "aging target " + Quote(target.name) + " is not a block device target"};
  }
  if (!target.destroy_data) {
    return Refuse(dev_path,
                  "target " + Quote(target.name) +
                      " does not acknowledge that all data on it will be "
                      "destroyed",
                  "set " + KeyFor(target, "destroy_data", "true"));
  }
  if (Status s = CheckIdentity(target, fd, device, paths, "write"); !s) return s;

  const auto members = DeviceAndPartitions(dev_path, device, paths);
  if (auto e = CheckMounted(dev_path, members, paths)) return *e;
  if (auto e = CheckSwap(dev_path, members, paths)) return *e;
  if (auto e = CheckHolders(dev_path, members)) return *e;

  auto signature = ProbeSignatures(dev_path, fd);
  if (!signature) return signature.error();
  if (signature->has_value() && !target.allow_signatures) {
    return Refuse(dev_path, "it holds " + **signature,
                  "set " + KeyFor(target, "allow_signatures", "true") +
                      " to overwrite it");
  }
  return Ok{};
}

}  // namespace drivewatch::aging
