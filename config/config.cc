// SPDX-License-Identifier: Apache-2.0
#include "config/config.h"

#include <fcntl.h>
#include <fnmatch.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <system_error>
#include <utility>

#include "config/checks.h"
#include "config/loader.h"
#include "config/schema.h"
#include "config/util/sys.h"
#include "config/util/text.h"

namespace drivewatch::config::detail {
namespace {

// The keys of the tables that hold sections but are none: the top and
// [probes]. Each is the next part of a section's path, in schema order.
std::vector<std::string_view> ContainerKeys(std::string_view prefix) {
  std::vector<std::string_view> names;
  for (const SchemaSection& s : Sections()) {
    if (s.element) continue;
    std::string_view rest = s.path;
    if (!prefix.empty()) {
      if (rest.size() <= prefix.size() || rest.substr(0, prefix.size()) != prefix ||
          rest[prefix.size()] != '.') {
        continue;
      }
      rest.remove_prefix(prefix.size() + 1);
    }
    rest = rest.substr(0, rest.find('.'));
    if (std::find(names.begin(), names.end(), rest) == names.end()) names.push_back(rest);
  }
  return names;
}

}  // namespace

// A key as TOML would write it, so the dotted path reads back unambiguously.
std::string KeyText(std::string_view key) {
  const bool bare =
      !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
               (c >= '0' && c <= '9') || c == '_' || c == '-';
      });
  return bare ? std::string(key) : Quote(key);
}

std::string Join(std::string_view path, std::string_view key) {
  return path.empty() ? KeyText(key) : std::string(path) + "." + KeyText(key);
}

// "string \"yes\"", "integer 30", "table": what a wrong-typed value was.
std::string Describe(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string:
      return "string " + Quote(node.as_string()->get());
    case toml::node_type::integer:
      return "integer " + std::to_string(node.as_integer()->get());
    case toml::node_type::floating_point: {
      char buf[32];
      auto [end, ec] = std::to_chars(buf, buf + sizeof(buf),
                                     node.as_floating_point()->get());
      return "float " +
             (ec == std::errc() ? std::string(buf, end) : std::string("?"));
    }
    case toml::node_type::boolean:
      return node.as_boolean()->get() ? "boolean true" : "boolean false";
    case toml::node_type::date:
    case toml::node_type::time:
    case toml::node_type::date_time: {
      std::ostringstream os;
      node.visit([&](const auto& v) { os << v; });
      const char* kind = node.is_date()   ? "date "
                         : node.is_time() ? "time "
                                          : "date-time ";
      return kind + os.str();
    }
    case toml::node_type::array:
      return "array";
    case toml::node_type::table:
      return "table";
    case toml::node_type::none:
      break;
  }
  return "value";
}

std::string OneOf(std::span<const std::string_view> names) {
  std::string out = names.size() == 1 ? "" : "one of: ";
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += ", ";
    out += Quote(names[i]);
  }
  return out;
}

std::string At(const toml::source_position& where) {
  return "line " + std::to_string(where.line) + ", column " +
         std::to_string(where.column);
}

// toml++'s description, made to read like ours: it starts "Error while
// parsing ..." where ours start in lower case, and it can quote the raw
// text it stopped at, newline included ("saw 'tru\n'"), which would split
// the message over two lines.
std::string FromToml(std::string_view description) {
  std::string out;
  for (char c : description) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      const std::string escaped = Quote(std::string_view(&c, 1));
      out.append(escaped, 1, escaped.size() - 2);  // without the quotes
    } else {
      out += c;
    }
  }
  if (out.size() > 1 && out[0] >= 'A' && out[0] <= 'Z' && out[1] >= 'a' &&
      out[1] <= 'z') {
    out[0] = static_cast<char>(out[0] - 'A' + 'a');
  }
  // toml++ names its compile-time limits by their macros, which mean
  // nothing to whoever wrote the file.
  constexpr std::string_view kNested = " (TOML_MAX_NESTED_VALUES)";
  if (const auto at = out.find(kNested); at != std::string::npos) {
    out.replace(at, kNested.size(),
                " (expected arrays and inline tables nested less deep; no drivewatch key "
                "nests them more than two levels)");
  }
  for (auto open = out.find(" (TOML_"); open != std::string::npos; open = out.find(" (TOML_")) {
    const auto close = out.find(')', open);
    out.erase(open, close == std::string::npos ? std::string::npos : close - open + 1);
  }
  return out;
}

bool MatchesAny(const std::vector<std::string>& patterns,
                const std::string& s) {
  return std::any_of(patterns.begin(), patterns.end(),
                     [&](const std::string& p) {
                       return fnmatch(p.c_str(), s.c_str(), 0) == 0;
                     });
}

