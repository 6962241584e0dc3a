// SPDX-License-Identifier: Apache-2.0
#include "aging/json.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <unordered_set>

namespace drivewatch::aging {
namespace {

constexpr int kMaxDepth = 64;

// 2^63 and 2^64 as doubles, exactly representable: the bounds for exact
// double <-> integer comparisons and conversions.
constexpr double kTwo63 = 9223372036854775808.0;
constexpr double kTwo64 = 18446744073709551616.0;

// Length of the well-formed UTF-8 sequence at s[i], or 0 when it is not one
// (overlong forms, UTF-16 surrogates and code points past U+10FFFF are not,
// per RFC 3629 §4).
std::size_t Utf8SequenceLength(std::string_view s, std::size_t i) {
  const auto byte = [&](std::size_t k) {
    return static_cast<unsigned char>(s[k]);
  };
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

void AppendUtf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

void DumpString(const std::string& s, std::string& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  for (std::size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"': out += "\\\""; ++i; continue;
      case '\\': out += "\\\\"; ++i; continue;
      case '\b': out += "\\b"; ++i; continue;
      case '\f': out += "\\f"; ++i; continue;
      case '\n': out += "\\n"; ++i; continue;
      case '\r': out += "\\r"; ++i; continue;
      case '\t': out += "\\t"; ++i; continue;
      default: break;
    }
    if (c < 0x20) {
      out += "\\u00";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
      ++i;
      continue;
    }
    const std::size_t len = Utf8SequenceLength(s, i);
    if (len == 0) {
      // Strings can come from drive identify data with arbitrary bytes; write
      // U+FFFD so our own output always parses again (history would
      // otherwise hold a record no reader accepts).
      out += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    out.append(s, i, len);
    i += len;
  }
  out += '"';
}

void DumpDouble(double d, std::string& out) {
  if (!std::isfinite(d)) {
    out += "null";
    return;
  }
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, d);
  std::string_view text(buf, static_cast<std::size_t>(r.ptr - buf));
  out += text;
  // Keep a double a double across a round trip: "1" would parse back as an
  // integer.
  if (text.find_first_of(".e") == std::string_view::npos) out += ".0";
}

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Expected<Json> Run() {
    Json value;
    SkipSpace();
    if (!ParseValue(value, 1)) return Fail();
    SkipSpace();
    if (pos_ != text_.size()) {
      SetError("unexpected " + Describe(pos_) + " after the value",
               "the end of the input");
      return Fail();
    }
    return value;
  }

 private:
  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek() const { return text_[pos_]; }

  void SkipSpace() {
    while (!AtEnd()) {
      const char c = Peek();
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
      ++pos_;
    }
  }

  std::string Describe(std::size_t at) const {
    if (at >= text_.size()) return "end of input";
    const unsigned char c = static_cast<unsigned char>(text_[at]);
    char buf[16];
    if (c >= 0x20 && c < 0x7F) {
      std::snprintf(buf, sizeof buf, "'%c'", c);
    } else {
      std::snprintf(buf, sizeof buf, "byte 0x%02x", c);
    }
    return buf;
  }

  // Records the first error only: callers unwind by returning false.
  bool SetError(std::string what, std::string expected = {}) {
    if (error_.empty()) {
      error_pos_ = pos_;
      error_ = std::move(what);
      if (!expected.empty()) error_ += " (expected " + expected + ")";
    }
    return false;
  }

  bool Unexpected(std::string expected) {
    return SetError("unexpected " + Describe(pos_), std::move(expected));
  }

  Error Fail() const {
    // Line and column are 1-based; the column counts characters (UTF-8
    // sequences), as editors do, not bytes.
    std::size_t line = 1, column = 1;
    const std::size_t end = std::min(error_pos_, text_.size());
    for (std::size_t i = 0; i < end; ++i) {
      const unsigned char c = static_cast<unsigned char>(text_[i]);
      if (c == '\n') {
        ++line;
        column = 1;
      } else if ((c & 0xC0) != 0x80) {
        ++column;
      }
    }
    return Error{EINVAL, -1,
                 "line " + std::to_string(line) + ", column " +
                     std::to_string(column) + ": " + error_};
  }

