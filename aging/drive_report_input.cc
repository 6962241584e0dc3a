// SPDX-License-Identifier: Apache-2.0
// `drivewatch report`'s inputs: history records and retention studies,
// each checked (a history is untrusted input, DESIGN.md decision 12), the
// same run from two files counted once, and every record or value left out
// said with its file and why.
#include <algorithm>
#include <cmath>
#include <set>
#include <span>
#include <tuple>

#include "aging/drive_report_detail.h"
#include "aging/report_format.h"

namespace drivewatch::aging::drive_report_detail {
namespace {

using report_format::Format;

const Json* Member(const Json& r, std::string_view key, Json::Type type) {
  const Json* v = r.Find(key);
  return v != nullptr && v->type() == type ? v : nullptr;
}

std::string Text(const Json& r, std::string_view key) {
  const Json* v = Member(r, key, Json::Type::kString);
  return v ? v->AsString() : std::string();
}

std::string DriveOf(const std::string& serial, const std::string& target) {
  return serial.empty() ? "target:" + target : serial;
}

// Why a record cannot be taken, or empty. Every field the report reads
// has its type checked here.
std::string RecordProblem(const Json& r, bool step) {
  for (const char* key : {"run", "phase", "kind", "target", "serial"}) {
    const Json* v = r.Find(key);
    if (v == nullptr || v->type() != Json::Type::kString) {
      return std::string(key) + " is " + (v ? v->Dump() : "missing") + " (expected a string)";
    }
  }
  if (Text(r, "run").empty()) return "run is \"\" (expected the run's id)";
  if (Text(r, "serial").empty() && Text(r, "target").empty()) {
    return "serial and target are both empty (expected the drive's serial or the target's name)";
  }
  static constexpr const char* kStepTimes[] = {"time"};
  static constexpr const char* kRunTimes[] = {"start", "end"};
  for (const char* key :
       step ? std::span<const char* const>(kStepTimes) : std::span<const char* const>(kRunTimes)) {
    const Json* v = r.Find(key);
    if (v == nullptr || v->type() != Json::Type::kNumber || !std::isfinite(v->AsDouble()) ||
        v->AsDouble() < 0) {
      return std::string(key) + " is " + (v ? v->Dump() : "missing") + " (expected Unix seconds)";
    }
  }
  if (step) {
    const Json* n = r.Find("step");
    if (n == nullptr || n->type() != Json::Type::kNumber || n->AsDouble(-1) < 0 ||
        n->AsDouble() != std::floor(n->AsDouble())) {
      return std::string("step is ") + (n ? n->Dump() : "missing") + " (expected a whole number)";
    }
    if (!Member(r, "test", Json::Type::kString)) return "test is missing (expected a string)";
  } else {
    if (!Member(r, "outcome", Json::Type::kString)) return "outcome is missing (expected a string)";
    for (const char* key : {"model", "firmware"}) {
      const Json* v = r.Find(key);
      if (v != nullptr && v->type() != Json::Type::kString) {
        return std::string(key) + " is " + v->Dump() + " (expected a string)";
      }
    }
  }
  for (const char* key : {"results", "series"}) {
    const Json* v = r.Find(key);
    if (v != nullptr && v->type() != Json::Type::kObject) {
      return std::string(key) + " is " + v->Dump().substr(0, 40) + " (expected an object)";
    }
  }
  return "";
}

// The numbers of an object: finite and 0 or more (every measure is);
// a negative one is left out and said. Other types (an old record's
// nested objects, text) are not measures and are passed over.
std::map<std::string, double, std::less<>> Numbers(const Json* object, const std::string& where,
                                                   std::vector<std::string>& problems) {
  std::map<std::string, double, std::less<>> out;
  if (object == nullptr) return out;
  for (const auto& [key, v] : object->members()) {
    if (v.type() != Json::Type::kNumber) continue;
    const double d = v.AsDouble();
    if (!std::isfinite(d) || d < 0) {
      problems.push_back(where + ": " + key + " is " + v.Dump() +
                         " (expected a number, 0 or more): left out");
      continue;
    }
    out.emplace(key, d);
  }
  return out;
}

}  // namespace

Inputs ReadInputs(const std::vector<HistorySource>& histories,
                  const std::vector<StudyFile>& studies) {
  Inputs in;
  std::set<std::string> seen;
  for (const HistorySource& h : histories) {
    Json source = Json::Object();
    source["file"] = h.name;
    source["kind"] = "history";
    std::uint64_t runs = 0, steps = 0, duplicates = 0;
    Json damaged = Json::Array();
    for (const std::string& d : h.contents.damaged) damaged.Push(d);
    std::size_t index = 0;
    for (const Json& r : h.contents.records) {
      ++index;
      const bool step = IsStepRecord(r);
      const std::string where = "record " + std::to_string(index);
      if (!step && !IsRunRecord(r)) {
        damaged.Push(where + ": record is " + r.Find("record")->Dump() +
                     " (expected \"run\" or \"step\"): left out");
        continue;
      }
      if (const std::string problem = RecordProblem(r, step); !problem.empty()) {
        damaged.Push(where + ": " + problem + ": left out");
        continue;
      }
      const std::string drive = DriveOf(Text(r, "serial"), Text(r, "target"));
      if (step) {
        Step s;
        s.source = h.name;
        s.drive = drive;
        s.run = Text(r, "run");
        s.phase = Text(r, "phase");
        s.test = Text(r, "test");
        s.step = r.Find("step")->AsUint();
        s.time = r.Find("time")->AsDouble();
        const std::string key =
            "step\n" + drive + "\n" + s.phase + "\n" + s.test + "\n" + std::to_string(s.step);
        if (!seen.insert(key).second) {
          ++duplicates;
          continue;
        }
        s.values =
            Numbers(r.Find("results"),
                    h.name + ": step " + std::to_string(s.step) + " of run " + s.run, in.problems);
        in.steps.push_back(std::move(s));
        ++steps;
        continue;
      }
      Run run;
      run.record = &r;
      run.source = h.name;
      run.drive = drive;
      run.id = Text(r, "run");
      run.phase = Text(r, "phase");
      run.kind = Text(r, "kind");
      run.outcome = Text(r, "outcome");
      run.target = Text(r, "target");
      run.model = Text(r, "model");
      run.firmware = Text(r, "firmware");
      run.start = r.Find("start")->AsDouble();
      run.end = r.Find("end")->AsDouble();
      // Run ids are unique within a process and told apart across
      // processes by their start; two hosts may share a directory
      // target's name, so the drive is part of it too.
      const std::string key = "run\n" + run.id + "\n" + drive + "\n" + Format("%.3f", run.start);
      if (!seen.insert(key).second) {
        ++duplicates;
        continue;
      }
      if (const Json* snapshot = r.Find("drive_at_start")) {
        if (auto age = DriveAgeFromJson(*snapshot)) {
          run.age = *age;
        } else {
          run.age_problem = age.error().message;
          in.problems.push_back(h.name + ": run " + run.id + ": " + run.age_problem +
                                ": its age is shown as unknown");
        }
      }
      run.results =
          Numbers(r.Find("results"), h.name + ": run " + run.id + ": results", in.problems);
      run.series = Member(r, "series", Json::Type::kObject);
      if (run.series != nullptr) {
        for (const auto& [key, v] : run.series->members()) {
          if (v.type() != Json::Type::kArray || v.items().empty() ||
              v.items().front().type() != Json::Type::kNumber) {
            continue;  // arrays of records are read where they are used
          }
          std::vector<double> values;
          for (const Json& x : v.items()) {
            const double d = x.AsDouble(-1);
            if (x.type() != Json::Type::kNumber || !std::isfinite(d) || d < 0) {
              in.problems.push_back(h.name + ": run " + run.id + ": series." + key + " holds " +
                                    x.Dump() + " (expected numbers, 0 or more): left out");
              values.clear();
              break;
            }
            values.push_back(d);
          }
          if (!values.empty()) run.numbers.emplace(key, std::move(values));
        }
      }
      if (run.kind == "perf") run.cells = ParseCells(run, in.problems);
      in.runs.push_back(std::move(run));
      ++runs;
    }
    source["records"] = runs + steps;
    source["runs"] = runs;
    source["steps"] = steps;
    source["duplicates"] = duplicates;
    source["torn_tail_bytes"] = std::uint64_t{h.contents.torn_tail_bytes};
    source["damaged"] = std::move(damaged);
    in.sources.Push(std::move(source));
  }
  std::stable_sort(in.runs.begin(), in.runs.end(), [](const Run& a, const Run& b) {
    return std::tie(a.start, a.id) < std::tie(b.start, b.id);
  });
  std::stable_sort(in.steps.begin(), in.steps.end(),
                   [](const Step& a, const Step& b) { return a.time < b.time; });
  for (const Run& r : in.runs) {
    if (!r.model.empty()) in.drive_names[r.drive] = r.model;
  }

  std::set<std::string> study_ids;
  for (const StudyFile& f : studies) {
    Study s;
    s.name = f.name;
    if (!f.record) {
      s.problem = f.record.error().message;
    } else {
      s.record = &*f.record;
      if (const std::string name = Text(*f.record, "study"); !name.empty()) s.name = name;
      const Json* id = f.record->Find("id");
      if (id != nullptr && !study_ids.insert(id->AsString()).second)
        continue;  // the same study twice
      s.drive = DriveOf(Text(*f.record, "serial"), Text(*f.record, "target"));
    }
    Json source = Json::Object();
    source["file"] = f.name;
    source["kind"] = "retention study";
    source["damaged"] = Json::Array();
    if (!s.problem.empty()) source["damaged"].Push(s.problem);
    in.sources.Push(std::move(source));
    in.studies.push_back(std::move(s));
  }
  return in;
}

}  // namespace drivewatch::aging::drive_report_detail
