// SPDX-License-Identifier: Apache-2.0
#include "exporter/http/web_config_text.h"

#include <algorithm>

namespace drivewatch::detail {

Lines::Lines(std::string_view text) : text_(text) {
  starts_.push_back(0);
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') starts_.push_back(i + 1);
  }
}

WebConfigLocation Lines::AtOffset(size_t offset) const {
  size_t line = 0;
  while (line + 1 < starts_.size() && starts_[line + 1] <= offset) ++line;
  int column = 1;
  for (size_t i = starts_[line]; i < offset && i < text_.size(); ++i) {
    if (StartsCharacter(text_[i])) ++column;
  }
  return {static_cast<int>(line) + 1, column};
}

size_t Lines::Offset(const yaml_mark_t& mark) const {
  if (mark.line >= starts_.size()) return text_.size();
  size_t i = starts_[mark.line];
  for (size_t column = 0; i < text_.size(); ++i) {
    if (StartsCharacter(text_[i]) && column++ == mark.column) break;
  }
  return i;
}

char Lines::At(const yaml_mark_t& mark) const {
  const size_t i = Offset(mark);
  return i < text_.size() ? text_[i] : '\0';
}

std::string_view Lines::Line(size_t line) const {
  if (line >= starts_.size()) return {};
  const size_t end = line + 1 < starts_.size() ? starts_[line + 1] - 1 : text_.size();
  return text_.substr(starts_[line], end - starts_[line]);
}

std::optional<WebConfigError> CheckLines(std::string_view text, size_t* line_start) {
  size_t pos = 0;
  for (int line_no = 1; pos <= text.size(); ++line_no) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    *line_start = pos;
    pos = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    int column = 0;
    for (char ch : line) {
      if (StartsCharacter(ch)) ++column;
      const unsigned char c = static_cast<unsigned char>(ch);
      if ((c < 0x20 && c != '\t') || c == 0x7f) {
        return WebConfigError{
            "", line_no, column, "",
            "control character " + std::to_string(c) + " (a web-config file is text)"};
      }
    }
    const size_t indent = line.find_first_not_of(' ');
    if (indent == std::string_view::npos || line[indent] != '\t') continue;
    const size_t content = line.find_first_not_of(" \t");
    if (content == std::string_view::npos || line[content] == '#') continue;
    return WebConfigError{"", line_no, static_cast<int>(indent) + 1, "",
                          "tab in indentation (YAML indents with spaces only)"};
  }
  return std::nullopt;
}

std::string SeparatingTabsAsSpaces(std::string_view text) {
  std::string out(text);
  for (size_t pos = 0; pos < out.size();) {
    size_t end = out.find('\n', pos);
    if (end == std::string::npos) end = out.size();
    const size_t lead = out.find_first_not_of(" \t", pos);
    const bool blank_or_comment = lead >= end || out[lead] == '#' || out[lead] == '\r';
    const size_t first = out.find_first_not_of(' ', pos);
    size_t from = pos, to = pos;
    if (blank_or_comment) {
      to = std::min(lead, end);
    } else if (first < end && out[first] == '-' && first + 1 < end &&
               (out[first + 1] == ' ' || out[first + 1] == '\t')) {
      from = first + 1;
      to = std::min(out.find_first_not_of(" \t", from), end);
    }
    std::replace(out.begin() + static_cast<std::ptrdiff_t>(from),
                 out.begin() + static_cast<std::ptrdiff_t>(to), '\t', ' ');
    pos = end + 1;
  }
  return out;
}

}  // namespace drivewatch::detail
