// SPDX-License-Identifier: Apache-2.0
// Every light probe the catalog describes (config/probe_catalog.cc) has its
// [probes.NAME] section, read, written and defaulted as described: a probe
// added to the catalog is tested here with no edit.
#include "config/probe_catalog.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "config/config.h"
#include "config/schema.h"

namespace drivewatch::config {
namespace {

using std::chrono::milliseconds;

const detail::SchemaSection* FindSection(std::string_view path) {
  for (const detail::SchemaSection& s : detail::Sections()) {
    if (s.path == path) return &s;
  }
  return nullptr;
}

const detail::SchemaKey* FindKey(const detail::SchemaSection& section, std::string_view name) {
  for (const detail::SchemaKey& k : section.keys) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

std::string Path(const ProbeDescription& probe) { return "probes." + std::string(probe.name); }

TEST(ProbeCatalogTest, NamesAreUniqueAndFound) {
  std::set<std::string_view> names;
  for (const ProbeDescription& probe : ProbeCatalog()) {
    EXPECT_TRUE(names.insert(probe.name).second) << probe.name;
    EXPECT_EQ(FindProbeDescription(probe.name), &probe);
    EXPECT_FALSE(probe.reads.empty()) << probe.name << ": say what the probe reads";
  }
  EXPECT_EQ(FindProbeDescription("nope"), nullptr);
}

TEST(ProbeCatalogTest, EveryProbeHasItsSectionWithBothKeys) {
  const Config defaults = Defaults();
  for (const ProbeDescription& probe : ProbeCatalog()) {
    SCOPED_TRACE(probe.name);
    const detail::SchemaSection* section = FindSection(Path(probe));
    ASSERT_NE(section, nullptr);
    EXPECT_FALSE(section->element);
    // enabled and interval first, then the probe's own keys.
    ASSERT_GE(section->keys.size(), 2u);
    EXPECT_EQ(section->keys[0].name, "enabled");
    EXPECT_EQ(section->keys[1].name, "interval");
    const detail::SchemaKey* enabled = FindKey(*section, "enabled");
    const detail::SchemaKey* interval = FindKey(*section, "interval");
    EXPECT_EQ(enabled->doc, probe.reads);
    EXPECT_EQ(interval->doc, probe.interval_doc);
    EXPECT_EQ(interval->duration.min, milliseconds{1'000});
    EXPECT_EQ(interval->duration.max, probe.max_interval);
    // The catalog's defaults, as the config and its writer have them.
    EXPECT_EQ(defaults.probe(probe.name), (ProbeSettings{probe.enabled, probe.interval}));
    EXPECT_EQ(Config{}.probe(probe.name), defaults.probe(probe.name));
    std::string line;
    detail::WriteKey(line, *enabled, defaults);
    EXPECT_EQ(line, std::string("enabled = ") + (probe.enabled ? "true" : "false") + "\n");
    line.clear();
    detail::WriteKey(line, *interval, defaults);
    EXPECT_EQ(line, "interval = \"" + FormatDuration(probe.interval) + "\"\n");
  }
  EXPECT_EQ(defaults.probes.size(), ProbeCatalog().size());
}

TEST(ProbeCatalogTest, EveryProbeIsSwitchedAndPacedByItsSection) {
  const Config defaults = Defaults();
  for (const ProbeDescription& probe : ProbeCatalog()) {
    SCOPED_TRACE(probe.name);
    const std::string flipped = probe.enabled ? "false" : "true";
    const LoadResult off = LoadString(
        "[" + Path(probe) + "]\nenabled = " + flipped + "\ninterval = \"" +
            FormatDuration(probe.max_interval) + "\"\n",
        "t.toml");
    ASSERT_TRUE(off.config.has_value()) << off.errors.front().ToString();
    EXPECT_EQ(off.config->probe(probe.name),
              (ProbeSettings{!probe.enabled, probe.max_interval}));
    // Nothing else moved.
    Config expected = defaults;
    expected.probe(probe.name) = off.config->probe(probe.name);
    EXPECT_EQ(*off.config, expected);
    // And it is written back as read.
    const LoadResult again = LoadString(ToToml(*off.config), "again.toml");
    ASSERT_TRUE(again.config.has_value());
    EXPECT_EQ(*again.config, *off.config);

    const LoadResult slow = LoadString(
        "[" + Path(probe) + "]\ninterval = \"" +
            FormatDuration(probe.max_interval + milliseconds{1'000}) + "\"\n",
        "t.toml");
    ASSERT_EQ(slow.errors.size(), 1u);
    EXPECT_EQ(slow.errors[0].key, Path(probe) + ".interval");
  }
}

TEST(ProbeCatalogTest, TheExampleConfigHasEveryProbe) {
  const std::string example = ExampleToml();
  for (const ProbeDescription& probe : ProbeCatalog()) {
    EXPECT_NE(example.find("\n[" + Path(probe) + "]\n"), std::string::npos) << probe.name;
  }
  const LoadResult loaded = LoadString(example, "example.toml");
  ASSERT_TRUE(loaded.config.has_value()) << loaded.errors.front().ToString();
  EXPECT_EQ(*loaded.config, Defaults());
}

}  // namespace
}  // namespace drivewatch::config
