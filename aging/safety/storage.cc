// SPDX-License-Identifier: Apache-2.0
#include "aging/safety/storage.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/loop.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "config/config.h"
#include "config/util/sys.h"
#include "config/util/text.h"

namespace drivewatch::aging {
namespace {

using util::FdCloser;

// Partitions inside partitions inside loop devices over block devices...
// real chains are two or three hops; a cycle in a fixture must end.
constexpr int kMaxHops = 16;

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::optional<std::uint64_t> ReadNumber(const std::string& path) {
  auto text = util::ReadAttribute(path, util::kBlanksAndNul);
  if (!text || text->empty()) return std::nullopt;
  std::uint64_t v = 0;
  for (char c : *text) {
    if (c < '0' || c > '9' || v > (UINT64_MAX - 9) / 10) return std::nullopt;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return v;
}

// A loop device's backing_file exactly as the kernel names it: the path,
// then one newline. Blanks are part of a file name ("t.img " is not
// "t.img"), so nothing else is taken off.
std::optional<std::string> ReadBackingFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string text((std::istreambuf_iterator<char>(in)), {});
  if (!text.empty() && text.back() == '\n') text.pop_back();
  if (text.empty()) return std::nullopt;
  return text;
}

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") out.push_back(name);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

std::string Size(std::uint64_t bytes) { return config::FormatSize(bytes); }

std::string FdPath(int fd) {
  char buf[PATH_MAX];
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t n = ::readlink(link.c_str(), buf, sizeof buf - 1);
  if (n <= 0) return link;
  return std::string(buf, static_cast<std::size_t>(n));
}

// statx(2)'s birth time of `path` (or of `fd` when `path` is empty), when
// the file system keeps one.
std::uint64_t BirthNs(int fd, const std::string& path) {
  struct statx stx {};
  const int rc = path.empty() ? ::statx(fd, "", AT_EMPTY_PATH, STATX_BTIME, &stx)
                              : ::statx(AT_FDCWD, path.c_str(), 0, STATX_BTIME, &stx);
  if (rc != 0 || (stx.stx_mask & STATX_BTIME) == 0 || stx.stx_btime.tv_sec < 0) return 0;
  return static_cast<std::uint64_t>(stx.stx_btime.tv_sec) * 1'000'000'000u +
         stx.stx_btime.tv_nsec;
}

StorageMap FileMap(const struct stat& st, const std::string& path, std::uint64_t birth_ns) {
  StorageMap m;
  m.name = path;
  m.size = static_cast<std::uint64_t>(st.st_size);
  Storage s;
  s.kind = Storage::Kind::kFile;
  s.device = st.st_dev;
  s.inode = st.st_ino;
  s.birth_ns = birth_ns;
  s.path = path;
  m.extents.push_back({s, 0, m.size});
  return m;
}

Error Unresolved(const std::string& name, const std::string& why) {
  return Error{ENODATA, -1, name + ": cannot tell which storage it reaches: " + why};
}

Expected<StorageMap> Resolve(dev_t device, int fd, const std::string& given_name,
                             const SystemPaths& paths, int depth);

// The hops below `outer` are `inner`'s, seen from bytes [offset, offset +
// size) of it.
StorageMap Through(const std::string& name, std::uint64_t size, const std::string& hop,
                   const StorageMap& inner, std::uint64_t offset) {
  StorageMap m;
  m.name = name;
  m.size = size;
  m.approximate = inner.approximate;
  m.extents = inner.Map(offset, size);
  m.hops.push_back(hop);
  m.hops.insert(m.hops.end(), inner.hops.begin(), inner.hops.end());
  return m;
}

Expected<StorageMap> ResolveLoop(dev_t device, int fd, const std::string& name,
                                 const std::string& dir, const std::string& kernel_name,
                                 std::uint64_t size, const SystemPaths& paths, int depth) {
  const auto backing = ReadBackingFile(dir + "/loop/backing_file");
  if (!backing) return Unresolved(name, "loop device without a readable backing_file in sysfs");
  std::uint64_t offset = ReadNumber(dir + "/loop/offset").value_or(0);

  // LOOP_GET_STATUS64 names the backing file by device and inode, which
  // stay right when the file was renamed or deleted after losetup.
  std::optional<loop_info64> info;
  {
    int lfd = -1;
    std::optional<FdCloser> own;
    struct stat st;
    if (fd >= 0 && ::fstat(fd, &st) == 0 && S_ISBLK(st.st_mode) && st.st_rdev == device) {
      lfd = fd;
    } else if (!kernel_name.empty()) {
      const std::string node = paths.dev + "/" + kernel_name;
      if (::stat(node.c_str(), &st) == 0 && S_ISBLK(st.st_mode) && st.st_rdev == device) {
        own.emplace(::open(node.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
        lfd = own->get();
      }
    }
    loop_info64 li{};
    if (lfd >= 0 && ::ioctl(lfd, LOOP_GET_STATUS64, &li) == 0) {
      info = li;
      offset = li.lo_offset;
    }
  }
  struct stat bs;
  const bool named = ::stat(backing->c_str(), &bs) == 0;
  const bool same_node =
      named && (!info || (bs.st_dev == static_cast<dev_t>(info->lo_device) &&
                          bs.st_ino == static_cast<ino_t>(info->lo_inode)));
  const std::string hop = name + " is " + *backing + " from " + Size(offset);
  if (same_node && S_ISBLK(bs.st_mode)) {
    auto inner = Resolve(bs.st_rdev, -1, *backing, paths, depth + 1);
    if (!inner) return inner.error();
    return Through(name, size, hop, *inner, offset);
  }
  Storage s;
  s.kind = Storage::Kind::kFile;
  s.path = *backing;
  if (info) {
    s.device = static_cast<dev_t>(info->lo_device);
    s.inode = static_cast<ino_t>(info->lo_inode);
    if (same_node) s.birth_ns = BirthNs(-1, *backing);
  } else if (named && S_ISREG(bs.st_mode)) {
    s.device = bs.st_dev;
    s.inode = bs.st_ino;
    s.birth_ns = BirthNs(-1, *backing);
  } else {
    return Unresolved(name, "its backing file " + *backing +
                                (named ? " is neither a regular file nor a block device"
                                       : " cannot be found: " + std::string(std::strerror(errno))));
  }
  StorageMap m;
  m.name = name;
  m.size = size;
  m.extents.push_back({s, offset, size});
  m.hops.push_back(hop);
  return m;
}

Expected<StorageMap> Resolve(dev_t device, int fd, const std::string& given_name,
                             const SystemPaths& paths, int depth) {
  const std::string dir = BlockDir(device, paths);
  const std::string kernel_name = KernelName(dir);
  const std::string name = !given_name.empty() ? given_name
                           : !kernel_name.empty() ? "/dev/" + kernel_name
                                                  : "block device " + DevNumber(device);
  if (depth > kMaxHops) return Unresolved(name, "more than 16 hops (a cycle?)");
  if (!Exists(dir)) {
    return Unresolved(name, "block device " + DevNumber(device) + " is not in " + paths.sysfs +
                                "/dev/block");
  }
  std::optional<std::uint64_t> size;
  if (auto sectors = ReadNumber(dir + "/size")) size = *sectors * 512;
  if (!size && fd >= 0) {
    std::uint64_t bytes = 0;
    if (::ioctl(fd, BLKGETSIZE64, &bytes) == 0) size = bytes;
  }
  if (!size) return Unresolved(name, "its size cannot be read from " + dir + "/size");

  if (Exists(dir + "/partition")) {
    const auto start = ReadNumber(dir + "/start");
    char resolved[PATH_MAX];
    if (!start || ::realpath(dir.c_str(), resolved) == nullptr) {
      return Unresolved(name, "a partition whose start or disk cannot be read in " + dir);
    }
    std::string parent(resolved);
    parent = parent.substr(0, parent.rfind('/'));
    const auto number = util::ReadAttribute(parent + "/dev", util::kBlanksAndNul);
    const auto disk = number ? ParseDevNumber(*number) : std::nullopt;
    if (!disk) return Unresolved(name, "a partition whose disk " + parent + " has no dev number");
    auto inner = Resolve(*disk, -1, "", paths, depth + 1);
    if (!inner) return inner.error();
    const auto number_in_table = util::ReadAttribute(dir + "/partition", util::kBlanksAndNul);
    const std::string partno = number_in_table ? *number_in_table : "?";
    return Through(name, *size,
                   name + " is partition " + partno + " of " + inner->name + " from " +
                       Size(*start * 512),
                   *inner, *start * 512);
  }
  if (ReadBackingFile(dir + "/loop/backing_file")) {
    return ResolveLoop(device, fd, name, dir, kernel_name, *size, paths, depth);
  }
  if (const auto slaves = Entries(dir + "/slaves"); !slaves.empty()) {
    // device-mapper, md: which byte of a slave a byte of the device lands
    // on is in the tables, which are not read; every slave counts whole.
    StorageMap m;
    m.name = name;
    m.size = *size;
    m.approximate = true;
    std::string hop = name + " is made of";
    for (const std::string& slave : slaves) {
      const auto number = util::ReadAttribute(dir + "/slaves/" + slave + "/dev",
                                              util::kBlanksAndNul);
      const auto dev = number ? ParseDevNumber(*number) : std::nullopt;
      if (!dev) return Unresolved(name, "its slave " + slave + " has no dev number");
      auto inner = Resolve(*dev, -1, "", paths, depth + 1);
      if (!inner) return inner.error();
      hop += " " + inner->name;
      const auto whole = inner->Map(0, 0);
      m.extents.insert(m.extents.end(), whole.begin(), whole.end());
      m.hops.insert(m.hops.end(), inner->hops.begin(), inner->hops.end());
    }
    m.hops.insert(m.hops.begin(), hop + ", whole (device-mapper and md tables are not read)");
    return m;
  }
  StorageMap m;
  m.name = name;
  m.size = *size;
  Storage s;
  s.kind = Storage::Kind::kDisk;
  s.device = device;
  s.path = kernel_name.empty() ? name : "/dev/" + kernel_name;
  m.extents.push_back({s, 0, *size});
  return m;
}

}  // namespace

bool RangesOverlap(std::uint64_t a, std::uint64_t a_len, std::uint64_t b, std::uint64_t b_len) {
  return a_len > 0 && b_len > 0 && a < b + b_len && b < a + a_len;
}

std::string DevNumber(dev_t d) {
  return std::to_string(major(d)) + ":" + std::to_string(minor(d));
}

std::optional<dev_t> ParseDevNumber(std::string_view s) {
  unsigned maj = 0, min = 0;
  char tail = 0;
  if (std::sscanf(std::string(s).c_str(), "%u:%u%c", &maj, &min, &tail) != 2) {
    return std::nullopt;
  }
  return makedev(maj, min);
}

std::string BlockDir(dev_t device, const SystemPaths& paths) {
  return paths.sysfs + "/dev/block/" + DevNumber(device);
}

std::string KernelName(const std::string& block_dir) {
  if (std::ifstream in(block_dir + "/uevent"); in) {
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("DEVNAME=", 0) == 0) return util::Trim(line.substr(8), util::kBlanksAndNul);
    }
  }
  char resolved[PATH_MAX];
  if (::realpath(block_dir.c_str(), resolved) != nullptr) {
    const std::string_view r(resolved);
    return std::string(r.substr(r.rfind('/') + 1));
  }
  return "";
}

bool Storage::SameAs(const Storage& other) const {
  return kind == other.kind && device == other.device &&
         (kind == Kind::kDisk || inode == other.inode);
}

std::string Storage::Describe() const {
  if (kind == Kind::kDisk) return "disk " + DevNumber(device) + " (" + path + ")";
  return "file " + DevNumber(device) + " inode " + std::to_string(inode) + " (" + path + ")";
}

bool StorageExtent::Overlaps(const StorageExtent& other) const {
  return storage.SameAs(other.storage) &&
         RangesOverlap(offset, length, other.offset, other.length);
}

std::string StorageExtent::Describe() const {
  return storage.path + " [" + Size(offset) + ", " + Size(offset + length) + ")";
}

std::vector<StorageExtent> StorageMap::Map(std::uint64_t offset, std::uint64_t length) const {
  if (approximate || extents.size() != 1) return extents;
  const StorageExtent& e = extents.front();
  if (offset >= e.length) return {};
  const std::uint64_t rest = e.length - offset;
  return {StorageExtent{e.storage, e.offset + offset, length == 0 ? rest : std::min(length, rest)}};
}

namespace {

// "WHAT (HOP, HOP)", or WHAT alone when the target is its storage.
std::string WithHops(const std::string& what, const std::vector<std::string>& hops) {
  std::string how;
  for (const std::string& hop : hops) how += (how.empty() ? "" : ", ") + hop;
  return how.empty() ? what : what + " (" + how + ")";
}

}  // namespace

std::string StorageMap::Describe() const {
  std::string where;
  for (const StorageExtent& e : extents) where += (where.empty() ? "" : " and ") + e.Describe();
  return WithHops(where, hops);
}

std::string StorageMap::DescribeReach(const std::vector<StorageExtent>& reached) const {
  return WithHops(DescribeIdentities(reached), hops);
}

std::string DescribeIdentities(const std::vector<StorageExtent>& extents) {
  std::string out;
  for (const StorageExtent& e : extents) {
    out += (out.empty() ? "" : " and ") + e.storage.Describe() + " [" + Size(e.offset) + ", " +
           Size(e.offset + e.length) + ")";
  }
  return out;
}

Expected<StorageMap> ResolveBlockDevice(dev_t device, int fd, const std::string& name,
                                        const SystemPaths& paths) {
  return Resolve(device, fd, name, paths, 0);
}

Expected<StorageMap> ResolveStorage(int fd, const SystemPaths& paths) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return util::SysError(errno, FdPath(fd), "fstat");
  if (S_ISBLK(st.st_mode)) return Resolve(st.st_rdev, fd, FdPath(fd), paths, 0);
  if (S_ISREG(st.st_mode)) return FileMap(st, FdPath(fd), BirthNs(fd, ""));
  return Unresolved(FdPath(fd), "it is neither a block device nor a regular file");
}

