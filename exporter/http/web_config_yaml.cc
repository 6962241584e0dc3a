// SPDX-License-Identifier: Apache-2.0
// Reading the web-config YAML: libyaml's event parser (Debian's libyaml-0-2)
// turns the text into detail::YamlNode trees. libyaml does the YAML; this
// file keeps a web-config file to the plain block style exporter-toolkit's
// examples use, and refuses with a located error what would make a file
// harder to review: anchors and aliases, tags, flow collections, block
// scalars, values spanning lines, complex keys, duplicate keys and a
// second document. libyaml reports where every event starts and ends
// (0-based); errors here are 1-based, like every drivewatch config error.
#include <yaml.h>

#include <memory>
#include <unordered_map>

#include "config/checks.h"
#include "exporter/http/web_config.h"
#include "exporter/http/web_config_text.h"

namespace drivewatch::detail {
namespace {

using config::detail::Quote;

constexpr size_t kMaxKeyBytes = 256;
constexpr std::string_view kUtf8ByteOrderMark = "\xEF\xBB\xBF";

WebConfigLocation Location(const yaml_mark_t& mark) {
  return {static_cast<int>(mark.line) + 1, static_cast<int>(mark.column) + 1};
}

class EventReader {
 public:
  explicit EventReader(std::string_view text) : text_(text), lines_(text) {
    root_.kind = YamlNode::Kind::kMapping;
    root_.at = {1, 1};
  }

  YamlResult Read() {
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) return Failed({0, 0}, "", "out of memory");
    const std::unique_ptr<yaml_parser_t, decltype(&yaml_parser_delete)> owner(&parser,
                                                                              yaml_parser_delete);
    yaml_parser_set_input_string(&parser, reinterpret_cast<const unsigned char*>(text_.data()),
                                 text_.size());
    yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING);  // no UTF-16 guessing
    for (bool done = false; !done && !error_;) {
      yaml_event_t event;
      if (!yaml_parser_parse(&parser, &event)) {
        ParserError(parser);
        break;
      }
      done = event.type == YAML_STREAM_END_EVENT;
      Event(event);
      last_event_ = {
          event.type, event.start_mark, event.end_mark,
          event.type == YAML_SCALAR_EVENT && event.data.scalar.style != YAML_PLAIN_SCALAR_STYLE};
      yaml_event_delete(&event);
    }
    if (error_) return std::move(result_);
    YamlResult result;
    result.root = std::move(root_);
    return result;
  }

  // Where the text stopped being UTF-8, if that was the error.
  std::optional<size_t> reader_error_offset() const { return reader_error_offset_; }

 private:
  struct Frame {
    YamlNode* node = nullptr;
    std::string path;  // dotted keys down to this node, for messages
    // Mappings alternate key and value events: the key waiting for its value.
    bool have_key = false;
    std::string key;
    WebConfigLocation key_at;
    std::unordered_map<std::string, int> key_lines;  // duplicates, in O(1)
  };

  struct LastEvent {
    yaml_event_type_t type = YAML_NO_EVENT;
    yaml_mark_t start{}, end{};
    bool quoted_scalar = false;
  };

  YamlResult Failed(WebConfigLocation at, std::string key, std::string problem) {
    Fail(at, std::move(key), std::move(problem));
    return std::move(result_);
  }
  // Records the first error only; Read() returns it.
  void Fail(WebConfigLocation at, std::string key, std::string problem) {
    if (error_) return;
    error_ = true;
    result_.error.line = at.line;
    result_.error.column = at.column;
    result_.error.key = std::move(key);
    result_.error.problem = std::move(problem);
  }

  static std::string JoinKey(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }

  // Where the next node goes: the value of a key just read, else the
  // innermost collection.
  std::string NodePath() const {
    if (frames_.empty()) return "";
    const Frame& f = frames_.back();
    return f.have_key ? JoinKey(f.path, f.key) : f.path;
  }

  // Where a problem libyaml found between events sits: at the value of a
  // key just read, else at the value last completed (the line before a
  // misaligned one), else in the innermost collection.
  std::string ErrorPath() const {
    if (!frames_.empty() && !frames_.back().have_key && last_done_path_) {
      return *last_done_path_;
    }
    return NodePath();
  }

