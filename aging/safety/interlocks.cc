// SPDX-License-Identifier: Apache-2.0
#include "aging/safety/interlocks.h"

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

#include "aging/safety/interlocks_refusal.h"
#include "config/util/sys.h"
#include "config/util/text.h"
#include "probes/drive/identify.h"
#include "probes/drive/nvme_drive_layer.h"

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

// Mounted, swapped on or held (device-mapper, md, bcache): the device,
// a partition of it, or anything else whose storage shares a byte with
// the target's (a second loop device over the same file, an offset loop,
// the disk under a partition). Something in use whose storage cannot be
// told refuses too: what it shares is unknown.
std::optional<Error> CheckInUse(const std::string& device_path, const std::vector<Member>& members,
                                const std::vector<StorageExtent>& extents,
                                const SystemPaths& paths) {
  auto scan = ScanStorageInUse(paths);
  if (!scan) {
    return Refuse(device_path,
                  "cannot tell what is mounted, swapped on or held: " + scan.error().message,
                  kNoOverride);
  }
  const auto remedy = [](const StorageInUse& u) { return u.remedy + "; " + std::string(kNoOverride); };
  for (const StorageInUse& u : *scan) {
    const Member* hit = u.device != 0 ? FindMember(members, u.device) : nullptr;
    if (hit == nullptr) continue;
    const std::string what = hit->path == device_path ? std::string("it") : hit->path;
    return Refuse(device_path, what + " " + u.why, remedy(u));
  }
  for (const StorageInUse& u : *scan) {
    for (const StorageExtent& theirs : u.extents) {
      for (const StorageExtent& mine : extents) {
        if (!theirs.Overlaps(mine)) continue;
        const std::uint64_t from = std::max(theirs.offset, mine.offset);
        const std::uint64_t to = std::min(theirs.offset + theirs.length, mine.offset + mine.length);
        const StorageExtent shared{mine.storage, from, to - from};
        return Refuse(device_path,
                      u.name + " " + u.why + ", and it reaches the same bytes (" +
                          shared.Describe() + ")",
                      remedy(u));
      }
    }
  }
  for (const StorageInUse& u : *scan) {
    if (u.unresolved.empty()) continue;
    return Refuse(device_path,
                  u.name + " " + u.why + " and " + u.unresolved +
                      ", so whether it shares bytes with this target is unknown",
                  kNoOverride);
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

// libblkid's words for what it found: "an ext4 file system", "a dos
// partition table", or nothing.
std::vector<std::string> Found(blkid_probe pr) {
  const char* type = nullptr;
  const char* usage = nullptr;
  const char* pttype = nullptr;
  blkid_probe_lookup_value(pr, "TYPE", &type, nullptr);
  blkid_probe_lookup_value(pr, "USAGE", &usage, nullptr);
  blkid_probe_lookup_value(pr, "PTTYPE", &pttype, nullptr);
  std::vector<std::string> what;
  if (pttype != nullptr) what.push_back(WithArticle(pttype) + " partition table");
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
  return what;
}

std::string Joined(const std::vector<std::string>& parts, std::string_view with) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : std::string(with)) + p;
  return out;
}

// What a partition holds: its own probe over its bytes of the device.
std::string PartitionContents(int fd, std::uint64_t offset, std::uint64_t size) {
  blkid_probe pr = blkid_new_probe();
  if (pr == nullptr) return "not probed (blkid_new_probe failed)";
  std::string out = "nothing libblkid recognises";
  if (blkid_probe_set_device(pr, fd, static_cast<blkid_loff_t>(offset),
                             static_cast<blkid_loff_t>(size)) == 0) {
    blkid_probe_enable_superblocks(pr, 1);
    blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE | BLKID_SUBLKS_USAGE);
    const int rc = blkid_do_safeprobe(pr);
    if (rc == 0) {
      if (auto what = Found(pr); !what.empty()) out = Joined(what, " and ");
    } else if (rc < 0) {
      out = "not probed (libblkid failed, or it holds more than one signature)";
    }
  } else {
    out = "not probed (libblkid cannot open its range)";
  }
  blkid_free_probe(pr);
  return out;
}

// Each partition of the table the probe found, and what it holds, so the
// acknowledgement (allow_signatures) knows what it destroys: "partition 1
// (63MiB from 1MiB): an ext4 file system".
std::string Partitions(blkid_probe pr, int fd) {
  blkid_partlist list = blkid_probe_get_partitions(pr);
  if (list == nullptr) return "";
  const int n = blkid_partlist_numof_partitions(list);
  if (n <= 0) return "no partitions in it";
  constexpr int kListed = 16;
  std::vector<std::string> parts;
  for (int i = 0; i < n && i < kListed; ++i) {
    blkid_partition par = blkid_partlist_get_partition(list, i);
    if (par == nullptr) continue;
    const auto start = static_cast<std::uint64_t>(blkid_partition_get_start(par)) * 512;
    const auto size = static_cast<std::uint64_t>(blkid_partition_get_size(par)) * 512;
    parts.push_back("partition " + std::to_string(blkid_partition_get_partno(par)) + " (" +
                    config::FormatSize(size) + " from " + config::FormatSize(start) +
                    "): " + PartitionContents(fd, start, size));
  }
  if (n > kListed) parts.push_back("and " + std::to_string(n - kListed) + " more");
  return Joined(parts, "; ");
}

