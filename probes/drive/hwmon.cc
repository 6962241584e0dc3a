// SPDX-License-Identifier: Apache-2.0
#include "probes/drive/hwmon.h"

#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "config/util/sys.h"

namespace drivewatch {
namespace {

// The kernel answers a failed SMART read with an error on read(2), which
// util::ReadAttribute() reports as "PATH: read: ...".
using util::ReadAttribute;

Expected<double> ReadMillidegrees(const std::string& path) {
  auto text = ReadAttribute(path);
  if (!text) return text.error();
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text->c_str(), &end, 10);
  if (end == text->c_str() || errno != 0) {
    return Error{EINVAL, -1, path + ": not a number: \"" + *text + "\""};
  }
  return static_cast<double>(v) / 1000.0;
}

// hwmonN entries of `dir`, sorted.
std::vector<std::string> HwmonEntries(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (const dirent* e = readdir(d)) {
    if (std::strncmp(e->d_name, "hwmon", 5) == 0 && e->d_name[5] != '\0') {
      out.push_back(dir + "/" + e->d_name);
    }
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

Expected<HwmonTemperatures> ReadNvmeHwmon(const std::string& sysfs_root,
                                          const std::string& controller) {
  const std::string ctrl_dir = sysfs_root + "/class/nvme/" + controller;
  // Since Linux 5.10 the hwmon device hangs off the controller's class
  // device; before, off its parent (the PCI function).
  std::vector<std::string> candidates = HwmonEntries(ctrl_dir);
  for (auto& c : HwmonEntries(ctrl_dir + "/device/hwmon")) {
    candidates.push_back(std::move(c));
  }
  for (const std::string& dir : candidates) {
    auto name = ReadAttribute(dir + "/name");
    if (name && *name != "nvme") continue;
    auto input = ReadMillidegrees(dir + "/temp1_input");
    if (!input) return input.error();
    HwmonTemperatures t;
    t.directory = dir;
    t.composite_celsius = *input;
    if (auto v = ReadMillidegrees(dir + "/temp1_max")) t.max_celsius = *v;
    if (auto v = ReadMillidegrees(dir + "/temp1_min")) t.min_celsius = *v;
    if (auto v = ReadMillidegrees(dir + "/temp1_crit")) t.crit_celsius = *v;
    return t;
  }
  return Error{ENOENT, -1,
               ctrl_dir + ": no hwmon device named \"nvme\" (kernel built "
                          "without CONFIG_NVME_HWMON?)"};
}

}  // namespace drivewatch
