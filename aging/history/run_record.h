// SPDX-License-Identifier: Apache-2.0
// The two records of the phase history (aging/history/history.h) as structs:
// a run's record, one per heavy-phase run, and a step's, one per step a
// run puts on record (an endurance pass). The runner builds them and
// writes them with ToJson; every reader takes them back through
// ReadRunRecord / ReadStepRecord, which check each field in this one place
// (a history is untrusted input, DESIGN.md decision 12).
//
// A run record, in the order written:
//
//   {"version": 1, "run": ID, "phase": NAME, "kind": KIND, "target": NAME,
//    "serial": S, "model": M, "firmware": F, "device": PATH,
//    "start": UNIX_SECONDS, "end": UNIX_SECONDS, "duration_seconds": D,
//    "drive_at_start": {...}, "outcome": O, "reason": WHY,
//    "results": {...}, "series": {...}}
//
// drive_at_start only for a target reached through a controller
// (aging/runner/drive_age.h). A step record:
//
//   {"version": 1, "run": ID, "phase": NAME, "kind": KIND, "target": NAME,
//    "serial": S, "record": "step", "time": UNIX_SECONDS, "test": TEST,
//    "step": N, "results": {...}}
//
// What a kind puts in results and series is its own (aging/phases/phase.h):
// they stay JSON objects here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "config/util/expected.h"
#include "config/util/json.h"

namespace drivewatch::aging {

inline constexpr std::uint64_t kRecordVersion = 1;

// The drive a record (or a study) is of: its serial, or "target:NAME" for
// a target without one (a file).
inline std::string DriveName(const std::string& serial, const std::string& target) {
  return serial.empty() ? "target:" + target : serial;
}

struct RunRecord {
  std::uint64_t version = kRecordVersion;
  std::string id;  // "run": the phase name and start time (RunId)
  std::string phase, kind, target, serial;
  std::string model, firmware, device;  // empty: not known
  // Unix seconds; absent only in a record read with RecordFields::kPresent.
  std::optional<double> start, end;
  std::optional<double> duration_seconds;
  Json drive_at_start;  // null: not recorded; checked where it is read (DriveAgeFromJson)
  std::string outcome;  // completed, aborted, refused, failed, interrupted
  std::string reason;   // why it did not complete; empty when it did
  Json results = Json::object();
  Json series = Json::object();

  std::string Drive() const { return DriveName(serial, target); }  // the drive it ran on
  Json ToJson() const;
};

struct StepRecord {
  std::uint64_t version = kRecordVersion;
  std::string run, phase, kind, target, serial;  // of the run it is a step of
  double time = 0;    // Unix seconds, when the step ended
  std::string test;   // what the steps belong to (an endurance test spans runs)
  std::uint64_t step = 0;
  Json results = Json::object();

  // A step of `run`: its identity, the rest to fill in.
  static StepRecord Of(const RunRecord& run);
  std::string Drive() const { return DriveName(serial, target); }
  Json ToJson() const;
};

// How much of a run record must be there. A record drivewatch wrote has
// every field; one recovered from an unreadable checkpoint holds only its
// phase, outcome and reason, and a hand-made one what its author wrote.
enum class RecordFields {
  kAll,      // every field but model, firmware, device, duration_seconds,
             // drive_at_start, reason and version, and a run id and a drive
  kPresent,  // the fields there; the others stay empty (start and end unset)
};

// A run record (IsRunRecord) as the struct, or an error (EBADMSG) naming
// the first field that is wrong, its value and what was expected, e.g.
// "start is \"soon\" (expected Unix seconds)". Fields are checked in the
// order written; a field there must have its type whatever `fields` says.
Expected<RunRecord> ReadRunRecord(const Json& record, RecordFields fields = RecordFields::kAll);
// The same, moving results, series and drive_at_start out of `record`
// instead of copying them (a record streamed from the history).
Expected<RunRecord> ReadRunRecord(Json&& record, RecordFields fields = RecordFields::kAll);
// Every field checked as ReadRunRecord checks it, but results, series and
// drive_at_start not taken (they stay empty): for readers that need a
// run's identity, times and outcome, and walk a history of years whose
// series would cost a copy each.
Expected<RunRecord> ReadRunHeader(const Json& record, RecordFields fields = RecordFields::kAll);

// A step record (IsStepRecord), every field checked, as ReadRunRecord.
Expected<StepRecord> ReadStepRecord(const Json& record);

}  // namespace drivewatch::aging
