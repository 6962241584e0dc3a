// SPDX-License-Identifier: Apache-2.0
// The config's keys outside the phase kinds (whose keys are in
// config/kinds/), declared once; a light probe's enabled and interval come
// from its description (probe_catalog.h). Each section's key list drives unknown-key
// detection and its "did you mean" hints, the reading of every simple value
// with its type and range check, and ToToml(). A key whose value is more
// than one simple value (a list of patterns, an array of tables) has a
// writer here and is read by its section's reader in Loader.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <toml++/toml.h>

#include "config/config.h"

namespace drivewatch::config::detail {

class Loader;

struct Range {
  std::chrono::milliseconds min;
  std::chrono::milliseconds max;
};

// An integer or float key's bounds, and the words its errors expect.
struct NumberRange {
  double min = 0;
  double max = 0;
  std::string_view expected;
};

// Where a simple value lives in Config. A light probe's enabled and
// interval are found by the probe's name, so a Field may hold that name.
template <class T>
using Field = std::function<T&(Config&)>;
using SimpleField =
    std::variant<std::monostate, Field<bool>, Field<std::chrono::milliseconds>,
                 Field<std::string>, Field<LogLevel>, Field<Schedule>, Field<double>>;

struct SchemaKey {
  std::string_view name;
  std::string_view doc;
  // A simple value, read and written by its type; monostate for the others.
  SimpleField field;
  Range duration{};          // a duration's
  NumberRange number{};      // a number's
  // A string's own check, returning the problem.
  std::optional<std::string> (*check)(std::string_view) = nullptr;
  // A key that is not simple: writes its whole `name = value` line.
  void (*write)(std::string& out, const Config& config) = nullptr;
};

struct SchemaSection {
  std::string_view path;  // "probes.health"
  std::span<const SchemaKey> keys;
  // The comment above the table's header in the example config, which
  // drivewatch.toml(5) prints before the keys. The example's tables have
  // none today: what a probe is says the comment of its first key.
  std::string_view doc;
  // One table of the array of tables [[path]]: its keys are checked, but
  // read and written by the array's own reader and writer, and a key
  // written elsewhere is never pointed here.
  bool element = false;
  // Whether a table of this name written in the wrong place is pointed here.
  bool hinted = true;
  // Reads the keys that are not simple, after the simple ones.
  void (Loader::*read_rest)(const toml::table& table, Config& out) = nullptr;
};

// Every section, in the order ToToml() writes them: those written in
// schema.cc, and each light probe's [probes.NAME] with the enabled and
// interval keys its description (config/probe_catalog.h) gives.
std::span<const SchemaSection> Sections();
// The section at `path`; every caller names one that exists.
const SchemaSection& Section(std::string_view path);
std::vector<std::string_view> KeyNames(const SchemaSection& section);
// The example config's opening comment, without the "# " of its lines
// (ExampleToml(), config_toml_out.cc).
std::string_view ExamplePreamble();

// `name = value` and a newline, as ToToml() writes the key (config_toml_out.cc).
void WriteKey(std::string& out, const SchemaKey& key, const Config& config);

// Writers of the keys that are not simple (config_toml_out.cc).
void WriteIncludeSerials(std::string& out, const Config& config);
void WriteExcludeSerials(std::string& out, const Config& config);
void WriteIncludeModels(std::string& out, const Config& config);
void WriteExcludeModels(std::string& out, const Config& config);
void WriteMeters(std::string& out, const Config& config);
void WriteRates(std::string& out, const Config& config);
void WriteArrivals(std::string& out, const Config& config);
void WriteBlockSize(std::string& out, const Config& config);
void WriteWindows(std::string& out, const Config& config);
void WriteReadTargets(std::string& out, const Config& config);
void WriteSelfTestDrives(std::string& out, const Config& config);
void WriteAgingTargets(std::string& out, const Config& config);
void WriteAgingPhases(std::string& out, const Config& config);

}  // namespace drivewatch::config::detail