  void ParserError(const yaml_parser_t& parser) {
    const std::string problem = parser.problem ? parser.problem : "invalid YAML";
    if (parser.error == YAML_READER_ERROR) {
      reader_error_offset_ = parser.problem_offset;
      return Fail(lines_.AtOffset(parser.problem_offset), "",
                  problem + " (a web-config file is UTF-8 text)");
    }
    if (parser.error == YAML_MEMORY_ERROR) return Fail({0, 0}, "", "out of memory");
    const std::string context = parser.context ? parser.context : "";
    if (QuotedScalarError(parser, problem, context) || LayoutError(parser, problem)) return;
    // Anything else in libyaml's words, with where its construct started.
    std::string what = problem;
    if (!context.empty()) {
      const WebConfigLocation from = Location(parser.context_mark);
      what += " (" + context + " at line " + std::to_string(from.line) + ", column " +
              std::to_string(from.column) + ")";
    }
    Fail(Location(parser.problem_mark), ErrorPath(), what);
  }

  // libyaml's errors inside a quoted scalar, in the words (and at the
  // places) drivewatch has always used for them.
  bool QuotedScalarError(const yaml_parser_t& parser, const std::string& problem,
                         const std::string& context) {
    const std::string path = ErrorPath();
    if (context == "while scanning a quoted scalar" &&
        problem == "found unexpected end of stream") {
      const bool double_quoted = lines_.At(parser.context_mark) == '"';
      Fail(Location(parser.context_mark), path,
           std::string("unterminated ") + (double_quoted ? "double" : "single") +
               "-quoted string (strings spanning lines are not supported)");
      return true;
    }
    if (problem == "found unknown escape character") {
      yaml_mark_t escaped = parser.problem_mark;  // at the backslash
      ++escaped.column;
      Fail(Location(parser.problem_mark), path,
           std::string("unknown escape \\") + lines_.At(escaped) + " in a double-quoted string");
      return true;
    }
    const bool bad_digits = problem == "did not find expected hexdecimal number";
    const bool bad_code_point = problem == "found invalid Unicode character escape code";
    if (!bad_digits && !bad_code_point) return false;
    // libyaml points past the digits; the escape starts at its backslash.
    const std::string_view line = lines_.Line(parser.problem_mark.line);
    const size_t backslash = line.rfind('\\', lines_.InLine(parser.problem_mark));
    if (backslash == std::string_view::npos || backslash + 1 >= line.size()) return false;
    const WebConfigLocation at =
        lines_.AtOffset(lines_.Start(parser.problem_mark.line) + backslash);
    if (bad_code_point) {
      Fail(at, path, "escape is not a Unicode scalar value");
      return true;
    }
    const char letter = line[backslash + 1];
    const int digits = letter == 'x' ? 2 : letter == 'u' ? 4 : 8;
    Fail(at, path, std::string("\\") + letter + " needs " + std::to_string(digits) + " hex digits");
    return true;
  }

  // libyaml's errors about where things sit on their lines, told by what
  // came just before.
  bool LayoutError(const yaml_parser_t& parser, const std::string& problem) {
    const std::string path = ErrorPath();
    const WebConfigLocation at = Location(parser.problem_mark);
    const bool after_scalar = last_event_.type == YAML_SCALAR_EVENT;
    const bool after_scalar_here = after_scalar && last_event_.end.line == parser.problem_mark.line;
    const std::string container = frames_.empty() ? "" : frames_.back().path;
    if (problem == "did not find expected key") {
      if (lines_.At(parser.problem_mark) == ':') {
        Fail(at, container,
             "a key cannot start with ':' (complex keys, flow style, anchors, aliases and "
             "tags are not supported)");
      } else if (after_scalar_here && last_event_.quoted_scalar) {
        Fail(at, path, "unexpected text after the quoted string");
      } else if (last_event_.type == YAML_MAPPING_END_EVENT ||
                 last_event_.type == YAML_SEQUENCE_END_EVENT) {
        Fail(at, path, "indentation does not match any enclosing level");
      } else if (after_scalar) {  // a value, then a line indented deeper
        Fail(at, container,
             "unexpected indentation (multi-line values are not supported; quote the "
             "value on one line)");
      } else {
        return false;
      }
      return true;
    }
    if (problem == "mapping values are not allowed in this context" && after_scalar_here) {
      // libyaml takes no key longer than 1024 characters: it read one such
      // key, first on its line, as a plain value.
      const std::string_view line = lines_.Line(last_event_.start.line);
      if (last_event_.end.column - last_event_.start.column > kMaxKeyBytes &&
          line.find_first_not_of(' ') == lines_.InLine(last_event_.start)) {
        Fail(Location(last_event_.start), path,
             "a key longer than " + std::to_string(kMaxKeyBytes) + " bytes");
      } else {
        Fail(at, path, "a ':' followed by a space inside a value (quote the value)");
      }
      return true;
    }
    if (problem == "could not find expected ':'" &&
        std::string_view(parser.context ? parser.context : "") == "while scanning a simple key") {
      // A line that is neither "key: value" nor "- item"; where in the tree
      // it was meant to go is anyone's guess.
      Fail(Location(parser.context_mark), "", "expected \"key: value\"");
      return true;
    }
    if (problem == "found character that cannot start any token" ||
        problem == "did not find expected node content") {
      const char c = lines_.At(parser.problem_mark);
      if (std::string_view("@`]},").find(c) == std::string_view::npos) return false;
      Fail(at, path, std::string("a plain value cannot start with '") + c + "' (quote it)");
      return true;
    }
    return false;
  }

