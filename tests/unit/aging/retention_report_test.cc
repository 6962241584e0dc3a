// SPDX-License-Identifier: Apache-2.0
#include "aging/report/retention_report.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace drivewatch::aging {
namespace {

const std::string kFixtures = std::string(DW_FIXTURE_DIR) + "/retention/";
// 2026-11-23, a little after the clean study's second verify.
constexpr double kNow = 1795400000;

Json Load(const std::string& name) {
  std::ifstream in(kFixtures + name + ".json", std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  auto parsed = ParseJson(ss.str());
  EXPECT_TRUE(parsed.ok()) << name;
  return parsed.ok() ? *parsed : Json();
}

std::size_t Occurrences(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto pos = text.find(needle); pos != std::string::npos;
       pos = text.find(needle, pos + needle.size())) {
    ++n;
  }
  return n;
}

Json Summary(const Json& study) {
  auto parsed = ParseJson(RenderRetentionReport(study, ReportFormat::kJson, kNow));
  EXPECT_TRUE(parsed.ok());
  if (!parsed.ok() || !Find(*parsed, "summary")) return Json();
  return *Find(*parsed, "summary");
}

// Json has no mutable element access: rebuild the array `key` with item
// `index` (from the end when negative) changed by `edit`.
template <typename Edit>
void EditItem(Json& object, std::string_view key, int index, Edit edit) {
  Json rebuilt = Json::array();
  const std::vector<Json> items = Items(object[key]);
  const int n = static_cast<int>(items.size());
  const int wanted = index < 0 ? n + index : index;
  for (int i = 0; i < n; ++i) {
    Json item = items[static_cast<std::size_t>(i)];
    if (i == wanted) edit(item);
    rebuilt.push_back(item);
  }
  object[key] = rebuilt;
}

const std::vector<std::string> kAll = {"clean", "bad_blocks", "writing",
                                       "unknown_temperature"};

TEST(RetentionReportTest, EveryFixtureRendersInEveryFormat) {
  for (const auto& name : kAll) {
    const Json study = Load(name);
    for (auto format : {ReportFormat::kText, ReportFormat::kJson, ReportFormat::kHtml}) {
      const std::string out = RenderRetentionReport(study, format, kNow);
      EXPECT_NE(out.find(AsString(*Find(study, "study"))), std::string::npos) << name;
      EXPECT_NE(out.find(AsString(*Find(study, "serial"))), std::string::npos) << name;
    }
  }
}

TEST(RetentionReportTest, Verdicts) {
  EXPECT_EQ(AsString(Summary(Load("clean"))["verdict"]), "PASS");
  EXPECT_EQ(AsString(Summary(Load("unknown_temperature"))["verdict"]), "PASS");
  EXPECT_EQ(AsString(Summary(Load("writing"))["verdict"]), "WRITING");
  const Json bad = Summary(Load("bad_blocks"));
  EXPECT_EQ(AsString(*Find(bad, "verdict")), "FAIL");
  EXPECT_EQ(AsString(*Find(bad, "verdict_line")),
            "FAIL: 11 bad blocks (3 unreadable, 5 wrong content, 2 misplaced, 1 stale); "
            "5 reads over 100 ms (max 1.70 s)");

  const std::string text = RenderRetentionReport(Load("clean"), ReportFormat::kText, kNow);
  EXPECT_NE(text.find("PASS: every block intact, no read over 100 ms"), std::string::npos);
  EXPECT_NE(RenderRetentionReport(Load("writing"), ReportFormat::kText, kNow)
                .find("WRITING: the pattern is being written (38% of the region)"),
            std::string::npos);
}

TEST(RetentionReportTest, ASlowReadAloneFails) {
  Json study = Load("clean");
  EditItem(study, "verifies", -1, [](Json& last) {
    last["quantiles"]["max"] = 0.25;
    last["over_100ms_ratio"] = 1.0 / 262144;
  });
  const Json s = Summary(study);
  EXPECT_EQ(AsString(*Find(s, "verdict")), "FAIL");
  EXPECT_EQ(AsString(*Find(s, "verdict_line")), "FAIL: 1 read over 100 ms (max 250.00 ms)");
}

TEST(RetentionReportTest, BaselineOnlyWaitsAndAbortedIsIncomplete) {
  Json study = Load("clean");
  study["verifies"] = Json::array();
  EXPECT_EQ(AsString(Summary(study)["verdict"]), "WAITING");
  // No verify: the time accounting is an estimate for now.
  EXPECT_TRUE(AsBool(Summary(study)["estimated"]));
  EXPECT_DOUBLE_EQ(AsDouble(Summary(study)["wall_age_seconds"]), kNow - 1790000600.0);

  Json aborted = Load("clean");
  EditItem(aborted, "verifies", -1, [](Json& last) { last["outcome"] = "aborted"; });
  EXPECT_EQ(AsString(Summary(aborted)["verdict"]), "INCOMPLETE");
}

TEST(RetentionReportTest, LatencyShiftIsLastVerifyAgainstBaseline) {
  const Json study = Load("clean");
  const Json& base = *Find(study, "baseline");
  const Json& last = Items(*Find(study, "verifies")).back();
  const Json s = Summary(study);
  const Json& p99 = *Find(*Find(s, "latency_shift"), "p99");
  const double b = AsDouble(*Find(*Find(base, "quantiles"), "p99"));
  const double l = AsDouble(*Find(*Find(last, "quantiles"), "p99"));
  EXPECT_DOUBLE_EQ(AsDouble(*Find(p99, "baseline")), b);
  EXPECT_DOUBLE_EQ(AsDouble(*Find(p99, "last")), l);
  EXPECT_DOUBLE_EQ(AsDouble(*Find(p99, "delta")), l - b);
  EXPECT_DOUBLE_EQ(AsDouble(*Find(p99, "ratio")), l / b);
  const Json& over10 = *Find(*Find(s, "latency_shift"), "over_10ms_ratio");
  EXPECT_DOUBLE_EQ(AsDouble(*Find(over10, "delta")),
                   AsDouble(*Find(last, "over_10ms_ratio")));

  // The text shows the same shift as a percentage: 193.5 µs -> 284.7 µs.
  const std::string text = RenderRetentionReport(study, ReportFormat::kText, kNow);
  EXPECT_NE(text.find("284.7 \xc2\xb5s (+47%)"), std::string::npos) << text;
}

TEST(RetentionReportTest, QuantilesFallBackToTheHistogram) {
  Json study = Load("clean");
  Json expected = Summary(study)["latency_shift"]["p50"]["last"];
  // null: recomputed from the buckets
  EditItem(study, "verifies", -1, [](Json& last) { last["quantiles"] = Json(); });
  EXPECT_DOUBLE_EQ(AsDouble(Summary(study)["latency_shift"]["p50"]["last"]),
                   AsDouble(expected));
}

TEST(RetentionReportTest, JsonIsTheStudyPlusASummary) {
  const Json study = Load("bad_blocks");
  auto parsed = ParseJson(RenderRetentionReport(study, ReportFormat::kJson, kNow));
  ASSERT_TRUE(parsed.ok());
  const Json summary = *Find(*parsed, "summary");
  EXPECT_EQ(*Find(*parsed, "verifies"), *Find(study, "verifies"));
  EXPECT_EQ(AsUint(*Find(*Find(summary, "bad"), "unreadable")), 3u);
  EXPECT_EQ(AsUint(*Find(*Find(summary, "bad"), "wrong_content")), 5u);
  EXPECT_EQ(AsUint(*Find(*Find(summary, "bad"), "misplaced")), 2u);
  EXPECT_EQ(AsUint(*Find(*Find(summary, "bad"), "stale")), 1u);
  EXPECT_EQ(AsUint(*Find(*Find(summary, "bad"), "total")), 11u);
  EXPECT_EQ(AsUint(*Find(summary, "slow_reads_over_100ms")), 5u);
  EXPECT_EQ(AsUint(*Find(*Find(summary, "smart_delta"), "media_errors")), 3u);
  // Baked at 70 °C against 30 °C with Ea 1.1 eV.
  const double af = std::exp(1.1 / 8.617e-5 * (1 / 303.15 - 1 / 343.15));
  EXPECT_NEAR(AsDouble(*Find(summary, "storage_acceleration_factor")), af, 1e-9 * af);
}

TEST(RetentionReportTest, UnknownStorageTemperature) {
  const Json study = Load("unknown_temperature");
  const Json s = Summary(study);
  EXPECT_TRUE(Find(s, "equivalent_age_seconds")->is_null());
  EXPECT_TRUE(Find(s, "storage_acceleration_factor")->is_null());
  for (auto format : {ReportFormat::kText, ReportFormat::kHtml}) {
    EXPECT_NE(RenderRetentionReport(study, format, kNow)
                  .find("unknown (no storage temperature configured)"),
              std::string::npos);
  }
  // A powered-off time the verify could not estimate (no SMART) says why.
  Json no_off = study;
  EditItem(no_off, "verifies", -1, [](Json& last) { last["powered_off_seconds"] = Json(); });
  EXPECT_NE(RenderRetentionReport(no_off, ReportFormat::kText, kNow)
                .find("powered off     unknown (no SMART power-on hours)"),
            std::string::npos);
}

// A study file is state on disk: damaged or edited, an LBA may be negative,
// fractional or huge (the retention_study fuzz target once found a
// negative last_lba cast to unsigned). Such a record is damaged: the report
// says so and shows none of its results.
TEST(RetentionReportTest, ImpossibleLbasMakeTheRecordDamaged) {
  Json study = Load("bad_blocks");
  EditItem(study, "verifies", -1, [](Json& verify) {
    EditItem(verify, "ranges", 0, [](Json& range) { range["last_lba"] = -9001.0; });
  });
  const std::string text = RenderRetentionReport(study, ReportFormat::kText, kNow);
  EXPECT_NE(text.find("DAMAGED: retention study: damaged retention study record: "
                      "verifies[0].ranges[0].last_lba is -9001.0 (expected an LBA of the "
                      "region, 0 to 262143, not before first_lba)"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("FAIL"), std::string::npos) << text;
  study = Load("bad_blocks");
  EditItem(study, "verifies", -1, [](Json& verify) {
    EditItem(verify, "ranges", 1, [](Json& range) { range["first_lba"] = 1e30; });
  });
  EXPECT_NE(RenderRetentionReport(study, ReportFormat::kText, kNow)
                .find("verifies[0].ranges[1].first_lba is 1e+30"),
            std::string::npos);
}

TEST(RetentionReportTest, FailedStudyShowsItsReason) {
  Json study = Load("writing");
  study["state"] = "failed";
  study["reason"] = "drive S64DNX0R123456 went away <during> the write";
  const Json s = Summary(study);
  EXPECT_EQ(AsString(*Find(s, "verdict")), "FAIL");
  EXPECT_EQ(AsString(*Find(s, "verdict_line")),
            "FAIL: the study failed: drive S64DNX0R123456 went away <during> the write");
  EXPECT_NE(RenderRetentionReport(study, ReportFormat::kHtml, kNow).find("&lt;during&gt;"),
            std::string::npos);
}

TEST(RetentionReportTest, HtmlHasTheChartTheMapAndNoExternalResources) {
  const std::string html = RenderRetentionReport(Load("bad_blocks"), ReportFormat::kHtml, kNow);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(Occurrences(html, "class=\"series\""), 2u);  // baseline + 1 verify
  EXPECT_EQ(Occurrences(html, "class=\"limit\""), 1u);
  // Seven ranges in seven distinct cells of 128 blocks.
  EXPECT_EQ(Occurrences(html, "class=\"bad unreadable\""), 2u);
  EXPECT_EQ(Occurrences(html, "class=\"bad wrong_content\""), 2u);
  EXPECT_EQ(Occurrences(html, "class=\"bad misplaced\""), 2u);
  EXPECT_EQ(Occurrences(html, "class=\"bad stale\""), 1u);
  EXPECT_NE(html.find("data-class=\"unreadable\">3<"), std::string::npos);
  EXPECT_NE(html.find("data-class=\"wrong_content\">5<"), std::string::npos);
  EXPECT_NE(html.find("firmware_change"), std::string::npos);
  EXPECT_NE(html.find("3B4QFXO7 -&gt; 3B4QFXP7"), std::string::npos);
  EXPECT_NE(html.find("class=\"verdict fail\""), std::string::npos);
  // The bad LBAs are in the page itself, not only in the map's tooltips.
  std::string body = html;
  for (std::size_t at; (at = body.find("<title>")) != std::string::npos;) {
    body.erase(at, body.find("</title>", at) + 8 - at);
  }
  EXPECT_NE(body.find("<td>LBA 9,000-9,001</td><td>unreadable</td><td>Input/output error</td>"),
            std::string::npos);
  EXPECT_NE(body.find("<td>LBA 131,072-131,075</td><td>wrong content</td><td>first difference at "
                      "byte 517</td>"),
            std::string::npos);
  // How the latency was taken is said (these fixtures predate the sample).
  EXPECT_NE(body.find("Latency, every read: its own pass over every block"), std::string::npos);

  const std::string clean = RenderRetentionReport(Load("clean"), ReportFormat::kHtml, kNow);
  EXPECT_EQ(Occurrences(clean, "class=\"series\""), 3u);
  EXPECT_EQ(Occurrences(clean, "class=\"bad "), 0u);
  EXPECT_NE(clean.find("class=\"verdict pass\""), std::string::npos);
}

TEST(RetentionReportTest, HtmlEscapesEveryStudyString) {
  Json study = Load("bad_blocks");
  study["model"] = "Evil <script>alert(1)</script> & \"Co\"";
  study["serial"] = "S'1";
  EditItem(study, "events", 0, [](Json& e) { e["detail"] = "</td></table><h1>"; });
  EditItem(study, "verifies", 0, [](Json& v) {
    EditItem(v, "ranges", 0, [](Json& range) { range["error"] = "<img src=x>"; });
  });
  const std::string html = RenderRetentionReport(study, ReportFormat::kHtml, kNow);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<b>x"), std::string::npos);
  EXPECT_EQ(html.find("</table><h1>"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_NE(html.find("Evil &lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;Co&quot;"),
            std::string::npos);
  EXPECT_NE(html.find("S&#39;1"), std::string::npos);
  // A name drivewatch would never give a study makes the record damaged;
  // that page escapes it too.
  study["study"] = "<b>x</b>";
  const std::string damaged = RenderRetentionReport(study, ReportFormat::kHtml, kNow);
  EXPECT_EQ(damaged.find("<b>x"), std::string::npos);
  EXPECT_NE(damaged.find("Retention study &lt;b&gt;x&lt;/b&gt;"), std::string::npos) << damaged;
  EXPECT_NE(damaged.find("study is &quot;&lt;b&gt;x&lt;/b&gt;&quot; (expected letters, digits, _, - and . only)"),
            std::string::npos)
      << damaged;
}

TEST(RetentionReportTest, MissingFieldsDoNotCrash) {
  std::vector<Json> odd = {Json(), Json::object(), Json("text"), Json::array()};
  Json partial;
  partial["study"] = "p";
  partial["baseline"] = Json::object();
  partial["verifies"].push_back(Json::object());
  partial["verifies"].push_back(Json(3));
  partial["region"]["block_size"] = 0;
  odd.push_back(partial);
  Json wrong_types = Load("bad_blocks");
  wrong_types["region"] = "big";
  wrong_types["accounting"] = Json(1);
  EditItem(wrong_types, "verifies", 0, [](Json& v) {
    v["latency"]["buckets"].push_back(Json(5));
    v["latency"]["buckets"].push_back(Json::array());
    Json huge = Json::array();
    huge.push_back(Json(1u << 30));
    huge.push_back(Json(1));
    v["latency"]["buckets"].push_back(huge);  // index out of range: skipped
    v["ranges"].push_back(Json::object());
    v["bad"] = "none";
  });
  odd.push_back(wrong_types);
  for (const Json& study : odd) {
    for (auto format : {ReportFormat::kText, ReportFormat::kJson, ReportFormat::kHtml}) {
      EXPECT_FALSE(RenderRetentionReport(study, format, kNow).empty());
    }
    EXPECT_FALSE(RenderRetentionList({study}, kNow).empty());
  }
}

TEST(RetentionReportTest, List) {
  EXPECT_EQ(RenderRetentionList({}, kNow), "no retention studies\n");
  const std::string list = RenderRetentionList(
      {Load("clean"), Load("bad_blocks"), Load("writing"), Load("unknown_temperature")}, kNow);
  std::vector<std::string> lines;
  std::stringstream ss(list);
  for (std::string line; std::getline(ss, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 5u) << list;
  EXPECT_EQ(lines[0].rfind("STUDY", 0), 0u);
  // Aligned: every column starts at the same place on every line.
  const auto serial_col = lines[0].find("SERIAL");
  EXPECT_EQ(lines[1].find("S64DNX0R123456"), serial_col);
  EXPECT_EQ(lines[2].find("S64DNX0R654321"), serial_col);
  EXPECT_NE(lines[1].find("lab-q4"), std::string::npos);
  EXPECT_NE(lines[1].find("1 GiB"), std::string::npos);
  EXPECT_NE(lines[1].find("2026-09-21 14:23"), std::string::npos);
  EXPECT_NE(lines[1].find("62.5 days"), std::string::npos);   // age now
  EXPECT_NE(lines[1].find("2026-11-21 14:06"), std::string::npos);  // last verify
  EXPECT_EQ(lines[2].substr(lines[2].size() - 2), "11");      // bad blocks
  EXPECT_NE(lines[2].find("6.0 years"), std::string::npos);   // equivalent age
  EXPECT_NE(lines[3].find("writing"), std::string::npos);
  EXPECT_EQ(lines[3].back(), '-');
}

}  // namespace
}  // namespace drivewatch::aging
