// SPDX-License-Identifier: Apache-2.0
// A value-or-error result for the drive layer and everything above it, in
// the spirit of C++23's std::expected (which C++20 lacks). Errors carry the errno, the NVMe status
// when the device answered with one, and a message that names the device.
#pragma once

#include <cassert>
#include <cerrno>
#include <string>
#include <utility>
#include <variant>

namespace drivewatch {

struct Error {
  // errno value, or 0 when the failure is not a system call's.
  int errnum = 0;
  // NVMe completion status (SCT << 8 | SC, with DNR/MORE bits), or -1 when
  // the device did not answer with a status.
  int nvme_status = -1;
  // Human text naming the thing and what went wrong, e.g.
  // "/dev/nvme0: get log page 02h: Invalid Field in Command (0x4002)".
  std::string message;

  // True when the controller says it does not implement the command, log
  // page or feature (Invalid Opcode, Invalid Field, Invalid Log Page).
  bool Unsupported() const;
};

template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}          // NOLINT: implicit by design
  Expected(Error error) : v_(std::move(error)) {}      // NOLINT: implicit by design

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { assert(ok()); return std::get<0>(v_); }
  const T& value() const& { assert(ok()); return std::get<0>(v_); }
  T&& value() && { assert(ok()); return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const { assert(!ok()); return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

// Expected<void> stand-in.
struct Ok {};
using Status = Expected<Ok>;

inline bool Error::Unsupported() const {
  if (nvme_status < 0) return errnum == EOPNOTSUPP || errnum == ENOTTY;
  const int sct = (nvme_status >> 8) & 0x7;
  const int sc = nvme_status & 0xff;
  // NVMe 2.0 §4.1.3: generic 01h Invalid Command Opcode, 02h Invalid Field in
  // Command; command specific 09h Invalid Log Page.
  return (sct == 0 && (sc == 0x01 || sc == 0x02)) || (sct == 1 && sc == 0x09);
}

}  // namespace drivewatch
