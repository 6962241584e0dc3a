// SPDX-License-Identifier: Apache-2.0
#include "config/schema.h"

#include <algorithm>
#include <array>

#include "config/checks.h"
#include "config/loader.h"

namespace drivewatch::config::detail {
namespace {

using std::chrono::milliseconds;

constexpr Range kProbeIntervalRange{milliseconds{1'000}, std::chrono::hours{24}};

// The two keys every light probe has.
#define DW_PROBE_KEYS(member, what)                                           \
  SchemaKey{"enabled", "Whether the " what " runs.",                         \
            Field<bool>{[](Config& c) -> bool& { return c.member.enabled; }}}, \
  SchemaKey{"interval", "How often the " what " runs. Duration, 1s to 1d.",  \
            Field<milliseconds>{                                              \
                [](Config& c) -> milliseconds& { return c.member.interval; }}, \
            kProbeIntervalRange}

const std::array kWebKeys{
    SchemaKey{"listen_address", "Where the HTTP server listens for scrapes.",
              Field<std::string>{[](Config& c) -> std::string& { return c.listen_address; }},
              {}, {}, ListenAddressProblem},
};
const std::array kLogKeys{
    SchemaKey{"level", "The least severe log messages that are written.",
              Field<LogLevel>{[](Config& c) -> LogLevel& { return c.log_level; }}},
};
const std::array kStateKeys{
    SchemaKey{"directory", "Where phase checkpoints and the history are kept.",
              Field<std::string>{[](Config& c) -> std::string& { return c.state_directory; }},
              {}, {}, StateDirectoryProblem},
};
const std::array kDiscoveryKeys{
    SchemaKey{"interval", "How often the NVMe controllers are rescanned. Duration, 1s to 1h.",
              Field<milliseconds>{
                  [](Config& c) -> milliseconds& { return c.discovery_interval; }},
              Range{milliseconds{1'000}, std::chrono::hours{1}}},
    SchemaKey{"grace_period",
              "How long a vanished drive reports drivewatch_drive_up 0. Duration, 0s to 30d.",
              Field<milliseconds>{
                  [](Config& c) -> milliseconds& { return c.drive_grace_period; }},
              Range{milliseconds{0}, std::chrono::days{30}}},
};
const std::array kDrivesKeys{
    SchemaKey{"include_serials", "Serials to watch, as globs. Empty: all serials.", {}, {}, {},
              nullptr, WriteIncludeSerials},
    SchemaKey{"exclude_serials", "Serials never to watch, as globs.", {}, {}, {}, nullptr,
              WriteExcludeSerials},
    SchemaKey{"include_models", "Models to watch, as globs. Empty: all models.", {}, {}, {},
              nullptr, WriteIncludeModels},
    SchemaKey{"exclude_models", "Models never to watch, as globs.", {}, {}, {}, nullptr,
              WriteExcludeModels},
};
const std::array kHealthKeys{DW_PROBE_KEYS(health, "health probe")};
const std::array kThermalKeys{
    DW_PROBE_KEYS(thermal, "thermal probe"),
    SchemaKey{"async_events",
              "Whether SMART and temperature asynchronous events run the probes at once.",
              Field<bool>{[](Config& c) -> bool& { return c.async_events; }}},
};
const std::array kPowerKeys{
    DW_PROBE_KEYS(power, "power probe"),
    SchemaKey{"meters", "External power meters, one per drive serial.", {}, {}, {}, nullptr,
              WriteMeters},
};
const std::array kMeterKeys{
    SchemaKey{"serial", "The drive's serial number."},
    SchemaKey{"hwmon", "A hwmon power*_input file, in microwatts."},
    SchemaKey{"command", "A program printing watts, its absolute path first."},
    SchemaKey{"timeout", "How long one reading may take. Duration, 100ms to 30s."},
};
const std::array kReadLatencyKeys{
    SchemaKey{"enabled", "Whether the read latency probe runs.",
              Field<bool>{[](Config& c) -> bool& { return c.read_latency.enabled; }}},
    SchemaKey{"namespaces", "Whether every namespace of a watched drive is probed.",
              Field<bool>{[](Config& c) -> bool& { return c.read_latency.namespaces; }}},
    SchemaKey{"rates", "The read rates in IOPS, 1 to 10000 each.", {}, {}, {}, nullptr,
              WriteRates},
    SchemaKey{"rate_period", "How long each rate runs before the next. Duration, 1s to 1d.",
              Field<milliseconds>{
                  [](Config& c) -> milliseconds& { return c.read_latency.rate_period; }},
              Range{milliseconds{1'000}, std::chrono::hours{24}}},
    SchemaKey{"idle_period", "A pause after each round of rates. Duration, 0s to 1d.",
              Field<milliseconds>{
                  [](Config& c) -> milliseconds& { return c.read_latency.idle_period; }},
              Range{milliseconds{0}, std::chrono::hours{24}}},
    SchemaKey{"arrivals", "How reads are spaced: \"fixed\" or \"poisson\".", {}, {}, {},
              nullptr, WriteArrivals},
    SchemaKey{"block_size", "The size of one read: a power of two from 512B to 1MiB.", {},
              {}, {}, nullptr, WriteBlockSize},
    SchemaKey{"timeout", "How long one read may take. Duration, 10ms to 1m.",
              Field<milliseconds>{
                  [](Config& c) -> milliseconds& { return c.read_latency.timeout; }},
              Range{milliseconds{10}, milliseconds{60'000}}},
    SchemaKey{"windows", "The quantile windows: 1 to 4 durations, 1m to 1d.", {}, {}, {},
              nullptr, WriteWindows},
    SchemaKey{"targets", "Block devices or test files to probe instead of namespaces.", {},
              {}, {}, nullptr, WriteReadTargets},
};
const std::array kReadTargetKeys{
    SchemaKey{"name", "The target's name, for its label."},
    SchemaKey{"block_device", "A block device to read."},
    SchemaKey{"directory", "A directory in which a test file is read."},
    SchemaKey{"file_size", "The test file's size: at least 1MiB."},
    SchemaKey{"offset", "Where the probed region starts."},
    SchemaKey{"length", "How long the probed region is; 0B: to the end."},
};
const std::array kSelfTestKeys{
    SchemaKey{"enabled", "Whether the self-test probe runs.",
              Field<bool>{[](Config& c) -> bool& { return c.self_test.enabled; }}},
    // At most the self-test catch-up window (probes/self_test.h), or a
    // scheduled test could fall between two runs and never start.
    SchemaKey{"interval", "How often the self-test log is read. Duration, 1s to 1h.",
              Field<milliseconds>{[](Config& c) -> milliseconds& { return c.self_test.interval; }},
              Range{milliseconds{1'000}, std::chrono::hours{1}}},
    SchemaKey{"short", "When every drive runs a short self-test; \"\" means never.",
              Field<Schedule>{[](Config& c) -> Schedule& { return c.self_test.short_test; }}},
    SchemaKey{"extended", "When every drive runs an extended self-test; \"\" means never.",
              Field<Schedule>{[](Config& c) -> Schedule& { return c.self_test.extended_test; }}},
    SchemaKey{"abort_on_shutdown", "Whether a running self-test is aborted on shutdown.",
              Field<bool>{[](Config& c) -> bool& { return c.self_test.abort_on_shutdown; }}},
    SchemaKey{"drives", "Schedules for single drives, by serial.", {}, {}, {}, nullptr,
              WriteSelfTestDrives},
};
const std::array kSelfTestDriveKeys{
    SchemaKey{"serial", "The drive's serial number."},
    SchemaKey{"short", "When this drive runs a short self-test."},
    SchemaKey{"extended", "When this drive runs an extended self-test."},
};
const std::array kErrorLogKeys{DW_PROBE_KEYS(error_log, "error log probe")};
const std::array kPersistentEventLogKeys{
    DW_PROBE_KEYS(persistent_event_log, "persistent event log probe")};
const std::array kAgingKeys{
    SchemaKey{"temperature_margin",
              "Kelvins below the warning threshold at which a phase aborts, 0 to 50.",
              Field<double>{[](Config& c) -> double& { return c.aging.temperature_margin; }},
              {}, NumberRange{0, 50, "a number of kelvins from 0 to 50"}},
    SchemaKey{"targets", "Devices and directories that phases may use.", {}, {}, {}, nullptr,
              WriteAgingTargets},
    SchemaKey{"phases", "Heavy phases and their schedules.", {}, {}, {}, nullptr,
              WriteAgingPhases},
};
const std::array kAgingTargetKeys{
    SchemaKey{"name", "The target's name, which phases name."},
    SchemaKey{"block_device", "A whole block device."},
    SchemaKey{"directory", "A directory in which the target's own file is written."},
    SchemaKey{"serial", "The serial of the drive behind block_device."},
    SchemaKey{"namespace", "The namespace behind block_device."},
    SchemaKey{"destroy_data", "The acknowledgement that data on the device is destroyed."},
    SchemaKey{"allow_signatures", "Whether a device with a filesystem or RAID signature is used."},
    SchemaKey{"file_size", "The size of the directory target's file."},
    SchemaKey{"free_space_reserve", "The share of the filesystem that stays free, 0 to 1."},
};

#undef DW_PROBE_KEYS

const std::array kSections{
    SchemaSection{"web", kWebKeys, "The HTTP server.", false, false},
    SchemaSection{"log", kLogKeys, "Logging.", false, false},
    SchemaSection{"state", kStateKeys, "Durable state.", false, false},
    SchemaSection{"discovery", kDiscoveryKeys, "Finding drives.", false, false},
    SchemaSection{"drives", kDrivesKeys, "Which drives are watched.", false, false,
                  &Loader::ReadDrives},
    SchemaSection{"probes.health", kHealthKeys, "The SMART / health log probe."},
    SchemaSection{"probes.thermal", kThermalKeys, "The temperature probe."},
    SchemaSection{"probes.power", kPowerKeys, "The power state and power meter probe.",
                  false, true, &Loader::ReadPower},
    SchemaSection{"probes.power.meters", kMeterKeys, "One external power meter.", true},
    SchemaSection{"probes.read_latency", kReadLatencyKeys, "The read latency probe.", false,
                  true, &Loader::ReadReadLatency},
    SchemaSection{"probes.read_latency.targets", kReadTargetKeys,
                  "One read latency target.", true},
    SchemaSection{"probes.self_test", kSelfTestKeys, "The device self-test probe.", false,
                  true, &Loader::ReadSelfTest},
    SchemaSection{"probes.self_test.drives", kSelfTestDriveKeys,
                  "One drive's self-test schedules.", true},
    SchemaSection{"probes.error_log", kErrorLogKeys, "The error log probe."},
    SchemaSection{"probes.persistent_event_log", kPersistentEventLogKeys,
                  "The persistent event log probe."},
    SchemaSection{"aging", kAgingKeys, "Heavy phases and their targets.", false, true,
                  &Loader::ReadAging},
    SchemaSection{"aging.targets", kAgingTargetKeys, "One aging target.", true},
};

}  // namespace

std::span<const SchemaSection> Sections() { return kSections; }

const SchemaSection& Section(std::string_view path) {
  return *std::find_if(kSections.begin(), kSections.end(),
                       [&](const SchemaSection& s) { return s.path == path; });
}

std::vector<std::string_view> KeyNames(const SchemaSection& section) {
  std::vector<std::string_view> names;
  for (const SchemaKey& key : section.keys) names.push_back(key.name);
  return names;
}

}  // namespace drivewatch::config::detail
