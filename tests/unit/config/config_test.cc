// SPDX-License-Identifier: Apache-2.0
#include "config/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <toml++/toml.h>

#include <set>
#include <string>
#include <vector>

namespace drivewatch::config {
namespace {

using std::chrono::milliseconds;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

const std::string kExample =
    std::string(DW_SOURCE_DIR) + "/config/drivewatch.toml";
const std::string kFixtures = std::string(DW_FIXTURE_DIR) + "/config";

std::vector<std::string> Messages(const LoadResult& result) {
  std::vector<std::string> out;
  for (const ConfigError& e : result.errors) out.push_back(e.ToString());
  return out;
}

// Loads `text` as "t.toml" and returns its messages; a result with errors
// must not also carry a config.
std::vector<std::string> Errors(const std::string& text) {
  const LoadResult result = LoadString(text, "t.toml");
  EXPECT_EQ(result.config.has_value(), result.errors.empty()) << text;
  return Messages(result);
}

Config MustLoad(const std::string& text) {
  const LoadResult result = LoadString(text, "t.toml");
  EXPECT_THAT(Messages(result), IsEmpty());
  return result.config.value_or(Config{.listen_address = "<load failed>"});
}

// Every dotted leaf key in a TOML document.
std::set<std::string> LeafKeys(const toml::table& table,
                               const std::string& prefix = "") {
  std::set<std::string> keys;
  for (auto&& [key, node] : table) {
    const std::string path = prefix.empty()
                                 ? std::string(key.str())
                                 : prefix + "." + std::string(key.str());
    if (const toml::table* sub = node.as_table()) {
      const std::set<std::string> below = LeafKeys(*sub, path);
      keys.insert(below.begin(), below.end());
    } else {
      keys.insert(path);
    }
  }
  return keys;
}

// A config with every field away from its default, to catch a field that
// is dropped anywhere along the way.
Config NonDefault() {
  Config c;
  c.listen_address = "[::1]:9100";
  c.log_level = LogLevel::kDebug;
  c.state_directory = "/srv/drive \"watch\"";
  c.discovery_interval = milliseconds{5'000};
  c.drive_grace_period = milliseconds{129'600'000};
  c.drives.include_serials = {"S5GX*", "PHM2?00*"};
  c.drives.exclude_serials = {"S5GXNG0N[0-4]*"};
  c.drives.include_models = {"Samsung SSD 980 PRO*"};
  c.drives.exclude_models = {"QEMU NVMe Ctrl", "\\*odd\\[name"};
  c.probe("health").enabled = false;
  c.probe("health").interval = milliseconds{150'000};
  return c;
}

TEST(DefaultsTest, MatchTheDocumentedValues) {
  const Config d = Defaults();
  EXPECT_EQ(d.listen_address, ":9647");
  EXPECT_EQ(d.log_level, LogLevel::kInfo);
  EXPECT_EQ(d.state_directory, "/var/lib/drivewatch");
  EXPECT_EQ(d.discovery_interval, milliseconds{30'000});
  EXPECT_EQ(d.drive_grace_period, milliseconds{600'000});
  EXPECT_THAT(d.drives.include_serials, IsEmpty());
  EXPECT_THAT(d.drives.exclude_serials, IsEmpty());
  EXPECT_THAT(d.drives.include_models, IsEmpty());
  EXPECT_THAT(d.drives.exclude_models, IsEmpty());
  EXPECT_TRUE(d.probe("health").enabled);
  EXPECT_EQ(d.probe("health").interval, milliseconds{60'000});
}

TEST(ExampleConfigTest, LoadsToExactlyTheDefaults) {
  const LoadResult result = LoadFile(kExample);
  ASSERT_THAT(Messages(result), IsEmpty());
  ASSERT_TRUE(result.config.has_value());
  const Config& c = *result.config;
  const Config d = Defaults();
  // Field by field so a failure names the field; operator== then catches a
  // field added to Config but not to this list.
  EXPECT_EQ(c.listen_address, d.listen_address);
  EXPECT_EQ(c.log_level, d.log_level);
  EXPECT_EQ(c.state_directory, d.state_directory);
  EXPECT_EQ(c.discovery_interval, d.discovery_interval);
  EXPECT_EQ(c.drive_grace_period, d.drive_grace_period);
  EXPECT_EQ(c.drives.include_serials, d.drives.include_serials);
  EXPECT_EQ(c.drives.exclude_serials, d.drives.exclude_serials);
  EXPECT_EQ(c.drives.include_models, d.drives.include_models);
  EXPECT_EQ(c.drives.exclude_models, d.drives.exclude_models);
  EXPECT_EQ(c.probe("health").enabled, d.probe("health").enabled);
  EXPECT_EQ(c.probe("health").interval, d.probe("health").interval);
  EXPECT_EQ(c, d);
}

TEST(ExampleConfigTest, SetsEveryKeyExplicitly) {
  // ToToml writes every key (RoundTrip below proves no field is missing),
  // so the example must have the same leaves: a key left out of it would
  // load to the default unseen by the test above.
  const toml::table example = toml::parse_file(kExample);
  const toml::table full = toml::parse(ToToml(Defaults()));
  EXPECT_EQ(LeafKeys(example), LeafKeys(full));
}

TEST(LoadStringTest, EmptyDocumentIsTheDefaults) {
  EXPECT_EQ(MustLoad(""), Defaults());
  EXPECT_EQ(MustLoad("# only a comment\n"), Defaults());
}

TEST(LoadStringTest, ReadsEveryKey) {
  const Config c = MustLoad(R"(
[web]
listen_address = "[::1]:9100"
[log]
level = "debug"
[state]
directory = "/srv/drive \"watch\""
[discovery]
interval = "5s"
grace_period = "1d12h"
[drives]
include_serials = ["S5GX*", "PHM2?00*"]
exclude_serials = ["S5GXNG0N[0-4]*"]
include_models = ["Samsung SSD 980 PRO*"]
exclude_models = ['QEMU NVMe Ctrl', '\*odd\[name']
[probes.health]
enabled = false
interval = "2m30s"
)");
  EXPECT_EQ(c, NonDefault());
}

TEST(LoadStringTest, DottedKeysAndInlineTablesWorkLikeSections) {
  const Config c = MustLoad(
      "probes.health.interval = \"5m\"\ndiscovery = { interval = \"1m\" }\n");
  EXPECT_EQ(c.probe("health").interval, milliseconds{300'000});
  EXPECT_EQ(c.discovery_interval, milliseconds{60'000});
  EXPECT_EQ(c.drive_grace_period, Defaults().drive_grace_period);
}

TEST(LoadStringTest, RangeLimitsAreInclusive) {
  const Config low = MustLoad(
      "[discovery]\ninterval = \"1s\"\ngrace_period = \"0s\"\n"
      "[probes.health]\ninterval = \"1s\"\n");
  EXPECT_EQ(low.discovery_interval, milliseconds{1'000});
  EXPECT_EQ(low.drive_grace_period, milliseconds{0});
  EXPECT_EQ(low.probe("health").interval, milliseconds{1'000});
  const Config high = MustLoad(
      "[discovery]\ninterval = \"1h\"\ngrace_period = \"30d\"\n"
      "[probes.health]\ninterval = \"24h\"\n");
  EXPECT_EQ(high.discovery_interval, milliseconds{3'600'000});
  EXPECT_EQ(high.drive_grace_period, milliseconds{2'592'000'000});
  EXPECT_EQ(high.probe("health").interval, milliseconds{86'400'000});
}

TEST(LoadStringTest, RoundTripsThroughToToml) {
  const Config c = NonDefault();
  ASSERT_NE(c, Defaults());
  EXPECT_EQ(MustLoad(ToToml(c)), c);
  EXPECT_EQ(MustLoad(ToToml(Defaults())), Defaults());
}

TEST(LoadStringTest, ToTomlWritesDurationsInTheirShortForm) {
  const std::string text = ToToml(NonDefault());
  EXPECT_NE(text.find("grace_period = \"1d12h\"\n"), std::string::npos) << text;
  EXPECT_NE(text.find("interval = \"2m30s\"\n"), std::string::npos) << text;
}

TEST(LoadFileTest, ReadsAFile) {
  const LoadResult result = LoadFile(kFixtures + "/valid.toml");
  ASSERT_THAT(Messages(result), IsEmpty());
  EXPECT_EQ(result.config->state_directory, "/srv/drivewatch");
  Config expected = NonDefault();
  expected.state_directory = "/srv/drivewatch";
  expected.drives.exclude_models = {"QEMU NVMe Ctrl"};
  EXPECT_EQ(*result.config, expected);
}

// --- Errors: each asserts the whole message. ---

TEST(ErrorTest, UnknownKeySuggestsTheClosest) {
  EXPECT_THAT(Errors("[probes.health]\nintervall = \"30s\"\n"),
              ElementsAre("t.toml:2:1: probes.health.intervall: unknown key "
                          "(did you mean \"interval\"?)"));
  EXPECT_THAT(
      Errors("[log]\nlevle = \"info\"\n"),
      ElementsAre(
          "t.toml:2:1: log.levle: unknown key (did you mean \"level\"?)"));
  EXPECT_THAT(Errors("[drives]\ninclude_serial = []\n"),
              ElementsAre("t.toml:2:1: drives.include_serial: unknown key "
                          "(did you mean \"include_serials\"?)"));
}

TEST(ErrorTest, UnknownKeyWithNothingCloseListsTheValidKeys) {
  EXPECT_THAT(Errors("[probes.health]\nperiod = \"30s\"\n"),
              ElementsAre("t.toml:2:1: probes.health.period: unknown key "
                          "(expected one of: \"enabled\", \"interval\")"));
  EXPECT_THAT(
      Errors("[web]\nport = 9647\n"),
      ElementsAre(
          "t.toml:2:1: web.port: unknown key (expected \"listen_address\")"));
}

TEST(ErrorTest, KeyInTheWrongTablePointsToWhereItBelongs) {
  EXPECT_THAT(Errors("listen_address = \":9647\"\n"),
              ElementsAre("t.toml:1:1: listen_address: unknown key "
                          "(did you mean \"web.listen_address\"?)"));
  EXPECT_THAT(
      Errors("interval = \"30s\"\n"),
      ElementsAre("t.toml:1:1: interval: unknown key (did you mean "
                  "\"discovery.interval\" or \"probes.health.interval\" or "
                  "\"probes.thermal.interval\" or "
                  "\"probes.power.interval\" or "
                  "\"probes.self_test.interval\" or "
                  "\"probes.error_log.interval\" or "
                  "\"probes.persistent_event_log.interval\" or "
                  "\"probes.ocp_smart.interval\"?)"));
  EXPECT_THAT(Errors("[health]\nenabled = false\n"),
              ElementsAre("t.toml:1:2: health: unknown table (did you mean "
                          "\"probes.health\"?)"));
}

TEST(ErrorTest, QuotedUnknownKeyIsShownAsTomlWouldWriteIt) {
  EXPECT_THAT(Errors("[web]\n\"listen address\" = \":1\"\n"),
              ElementsAre("t.toml:2:1: web.\"listen address\": unknown key "
                          "(did you mean \"listen_address\"?)"));
}

TEST(ErrorTest, UnknownTable) {
  EXPECT_THAT(
      Errors("[web]\nlisten_address = \":9647\"\n\n[webb]\nx = 1\n"),
      ElementsAre("t.toml:4:2: webb: unknown table (did you mean \"web\"?)"));
  EXPECT_THAT(
      Errors("[metrics]\npath = \"/metrics\"\n"),
      ElementsAre(
          "t.toml:1:2: metrics: unknown table (expected one of: \"web\", "
          "\"log\", \"state\", \"discovery\", \"drives\", \"probes\", \"aging\")"));
}

TEST(ErrorTest, UnknownProbe) {
  EXPECT_THAT(Errors("[probes.helth]\nenabled = true\n"),
              ElementsAre("t.toml:1:9: probes.helth: unknown probe (did you "
                          "mean \"health\"?)"));
  EXPECT_THAT(Errors("[probes.warp_drive]\nenabled = true\n"),
              ElementsAre("t.toml:1:9: probes.warp_drive: unknown probe "
                          "(expected one of: \"health\", \"thermal\", "
                          "\"power\", \"read_latency\", \"self_test\", \"error_log\", \"persistent_event_log\", \"ocp_smart\")"));
}

// Every per-drive or per-target list is an array of tables, and says so.
TEST(ErrorTest, ListThatIsNotAnArrayOfTables) {
  EXPECT_THAT(Errors("[probes.power]\nmeters = \"S1\"\n"),
              ElementsAre("t.toml:2:10: probes.power.meters: wrong type: string \"S1\" "
                          "(expected an array of tables, written [[probes.power.meters]])"));
  EXPECT_THAT(Errors("[probes.self_test]\ndrives = 3\n"),
              ElementsAre("t.toml:2:10: probes.self_test.drives: wrong type: integer 3 "
                          "(expected an array of tables, written [[probes.self_test.drives]])"));
  EXPECT_THAT(Errors("[probes.read_latency]\ntargets = true\n"),
              ElementsAre("t.toml:2:11: probes.read_latency.targets: wrong type: boolean true "
                          "(expected an array of tables, written "
                          "[[probes.read_latency.targets]])"));
  EXPECT_THAT(Errors("[aging]\nphases = \"fill\"\n"),
              ElementsAre("t.toml:2:10: aging.phases: wrong type: string \"fill\" "
                          "(expected an array of tables, written [[aging.phases]])"));
}

TEST(ErrorTest, WrongType) {
  EXPECT_THAT(
      Errors("[probes.health]\nenabled = \"yes\"\n"),
      ElementsAre(
          "t.toml:2:11: probes.health.enabled: wrong type: string \"yes\" "
          "(expected a boolean: true or false)"));
  EXPECT_THAT(
      Errors("[web]\nlisten_address = 9647\n"),
      ElementsAre("t.toml:2:18: web.listen_address: wrong type: integer 9647 "
                  "(expected a string)"));
  EXPECT_THAT(
      Errors("[log]\nlevel = 1.5\n"),
      ElementsAre(
          "t.toml:2:9: log.level: wrong type: float 1.5 (expected a string: "
          "\"debug\", \"info\", \"warn\" or \"error\")"));
  EXPECT_THAT(
      Errors("[drives]\ninclude_serials = \"S5GX*\"\n"),
      ElementsAre(
          "t.toml:2:19: drives.include_serials: wrong type: string \"S5GX*\" "
          "(expected an array of glob patterns, such as [\"S5GX*\"])"));
  EXPECT_THAT(
      Errors("[drives]\ninclude_serials = [\"A\", 5]\n"),
      ElementsAre("t.toml:2:25: drives.include_serials: wrong type: integer 5 "
                  "(expected a glob pattern string)"));
}

TEST(ErrorTest, WrongTypeForATable) {
  EXPECT_THAT(Errors("web = \":9647\"\n"),
              ElementsAre("t.toml:1:7: web: wrong type: string \":9647\" "
                          "(expected a table, written [web])"));
  EXPECT_THAT(
      Errors("[probes]\nhealth = false\n"),
      ElementsAre("t.toml:2:10: probes.health: wrong type: boolean false "
                  "(expected a table, written [probes.health])"));
}

TEST(ErrorTest, OutOfRange) {
  EXPECT_THAT(
      Errors("[discovery]\ninterval = \"2h\"\n"),
      ElementsAre("t.toml:2:12: discovery.interval: \"2h\" is out of range "
                  "(expected 1s to 1h)"));
  EXPECT_THAT(
      Errors("[discovery]\ngrace_period = \"30d1ms\"\n"),
      ElementsAre(
          "t.toml:2:16: discovery.grace_period: \"30d1ms\" is out of range "
          "(expected 0s to 30d)"));
  EXPECT_THAT(
      Errors("[probes.health]\ninterval = \"999ms\"\n"),
      ElementsAre(
          "t.toml:2:12: probes.health.interval: \"999ms\" is out of range "
          "(expected 1s to 1d)"));
}

TEST(ErrorTest, BareNumberForADuration) {
  EXPECT_THAT(
      Errors("[discovery]\ninterval = 30\n"),
      ElementsAre("t.toml:2:12: discovery.interval: wrong type: integer 30 "
                  "(expected a duration string such as \"30s\")"));
}

TEST(ErrorTest, BadDuration) {
  EXPECT_THAT(
      Errors("[discovery]\ninterval = \"30sec\"\n"),
      ElementsAre(
          "t.toml:2:12: discovery.interval: \"30sec\" is not a valid duration: "
          "unknown unit \"sec\" (expected d, h, m, s or ms)"));
  EXPECT_THAT(
      Errors("[probes.health]\ninterval = \"30s1m\"\n"),
      ElementsAre(
          "t.toml:2:12: probes.health.interval: \"30s1m\" is not a valid "
          "duration: units out of order (expected each unit at most once, "
          "largest first, as in \"1h30m\")"));
}

TEST(ErrorTest, DuplicateListEntryIsReportedAtTheSecondOccurrence) {
  EXPECT_THAT(
      Errors("[drives]\ninclude_serials = [\"S1*\", \"S2*\", \"S1*\"]\n"),
      ElementsAre(
          "t.toml:2:34: drives.include_serials: \"S1*\" is listed twice, "
          "first at line 2, column 20 (expected each pattern once)"));
}

TEST(ErrorTest, PatternBothIncludedAndExcluded) {
  EXPECT_THAT(
      Errors("[drives]\n"
             "include_serials = [\"S1*\"]\n"
             "exclude_serials = [\"S1*\"]\n"),
      ElementsAre(
          "t.toml:3:20: drives.exclude_serials: \"S1*\" is also in "
          "drives.include_serials at line 2, column 20 (expected a pattern "
          "in include_serials or exclude_serials, not both)"));
  // Reported where the second one is, whichever list that is.
  EXPECT_THAT(
      Errors("[drives]\n"
             "exclude_models = [\"QEMU*\"]\n"
             "include_models = [\"X\", \"QEMU*\"]\n"),
      ElementsAre(
          "t.toml:3:24: drives.include_models: \"QEMU*\" is also in "
          "drives.exclude_models at line 2, column 19 (expected a pattern "
          "in include_models or exclude_models, not both)"));
}

TEST(ErrorTest, SamePatternForSerialAndModelIsFine) {
  const Config c = MustLoad(
      "[drives]\ninclude_serials = [\"X*\"]\nexclude_models = [\"X*\"]\n");
  EXPECT_THAT(c.drives.include_serials, ElementsAre("X*"));
}

TEST(ErrorTest, EmptyAndInvalidGlobs) {
  EXPECT_THAT(
      Errors("[drives]\ninclude_models = [\"\"]\n"),
      ElementsAre("t.toml:2:19: drives.include_models: empty pattern "
                  "(expected a glob such as \"S5GX*\", or \"*\" for all)"));
  EXPECT_THAT(
      Errors("[drives]\nexclude_serials = [\"S5GX[0-4\"]\n"),
      ElementsAre(
          "t.toml:2:20: drives.exclude_serials: \"S5GX[0-4\" is not a valid "
          "glob: \"[\" is never closed (expected a closing \"]\", or a "
          "backslash before \"[\" to match it literally)"));
}

TEST(ErrorTest, SyntaxErrorFromTomlHasItsPosition) {
  EXPECT_THAT(
      Errors("[web]\nlisten_address = \":9647\"\n[log\n"),
      ElementsAre("t.toml:3:5: error while parsing table header: expected ']', "
                  "saw '\\n'"));
  EXPECT_THAT(
      Errors("[web]\nlisten_address = \n"),
      ElementsAre(
          "t.toml:2:18: error while parsing key-value pair: expected value, "
          "saw '\\n'"));
}

TEST(ErrorTest, SyntaxErrorStaysOnOneLine) {
  // toml++ quotes the text it stopped at, newline and all.
  EXPECT_THAT(Errors("[probes.health]\nenabled = tru\n"),
              ElementsAre("t.toml:2:14: error while parsing boolean: expected "
                          "'true', saw 'tru\\n'"));
}

TEST(ErrorTest, DuplicateKeysAndTablesAreTomlErrors) {
  EXPECT_THAT(
      Errors("[web]\nlisten_address = \":1\"\nlisten_address = \":2\"\n"),
      ElementsAre(
          "t.toml:3:18: error while parsing key-value pair: cannot redefine "
          "existing string 'listen_address'"));
  EXPECT_THAT(
      Errors("[log]\nlevel = \"info\"\n[log]\n"),
      ElementsAre(
          "t.toml:3:1: error while parsing table header: cannot redefine "
          "existing table 'log'"));
}

TEST(ErrorTest, UnreadableFile) {
  const std::string missing = kFixtures + "/does-not-exist.toml";
  const LoadResult result = LoadFile(missing);
  EXPECT_FALSE(result.config.has_value());
  EXPECT_THAT(
      Messages(result),
      ElementsAre(missing + ": cannot read: No such file or directory"));
  // A directory opens fine and fails at read(2).
  EXPECT_THAT(Messages(LoadFile(kFixtures)),
              ElementsAre(kFixtures + ": cannot read: Is a directory"));
}

TEST(ErrorTest, RelativeStateDirectory) {
  EXPECT_THAT(
      Errors("[state]\ndirectory = \"var/lib/drivewatch\"\n"),
      ElementsAre(
          "t.toml:2:13: state.directory: \"var/lib/drivewatch\" is not an "
          "absolute path (expected a path starting with \"/\")"));
  EXPECT_THAT(
      Errors("[state]\ndirectory = \"\"\n"),
      ElementsAre(
          "t.toml:2:13: state.directory: empty path (expected an absolute "
          "path, such as \"/var/lib/drivewatch\")"));
}

TEST(ErrorTest, BadListenAddress) {
  EXPECT_THAT(
      Errors("[web]\nlisten_address = \"localhost:0\"\n"),
      ElementsAre(
          "t.toml:2:18: web.listen_address: \"localhost:0\": port 0 is out of "
          "range (expected 1 to 65535)"));
  EXPECT_THAT(
      Errors("[web]\nlisten_address = \"::1:9647\"\n"),
      ElementsAre(
          "t.toml:2:18: web.listen_address: \"::1:9647\": IPv6 address must be "
          "in brackets (expected \"[::1]:9647\")"));
}

TEST(ErrorTest, BadLogLevel) {
  EXPECT_THAT(
      Errors("[log]\nlevel = \"verbose\"\n"),
      ElementsAre("t.toml:2:9: log.level: \"verbose\" is not a log level "
                  "(expected \"debug\", \"info\", \"warn\" or \"error\")"));
  // Case matters, as for every other key and value.
  EXPECT_THAT(
      Errors("[log]\nlevel = \"INFO\"\n"),
      ElementsAre("t.toml:2:9: log.level: \"INFO\" is not a log level "
                  "(expected \"debug\", \"info\", \"warn\" or \"error\")"));
}

TEST(ErrorTest, AllErrorsOfAFileTogetherInFileOrder) {
  const std::string file = kFixtures + "/many_errors.toml";
  const LoadResult result = LoadFile(file);
  EXPECT_FALSE(result.config.has_value());
  EXPECT_THAT(
      Messages(result),
      ElementsAre(
          file + ":4:18: web.listen_address: \"localhost\": missing port "
                 "(expected host:port, [IPv6]:port or :port, such as "
                 "\":9647\")",
          file + ":7:12: discovery.interval: wrong type: integer 30 "
                 "(expected a duration string such as \"30s\")",
          file + ":8:16: discovery.grace_period: \"1h30\" is not a valid "
                 "duration: missing unit after \"30\" (expected d, h, m, s "
                 "or ms, as in \"30s\")",
          file + ":11:29: drives.include_serials: \"S5GX*\" is listed twice, "
                 "first at line 11, column 20 (expected each pattern once)",
          file + ":13:19: drives.include_models: \"QEMU*\" is also in "
                 "drives.exclude_models at line 12, column 19 (expected a "
                 "pattern in include_models or exclude_models, not both)",
          file + ":16:11: probes.health.enabled: wrong type: string \"yes\" "
                 "(expected a boolean: true or false)",
          file + ":17:1: probes.health.intervall: unknown key (did you mean "
                 "\"interval\"?)"));
}

TEST(ErrorTest, ErrorsOnOneLineAreOrderedByColumn) {
  EXPECT_THAT(
      Errors("drives = { include_models = [\"\", 7] }\n"),
      ElementsAre(
          "t.toml:1:30: drives.include_models: empty pattern (expected a glob "
          "such as \"S5GX*\", or \"*\" for all)",
          "t.toml:1:34: drives.include_models: wrong type: integer 7 "
          "(expected a glob pattern string)"));
}

TEST(ErrorTest, ControlCharactersInValuesAreEscaped) {
  EXPECT_THAT(
      Errors("[log]\nlevel = \"info\\n\"\n"),
      ElementsAre("t.toml:2:9: log.level: \"info\\n\" is not a log level "
                  "(expected \"debug\", \"info\", \"warn\" or \"error\")"));
}

TEST(ConfigErrorTest, ToStringLeavesOutWhatIsMissing) {
  EXPECT_EQ(
      (ConfigError{"f.toml", 3, 7, "a.b", "bad (expected good)"}.ToString()),
      "f.toml:3:7: a.b: bad (expected good)");
  EXPECT_EQ((ConfigError{"f.toml", 3, 7, "", "syntax"}.ToString()),
            "f.toml:3:7: syntax");
  EXPECT_EQ((ConfigError{"f.toml", 0, 0, "", "cannot read: x"}.ToString()),
            "f.toml: cannot read: x");
}

TEST(LogLevelTest, NamesRoundTrip) {
  for (LogLevel level :
       {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn, LogLevel::kError}) {
    EXPECT_EQ(ParseLogLevel(LogLevelName(level)), level);
  }
  EXPECT_EQ(LogLevelName(LogLevel::kWarn), "warn");
  EXPECT_EQ(ParseLogLevel("warning"), std::nullopt);
}

TEST(DriveSelectionTest, EmptyListsWatchEverything) {
  EXPECT_TRUE(
      DriveSelection{}.Watches("S5GXNG0N123456", "Samsung SSD 980 PRO 1TB"));
}

TEST(DriveSelectionTest, IncludeEitherListExcludeEitherList) {
  DriveSelection s;
  s.include_serials = {"S5GX*"};
  s.include_models = {"INTEL*"};
  s.exclude_serials = {"S5GXNG0N9*"};
  s.exclude_models = {"QEMU*"};
  EXPECT_TRUE(s.Watches("S5GXNG0N123456", "Samsung SSD 980 PRO 1TB"));
  EXPECT_TRUE(s.Watches("PHM2000", "INTEL SSDPE2KX010T8"));
  EXPECT_FALSE(s.Watches("WD123", "WDS100T3X0C"));         // in no include list
  EXPECT_FALSE(s.Watches("S5GXNG0N9000", "Samsung SSD"));  // excluded by serial
  EXPECT_FALSE(s.Watches("S5GX1", "QEMU NVMe Ctrl"));      // excluded by model
}

TEST(DriveSelectionTest, IdentifyPaddingIsTrimmed) {
  DriveSelection s;
  s.include_serials = {"deadbeef"};
  s.exclude_models = {"QEMU NVMe Ctrl"};
  // SN is 20 bytes and MN 40 bytes, padded with spaces.
  EXPECT_TRUE(s.Watches("deadbeef            ", "Other"));
  EXPECT_FALSE(s.Watches("deadbeef            ",
                         "QEMU NVMe Ctrl                          "));
}

}  // namespace
}  // namespace drivewatch::config
