// SPDX-License-Identifier: Apache-2.0
// Crash-safe files for the state directory (DESIGN.md decision 7): a reader
// sees either the old content or the new, never a mix, even after a power
// cut. Phase state and history build on this.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "config/util/expected.h"

namespace drivewatch {

// Writes `content` to a temporary file beside `path`, fsyncs it, renames it
// over `path`, then fsyncs the directory so the rename itself is durable.
Status WriteFileAtomically(const std::string& path, const std::string& content,
                           int mode = 0640);

// Reads a whole file. A missing file is an error with errnum ENOENT.
Expected<std::string> ReadWholeFile(const std::string& path);

// Reads a whole file that holds `what` ("a retention study record"), which
// is never larger than `max_bytes`: a larger file is an error with errnum
// EFBIG, e.g. "/var/lib/drivewatch/phases/fill.checkpoint: 2097152 bytes,
// larger than a phase checkpoint may be (expected at most 1048576 bytes)".
// At most max_bytes + 1 bytes are read, so a huge (or endless) file costs
// no memory. State files are untrusted input (DESIGN.md decision 12).
Expected<std::string> ReadWholeFile(const std::string& path, std::size_t max_bytes,
                                    std::string_view what);

// Reads the first `max_bytes` bytes of a file, or all of a shorter one.
Expected<std::string> ReadFileHead(const std::string& path, std::size_t max_bytes);

// Creates `dir` (and its parents) with mode 0750 if missing, and checks that
// it is a writable directory.
Status EnsureDirectory(const std::string& dir);

}  // namespace drivewatch