LoadResult Loader::Load(const toml::table& root) {
  Config config = Defaults();
  CheckKeys(root, "", ContainerKeys(""), "");
  // [probes] is the one table that holds sections; each of its keys is a
  // probe's table.
  const toml::table* probes = Table(root, "probes", "");
  if (probes != nullptr) CheckKeys(*probes, "probes", ContainerKeys("probes"), "probe");
  for (const SchemaSection& section : Sections()) {
    if (section.element) continue;
    const std::size_t dot = section.path.find('.');
    const toml::table* parent = dot == std::string_view::npos ? &root : probes;
    if (parent == nullptr) continue;
    const std::string_view parent_path =
        dot == std::string_view::npos ? "" : section.path.substr(0, dot);
    const std::string_view name =
        dot == std::string_view::npos ? section.path : section.path.substr(dot + 1);
    if (const toml::table* table = Table(*parent, name, parent_path)) {
      ReadSection(*table, section, config);
    }
  }

  LoadResult result;
  if (errors_.empty()) {
    result.config = std::move(config);
  } else {
    std::stable_sort(errors_.begin(), errors_.end(),
                     [](const ConfigError& a, const ConfigError& b) {
                       return std::pair(a.line, a.column) <
                              std::pair(b.line, b.column);
                     });
    result.errors = std::move(errors_);
  }
  return result;
}

void Loader::ReadSection(const toml::table& table, const SchemaSection& section,
                         Config& out) {
  CheckKeys(table, section.path, KeyNames(section), "");
  for (const SchemaKey& key : section.keys) ReadSimple(table, section.path, key, out);
  if (section.read_rest != nullptr) (this->*section.read_rest)(table, out);
}

void Loader::ReadSimple(const toml::table& table, std::string_view path,
                        const SchemaKey& key, Config& out) {
  const SimpleField& f = key.field;
  if (const auto* b = std::get_if<Field<bool>>(&f)) {
    ReadBool(table, key.name, path, (*b)(out));
  } else if (const auto* d = std::get_if<Field<milliseconds>>(&f)) {
    ReadDuration(table, key.name, path, key.duration, (*d)(out));
  } else if (const auto* s = std::get_if<Field<std::string>>(&f)) {
    ReadString(table, key.name, path, key.check, (*s)(out));
  } else if (const auto* l = std::get_if<Field<LogLevel>>(&f)) {
    ReadLogLevel(table, key.name, path, (*l)(out));
  } else if (const auto* sc = std::get_if<Field<Schedule>>(&f)) {
    ReadSchedule(table, key.name, path, (*sc)(out));
  } else if (const auto* n = std::get_if<Field<double>>(&f)) {
    ReadNumber(table, key.name, path, key.number.min, key.number.max, key.number.expected,
               (*n)(out));
  }
}

void Loader::ReadDrives(const toml::table& drives, Config& out) {
  ReadSelection(drives, "serials", out.drives.include_serials, out.drives.exclude_serials);
  ReadSelection(drives, "models", out.drives.include_models, out.drives.exclude_models);
}

std::vector<Located> Loader::ReadPatterns(const toml::table& table,
                                          std::string_view name,
                                          std::string_view path) {
  std::vector<Located> patterns;
  const toml::node* node = table.get(name);
  if (node == nullptr) return patterns;
  const std::string key = Join(path, name);
  const toml::array* array = node->as_array();
  if (array == nullptr) {
    WrongType(*node, key, "an array of glob patterns, such as [\"S5GX*\"]");
    return patterns;
  }
  for (const toml::node& element : *array) {
    const auto* value = element.as_string();
    if (value == nullptr) {
      WrongType(element, key, "a glob pattern string");
      continue;
    }
    if (auto problem = detail::GlobProblem(value->get())) {
      Report(element.source().begin, key, std::move(*problem));
      continue;
    }
    auto first = std::find_if(
        patterns.begin(), patterns.end(),
        [&](const Located& p) { return p.value == value->get(); });
    if (first != patterns.end()) {
      Report(element.source().begin, key,
             Quote(value->get()) + " is listed twice, first at " +
                 At(first->where) + " (expected each pattern once)");
      continue;
    }
    patterns.push_back(Located{value->get(), element.source().begin});
  }
  return patterns;
}

void Loader::ReadSelection(const toml::table& drives, std::string_view what,
                           std::vector<std::string>& include_out,
                           std::vector<std::string>& exclude_out) {
  const std::string include_name = "include_" + std::string(what);
  const std::string exclude_name = "exclude_" + std::string(what);
  const std::vector<Located> include =
      ReadPatterns(drives, include_name, "drives");
  const std::vector<Located> exclude =
      ReadPatterns(drives, exclude_name, "drives");
  for (const Located& ex : exclude) {
    for (const Located& in : include) {
      if (in.value != ex.value) continue;
      // Report the later one: the earlier line reads fine on its own.
      const bool ex_later = std::pair(ex.where.line, ex.where.column) >
                            std::pair(in.where.line, in.where.column);
      const Located& later = ex_later ? ex : in;
      const Located& earlier = ex_later ? in : ex;
      Report(later.where,
             "drives." + (ex_later ? exclude_name : include_name),
             Quote(later.value) + " is also in drives." +
                 (ex_later ? include_name : exclude_name) + " at " +
                 At(earlier.where) + " (expected a pattern in " +
                 include_name + " or " + exclude_name + ", not both)");
    }
  }
  include_out.clear();
  for (const Located& p : include) include_out.push_back(p.value);
  exclude_out.clear();
  for (const Located& p : exclude) exclude_out.push_back(p.value);
}

}  // namespace drivewatch::config::detail

