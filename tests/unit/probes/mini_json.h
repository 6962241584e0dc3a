// SPDX-License-Identifier: Apache-2.0
// Just enough JSON to read nvme-cli's output in tests: objects, arrays,
// strings, numbers, true/false/null. Numbers keep their text so 64- and
// 128-bit values compare exactly. Throws std::runtime_error on bad input.
// (No JSON library is among the project's build dependencies, and the
// tests need nothing more.)
#pragma once

#include <cctype>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace drivewatch::testing {

struct JsonValue {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  std::string text;  // number or string contents, "true"/"false"
  std::vector<JsonValue> items;
  std::map<std::string, JsonValue> members;

  bool Has(const std::string& key) const { return members.count(key) != 0; }
  const JsonValue& operator[](const std::string& key) const {
    auto it = members.find(key);
    if (it == members.end()) throw std::runtime_error("no key " + key);
    return it->second;
  }
  // Numbers, and the decimal strings nvme-cli prints 128-bit values as
  // (possibly with locale thousands separators).
  unsigned __int128 U128() const {
    unsigned __int128 v = 0;
    bool any = false;
    for (char c : text) {
      if (c == ',' || c == '.' || c == ' ') continue;
      if (!std::isdigit(static_cast<unsigned char>(c))) {
        throw std::runtime_error("not an unsigned integer: " + text);
      }
      v = v * 10 + static_cast<unsigned>(c - '0');
      any = true;
    }
    if (!any) throw std::runtime_error("empty number");
    return v;
  }
  std::uint64_t U64() const { return static_cast<std::uint64_t>(U128()); }
};

class JsonParser {
 public:
  static JsonValue Parse(std::string_view in) {
    JsonParser p(in);
    JsonValue v = p.Value();
    p.Skip();
    if (p.pos_ != in.size()) p.Fail("trailing characters");
    return v;
  }

 private:
  explicit JsonParser(std::string_view in) : in_(in) {}

  [[noreturn]] void Fail(const std::string& what) const {
    throw std::runtime_error("JSON: " + what + " at " + std::to_string(pos_));
  }
  void Skip() {
    while (pos_ < in_.size() &&
           std::isspace(static_cast<unsigned char>(in_[pos_])))
      ++pos_;
  }
  char Peek() {
    Skip();
    if (pos_ >= in_.size()) Fail("unexpected end");
    return in_[pos_];
  }
  void Expect(char c) {
    if (Peek() != c) Fail(std::string("expected ") + c);
    ++pos_;
  }

  JsonValue Value() {
    const char c = Peek();
    JsonValue v;
    if (c == '{') {
      v.kind = JsonValue::Kind::kObject;
      ++pos_;
      if (Peek() == '}') {
        ++pos_;
        return v;
      }
      while (true) {
        std::string key = String();
        Expect(':');
        v.members[key] = Value();
        if (Peek() == ',') {
          ++pos_;
          continue;
        }
        Expect('}');
        return v;
      }
    }
    if (c == '[') {
      v.kind = JsonValue::Kind::kArray;
      ++pos_;
      if (Peek() == ']') {
        ++pos_;
        return v;
      }
      while (true) {
        v.items.push_back(Value());
        if (Peek() == ',') {
          ++pos_;
          continue;
        }
        Expect(']');
        return v;
      }
    }
    if (c == '"') {
      v.kind = JsonValue::Kind::kString;
      v.text = String();
      return v;
    }
    for (const char* word : {"true", "false", "null"}) {
      if (in_.substr(pos_).starts_with(word)) {
        v.kind =
            word[0] == 'n' ? JsonValue::Kind::kNull : JsonValue::Kind::kBool;
        v.text = word;
        pos_ += std::string_view(word).size();
        return v;
      }
    }
    v.kind = JsonValue::Kind::kNumber;
    const std::size_t start = pos_;
    while (
        pos_ < in_.size() &&
        (std::isdigit(static_cast<unsigned char>(in_[pos_])) ||
         std::string_view("+-.eE").find(in_[pos_]) != std::string_view::npos)) {
      ++pos_;
    }
    if (pos_ == start) Fail("unexpected character");
    v.text = std::string(in_.substr(start, pos_ - start));
    return v;
  }

  std::string String() {
    Expect('"');
    std::string out;
    while (true) {
      if (pos_ >= in_.size()) Fail("unterminated string");
      const char c = in_[pos_++];
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= in_.size()) Fail("bad escape");
      const char e = in_[pos_++];
      switch (e) {
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'u': {
          if (pos_ + 4 > in_.size()) Fail("bad \\u escape");
          const unsigned code =
              std::stoul(std::string(in_.substr(pos_, 4)), nullptr, 16);
          pos_ += 4;
          // Identify strings are ASCII; anything else is kept as '?'.
          out += code < 0x80 ? static_cast<char>(code) : '?';
          break;
        }
        default:
          out += e;  // \" \\ \/
      }
    }
  }

  std::string_view in_;
  std::size_t pos_ = 0;
};

}  // namespace drivewatch::testing
