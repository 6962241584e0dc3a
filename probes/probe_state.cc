// SPDX-License-Identifier: Apache-2.0
#include "probes/probe_state.h"

namespace drivewatch {

std::multimap<std::string, std::string> ParseStateLines(std::string_view text) {
  std::multimap<std::string, std::string> out;
  while (!text.empty()) {
    std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    const std::size_t space = line.find(' ');
    if (space == std::string_view::npos || space == 0) continue;
    out.emplace(std::string(line.substr(0, space)),
                std::string(line.substr(space + 1)));
  }
  return out;
}

}  // namespace drivewatch
