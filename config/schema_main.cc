// SPDX-License-Identifier: Apache-2.0
// Prints the config schema (config/schema.cc) as JSON, for the build's man
// page generator (packaging/man/gen-man.py): every section with its doc,
// every key with its doc and its default as ToToml() writes it, and the
// phase kinds (config/phase_kinds.h) with their keys' defaults, and each
// kind key's doc, range and whether it is required. With --example, writes
// the example config (ExampleToml()) instead: config/drivewatch.toml is
// that file, and example_config_test holds it to it.
//   usage: dw_config_schema FILE
//          dw_config_schema --example FILE
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "config/config.h"
#include "config/phase_kinds.h"
#include "config/schema.h"

namespace {

namespace detail = drivewatch::config::detail;

// The text after "name = " that WriteKey gives, without its newline.
std::string DefaultText(const detail::SchemaKey& key,
                        const drivewatch::config::Config& defaults) {
  std::string line;
  detail::WriteKey(line, key, defaults);
  const std::string prefix = std::string(key.name) + " = ";
  if (line.compare(0, prefix.size(), prefix) == 0) line.erase(0, prefix.size());
  while (!line.empty() && line.back() == '\n') line.pop_back();
  return line;
}

// Writes `text` to `path`; false (and why on stderr) when it cannot.
bool WriteFile(const char* path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  out.close();
  if (!out) std::perror(path);
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string_view(argv[1]) == "--example") {
    return WriteFile(argv[2], drivewatch::config::ExampleToml()) ? 0 : 1;
  }
  if (argc != 2 || argv[1][0] == '-') {
    std::cerr << "usage: dw_config_schema FILE\n"
                 "       dw_config_schema --example FILE\n";
    return 2;
  }
  const drivewatch::config::Config defaults = drivewatch::config::Defaults();
  nlohmann::ordered_json sections = nlohmann::ordered_json::array();
  for (const detail::SchemaSection& section : detail::Sections()) {
    nlohmann::ordered_json keys = nlohmann::ordered_json::array();
    for (const detail::SchemaKey& key : section.keys) {
      nlohmann::ordered_json k{{"name", key.name}, {"doc", key.doc}};
      // An element's keys have no default of their own to show.
      if (!section.element) k["default"] = DefaultText(key, defaults);
      keys.push_back(std::move(k));
    }
    sections.push_back({{"path", section.path},
                        {"doc", section.doc},
                        {"element", section.element},
                        {"keys", std::move(keys)}});
  }
  nlohmann::ordered_json kinds = nlohmann::ordered_json::array();
  drivewatch::config::ForEachPhaseKind([&](auto kind) {
    using Params = decltype(kind);
    // Each key with the kind's default, from the struct's member
    // initializers as ToToml() writes them ("" for an unset optional).
    nlohmann::ordered_json defaults = nlohmann::ordered_json::object();
    Params::Keys(kind, [&](const drivewatch::config::PhaseKey& key, const auto& value) {
      defaults[std::string(key.name)] = drivewatch::config::PhaseValueText(key, value);
    });
    kinds.push_back(
        {{"name", Params::kName}, {"writes", Params::kWrites}, {"keys", std::move(defaults)}});
  });
  nlohmann::ordered_json phase_keys = nlohmann::ordered_json::array();
  const auto describe = [](const drivewatch::config::PhaseKey& key) {
    return nlohmann::ordered_json{{"name", key.name},
                                  {"doc", key.doc},
                                  {"range", drivewatch::config::PhaseKeyRange(key)},
                                  {"required", !key.missing.empty()}};
  };
  for (const drivewatch::config::PhaseKey& key : drivewatch::config::PhaseKindKeys()) {
    nlohmann::ordered_json k = describe(key);
    // The keys of each table of an array of tables (perf's cells), with
    // their defaults as a table written without them reads.
    if (!key.fields.empty()) {
      nlohmann::ordered_json fields = nlohmann::ordered_json::array();
      nlohmann::ordered_json defaults = nlohmann::ordered_json::object();
      const drivewatch::config::PerfCell cell;
      drivewatch::config::PerfCell::Keys(cell,
                                         [&](const drivewatch::config::PhaseKey& f,
                                             const auto& value) {
                                           defaults[std::string(f.name)] =
                                               drivewatch::config::PhaseValueText(f, value);
                                         });
      for (const drivewatch::config::PhaseKey& f : key.fields) {
        nlohmann::ordered_json d = describe(f);
        d["default"] = defaults.value(std::string(f.name), std::string());
        fields.push_back(std::move(d));
      }
      k["fields"] = std::move(fields);
    }
    phase_keys.push_back(std::move(k));
  }
  const std::string json = nlohmann::ordered_json{{"sections", std::move(sections)},
                                                   {"phase_kinds", std::move(kinds)},
                                                   {"phase_keys", std::move(phase_keys)}}
                               .dump(2) +
                           "\n";
  return WriteFile(argv[1], json) ? 0 : 1;
}
