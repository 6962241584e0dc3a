// SPDX-License-Identifier: Apache-2.0
// Run and step records (aging/history/run_record.h): written from the
// structs, read back through the one reader that checks every field.
#include "aging/history/run_record.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "aging/history/history.h"

namespace drivewatch::aging {
namespace {

RunRecord SampleRun() {
  RunRecord r;
  r.id = "fill-20261130T030000.000Z";
  r.phase = "fill-half";
  r.kind = "fill";
  r.target = "scratch";
  r.serial = "S5GXNX0R123456";
  r.model = "Samsung SSD 980 PRO 1TB";
  r.firmware = "5B2QGXA7";
  r.device = "/dev/nvme0n1";
  r.start = 1796007600.25;
  r.end = 1796011320.5;
  r.duration_seconds = 3720.25;
  r.drive_at_start["time"] = 1796007600.0;
  r.drive_at_start["power_on_hours"] = 1234;
  r.outcome = "completed";
  r.reason = "";
  r.results["written_bytes"] = std::uint64_t{18446744073709551615u};
  r.results["fill_ratio"] = 0.5;
  r.series["throughput_bytes_per_second"].push_back(1.5e9);
  return r;
}

StepRecord SampleStep() {
  StepRecord s = StepRecord::Of(SampleRun());
  s.time = 1796011320.5;
  s.test = "endurance-1796000000";
  s.step = 7;
  s.results["waf_ratio"] = 1.07;
  return s;
}

std::string RunProblem(const std::function<void(Json&)>& change,
                       RecordFields fields = RecordFields::kAll) {
  Json j = SampleRun().ToJson();
  change(j);
  Expected<RunRecord> r = ReadRunRecord(j, fields);
  return r ? "" : r.error().message;
}

std::string StepProblem(const std::function<void(Json&)>& change) {
  Json j = SampleStep().ToJson();
  change(j);
  Expected<StepRecord> s = ReadStepRecord(j);
  return s ? "" : s.error().message;
}

// `record` without `key`: members are kept in order, so it is rebuilt.
Json Without(const Json& record, std::string_view key) {
  Json out = Json::object();
  for (const auto& [k, v] : Members(record)) {
    if (k != key) out[k] = v;
  }
  return out;
}

TEST(RunRecordTest, WritesTheFieldsInTheirOrder) {
  EXPECT_EQ(DumpJson(SampleRun().ToJson()),
            R"({"version":1,"run":"fill-20261130T030000.000Z","phase":"fill-half",)"
            R"("kind":"fill","target":"scratch","serial":"S5GXNX0R123456",)"
            R"("model":"Samsung SSD 980 PRO 1TB","firmware":"5B2QGXA7",)"
            R"("device":"/dev/nvme0n1","start":1796007600.25,"end":1796011320.5,)"
            R"("duration_seconds":3720.25,)"
            R"("drive_at_start":{"time":1796007600.0,"power_on_hours":1234},)"
            R"("outcome":"completed","reason":"",)"
            R"("results":{"written_bytes":18446744073709551615,"fill_ratio":0.5},)"
            R"("series":{"throughput_bytes_per_second":[1.5e+09]}})");
}

TEST(RunRecordTest, RoundTripsThroughTheHistoryFraming) {
  const Json written = SampleRun().ToJson();
  // As a history holds it: framed, then parsed back.
  std::string framed = FramedRecord(written);
  framed = framed.substr(framed.find('{'));
  framed.pop_back();  // the newline
  Expected<Json> parsed = ParseJson(framed);
  ASSERT_TRUE(parsed) << parsed.error().message;
  ASSERT_TRUE(IsRunRecord(*parsed));
  Expected<RunRecord> back = ReadRunRecord(*parsed);
  ASSERT_TRUE(back) << back.error().message;
  const RunRecord want = SampleRun();
  EXPECT_EQ(back->version, 1u);
  EXPECT_EQ(back->id, want.id);
  EXPECT_EQ(back->phase, want.phase);
  EXPECT_EQ(back->kind, want.kind);
  EXPECT_EQ(back->target, want.target);
  EXPECT_EQ(back->serial, want.serial);
  EXPECT_EQ(back->model, want.model);
  EXPECT_EQ(back->firmware, want.firmware);
  EXPECT_EQ(back->device, want.device);
  EXPECT_EQ(back->start, want.start);
  EXPECT_EQ(back->end, want.end);
  EXPECT_EQ(back->duration_seconds, want.duration_seconds);
  EXPECT_EQ(back->drive_at_start, want.drive_at_start);
  EXPECT_EQ(back->outcome, want.outcome);
  EXPECT_EQ(back->reason, want.reason);
  EXPECT_EQ(back->results, want.results);
  // Exact past 2^53.
  EXPECT_EQ(AsUint(*Find(back->results, "written_bytes")), 18446744073709551615u);
  EXPECT_EQ(back->series, want.series);
  EXPECT_EQ(DumpJson(back->ToJson()), DumpJson(written));
  EXPECT_EQ(back->Drive(), "S5GXNX0R123456");
}

TEST(RunRecordTest, ADriveWithoutASerialIsItsTarget) {
  RunRecord r = SampleRun();
  r.serial = "";
  EXPECT_EQ(r.Drive(), "target:scratch");
  Expected<RunRecord> back = ReadRunRecord(r.ToJson());
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->Drive(), "target:scratch");
}

TEST(RunRecordTest, RefusesEachFieldThatIsWrong) {
  struct Case {
    std::function<void(Json&)> change;
    std::string problem;
  };
  const std::vector<Case> cases = {
      {[](Json& j) { j = Without(j, "run"); }, "run is missing (expected a string)"},
      {[](Json& j) { j["run"] = 7; }, "run is 7 (expected a string)"},
      {[](Json& j) { j["phase"] = Json(); }, "phase is null (expected a string)"},
      {[](Json& j) { j = Without(j, "kind"); }, "kind is missing (expected a string)"},
      {[](Json& j) { j["target"] = true; }, "target is true (expected a string)"},
      {[](Json& j) { j = Without(j, "serial"); }, "serial is missing (expected a string)"},
      {[](Json& j) { j["run"] = ""; }, "run is \"\" (expected the run's id)"},
      {[](Json& j) {
         j["serial"] = "";
         j["target"] = "";
       },
       "serial and target are both empty (expected the drive's serial or the target's name)"},
      {[](Json& j) { j["version"] = "1"; }, "version is \"1\" (expected a whole number)"},
      {[](Json& j) { j["version"] = 1.5; }, "version is 1.5 (expected a whole number)"},
      {[](Json& j) { j = Without(j, "start"); }, "start is missing (expected Unix seconds)"},
      {[](Json& j) { j["start"] = -1; }, "start is -1 (expected Unix seconds)"},
      {[](Json& j) { j["end"] = "soon"; }, "end is \"soon\" (expected Unix seconds)"},
      {[](Json& j) { j = Without(j, "outcome"); }, "outcome is missing (expected a string)"},
      {[](Json& j) { j["outcome"] = 0; }, "outcome is 0 (expected a string)"},
      {[](Json& j) { j["model"] = 980; }, "model is 980 (expected a string)"},
      {[](Json& j) { j["firmware"] = Json::array(); }, "firmware is [] (expected a string)"},
      {[](Json& j) { j["results"] = Json::array(); }, "results is [] (expected an object)"},
      {[](Json& j) { j["series"] = std::string(100, 'x'); },
       "series is \"" + std::string(39, 'x') + " (expected an object)"},
      {[](Json& j) { j["device"] = 0; }, "device is 0 (expected a string)"},
      {[](Json& j) { j["reason"] = Json(); }, "reason is null (expected a string)"},
      {[](Json& j) { j["duration_seconds"] = "1h"; },
       "duration_seconds is \"1h\" (expected a number)"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(RunProblem(c.change), c.problem);
  }
  Json j = SampleRun().ToJson();
  j["start"] = "x";
  Expected<RunRecord> r = ReadRunRecord(j);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().errnum, EBADMSG);
}

TEST(RunRecordTest, TheFirstWrongFieldIsTheOneSaid) {
  EXPECT_EQ(RunProblem([](Json& j) {
              j["results"] = 1;
              j["phase"] = 2;
            }),
            "phase is 2 (expected a string)");
}

TEST(RunRecordTest, AnOldRecordWithoutTheOptionalFieldsIsTaken) {
  Json j = SampleRun().ToJson();
  for (const char* key : {"version", "model", "firmware", "device", "duration_seconds",
                          "drive_at_start", "reason", "results", "series"}) {
    j = Without(j, key);
  }
  Expected<RunRecord> r = ReadRunRecord(j);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->version, kRecordVersion);
  EXPECT_EQ(r->model, "");
  EXPECT_EQ(r->device, "");
  EXPECT_FALSE(r->duration_seconds);
  EXPECT_TRUE(r->drive_at_start.is_null());
  EXPECT_EQ(r->results, Json::object());
  EXPECT_EQ(r->series, Json::object());
  // Written back, what was not there is as a run writes it now, and
  // drive_at_start and duration_seconds stay out.
  const Json back = r->ToJson();
  EXPECT_EQ(Find(back, "drive_at_start"), nullptr);
  EXPECT_EQ(Find(back, "duration_seconds"), nullptr);
  EXPECT_EQ(AsString(*Find(back, "model")), "");
}

