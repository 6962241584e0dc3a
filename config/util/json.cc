// SPDX-License-Identifier: Apache-2.0
#include "config/util/json.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

#include <nlohmann/json.hpp>


namespace drivewatch {
namespace {

// nlohmann-json escapes the strings written (and reads the text,
// config/util/json_parse.cc). What stays here is how numbers are written,
// how invalid UTF-8 is replaced, and reading values of any type.

// 2^63 and 2^64 as doubles, exactly representable: the bounds for exact
// double <-> integer comparisons and conversions.
constexpr double kTwo63 = 9223372036854775808.0;
constexpr double kTwo64 = 18446744073709551616.0;

// Length of the well-formed UTF-8 sequence at s[i], or 0 when it is not one
// (overlong forms, UTF-16 surrogates and code points past U+10FFFF are not,
// per RFC 3629 §4).
std::size_t Utf8SequenceLength(std::string_view s, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b0 = byte(i);
  if (b0 < 0x80) return 1;
  std::size_t len;
  unsigned char lo = 0x80, hi = 0xBF;  // range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (s.size() - i < len) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < len; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  }
  return len;
}

void DumpString(const std::string& s, std::string& out) {
  // Strings can come from drive identify data with arbitrary bytes; invalid
  // UTF-8 becomes U+FFFD so our own output always parses again (history
  // would otherwise hold a record no reader accepts). One U+FFFD for each
  // byte that starts no well-formed sequence, as drivewatch has always
  // written them: nlohmann-json's replace mode writes one for a whole
  // truncated sequence, which would change the bytes of such a record.
  std::string replaced;
  bool replacing = false;
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t length = Utf8SequenceLength(s, i);
    if (length == 0) {
      if (!replacing) replaced.assign(s, 0, i);
      replacing = true;
      replaced += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    if (replacing) replaced.append(s, i, length);
    i += length;
  }
  const Json value(replacing ? replaced : s);
  out += value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

void DumpDouble(double d, std::string& out) {
  if (!std::isfinite(d)) {
    out += "null";
    return;
  }
  // Shortest round trip, as written before nlohmann-json: its own format
  // differs (1900000000.0 for 1.9e+09), and history must not change.
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, d);
  std::string_view text(buf, static_cast<std::size_t>(r.ptr - buf));
  out += text;
  // Keep a double a double across a round trip: "1" would parse back as an
  // integer.
  if (text.find_first_of(".e") == std::string_view::npos) out += ".0";
}

void NewLine(std::string& out, int indent, int level) {
  if (indent < 0) return;
  out += '\n';
  out.append(static_cast<std::size_t>(indent) * static_cast<std::size_t>(level), ' ');
}

// The layout of arrays and objects:
// `dump_element` writes one item or member, one level deeper.
template <typename Elements, typename DumpElement>
void DumpContainer(char open, const Elements& elements, char close, std::string& out, int indent,
                   int level, const DumpElement& dump_element) {
  out += open;
  bool first = true;
  for (const auto& element : elements) {
    if (!first) out += ',';
    first = false;
    NewLine(out, indent, level + 1);
    dump_element(element);
  }
  if (!first) NewLine(out, indent, level);  // "[]" and "{}" stay on one line
  out += close;
}

// `dump` writes a value at a nesting level.
template <typename Items, typename DumpValue>
void DumpArray(const Items& items, std::string& out, int indent, int level,
               const DumpValue& dump) {
  DumpContainer('[', items, ']', out, indent, level,
                [&](const auto& item) { dump(item, level + 1); });
}

template <typename Members, typename DumpValue>
void DumpObject(const Members& members, std::string& out, int indent, int level,
                const DumpValue& dump) {
  DumpContainer('{', members, '}', out, indent, level, [&](const auto& member) {
    DumpString(member.first, out);
    out += indent >= 0 ? ": " : ":";
    dump(member.second, level + 1);
  });
}

void DumpNlohmann(const Json& value, std::string& out, int indent, int level) {
  const auto dump = [&](const Json& inner, int at) {
    DumpNlohmann(inner, out, indent, at);
  };
  switch (value.type()) {
    case Json::value_t::null: out += "null"; return;
    case Json::value_t::boolean: out += value.get<bool>() ? "true" : "false"; return;
    case Json::value_t::string:
      DumpString(value.get_ref<const Json::string_t&>(), out);
      return;
    case Json::value_t::number_integer:
      out += std::to_string(value.get<std::int64_t>());
      return;
    case Json::value_t::number_unsigned:
      out += std::to_string(value.get<std::uint64_t>());
      return;
    case Json::value_t::number_float: DumpDouble(value.get<double>(), out); return;
    case Json::value_t::array:
      DumpArray(value.get_ref<const Json::array_t&>(), out, indent, level, dump);
      return;
    case Json::value_t::object:
      DumpObject(value.get_ref<const Json::object_t&>(), out, indent, level, dump);
      return;
    case Json::value_t::binary:
    case Json::value_t::discarded:
      // Never parsed from JSON text; written as nlohmann-json writes them.
      out += value.dump();
      return;
  }
}

}  // namespace

std::string DumpJson(const Json& value, int indent) {
  std::string out;
  DumpNlohmann(value, out, indent, 0);
  return out;
}

const Json* Find(const Json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  for (const auto& [name, value] : object.get_ref<const Json::object_t&>()) {
    if (name == key) return &value;
  }
  return nullptr;
}

const Json::object_t& Members(const Json& object) {
  static const Json::object_t kNone;
  return object.is_object() ? object.get_ref<const Json::object_t&>() : kNone;
}

const Json::array_t& Items(const Json& array) {
  static const Json::array_t kNone;
  return array.is_array() ? array.get_ref<const Json::array_t&>() : kNone;
}

bool AsBool(const Json& value, bool fallback) {
  return value.is_boolean() ? value.get<bool>() : fallback;
}

double AsDouble(const Json& value, double fallback) {
  switch (value.type()) {
    case Json::value_t::number_integer: return static_cast<double>(value.get<std::int64_t>());
    case Json::value_t::number_unsigned: return static_cast<double>(value.get<std::uint64_t>());
    case Json::value_t::number_float: return value.get<double>();
    default: return fallback;
  }
}

std::int64_t AsInt(const Json& value, std::int64_t fallback) {
  switch (value.type()) {
    case Json::value_t::number_integer: return value.get<std::int64_t>();
    case Json::value_t::number_unsigned: {
      const std::uint64_t u = value.get<std::uint64_t>();
      return u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())
                 ? static_cast<std::int64_t>(u)
                 : fallback;
    }
    case Json::value_t::number_float: {
      // Truncated toward zero; NaN and out-of-range fail both tests.
      const double d = value.get<double>();
      return d >= -kTwo63 && d < kTwo63 ? static_cast<std::int64_t>(d) : fallback;
    }
    default: return fallback;
  }
}

std::uint64_t AsUint(const Json& value, std::uint64_t fallback) {
  switch (value.type()) {
    case Json::value_t::number_integer: {
      const std::int64_t i = value.get<std::int64_t>();
      return i >= 0 ? static_cast<std::uint64_t>(i) : fallback;
    }
    case Json::value_t::number_unsigned: return value.get<std::uint64_t>();
    case Json::value_t::number_float: {
      const double d = value.get<double>();
      return d > -1.0 && d < kTwo64 ? static_cast<std::uint64_t>(d) : fallback;
    }
    default: return fallback;
  }
}

const std::string& AsString(const Json& value) {
  static const std::string kEmpty;
  return value.is_string() ? value.get_ref<const std::string&>() : kEmpty;
}

}  // namespace drivewatch