  void Event(const yaml_event_t& event) {
    const WebConfigLocation at = Location(event.start_mark);
    switch (event.type) {
      case YAML_DOCUMENT_START_EVENT:
        // Document starts before any content are one document.
        if (content_) Fail(at, "", "a second YAML document (---) is not supported");
        return;
      case YAML_ALIAS_EVENT:
        return Fail(at, NodePath(), "aliases (*) are not supported");
      case YAML_SCALAR_EVENT:
      case YAML_SEQUENCE_START_EVENT:
      case YAML_MAPPING_START_EVENT:
        return Node(event);
      case YAML_SEQUENCE_END_EVENT:
      case YAML_MAPPING_END_EVENT:
        last_done_path_ = frames_.back().path;
        frames_.pop_back();
        return;
      default:  // stream start and end, document end
        return;
    }
  }

  void Node(const yaml_event_t& event) {
    const WebConfigLocation at = Location(event.start_mark);
    const yaml_char_t* anchor = nullptr;
    const yaml_char_t* tag = nullptr;
    bool flow = false;
    if (event.type == YAML_SCALAR_EVENT) {
      anchor = event.data.scalar.anchor;
      tag = event.data.scalar.tag;
    } else if (event.type == YAML_MAPPING_START_EVENT) {
      anchor = event.data.mapping_start.anchor;
      tag = event.data.mapping_start.tag;
      flow = event.data.mapping_start.style == YAML_FLOW_MAPPING_STYLE;
    } else {
      anchor = event.data.sequence_start.anchor;
      tag = event.data.sequence_start.tag;
      flow = event.data.sequence_start.style == YAML_FLOW_SEQUENCE_STYLE;
    }
    if (anchor != nullptr) return Fail(at, NodePath(), "anchors (&) are not supported");
    if (tag != nullptr) return Fail(at, NodePath(), "tags (!) are not supported");
    if (flow) {
      return Fail(at, NodePath(),
                  "flow collections ({...} and [...]) are not supported; use block "
                  "style, one entry per line");
    }
    if (frames_.empty()) return Root(event);
    Frame& frame = frames_.back();
    if (frame.node->kind == YamlNode::Kind::kSequence) return Item(event);
    if (!frame.have_key) return Key(event);
    return Value(event);
  }

  // The document itself: a mapping, or nothing at all (an empty file).
  void Root(const yaml_event_t& event) {
    const WebConfigLocation at = Location(event.start_mark);
    if (event.type == YAML_MAPPING_START_EVENT) {
      content_ = true;
      Push(&root_, "");
      return;
    }
    if (event.type == YAML_SEQUENCE_START_EVENT) {
      return Fail(at, "", "a \"- \" list item where a key was expected");
    }
    if (!ScalarShapeOk(event, "")) return;
    const bool empty =
        event.data.scalar.length == 0 && event.data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
    if (!empty) Fail(at, "", "expected \"key: value\"");
  }

