// SPDX-License-Identifier: Apache-2.0
// `drivewatch report` (aging/report/drive_report.h) over the recorded histories of
// tests/fixtures/report (make_fixtures.py says what they hold): the text,
// markdown and JSON reports compared byte for byte with their goldens, and
// what the report must do with merged, damaged, partial and empty
// histories and with values that cannot be trusted.
//
// Regenerate the goldens after an intended change, then read the diff:
//   DW_UPDATE_GOLDEN=1 build/tests/aging_test --gtest_filter='DriveReport*'
#include "aging/history/history.h"
#include "aging/report/drive_report.h"
#include "aging/report/drive_report_detail.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "tests/common/file_text.h"

namespace drivewatch::aging {
namespace {

using drivewatch::testing::ReadFileText;
using drivewatch::testing::WriteFileText;

const std::string kDir = std::string(DW_FIXTURE_DIR) + "/report/";
constexpr double kGenerated = 1782864000;  // 2026-07-01
constexpr const char* kA = "BTEH2450031Z1P0D";
constexpr const char* kB = "S4GXNX0M305123";

// A fixture history, streamed from its file as `drivewatch report` reads it.
HistorySource History(const std::string& file) { return HistorySource::File(file, kDir + file); }

// A fixture history's records, to copy from.
std::vector<Json> Records(const std::string& file) {
  auto contents = HistoryFile(kDir + file).Read();
  EXPECT_TRUE(contents) << file << ": " << (contents ? "" : contents.error().message);
  return contents ? std::move(contents->records) : std::vector<Json>{};
}

HistorySource Held(const std::string& name, std::vector<Json> records) {
  HistoryContents contents;
  contents.records = std::move(records);
  return HistorySource::Held(name, std::move(contents));
}

StudyFile Study(const std::string& file) {
  return {file, ParseStudyRecord(ReadFileText(kDir + file), file, "")};
}

std::vector<StudyFile> Studies() {
  std::vector<StudyFile> out;
  out.push_back(Study("study-p41-lab.json"));
  out.push_back(Study("study-pm981-shelf.json"));
  return out;
}

Json Build(const std::vector<std::string>& files, DriveReportRequest request = {},
           bool studies = true) {
  std::vector<HistorySource> histories;
  for (const std::string& f : files) histories.push_back(History(f));
  request.generated = kGenerated;
  auto model = BuildDriveReport(histories, studies ? Studies() : std::vector<StudyFile>{}, request);
  EXPECT_TRUE(model) << (model ? "" : model.error().message);
  return model ? *model : Json();
}

DriveReportRequest WithBaseline() {
  DriveReportRequest r;
  r.baseline = kB;
  return r;
}

void Golden(const std::string& name, const std::string& got) {
  const std::string path = kDir + "golden/" + name;
  if (std::getenv("DW_UPDATE_GOLDEN") != nullptr) {
    WriteFileText(path, got);
    return;
  }
  const std::string want = ReadFileText(path);
  ASSERT_FALSE(want.empty()) << path << " is missing (see this file's header to regenerate it)";
  if (got == want) return;
  // The first differing line, to start from.
  std::size_t line = 1, at = 0;
  while (at < got.size() && at < want.size() && got[at] == want[at]) line += got[at++] == '\n';
  ADD_FAILURE() << name << " differs from its golden from line " << line
                << " (regenerate with DW_UPDATE_GOLDEN=1 if the change is intended)\n got: "
                << got.substr(got.rfind('\n', at) + 1, 200) << "\nwant: "
                << want.substr(want.rfind('\n', at) + 1, 200);
}

const Json* SectionOf(const Json& model, const std::string& drive, const std::string& id) {
  for (const Json& d : Items(*Find(model, "drives"))) {
    if (AsString(*Find(d, "drive")) != drive) continue;
    for (const Json& s : Items(*Find(d, "sections"))) {
      if (AsString(*Find(s, "id")) == id) return &s;
    }
  }
  return nullptr;
}

std::string RunOf(const Json& section, const std::string& label) {
  for (const Json& r : Items(*Find(section, "runs"))) {
    if (AsString(*Find(r, "label")) == label) {
      return Find(r, "run")->is_null() ? "" : AsString(*Find(*Find(r, "run"), "id"));
    }
  }
  return "?";
}

const Json* Cell(const Json& section, const std::string& table, const std::string& row,
                 const std::string& key) {
  for (const Json& t : Items(*Find(section, "tables"))) {
    if (AsString(*Find(t, "id")) != table) continue;
    for (const Json& r : Items(*Find(t, "rows"))) {
      if (AsString(*Find(r, "label")) == row) return Find(*Find(r, "values"), key);
    }
  }
  return nullptr;
}

std::string MarkOf(const Json& section, const std::string& table, const std::string& row,
                   const std::string& key) {
  for (const Json& t : Items(*Find(section, "tables"))) {
    if (AsString(*Find(t, "id")) != table) continue;
    for (const Json& r : Items(*Find(t, "rows"))) {
      if (AsString(*Find(r, "label")) != row) continue;
      const Json* m = Find(*Find(r, "marks"), key);
      return m ? AsString(*m) : "";
    }
  }
  return "?";
}

std::string VerdictOf(const Json& section) {
  return AsString(*Find(*Find(section, "verdict"), "status")) + ": " +
         AsString(*Find(*Find(section, "verdict"), "line"));
}

TEST(DriveReportTest, TwoHostsWithABaselineMatchTheGoldens) {
  const Json model = Build({"host-a.dwh", "host-b.dwh"}, WithBaseline());
  Golden("report.txt", RenderDriveReport(model, DriveReportFormat::kText));
  Golden("report.md", RenderDriveReport(model, DriveReportFormat::kMarkdown));
  Golden("report.json", RenderDriveReport(model, DriveReportFormat::kJson));
  // The JSON is the model, and parses back to it.
  auto parsed = ParseJson(RenderDriveReport(model, DriveReportFormat::kJson));
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(*parsed, model);
}

TEST(DriveReportTest, FreshIsTheFirstCompleteRunAgedTheLatestBaselineTheOtherDrivesLatest) {
  const Json model = Build({"host-a.dwh", "host-b.dwh"}, WithBaseline());
  ASSERT_EQ(Items(*Find(model, "drives")).size(), 1u) << "the baseline is not a drive of its own";
  const Json* fill = SectionOf(model, kA, "fill_50");
  ASSERT_NE(fill, nullptr);
  EXPECT_EQ(RunOf(*fill, "fresh"), "fill-half-20260105T050000.000Z");
  // The aborted fill of January 7 is on record, but not complete.
  EXPECT_EQ(RunOf(*fill, "aged"), "fill-half-20260601T050000.000Z");
  EXPECT_EQ(RunOf(*fill, "baseline"), "fill-half-20260504T050000.000Z");
  EXPECT_DOUBLE_EQ(AsDouble(*Cell(*fill, "fill", "fresh", "slc_cache_bytes")), 98426140000);
  // Each run's age: from its drive_at_start.
  const Json& aged = Items(*Find(*fill, "runs"))[1];
  EXPECT_EQ(AsUint(*Find(*Find(*Find(aged, "run"), "age"), "power_on_hours")), 3952u);
  EXPECT_EQ(AsUint(*Find(*Find(*Find(aged, "run"), "age"), "percentage_used")), 2u);
}

TEST(DriveReportTest, EveryTableIsFreshAgedBaselineAndEverySectionEndsWithAVerdict) {
  const Json model = Build({"host-a.dwh", "host-b.dwh"}, WithBaseline());
  for (const Json& s : Items(*Find(Items(*Find(model, "drives"))[0], "sections"))) {
    const std::string id = AsString(*Find(s, "id"));
    EXPECT_FALSE(AsString(*Find(s, "expectation")).empty()) << id;
    EXPECT_FALSE(AsString(*Find(*Find(s, "verdict"), "line")).empty()) << id;
    if (id.rfind("retention", 0) == 0) continue;  // a row per read of the study
    std::vector<std::string> labels;
    for (const Json& r : Items(*Find(s, "runs"))) labels.push_back(AsString(*Find(r, "label")));
    EXPECT_EQ(labels, (std::vector<std::string>{"fresh", "aged", "baseline"})) << id;
  }
  EXPECT_EQ(VerdictOf(*SectionOf(model, kA, "low_load_latency_fill_50")),
            "pass: no latency over 300 ms (the worst: 10 IOPS p99.9 (aged) 26.1 ms)");
  EXPECT_EQ(VerdictOf(*SectionOf(model, kA, "perf_fill_50")),
            "fail: aged fell below 80 % of fresh: seq write 128K 72%, rand write 4K 62%");
  EXPECT_EQ(VerdictOf(*SectionOf(model, kA, "trim")),
            "pass: trim efficiency 23.17\xc3\x97 (aged): writing is faster after the deallocate");
  EXPECT_EQ(VerdictOf(*SectionOf(model, kA, "retention_p41-lab")),
            "pass: every block intact, no read over 100 ms after 61.0 days");
  EXPECT_EQ(VerdictOf(*SectionOf(model, kA, "fill_50")),
            "info: SLC cache found: fresh 98.4 GB, then 128 MB/s; aged 62.4 GB, then 110 MB/s");
}

TEST(DriveReportTest, TheSameRunFromTwoHistoriesCountsOnce) {
  const Json model = Build({"host-a.dwh", "host-b.dwh"}, WithBaseline());
  const auto& sources = Items(*Find(model, "sources"));
  EXPECT_EQ(AsUint(*Find(sources[1], "duplicates")), 2u);
  // Host B's copy of host A's first record is not a second run of it.
  const Json* fill10 = SectionOf(model, kA, "fill_10");
  EXPECT_EQ(RunOf(*fill10, "fresh"), "fill-10-20260105T030000.000Z");
  EXPECT_EQ(RunOf(*fill10, "aged"), "fill-10-20260601T030000.000Z");
  // Read the other way round, the copy is taken from the file read first,
  // and the run is still there once.
  const Json swapped = Build({"host-b.dwh", "host-a.dwh"}, WithBaseline());
  EXPECT_EQ(AsUint(*Find(Items(*Find(swapped, "sources"))[1], "duplicates")), 2u);
  const Json* again = SectionOf(swapped, kA, "fill_10");
  EXPECT_EQ(RunOf(*again, "fresh"), "fill-10-20260105T030000.000Z");
  EXPECT_EQ(AsString(*Find(*Find(Items(*Find(*again, "runs"))[0], "run"), "source")), "host-b.dwh");
}

TEST(DriveReportTest, PerfCellsFromTheMatrixAndFromBeforeItShareTheirTables) {
  const Json model = Build({"host-a.dwh", "host-b.dwh"}, WithBaseline());
  // Fresh was recorded before the perf matrix (fixed keys), aged with
  // series.cells: one table.
  const Json* perf = SectionOf(model, kA, "perf_fill_50");
  EXPECT_EQ(RunOf(*perf, "fresh"), "perf-half-20260105T061000.000Z");
  EXPECT_EQ(RunOf(*perf, "aged"), "perf-half-20260601T061000.000Z");
  EXPECT_DOUBLE_EQ(AsDouble(*Cell(*perf, "throughput", "fresh", "seq_read_bytes_per_second")),
                   3870e6);
  // The Phoronix preset is a table of its own, its not-steady cell marked.
  const Json* phoronix = SectionOf(model, kA, "perf_fill_50_phoronix");
  ASSERT_NE(phoronix, nullptr);
  EXPECT_TRUE(Cell(*phoronix, "throughput", "baseline", "seqread_2m_qd8_bytes_per_second")->is_null())
      << "the baseline drive never ran the preset: not measured, not 0";
  EXPECT_NE(RenderDriveReport(model, DriveReportFormat::kText).find("318 \xe2\x80\xa0"),
            std::string::npos);
  // The QD1 cells of both kinds of runs: legacy p99.9 keys read as the
  // cell's own.
  const Json* qd1 = SectionOf(model, kA, "qd1_latency_fill_50");
  ASSERT_NE(qd1, nullptr);
  EXPECT_NE(Cell(*qd1, "latency", "fresh", "qd1_rand_read_read_p99_9_seconds"), nullptr);
  EXPECT_FALSE(Cell(*qd1, "latency", "fresh", "qd1_rand_read_read_p99_9_seconds")->is_null());
  EXPECT_FALSE(Cell(*qd1, "latency", "aged", "qd1_rand_read_read_p99_9_seconds")->is_null());
}

// Latency depends on how full the drive is: a row of a QD1, low-load or
// mixed table never comes from another fill level than its section's (the
// fresh 10 % run was once laid beside the aged 50 % one).
TEST(DriveReportTest, LatencyTablesCompareRunsAtOneFillLevel) {
  const Json model = Build({"host-a.dwh", "host-b.dwh"}, WithBaseline());
  const struct {
    const char* id;
    const char* fresh;
    const char* aged;
  } want[] = {
      {"qd1_latency_fill_10", "perf-10-20260105T040000.000Z", "perf-10-20260601T040000.000Z"},
      {"qd1_latency_fill_50", "perf-half-20260105T061000.000Z", "perf-half-20260601T061000.000Z"},
      {"mixed_fill_10", "perf-10-20260105T040000.000Z", "perf-10-20260601T040000.000Z"},
      {"mixed_fill_50", "perf-half-20260105T061000.000Z", "perf-half-20260601T061000.000Z"},
  };
  for (const auto& w : want) {
    const Json* s = SectionOf(model, kA, w.id);
    ASSERT_NE(s, nullptr) << w.id;
    EXPECT_EQ(RunOf(*s, "fresh"), w.fresh) << w.id;
    EXPECT_EQ(RunOf(*s, "aged"), w.aged) << w.id;
    const std::string level = std::string(w.id).substr(std::string(w.id).rfind('_') + 1);
    EXPECT_NE(AsString(*Find(*s, "title")).find("at " + level + " % fill"), std::string::npos)
        << AsString(*Find(*s, "title"));
  }
  EXPECT_EQ(SectionOf(model, kA, "qd1_latency"), nullptr) << "no section mixes fill levels";
  EXPECT_EQ(SectionOf(model, kA, "mixed"), nullptr);
}

// A replay's recorded span (5,400 s in the aged run) is a time, not a
// latency: only the operations' quantiles are judged against 300 ms. The
// table shows what docs/report.md promises, and its latencies are one table
// per operation, so none is wider than the page.
TEST(DriveReportTest, AReplaysSpanIsNoLatencyAndItsTableHasEveryPromisedColumn) {
  const Json model = Build({"host-a.dwh", "host-b.dwh"}, WithBaseline());
  const Json* replay = SectionOf(model, kA, "replay");
  ASSERT_NE(replay, nullptr);
  EXPECT_EQ(AsString(*Find(*Find(*replay, "verdict"), "status")), "pass") << VerdictOf(*replay);
  EXPECT_NE(VerdictOf(*replay).find("no latency over 300 ms"), std::string::npos);
  EXPECT_DOUBLE_EQ(AsDouble(*Cell(*replay, "replay", "aged", "recorded_span_seconds")), 5400);
  EXPECT_DOUBLE_EQ(AsDouble(*Cell(*replay, "replay", "aged", "late_ios")), 1204);
  EXPECT_DOUBLE_EQ(AsDouble(*Cell(*replay, "replay", "aged", "replayed_ios")), 9871000);
  EXPECT_GT(AsDouble(*Cell(*replay, "replay", "aged", "replay_bytes_per_second")), 0);
  // An older record's bytes_per_second and iops fill the same columns.
  EXPECT_GT(AsDouble(*Cell(*replay, "replay", "fresh", "replay_bytes_per_second")), 0);
  EXPECT_GT(AsDouble(*Cell(*replay, "replay", "fresh", "replay_iops")), 0);
  EXPECT_DOUBLE_EQ(AsDouble(*Cell(*replay, "replay_read", "aged", "read_p99_9_seconds")), 0.0051);
  std::vector<std::string> tables;
  for (const Json& t : Items(*Find(*replay, "tables"))) tables.push_back(AsString(*Find(t, "id")));
  EXPECT_EQ(tables, (std::vector<std::string>{"replay", "replay_read", "replay_write"}))
      << "no trim table: no run trimmed";
}

// A percentile shows its sample count, and one whose tail rests on fewer
// than 10 samples is marked indicative: 600 reads at 10 IOPS make neither a
// p99 (6 beyond it) nor a p99.9; 6,000 at 100 IOPS make a p99 (60) but
// not a p99.9 (6).
TEST(DriveReportTest, APercentileShowsItsSampleCountAndATailOnFewSamplesIsIndicative) {
  EXPECT_EQ(drive_report_detail::TailMark(10000, 0.999), "");
  EXPECT_EQ(drive_report_detail::TailMark(9999, 0.999), "indicative");
  EXPECT_EQ(drive_report_detail::TailMark(1000, 0.99), "");
  EXPECT_EQ(drive_report_detail::TailMark(999, 0.99), "indicative");
  EXPECT_EQ(drive_report_detail::TailMark(20, 0.5), "");
  EXPECT_EQ(drive_report_detail::TailMark(19, 0.5), "indicative");
  EXPECT_EQ(drive_report_detail::TailMark(std::nullopt, 0.999), "") << "n not on record";

  const Json model = Build({"host-a.dwh", "host-b.dwh"}, WithBaseline());
  const Json* low = SectionOf(model, kA, "low_load_latency_fill_50");
  ASSERT_NE(low, nullptr);
  const std::string at10 = "randread_4k_10iops_read_", at100 = "randread_4k_100iops_read_";
  EXPECT_DOUBLE_EQ(AsDouble(*Cell(*low, "latency", "aged", at10 + "ios")), 600);
  EXPECT_EQ(MarkOf(*low, "latency", "aged", at10 + "p50_seconds"), "");
  EXPECT_EQ(MarkOf(*low, "latency", "aged", at10 + "p99_seconds"), "indicative");
  EXPECT_EQ(MarkOf(*low, "latency", "aged", at10 + "p99_9_seconds"), "indicative");
  EXPECT_DOUBLE_EQ(AsDouble(*Cell(*low, "latency", "aged", at100 + "ios")), 6000);
  EXPECT_EQ(MarkOf(*low, "latency", "aged", at100 + "p99_seconds"), "");
  EXPECT_EQ(MarkOf(*low, "latency", "aged", at100 + "p99_9_seconds"), "indicative");
  bool noted = false;
  for (const Json& n : Items(*Find(*low, "notes"))) {
    noted = noted || AsString(n).find("indicative") != std::string::npos;
  }
  EXPECT_TRUE(noted) << DumpJson(*Find(*low, "notes"));
  const std::string text = RenderDriveReport(model, DriveReportFormat::kText);
  EXPECT_NE(text.find("10 IOPS p99.9 (ms)   \xe2\x89\x88 24.5"), std::string::npos);
  // Records from before the counts: no n, no mark (the legacy QD1 cells).
  const Json* qd1 = SectionOf(model, kA, "qd1_latency_fill_50");
  ASSERT_NE(qd1, nullptr);
  EXPECT_TRUE(Cell(*qd1, "latency", "fresh", "qd1_rand_read_read_ios")->is_null());
  EXPECT_EQ(MarkOf(*qd1, "latency", "fresh", "qd1_rand_read_read_p99_9_seconds"), "");
}

// An endurance test stopped before its first full pass (max_duration cut
// each run short) still shows what it wrote, from its latest run, rather
// than "not measured".
TEST(DriveReportTest, AnEnduranceTestWithoutAFullPassShowsWhereItIs) {
  const std::vector<Json> records = Records("host-a.dwh");
  const Json* model_record = nullptr;
  for (const Json& r : records) {
    if (IsRunRecord(r) && Find(r, "kind") && AsString(*Find(r, "kind")) == "endurance") {
      model_record = &r;
    }
  }
  ASSERT_NE(model_record, nullptr) << "the fixture has an endurance run to copy";
  Json run = *model_record;
  run["serial"] = "PARTIAL1";
  run["run"] = "wear-20260701T000000.000Z";
  run["outcome"] = "aborted";
  run["reason"] = "max_duration 1h reached";
  run["results"] = Json::object();
  run["results"]["host_written_bytes"] = std::uint64_t{768} << 20;
  run["results"]["run_written_bytes"] = std::uint64_t{768} << 20;
  run["results"]["drive_writes_ratio"] = 0.75;
  run["results"]["target_progress_ratio"] = 0.375;
  run["series"] = Json::object();
  HistorySource partial = Held("partial-endurance.dwh", {run});
  DriveReportRequest request;
  request.drives = {"PARTIAL1"};
  request.generated = kGenerated;
  auto model = BuildDriveReport({partial}, {}, request);
  ASSERT_TRUE(model) << model.error().message;
  const Json* section = SectionOf(*model, "PARTIAL1", "endurance");
  ASSERT_NE(section, nullptr);
  EXPECT_EQ(VerdictOf(*section),
            "info: the test is under way, no full pass yet: 0.805 GB written (0.75 drive "
            "writes), 38 % of the way to its end");
  EXPECT_DOUBLE_EQ(AsDouble(*Cell(*section, "endurance_progress", "wear-20260701T000000.000Z",
                                  "host_written_bytes")),
                   768.0 * 1048576);
  EXPECT_EQ(AsString(*Cell(*section, "endurance_progress", "wear-20260701T000000.000Z", "outcome")),
            "aborted");
}

// A one-second fill still draws: its sample is a point on the chart, and
// data written comes from bytes (each sample's rate times its own length),
// not from counting seconds; a record from before the lengths were kept
// holds the total to its written_bytes, since its last sample was a part
// of a second.
TEST(DriveReportTest, AShortFillDrawsItsPointsAndDataWrittenComesFromBytes) {
  const std::vector<Json> records = Records("host-a.dwh");
  const Json* fill = nullptr;
  for (const Json& r : records) {
    if (IsRunRecord(r) && AsString(*Find(r, "kind")) == "fill" &&
        AsString(*Find(r, "outcome")) == "completed" && !fill) {
      fill = &r;
    }
  }
  ASSERT_NE(fill, nullptr);
  const auto make = [&](const std::string& serial, std::vector<double> bps,
                        std::vector<double> seconds, double written) {
    Json run = *fill;
    run["serial"] = serial;
    run["run"] = "fill-short-20260701T000000.000Z";
    Json results = Json::object();
    results["written_bytes"] = written;
    results["fill_ratio"] = 0.5;
    results["slc_cache_lower_bound_bytes"] = written;  // no cache found in so little
    run["results"] = results;
    Json series = Json::object();
    series["throughput_bytes_per_second"] = Json::array();
    for (double b : bps) series["throughput_bytes_per_second"].push_back(b);
    if (!seconds.empty()) {
      series["throughput_seconds"] = Json::array();
      for (double t : seconds) series["throughput_seconds"].push_back(t);
    }
    run["series"] = series;
    return run;
  };
  // 0.6 s at 2 GB/s: one sample, 1.2 GB; and, recorded before the
  // lengths, three samples of 1 GB/s, the last one over half a second:
  // 2.5 GB in all, not 3.
  HistorySource h = Held("short.dwh", {make("SHORT1", {2e9}, {0.6}, 1.2e9),
                                       make("OLDER1", {1e9, 1e9, 1e9}, {}, 2.5e9)});
  DriveReportRequest request;
  request.drives = {"SHORT1", "OLDER1"};
  request.generated = kGenerated;
  auto model = BuildDriveReport({h}, {}, request);
  ASSERT_TRUE(model) << model.error().message;
  const auto chart = [&](const std::string& drive, const std::string& id) -> const Json* {
    const Json* section = SectionOf(*model, drive, "fill_50");
    if (section == nullptr) return nullptr;
    for (const Json& c : Items(*Find(*section, "charts"))) {
      if (AsString(*Find(c, "id")) == id) return &c;
    }
    return nullptr;
  };
  const Json* short_bytes = chart("SHORT1", "fill_50_bytes");
  ASSERT_NE(short_bytes, nullptr) << "a one-sample fill has its chart";
  const auto& points = Items(*Find(Items(*Find(*short_bytes, "series"))[0], "points"));
  ASSERT_EQ(points.size(), 1u);
  EXPECT_DOUBLE_EQ(AsDouble(Items(points[0])[0]), 1.2);  // GB, from bytes
  EXPECT_DOUBLE_EQ(AsDouble(Items(points[0])[1]), 2000);  // MB/s
  const Json* older = chart("OLDER1", "fill_50_bytes");
  ASSERT_NE(older, nullptr);
  const Json& last = Items(*Find(Items(*Find(*older, "series"))[0], "points")).back();
  EXPECT_DOUBLE_EQ(AsDouble(Items(last)[0]), 2.5);
  const std::string html = RenderDriveReport(*model, DriveReportFormat::kHtml);
  EXPECT_NE(html.find("<circle class=\"point\" data-series=\"fresh\""), std::string::npos)
      << "the short fill's sample is drawn as a point";
}

// Low-load latency is shown both ways: response (from when each read was
// due, what the verdict judges) and service (from the submission, as fio
// times, to lay beside fio), each named so.
TEST(DriveReportTest, LowLoadLatencyIsShownAsResponseAndAsService) {
  const Json model = Build({"host-a.dwh", "host-b.dwh"}, WithBaseline());
  const Json* low = SectionOf(model, kA, "low_load_latency_fill_50");
  ASSERT_NE(low, nullptr);
  const auto& tables = Items(*Find(*low, "tables"));
  ASSERT_EQ(tables.size(), 2u);
  EXPECT_NE(
      AsString(*Find(tables[0], "title")).find("response latency, from when each read was due"),
      std::string::npos);
  EXPECT_NE(AsString(*Find(tables[1], "title")).find("service latency, from submission"),
            std::string::npos);
  const Json* response = Cell(*low, "latency", "aged", "randread_4k_10iops_read_p99_9_seconds");
  const Json* service =
      Cell(*low, "service_latency", "aged", "randread_4k_10iops_read_service_p99_9_seconds");
  ASSERT_NE(service, nullptr);
  EXPECT_LT(AsDouble(*service), AsDouble(*response));
  EXPECT_EQ(MarkOf(*low, "service_latency", "aged", "randread_4k_10iops_read_service_p99_9_seconds"),
            "indicative");
}

TEST(DriveReportTest, ADamagedRecordIsReportedAsDamagedNeverAsAResult) {
  const Json model = Build({"damaged.dwh"}, {}, false);
  const Json& source = Items(*Find(model, "sources"))[0];
  ASSERT_EQ(Items(*Find(source, "damaged")).size(), 1u);
  EXPECT_NE(AsString(Items(*Find(source, "damaged"))[0]).find("checksum"), std::string::npos)
      << DumpJson(source);
  // The aged reclaim record was the damaged one: the fresh run is the only
  // one left.
  const Json* reclaim = SectionOf(model, kA, "reclaim");
  EXPECT_EQ(RunOf(*reclaim, "fresh"), "reclaim-20260105T090000.000Z");
  EXPECT_EQ(RunOf(*reclaim, "aged"), "");
  EXPECT_EQ(RenderDriveReport(model, DriveReportFormat::kText).find("reclaim-20260601"),
            std::string::npos);
  const std::string text = RenderDriveReport(model, DriveReportFormat::kText);
  EXPECT_NE(text.find("damaged, so left out (never a result):"), std::string::npos);
  Golden("damaged.txt", text);
}

TEST(DriveReportTest, AHistoryWithOnlySomeKindsSaysNotMeasuredForTheRest) {
  const Json model = Build({"partial.dwh"}, {}, false);
  EXPECT_EQ(AsString(*Find(*Find(*SectionOf(model, kA, "fill_50"), "verdict"), "status")), "info");
  EXPECT_EQ(AsString(*Find(*Find(*SectionOf(model, kA, "trim"), "verdict"), "status")), "pass");
  for (const char* id : {"reclaim", "perf_fill_10", "perf_fill_50", "qd1_latency",
                         "low_load_latency", "mixed", "replay", "low_power", "endurance",
                         "retention"}) {
    const Json* s = SectionOf(model, kA, id);
    ASSERT_NE(s, nullptr) << id;
    EXPECT_EQ(AsString(*Find(*Find(*s, "verdict"), "status")), "not_measured") << id;
    for (const Json& t : Items(*Find(*s, "tables"))) {
      for (const Json& r : Items(*Find(t, "rows"))) {
        for (const auto& [key, v] : Members(*Find(r, "values"))) {
          EXPECT_TRUE(v.is_null()) << id << " " << key << " = " << DumpJson(v);
        }
      }
    }
  }
  const std::string text = RenderDriveReport(model, DriveReportFormat::kText);
  EXPECT_NE(text.find("Replay of a recorded workload: not measured"), std::string::npos);
  Golden("partial.txt", text);
}

TEST(DriveReportTest, AnEmptyHistoryIsAClearReport) {
  const Json model = Build({"empty.dwh"}, {}, false);
  EXPECT_TRUE(Items(*Find(model, "drives")).empty());
  const std::string text = RenderDriveReport(model, DriveReportFormat::kText);
  EXPECT_NE(text.find("The history holds no runs: nothing to report."), std::string::npos);
  Golden("empty.txt", text);
  const std::string html = RenderDriveReport(model, DriveReportFormat::kHtml);
  EXPECT_NE(html.find("nothing to report"), std::string::npos);
  DriveReportRequest r;
  r.drives = {kA};
  std::vector<HistorySource> h = {History("empty.dwh")};
  auto refused = BuildDriveReport(h, {}, r);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message,
            "--drive BTEH2450031Z1P0D: no run of that drive on record (drives on record: none: "
            "the history holds no runs)");
}

TEST(DriveReportTest, ValuesThatCannotBeTrustedAreLeftOutAndSaid) {
  const Json model = Build({"host-a.dwh", "host-b.dwh"}, WithBaseline());
  const std::string problems = DumpJson(*Find(model, "problems"));
  EXPECT_NE(problems.find("write_p99_9_seconds is -0.5 (expected a number, 0 or more): left out"),
            std::string::npos);
  EXPECT_NE(problems.find("drive_at_start.percentage_used is 300 (expected a whole number from 0 "
                          "to 255): its age is shown as unknown"),
            std::string::npos);
}

TEST(DriveReportTest, RunsPicksOtherRowsByRunId) {
  DriveReportRequest r = WithBaseline();
  r.runs = {"first", "perf-phoronix-20260601T070000.000Z"};
  const Json model = Build({"host-a.dwh", "host-b.dwh"}, r);
  const Json* phoronix = SectionOf(model, kA, "perf_fill_50_phoronix");
  EXPECT_EQ(RunOf(*phoronix, "perf-phoronix-20260601T070000.000Z"),
            "perf-phoronix-20260601T070000.000Z");
  // A run id is a row only in the tables of its measure.
  EXPECT_EQ(RunOf(*SectionOf(model, kA, "trim"), "perf-phoronix-20260601T070000.000Z"), "?");
  // The latest alone: one row, still judged.
  r.runs = {"latest"};
  const Json latest = Build({"host-a.dwh"}, r);
  const Json* identity = SectionOf(latest, kA, "identity");
  EXPECT_EQ(Items(*Find(*identity, "runs")).size(), 2u);  // aged, baseline
  EXPECT_EQ(VerdictOf(*identity), "info: firmware 002C");
}

TEST(DriveReportTest, ARequestForWhatIsNotOnRecordIsRefusedAndSaysWhatIs) {
  std::vector<HistorySource> h = {History("host-a.dwh"), History("host-b.dwh")};
  DriveReportRequest r;
  r.drives = {"NOSUCH"};
  auto e = BuildDriveReport(h, {}, r);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().message,
            "--drive NOSUCH: no run of that drive on record (drives on record: BTEH2450031Z1P0D, "
            "S4GXNX0M305123)");
  r = {};
  r.baseline = "NOSUCH";
  EXPECT_FALSE(BuildDriveReport(h, {}, r));
  r = {};
  r.runs = {"fill-20990101T000000.000Z"};
  e = BuildDriveReport(h, {}, r);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().message,
            "--runs fill-20990101T000000.000Z: no run with that id of the drives reported on "
            "(expected first, latest or a run id as drivewatch history --format=json shows it)");
}

