// SPDX-License-Identifier: Apache-2.0
#include "config/probe_catalog.h"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>
#include <utility>

#include "config/config.h"

namespace drivewatch::config {
namespace {

using std::chrono::milliseconds;

constexpr std::array kCatalog{
    ProbeDescription{
        "health",
        "Identify and the SMART / health information log page (02h): wear,\n"
        "spare capacity, temperatures, media errors, critical warnings.\n"
        "Whether the probe runs at all.",
        "How often it runs on each drive. Drives refresh this log about once a\n"
        "minute, so polling faster mostly costs admin commands. Duration, 1s to 24h.",
    },
    ProbeDescription{
        "thermal",
        "Temperature thresholds and throttling: the over- and under-temperature\n"
        "thresholds of the composite and of each implemented sensor (feature\n"
        "04h), host controlled thermal management TMT1/TMT2 (feature 10h) and\n"
        "drivewatch_thermal_throttling. See docs/metrics.md.\n"
        "Whether the probe runs at all.",
        "How often it runs on each drive. Duration, 1s to 24h.",
    },
    ProbeDescription{
        "power",
        "Power state descriptors, the current power state (feature 02h), APST\n"
        "(feature 0Ch), and the drive's power at the read latency probe's 10-IOPS\n"
        "load and when idle, each averaged over a window of steady load from the\n"
        "best source: an external meter, the drive's own power reading, or an\n"
        "estimate from the power state descriptors (labelled\n"
        "source=\"meter\"|\"drive\"|\"psd_estimate\"). Inside those windows the drive\n"
        "is sampled every second (the power_draw probe); idle windows are the read\n"
        "latency probe's idle_period. See docs/metrics.md.\n"
        "Whether the probes run at all.",
        "How often the descriptors and APST are read on each drive; also how\n"
        "often power is sampled on a drive drivewatch does not read (read latency\n"
        "off), each such interval being one idle window. Duration, 1s to 24h.",
    },
    // At most the self-test catch-up window (probes/self_test.h), or a
    // scheduled test could fall between two runs and never start.
    ProbeDescription{
        "self_test",
        "Device self-tests, as smartd runs them (NVMe opcode 14h, results in log\n"
        "page 06h): the test in progress and its completion, the last result of\n"
        "each type, failed tests, the failing segment and LBA. Drives whose\n"
        "Identify OACS bit 4 is clear report drivewatch_feature_supported\n"
        "{feature=\"self_test\"} 0, logged once. See docs/metrics.md.",
        "How often log 06h is read and the schedule checked; a scheduled test\n"
        "starts at most this late. Duration, 1s to 1h (a test may start up to an\n"
        "hour after its time, so a longer interval could miss it).",
        true, milliseconds{60'000}, std::chrono::hours{1},
    },
    ProbeDescription{
        "error_log",
        "The Error Information log (01h): ELPE+1 entries, each new one logged once\n"
        "(queue, command, status, LBA, namespace) and counted by status. History a\n"
        "drive already holds when drivewatch first sees it is not counted, and the\n"
        "highest error count seen is kept in the state directory, so a restart\n"
        "never counts an entry twice.",
        "",
    },
    ProbeDescription{
        "persistent_event_log",
        "The persistent event log (0Dh), where Identify LPA bit 4 says the drive\n"
        "has one: events by type and thermal excursions with their temperatures.\n"
        "The log can be megabytes, so it is read less often.",
        "",
        true, milliseconds{600'000},
    },
    // Drives update it about as often as the SMART log.
    ProbeDescription{
        "ocp_smart",
        "The OCP SMART / Health Information Extended log (C0h) of drives built\n"
        "to the OCP Datacenter NVMe SSD specification: media written (write\n"
        "amplification), bad NAND blocks, erase counts, ECC and PCIe errors.\n"
        "Drives without it report drivewatch_feature_supported 0.",
        "",
    },
};

}  // namespace

std::span<const ProbeDescription> ProbeCatalog() { return kCatalog; }

const ProbeDescription* FindProbeDescription(std::string_view name) {
  const auto it = std::find_if(kCatalog.begin(), kCatalog.end(),
                               [&](const ProbeDescription& d) { return d.name == name; });
  return it == kCatalog.end() ? nullptr : &*it;
}

ProbeSettingsByName DescribedProbeDefaults() {
  ProbeSettingsByName out;
  for (const ProbeDescription& d : kCatalog) {
    out.emplace(std::string(d.name), ProbeSettings{d.enabled, d.interval});
  }
  return out;
}

const ProbeSettings& Config::probe(std::string_view name) const {
  const auto it = probes.find(name);
  if (it == probes.end()) {
    throw std::logic_error("no light probe \"" + std::string(name) +
                           "\" is described in config/probe_catalog.cc");
  }
  return it->second;
}

ProbeSettings& Config::probe(std::string_view name) {
  return const_cast<ProbeSettings&>(std::as_const(*this).probe(name));
}

}  // namespace drivewatch::config
