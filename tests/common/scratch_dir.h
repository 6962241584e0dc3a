// SPDX-License-Identifier: Apache-2.0
// A test's own directory: what the tests that write files, histories or
// studies share.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

namespace drivewatch::testing {

// A fresh directory under /var/tmp (a disk file system: O_DIRECT works
// there, while /tmp may be tmpfs), named after `tag` and removed with
// everything in it when the object goes. A directory that cannot be made
// fails the test that asked for it.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& tag) {
    std::string name = "/var/tmp/dw-" + tag + ".XXXXXX";
    if (::mkdtemp(name.data()) == nullptr) {
      ADD_FAILURE() << "mkdtemp " << name << ": " << std::strerror(errno);
      return;
    }
    path_ = name;
  }
  ~ScratchDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }
  // `relative` inside it.
  std::string operator/(const std::string& relative) const { return path_ + "/" + relative; }

 private:
  std::string path_;
};

}  // namespace drivewatch::testing