TEST(DriveReportTest, HtmlIsSelfContainedAndEscapesWhatTheHistoryHolds) {
  const Json model = Build({"host-a.dwh", "host-b.dwh"}, WithBaseline());
  const std::string html = RenderDriveReport(model, DriveReportFormat::kHtml);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(html.find("href=\"retention-p41-lab.html\""), std::string::npos);
  // A model name from a history is text, never markup.
  Json evil = model;
  Json drives = Json::array();
  for (Json d : Items(*Find(model, "drives"))) {
    d["model"] = "<img src=x onerror=alert(1)>";
    drives.push_back(d);
  }
  evil["drives"] = drives;
  const std::string escaped = RenderDriveReport(evil, DriveReportFormat::kHtml);
  EXPECT_EQ(escaped.find("<img"), std::string::npos);
  EXPECT_NE(escaped.find("&lt;img src=x onerror=alert(1)&gt;"), std::string::npos);
}

// A history of years streams through the report: of the runs alike in
// everything a section picks rows by, only the first and the latest are
// kept, and the passes beyond the latest kPassRows are counted, not held.
// The history here is the fixture three times over: once a year early,
// 100 times in the middle, once a year late. The middle can change no
// row: every section but endurance's (whose list counts the passes) is
// the same with it as without it, and the same runs are kept.
Json Shifted(const Json& record, double by, const std::string& suffix) {
  Json r = record;
  r["run"] = AsString(*Find(r, "run")) + suffix;
  for (const char* key : {"start", "end", "time"}) {
    if (const Json* t = Find(r, key)) r[key] = AsDouble(*t) + by;
  }
  if (IsStepRecord(r)) r["test"] = AsString(*Find(r, "test")) + suffix;
  return r;
}

