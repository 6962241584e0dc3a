// SPDX-License-Identifier: Apache-2.0
// `drivewatch report`'s identity and age section: the rows' drives and
// their age at each run.
#include <algorithm>

#include "aging/report/drive_report_detail.h"
#include "aging/report/report_format.h"

namespace drivewatch::aging::drive_report_detail {
namespace {

using report_format::Format;

Json Text(const std::string& s) { return s.empty() ? Json() : Json(s); }

std::optional<double> AgeField(const Run& r, double (*f)(const DriveAge&)) {
  if (!r.age) return std::nullopt;
  return f(*r.age);
}

// The verdict: the firmware of the fresh and aged rows, and how much older
// the aged one is.
void AddFirmwareAndAgeVerdict(Json& section, const std::vector<Pick>& picks) {
  // Without a fresh row (--runs latest), the one row there is.
  const Pick* aged = Labelled(picks, "aged");
  const Pick* fresh = Labelled(picks, "fresh");
  if (fresh == nullptr) {
    fresh = Latest(picks);
    aged = nullptr;
  }
  if (fresh == nullptr) return;
  std::vector<std::string> parts;
  if (aged && aged->run->firmware != fresh->run->firmware) {
    parts.push_back("firmware changed " + fresh->run->firmware + " \xe2\x86\x92 " +
                    aged->run->firmware + " between fresh and aged");
  } else {
    parts.push_back("firmware " +
                    (fresh->run->firmware.empty() ? std::string("unknown") : fresh->run->firmware) +
                    (aged ? " throughout" : ""));
  }
  if (aged && fresh->run->age && aged->run->age) {
    const DriveAge& f = *fresh->run->age;
    const DriveAge& a = *aged->run->age;
    parts.push_back(Format(
        "aged %s power-on hours, %u%% used and %.2f drive writes later",
        report_format::Grouped(double(a.power_on_hours) - double(f.power_on_hours), 0).c_str(),
        a.percentage_used - std::min(a.percentage_used, f.percentage_used),
        a.DriveWrites() - f.DriveWrites()));
  } else if (!fresh->run->age) {
    parts.push_back("the drive's age is not on record for its runs");
  }
  section["verdict"] = Verdict("info", Join(parts, "; "));
}

}  // namespace

Json IdentitySection(const Selection& s) {
  Json section = Section("identity", "Identity and age");
  const auto picks = PickRuns(s, [](const Run&) { return true; });
  section["runs"] = RunsJson(picks);
  section["tables"].push_back(RunTable(
      "identity", "Identity", picks,
      {{"model", "model", "text", [](const Run& r) { return Text(r.model); }, nullptr},
       {"firmware", "firmware", "text", [](const Run& r) { return Text(r.firmware); }, nullptr},
       {"serial", "serial", "text", [](const Run& r) { return Json(r.drive); }, nullptr},
       {"capacity_bytes", "capacity", "bytes",
        [](const Run& r) {
          return Value(AgeField(r, [](const DriveAge& a) { return double(a.capacity_bytes); }));
        },
        nullptr},
       {"tmt1_celsius", "TMT1", "celsius",
        [](const Run& r) {
          return r.age && r.age->tmt1_k ? Json(*r.age->tmt1_k - 273.15) : Json();
        },
        nullptr},
       {"tmt2_celsius", "TMT2", "celsius",
        [](const Run& r) {
          return r.age && r.age->tmt2_k ? Json(*r.age->tmt2_k - 273.15) : Json();
        },
        nullptr}}));
  section["tables"].push_back(RunTable(
      "age", "Age at the start of the run", picks,
      {{"power_on_hours", "power-on", "hours",
        [](const Run& r) {
          return Value(AgeField(r, [](const DriveAge& a) { return double(a.power_on_hours); }));
        },
        nullptr},
       {"percentage_used", "Percentage Used", "pct",
        [](const Run& r) {
          return Value(AgeField(r, [](const DriveAge& a) { return double(a.percentage_used); }));
        },
        nullptr},
       {"data_written_bytes", "data written", "tb",
        [](const Run& r) {
          return Value(AgeField(r, [](const DriveAge& a) { return a.data_written_bytes; }));
        },
        nullptr},
       {"drive_writes", "drive writes", "x",
        [](const Run& r) {
          return Value(AgeField(r, [](const DriveAge& a) { return a.DriveWrites(); }));
        },
        nullptr}}));
  section["expectation"] =
      "Fresh and aged are the same drive: the same model, and the same firmware unless it was "
      "updated between them, which can explain a change in any table. TMT1 and TMT2 are the "
      "host's thermal throttle points, known when host controlled thermal management is on.";
  AddFirmwareAndAgeVerdict(section, picks);
  return section;
}

}  // namespace drivewatch::aging::drive_report_detail
