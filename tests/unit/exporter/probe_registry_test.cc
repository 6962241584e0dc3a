// SPDX-License-Identifier: Apache-2.0
// The registry against the probe catalog (config/probe_catalog.cc): every
// probe registered is described, every description is made, and each
// probe's [probes.NAME] section switches it. A new probe is tested here
// with no edit.
#include "exporter/probe_registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/probe_catalog.h"

namespace drivewatch {
namespace {

using ::testing::HasSubstr;

std::string LogicError(const std::vector<ProbeRegistration>& probes,
                       std::span<const config::ProbeDescription> catalog) {
  try {
    CheckProbeRegistry(probes, catalog);
  } catch (const std::logic_error& e) {
    return e.what();
  }
  return "";
}

TEST(ProbeRegistryTest, EveryRegisteredProbeIsDescribedAndEveryDescriptionMade) {
  const std::vector<ProbeRegistration>& probes = RegisteredProbes();
  for (const ProbeRegistration& p : probes) {
    EXPECT_NE(config::FindProbeDescription(p.described_as), nullptr) << p.name;
    ProbeInstance instance = p.make();
    EXPECT_NE(instance.probe, nullptr) << p.name;
  }
  for (const config::ProbeDescription& d : config::ProbeCatalog()) {
    EXPECT_TRUE(std::any_of(probes.begin(), probes.end(),
                            [&](const ProbeRegistration& p) {
                              return p.name == d.name && p.described_as == d.name;
                            }))
        << d.name;
  }
  EXPECT_NO_THROW(MakeProbeRegistry(nullptr, nullptr, /*durable_state=*/true));
}

TEST(ProbeRegistryTest, EveryDescribedProbeFollowsItsSection) {
  const config::Config defaults = config::Defaults();
  for (const config::ProbeDescription& d : config::ProbeCatalog()) {
    SCOPED_TRACE(d.name);
    const std::string section = "[probes." + std::string(d.name) + "]\n";
    const config::LoadResult off = config::LoadString(section + "enabled = false\n", "t.toml");
    ASSERT_TRUE(off.config.has_value()) << off.errors.front().ToString();
    const config::LoadResult slow =
        config::LoadString(section + "interval = \"1h\"\n", "t.toml");
    ASSERT_TRUE(slow.config.has_value()) << slow.errors.front().ToString();
    for (const ProbeRegistration& p : RegisteredProbes()) {
      SCOPED_TRACE(p.name);
      if (p.described_as == d.name) {
        // The probe, and every probe serving it, is off.
        EXPECT_FALSE(p.settings(*off.config).enabled);
      } else {
        EXPECT_EQ(p.settings(*off.config), p.settings(defaults));
        EXPECT_EQ(p.settings(*slow.config), p.settings(defaults));
      }
      if (p.name == d.name) {
        EXPECT_EQ(p.settings(defaults), (config::ProbeSettings{d.enabled, d.interval}));
        EXPECT_EQ(p.settings(*slow.config).interval, std::chrono::hours{1});
      }
    }
  }
}

TEST(ProbeRegistryTest, RefusesADescriptionWithoutAProbe) {
  std::vector<ProbeRegistration> probes = RegisteredProbes();
  EXPECT_EQ(LogicError(probes, config::ProbeCatalog()), "");
  std::erase_if(probes, [](const ProbeRegistration& p) { return p.name == "ocp_smart"; });
  EXPECT_EQ(LogicError(probes, config::ProbeCatalog()),
            "probe registry: config/probe_catalog.cc describes probe \"ocp_smart\", which "
            "exporter/probe_registry.cc does not make");
}

TEST(ProbeRegistryTest, RefusesAProbeWithoutADescription) {
  std::vector<ProbeRegistration> probes = RegisteredProbes();
  probes.push_back(DescribedProbe("undescribed", RegisteredProbes()[0].make));
  EXPECT_EQ(LogicError(probes, config::ProbeCatalog()),
            "probe registry: probe \"undescribed\" names [probes.undescribed], which "
            "config/probe_catalog.cc does not describe");

  // A serving probe must serve a described one, too.
  probes.pop_back();
  probes.push_back(ServingProbe("undescribed_aens", "thermals", RegisteredProbes()[0].make,
                                RegisteredProbes()[0].settings));
  EXPECT_THAT(LogicError(probes, config::ProbeCatalog()), HasSubstr("[probes.thermals]"));

  // A described probe made only as another's servant is not made.
  const std::vector<config::ProbeDescription> catalog{
      {"health", "reads", ""}, {"thermal", "reads", ""}};
  EXPECT_THAT(LogicError({DescribedProbe("health", RegisteredProbes()[0].make),
                          ServingProbe("thermal_aens", "thermal", RegisteredProbes()[0].make,
                                       RegisteredProbes()[0].settings)},
                         catalog),
              HasSubstr("describes probe \"thermal\""));
}

TEST(ProbeRegistryTest, RefusesAProbeRegisteredTwice) {
  std::vector<ProbeRegistration> probes = RegisteredProbes();
  probes.push_back(probes.front());
  EXPECT_EQ(LogicError(probes, config::ProbeCatalog()),
            "probe registry: probe \"" + probes.front().name + "\" is registered twice");
}

}  // namespace
}  // namespace drivewatch
