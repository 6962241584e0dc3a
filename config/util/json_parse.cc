// SPDX-License-Identifier: Apache-2.0
// ParseJson: nlohmann-json reads the text through its SAX interface,
// building the value as it goes. What stays here is what it leaves to its
// user: the nesting limit, duplicate keys, the size of an object, and
// errors in our words with a line and column.
#include <algorithm>
#include <cstdio>
#include <iterator>
#include <string>
#include <unordered_set>
#include <utility>

#include <nlohmann/json.hpp>

#include "config/util/json.h"

namespace drivewatch {
namespace {

constexpr int kMaxDepth = 64;


std::string Describe(std::string_view text, std::size_t at) {
  if (at >= text.size()) return "end of input";
  const unsigned char c = static_cast<unsigned char>(text[at]);
  char buf[16];
  if (c >= 0x20 && c < 0x7F) {
    std::snprintf(buf, sizeof buf, "'%c'", c);
  } else {
    std::snprintf(buf, sizeof buf, "byte 0x%02x", c);
  }
  return buf;
}

// "line 3, column 7: <what>". Line and column are 1-based; the column
// counts characters (UTF-8 sequences), as editors do, not bytes.
Error ErrorAt(std::string_view text, std::size_t at, const std::string& what) {
  std::size_t line = 1, column = 1;
  const std::size_t end = std::min(at, text.size());
  for (std::size_t i = 0; i < end; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      ++line;
      column = 1;
    } else if ((c & 0xC0) != 0x80) {
      ++column;
    }
  }
  return Error{EINVAL, -1,
               "line " + std::to_string(line) + ", column " + std::to_string(column) + ": " +
                   what};
}

// The lead byte of the UTF-8 sequence nlohmann-json found ill-formed at
// `at`: it stops at the first byte that cannot continue the sequence, and
// the error names the sequence. Everything before it in the string is
// well-formed.
std::size_t Utf8SequenceStart(std::string_view s, std::size_t at) {
  for (std::size_t back = 1; back <= 3 && back <= at; ++back) {
    const unsigned char c = static_cast<unsigned char>(s[at - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte
    const std::size_t length = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return back < length ? at - back : at;
  }
  return at;
}

// The literal (true, false or null) whose beginning ends just before `at`,
// where reading it failed; none when no literal begins there.
struct LiteralPrefix {
  std::string_view word;  // empty: none
  std::size_t start = 0;
};
LiteralPrefix LiteralBefore(std::string_view text, std::size_t at) {
  for (std::string_view word : {"true", "false", "null"}) {
    for (std::size_t length = 1; length < word.size() && length <= at; ++length) {
      if (text.substr(at - length, length) == word.substr(0, length)) {
        return {word, at - length};
      }
    }
  }
  return {};
}

// Iterates over the text for nlohmann-json and remembers how far it has
// read, so that a SAX event knows where in the text it happened.
class TrackedIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  TrackedIterator(const char* at, const char** read_end) : at_(at), read_end_(read_end) {}
  reference operator*() const { return *at_; }
  TrackedIterator& operator++() {
    *read_end_ = ++at_;
    return *this;
  }
  TrackedIterator operator++(int) {
    TrackedIterator before = *this;
    ++*this;
    return before;
  }
  bool operator==(const TrackedIterator& other) const { return at_ == other.at_; }

 private:
  const char* at_;
  const char** read_end_;
};

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// Appends a member without the linear search ordered_map's own insertion
// makes, which would make parsing an object quadratic in its members: the
// parser has checked that `key` is new.
void AppendMember(Json& object, std::string key, Json value) {
  static_cast<Json::object_t::Container&>(object.get_ref<Json::object_t&>())
      .emplace_back(std::move(key), std::move(value));
}

// Builds a Json from nlohmann-json's SAX events and turns its errors into
// ours: "line 1, column 8: unexpected '\"' (expected ',' or '}')".
class JsonBuilder final : public nlohmann::json_sax<Json> {
 public:
  // `text` is all of the input, for positions and for naming characters;
  // nlohmann-json reads its first `parsed` bytes, and `read_end` is how far
  // it has got.
  JsonBuilder(std::string_view text, std::size_t parsed, const char* const& read_end)
      : text_(text), parsed_(parsed), read_end_(read_end) {}

  Json TakeValue() { return std::move(value_); }
  const Error& error() const { return error_; }

  bool null() override { return Add(Json()); }
  bool boolean(bool value) override { return Add(Json(value)); }
  bool number_integer(number_integer_t value) override { return Add(Json(value)); }
  bool number_unsigned(number_unsigned_t value) override { return Add(Json(value)); }
  bool number_float(number_float_t value, const string_t&) override { return Add(Json(value)); }
  bool string(string_t& value) override { return Add(Json(std::move(value))); }
  bool binary(binary_t&) override { return false; }  // only in binary formats, never in JSON text

  bool start_object(std::size_t) override { return Open(Json::object()); }
  bool key(string_t& name) override {
    OpenContainer& object = open_.back();
    const auto& so_far = object.value.get_ref<const Json::object_t&>();
    const std::size_t members = so_far.size();
    if (members >= kMaxJsonObjectMembers) {
      const std::string most = std::to_string(kMaxJsonObjectMembers);
      return Fail(KeyStart(),
                  "more than " + most + " members in one object (expected at most " + most + ")");
    }
    // RFC 8259 §4 leaves duplicate names to the implementation; a record
    // with two different "outcome"s is ambiguous, so refuse it. A small
    // object is searched; a large one keeps a set of its keys, or the
    // check would make parsing quadratic in the object's members.
    bool duplicate;
    if (members < kSearchedMembers) {
      duplicate = std::any_of(so_far.begin(), so_far.end(),
                              [&](const auto& member) { return member.first == name; });
    } else {
      if (object.keys.empty()) {
        for (const auto& member : so_far) object.keys.insert(member.first);
      }
      duplicate = !object.keys.insert(name).second;
    }
    if (duplicate) return Fail(KeyStart(), "duplicate key " + DumpJson(Json(name)));
    object.key = std::move(name);
    return true;
  }
  bool end_object() override { return Close(); }
  bool start_array(std::size_t) override { return Open(Json::array()); }
  bool end_array() override { return Close(); }

  bool parse_error(std::size_t position, const std::string& token,
                   const nlohmann::detail::exception& ex) override;

 private:
  struct OpenContainer {
    Json value;
    std::string key;  // objects: the member the next value is for
    // Objects of kSearchedMembers members or more: the keys so far.
    std::unordered_set<std::string> keys;
  };
  static constexpr std::size_t kSearchedMembers = 32;

  std::size_t ReadSoFar() const { return static_cast<std::size_t>(read_end_ - text_.data()); }

  // The opening quote of the key just read: nlohmann-json has read up to
  // its closing quote. A quote inside the key follows an odd number of
  // backslashes; the opening one follows none.
  std::size_t KeyStart() const {
    std::size_t at = ReadSoFar() - 1;
    while (at > 0) {
      --at;
      if (text_[at] != '"') continue;
      std::size_t backslashes = 0;
      while (backslashes < at && text_[at - 1 - backslashes] == '\\') ++backslashes;
      if (backslashes % 2 == 0) return at;
    }
    return at;
  }

  bool Add(Json value) {
    if (open_.empty()) {
      value_ = std::move(value);
      complete_ = true;
    } else if (open_.back().value.is_array()) {
      open_.back().value.push_back(std::move(value));
    } else {
      AppendMember(open_.back().value, std::move(open_.back().key), std::move(value));
    }
    return true;
  }

  bool Open(Json container) {
    if (open_.size() >= kMaxDepth) {
      // nlohmann-json's parser does not recurse, but DumpJson, == and
      // copies of a value do.
      return Fail(ReadSoFar() - 1, "nesting deeper than " + std::to_string(kMaxDepth) + " levels");
    }
    open_.push_back({std::move(container), {}});
    return true;
  }

  bool Close() {
    Json done = std::move(open_.back().value);
    open_.pop_back();
    return Add(std::move(done));
  }

  bool Fail(std::size_t at, const std::string& what) {
    error_ = ErrorAt(text_, at, what);
    return false;
  }

  // Where the token nlohmann-json could not use starts: one it read in
  // full, ending just before `position`, or one it failed to read at
  // `failed_at`.
  std::size_t TokenStart(std::size_t position, const std::string& token, bool read_in_full,
                         const std::string& problem, std::size_t failed_at) const;
  bool FailInsideToken(const std::string& problem, std::size_t failed_at);

  std::string_view text_;
  std::size_t parsed_;
  const char* const& read_end_;
  std::vector<OpenContainer> open_;
  Json value_;
  bool complete_ = false;  // the top-level value has been read
  Error error_;
};

std::size_t JsonBuilder::TokenStart(std::size_t position, const std::string& token,
                                    bool read_in_full, const std::string& problem,
                                    std::size_t failed_at) const {
  if (read_in_full) {
    // `position` is just past the token; past the input at its end.
    if (position > parsed_) return parsed_;
    const char last = text_[position - 1];
    // A string or number token is what nlohmann-json read since it began.
    if (last == '"' || (last >= '0' && last <= '9')) return position - token.size();
    if (last == 'e' && text_.substr(0, position).ends_with("false")) return position - 5;
    if (last == 'e' || last == 'l') return position - 4;  // true, null
    return position - 1;  // ',' ':' '[' ']' '{' '}'
  }
  if (StartsWith(problem, "invalid string") || StartsWith(problem, "invalid number")) {
    // `token` is what was read since the token began, the failing character
    // included, control characters shown as "<U+000A>".
    std::size_t failing = 0;
    if (failed_at < parsed_) {
      failing = static_cast<unsigned char>(text_[failed_at]) < 0x20 ? 8 : 1;
    }
    return failed_at - (token.size() - failing);
  }
  // An invalid literal: a beginning of one, or a character no token starts with.
  const LiteralPrefix prefix = LiteralBefore(text_, failed_at);
  return prefix.word.empty() ? failed_at : prefix.start;
}

// A token nlohmann-json could not read where a value was wanted (or a key
// string): say what was wrong inside it, where.
bool JsonBuilder::FailInsideToken(const std::string& problem, std::size_t at) {
  const auto unexpected = [&](std::size_t where, const std::string& expected) {
    return Fail(where, "unexpected " + Describe(text_, where) + " (expected " + expected + ")");
  };
  const auto hex_at = [&](std::size_t escape) {
    std::string hex(text_.substr(escape + 2, 4));
    for (char& c : hex) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return hex;
  };
  const auto control_character = [&](unsigned char c) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "control character 0x%02x in a string", c);
    return Fail(at, std::string(buf) + " (expected it escaped, e.g. \\n or \\u00XX)");
  };
  if (StartsWith(problem, "invalid string: control character")) {
    return control_character(static_cast<unsigned char>(text_[at]));
  }
  if (problem == "invalid string: missing closing quote") {
    if (at < text_.size()) return control_character(0);  // a NUL byte
    return unexpected(at, "'\"' to close the string");
  }
  if (problem == "invalid string: ill-formed UTF-8 byte") {
    const std::size_t start = Utf8SequenceStart(text_, at);
    return Fail(start, "invalid UTF-8 at " + Describe(text_, start));
  }
  if (problem == "invalid string: forbidden character after backslash") {
    return unexpected(at, at < text_.size() ? "one of \"\\/bfnrtu after '\\'"
                                            : "an escape character");
  }
  if (problem == "invalid string: '\\u' must be followed by 4 hex digits") {
    return unexpected(at, "4 hex digits after \\u");
  }
  if (problem == "invalid string: surrogate U+DC00..U+DFFF must follow U+D800..U+DBFF") {
    const std::size_t escape = at - 5;  // read up to its last hex digit
    return Fail(escape, "lone low surrogate \\u" + hex_at(escape));
  }
  if (problem == "invalid string: surrogate U+D800..U+DBFF must be followed by U+DC00..U+DFFF") {
    // RFC 8259 §7: a character outside the BMP is a UTF-16 surrogate pair.
    // Reading stopped after the high surrogate, after a '\' following it,
    // or at the last hex digit of a second \u escape that is no low one.
    std::size_t high;
    if (at >= 6 && text_.substr(at - 6, 2) == "\\u") {
      high = at - 6;  // at what followed it
    } else if (at >= 7 && text_.substr(at - 7, 2) == "\\u" && text_[at - 1] == '\\') {
      high = at - 7;  // at what followed its '\'
    } else {
      const std::size_t low = at - 5;
      return Fail(low, "high surrogate \\u" + hex_at(low - 6) + " followed by \\u" + hex_at(low) +
                           " (expected \\uDC00 to \\uDFFF)");
    }
    return Fail(high, "high surrogate \\u" + hex_at(high) +
                          " not followed by a low one (expected \\uDC00 to \\uDFFF next)");
  }
  if (problem == "invalid number; expected digit after '-'") return unexpected(at, "a digit");
  if (problem == "invalid number; expected digit after '.'") {
    return unexpected(at, "a digit after '.'");
  }
  if (StartsWith(problem, "invalid number; expected '+', '-', or digit after exponent") ||
      problem == "invalid number; expected digit after exponent sign") {
    return unexpected(at, "a digit in the exponent");
  }
  if (problem == "invalid literal") {
    const LiteralPrefix prefix = LiteralBefore(text_, at);
    if (prefix.word.empty()) return unexpected(at, "a value");
    return unexpected(at, "'" + std::string(prefix.word) + "'");
  }
  return Fail(at, problem);  // nlohmann-json's own words, should it have new ones
}

