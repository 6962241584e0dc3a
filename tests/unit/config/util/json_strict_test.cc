// SPDX-License-Identifier: Apache-2.0
// ParseJson and DumpJson against Json::Parse and Json::Dump: the same
// verdicts, the same error messages and the same bytes, for every input of
// tests/unit/aging/json_test.cc and for the JSON drivewatch keeps on disk
// (history records, study records, reports) in tests/fixtures.
#include "config/util/json_strict.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "config/util/json.h"

namespace drivewatch::aging {
namespace {

using nlohmann::ordered_json;

// Both parsers on `text`: the same verdict, the same error, and when it
// parses, the same compact and pretty text.
void ExpectSameAsJson(std::string_view text, const std::string& where = "") {
  SCOPED_TRACE(where.empty() ? std::string(text) : where);
  const Expected<Json> old = Json::Parse(text);
  const Expected<ordered_json> now = ParseJson(text);
  ASSERT_EQ(now.ok(), old.ok()) << (old.ok() ? now.error().message : old.error().message);
  if (!old.ok()) {
    EXPECT_EQ(now.error().message, old.error().message);
    EXPECT_EQ(now.error().errnum, old.error().errnum);
    return;
  }
  EXPECT_EQ(DumpJson(*now), old->Dump());
  EXPECT_EQ(DumpJson(*now, 2), old->Dump(2));
  EXPECT_EQ(DumpJson(*now, 4), old->Dump(4));
}

// {"k0":0,"k1":1,...}, as json_test.cc writes it.
std::string ObjectOf(std::size_t members) {
  std::string text;
  for (std::size_t i = 0; i < members; ++i) {
    text += (i == 0 ? "{\"k" : ",\"k") + std::to_string(i) + "\":" + std::to_string(i);
  }
  return text.empty() ? "{}" : text + "}";
}

// Every text tests/unit/aging/json_test.cc parses.
std::vector<std::string> JsonTestInputs() {
  std::vector<std::string> inputs = {
      // Numbers.
      "[18446744073709551615,-9223372036854775808,9007199254740993,0,-0]",
      "18446744073709551616", "-9223372036854775809", "-1.5e3", "1E-2", "0.5", "1e-400",
      "1e400", "01", "-01", "1.", ".5", "+1", "1e", "-", "1e+",
      // Strings.
      R"("a\"b\\c\/d\b\f\n\r\t")", R"("\u00e9\u20AC")", R"("\ud83d\ude00")", R"("\u0000")",
      "\"µs 温度 \xF0\x9F\x98\x80\"", "\"a\nb\"", R"("\x")", R"("\ude00")", R"("\ud83dx")",
      R"("\ud83d\u0041")", R"("\u12g4")", "\"abc", "\"\xC0\xAF\"", "\"\xED\xA0\x80\"",
      "\"\xF4\x90\x80\x80\"", "\"\xE2\x82\"", R"("\ud83d\n")", R"("\ud83d")", "\"\\",
      "\"\\u12",
      // Structure and positions.
      R"({"a":1 "b":2})", "{\n  \"a\": 1,\n  \"b\" 2\n}", "[\"é\" x]", "", "   ", "[1,]",
      R"({"a":1,})", "{1:2}", "tru", "nul1", "[1", "\xEF\xBB\xBF{}", "{} {}", "1 2",
      std::string("1\0", 2), " \t\r\n{}\n ", R"({"a":1,"a":2})", R"({"a\"b":1,"a\"b":2})",
      "[1-]", "[1 -\n]", "[1 \"abc", R"([1 "\x"])", "[0x]", R"({"k":1 tru})", "{tru",
      "truetrue", "[00]", R"({"a":01})", "[1,1e400]", R"({"\x":1})", "[tx",
      std::string("[1,\0]", 5), std::string("{\"a\":\"b\0\"}", 10),
      R"({"a":[1,{"b":null}],"c":"x"})", R"({ "a" : [ 1 , { "b" : null } ] , "c" : "x" })",
      R"({"a":[1,{"b":false}]})", R"({"a":1,"b":2})", "[1]", "[1,1]",
      R"({"version":1,"run":"r1","phase":"fill-half","start":1796007600,)"
      R"("reason":"line\nbreak \"quoted\" é","results":{"bytes_written":)"
      R"(18446744073709551615,"latency":{"p99_seconds":0.000812}},)"
      R"("series":{"throughput_bytes_per_second":[1.9e+09,1.3e+08]},)"
      R"("ok":true,"none":null})",
      // Nesting.
      std::string(64, '[') + std::string(64, ']'), std::string(65, '[') + std::string(65, ']'),
      std::string(1'000'000, '['),
      // Object sizes.
      ObjectOf(Json::kMaxObjectMembers), ObjectOf(Json::kMaxObjectMembers + 1),
      R"({"results":)" + ObjectOf(200000) + "}",
  };
  std::string objects;
  for (int i = 0; i < 65; ++i) objects += "{\"k\":";
  inputs.push_back(objects + "1" + std::string(65, '}'));
  std::string many = "[";
  for (int i = 0; i < 3; ++i) many += (i ? "," : "") + ObjectOf(Json::kMaxObjectMembers / 2 + 1);
  inputs.push_back(many + "]");
  for (const int first : {0, 30, 31, 32, 500, 998}) {
    std::string text = "{";
    for (int i = 0; i < 999; ++i) text += "\"k" + std::to_string(i) + "\":" + std::to_string(i) + ",";
    inputs.push_back(text + "\"k" + std::to_string(first) + "\":0}");
  }
  // Doubles json_test.cc dumps and parses back.
  for (double d : {0.1, 1.0 / 3, 5e-324, 1.7976931348623157e308, 123456.789, -2.0, 2.0, 1e300,
                   -0.0}) {
    inputs.push_back(Json(d).Dump());
  }
  return inputs;
}

