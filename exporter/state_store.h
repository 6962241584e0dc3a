// SPDX-License-Identifier: Apache-2.0
// The probes' durable memory (probes/probe_state.h) as crash-safe files in
// the state directory: one file per name, written with temp file, fsync,
// rename and directory fsync (config/util/durable_file.h, DESIGN.md decision 7).
#pragma once

#include <string>

#include "probes/probe_state.h"

namespace drivewatch {

class DirectoryStateStore : public StateStore {
 public:
  // `directory` is created (mode 0750) on the first Save.
  explicit DirectoryStateStore(std::string directory)
      : directory_(std::move(directory)) {}

  // Reads DIRECTORY/NAME.state.
  Expected<std::string> Load(const std::string& name) override;
  Status Save(const std::string& name, const std::string& content) override;

 private:
  std::string Path(const std::string& name) const;
  const std::string directory_;
};

}  // namespace drivewatch
