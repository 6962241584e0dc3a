// SPDX-License-Identifier: Apache-2.0
#include "config/checks.h"

#include <gtest/gtest.h>

#include <array>
#include <string>

namespace drivewatch::config::detail {
namespace {

TEST(QuoteTest, EscapesLikeATomlBasicString) {
  EXPECT_EQ(Quote("plain"), "\"plain\"");
  EXPECT_EQ(Quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(Quote(std::string("\t\n\x01\x7f", 4)), "\"\\t\\n\\u0001\\u007F\"");
  EXPECT_EQ(Quote("SSD 980 PRO \xc2\xb5"), "\"SSD 980 PRO \xc2\xb5\"");
}

TEST(EditDistanceTest, CountsEditsAndTranspositions) {
  EXPECT_EQ(EditDistance("interval", "interval"), 0u);
  EXPECT_EQ(EditDistance("intervall", "interval"), 1u);
  // One transposition, not two substitutions.
  EXPECT_EQ(EditDistance("levle", "level"), 1u);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
  EXPECT_EQ(EditDistance("", "web"), 3u);
  EXPECT_EQ(EditDistance("Interval", "interval"), 0u);
}

TEST(ClosestMatchTest, OnlySuggestsLikelyTypos) {
  constexpr std::array<std::string_view, 6> keys{
      "web", "log", "state", "discovery", "drives", "probes"};
  EXPECT_EQ(ClosestMatch("webb", keys), "web");
  EXPECT_EQ(ClosestMatch("discovry", keys), "discovery");
  EXPECT_EQ(ClosestMatch("drive", keys), "drives");
  EXPECT_EQ(ClosestMatch("metrics", keys), std::nullopt);
  EXPECT_EQ(ClosestMatch("lg", keys), "log");
  EXPECT_EQ(ClosestMatch("x", keys), std::nullopt);
}

TEST(ListenAddressTest, Accepts) {
  for (const char* ok :
       {":9647", "0.0.0.0:9647", "127.0.0.1:1", "localhost:65535",
        "host-1.example.com:9647", "[::]:9647", "[::1]:9647",
        "[fe80::1%eth0]:9647", "[2001:db8::7]:80"}) {
    EXPECT_EQ(ListenAddressProblem(ok), std::nullopt) << ok;
  }
}

TEST(ListenAddressTest, RejectsWithAReason) {
  const std::pair<const char*, const char*> cases[] = {
      {"",
       "empty address (expected host:port, [IPv6]:port or :port, such as "
       "\":9647\")"},
      {"9647",
       "\"9647\": missing \":\" before the port (expected \":9647\" to listen "
       "on all addresses)"},
      {"localhost",
       "\"localhost\": missing port (expected host:port, [IPv6]:port or :port, "
       "such as \":9647\")"},
      {"localhost:",
       "\"localhost:\": missing port after \":\" (expected a port from 1 to "
       "65535)"},
      {":http",
       "\":http\": port \"http\" is not a number (expected 1 to 65535)"},
      {":0", "\":0\": port 0 is out of range (expected 1 to 65535)"},
      {":65536",
       "\":65536\": port 65536 is out of range (expected 1 to 65535)"},
      {":99999999999999999999",
       "\":99999999999999999999\": port 99999999999999999999 is out "
       "of range (expected 1 to 65535)"},
      {"::1:9647",
       "\"::1:9647\": IPv6 address must be in brackets (expected "
       "\"[::1]:9647\")"},
      {"fe80::zz:9647",
       "\"fe80::zz:9647\": IPv6 address must be in brackets (expected "
       "\"[::1]:9647\")"},
      {"[::1:9647",
       "\"[::1:9647\": missing \"]\" (expected [IPv6]:port, such as "
       "\"[::1]:9647\")"},
      {"[::1]",
       "\"[::1]\": missing port (expected [IPv6]:port, such as "
       "\"[::1]:9647\")"},
      {"[::1]9647",
       "\"[::1]9647\": missing \":\" after \"]\" (expected [IPv6]:port, such "
       "as \"[::1]:9647\")"},
      {"[::g]:9647",
       "\"[::g]:9647\": \"::g\" is not a valid IPv6 address (expected one such "
       "as \"::1\" or \"fe80::1%eth0\")"},
      {"[127.0.0.1]:9647",
       "\"[127.0.0.1]:9647\": \"127.0.0.1\" is not a valid IPv6 address "
       "(expected one such as \"::1\" or \"fe80::1%eth0\")"},
      {"300.1.1.1:9647",
       "\"300.1.1.1:9647\": \"300.1.1.1\" is not a valid IPv4 address "
       "(expected four numbers from 0 to 255, such as \"127.0.0.1\")"},
      {"my host:9647",
       "\"my host:9647\": \"my host\" is not a valid host name (expected "
       "letters, digits, \"-\" and \".\")"},
      {"-bad.example:9647",
       "\"-bad.example:9647\": \"-bad.example\" is not a valid host name "
       "(expected letters, digits, \"-\" and \".\")"},
      {"a..b:9647",
       "\"a..b:9647\": \"a..b\" is not a valid host name (expected letters, "
       "digits, \"-\" and \".\")"},
  };
  for (const auto& [address, want] : cases) {
    EXPECT_EQ(ListenAddressProblem(address), want) << address;
  }
}

TEST(GlobTest, Accepts) {
  for (const char* ok :
       {"*", "S5GX*", "PHM2?00*", "S5GXNG0N[0-4]*", "[!A-C]*", "[]]x", "[!]]x",
        "[[:digit:]]*", "\\[literal\\]", "Samsung SSD 980 PRO*"}) {
    EXPECT_EQ(GlobProblem(ok), std::nullopt) << ok;
  }
}

TEST(GlobTest, RejectsWithAReason) {
  const std::pair<const char*, const char*> cases[] = {
      {"",
       "empty pattern (expected a glob such as \"S5GX*\", or \"*\" for all)"},
      {" S5GX*",
       "\" S5GX*\" starts or ends with a space and would never match (expected "
       "no padding; drive serials and models are compared trimmed)"},
      {"S5GX\t*",
       "\"S5GX\\t*\" contains a control or non-ASCII character and would never "
       "match (expected printable ASCII, as drives report serials and models)"},
      {"S5GX\\",
       "\"S5GX\\\\\" is not a valid glob: it ends in a lone backslash "
       "(expected a character after it)"},
      {"S[0-4",
       "\"S[0-4\" is not a valid glob: \"[\" is never closed (expected a "
       "closing \"]\", or a backslash before \"[\" to match it literally)"},
      {"S[]",
       "\"S[]\" is not a valid glob: \"[\" is never closed (expected a closing "
       "\"]\", or a backslash before \"[\" to match it literally)"},
      {"[[:digits:]]",
       "\"[[:digits:]]\" is not a valid glob: unknown character class "
       "\"[:digits:]\" (expected alnum, alpha, blank, cntrl, digit, graph, "
       "lower, print, punct, space, upper or xdigit)"},
  };
  for (const auto& [pattern, want] : cases) {
    EXPECT_EQ(GlobProblem(pattern), want) << pattern;
  }
}

TEST(AbsolutePathTest, Checks) {
  EXPECT_EQ(AbsolutePathProblem("/var/lib/drivewatch"), std::nullopt);
  EXPECT_EQ(AbsolutePathProblem("./state"),
            "\"./state\" is not an absolute path (expected a path starting "
            "with \"/\")");
  EXPECT_EQ(
      AbsolutePathProblem(std::string_view("/a\0b", 4)),
      "\"/a\\u0000b\" contains a NUL character (expected a path without one)");
}

}  // namespace
}  // namespace drivewatch::config::detail