TEST(RunRecordTest, WhatIsPresentChecksOnlyTheFieldsThere) {
  // A record recovered from an unreadable checkpoint.
  Expected<Json> j = ParseJson(
      R"({"version":1,"phase":"fill","outcome":"interrupted","reason":"unreadable"})");
  ASSERT_TRUE(j);
  EXPECT_EQ(ReadRunRecord(*j).error().message, "run is missing (expected a string)");
  Expected<RunRecord> r = ReadRunRecord(*j, RecordFields::kPresent);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->phase, "fill");
  EXPECT_EQ(r->outcome, "interrupted");
  EXPECT_EQ(r->id, "");
  EXPECT_FALSE(r->start);
  EXPECT_FALSE(r->end);
  // A field that is there still has to be as written.
  EXPECT_EQ(RunProblem([](Json& j) { j["start"] = "x"; }, RecordFields::kPresent),
            "start is \"x\" (expected Unix seconds)");
  EXPECT_EQ(RunProblem([](Json& j) { j["run"] = ""; }, RecordFields::kPresent), "");
}

// A record streamed from the history gives up its payload rather than
// copying it; the header read leaves it out yet refuses it damaged.
TEST(RunRecordTest, AStreamedRecordIsMovedAndAHeaderLeavesThePayload) {
  const Json written = SampleRun().ToJson();
  Json streamed = written;
  Expected<RunRecord> moved = ReadRunRecord(std::move(streamed));
  ASSERT_TRUE(moved) << moved.error().message;
  EXPECT_EQ(moved->ToJson(), written);

  Expected<RunRecord> header = ReadRunHeader(written);
  ASSERT_TRUE(header) << header.error().message;
  EXPECT_EQ(header->id, "fill-20261130T030000.000Z");
  EXPECT_EQ(header->outcome, "completed");
  EXPECT_EQ(*header->start, 1796007600.25);
  EXPECT_TRUE(Members(header->results).empty());
  EXPECT_TRUE(Members(header->series).empty());
  EXPECT_TRUE(header->drive_at_start.is_null());
  Json damaged = written;
  damaged["series"] = 3;
  EXPECT_EQ(ReadRunHeader(damaged).error().message, "series is 3 (expected an object)");
  EXPECT_EQ(ReadRunRecord(std::move(damaged)).error().message,
            "series is 3 (expected an object)");
}