  bool ParseValue(Json& out, int depth) {
    if (AtEnd()) return Unexpected("a value");
    switch (Peek()) {
      case '{': return ParseObject(out, depth);
      case '[': return ParseArray(out, depth);
      case '"': {
        std::string s;
        if (!ParseString(s)) return false;
        out = Json(std::move(s));
        return true;
      }
      case 't': return ParseLiteral("true", Json(true), out);
      case 'f': return ParseLiteral("false", Json(false), out);
      case 'n': return ParseLiteral("null", Json(), out);
      default:
        if (Peek() == '-' || (Peek() >= '0' && Peek() <= '9')) {
          return ParseNumber(out);
        }
        return Unexpected("a value");
    }
  }

  bool ParseLiteral(std::string_view word, Json value, Json& out) {
    for (std::size_t i = 0; i < word.size(); ++i, ++pos_) {
      if (AtEnd() || Peek() != word[i]) {
        return Unexpected("'" + std::string(word) + "'");
      }
    }
    out = std::move(value);
    return true;
  }

  bool EnterContainer(int depth) {
    if (depth > kMaxDepth) {
      return SetError("nesting deeper than " + std::to_string(kMaxDepth) +
                      " levels");
    }
    return true;
  }

  bool ParseArray(Json& out, int depth) {
    if (!EnterContainer(depth)) return false;
    ++pos_;  // '['
    out = Json::Array();
    SkipSpace();
    if (!AtEnd() && Peek() == ']') {
      ++pos_;
      return true;
    }
    for (;;) {
      SkipSpace();
      Json item;
      if (!ParseValue(item, depth + 1)) return false;
      out.Push(std::move(item));
      SkipSpace();
      if (AtEnd()) return Unexpected("',' or ']'");
      if (Peek() == ',') {
        ++pos_;
        continue;
      }
      if (Peek() == ']') {
        ++pos_;
        return true;
      }
      return Unexpected("',' or ']'");
    }
  }

  bool ParseObject(Json& out, int depth) {
    if (!EnterContainer(depth)) return false;
    ++pos_;  // '{'
    out = Json::Object();
    SkipSpace();
    if (!AtEnd() && Peek() == '}') {
      ++pos_;
      return true;
    }
    // RFC 8259 §4 leaves duplicate names to the implementation; a record
    // with two different "outcome"s is ambiguous, so refuse it.
    std::unordered_set<std::string> seen;
    for (;;) {
      SkipSpace();
      if (AtEnd() || Peek() != '"') return Unexpected("a string key");
      const std::size_t key_pos = pos_;
      std::string key;
      if (!ParseString(key)) return false;
      if (!seen.insert(key).second) {
        pos_ = key_pos;
        std::string shown;
        DumpString(key, shown);
        return SetError("duplicate key " + shown);
      }
      SkipSpace();
      if (AtEnd() || Peek() != ':') return Unexpected("':'");
      ++pos_;
      SkipSpace();
      Json value;
      if (!ParseValue(value, depth + 1)) return false;
      out[key] = std::move(value);
      SkipSpace();
      if (AtEnd()) return Unexpected("',' or '}'");
      if (Peek() == ',') {
        ++pos_;
        continue;
      }
      if (Peek() == '}') {
        ++pos_;
        return true;
      }
      return Unexpected("',' or '}'");
    }
  }

  bool ParseHex4(std::uint32_t& out) {
    out = 0;
    for (int i = 0; i < 4; ++i, ++pos_) {
      if (AtEnd()) return Unexpected("4 hex digits after \\u");
      const char c = Peek();
      std::uint32_t v;
      if (c >= '0' && c <= '9') {
        v = static_cast<std::uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        v = static_cast<std::uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        v = static_cast<std::uint32_t>(c - 'A' + 10);
      } else {
        return Unexpected("4 hex digits after \\u");
      }
      out = out << 4 | v;
    }
    return true;
  }

