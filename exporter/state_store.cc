// SPDX-License-Identifier: Apache-2.0
#include "exporter/state_store.h"

#include "config/util/durable_file.h"

namespace drivewatch {

std::string DirectoryStateStore::Path(const std::string& name) const {
  // Serials are printable ASCII (TrimIdentifyString) but may hold '/'.
  std::string safe = name;
  for (char& c : safe) {
    if (c == '/' || c == ' ') c = '_';
  }
  return directory_ + "/" + safe + ".state";
}

Expected<std::string> DirectoryStateStore::Load(const std::string& name) {
  // The probes keep a few lines each (a count per event type or status);
  // anything near this is not what they saved.
  constexpr std::size_t kMaxStateFileBytes = std::size_t{1} << 20;
  return ReadWholeFile(Path(name), kMaxStateFileBytes, "a probe state file");
}

Status DirectoryStateStore::Save(const std::string& name,
                                 const std::string& content) {
  if (Status dir = EnsureDirectory(directory_); !dir) return dir;
  return WriteFileAtomically(Path(name), content, 0640);
}

}  // namespace drivewatch
