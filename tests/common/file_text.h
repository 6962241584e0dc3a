// SPDX-License-Identifier: Apache-2.0
// Whole files as strings, for tests that put fixture bytes in place and
// read back what the code wrote.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

namespace drivewatch::testing {

inline std::string ReadFileText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void WriteFileText(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

}  // namespace drivewatch::testing