Expected<StorageMap> ResolvePath(const std::string& path, const SystemPaths& paths) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return util::SysError(errno, path);
  if (S_ISBLK(st.st_mode)) return Resolve(st.st_rdev, -1, path, paths, 0);
  if (S_ISREG(st.st_mode)) {
    char resolved[PATH_MAX];
    return FileMap(st, ::realpath(path.c_str(), resolved) ? resolved : path, BirthNs(-1, path));
  }
  return Unresolved(path, "it is neither a block device nor a regular file");
}


namespace {

// mountinfo and /proc/swaps escape space, tab, newline and backslash as
// \ooo octal.
std::string UnescapeOctal(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '7' &&
        s[i + 2] >= '0' && s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
      out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

// Each block device mounted, by the mount table `mountinfo`, with why it is
// in use ("is mounted on /mnt"), into `devices` unless it is there already.
Status NoteMounted(const std::string& mountinfo, std::map<dev_t, std::string>& devices) {
  std::ifstream in(mountinfo);
  if (!in) return util::SysError(errno, mountinfo, "open");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string id, parent, number, root, mount_point;
    if (!(fields >> id >> parent >> number >> root >> mount_point)) continue;
    const std::string why = "is mounted on " + UnescapeOctal(mount_point);
    if (const auto dev = ParseDevNumber(number); dev && major(*dev) != 0) {
      devices.emplace(*dev, why);
    }
    // btrfs and others report an anonymous 0:N device: the source says
    // which block device it is.
    if (const auto dash = line.find(" - "); dash != std::string::npos) {
      std::istringstream tail(line.substr(dash + 3));
      std::string fstype, source;
      struct stat st;
      if (tail >> fstype >> source && !source.empty() && source.front() == '/' &&
          ::stat(UnescapeOctal(source).c_str(), &st) == 0 && S_ISBLK(st.st_mode)) {
        devices.emplace(st.st_rdev, why);
      }
    }
  }
  return Ok{};
}

}  // namespace

