// SPDX-License-Identifier: Apache-2.0
#include "config/util/json.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

#include <nlohmann/json.hpp>

#include "config/util/json_strict.h"

namespace drivewatch::aging {
namespace {

// nlohmann-json escapes the strings written (and reads the text,
// config/util/json_parse.cc). What stays here is how numbers are written.
using NlohmannJson = nlohmann::ordered_json;

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
  const NlohmannJson value(replacing ? replaced : s);
  out += value.dump(-1, ' ', false, NlohmannJson::error_handler_t::replace);
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

// The layout of arrays and objects, shared by Json::Dump and DumpJson:
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

void DumpNlohmann(const NlohmannJson& value, std::string& out, int indent, int level) {
  const auto dump = [&](const NlohmannJson& inner, int at) {
    DumpNlohmann(inner, out, indent, at);
  };
  switch (value.type()) {
    case NlohmannJson::value_t::null: out += "null"; return;
    case NlohmannJson::value_t::boolean: out += value.get<bool>() ? "true" : "false"; return;
    case NlohmannJson::value_t::string:
      DumpString(value.get_ref<const NlohmannJson::string_t&>(), out);
      return;
    case NlohmannJson::value_t::number_integer:
      out += std::to_string(value.get<std::int64_t>());
      return;
    case NlohmannJson::value_t::number_unsigned:
      out += std::to_string(value.get<std::uint64_t>());
      return;
    case NlohmannJson::value_t::number_float: DumpDouble(value.get<double>(), out); return;
    case NlohmannJson::value_t::array:
      DumpArray(value.get_ref<const NlohmannJson::array_t&>(), out, indent, level, dump);
      return;
    case NlohmannJson::value_t::object:
      DumpObject(value.get_ref<const NlohmannJson::object_t&>(), out, indent, level, dump);
      return;
    case NlohmannJson::value_t::binary:
    case NlohmannJson::value_t::discarded:
      // Never parsed from JSON text; written as nlohmann-json writes them.
      out += value.dump();
      return;
  }
}

}  // namespace

std::string DumpJson(const NlohmannJson& value, int indent) {
  std::string out;
  DumpNlohmann(value, out, indent, 0);
  return out;
}

Json::Json(bool value) : type_(Type::kBool), bool_(value) {}

Json::Json(double value) : type_(Type::kNumber), double_(value) {}

Json::Json(int value) : Json(static_cast<std::int64_t>(value)) {}

Json::Json(std::int64_t value)
    : type_(Type::kNumber),
      int_(Int::kSigned),
      double_(static_cast<double>(value)),
      signed_(value) {}

Json::Json(std::uint64_t value)
    : type_(Type::kNumber), double_(static_cast<double>(value)) {
  // Kept signed whenever it fits, so kUnsigned always means > INT64_MAX and
  // the same integer has one representation.
  if (value <= static_cast<std::uint64_t>(
                   std::numeric_limits<std::int64_t>::max())) {
    int_ = Int::kSigned;
    signed_ = static_cast<std::int64_t>(value);
  } else {
    int_ = Int::kUnsigned;
    unsigned_ = value;
  }
}

Json::Json(const char* value) : Json(std::string(value ? value : "")) {}

Json::Json(std::string value)
    : type_(Type::kString), string_(std::move(value)) {}

Json Json::Array() {
  Json j;
  j.type_ = Type::kArray;
  return j;
}

Json Json::Object() {
  Json j;
  j.type_ = Type::kObject;
  return j;
}

Json& Json::operator[](std::string_view key) {
  if (type_ != Type::kObject) *this = Object();
  for (auto& [name, value] : members_) {
    if (name == key) return value;
  }
  members_.emplace_back(std::string(key), Json());
  return members_.back().second;
}

const Json* Json::Find(std::string_view key) const {
  if (type_ != Type::kObject) return nullptr;
  for (const auto& [name, value] : members_) {
    if (name == key) return &value;
  }
  return nullptr;
}

const std::vector<std::pair<std::string, Json>>& Json::members() const {
  return members_;  // empty unless an object: only objects ever fill it
}

void Json::Push(Json value) {
  if (type_ != Type::kArray) *this = Array();
  items_.push_back(std::move(value));
}

const std::vector<Json>& Json::items() const { return items_; }

bool Json::AsBool(bool fallback) const {
  return type_ == Type::kBool ? bool_ : fallback;
}

double Json::AsDouble(double fallback) const {
  return type_ == Type::kNumber ? double_ : fallback;
}

std::int64_t Json::AsInt(std::int64_t fallback) const {
  if (type_ != Type::kNumber) return fallback;
  switch (int_) {
    case Int::kSigned: return signed_;
    case Int::kUnsigned: return fallback;  // > INT64_MAX
    case Int::kNone:
      // Truncated toward zero; NaN and out-of-range fail both tests.
      if (double_ >= -kTwo63 && double_ < kTwo63) {
        return static_cast<std::int64_t>(double_);
      }
      return fallback;
  }
  return fallback;
}

std::uint64_t Json::AsUint(std::uint64_t fallback) const {
  if (type_ != Type::kNumber) return fallback;
  switch (int_) {
    case Int::kSigned:
      return signed_ >= 0 ? static_cast<std::uint64_t>(signed_) : fallback;
    case Int::kUnsigned: return unsigned_;
    case Int::kNone:
      if (double_ > -1.0 && double_ < kTwo64) {
        return static_cast<std::uint64_t>(double_);
      }
      return fallback;
  }
  return fallback;
}

const std::string& Json::AsString() const {
  static const std::string kEmpty;
  return type_ == Type::kString ? string_ : kEmpty;
}

void Json::DumpTo(std::string& out, int indent, int level) const {
  const auto dump = [&](const Json& inner, int at) { inner.DumpTo(out, indent, at); };
  switch (type_) {
    case Type::kNull: out += "null"; return;
    case Type::kBool: out += bool_ ? "true" : "false"; return;
    case Type::kString: DumpString(string_, out); return;
    case Type::kNumber:
      switch (int_) {
        case Int::kSigned: out += std::to_string(signed_); return;
        case Int::kUnsigned: out += std::to_string(unsigned_); return;
        case Int::kNone: DumpDouble(double_, out); return;
      }
      return;
    case Type::kArray: DumpArray(items_, out, indent, level, dump); return;
    case Type::kObject: DumpObject(members_, out, indent, level, dump); return;
  }
}

std::string Json::Dump(int indent) const {
  std::string out;
  DumpTo(out, indent, 0);
  return out;
}

bool Json::operator==(const Json& other) const {
  if (type_ != other.type_) return false;
  switch (type_) {
    case Type::kNull: return true;
    case Type::kBool: return bool_ == other.bool_;
    case Type::kString: return string_ == other.string_;
    case Type::kArray: return items_ == other.items_;
    case Type::kObject: return members_ == other.members_;
    case Type::kNumber: break;
  }
  // Numbers compare by value, so 1.0 == 1 and an exact integer is never
  // confused with a nearby double (2^53 + 1 != 2^53 as a double).
  const Json& a = *this;
  const Json& b = other;
  if (a.int_ == Int::kNone && b.int_ == Int::kNone) return a.double_ == b.double_;
  if (a.int_ != Int::kNone && b.int_ != Int::kNone) {
    return a.int_ == b.int_ && a.signed_ == b.signed_ &&
           a.unsigned_ == b.unsigned_;
  }
  const Json& d = a.int_ == Int::kNone ? a : b;
  const Json& i = a.int_ == Int::kNone ? b : a;
  if (d.double_ != std::trunc(d.double_)) return false;  // also NaN, inf
  if (i.int_ == Int::kSigned) {
    return d.double_ >= -kTwo63 && d.double_ < kTwo63 &&
           static_cast<std::int64_t>(d.double_) == i.signed_;
  }
  return d.double_ >= 0 && d.double_ < kTwo64 &&
         static_cast<std::uint64_t>(d.double_) == i.unsigned_;
}

}  // namespace drivewatch::aging