namespace drivewatch::config {

using detail::FormatWindow;
using detail::FromToml;
using detail::kWeekdayNames;
using detail::Loader;
using detail::MatchesAny;
using detail::Quote;

bool DriveSelection::Watches(std::string_view serial,
                             std::string_view model) const {
  const std::string sn = util::Trim(serial, detail::kIdentifyPadding);
  const std::string mn = util::Trim(model, detail::kIdentifyPadding);
  const bool included = (include_serials.empty() && include_models.empty()) ||
                        MatchesAny(include_serials, sn) ||
                        MatchesAny(include_models, mn);
  return included && !MatchesAny(exclude_serials, sn) &&
         !MatchesAny(exclude_models, mn);
}

Config Defaults() { return Config{}; }

const AgingTarget* AgingConfig::FindTarget(std::string_view name) const {
  for (const AgingTarget& t : targets) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

const PhaseConfig* AgingConfig::FindPhase(std::string_view name) const {
  for (const PhaseConfig& p : phases) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::string FormatPhaseSchedule(const PhaseSchedule& s) {
  if (s.interval.count() > 0) return "every " + FormatDuration(s.interval);
  if (s.window_start < 0) return "by hand only";
  std::string out = "window " + FormatWindow(s);
  if (s.weekdays != 0x7f) {
    out += " on";
    for (unsigned d = 0; d < 7; ++d) {
      if (s.weekdays & (1u << d)) out += " " + std::string(kWeekdayNames[d]);
    }
  }
  return out;
}

std::string ConfigError::ToString() const {
  std::string out = file;
  if (line > 0)
    out += ":" + std::to_string(line) + ":" + std::to_string(column);
  out += ": ";
  if (!key.empty()) out += key + ": ";
  out += problem;
  return out;
}

LoadResult LoadString(const std::string& text, const std::string& name,
                      const LoadOptions& options) {
  LoadResult result;
  try {
    toml::table root;
    try {
      root = toml::parse(std::string_view(text), std::string_view(name));
    } catch (const toml::parse_error& e) {
      result.errors.push_back(
          ConfigError{name, static_cast<int>(e.source().begin.line),
                      static_cast<int>(e.source().begin.column), "",
                      FromToml(e.description())});
      return result;
    }
    return Loader(name, options).Load(root);
  } catch (const std::exception& e) {
    // Only allocation failure gets here; callers are promised no throws.
    result.config.reset();
    result.errors.assign(
        1, ConfigError{name, 0, 0, "",
                       std::string("internal error: ") + e.what()});
    return result;
  }
}

LoadResult LoadFile(const std::string& path, const LoadOptions& options) {
  auto unreadable = [&](int err) {
    LoadResult result;
    result.errors.push_back(ConfigError{
        path, 0, 0, "",
        // strerror, as everywhere else: clang's UBSan took libstdc++'s
        // generic_category() for an object of no known type (its vptr
        // check), which a run out of descriptors reached.
        "cannot read: " + std::string(std::strerror(err))});
    return result;
  };
  const util::FdCloser fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return unreadable(errno);
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = read(fd.get(), buf, sizeof(buf));
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      return unreadable(errno);
    }
    text.append(buf, static_cast<size_t>(n));
  }
  return LoadString(text, path, options);
}

namespace {
constexpr std::pair<std::string_view, int> kSizeUnits[] = {
    {"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"B", 0}};
}  // namespace

std::string FormatSize(std::uint64_t bytes) {
  for (const auto& [unit, shift] : kSizeUnits) {
    const std::uint64_t scale = std::uint64_t{1} << shift;
    if (bytes != 0 && bytes % scale == 0) {
      return std::to_string(bytes / scale) + std::string(unit);
    }
  }
  return "0B";
}

std::optional<std::uint64_t> ParseSize(std::string_view text,
                                       std::string* error) {
  auto fail = [&](const std::string& why) -> std::optional<std::uint64_t> {
    if (error) {
      *error = detail::Quote(text) + " is not a valid size: " + why +
               " (expected a whole number and a unit: B, KiB, MiB, GiB or "
               "TiB, such as \"4KiB\")";
    }
    return std::nullopt;
  };
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0) return fail("no number");
  std::uint64_t n = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + digits, n);
  if (ec != std::errc()) return fail("number too large");
  const std::string_view unit = text.substr(digits);
  for (const auto& [name, shift] : kSizeUnits) {
    if (unit != name) continue;
    if (shift > 0 && n > (~std::uint64_t{0} >> shift)) return fail("too large");
    return n << shift;
  }
  return fail(unit.empty() ? "no unit" : "unknown unit " + detail::Quote(unit));
}

std::string_view LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

std::optional<LogLevel> ParseLogLevel(std::string_view name) {
  for (LogLevel level :
       {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn, LogLevel::kError}) {
    if (LogLevelName(level) == name) return level;
  }
  return std::nullopt;
}

}  // namespace drivewatch::config