TEST(DriveReportTest, AHistoryOfThousandsOfRunsKeepsOnlyTheRowsItCanShow) {
  const std::vector<Json> fixture = Records("host-a.dwh");
  constexpr double kYear = 365.0 * 86400;
  constexpr int kMiddle = 100;
  std::vector<Json> ends, all;
  for (const Json& r : fixture) ends.push_back(Shifted(r, -kYear, "-early"));
  all = ends;
  for (int k = 1; k <= kMiddle; ++k) {
    for (const Json& r : fixture) {
      all.push_back(Shifted(r, k * (kYear / (kMiddle + 1)) - kYear / 2, "-mid" + std::to_string(k)));
    }
  }
  for (const Json& r : fixture) {
    ends.push_back(Shifted(r, kYear, "-late"));
    all.push_back(ends.back());
  }
  std::size_t fixture_steps = 0;
  for (const Json& r : fixture) fixture_steps += IsStepRecord(r) ? 1 : 0;
  ASSERT_GT(fixture_steps, 1u) << "the fixture has endurance passes";

  const auto with_ends = drive_report_detail::ReadInputs({Held("ends.dwh", ends)}, {}, {});
  const auto with_all = drive_report_detail::ReadInputs({Held("all.dwh", all)}, {}, {});
  ASSERT_TRUE(with_ends && with_all);
  // Kept: the same runs, whatever the middle holds.
  EXPECT_EQ(with_all->runs.size(), with_ends->runs.size());
  EXPECT_LT(with_all->runs.size(), 2 * fixture.size());
  // The passes: every one counted, the latest kPassRows and the first kept.
  const std::uint64_t passes = (kMiddle + 2) * fixture_steps;
  ASSERT_TRUE(with_all->step_totals.count(kA));
  EXPECT_EQ(with_all->step_totals.at(kA).count, passes);
  EXPECT_FALSE(with_all->step_totals.at(kA).one_test);
  EXPECT_LE(with_all->steps.size(), drive_report_detail::kPassRows + 1);
  EXPECT_EQ(with_all->steps.front().run.substr(with_all->steps.front().run.size() - 6), "-early");
  EXPECT_EQ(with_all->steps.back().run.substr(with_all->steps.back().run.size() - 5), "-late");

  DriveReportRequest request;
  request.drives = {kA};
  request.generated = kGenerated;
  auto small = BuildDriveReport({Held("h.dwh", ends)}, {}, request);
  auto large = BuildDriveReport({Held("h.dwh", all)}, {}, request);
  ASSERT_TRUE(small && large);
  const auto& small_sections = Items(*Find(Items(*Find(*small, "drives")).at(0), "sections"));
  const auto& large_sections = Items(*Find(Items(*Find(*large, "drives")).at(0), "sections"));
  ASSERT_EQ(small_sections.size(), large_sections.size());
  std::size_t rows = 0;
  for (std::size_t i = 0; i < small_sections.size(); ++i) {
    const std::string id = AsString(*Find(small_sections[i], "id"));
    // Fresh is a run of the early year, aged one of the late year.
    for (const Json& row : Items(*Find(large_sections[i], "runs"))) {
      if (Find(row, "run")->is_null()) continue;
      const std::string run = AsString(*Find(*Find(row, "run"), "id"));
      const std::string label = AsString(*Find(row, "label"));
      const std::string want = label == "fresh" ? "-early" : "-late";
      EXPECT_EQ(run.substr(run.size() - std::min(run.size(), want.size())), want)
          << "section " << id << ", row " << label;
      ++rows;
    }
    if (id == "endurance") continue;
    EXPECT_EQ(large_sections[i], small_sections[i]) << "section " << id;
  }
  EXPECT_GT(rows, 10u);
  const Json* endurance = SectionOf(*large, kA, "endurance");
  ASSERT_NE(endurance, nullptr);
  EXPECT_NE(DumpJson(*endurance).find("the first " +
                                   std::to_string(passes - drive_report_detail::kPassRows) +
                                   " passes are left out of the list"),
            std::string::npos);
  EXPECT_NE(VerdictOf(*endurance).find(std::to_string(passes) + " passes; the latest"),
            std::string::npos)
      << VerdictOf(*endurance);
  // The fresh row is the first pass of all, the aged one the last.
  EXPECT_EQ(RunOf(*endurance, "fresh").substr(RunOf(*endurance, "fresh").size() - 6), "-early");
  EXPECT_EQ(RunOf(*endurance, "aged").substr(RunOf(*endurance, "aged").size() - 5), "-late");
}

