// SPDX-License-Identifier: Apache-2.0
// nlohmann::ordered_json read and written the way drivewatch's records
// need: what nlohmann-json itself does not do. Parsing refuses what
// Json::Parse refuses (duplicate keys, deep nesting, huge objects...) with
// the same messages; dumping writes the bytes Json::Dump writes, so history
// and checkpoints keep their exact text. Integers stay exact 64-bit values
// (number_integer, or number_unsigned above INT64_MAX).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "config/util/expected.h"

namespace drivewatch::aging {

// The most members ParseJson takes in one object; see
// Json::kMaxObjectMembers, which is the same bound.
inline constexpr std::size_t kMaxJsonObjectMembers = 10000;

// Strict RFC 8259 parsing, as Json::Parse (config/util/json.h): nesting at
// most 64 deep, no leading zeros, no trailing garbage, no raw control
// characters, valid UTF-8 only, lone surrogates and duplicate keys refused,
// at most kMaxJsonObjectMembers members in an object. Errors say where:
// "line 1, column 17: unexpected 'x' (expected ',' or '}')".
Expected<nlohmann::ordered_json> ParseJson(std::string_view text);

// Compact text (indent < 0) or pretty with `indent` spaces, byte for byte
// as Json::Dump: doubles shortest round-trip with ".0" when they would look
// like an integer, non-finite ones as null, invalid UTF-8 as U+FFFD.
std::string DumpJson(const nlohmann::ordered_json& value, int indent = -1);

}  // namespace drivewatch::aging
