// SPDX-License-Identifier: Apache-2.0
// The schema (config/schema.cc) against what it drives: the example
// config's comments are its docs, and every key it declares is read and
// written.
#include "config/schema.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/probe_catalog.h"

namespace drivewatch::config {
namespace {

const std::string kExample = std::string(DW_SOURCE_DIR) + "/config/drivewatch.toml";

// The comment block above each [table] and each key of the example config,
// as packaging/man/gen-man.py's parse_toml() reads it: "path" for a table's
// intro, "path.key" for a key; comment lines joined by newlines, without
// trailing blank ones.
std::map<std::string, std::string> ExampleComments() {
  std::ifstream in(kExample);
  EXPECT_TRUE(in.good()) << kExample;
  std::map<std::string, std::string> out;
  std::vector<std::string> block;
  std::string table;
  auto take = [&](const std::string& where) {
    while (!block.empty() && block.back().empty()) block.pop_back();
    std::string text;
    for (std::size_t i = 0; i < block.size(); ++i) text += (i > 0 ? "\n" : "") + block[i];
    out[where] = text;
    block.clear();
  };
  const std::regex header(R"(^\[([a-z_.]+)\]\s*$)");
  const std::regex key(R"(^([a-z_]+)\s*=.*$)");
  std::smatch m;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("#", 0) == 0) {
      block.push_back(line.rfind("# ", 0) == 0 ? line.substr(2) : line.substr(1));
    } else if (line.find_first_not_of(" \t") == std::string::npos) {
      if (table.empty()) {
        block.clear();  // the file's own preamble
      } else {
        block.emplace_back();
      }
    } else if (std::regex_match(line, m, header)) {
      table = m[1];
      if (out.empty()) block.clear();  // the end of the preamble
      take(table);
    } else if (std::regex_match(line, m, key)) {
      take(table + "." + std::string(m[1]));
    } else {
      ADD_FAILURE() << "cannot read example line: " << line;
    }
  }
  return out;
}

TEST(SchemaTest, ExampleCommentsAreTheDocs) {
  const std::map<std::string, std::string> comments = ExampleComments();
  std::size_t documented = 0;
  for (const detail::SchemaSection& section : detail::Sections()) {
    if (section.element) continue;
    const std::string path(section.path);
    ASSERT_TRUE(comments.count(path)) << "[" << path << "] is not in the example";
    EXPECT_EQ(comments.at(path), section.doc) << "[" << path << "]";
    for (const detail::SchemaKey& key : section.keys) {
      const std::string where = path + "." + std::string(key.name);
      ASSERT_TRUE(comments.count(where)) << where << " is not in the example";
      EXPECT_EQ(comments.at(where), key.doc) << where;
      ++documented;
    }
  }
  // Every table and key of the example is one of the schema's.
  std::size_t tables = 0;
  for (const detail::SchemaSection& section : detail::Sections()) tables += !section.element;
  EXPECT_EQ(comments.size(), tables + documented);
}

TEST(SchemaTest, EverySimpleKeyIsReadAndWritten) {
  // A non-default value for every simple key, as ToToml writes it, must
  // load back to a config that differs from the defaults in that field:
  // the schema's field really is the one read and written.
  const Config defaults = Defaults();
  for (const detail::SchemaSection& section : detail::Sections()) {
    for (const detail::SchemaKey& key : section.keys) {
      if (std::holds_alternative<std::monostate>(key.field)) continue;
      std::string value;
      if (std::holds_alternative<detail::Field<bool>>(key.field)) {
        Config c = defaults;
        bool& b = std::get<detail::Field<bool>>(key.field)(c);
        value = b ? "false" : "true";
      } else if (std::holds_alternative<detail::Field<std::chrono::milliseconds>>(
                     key.field)) {
        value = "\"" + FormatDuration(key.duration.max) + "\"";
      } else if (std::holds_alternative<detail::Field<double>>(key.field)) {
        value = std::to_string(static_cast<int>(key.number.max));
      } else if (std::holds_alternative<detail::Field<LogLevel>>(key.field)) {
        value = "\"error\"";
      } else if (std::holds_alternative<detail::Field<Schedule>>(key.field)) {
        value = "\"monthly 28 23:59\"";
      } else if (std::holds_alternative<detail::Field<std::string>>(key.field)) {
        value = section.path == "web" ? "\"127.0.0.1:1\"" : "\"/srv/schema-test\"";
      }
      const std::string text =
          "[" + std::string(section.path) + "]\n" + std::string(key.name) + " = " + value + "\n";
      const LoadResult result = LoadString(text, "t.toml");
      ASSERT_TRUE(result.config.has_value())
          << text << (result.errors.empty() ? "" : result.errors[0].ToString());
      EXPECT_FALSE(*result.config == defaults) << text;
      std::string line;
      detail::WriteKey(line, key, *result.config);
      EXPECT_EQ(line, std::string(key.name) + " = " + value + "\n");
    }
  }
}

