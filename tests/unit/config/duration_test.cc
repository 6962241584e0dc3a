// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "config/config.h"

namespace drivewatch::config {
namespace {

using std::chrono::milliseconds;

struct Case {
  const char* text;
  int64_t ms;
};

TEST(ParseDurationTest, Accepts) {
  const Case cases[] = {
      {"0s", 0},
      {"0ms", 0},
      {"500ms", 500},
      {"30s", 30'000},
      {"10m", 600'000},
      {"1h", 3'600'000},
      {"1h30m", 5'400'000},
      {"2d", 172'800'000},
      {"90s", 90'000},
      {"1m90s", 150'000},
      {"1d2h3m4s5ms", 93'784'005},
      {"007s", 7'000},
  };
  for (const Case& c : cases) {
    std::string error;
    EXPECT_EQ(ParseDuration(c.text, &error), milliseconds{c.ms})
        << c.text << ": " << error;
    EXPECT_EQ(error, "") << c.text;
  }
}

TEST(ParseDurationTest, RejectsWithAReason) {
  // Each message is "<value>" is not a valid duration: <reason>.
  const std::pair<const char*, const char*> cases[] = {
      {"", "empty (expected a number and a unit, such as \"30s\")"},
      {"30",
       "missing unit after \"30\" (expected d, h, m, s or ms, as in \"30s\")"},
      {"30sec", "unknown unit \"sec\" (expected d, h, m, s or ms)"},
      {"30S", "unknown unit \"S\" (expected d, h, m, s or ms)"},
      {"1.5h",
       "fractions are not supported (expected whole numbers, such as "
       "\"1m30s\" or \"1500ms\")"},
      {"-5s",
       "unexpected \"-\" (expected a number and a unit, such as \"30s\" or "
       "\"1h30m\")"},
      {"30 s",
       "unexpected \" \" after \"30\" (expected a unit right after the "
       "number: d, h, m, s or ms)"},
      {"30_s",
       "unexpected \"_\" after \"30\" (expected a unit right after the "
       "number: d, h, m, s or ms)"},
      {" 30s",
       "unexpected \" \" (expected a number and a unit, such as \"30s\" or "
       "\"1h30m\")"},
      {"s",
       "unexpected \"s\" (expected a number and a unit, such as \"30s\" or "
       "\"1h30m\")"},
      {"30\xc2\xb5s",  // "30µs": not cut inside the UTF-8 sequence
       "unexpected \"\xc2\xb5\" after \"30\" (expected a unit right after the "
       "number: d, h, m, s or ms)"},
      {"30s,",
       "unexpected \",\" (expected a number and a unit, such as \"30s\" or "
       "\"1h30m\")"},
      {"30s1m",
       "units out of order (expected each unit at most once, largest first, "
       "as in \"1h30m\")"},
      {"1m1m",
       "units out of order (expected each unit at most once, largest first, "
       "as in \"1h30m\")"},
      {"99999999999999999999s",
       "too large (expected at most 106751991167d7h12m55s807ms)"},
      {"106751991167d8h",
       "too large (expected at most 106751991167d7h12m55s807ms)"},
  };
  for (const auto& [text, reason] : cases) {
    std::string error;
    EXPECT_EQ(ParseDuration(text, &error), std::nullopt) << text;
    EXPECT_EQ(error, "\"" + std::string(text) +
                         "\" is not a valid duration: " + reason);
  }
}

TEST(ParseDurationTest, ErrorOutputIsOptional) {
  EXPECT_EQ(ParseDuration("nope"), std::nullopt);
  EXPECT_EQ(ParseDuration("1s"), milliseconds{1'000});
}

TEST(FormatDurationTest, ShortestRoundForm) {
  const Case cases[] = {
      {"0s", 0},
      {"1ms", 1},
      {"500ms", 500},
      {"1s", 1'000},
      {"1s500ms", 1'500},
      {"30s", 30'000},
      {"1m", 60'000},
      {"1m30s", 90'000},
      {"10m", 600'000},
      {"1h", 3'600'000},
      {"1h30m", 5'400'000},
      {"1d", 86'400'000},
      {"30d", 2'592'000'000},
      {"1d1ms", 86'400'001},
      {"-1m30s", -90'000},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(FormatDuration(milliseconds{c.ms}), c.text) << c.ms;
  }
  EXPECT_EQ(FormatDuration(milliseconds::min()), "-106751991167d7h12m55s808ms");
}

TEST(FormatDurationTest, ParseReadsBackWhatFormatWrites) {
  for (int64_t ms : {int64_t{0}, int64_t{1}, int64_t{999}, int64_t{61'001},
                     int64_t{3'599'999}, int64_t{90'061'001},
                     int64_t{2'592'000'000}, milliseconds::max().count()}) {
    EXPECT_EQ(ParseDuration(FormatDuration(milliseconds{ms})), milliseconds{ms})
        << ms;
  }
}

}  // namespace
}  // namespace drivewatch::config
