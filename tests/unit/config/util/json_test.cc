// SPDX-License-Identifier: Apache-2.0
#include "config/util/json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

namespace drivewatch {
namespace {

Json MustParse(std::string_view text) {
  Expected<Json> j = ParseJson(text);
  EXPECT_TRUE(j.ok()) << text << ": " << (j.ok() ? "" : j.error().message);
  return j.ok() ? std::move(j).value() : Json();
}

std::string ParseError(std::string_view text) {
  Expected<Json> j = ParseJson(text);
  if (j.ok()) return "parsed: " + DumpJson(*j);
  return j.error().message;
}

TEST(JsonTest, BuildsAndDumpsCompactInInsertionOrder) {
  Json j;
  j["zeta"] = 1;
  j["alpha"] = "two";
  j["list"].push_back(true);
  j["list"].push_back(Json());
  j["list"].push_back(2.5);
  j["empty_obj"] = Json::object();
  j["empty_arr"] = Json::array();
  EXPECT_EQ(DumpJson(j),
            R"({"zeta":1,"alpha":"two","list":[true,null,2.5],)"
            R"("empty_obj":{},"empty_arr":[]})");
}

TEST(JsonTest, DumpsPretty) {
  Json j;
  j["a"] = 1;
  j["b"].push_back(1);
  j["b"].push_back(Json::object());
  EXPECT_EQ(DumpJson(j, 2), "{\n  \"a\": 1,\n  \"b\": [\n    1,\n    {}\n  ]\n}");
}

TEST(JsonTest, OperatorBracketFindsExistingMember) {
  Json j;
  j["a"] = 1;
  j["a"] = 2;
  EXPECT_EQ(Members(j).size(), 1u);
  EXPECT_EQ(AsInt(*Find(j, "a")), 2);
  EXPECT_EQ(Find(j, "missing"), nullptr);
  EXPECT_EQ(Find(Json(3), "a"), nullptr);
}

TEST(JsonTest, ExactIntegersSurviveRoundTrip) {
  const std::uint64_t max_u = std::numeric_limits<std::uint64_t>::max();
  const std::int64_t min_i = std::numeric_limits<std::int64_t>::min();
  Json j = MustParse("[18446744073709551615,-9223372036854775808,"
                     "9007199254740993,0,-0]");
  ASSERT_EQ(Items(j).size(), 5u);
  EXPECT_EQ(AsUint(Items(j)[0]), max_u);
  EXPECT_EQ(AsInt(Items(j)[0], -7), -7);  // does not fit int64
  EXPECT_EQ(AsInt(Items(j)[1]), min_i);
  EXPECT_EQ(AsUint(Items(j)[1], 7), 7u);  // negative
  EXPECT_EQ(AsInt(Items(j)[2]), 9007199254740993);  // 2^53 + 1
  EXPECT_EQ(DumpJson(j), "[18446744073709551615,-9223372036854775808,"
                      "9007199254740993,0,0]");
  EXPECT_EQ(DumpJson(Json(max_u)), "18446744073709551615");
  EXPECT_EQ(DumpJson(Json(min_i)), "-9223372036854775808");
}

TEST(JsonTest, AnyIntegerTypeConstructsExactly) {
  EXPECT_EQ(DumpJson(Json(std::uint32_t{4000000000u})), "4000000000");
  EXPECT_EQ(DumpJson(Json(-5LL)), "-5");
  EXPECT_EQ(AsUint(Json(18446744073709551615ULL)), 18446744073709551615ULL);
  EXPECT_EQ(AsInt(Json(std::size_t{7})), 7);
  EXPECT_EQ(AsInt(Json(short{-3})), -3);
  EXPECT_TRUE(Json(true).is_boolean());
}

TEST(JsonTest, IntegersBeyond64BitsBecomeDoubles) {
  Json j = MustParse("18446744073709551616");
  EXPECT_DOUBLE_EQ(AsDouble(j), 18446744073709551616.0);
  // Shortest form, kept a double by ".0".
  EXPECT_EQ(DumpJson(j), "18446744073709551616.0");
  EXPECT_DOUBLE_EQ(AsDouble(MustParse("-9223372036854775809")),
                   -9223372036854775809.0);
}

TEST(JsonTest, DoublesPrintShortestRoundTrip) {
  EXPECT_EQ(DumpJson(Json(0.1)), "0.1");
  EXPECT_EQ(DumpJson(Json(1.0 / 3)), "0.3333333333333333");
  EXPECT_EQ(DumpJson(Json(1e300)), "1e+300");
  EXPECT_EQ(DumpJson(Json(2.0)), "2.0");  // stays a double when parsed back
  EXPECT_EQ(DumpJson(Json(-0.0)), "-0.0");
  for (double d : {0.1, 1.0 / 3, 5e-324, 1.7976931348623157e308, 123456.789,
                   -2.0}) {
    Json back = MustParse(DumpJson(Json(d)));
    EXPECT_EQ(AsDouble(back), d) << DumpJson(Json(d));
    EXPECT_EQ(DumpJson(back), DumpJson(Json(d)));
  }
}

TEST(JsonTest, NonFiniteDoublesDumpAsNull) {
  Json j = Json::array();
  j.push_back(std::numeric_limits<double>::infinity());
  j.push_back(-std::numeric_limits<double>::infinity());
  j.push_back(std::nan(""));
  EXPECT_EQ(DumpJson(j), "[null,null,null]");
}

TEST(JsonTest, NumberGrammarAndRanges) {
  EXPECT_DOUBLE_EQ(AsDouble(MustParse("-1.5e3")), -1500);
  EXPECT_DOUBLE_EQ(AsDouble(MustParse("1E-2")), 0.01);
  EXPECT_DOUBLE_EQ(AsDouble(MustParse("0.5")), 0.5);
  EXPECT_EQ(AsDouble(MustParse("1e-400"), -1), 0.0);  // underflow: zero
  EXPECT_EQ(ParseError("1e400"),
            "line 1, column 1: number 1e400 is out of range of a double");
  EXPECT_EQ(ParseError("01"), "line 1, column 2: leading zero in a number");
  EXPECT_EQ(ParseError("-01"), "line 1, column 3: leading zero in a number");
  EXPECT_EQ(ParseError("1."),
            "line 1, column 3: unexpected end of input (expected a digit "
            "after '.')");
  EXPECT_EQ(ParseError(".5"),
            "line 1, column 1: unexpected '.' (expected a value)");
  EXPECT_EQ(ParseError("+1"),
            "line 1, column 1: unexpected '+' (expected a value)");
  EXPECT_EQ(ParseError("1e"),
            "line 1, column 3: unexpected end of input (expected a digit in "
            "the exponent)");
  EXPECT_EQ(ParseError("-"),
            "line 1, column 2: unexpected end of input (expected a digit)");
}

TEST(JsonTest, AccessorsFallBackOnOtherTypes) {
  Json s("text");
  EXPECT_EQ(AsInt(s, 5), 5);
  EXPECT_EQ(AsDouble(s, 1.5), 1.5);
  EXPECT_TRUE(AsBool(s, true));
  EXPECT_EQ(AsString(Json(3)), "");
  EXPECT_EQ(AsInt(Json(3.9)), 3);
  EXPECT_EQ(AsInt(Json(-3.9)), -3);
  EXPECT_EQ(AsUint(Json(-3.9), 9), 9u);
  EXPECT_EQ(AsInt(Json(1e30), 9), 9);
  EXPECT_EQ(AsInt(Json(std::nan("")), 9), 9);
  EXPECT_DOUBLE_EQ(AsDouble(Json(7)), 7.0);
  EXPECT_TRUE(Items(Json()).empty());
  EXPECT_TRUE(Members(Json(1)).empty());
}

TEST(JsonTest, StringEscapesParse) {
  EXPECT_EQ(AsString(MustParse(R"("a\"b\\c\/d\b\f\n\r\t")")),
            "a\"b\\c/d\b\f\n\r\t");
  EXPECT_EQ(AsString(MustParse(R"("\u00e9\u20AC")")), "é€");
  // U+1F600 as a surrogate pair becomes 4 bytes of UTF-8.
  EXPECT_EQ(AsString(MustParse(R"("\ud83d\ude00")")), "\xF0\x9F\x98\x80");
  EXPECT_EQ(AsString(MustParse(R"("\u0000")")), std::string(1, '\0'));
  // Raw UTF-8 passes through untouched.
  EXPECT_EQ(AsString(MustParse("\"µs 温度 \xF0\x9F\x98\x80\"")),
            "µs 温度 \xF0\x9F\x98\x80");
}

TEST(JsonTest, StringErrors) {
  EXPECT_EQ(ParseError("\"a\nb\""),
            "line 1, column 3: control character 0x0a in a string (expected "
            "it escaped, e.g. \\n or \\u00XX)");
  EXPECT_EQ(ParseError(R"("\x")"),
            "line 1, column 3: unexpected 'x' (expected one of \"\\/bfnrtu "
            "after '\\')");
  EXPECT_EQ(ParseError(R"("\ude00")"),
            "line 1, column 2: lone low surrogate \\uDE00");
  EXPECT_EQ(ParseError(R"("\ud83dx")"),
            "line 1, column 2: high surrogate \\uD83D not followed by a low "
            "one (expected \\uDC00 to \\uDFFF next)");
  EXPECT_EQ(ParseError(R"("\ud83d\u0041")"),
            "line 1, column 8: high surrogate \\uD83D followed by \\u0041 "
            "(expected \\uDC00 to \\uDFFF)");
  EXPECT_EQ(ParseError(R"("\u12g4")"),
            "line 1, column 6: unexpected 'g' (expected 4 hex digits after "
            "\\u)");
  EXPECT_EQ(ParseError("\"abc"),
            "line 1, column 5: unexpected end of input (expected '\"' to "
            "close the string)");
  EXPECT_EQ(ParseError("\"\xC0\xAF\""),  // overlong '/'
            "line 1, column 2: invalid UTF-8 at byte 0xc0");
  EXPECT_EQ(ParseError("\"\xED\xA0\x80\""),  // a UTF-16 surrogate in UTF-8
            "line 1, column 2: invalid UTF-8 at byte 0xed");
  EXPECT_EQ(ParseError("\"\xF4\x90\x80\x80\""),  // past U+10FFFF
            "line 1, column 2: invalid UTF-8 at byte 0xf4");
  EXPECT_EQ(ParseError("\"\xE2\x82\""),  // truncated sequence
            "line 1, column 2: invalid UTF-8 at byte 0xe2");
}

TEST(JsonTest, StringsDumpEscaped) {
  Json j(std::string("q\" b\\ nl\n tab\t bell\x07 del\x7f é\x1f") +
         std::string(1, '\0'));
  EXPECT_EQ(DumpJson(j),
            R"("q\" b\\ nl\n tab\t bell\u0007 del)"
            "\x7f"
            R"( é\u001f\u0000")");
  EXPECT_EQ(MustParse(DumpJson(j)), j);
}

TEST(JsonTest, InvalidUtf8DumpsAsReplacementCharacter) {
  // Drive identify strings may hold any byte; our output must still parse.
  Json j(std::string("SN\xFF\xC3"));
  EXPECT_EQ(DumpJson(j), "\"SN\xEF\xBF\xBD\xEF\xBF\xBD\"");
  EXPECT_TRUE(ParseJson(DumpJson(j)).ok());
}

TEST(JsonTest, ErrorPositionsCountLinesAndCharacters) {
  EXPECT_EQ(ParseError(R"({"a":1 "b":2})"),
            "line 1, column 8: unexpected '\"' (expected ',' or '}')");
  EXPECT_EQ(ParseError("{\n  \"a\": 1,\n  \"b\" 2\n}"),
            "line 3, column 7: unexpected '2' (expected ':')");
  // Columns count characters: "é" is one.
  EXPECT_EQ(ParseError("[\"é\" x]"),
            "line 1, column 6: unexpected 'x' (expected ',' or ']')");
  EXPECT_EQ(ParseError(""),
            "line 1, column 1: unexpected end of input (expected a value)");
  EXPECT_EQ(ParseError("   "),
            "line 1, column 4: unexpected end of input (expected a value)");
  EXPECT_EQ(ParseError("[1,]"),
            "line 1, column 4: unexpected ']' (expected a value)");
  EXPECT_EQ(ParseError(R"({"a":1,})"),
            "line 1, column 8: unexpected '}' (expected a string key)");
  EXPECT_EQ(ParseError("{1:2}"),
            "line 1, column 2: unexpected '1' (expected a string key)");
  EXPECT_EQ(ParseError("tru"),
            "line 1, column 4: unexpected end of input (expected 'true')");
  EXPECT_EQ(ParseError("nul1"),
            "line 1, column 4: unexpected '1' (expected 'null')");
  EXPECT_EQ(ParseError("[1"),
            "line 1, column 3: unexpected end of input (expected ',' or "
            "']')");
  EXPECT_EQ(ParseError("\xEF\xBB\xBF{}"),  // a BOM is not JSON text
            "line 1, column 1: unexpected byte 0xef (expected a value)");
}

TEST(JsonTest, RejectsTrailingGarbage) {
  EXPECT_EQ(ParseError("{} {}"),
            "line 1, column 4: unexpected '{' after the value (expected the "
            "end of the input)");
  EXPECT_EQ(ParseError("1 2"),
            "line 1, column 3: unexpected '2' after the value (expected the "
            "end of the input)");
  EXPECT_EQ(ParseError(std::string("1\0", 2)),
            "line 1, column 2: unexpected byte 0x00 after the value "
            "(expected the end of the input)");
  EXPECT_TRUE(ParseJson(" \t\r\n{}\n ").ok());
}

TEST(JsonTest, RejectsDuplicateKeys) {
  EXPECT_EQ(ParseError(R"({"a":1,"a":2})"),
            "line 1, column 8: duplicate key \"a\"");
  // At the key's opening quote, past the escaped one inside it.
  EXPECT_EQ(ParseError(R"({"a\"b":1,"a\"b":2})"),
            "line 1, column 11: duplicate key \"a\\\"b\"");
}

// Past the members the searched check covers, duplicates are still found,
// wherever the first of the two is.
TEST(JsonTest, RejectsDuplicateKeysInALargeObject) {
  for (const int first : {0, 30, 31, 32, 500, 998}) {
    std::string text = "{";
    for (int i = 0; i < 999; ++i) text += "\"k" + std::to_string(i) + "\":" + std::to_string(i) + ",";
    const std::size_t column = text.size() + 1;
    text += "\"k" + std::to_string(first) + "\":0}";
    EXPECT_EQ(ParseError(text), "line 1, column " + std::to_string(column) + ": duplicate key \"k" +
                                    std::to_string(first) + "\"")
        << first;
  }
}

std::string ObjectOf(std::size_t members) {
  std::string text = "{";
  for (std::size_t i = 0; i < members; ++i) {
    if (i) text += ',';
    text += "\"k" + std::to_string(i) + "\":" + std::to_string(i);
  }
  return text + "}";
}

TEST(JsonTest, TakesObjectsOfUpToTheMostMembers) {
  const Json j = MustParse(ObjectOf(kMaxJsonObjectMembers));
  ASSERT_EQ(Members(j).size(), kMaxJsonObjectMembers);
  // In the order written, each with its value.
  for (std::size_t i = 0; i < Members(j).size(); i += 997) {
    const auto& [key, value] = *std::next(Members(j).begin(), static_cast<std::ptrdiff_t>(i));
    EXPECT_EQ(key, "k" + std::to_string(i));
    EXPECT_EQ(value, Json(i));
  }
  EXPECT_EQ(Members(j).back().first, "k" + std::to_string(kMaxJsonObjectMembers - 1));
  // The bound is per object: many objects may hold more members together.
  std::string many = "[";
  for (int i = 0; i < 3; ++i) many += (i ? "," : "") + ObjectOf(kMaxJsonObjectMembers / 2 + 1);
  EXPECT_EQ(Items(MustParse(many + "]")).size(), 3u);
}

TEST(JsonTest, RefusesAnObjectWithMoreThanTheMostMembers) {
  const std::string most = std::to_string(kMaxJsonObjectMembers);
  const std::string text = ObjectOf(kMaxJsonObjectMembers + 1);
  // At the first member too many.
  const std::size_t column = text.rfind(",\"k") + 2;
  EXPECT_EQ(ParseError(text), "line 1, column " + std::to_string(column) + ": more than " + most +
                                  " members in one object (expected at most " + most + ")");
  // However deep it is, and with many more (the issue's record had 200k).
  EXPECT_NE(ParseError(R"({"results":)" + ObjectOf(200000) + "}")
                .find(": more than " + most + " members in one object"),
            std::string::npos);
}

// A token that cannot follow what came before is reported where it starts,
// whether it is whole or broken itself; what was expected comes from where
// it stands.
TEST(JsonTest, ErrorsAfterAValuePointAtTheNextToken) {
  EXPECT_EQ(ParseError("[1-]"), "line 1, column 3: unexpected '-' (expected ',' or ']')");
  EXPECT_EQ(ParseError("[1 -\n]"), "line 1, column 4: unexpected '-' (expected ',' or ']')");
  EXPECT_EQ(ParseError("[1 \"abc"), "line 1, column 4: unexpected '\"' (expected ',' or ']')");
  EXPECT_EQ(ParseError(R"([1 "\x"])"), "line 1, column 4: unexpected '\"' (expected ',' or ']')");
  EXPECT_EQ(ParseError("[0x]"), "line 1, column 3: unexpected 'x' (expected ',' or ']')");
  EXPECT_EQ(ParseError(R"({"k":1 tru})"), "line 1, column 8: unexpected 't' (expected ',' or '}')");
  EXPECT_EQ(ParseError("{tru"), "line 1, column 2: unexpected 't' (expected a string key)");
  EXPECT_EQ(ParseError("truetrue"),
            "line 1, column 5: unexpected 't' after the value (expected the end of the input)");
  EXPECT_EQ(ParseError("[00]"), "line 1, column 3: leading zero in a number");
  EXPECT_EQ(ParseError(R"({"a":01})"), "line 1, column 7: leading zero in a number");
  EXPECT_EQ(ParseError("[1,1e400]"), "line 1, column 4: number 1e400 is out of range of a double");
}

TEST(JsonTest, ErrorsInsideAValueOrKeyPointInsideIt) {
  EXPECT_EQ(ParseError(R"({"\x":1})"),
            "line 1, column 4: unexpected 'x' (expected one of \"\\/bfnrtu after '\\')");
  EXPECT_EQ(ParseError("[tx"), "line 1, column 3: unexpected 'x' (expected 'true')");
  EXPECT_EQ(ParseError("\"\\"),
            "line 1, column 3: unexpected end of input (expected an escape character)");
  EXPECT_EQ(ParseError("\"\\u12"),
            "line 1, column 6: unexpected end of input (expected 4 hex digits after \\u)");
  EXPECT_EQ(ParseError("1e+"),
            "line 1, column 4: unexpected end of input (expected a digit in the exponent)");
  for (const char* text : {R"("\ud83d\n")", R"("\ud83d")"}) {
    EXPECT_EQ(ParseError(text),
              "line 1, column 2: high surrogate \\uD83D not followed by a low one (expected "
              "\\uDC00 to \\uDFFF next)")
        << text;
  }
}

TEST(JsonTest, NulBytesAreReportedWhereTheyAre) {
  EXPECT_EQ(ParseError(std::string("[1,\0]", 5)),
            "line 1, column 4: unexpected byte 0x00 (expected a value)");
  EXPECT_EQ(ParseError(std::string("{\"a\":\"b\0\"}", 10)),
            "line 1, column 8: control character 0x00 in a string (expected it escaped, e.g. "
            "\\n or \\u00XX)");
}

TEST(JsonTest, NestingLimitIs64) {
  const std::string ok = std::string(64, '[') + std::string(64, ']');
  EXPECT_TRUE(ParseJson(ok).ok());
  const std::string deep = std::string(65, '[') + std::string(65, ']');
  EXPECT_EQ(ParseError(deep), "line 1, column 65: nesting deeper than 64 levels");
  // Far deeper input fails fast instead of recursing.
  EXPECT_FALSE(ParseJson(std::string(1'000'000, '[')).ok());
  std::string objects;
  for (int i = 0; i < 65; ++i) objects += "{\"k\":";
  EXPECT_FALSE(ParseJson(objects + "1" + std::string(65, '}')).ok());
}

TEST(JsonTest, DeepEquality) {
  EXPECT_EQ(MustParse(R"({"a":[1,{"b":null}],"c":"x"})"),
            MustParse(R"({ "a" : [ 1 , { "b" : null } ] , "c" : "x" })"));
  EXPECT_FALSE(MustParse(R"({"a":[1,{"b":null}]})") ==
               MustParse(R"({"a":[1,{"b":false}]})"));
  EXPECT_FALSE(MustParse(R"({"a":1,"b":2})") == MustParse(R"({"b":2,"a":1})"));
  EXPECT_FALSE(MustParse("[1]") == MustParse("[1,1]"));
  EXPECT_FALSE(Json("1") == Json(1));
  EXPECT_FALSE(Json() == Json(false));
  // Numbers compare by value.
  EXPECT_EQ(Json(1.0), Json(1));
  EXPECT_EQ(Json(std::uint64_t{5}), Json(5));
  EXPECT_EQ(Json(9007199254740992), Json(9007199254740992.0));
  // nlohmann-json compares an integer with a double as doubles (2^53 + 1
  // equals 2^53.0) and a negative integer with an unsigned one after casting
  // the unsigned one to int64 (-1 equals 2^64 - 1). Nothing in drivewatch
  // compares record values with ==; readers take them with AsUint, AsInt...,
  // which keep each of them apart:
  const std::uint64_t max_u = std::numeric_limits<std::uint64_t>::max();
  EXPECT_NE(AsInt(Json(9007199254740993)), AsInt(Json(9007199254740992.0)));
  EXPECT_NE(AsUint(Json(max_u), 7), AsUint(Json(18446744073709551616.0), 7));
  EXPECT_NE(AsUint(Json(-1), 7), AsUint(Json(max_u), 7));
  EXPECT_FALSE(Json(std::nan("")) == Json(std::nan("")));
}

TEST(JsonTest, RoundTripsARecord) {
  const std::string text =
      R"({"version":1,"run":"r1","phase":"fill-half","start":1796007600,)"
      R"("reason":"line\nbreak \"quoted\" é","results":{"bytes_written":)"
      R"(18446744073709551615,"latency":{"p99_seconds":0.000812}},)"
      R"("series":{"throughput_bytes_per_second":[1.9e+09,1.3e+08]},)"
      R"("ok":true,"none":null})";
  Json j = MustParse(text);
  EXPECT_EQ(DumpJson(j), text);
  EXPECT_EQ(MustParse(DumpJson(j, 2)), j);
  EXPECT_EQ(DumpJson(MustParse(DumpJson(j, 2))), text);
}

// A null becomes an object on operator[] and an array on push_back; any
// other value of the wrong type throws, which is why a record read from
// disk is validated (its objects objects, its arrays arrays) before
// drivewatch changes it: the retention study's record by ValidateStudy.
TEST(JsonTest, NullBecomesAnObjectOnBracketAndAnArrayOnPush) {
  Json j;
  j["a"] = 1;
  EXPECT_EQ(DumpJson(j), R"({"a":1})");
  Json k;
  k.push_back(1);
  EXPECT_EQ(DumpJson(k), "[1]");
  Json number(5);
  EXPECT_THROW(number["a"] = 1, nlohmann::json::type_error);
  Json text("s");
  EXPECT_THROW(text.push_back(1), nlohmann::json::type_error);
}

}  // namespace
}  // namespace drivewatch
