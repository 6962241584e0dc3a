// SPDX-License-Identifier: Apache-2.0
// The web-config text around libyaml (web_config_yaml.cc): where libyaml's
// marks point in it, and what is checked and adjusted line by line before
// libyaml reads it.
#pragma once

#include <yaml.h>

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "exporter/http/web_config.h"

namespace drivewatch::detail {

// Columns count characters, as libyaml's do: UTF-8 continuation bytes
// (10xxxxxx) do not start one.
inline bool StartsCharacter(char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }

// Byte offsets of line starts, to turn libyaml's marks and reader offsets
// into 1-based locations and back.
class Lines {
 public:
  explicit Lines(std::string_view text);

  WebConfigLocation AtOffset(size_t offset) const;
  // The byte offset of a libyaml mark (a line and a character column).
  size_t Offset(const yaml_mark_t& mark) const;
  size_t Start(size_t line) const { return starts_[std::min(line, starts_.size() - 1)]; }
  // A mark's offset from the start of its line.
  size_t InLine(const yaml_mark_t& mark) const { return Offset(mark) - Start(mark.line); }
  // The byte at a libyaml mark, or '\0' past the end.
  char At(const yaml_mark_t& mark) const;
  // The text of a 0-based line, without its line break.
  std::string_view Line(size_t line) const;

 private:
  std::string_view text_;
  std::vector<size_t> starts_;
};

// What libyaml lets through but a web-config file must not hold, checked
// line by line: control characters (a web-config file is text) and tabs in
// indentation (YAML indents with spaces only; libyaml would call a tab "a
// character that cannot start any token"). Returns the first problem and
// sets *line_start to where its line begins.
std::optional<WebConfigError> CheckLines(std::string_view text, size_t* line_start);

// YAML lets tabs separate as well as spaces on a blank or comment-only line
// and after a list item's "-", where libyaml 0.2.5 refuses them ("found
// character that cannot start any token"). The copy libyaml reads has those
// tabs as spaces, byte for byte, so every mark still points into the text.
std::string SeparatingTabsAsSpaces(std::string_view text);

}  // namespace drivewatch::detail