// A history with more bad values than a report lists counts the rest.
TEST(DriveReportTest, ProblemsBeyondTheListedAreCounted) {
  std::vector<Json> records;
  for (const Json& r : Records("host-a.dwh")) {
    if (!IsRunRecord(r) || AsString(*Find(r, "kind")) != "trim") continue;
    for (std::size_t k = 0; k < drive_report_detail::kMaxProblemsListed + 10; ++k) {
      Json bad = Shifted(r, static_cast<double>(k), "-" + std::to_string(k));
      bad["results"]["write_before_trim_bytes_per_second"] = -1.0;
      records.push_back(std::move(bad));
    }
    break;
  }
  ASSERT_FALSE(records.empty());
  DriveReportRequest request;
  request.generated = kGenerated;
  auto model = BuildDriveReport({Held("bad.dwh", records)}, {}, request);
  ASSERT_TRUE(model) << model.error().message;
  const auto& problems = Items(*Find(*model, "problems"));
  ASSERT_EQ(problems.size(), drive_report_detail::kMaxProblemsListed + 1);
  EXPECT_EQ(AsString(problems.back()), "and 10 more values left out, not listed");
}

// A perf cell judged over its runs: a drop below 80 % of fresh is a loss
// only when it is larger than twice the combined standard error of the
// two means; inside that it is noise, and the verdict says so.
TEST(DriveReportTest, APerfDropWithinTheRunsNoiseIsNotALoss) {
  auto run = [](const std::string& id, double start, double iops, double se) {
    Json r = Json::object();
    r["run"] = id;
    r["phase"] = "perf-half";
    r["kind"] = "perf";
    r["target"] = "nvme";
    r["serial"] = "NOISY1";
    r["start"] = start;
    r["end"] = start + 60;
    r["outcome"] = "completed";
    r["results"] = Json::object();
    r["results"]["fill_ratio"] = 0.5;
    r["results"]["rand_read_4k_iops"] = iops;
    r["results"]["rand_read_4k_iops_se"] = se;
    r["results"]["rand_read_4k_runs"] = 3;
    return r;
  };
  DriveReportRequest request;
  request.generated = kGenerated;
  // 75 % of fresh, each mean ±10: the difference (25) is inside 2 × 14.1.
  auto noisy = BuildDriveReport(
      {Held("noisy.dwh", {run("perf-a", 1e9, 100e3, 10e3), run("perf-b", 1.1e9, 75e3, 10e3)})},
      {}, request);
  ASSERT_TRUE(noisy) << noisy.error().message;
  EXPECT_EQ(VerdictOf(*SectionOf(*noisy, "NOISY1", "perf_fill_50")),
            "pass: no loss beyond the runs' noise: below 80 % of fresh but within twice the "
            "combined standard error: rand read 4K 75% (noise \xc2\xb1" "28%)");
  const Json* se = Cell(*SectionOf(*noisy, "NOISY1", "perf_fill_50"), "throughput", "aged",
                        "rand_read_4k_iops_se");
  ASSERT_NE(se, nullptr);
  EXPECT_DOUBLE_EQ(AsDouble(*se), 10e3);
  // The same drop over steady runs (±1 %) is a loss.
  auto steady = BuildDriveReport(
      {Held("steady.dwh", {run("perf-a", 1e9, 100e3, 1e3), run("perf-b", 1.1e9, 75e3, 0.75e3)})},
      {}, request);
  ASSERT_TRUE(steady);
  EXPECT_EQ(VerdictOf(*SectionOf(*steady, "NOISY1", "perf_fill_50")),
            "fail: aged fell below 80 % of fresh, beyond the runs' noise: rand read 4K 75%");
}

}  // namespace
}  // namespace drivewatch::aging
