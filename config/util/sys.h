// SPDX-License-Identifier: Apache-2.0
// System-call helpers shared across the libraries: errors that name the
// thing and the call, an fd closed on scope exit, and sysfs attributes.
#pragma once

#include <string>
#include <string_view>

#include "config/util/expected.h"
#include "config/util/text.h"

namespace drivewatch::util {

// "SUBJECT: CALL: strerror(err)", or "SUBJECT: strerror(err)" without a call:
// "/var/lib/drivewatch/history: fsync: No space left on device".
Error SysError(int err, std::string_view subject, std::string_view call = {});

// Closes an fd (if it is one) on scope exit.
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser();
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// fsync(2) of a directory, which makes a new or renamed entry in it
// durable. Errors read "DIR: open directory: ..." or "DIR: fsync directory: ...".
Status FsyncDirectory(const std::string& dir);

// A sysfs attribute (or another small text file, at most a page), without
// the `blanks` around it. Errors read "PATH: strerror" when it cannot be
// opened and "PATH: read: strerror" when read(2) fails, as it does for a
// hwmon temperature whose SMART read failed.
Expected<std::string> ReadAttribute(const std::string& path,
                                    std::string_view blanks = kBlanks);

}  // namespace drivewatch::util