// A GPT whose primary header and protective MBR were wiped still has its
// backup header in the device's last logical block (UEFI 2.10 §5.3.2), and
// tools such as gdisk and parted restore the table from it. libblkid is
// told to look there (BLKID_PARTS_FORCE_GPT); this reads the last 4 KiB as
// well, which holds the last block for 512-byte and 4 KiB blocks alike.
bool BackupGptHeader(int fd, std::uint64_t size) {
  if (size < 4096) return false;
  char block[4096];
  if (::pread(fd, block, sizeof block, static_cast<off_t>(size - sizeof block)) !=
      static_cast<ssize_t>(sizeof block)) {
    return false;
  }
  return std::memcmp(block, "EFI PART", 8) == 0 || std::memcmp(block + 3584, "EFI PART", 8) == 0;
}

// What libblkid finds on the device, e.g. "an ext4 file system", or "a
// dos partition table (partition 1 (...): an ext4 file system)", or
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
    blkid_probe_set_partitions_flags(pr, BLKID_PARTS_MAGIC | BLKID_PARTS_FORCE_GPT);
    rc = blkid_do_fullprobe(pr);
  }
  if (rc < 0) {
    blkid_free_probe(pr);
    return Refuse(device_path, "libblkid could not probe it for signatures",
                  kNoOverride);
  }
  if (rc == 0) {
    std::vector<std::string> what = Found(pr);
    const char* pttype = nullptr;
    if (blkid_probe_lookup_value(pr, "PTTYPE", &pttype, nullptr) == 0 && pttype != nullptr) {
      if (const std::string parts = Partitions(pr, probe_fd.get()); !parts.empty()) {
        what.front() += " (" + parts + ")";
      }
    }
    if (what.empty()) what.push_back("an unnamed signature");
    found = Joined(what, " and ");
  }
  const auto size = static_cast<std::uint64_t>(blkid_probe_get_size(pr));
  blkid_free_probe(pr);
  if (!found && BackupGptHeader(probe_fd.get(), size)) {
    found = "the backup header of a GPT partition table in its last block (the primary "
            "header is gone; partitioning tools restore the table from the backup)";
  }
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
  // The backing file's name exactly, but for the newline sysfs ends it
  // with: "t.img " is another file than "t.img", and an identity is
  // compared byte for byte.
  if (std::ifstream in(dir + "/loop/backing_file", std::ios::binary); in) {
    std::string backing((std::istreambuf_iterator<char>(in)), {});
    if (!backing.empty() && backing.back() == '\n') backing.pop_back();
    if (!backing.empty()) {
      id.serial = "loop:" + backing;
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

namespace interlocks_detail {

Expected<StorageMap> CheckBlockDeviceWrite(const config::AgingTarget& target, int fd,
                                           dev_t device, const SystemPaths& paths) {
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
  if (Status s = CheckIdentity(target, fd, device, paths, "write"); !s) return s.error();

  struct stat st;
  const bool own_fd = ::fstat(fd, &st) == 0 && S_ISBLK(st.st_mode) && st.st_rdev == device;
  auto map = ResolveBlockDevice(device, own_fd ? fd : -1, dev_path, paths);
  if (!map) return Refuse(dev_path, map.error().message, kNoOverride);
  NoteTargetIdentity(target, *map);

  const auto members = DeviceAndPartitions(dev_path, device, paths);
  if (auto e = CheckInUse(dev_path, members, map->extents, paths)) return *e;

  auto signature = ProbeSignatures(dev_path, fd);
  if (!signature) return signature.error();
  if (signature->has_value() && !target.allow_signatures) {
    return Refuse(dev_path, "it holds " + **signature,
                  "set " + KeyFor(target, "allow_signatures", "true") +
                      " to overwrite it");
  }
  return map;
}

Status CheckFileNotInUse(const std::string& path, const StorageMap& map,
                         const SystemPaths& paths) {
  if (auto e = CheckInUse(path, {}, map.extents, paths)) return *e;
  return Ok{};
}

}  // namespace interlocks_detail

std::optional<config::StorageOverlap> CompareTargetStorage(
    const config::AgingTarget& a, std::uint64_t a_offset, std::uint64_t a_length,
    const config::AgingTarget& b, std::uint64_t b_offset, std::uint64_t b_length) {
  const auto resolve = [](const config::AgingTarget& t) {
    return ResolvePath(t.block_device.empty() ? AgingFilePath(t) : t.block_device);
  };
  auto ma = resolve(a);
  auto mb = resolve(b);
  if (!ma || !mb) return std::nullopt;
  config::StorageOverlap result;
  for (const StorageExtent& x : ma->Map(a_offset, a_length)) {
    for (const StorageExtent& y : mb->Map(b_offset, b_length)) {
      if (!x.Overlaps(y)) continue;
      const std::uint64_t from = std::max(x.offset, y.offset);
      const std::uint64_t to = std::min(x.offset + x.length, y.offset + y.length);
      result.overlap = true;
      result.shared = StorageExtent{x.storage, from, to - from}.Describe();
      return result;
    }
  }
  return result;
}

void NoteTargetIdentity(const config::AgingTarget& target, StorageMap& map) {
  if (target.block_device.empty() || map.approximate || map.extents.size() != 1 ||
      map.extents[0].storage.kind != Storage::Kind::kDisk) {
    return;
  }
  map.extents[0].storage.identity =
      target.serial + (target.nsid != 0 ? "/" + std::to_string(target.nsid) : "");
}

Status CheckBeforeWrite(const config::AgingTarget& target, int fd, dev_t device,
                        const SystemPaths& paths) {
  auto map = interlocks_detail::CheckBlockDeviceWrite(target, fd, device, paths);
  if (!map) return map.error();
  return Ok{};
}

}  // namespace drivewatch::aging
