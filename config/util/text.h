// SPDX-License-Identifier: Apache-2.0
// Text helpers shared across the libraries. Each keeps the exact output its
// callers printed before they shared it: messages and reports are compared
// byte for byte by tests and by people's scripts.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace drivewatch::util {

// " \t\r\n": what surrounds a value read from a file or a command.
inline constexpr std::string_view kBlanks = " \t\r\n";
// kBlanks and NUL, which some sysfs attributes end with.
inline constexpr std::string_view kBlanksAndNul{" \t\r\n\0", 5};

// `s` without the leading and trailing characters found in `blanks`.
std::string Trim(std::string_view s, std::string_view blanks = kBlanks);

// `s` between double quotes, as is (no escaping): "\"nvme0n1\"".
std::string Quote(std::string_view s);

// Lower-case hex of `v`, zero-padded to at least `digits`, between `prefix`
// and `suffix`: Hex(10) "a", Hex(10, 4, "0x") "0x000a", Hex(2, 2, "", "h") "02h".
std::string Hex(std::uint64_t v, int digits = 0, std::string_view prefix = {},
                std::string_view suffix = {});

// How FormatBytes() writes a binary multiple (B, KiB, MiB, ... of 1024).
enum class ByteStyle {
  // One decimal from KiB up, to PiB: "512 B", "1.5 GiB", "-2.0 KiB".
  kOneDecimal,
  // Whole numbers bare, else three significant digits, to PiB: "1 GiB",
  // "1.5 GiB"; a negative count stays in bytes ("-2048 B").
  kSignificant,
  // One decimal below GiB and two from GiB up, to EiB, as capacities read
  // best: "1.5 MiB", "465.76 GiB".
  kCapacity,
};

// "1.5 GiB": a byte count for people, in the given style.
std::string FormatBytes(long double bytes, ByteStyle style);

}  // namespace drivewatch::util
