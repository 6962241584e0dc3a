// SPDX-License-Identifier: Apache-2.0
// Crash-safe files for the state directory (DESIGN.md decision 7): a reader
// sees either the old content or the new, never a mix, even after a power
// cut. Phase state and history build on this.
#pragma once

#include <string>

#include "probes/expected.h"

namespace drivewatch {

// Writes `content` to a temporary file beside `path`, fsyncs it, renames it
// over `path`, then fsyncs the directory so the rename itself is durable.
Status WriteFileAtomically(const std::string& path, const std::string& content,
                           int mode = 0640);

// Reads a whole file. A missing file is an error with errnum ENOENT.
Expected<std::string> ReadWholeFile(const std::string& path);

// Creates `dir` (and its parents) with mode 0750 if missing, and checks that
// it is a writable directory.
Status EnsureDirectory(const std::string& dir);

}  // namespace drivewatch
