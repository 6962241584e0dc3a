// SPDX-License-Identifier: Apache-2.0
// A small JSON value: what phases report as results, what history records
// and checkpoints hold, and what `drivewatch phase run` and `history`
// print. Objects keep their members in insertion order so records read the
// way they were written. Numbers keep an exact 64-bit integer when they are
// one (byte counters pass 2^53), a double otherwise. nlohmann-json reads
// the text and escapes strings written (config/util/json.cc).
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "config/util/expected.h"

namespace drivewatch::aging {

namespace detail {
template <typename Value>
struct JsonTree;  // config/util/json_parse.cc
}  // namespace detail

class Json {
 public:
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };

  // The most members Parse takes in one object. drivewatch's own objects
  // hold tens (a perf matrix's results a few hundred); the bound keeps a
  // damaged or hand-made file from costing what an unbounded object would
  // cost every reader that looks keys up (Find is linear).
  static constexpr std::size_t kMaxObjectMembers = 10000;

  Json() = default;  // null
  Json(bool value);
  Json(double value);
  Json(int value);
  Json(std::int64_t value);
  Json(std::uint64_t value);
  // Any other integer type (uint32_t, size_t, long long...), which would
  // otherwise be ambiguous between the three above.
  template <std::integral T>
    requires(!std::same_as<T, bool>)
  Json(T value)
      : Json(std::is_signed_v<T> ? Json(static_cast<std::int64_t>(value))
                                 : Json(static_cast<std::uint64_t>(value))) {}
  Json(const char* value);
  Json(std::string value);
  static Json Array();
  static Json Object();

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::kNull; }

  // Object access. operator[] turns a null (or any other non-object) into
  // an empty object and appends a missing member; Find returns nullptr when
  // absent (or not an object). Lookups are linear: records are small, and
  // a parsed object has at most kMaxObjectMembers members.
  Json& operator[](std::string_view key);
  const Json* Find(std::string_view key) const;
  const std::vector<std::pair<std::string, Json>>& members() const;

  // Array access; Push turns a null (or any other non-array) into an array.
  // members() and items() are empty for other types.
  void Push(Json value);
  const std::vector<Json>& items() const;

  // Values, or `fallback` when the type differs. Numbers convert between
  // each other: AsInt/AsUint take an exact integer when it fits (else the
  // fallback) and truncate a double toward zero when it is in range.
  bool AsBool(bool fallback = false) const;
  double AsDouble(double fallback = 0) const;
  std::int64_t AsInt(std::int64_t fallback = 0) const;
  std::uint64_t AsUint(std::uint64_t fallback = 0) const;
  const std::string& AsString() const;  // empty when not a string

  // Compact single-line text (indent < 0), or pretty with `indent` spaces.
  // Doubles are written shortest round-trip, with ".0" when they would look
  // like an integer (so they stay doubles when parsed back); non-finite ones
  // as null. Control characters are escaped (\n, \u001f); invalid UTF-8
  // becomes U+FFFD so the output always parses.
  std::string Dump(int indent = -1) const;

  // Strict RFC 8259 parsing, nesting at most 64 deep: no leading zeros,
  // no trailing garbage, no raw control characters in strings, valid UTF-8
  // only, \u surrogate pairs joined into UTF-8 (lone surrogates refused),
  // duplicate keys refused, at most kMaxObjectMembers members in an object;
  // time linear in the text. Integers that fit int64/uint64 stay exact,
  // other numbers become doubles (out-of-range ones are an error). Errors
  // say where (1-based, columns in characters) and what was wanted:
  // "line 1, column 17: unexpected 'x' (expected ',' or '}')".
  static Expected<Json> Parse(std::string_view text);

  // Deep comparison; object members compare in order. Numbers compare by
  // value, so Json(1.0) == Json(1).
  bool operator==(const Json& other) const;

 private:
  Type type_ = Type::kNull;
  bool bool_ = false;
  // Numbers: kind of exact integer held, if any. kUnsigned only for values
  // above INT64_MAX; double_ always holds the (rounded) value too.
  enum class Int { kNone, kSigned, kUnsigned } int_ = Int::kNone;
  double double_ = 0;
  std::int64_t signed_ = 0;
  std::uint64_t unsigned_ = 0;
  std::string string_;
  std::vector<Json> items_;
  std::vector<std::pair<std::string, Json>> members_;

  // For the parser, which has checked that `key` is new: appends without
  // the linear lookup operator[] makes, which would make parsing an
  // object quadratic in its members.
  friend struct detail::JsonTree<Json>;
  void AppendMember(std::string key, Json value) {
    members_.emplace_back(std::move(key), std::move(value));
  }

  void DumpTo(std::string& out, int indent, int level) const;
};

}  // namespace drivewatch::aging