TEST(StepRecordTest, RoundTrips) {
  const Json written = SampleStep().ToJson();
  EXPECT_EQ(DumpJson(written),
            R"({"version":1,"run":"fill-20261130T030000.000Z","phase":"fill-half",)"
            R"("kind":"fill","target":"scratch","serial":"S5GXNX0R123456","record":"step",)"
            R"("time":1796011320.5,"test":"endurance-1796000000","step":7,)"
            R"("results":{"waf_ratio":1.07}})");
  ASSERT_TRUE(IsStepRecord(written));
  EXPECT_FALSE(IsRunRecord(written));
  Expected<StepRecord> back = ReadStepRecord(written);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->run, "fill-20261130T030000.000Z");
  EXPECT_EQ(back->phase, "fill-half");
  EXPECT_EQ(back->kind, "fill");
  EXPECT_EQ(back->target, "scratch");
  EXPECT_EQ(back->serial, "S5GXNX0R123456");
  EXPECT_EQ(back->time, 1796011320.5);
  EXPECT_EQ(back->test, "endurance-1796000000");
  EXPECT_EQ(back->step, 7u);
  EXPECT_EQ(back->results, SampleStep().results);
  EXPECT_EQ(back->Drive(), "S5GXNX0R123456");
  EXPECT_EQ(DumpJson(back->ToJson()), DumpJson(written));
}

TEST(StepRecordTest, RefusesEachFieldThatIsWrong) {
  struct Case {
    std::function<void(Json&)> change;
    std::string problem;
  };
  const std::vector<Case> cases = {
      {[](Json& j) { j = Without(j, "run"); }, "run is missing (expected a string)"},
      {[](Json& j) { j["serial"] = 1; }, "serial is 1 (expected a string)"},
      {[](Json& j) { j["run"] = ""; }, "run is \"\" (expected the run's id)"},
      {[](Json& j) { j = Without(j, "time"); }, "time is missing (expected Unix seconds)"},
      {[](Json& j) { j["time"] = -2; }, "time is -2 (expected Unix seconds)"},
      {[](Json& j) { j = Without(j, "step"); }, "step is missing (expected a whole number)"},
      {[](Json& j) { j["step"] = 1.5; }, "step is 1.5 (expected a whole number)"},
      {[](Json& j) { j["step"] = -1; }, "step is -1 (expected a whole number)"},
      {[](Json& j) { j = Without(j, "test"); }, "test is missing (expected a string)"},
      {[](Json& j) { j["test"] = 3; }, "test is 3 (expected a string)"},
      {[](Json& j) { j["results"] = "none"; }, "results is \"none\" (expected an object)"},
      {[](Json& j) { j["series"] = 1; }, "series is 1 (expected an object)"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(StepProblem(c.change), c.problem);
  }
}

}  // namespace
}  // namespace drivewatch::aging