TEST(JsonStrictTest, ParsesAndDumpsEveryJsonTestInputAsJsonDoes) {
  for (const std::string& text : JsonTestInputs()) {
    ExpectSameAsJson(text, text.size() > 200 ? text.substr(0, 200) + "..." : text);
  }
}

// Each JSON file and each history record (the JSON after "DWH1 <length>
// <crc> ") in the fixtures, damaged records included.
TEST(JsonStrictTest, ParsesAndDumpsTheFixturesAsJsonDoes) {
  namespace fs = std::filesystem;
  int files = 0, records = 0;
  for (const auto& entry : fs::recursive_directory_iterator(DW_FIXTURE_DIR)) {
    const fs::path& path = entry.path();
    if (path.extension() != ".json" && path.extension() != ".dwh") continue;
    std::ifstream in(path, std::ios::binary);
    std::stringstream content;
    content << in.rdbuf();
    const std::string text = content.str();
    if (path.extension() == ".json") {
      ExpectSameAsJson(text, path.string());
      ++files;
      continue;
    }
    std::istringstream lines(text);
    std::string line;
    for (int number = 1; std::getline(lines, line); ++number) {
      std::size_t json = 0;
      for (int field = 0; field < 3 && json != std::string::npos; ++field) {
        json = line.find(' ', json);
        if (json != std::string::npos) ++json;
      }
      if (json == std::string::npos) continue;  // a torn line holds no record
      ExpectSameAsJson(std::string_view(line).substr(json),
                       path.string() + ":" + std::to_string(number));
      ++records;
    }
  }
  // The fixtures are there: a wrong directory would compare nothing.
  EXPECT_GE(files, 15);
  EXPECT_GE(records, 10);
}

TEST(JsonStrictTest, KeepsExact64BitIntegers) {
  const Expected<ordered_json> j =
      ParseJson("[18446744073709551615,-9223372036854775808,9007199254740993,9223372036854775808]");
  ASSERT_TRUE(j.ok()) << j.error().message;
  EXPECT_EQ((*j)[0].get<std::uint64_t>(), std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ((*j)[1].get<std::int64_t>(), std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ((*j)[2].get<std::int64_t>(), 9007199254740993);
  EXPECT_TRUE((*j)[3].is_number_unsigned());
  EXPECT_EQ((*j)[3].get<std::uint64_t>(), std::uint64_t{1} << 63);
  EXPECT_EQ(DumpJson(*j),
            "[18446744073709551615,-9223372036854775808,9007199254740993,9223372036854775808]");
  EXPECT_TRUE(ParseJson("18446744073709551616")->is_number_float());
}

TEST(JsonStrictTest, KeepsMembersInTheOrderWritten) {
  const Expected<ordered_json> j = ParseJson(R"({"zeta":1,"alpha":2,"mid":{"b":1,"a":2}})");
  ASSERT_TRUE(j.ok()) << j.error().message;
  EXPECT_EQ(j->begin().key(), "zeta");
  EXPECT_EQ((*j)["mid"].begin().key(), "b");
  EXPECT_EQ((*j)["alpha"], 2);
}

// Values a program builds, not parsed: DumpJson writes what Json::Dump
// writes for the same value.
TEST(JsonStrictTest, DumpsBuiltValuesAsJsonDoes) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::string odd = std::string("q\" b\\ nl\n tab\t bell\x07 del\x7f é\x1f") +
                          std::string(1, '\0') + "SN\xFF\xC3" + "\xE2\x82";
  Json old;
  ordered_json now;
  old["zeta"] = 1;
  now["zeta"] = 1;
  old["alpha"] = "two";
  now["alpha"] = "two";
  old["odd"] = odd;
  now["odd"] = odd;
  old[odd] = true;
  now[odd] = true;
  for (const double d : {0.1, 1.0 / 3, 2.0, -0.0, 1e300, 1900000000.0, inf, -inf, std::nan("")}) {
    old["doubles"].Push(d);
    now["doubles"].push_back(d);
  }
  old["exact"].Push(std::numeric_limits<std::uint64_t>::max());
  now["exact"].push_back(std::numeric_limits<std::uint64_t>::max());
  old["exact"].Push(std::numeric_limits<std::int64_t>::min());
  now["exact"].push_back(std::numeric_limits<std::int64_t>::min());
  old["empty_obj"] = Json::Object();
  now["empty_obj"] = ordered_json::object();
  old["empty_arr"] = Json::Array();
  now["empty_arr"] = ordered_json::array();
  old["nested"]["list"].Push(Json());
  now["nested"]["list"].push_back(nullptr);
  for (const int indent : {-1, 0, 2, 3}) {
    EXPECT_EQ(DumpJson(now, indent), old.Dump(indent)) << indent;
  }
  // Invalid UTF-8 became U+FFFD, one for each byte, so the text parses.
  EXPECT_NE(DumpJson(now).find("SN\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"),
            std::string::npos);
  EXPECT_TRUE(ParseJson(DumpJson(now)).ok());
  EXPECT_EQ(DumpJson(ordered_json(2.0)), "2.0");
}

}  // namespace
}  // namespace drivewatch::aging
