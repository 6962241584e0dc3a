// SPDX-License-Identifier: Apache-2.0
#include "config/loader.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <utility>

#include "config/checks.h"
#include "config/schema.h"

namespace drivewatch::config::detail {

namespace {

constexpr std::string_view kDurationExample =
    "a duration string such as \"30s\"";

}  // namespace

void Loader::Report(const toml::source_position& where, std::string key,
                    std::string problem) {
  errors_.push_back(ConfigError{file_, static_cast<int>(where.line),
                                static_cast<int>(where.column),
                                std::move(key), std::move(problem)});
}

void Loader::WrongType(const toml::node& node, std::string key,
                       std::string_view expected) {
  Report(node.source().begin, std::move(key),
         "wrong type: " + Describe(node) + " (expected " +
             std::string(expected) + ")");
}

void Loader::BadName(const toml::node& node, std::string key) {
  const std::string& text = node.as_string()->get();
  std::string problem;
  if (text.empty()) {
    problem = "empty string";
  } else {
    const auto bad = std::find_if(text.begin(), text.end(), [](char c) {
      return !(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ||
               c == '.');
    });
    problem = Quote(text) + " has a character a name cannot have: " +
              Quote(std::string_view(&*bad, 1));
  }
  Report(node.source().begin, std::move(key),
         problem + " (expected a non-empty string of letters, digits, _, - and .)");
}

void Loader::BadCount(const toml::node& node, std::string key, std::string_view expected) {
  const std::size_t n = node.as_array()->size();
  Report(node.source().begin, std::move(key),
         (n == 0 ? std::string("empty array") : "array of " + std::to_string(n)) +
             " (expected " + std::string(expected) + ")");
}

void Loader::CheckKeys(const toml::table& table, std::string_view path,
                       std::span<const std::string_view> known,
                       std::string_view noun) {
  for (auto&& [key, node] : table) {
    if (std::find(known.begin(), known.end(), key.str()) != known.end())
      continue;
    std::string what = "unknown ";
    what += noun.empty() ? (node.is_table() ? "table" : "key") : noun;
    if (auto near = detail::ClosestMatch(key.str(), known)) {
      what += " (did you mean " + Quote(*near) + "?)";
    } else if (std::string elsewhere = Elsewhere(key.str(), node.is_table());
               !elsewhere.empty()) {
      what += " (did you mean " + elsewhere + "?)";
    } else {
      what += " (expected " + OneOf(known) + ")";
    }
    Report(key.source().begin, Join(path, key.str()), std::move(what));
  }
}

std::string Loader::Elsewhere(std::string_view name, bool is_table) {
  // Every key of a section, or every hinted section, with this name: the
  // shallower places first, so "aging.targets" comes before
  // "probes.read_latency.targets".
  std::vector<std::pair<std::size_t, std::string>> places;
  for (const SchemaSection& section : Sections()) {
    if (section.element) continue;
    if (is_table) {
      if (section.hinted && section.path.substr(section.path.rfind('.') + 1) == name) {
        places.emplace_back(0, std::string(section.path));
      }
      continue;
    }
    for (const SchemaKey& key : section.keys) {
      if (key.name != name) continue;
      places.emplace_back(std::count(section.path.begin(), section.path.end(), '.'),
                          std::string(section.path) + "." + std::string(key.name));
    }
  }
  std::stable_sort(places.begin(), places.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string out;
  for (const auto& place : places) {
    if (!out.empty()) out += " or ";
    out += Quote(place.second);
  }
  return out;
}

const toml::table* Loader::Table(const toml::table& parent, std::string_view name,
                                 std::string_view path) {
  const toml::node* node = parent.get(name);
  if (node == nullptr) return nullptr;
  if (const toml::table* table = node->as_table()) return table;
  const std::string key = Join(path, name);
  WrongType(*node, key, "a table, written [" + key + "]");
  return nullptr;
}

void Loader::ReadString(const toml::table& table, std::string_view name,
                        std::string_view path,
                        std::optional<std::string> (*check)(std::string_view),
                        std::string& out) {
  const toml::node* node = table.get(name);
  if (node == nullptr) return;
  const auto* value = node->as_string();
  if (value == nullptr) return WrongType(*node, Join(path, name), "a string");
  if (auto problem = check(value->get())) {
    return Report(node->source().begin, Join(path, name),
                  std::move(*problem));
  }
  out = value->get();
}

void Loader::ReadLogLevel(const toml::table& table, std::string_view name,
                          std::string_view path, LogLevel& out) {
  const toml::node* node = table.get(name);
  if (node == nullptr) return;
  constexpr std::string_view kExpected =
      "\"debug\", \"info\", \"warn\" or \"error\"";
  const auto* value = node->as_string();
  if (value == nullptr) {
    return WrongType(*node, Join(path, name),
                     "a string: " + std::string(kExpected));
  }
  const std::optional<LogLevel> level = ParseLogLevel(value->get());
  if (!level) {
    return Report(node->source().begin, Join(path, name),
                  Quote(value->get()) + " is not a log level (expected " +
                      std::string(kExpected) + ")");
  }
  out = *level;
}

void Loader::ReadBool(const toml::table& table, std::string_view name,
                      std::string_view path, bool& out) {
  const toml::node* node = table.get(name);
  if (node == nullptr) return;
  const auto* value = node->as_boolean();
  if (value == nullptr)
    return WrongType(*node, Join(path, name), "a boolean: true or false");
  out = value->get();
}

void Loader::ReadDuration(const toml::table& table, std::string_view name,
                          std::string_view path, Range range, milliseconds& out) {
  const toml::node* node = table.get(name);
  if (node == nullptr) return;
  const std::string key = Join(path, name);
  const auto* value = node->as_string();
  // A bare number is the likeliest mistake, and its unit is anyone's
  // guess, so it is refused rather than read as seconds.
  if (value == nullptr) return WrongType(*node, key, kDurationExample);
  std::string problem;
  const std::optional<milliseconds> d = ParseDuration(value->get(), &problem);
  if (!d) return Report(node->source().begin, key, std::move(problem));
  if (*d < range.min || *d > range.max) {
    return Report(node->source().begin, key,
                  Quote(value->get()) + " is out of range (expected " +
                      FormatDuration(range.min) + " to " +
                      FormatDuration(range.max) + ")");
  }
  out = *d;
}

void Loader::ReadRegion(const toml::table& t, std::string_view path, std::uint64_t unit,
                        const std::string& not_multiple, std::uint64_t& offset,
                        std::uint64_t& length) {
  for (auto [field, value] : {std::pair<const char*, std::uint64_t*>{"offset", &offset},
                              {"length", &length}}) {
    const toml::node* n = t.get(field);
    if (n == nullptr) continue;
    const std::string key = std::string(path) + "." + field;
    if (auto size = Size(*n, key)) {
      if (*size % unit != 0) {
        Report(n->source().begin, key, Quote(FormatSize(*size)) + not_multiple);
      } else {
        *value = *size;
      }
    }
  }
}

std::string Loader::ReadUniqueSerial(const toml::table& t, std::string_view path,
                                     std::string_view duplicate_has,
                                     std::string_view expected, std::vector<Located>& seen) {
  const toml::node* serial = t.get("serial");
  if (serial == nullptr) {
    Report(t.source().begin, std::string(path),
           "missing serial (expected the drive's serial number, "
           "e.g. serial = \"S4EWNX0R123456\")");
    return "";
  }
  const auto* s = serial->as_string();
  if (s == nullptr) {
    WrongType(*serial, std::string(path) + ".serial", "a non-empty serial number string");
    return "";
  }
  if (s->get().empty()) {
    Report(serial->source().begin, std::string(path) + ".serial",
           "empty serial (expected the drive's serial number, e.g. serial = \"S4EWNX0R123456\")");
    return "";
  }
  auto first = std::find_if(seen.begin(), seen.end(),
                            [&](const Located& l) { return l.value == s->get(); });
  if (first != seen.end()) {
    Report(serial->source().begin, std::string(path) + ".serial",
           Quote(s->get()) + " already " + std::string(duplicate_has) + ", at " +
               At(first->where) + " (expected " + std::string(expected) + ")");
  } else {
    seen.push_back(Located{s->get(), serial->source().begin});
  }
  return s->get();
}

void Loader::ReadSchedule(const toml::table& table, std::string_view name,
                          std::string_view path, Schedule& out) {
  const toml::node* node = table.get(name);
  if (node == nullptr) return;
  const std::string key = Join(path, name);
  const auto* value = node->as_string();
  if (value == nullptr) {
    return WrongType(*node, key,
                     "a schedule string such as \"daily 02:00\" or "
                     "\"weekly sun 03:00\"");
  }
  std::string problem;
  const std::optional<Schedule> schedule =
      ParseSchedule(value->get(), &problem);
  if (!schedule) return Report(node->source().begin, key, std::move(problem));
  out = *schedule;
}

std::optional<std::uint64_t> Loader::Size(const toml::node& node, std::string key) {
  const auto* v = node.as_string();
  if (v == nullptr) {
    WrongType(node, std::move(key), "a size string such as \"4KiB\"");
    return std::nullopt;
  }
  std::string problem;
  auto size = ParseSize(v->get(), &problem);
  if (!size) Report(node.source().begin, std::move(key), std::move(problem));
  return size;
}

const toml::array* Loader::TableArray(const toml::table& t, std::string_view name,
                                      std::string_view path) {
  const toml::node* node = t.get(name);
  if (node == nullptr) return nullptr;
  const toml::array* array = node->as_array();
  const std::string key = Join(path, name);
  if (array == nullptr) {
    WrongType(*node, key, "an array of tables, written [[" + key + "]]");
  }
  return array;
}

std::string Loader::ReadName(const toml::table& e, std::string_view path,
                             std::string_view noun, std::vector<Located>& seen) {
  const toml::node* name = e.get("name");
  const std::string key = std::string(path) + ".name";
  if (name == nullptr) {
    Report(e.source().begin, std::string(path),
           "missing name (expected the " + std::string(noun) +
               "'s name, e.g. name = \"scratch\")");
    return "";
  }
  const auto* v = name->as_string();
  if (v == nullptr) {
    WrongType(*name, key, "a non-empty string of letters, digits, _, - and .");
    return "";
  }
  if (v->get().empty() ||
      !std::all_of(v->get().begin(), v->get().end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
               c == '-' || c == '.';
      })) {
    BadName(*name, key);
    return "";
  }
  auto first = std::find_if(seen.begin(), seen.end(), [&](const Located& l) {
    return l.value == v->get();
  });
  if (first != seen.end()) {
    Report(name->source().begin, key,
           Quote(v->get()) + " is already a " + std::string(noun) + ", at " +
               At(first->where) + " (expected unique names)");
    return "";
  }
  seen.push_back(Located{v->get(), name->source().begin});
  return v->get();
}

std::pair<const toml::node*, const toml::node*> Loader::ReadDeviceOrDirectory(
    const toml::table& e, std::string_view path, std::string& device_out,
    std::string& directory_out,
    std::optional<std::string> (*device_problem)(std::string_view)) {
  const toml::node* device = e.get("block_device");
  const toml::node* directory = e.get("directory");
  if ((device == nullptr) == (directory == nullptr)) {
    Report(e.source().begin, std::string(path),
           std::string(device == nullptr
                           ? "neither block_device nor directory is set"
                           : "both block_device and directory are set") +
               " (expected exactly one)");
  }
  ReadString(e, "block_device", path, device_problem, device_out);
  ReadString(e, "directory", path, detail::AbsolutePathProblem, directory_out);
  return {device, directory};
}

void Loader::ReadNumber(const toml::table& t, std::string_view name,
                        std::string_view path, double min, double max,
                        std::string_view expected, double& out) {
  const toml::node* node = t.get(name);
  if (node == nullptr) return;
  const std::string key = Join(path, name);
  std::optional<double> value;
  if (const auto* i = node->as_integer()) value = static_cast<double>(i->get());
  if (const auto* f = node->as_floating_point()) value = f->get();
  if (!value) return WrongType(*node, key, expected);
  if (!(*value >= min && *value <= max)) {
    return Report(node->source().begin, key,
                  Describe(*node) + " is out of range (expected " +
                      std::string(expected) + ")");
  }
  out = *value;
}

void Loader::ReadInteger(const toml::table& t, std::string_view name,
                         std::string_view path, std::int64_t min, std::int64_t max,
                         std::uint32_t& out) {
  const toml::node* node = t.get(name);
  if (node == nullptr) return;
  const std::string key = Join(path, name);
  const std::string expected = "a whole number from " + std::to_string(min) +
                               " to " + std::to_string(max);
  const auto* v = node->as_integer();
  if (v == nullptr) return WrongType(*node, key, expected);
  if (v->get() < min || v->get() > max) {
    return Report(node->source().begin, key,
                  std::to_string(v->get()) + " is out of range (expected " +
                      expected + ")");
  }
  out = static_cast<std::uint32_t>(v->get());
}

void Loader::ReadDurationList(const toml::table& t, std::string_view name,
                              std::string_view path, Range range,
                              std::vector<milliseconds>& out) {
  const toml::node* node = t.get(name);
  if (node == nullptr) return;
  const std::string key = Join(path, name);
  const std::string expected = "a non-empty array of durations from " +
                               FormatDuration(range.min) + " to " +
                               FormatDuration(range.max) +
                               ", such as [\"1m\", \"2m\"]";
  const toml::array* array = node->as_array();
  if (array == nullptr) return WrongType(*node, key, expected);
  if (array->empty() || array->size() > 100) {
    return BadCount(*node, key, expected + ", at most 100");
  }
  std::vector<milliseconds> list;
  for (const toml::node& element : *array) {
    const auto* v = element.as_string();
    if (v == nullptr) return WrongType(element, key, expected);
    std::string problem;
    const auto d = ParseDuration(v->get(), &problem);
    if (!d) return Report(element.source().begin, key, std::move(problem));
    if (*d < range.min || *d > range.max) {
      return Report(element.source().begin, key,
                    Quote(v->get()) + " is out of range (expected " +
                        FormatDuration(range.min) + " to " +
                        FormatDuration(range.max) + ")");
    }
    list.push_back(*d);
  }
  out = std::move(list);
}

}  // namespace drivewatch::config::detail