Expected<std::vector<StorageInUse>> ScanStorageInUse(const SystemPaths& paths) {
  // Block device -> why it is in use (the first reason found).
  std::map<dev_t, std::string> devices;
  const auto note = [&](dev_t d, const std::string& why) { devices.emplace(d, why); };
  std::vector<std::pair<std::string, struct stat>> swap_files;

  if (Status mounted = NoteMounted(paths.mountinfo, devices); !mounted) {
    return mounted.error();
  }
  {
    std::ifstream in(paths.swaps);
    if (!in && errno == ENOENT) {
      return Error{ENOENT, -1,
                   paths.swaps +
                       ": not there, so what is swapped on cannot be told (systemd's "
                       "ProcSubset=pid hides it: the shipped unit runs heavy phases "
                       "with the drop-in share/drivewatch/systemd/phases.conf)"};
    }
    if (!in) return util::SysError(errno, paths.swaps, "open");
    std::string line;
    std::getline(in, line);  // Filename Type Size Used Priority
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string name;
      if (!(fields >> name)) continue;
      const std::string path = UnescapeOctal(name);
      struct stat st;
      if (::stat(path.c_str(), &st) != 0) continue;
      if (S_ISBLK(st.st_mode)) {
        note(st.st_rdev, "is in use as swap (" + path + ")");
      } else if (S_ISREG(st.st_mode)) {
        swap_files.emplace_back(path, st);
      }
    }
  }
  const std::string class_block = paths.sysfs + "/class/block";
  for (const std::string& name : Entries(class_block)) {
    const auto holders = Entries(class_block + "/" + name + "/holders");
    if (holders.empty()) continue;
    const auto number = util::ReadAttribute(class_block + "/" + name + "/dev", util::kBlanksAndNul);
    const auto dev = number ? ParseDevNumber(*number) : std::nullopt;
    if (!dev) continue;
    std::string list;
    for (const std::string& h : holders) list += (list.empty() ? "" : ", ") + h;
    note(*dev, "is held by " + list);
  }

  std::vector<StorageInUse> scan;
  for (const auto& [dev, why] : devices) {
    StorageInUse u;
    u.why = why;
    u.remedy = why.rfind("is mounted", 0) == 0 ? "unmount it"
               : why.rfind("is in use as swap", 0) == 0
                   ? "swapoff it"
                   : "remove the device-mapper or md device first";
    u.device = dev;
    if (auto map = ResolveBlockDevice(dev, -1, "", paths)) {
      u.name = map->name;
      u.extents = map->Map(0, 0);
    } else {
      const std::string kernel_name = KernelName(BlockDir(dev, paths));
      u.name = kernel_name.empty() ? "block device " + DevNumber(dev) : "/dev/" + kernel_name;
      u.unresolved = map.error().message;
    }
    scan.push_back(std::move(u));
  }
  for (const auto& [path, st] : swap_files) {
    scan.push_back({path, "is in use as a swap file", "swapoff it", 0,
                    FileMap(st, path, BirthNs(-1, path)).extents, ""});
  }
  return scan;
}

}  // namespace drivewatch::aging
