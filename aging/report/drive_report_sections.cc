// SPDX-License-Identifier: Apache-2.0
// The sections of `drivewatch report`, in the order a drive's part shows
// them: the one place a new section is registered (its story is its own
// drive_report_SECTION.cc).
#include <array>

#include "aging/report/drive_report_detail.h"
#include "config/phase_kinds.h"

namespace drivewatch::aging::drive_report_detail {
namespace {

// A section that is one table-and-verdict block.
template <Json (*kMake)(const Selection&)>
std::vector<Json> One(const Selection& s) {
  std::vector<Json> out;
  out.push_back(kMake(s));
  return out;
}

}  // namespace

std::span<const SectionEntry> DriveSections() {
  using namespace config;
  static const std::array<SectionEntry, 12> sections{{
      {"identity", {}, One<IdentitySection>},
      {"fill", {FillParams::kName}, FillSections},
      {"reclaim", {ReclaimParams::kName}, One<ReclaimSection>},
      {"perf", {PerfParams::kName}, PerfSections},
      {"latency", {PerfParams::kName}, LatencySections},
      {"replay", {ReplayParams::kName}, One<ReplaySection>},
      {"sqlite", {SqliteParams::kName}, SqliteSections},
      {"pgbench", {PgbenchParams::kName}, PgbenchSections},
      {"low_power", {PowerStatesParams::kName}, One<LowPowerSection>},
      {"trim", {TrimParams::kName}, One<TrimSection>},
      {"endurance", {EnduranceParams::kName}, One<EnduranceSection>},
      {"retention", {RetentionWriteParams::kName, RetentionVerifyParams::kName},
       RetentionSections},
  }};
  return sections;
}

}  // namespace drivewatch::aging::drive_report_detail
