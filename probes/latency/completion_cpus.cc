// SPDX-License-Identifier: Apache-2.0
#include "probes/latency/completion_cpus.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <iterator>
#include <set>
#include <system_error>

#include "config/util/sys.h"

namespace drivewatch {
namespace {

namespace fs = std::filesystem;
using util::ReadAttribute;

// A loop device over a loop device over ...: deeper than this is a loop of
// names, or not worth following.
constexpr int kMaxHops = 8;

bool Exists(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

struct Walk {
  const std::string& sysfs;
  const std::string& procfs;
  std::set<int> cpus;
  std::string via;
  bool unknown = false;

  void Device(dev_t dev, int hops) {
    if (hops > kMaxHops) {
      unknown = true;
      return;
    }
    std::error_code ec;
    fs::path dir = fs::canonical(sysfs + "/dev/block/" + std::to_string(major(dev)) + ":" +
                                     std::to_string(minor(dev)),
                                 ec);
    if (ec) {
      unknown = true;
      return;
    }
    if (Exists(dir / "partition")) dir = dir.parent_path();
    if (auto backing = ReadAttribute((dir / "loop" / "backing_file").string())) {
      struct stat st {};
      if (::stat(backing->c_str(), &st) != 0) {
        unknown = true;  // "(deleted)", or gone since
        return;
      }
      Device(S_ISBLK(st.st_mode) ? st.st_rdev : st.st_dev, hops + 1);
      return;
    }
    bool slaves = false;
    for (const auto& s : fs::directory_iterator(dir / "slaves", ec)) {
      slaves = true;
      auto text = ReadAttribute((s.path() / "dev").string());
      unsigned maj = 0, min = 0;
      if (!text || std::sscanf(text->c_str(), "%u:%u", &maj, &min) != 2) {
        unknown = true;
        return;
      }
      Device(makedev(maj, min), hops + 1);
    }
    if (slaves) return;
    Disk(dir);
  }

  void Disk(const fs::path& dir) {
    std::error_code ec, root_ec;
    const fs::path root = fs::canonical(sysfs, root_ec);
    fs::path p = fs::canonical(dir / "device", ec);
    std::vector<std::string> found;
    while (!ec && !p.empty() && p != root && p != p.root_path()) {
      if (Exists(p / "msi_irqs")) {
        for (const auto& v : fs::directory_iterator(p / "msi_irqs", ec)) {
          found.push_back(v.path().filename().string());
        }
        break;
      }
      p = p.parent_path();
    }
    if (found.empty()) {
      unknown = true;
      return;
    }
    std::sort(found.begin(), found.end(), [](const std::string& a, const std::string& b) {
      return a.size() != b.size() ? a.size() < b.size() : a < b;
    });
    std::string list;
    for (const std::string& irq : found) {
      auto text = ReadAttribute(procfs + "/irq/" + irq + "/effective_affinity_list");
      if (!text || text->empty()) text = ReadAttribute(procfs + "/irq/" + irq + "/smp_affinity_list");
      if (!text) continue;  // a vector not set up: it takes nothing
      for (int c : ParseCpuList(*text)) cpus.insert(c);
      list += (list.empty() ? "" : ", ") + irq;
    }
    if (list.empty()) {
      unknown = true;
      return;
    }
    if (!via.empty()) via += "; ";
    via += "/dev/" + dir.filename().string() + " (irq " + list + ")";
  }
};

}  // namespace

std::vector<int> ParseCpuList(const std::string& text) {
  std::vector<int> out;
  std::string_view rest = text;
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\n')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\n')) item.remove_suffix(1);
    if (item.empty()) continue;
    int lo = 0, hi = 0;
    const std::size_t dash = item.find('-');
    const std::string_view a = item.substr(0, dash);
    auto r = std::from_chars(a.data(), a.data() + a.size(), lo);
    if (r.ec != std::errc{} || r.ptr != a.data() + a.size()) return {};
    hi = lo;
    if (dash != std::string_view::npos) {
      const std::string_view b = item.substr(dash + 1);
      r = std::from_chars(b.data(), b.data() + b.size(), hi);
      if (r.ec != std::errc{} || r.ptr != b.data() + b.size() || hi < lo) return {};
    }
    if (lo < 0 || hi > 65535) return {};
    for (int c = lo; c <= hi; ++c) out.push_back(c);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

CompletionCpus FindCompletionCpus(int fd, const std::string& sysfs_root,
                                  const std::string& procfs_root) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !(S_ISBLK(st.st_mode) || S_ISREG(st.st_mode))) return {};
  Walk walk{sysfs_root, procfs_root, {}, {}, false};
  walk.Device(S_ISBLK(st.st_mode) ? st.st_rdev : st.st_dev, 0);
  if (walk.unknown || walk.cpus.empty()) return {};
  return {std::vector<int>(walk.cpus.begin(), walk.cpus.end()), walk.via};
}

ReactorPlace PlaceReactor(const std::vector<const CompletionCpus*>& targets,
                          const std::vector<int>& allowed) {
  std::set<int> wanted;
  std::set<std::string> via;
  bool unknown = false;
  for (const CompletionCpus* t : targets) {
    unknown = unknown || t->cpus.empty();
    wanted.insert(t->cpus.begin(), t->cpus.end());
    via.insert(t->via);
  }
  ReactorPlace place;
  if (!unknown) {
    std::set_intersection(wanted.begin(), wanted.end(), allowed.begin(), allowed.end(),
                          std::back_inserter(place.cpus));
  }
  if (place.cpus.empty()) place.cpus = allowed;
  std::string list, from;
  for (int c : place.cpus) list += (list.empty() ? "" : ",") + std::to_string(c);
  for (const std::string& v : via) from += (from.empty() ? "" : "; ") + v;
  if (place.cpus == allowed) {
    place.why = "any of CPUs " + list + " (a target's completions may come to any CPU)";
  } else {
    place.why = std::string("CPU") + (place.cpus.size() > 1 ? "s " : " ") + list +
                ", where the kernel signals its reads' completions: " + from;
  }
  return place;
}

}  // namespace drivewatch
