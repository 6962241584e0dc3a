// SPDX-License-Identifier: Apache-2.0
// JSON as drivewatch keeps it: what phases report as results, what history
// records and checkpoints hold, and what `drivewatch phase run` and
// `history` print. The value type is nlohmann-json's ordered_json, whose
// objects keep their members in insertion order so records read the way
// they were written. What nlohmann-json leaves to its user is here:
// - ParseJson refuses what a record must never hold (duplicate keys, deep
//   nesting, huge objects) and says where, in our words;
// - DumpJson writes the bytes drivewatch has always written;
// - the readers below return a fallback for a value of another type, where
//   nlohmann-json's own get<> throws: records are input, read from disk.
// Integers stay exact 64-bit values (number_integer, or number_unsigned
// when non-negative), so byte counters past 2^53 survive.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "config/util/expected.h"

namespace drivewatch {

using Json = nlohmann::ordered_json;

// The most members ParseJson takes in one object. drivewatch's own objects
// hold tens (a perf matrix's results a few hundred); the bound keeps a
// damaged or hand-made file from costing what an unbounded object would
// cost every reader that looks keys up (Find is linear).
inline constexpr std::size_t kMaxJsonObjectMembers = 10000;

// Strict RFC 8259 parsing, nesting at most 64 deep: no leading zeros, no
// trailing garbage, no raw control characters in strings, valid UTF-8 only,
// \u surrogate pairs joined into UTF-8 (lone surrogates refused), duplicate
// keys refused, at most kMaxJsonObjectMembers members in an object; time
// linear in the text. Integers that fit int64/uint64 stay exact, other
// numbers become doubles (out-of-range ones are an error). Errors say where
// (1-based, columns in characters) and what was wanted:
// "line 1, column 17: unexpected 'x' (expected ',' or '}')".
Expected<Json> ParseJson(std::string_view text);

// Compact single-line text (indent < 0), or pretty with `indent` spaces.
// Doubles are written shortest round-trip, with ".0" when they would look
// like an integer (so they stay doubles when parsed back); non-finite ones
// as null. Control characters are escaped (\n, \u001f); invalid UTF-8
// becomes U+FFFD so the output always parses. Never throws, unlike
// nlohmann-json's own dump() on invalid UTF-8.
std::string DumpJson(const Json& value, int indent = -1);

// The member `key` of an object; nullptr when absent or not an object.
// Linear: records are small, and a parsed object has at most
// kMaxJsonObjectMembers members.
const Json* Find(const Json& object, std::string_view key);

// An object's members in order, an array's items; empty for other types.
const Json::object_t& Members(const Json& object);
const Json::array_t& Items(const Json& array);

// Values, or `fallback` when the type differs. Numbers convert between each
// other: AsInt/AsUint take an exact integer when it fits (else the
// fallback) and truncate a double toward zero when it is in range.
bool AsBool(const Json& value, bool fallback = false);
double AsDouble(const Json& value, double fallback = 0);
std::int64_t AsInt(const Json& value, std::int64_t fallback = 0);
std::uint64_t AsUint(const Json& value, std::uint64_t fallback = 0);
const std::string& AsString(const Json& value);  // empty when not a string

}  // namespace drivewatch