// A section's enabled and interval as its schema keys read them; nullopt
// when the section lacks either.
std::optional<ProbeSettings> SectionSettings(const Config& config, std::string_view path) {
  Config c = config;
  std::optional<bool> enabled;
  std::optional<std::chrono::milliseconds> interval;
  for (const detail::SchemaSection& section : detail::Sections()) {
    if (section.path != path) continue;
    for (const detail::SchemaKey& key : section.keys) {
      if (const auto* f = std::get_if<detail::Field<bool>>(&key.field);
          f && key.name == "enabled") {
        enabled = (*f)(c);
      }
      if (const auto* f = std::get_if<detail::Field<std::chrono::milliseconds>>(&key.field);
          f && key.name == "interval") {
        interval = (*f)(c);
      }
    }
  }
  if (!enabled || !interval) return std::nullopt;
  return ProbeSettings{*enabled, *interval};
}

TEST(SchemaTest, ProbeSectionKeysAreTheProbesSettings) {
  Config c = Defaults();
  c.probe("health").interval = std::chrono::milliseconds{5'000};
  c.probe("thermal").enabled = false;
  c.probe("self_test").interval = std::chrono::milliseconds{7'000};
  c.probe("persistent_event_log").enabled = false;
  EXPECT_EQ(SectionSettings(c, "probes.health"), c.probe("health"));
  EXPECT_EQ(SectionSettings(c, "probes.thermal"), c.probe("thermal"));
  EXPECT_EQ(SectionSettings(c, "probes.power"), c.probe("power"));
  EXPECT_EQ(SectionSettings(c, "probes.error_log"), c.probe("error_log"));
  EXPECT_EQ(SectionSettings(c, "probes.persistent_event_log"), c.probe("persistent_event_log"));
  EXPECT_EQ(SectionSettings(c, "probes.self_test"),
            (ProbeSettings{true, std::chrono::milliseconds{7'000}}));
  // A section without both keys, and no section at all, are no probe's.
  EXPECT_EQ(SectionSettings(c, "discovery"), std::nullopt);
  EXPECT_EQ(SectionSettings(c, "probes.power.meters"), std::nullopt);
  EXPECT_EQ(SectionSettings(c, "probes.nope"), std::nullopt);
  EXPECT_THROW(c.probe("discovery"), std::logic_error);
  EXPECT_THROW(c.probe("power.meters"), std::logic_error);
  EXPECT_THROW(c.probe("nope"), std::logic_error);
}

// drivewatch.toml(5) states a kind key's range and defaults from its
// PhaseKey and the kind's struct (dw_config_schema), not from its doc line:
// they are said in one place.
TEST(SchemaTest, PhaseKeyRangesAndDefaultsComeFromTheirDeclarations) {
  EXPECT_EQ(PhaseKeyRange(kBlockSizeKey), "a multiple of 512B from 512B to 2MiB");
  EXPECT_EQ(PhaseKeyRange(kQueueDepthKey), "1 to 256");
  EXPECT_EQ(PhaseKeyRange(kSlcDropFractionKey), "0.05 to 0.95");
  EXPECT_EQ(PhaseKeyRange(kPerfMixedIopsKey), "1 to 1000000");
  EXPECT_EQ(PhaseKeyRange(kReferenceTemperatureKey), "-40 to 125");
  EXPECT_EQ(PhaseKeyRange(kSlcSustainKey), "1s to 1h");
  EXPECT_EQ(PhaseKeyRange(kReclaimIdleKey), "1 to 100 durations, each 1s to 1d");
  EXPECT_EQ(PhaseKeyRange(kRegionOffsetKey), "a multiple of 1MiB");
  EXPECT_EQ(PhaseKeyRange(kStudyKey), "letters, digits, _, - and . only");

  EXPECT_EQ(PhaseValueText(kBlockSizeKey, FillParams{}.block_size), "\"128KiB\"");
  EXPECT_EQ(PhaseValueText(kFillPercentKey, FillParams{}.fill_percent), "50");
  EXPECT_EQ(PhaseValueText(kFillPercentKey, TrimParams{}.fill_percent), "90");
  EXPECT_EQ(PhaseValueText(kReclaimIdleKey, ReclaimParams{}.reclaim_idle),
            "[\"1m\", \"2m\", \"3m\", \"4m\"]");
  EXPECT_EQ(PhaseValueText(kStorageTemperatureKey, RetentionVerifyParams{}.storage_temperature),
            "");

  // No doc line repeats a range or a default.
  for (const PhaseKey& key : PhaseKindKeys()) {
    EXPECT_EQ(std::string(key.doc).find("default"), std::string::npos) << key.name;
    EXPECT_FALSE(std::regex_search(std::string(key.doc), std::regex(R"(\d+ to \d+|\d(s|m|h|d) to)")))
        << key.name << ": " << key.doc;
  }
}

}  // namespace
}  // namespace drivewatch::config