bool JsonBuilder::parse_error(std::size_t position, const std::string& token,
                              const nlohmann::detail::exception& ex) {
  if (ex.id == 406) {
    // The only out_of_range error when parsing: a number a double cannot
    // hold (one too close to zero reads as zero). `position` is just past
    // it.
    const std::size_t start = position - token.size();
    return Fail(start, "number " + token + " is out of range of a double");
  }
  // A parse_error.101 says "... syntax error while parsing <context> -
  // <problem>; last read: '<token>'..." when reading a token failed, and
  // "... while parsing <context> - unexpected <token kind>..." when the
  // token read was not one allowed there.
  const std::string what = ex.what();
  const std::size_t context_at = what.find("while parsing ");
  const std::size_t dash = what.find(" - ", context_at);
  if (context_at == std::string::npos || dash == std::string::npos) {
    return Fail(std::min(position, parsed_ + 1) - 1, what);
  }
  const std::string context = what.substr(context_at + 14, dash - context_at - 14);
  const std::size_t last_read = what.find("; last read: '" + token + "'", dash);
  const bool read_in_full = last_read == std::string::npos;
  const std::string problem = read_in_full ? "" : what.substr(dash + 3, last_read - dash - 3);
  // `position` counts the characters read, the failing one included (the
  // end of the input counts as one).
  const std::size_t failed_at = std::min(position, parsed_ + 1) - 1;

  if (!complete_ && context == "value") {
    if (read_in_full) return Fail(failed_at, "unexpected " + Describe(text_, failed_at) +
                                                 " (expected a value)");
    return FailInsideToken(problem, failed_at);
  }
  if (context == "object key" && StartsWith(problem, "invalid string")) {
    return FailInsideToken(problem, failed_at);
  }
  const std::size_t start = TokenStart(position, token, read_in_full, problem, failed_at);
  // nlohmann-json reads "01" as 0 followed by 1: a '0' just before a token
  // that starts with a digit was a number of its own.
  if (start > 0 && start < parsed_ && text_[start] >= '0' && text_[start] <= '9' &&
      text_[start - 1] == '0') {
    return Fail(start, "leading zero in a number");
  }
  std::string expected;
  if (complete_) {
    expected = "the end of the input";
  } else if (context == "object key") {
    expected = "a string key";
  } else if (context == "object separator") {
    expected = "':'";
  } else if (context == "array") {
    expected = "',' or ']'";
  } else {
    expected = "',' or '}'";  // "object": after a member's value
  }
  const std::string after = complete_ ? " after the value" : "";
  return Fail(start,
              "unexpected " + Describe(text_, start) + after + " (expected " + expected + ")");
}

}  // namespace

Expected<Json> ParseJson(std::string_view text) {
  // nlohmann-json skips a UTF-8 byte order mark; RFC 8259 §8.1 allows none
  // in JSON text that is exchanged (a byte 0xef starts no other value).
  if (!text.empty() && text[0] == '\xEF') {
    return ErrorAt(text, 0, "unexpected byte 0xef (expected a value)");
  }
  // It also takes a NUL byte outside a string for the end of the input:
  // it reads the text up to the first one, which is then reported where it
  // is.
  const std::string_view json = text.substr(0, text.find('\0'));
  const char* read_end = json.data();
  JsonBuilder builder(text, json.size(), read_end);
  const bool ok =
      Json::sax_parse(TrackedIterator(json.data(), &read_end),
                      TrackedIterator(json.data() + json.size(), &read_end), &builder);
  if (!ok) return builder.error();
  if (json.size() < text.size()) {
    return ErrorAt(text, json.size(),
                   "unexpected byte 0x00 after the value (expected the end of the input)");
  }
  return builder.TakeValue();
}

}  // namespace drivewatch
