// SPDX-License-Identifier: Apache-2.0
// What the tests that run phases through the runner share: a directory of
// the test's own under /var/tmp (a disk file system: O_DIRECT works there,
// while /tmp may be tmpfs) holding data/ for file targets and state/ for
// the state directory, with the config and the runner's options pointing
// there. A fixture derives from it and, when it has more to set up, calls
// PhaseRunFixture::SetUp() first.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>

#include "aging/runner/phase_runner.h"
#include "config/config.h"

namespace drivewatch::aging {

class PhaseRunFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    // The suite and the process (ctest runs each test in its own): short,
    // for a pgbench server's socket in it (a socket's path is at most 107
    // bytes).
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = test->test_suite_name();
    std::replace(name.begin(), name.end(), '/', '_');  // parameterized tests
    dir_ = std::filesystem::path("/var/tmp") /
           ("dw-" + name + "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "data");
    config_.state_directory = (dir_ / "state").string();
    options_.state_directory = config_.state_directory;
    options_.paths.study_register = config_.state_directory + "/register";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A file target `name`: drivewatch's own file of `size` bytes in data/,
  // with the 1 % free-space reserve the tests' small file systems allow.
  config::AgingTarget DataFileTarget(const std::string& name, std::uint64_t size) const {
    config::AgingTarget t;
    t.name = name;
    t.directory = (dir_ / "data").string();
    t.file_size = size;
    t.min_free_ratio = 0.01;
    return t;
  }

  std::filesystem::path dir_;
  config::Config config_;
  PhaseRunnerOptions options_;
};

}  // namespace drivewatch::aging
