// SPDX-License-Identifier: Apache-2.0
// The known drives file in the state directory: one drive a line, so a
// drive missing after a restart still reports drivewatch_drive_up 0 for
// the grace period.
#include "exporter/drive_monitor.h"

#include <sstream>

namespace drivewatch {
namespace {

constexpr const char* kKnownDrivesHeader =
    "# drivewatch known drives v1: serial\tkernel_name\tmodel\tfirmware";

std::string Clean(const std::string& s) {
  std::string out = s;
  for (char& c : out) {
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  }
  return out;
}

}  // namespace

std::string FormatKnownDrives(const std::vector<KnownDrive>& drives) {
  std::string out = kKnownDrivesHeader;
  out += '\n';
  for (const auto& d : drives) {
    out += Clean(d.serial) + '\t' + Clean(d.kernel_name) + '\t' +
           Clean(d.model) + '\t' + Clean(d.firmware) + '\n';
  }
  return out;
}

std::vector<KnownDrive> ParseKnownDrives(const std::string& text,
                                         std::vector<std::string>* problems) {
  std::vector<KnownDrive> out;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> fields;
    size_t start = 0;
    for (;;) {
      const size_t tab = line.find('\t', start);
      fields.push_back(line.substr(start, tab - start));
      if (tab == std::string::npos) break;
      start = tab + 1;
    }
    if (fields.size() != 4 || fields[0].empty()) {
      if (problems) {
        problems->push_back("line " + std::to_string(number) +
                            ": expected 4 tab-separated fields with a serial");
      }
      continue;
    }
    out.push_back({fields[0], fields[1], fields[2], fields[3]});
  }
  return out;
}

}  // namespace drivewatch