  bool ParseString(std::string& out) {
    ++pos_;  // '"'
    for (;;) {
      if (AtEnd()) return Unexpected("'\"' to close the string");
      const unsigned char c = static_cast<unsigned char>(Peek());
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (c < 0x20) {
        char buf[64];
        std::snprintf(buf, sizeof buf,
                      "control character 0x%02x in a string", c);
        return SetError(buf, "it escaped, e.g. \\n or \\u00XX");
      }
      if (c == '\\') {
        if (!ParseEscape(out)) return false;
        continue;
      }
      const std::size_t len = Utf8SequenceLength(text_, pos_);
      if (len == 0) return SetError("invalid UTF-8 at " + Describe(pos_));
      out.append(text_, pos_, len);
      pos_ += len;
    }
  }

  bool ParseEscape(std::string& out) {
    const std::size_t escape_pos = pos_;
    ++pos_;  // '\\'
    if (AtEnd()) return Unexpected("an escape character");
    const char c = Peek();
    ++pos_;
    switch (c) {
      case '"': out += '"'; return true;
      case '\\': out += '\\'; return true;
      case '/': out += '/'; return true;
      case 'b': out += '\b'; return true;
      case 'f': out += '\f'; return true;
      case 'n': out += '\n'; return true;
      case 'r': out += '\r'; return true;
      case 't': out += '\t'; return true;
      case 'u': break;
      default:
        --pos_;
        return Unexpected("one of \"\\/bfnrtu after '\\'");
    }
    std::uint32_t cp;
    if (!ParseHex4(cp)) return false;
    if (cp >= 0xDC00 && cp <= 0xDFFF) {
      pos_ = escape_pos;
      return SetError("lone low surrogate \\u" + HexOf(cp));
    }
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      // RFC 8259 §7: a character outside the BMP is a UTF-16 surrogate pair.
      if (text_.substr(pos_, 2) != "\\u") {
        pos_ = escape_pos;
        return SetError("high surrogate \\u" + HexOf(cp) +
                            " not followed by a low one",
                        "\\uDC00 to \\uDFFF next");
      }
      const std::size_t low_pos = pos_;
      pos_ += 2;
      std::uint32_t low;
      if (!ParseHex4(low)) return false;
      if (low < 0xDC00 || low > 0xDFFF) {
        pos_ = low_pos;
        return SetError("high surrogate \\u" + HexOf(cp) +
                            " followed by \\u" + HexOf(low),
                        "\\uDC00 to \\uDFFF");
      }
      cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    }
    AppendUtf8(out, cp);
    return true;
  }

