// SPDX-License-Identifier: Apache-2.0
// The report's section list (aging/report/drive_report_sections.cc) against
// the kind registry (config/phase_kinds.h): a kind added to the registry
// without a section that shows its runs fails here, as does a section
// that names a kind the registry does not have. The order of the sections
// is what the goldens of drive_report_test.cc hold.
#include "aging/report/drive_report_detail.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <string_view>

#include "config/phase_kinds.h"

namespace drivewatch::aging::drive_report_detail {
namespace {

TEST(DriveReportSectionsTest, EveryKindOfTheRegistryIsShownByASection) {
  for (std::string_view kind : config::PhaseKindNames()) {
    const auto sections = DriveSections();
    const bool shown = std::any_of(sections.begin(), sections.end(), [&](const SectionEntry& e) {
      return std::find(e.kinds.begin(), e.kinds.end(), kind) != e.kinds.end();
    });
    EXPECT_TRUE(shown) << "kind " << kind
                       << " has no section in aging/report/drive_report_sections.cc";
  }
}

TEST(DriveReportSectionsTest, SectionsNameOnlyKindsOfTheRegistryAndAreUnique) {
  const auto names = config::PhaseKindNames();
  const std::set<std::string_view> kinds(names.begin(), names.end());
  std::set<std::string_view> ids;
  for (const SectionEntry& e : DriveSections()) {
    EXPECT_TRUE(ids.insert(e.id).second) << "section " << e.id << " twice";
    ASSERT_NE(e.make, nullptr) << e.id;
    for (std::string_view kind : e.kinds) {
      EXPECT_TRUE(kinds.count(kind)) << "section " << e.id << " names kind " << kind
                                     << ", which the registry does not have";
    }
  }
}

TEST(DriveReportSectionsTest, IdentityComesFirstAndShowsEveryRun) {
  const auto sections = DriveSections();
  ASSERT_FALSE(sections.empty());
  EXPECT_EQ(sections.front().id, "identity");
  EXPECT_TRUE(sections.front().kinds.empty());
  for (const SectionEntry& e : sections.subspan(1)) {
    EXPECT_FALSE(e.kinds.empty()) << e.id << ": only identity shows every run";
  }
}

}  // namespace
}  // namespace drivewatch::aging::drive_report_detail