  void Key(const yaml_event_t& event) {
    Frame& frame = frames_.back();
    const WebConfigLocation at = Location(event.start_mark);
    // libyaml takes "? key" (an explicit, possibly complex, key); a key here
    // is the first thing on its line.
    const std::string_view line = lines_.Line(event.start_mark.line);
    const size_t before = line.substr(0, lines_.InLine(event.start_mark)).find_last_not_of(' ');
    if (before != std::string_view::npos && line[before] == '?') {
      return Fail(lines_.AtOffset(lines_.Start(event.start_mark.line) + before), frame.path,
                  "a key cannot start with '?' (complex keys, flow style, anchors, "
                  "aliases and tags are not supported)");
    }
    if (event.type != YAML_SCALAR_EVENT) {
      return Fail(at, frame.path, "a key must be a single value, not a mapping or a list");
    }
    if (!ScalarShapeOk(event, frame.path)) return;
    std::string key(reinterpret_cast<const char*>(event.data.scalar.value),
                    event.data.scalar.length);
    if (key.empty()) return Fail(at, frame.path, "empty key");
    if (key.size() > kMaxKeyBytes) {
      return Fail(at, frame.path, "a key longer than " + std::to_string(kMaxKeyBytes) + " bytes");
    }
    if (auto [it, fresh] = frame.key_lines.emplace(key, at.line); !fresh) {
      return Fail(
          at, JoinKey(frame.path, key),
          "duplicate key " + Quote(key) + " (first at line " + std::to_string(it->second) + ")");
    }
    if (!CountNode(at, frame.path)) return;
    frame.have_key = true;
    frame.key = std::move(key);
    frame.key_at = at;
  }

  void Value(const yaml_event_t& event) {
    Frame& frame = frames_.back();
    const std::string path = JoinKey(frame.path, frame.key);
    YamlNode node;
    node.key_at = frame.key_at;
    if (!Fill(event, path, frame.path, &node)) return;
    if (node.kind == YamlNode::Kind::kNull && event.data.scalar.length == 0) {
      node.at = node.key_at;  // nothing after the colon: point at the key
    }
    frame.have_key = false;
    frame.node->entries.push_back(YamlEntry{std::move(frame.key), std::move(node)});
    Opened(event, &frame.node->entries.back().value, path);
  }

  void Item(const yaml_event_t& event) {
    Frame& frame = frames_.back();
    const WebConfigLocation at = Location(event.start_mark);
    if (event.type == YAML_MAPPING_START_EVENT) {
      return Fail(at, frame.path, "mappings inside lists are not supported");
    }
    if (event.type == YAML_SEQUENCE_START_EVENT) {
      return Fail(at, frame.path, "nested lists are not supported");
    }
    if (!CountNode(at, frame.path)) return;
    YamlNode node;
    if (!Fill(event, frame.path, frame.path, &node)) return;
    frame.node->items.push_back(std::move(node));
    last_done_path_ = frame.path;
  }

  // Sets the kind, location and (for a scalar) the text of a new node.
  bool Fill(const yaml_event_t& event, const std::string& path, const std::string& container_path,
            YamlNode* node) {
    node->at = Location(event.start_mark);
    if (event.type == YAML_MAPPING_START_EVENT) {
      node->kind = YamlNode::Kind::kMapping;
    } else if (event.type == YAML_SEQUENCE_START_EVENT) {
      node->kind = YamlNode::Kind::kSequence;
    } else {
      if (!ScalarShapeOk(event, path, container_path)) return false;
      const auto& s = event.data.scalar;
      node->scalar.assign(reinterpret_cast<const char*>(s.value), s.length);
      node->quoted = s.style != YAML_PLAIN_SCALAR_STYLE;
      const bool null =
          !node->quoted && (node->scalar.empty() || node->scalar == "~" || node->scalar == "null" ||
                            node->scalar == "Null" || node->scalar == "NULL");
      node->kind = null ? YamlNode::Kind::kNull : YamlNode::Kind::kScalar;
      if (null) node->scalar.clear();
    }
    if (node->kind != YamlNode::Kind::kScalar && node->kind != YamlNode::Kind::kNull &&
        static_cast<int>(frames_.size()) >= kMaxWebConfigDepth) {
      Fail(node->at, path, "nested deeper than " + std::to_string(kMaxWebConfigDepth) + " levels");
      return false;
    }
    return true;
  }

  // A collection just added to its parent becomes the innermost frame.
  void Opened(const yaml_event_t& event, YamlNode* node, const std::string& path) {
    if (event.type == YAML_SCALAR_EVENT) {
      last_done_path_ = path;
      return;
    }
    Push(node, path);
  }

  void Push(YamlNode* node, std::string path) {
    frames_.emplace_back();
    frames_.back().node = node;
    frames_.back().path = std::move(path);
  }