  static std::string HexOf(std::uint32_t v) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "%04X", v);
    return buf;
  }

  bool IsDigit() const { return !AtEnd() && Peek() >= '0' && Peek() <= '9'; }

  bool ParseNumber(Json& out) {
    const std::size_t start = pos_;
    const bool negative = Peek() == '-';
    if (negative) ++pos_;
    if (!IsDigit()) return Unexpected("a digit");
    if (Peek() == '0') {
      ++pos_;
      if (IsDigit()) return SetError("leading zero in a number");
    } else {
      while (IsDigit()) ++pos_;
    }
    bool integral = true;
    if (!AtEnd() && Peek() == '.') {
      integral = false;
      ++pos_;
      if (!IsDigit()) return Unexpected("a digit after '.'");
      while (IsDigit()) ++pos_;
    }
    if (!AtEnd() && (Peek() == 'e' || Peek() == 'E')) {
      integral = false;
      ++pos_;
      if (!AtEnd() && (Peek() == '+' || Peek() == '-')) ++pos_;
      if (!IsDigit()) return Unexpected("a digit in the exponent");
      while (IsDigit()) ++pos_;
    }
    const char* first = text_.data() + start;
    const char* last = text_.data() + pos_;
    if (integral) {
      if (negative) {
        std::int64_t v;
        const auto r = std::from_chars(first, last, v);
        if (r.ec == std::errc() && r.ptr == last) {
          out = Json(v);
          return true;
        }
      } else {
        std::uint64_t v;
        const auto r = std::from_chars(first, last, v);
        if (r.ec == std::errc() && r.ptr == last) {
          out = Json(v);
          return true;
        }
      }
      // Too big for 64 bits: fall through to a double, as RFC 8259 §6
      // expects of most implementations.
    }
    double d = 0;
    const auto r = std::from_chars(first, last, d);
    if (r.ec == std::errc::result_out_of_range) {
      if (DecimalExponent(start) > 0) {
        pos_ = start;
        return SetError("number " + std::string(first, last) +
                        " is out of range of a double");
      }
      d = negative ? -0.0 : 0.0;  // underflow: as close to zero as it gets
    } else if (r.ec != std::errc() || r.ptr != last) {
      pos_ = start;
      return SetError("malformed number " + std::string(first, last));
    }
    out = Json(d);
    return true;
  }

  // Rough power of ten of the well-formed number at `start`: only its sign
  // matters, to tell an overflow from an underflow.
  long long DecimalExponent(std::size_t start) const {
    std::size_t i = start;
    if (text_[i] == '-') ++i;
    long long int_digits = 0, leading_frac_zeros = 0;
    bool nonzero_int = false, nonzero_seen = false;
    for (; i < pos_ && text_[i] >= '0' && text_[i] <= '9'; ++i) {
      if (text_[i] != '0') nonzero_int = true;
      if (nonzero_int) ++int_digits;
    }
    if (i < pos_ && text_[i] == '.') {
      for (++i; i < pos_ && text_[i] >= '0' && text_[i] <= '9'; ++i) {
        if (text_[i] != '0') nonzero_seen = true;
        if (!nonzero_seen) ++leading_frac_zeros;
      }
    }
    long long exp = 0;
    if (i < pos_ && (text_[i] == 'e' || text_[i] == 'E')) {
      ++i;
      bool neg = false;
      if (text_[i] == '+' || text_[i] == '-') neg = text_[i++] == '-';
      for (; i < pos_; ++i) {
        if (exp < 1'000'000'000) exp = exp * 10 + (text_[i] - '0');
      }
      if (neg) exp = -exp;
    }
    const long long base =
        nonzero_int ? int_digits - 1 : -(leading_frac_zeros + 1);
    return base + exp;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
  std::size_t error_pos_ = 0;
  std::string error_;
};

}  // namespace

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
  const auto new_line = [&](int at) {
    if (indent < 0) return;
    out += '\n';
    out.append(static_cast<std::size_t>(indent) * static_cast<std::size_t>(at),
               ' ');
  };
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
    case Type::kArray:
      if (items_.empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (std::size_t i = 0; i < items_.size(); ++i) {
        if (i) out += ',';
        new_line(level + 1);
        items_[i].DumpTo(out, indent, level + 1);
      }
      new_line(level);
      out += ']';
      return;
    case Type::kObject:
      if (members_.empty()) {
        out += "{}";
        return;
      }
      out += '{';
      for (std::size_t i = 0; i < members_.size(); ++i) {
        if (i) out += ',';
        new_line(level + 1);
        DumpString(members_[i].first, out);
        out += indent >= 0 ? ": " : ":";
        members_[i].second.DumpTo(out, indent, level + 1);
      }
      new_line(level);
      out += '}';
      return;
  }
}

std::string Json::Dump(int indent) const {
  std::string out;
  DumpTo(out, indent, 0);
  return out;
}

Expected<Json> Json::Parse(std::string_view text) {
  return Parser(text).Run();
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
