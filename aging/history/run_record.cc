// SPDX-License-Identifier: Apache-2.0
// Run and step records to JSON and back (aging/history/run_record.h).
#include "aging/history/run_record.h"

#include <cerrno>
#include <cmath>
#include <string_view>

namespace drivewatch::aging {
namespace {

// Reads a record's fields one by one; the first that is wrong stops it and
// is said as "KEY is VALUE (expected WHAT)".
class FieldReader {
 public:
  FieldReader(const Json& record, bool all) : record_(record), all_(all) {}

  const std::string& problem() const { return problem_; }
  Error error() const { return Error{EBADMSG, -1, problem_}; }

  // `required`: must be there when every field must (RecordFields::kAll).
  bool String(std::string_view key, bool required, std::string& out) {
    const Json* v = Find(record_, key);
    if (v == nullptr && !(required && all_)) return true;
    if (v == nullptr || !v->is_string()) return Wrong(key, v, "a string");
    out = AsString(*v);
    return true;
  }

  bool Seconds(std::string_view key, bool required, std::optional<double>& out) {
    const Json* v = Find(record_, key);
    if (v == nullptr && !(required && all_)) return true;
    if (v == nullptr || !v->is_number() || !std::isfinite(AsDouble(*v)) ||
        AsDouble(*v) < 0) {
      return Wrong(key, v, "Unix seconds");
    }
    out = AsDouble(*v);
    return true;
  }

  // A whole number, 0 or more: exact up to 2^64, as written.
  bool Whole(std::string_view key, bool required, std::uint64_t& out) {
    const Json* v = Find(record_, key);
    if (v == nullptr && !(required && all_)) return true;
    if (v == nullptr || !v->is_number() || AsDouble(*v, -1) < 0 ||
        AsDouble(*v) != std::floor(AsDouble(*v))) {
      return Wrong(key, v, "a whole number");
    }
    out = AsUint(*v);
    return true;
  }

  bool Number(std::string_view key, std::optional<double>& out) {
    const Json* v = Find(record_, key);
    if (v == nullptr) return true;
    if (!v->is_number()) return Wrong(key, v, "a number");
    out = AsDouble(*v);
    return true;
  }

  // An object or absent. Its value is cut short in the message: it may be
  // a kind's whole series. Only checked: the caller takes it (TakePayload).
  bool ObjectOrAbsent(std::string_view key) {
    const Json* v = Find(record_, key);
    if (v == nullptr || v->is_object()) return true;
    problem_ = std::string(key) + " is " + DumpJson(*v).substr(0, 40) + " (expected an object)";
    return false;
  }

  bool Fail(std::string problem) {
    problem_ = std::move(problem);
    return false;
  }

 private:
  bool Wrong(std::string_view key, const Json* v, std::string_view expected) {
    return Fail(std::string(key) + " is " + (v ? DumpJson(*v) : "missing") + " (expected " +
                std::string(expected) + ")");
  }

  const Json& record_;
  const bool all_;
  std::string problem_;
};

// What both records start with: the run they belong to and its drive.
bool ReadIdentity(FieldReader& in, bool all, std::uint64_t& version, std::string& run,
                  std::string& phase, std::string& kind, std::string& target,
                  std::string& serial) {
  if (!in.String("run", true, run) || !in.String("phase", true, phase) ||
      !in.String("kind", true, kind) || !in.String("target", true, target) ||
      !in.String("serial", true, serial)) {
    return false;
  }
  if (all && run.empty()) return in.Fail("run is \"\" (expected the run's id)");
  if (all && serial.empty() && target.empty()) {
    return in.Fail(
        "serial and target are both empty (expected the drive's serial or the target's name)");
  }
  return in.Whole("version", false, version);
}

void PutIdentity(Json& r, std::uint64_t version, const std::string& run, const std::string& phase,
                 const std::string& kind, const std::string& target, const std::string& serial) {
  r["version"] = version;
  r["run"] = run;
  r["phase"] = phase;
  r["kind"] = kind;
  r["target"] = target;
  r["serial"] = serial;
}

}  // namespace

Json RunRecord::ToJson() const {
  Json r = Json::object();
  PutIdentity(r, version, id, phase, kind, target, serial);
  r["model"] = model;
  r["firmware"] = firmware;
  r["device"] = device;
  if (start) r["start"] = *start;
  if (end) r["end"] = *end;
  if (duration_seconds) r["duration_seconds"] = *duration_seconds;
  if (!drive_at_start.is_null()) r["drive_at_start"] = drive_at_start;
  r["outcome"] = outcome;
  r["reason"] = reason;
  r["results"] = results;
  r["series"] = series;
  return r;
}

StepRecord StepRecord::Of(const RunRecord& run) {
  StepRecord s;
  s.version = run.version;
  s.run = run.id;
  s.phase = run.phase;
  s.kind = run.kind;
  s.target = run.target;
  s.serial = run.serial;
  return s;
}

Json StepRecord::ToJson() const {
  Json r = Json::object();
  PutIdentity(r, version, run, phase, kind, target, serial);
  r["record"] = "step";
  r["time"] = time;
  r["test"] = test;
  r["step"] = step;
  r["results"] = results;
  return r;
}

Expected<RunRecord> ReadRunHeader(const Json& record, RecordFields fields) {
  const bool all = fields == RecordFields::kAll;
  FieldReader in(record, all);
  RunRecord r;
  if (!ReadIdentity(in, all, r.version, r.id, r.phase, r.kind, r.target, r.serial) ||
      !in.Seconds("start", true, r.start) || !in.Seconds("end", true, r.end) ||
      !in.String("outcome", true, r.outcome) || !in.String("model", false, r.model) ||
      !in.String("firmware", false, r.firmware) || !in.ObjectOrAbsent("results") ||
      !in.ObjectOrAbsent("series") || !in.String("device", false, r.device) ||
      !in.String("reason", false, r.reason) ||
      !in.Number("duration_seconds", r.duration_seconds)) {
    return in.error();
  }
  return r;
}

Expected<RunRecord> ReadRunRecord(const Json& record, RecordFields fields) {
  Expected<RunRecord> r = ReadRunHeader(record, fields);
  if (!r) return r;
  if (const Json* v = Find(record, "results")) r->results = *v;
  if (const Json* v = Find(record, "series")) r->series = *v;
  if (const Json* v = Find(record, "drive_at_start")) r->drive_at_start = *v;
  return r;
}

Expected<RunRecord> ReadRunRecord(Json&& record, RecordFields fields) {
  Expected<RunRecord> r = ReadRunHeader(record, fields);
  if (!r) return r;
  for (auto [key, into] : {std::pair<const char*, Json*>{"results", &r->results},
                           {"series", &r->series},
                           {"drive_at_start", &r->drive_at_start}}) {
    if (Find(record, key) != nullptr) *into = std::move(record[key]);
  }
  return r;
}

Expected<StepRecord> ReadStepRecord(const Json& record) {
  FieldReader in(record, true);
  StepRecord s;
  std::optional<double> time;
  if (!ReadIdentity(in, true, s.version, s.run, s.phase, s.kind, s.target, s.serial) ||
      !in.Seconds("time", true, time) || !in.Whole("step", true, s.step) ||
      !in.String("test", true, s.test) || !in.ObjectOrAbsent("results") ||
      // A step has no series; one that holds a damaged one is damaged.
      !in.ObjectOrAbsent("series")) {
    return in.error();
  }
  if (const Json* v = Find(record, "results")) s.results = *v;
  s.time = *time;
  return s;
}

}  // namespace drivewatch::aging