  // One-line scalars only: no block scalars, nothing spanning lines.
  bool ScalarShapeOk(const yaml_event_t& event, const std::string& path) {
    return ScalarShapeOk(event, path, path);
  }
  bool ScalarShapeOk(const yaml_event_t& event, const std::string& path,
                     const std::string& container_path) {
    const auto style = event.data.scalar.style;
    const WebConfigLocation at = Location(event.start_mark);
    if (style == YAML_LITERAL_SCALAR_STYLE || style == YAML_FOLDED_SCALAR_STYLE) {
      Fail(at, path,
           "block scalars (| and >) are not supported; write the value on one line, "
           "quoted if needed");
      return false;
    }
    if (event.start_mark.line == event.end_mark.line) {
      // libyaml takes a '#' right after the closing quote as a comment; YAML
      // wants a blank before one.
      if (style != YAML_PLAIN_SCALAR_STYLE && lines_.At(event.end_mark) == '#') {
        Fail(Location(event.end_mark), path, "unexpected text after the quoted string");
        return false;
      }
      return true;
    }
    if (style == YAML_PLAIN_SCALAR_STYLE &&
        lines_.Line(event.start_mark.line).find_first_not_of(' ') ==
            lines_.InLine(event.start_mark)) {
      // First on its line, so meant as a key: that line lacks its ':'.
      Fail(at, container_path, "expected \"key: value\"");
      return false;
    }
    if (style == YAML_PLAIN_SCALAR_STYLE) {
      // A value going on at a deeper indentation on the next line (or a
      // misindented key, which libyaml reads the same way): point at where
      // that line starts.
      size_t line = event.start_mark.line + 1;
      while (line < event.end_mark.line &&
             lines_.Line(line).find_first_not_of(" \r") == std::string_view::npos) {
        ++line;
      }
      const size_t indent = lines_.Line(line).find_first_not_of(' ');
      Fail({static_cast<int>(line) + 1,
            static_cast<int>(indent == std::string_view::npos ? 0 : indent) + 1},
           container_path,
           "unexpected indentation (multi-line values are not supported; quote the "
           "value on one line)");
      return false;
    }
    Fail(at, path,
         std::string(style == YAML_DOUBLE_QUOTED_SCALAR_STYLE ? "a double" : "a single") +
             "-quoted string spanning lines is not supported (write it on one line)");
    return false;
  }

  bool CountNode(WebConfigLocation at, const std::string& path) {
    if (++nodes_ > kMaxWebConfigNodes) {
      Fail(at, path,
           "more than " + std::to_string(kMaxWebConfigNodes) +
               " entries (a web-config file is small)");
      return false;
    }
    return true;
  }

  std::string_view text_;
  Lines lines_;
  YamlNode root_;
  std::vector<Frame> frames_;
  std::optional<std::string> last_done_path_;
  LastEvent last_event_;
  bool content_ = false;  // a document had a mapping
  std::optional<size_t> reader_error_offset_;
  size_t nodes_ = 0;
  bool error_ = false;
  YamlResult result_;
};

}  // namespace

YamlResult ParseYamlSubset(std::string_view text) {
  if (text.size() > kMaxWebConfigBytes) {
    YamlResult result;
    result.error.problem =
        "the file is larger than " + std::to_string(kMaxWebConfigBytes) + " bytes";
    return result;
  }
  // Stripped here rather than by libyaml, so first-line columns do not
  // count it.
  if (text.starts_with(kUtf8ByteOrderMark)) text.remove_prefix(kUtf8ByteOrderMark.size());
  // libyaml reads only up to the first line CheckLines refuses: a problem
  // it finds before that line comes first, as it would reading in order.
  size_t bad_line = text.size();
  const auto line_problem = CheckLines(text, &bad_line);
  const std::string for_libyaml =
      SeparatingTabsAsSpaces(text.substr(0, line_problem ? bad_line : text.size()));
  EventReader reader(for_libyaml);
  YamlResult result = reader.Read();
  if (const auto offset = reader.reader_error_offset()) {
    // libyaml decodes ahead of what it parses, so bytes that are not UTF-8
    // are reported before a problem on an earlier line. Those lines again,
    // without the bad one:
    const size_t line_start = for_libyaml.rfind('\n', *offset);
    if (line_start != std::string::npos) {
      YamlResult earlier =
          EventReader(std::string_view(for_libyaml).substr(0, line_start + 1)).Read();
      if (!earlier.root) return earlier;
    }
  }
  if (result.root && line_problem) {
    result.root.reset();
    result.error = *line_problem;
  }
  return result;
}

}  // namespace drivewatch::detail
