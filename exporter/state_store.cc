// SPDX-License-Identifier: Apache-2.0
#include "exporter/state_store.h"

#include "aging/durable_file.h"

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
  return ReadWholeFile(Path(name));
}

Status DirectoryStateStore::Save(const std::string& name,
                                 const std::string& content) {
  if (Status dir = EnsureDirectory(directory_); !dir) return dir;
  return WriteFileAtomically(Path(name), content, 0640);
}

}  // namespace drivewatch
