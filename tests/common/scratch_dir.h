// SPDX-License-Identifier: Apache-2.0
// A test's own directory, and a file target in it: what the tests that
// write files, histories, studies or run phases share.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>

#include "config/config.h"

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

// An aging file target: drivewatch's own file of `file_size` bytes in
// `directory` (made here if missing), with the 1 % free-space reserve the
// tests' small file systems allow.
inline config::AgingTarget FileTarget(const std::string& name, const std::string& directory,
                                      std::uint64_t file_size) {
  std::filesystem::create_directories(directory);
  config::AgingTarget t;
  t.name = name;
  t.directory = directory;
  t.file_size = file_size;
  t.min_free_ratio = 0.01;
  return t;
}

}  // namespace drivewatch::testing
