// SPDX-License-Identifier: Apache-2.0
// drivewatch's configuration: TOML in, typed and validated structs out.
// Nothing else in drivewatch parses TOML. The example config
// (config/drivewatch.toml) documents every key and loads to Defaults().
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/phase_kinds.h"
#include "config/schedule.h"
#include "config/util/expected.h"

namespace drivewatch::config {

enum class LogLevel { kDebug, kInfo, kWarn, kError };

// Which NVMe controllers drivewatch watches. Patterns are shell globs
// (fnmatch(3)) matched against the trimmed Identify SN and MN. A controller
// is watched when it matches an include list (or both include lists are
// empty) and matches no exclude list.
struct DriveSelection {
  std::vector<std::string> include_serials;
  std::vector<std::string> exclude_serials;
  std::vector<std::string> include_models;
  std::vector<std::string> exclude_models;

  // Applies the rule above. `serial` and `model` may be passed as read from
  // Identify Controller (space padded); they are trimmed here.
  bool Watches(std::string_view serial, std::string_view model) const;

  bool operator==(const DriveSelection&) const = default;
};

// A light probe's [probes.NAME] enabled and interval.
struct ProbeSettings {
  bool enabled = true;
  std::chrono::milliseconds interval{60'000};

  bool operator==(const ProbeSettings&) const = default;
};

// Every light probe's settings by its name: one entry for each probe the
// catalog describes (config/probe_catalog.h).
using ProbeSettingsByName = std::map<std::string, ProbeSettings, std::less<>>;
// The catalog's defaults (config/probe_catalog.cc).
ProbeSettingsByName DescribedProbeDefaults();

// An external power meter for one drive ([[probes.power.meters]]): exactly
// one of `hwmon` and `command` is set.
struct PowerMeter {
  std::string serial;                // Identify SN, trimmed; exact, not a glob
  std::string hwmon;                 // absolute path of a power*_input (µW)
  std::vector<std::string> command;  // argv, argv[0] absolute; prints watts
  std::chrono::milliseconds timeout{2'000};

  bool operator==(const PowerMeter&) const = default;
};

// How the read latency probe spaces its reads ([probes.read_latency]
// arrivals).
enum class Arrivals { kFixed, kPoisson };

// A configured read latency target ([[probes.read_latency.targets]]):
// exactly one of `block_device` and `directory` is set.
struct ReadLatencyTarget {
  std::string name;          // the `target` label; [A-Za-z0-9_.-]+, unique
  std::string block_device;  // absolute path, read-only
  std::string directory;     // holds the test file drivewatch-<name>.dat
  std::uint64_t file_size = 64ull << 20;  // directory targets only
  std::uint64_t offset = 0;  // reads fall in [offset, offset + length)
  std::uint64_t length = 0;  // 0: to the end of the target

  bool operator==(const ReadLatencyTarget&) const = default;
};

// [probes.read_latency]: paced random O_DIRECT reads.
struct ReadLatencySettings {
  bool enabled = true;
  // Read every discovered NVMe namespace's block device.
  bool namespaces = true;
  std::vector<std::uint32_t> rates{10, 100};  // IOPS, taken in turn
  std::chrono::milliseconds rate_period{60'000};  // each rate's turn
  // No reads for this long after each round of rates (0: none), so the
  // power draw probe can see the drive idle.
  std::chrono::milliseconds idle_period{30'000};
  Arrivals arrivals = Arrivals::kFixed;
  std::uint32_t block_size = 4096;  // bytes
  std::chrono::milliseconds timeout{10'000};  // per read
  std::vector<std::chrono::milliseconds> windows{
      std::chrono::milliseconds{900'000}, std::chrono::milliseconds{3'600'000}};
  std::vector<ReadLatencyTarget> targets;

  bool operator==(const ReadLatencySettings&) const = default;
};

// A drive's own self-test schedules ([[probes.self_test.drives]]); a
// schedule left out follows [probes.self_test].
struct SelfTestDrive {
  std::string serial;  // Identify SN, trimmed; exact, not a glob
  std::optional<Schedule> short_test;
  std::optional<Schedule> extended_test;
  bool operator==(const SelfTestDrive&) const = default;
};

// [probes.self_test]: device self-tests (log page 06h) and their schedule.
// Its enabled and interval are the light probe's (Config::probe).
struct SelfTestConfig {
  Schedule short_test;     // every drive's, unless overridden; never by default
  Schedule extended_test;
  // On SIGTERM, abort (STC Fh) a test drivewatch started and that still runs.
  bool abort_on_shutdown = false;
  std::vector<SelfTestDrive> drives;
  bool operator==(const SelfTestConfig&) const = default;
};

// A device or file handed over to heavy phases ([[aging.targets]]):
// exactly one of `block_device` and `directory` is set. drivewatch writes
// nowhere else (DESIGN.md decision 6, aging/safety/interlocks.h).
struct AgingTarget {
  std::string name;          // [A-Za-z0-9_.-]+, unique; phases name it
  std::string block_device;  // absolute path; destroyed by writing phases
  std::string directory;     // holds drivewatch-aging-<name>.dat, nothing else
  // block_device only: the identity the device must show before every
  // write pass. For an NVMe namespace the controller's Identify SN and
  // the namespace ID; for other devices sysfs' serial, and for a loop
  // device "loop:" + its backing file.
  std::string serial;
  std::uint32_t nsid = 0;  // key "namespace"; required for NVMe namespaces
  // block_device only: "all data on this device will be destroyed". No
  // writing phase runs on a block device without it.
  bool destroy_data = false;
  // block_device only: also overwrite a device holding a partition table,
  // file system, RAID or LVM signature.
  bool allow_signatures = false;
  std::uint64_t file_size = 1ull << 30;  // directory only
  // directory only: refuse to grow the file when its file system would
  // keep less than this fraction free. Key "free_space_reserve".
  double min_free_ratio = 0.10;

  bool operator==(const AgingTarget&) const = default;
};

// When a phase runs by itself. With neither an interval nor a window it
// runs only by hand (drivewatch phase run).
struct PhaseSchedule {
  // Run when this long has passed since the last run started (0: not
  // interval-driven).
  std::chrono::milliseconds interval{0};
  // Or: start within [window_start, window_end) local time, minutes after
  // midnight (the window may wrap past midnight), on the days in
  // `weekdays` (bit 0 Sunday .. bit 6 Saturday, as struct tm counts),
  // once per window. Both -1: no window.
  int window_start = -1;
  int window_end = -1;
  std::uint8_t weekdays = 0x7f;

  bool manual() const { return interval.count() == 0 && window_start < 0; }
  bool operator==(const PhaseSchedule&) const = default;
};

// A heavy phase ([[aging.phases]]): the keys every kind has, and its kind
// with the kind's own keys (config/phase_kinds.h).
struct PhaseConfig {
  std::string name;    // [A-Za-z0-9_.-]+, unique
  std::string target;  // an [[aging.targets]] name
  PhaseSchedule schedule;
  std::chrono::milliseconds max_duration{6 * 3'600'000};
  PhaseParams params;

  bool operator==(const PhaseConfig&) const = default;
};

// [aging]
struct AgingConfig {
  // Abort a running phase when the composite temperature comes within this
  // many kelvins of WCTEMP or TMT1.
  double temperature_margin = 5;
  std::vector<AgingTarget> targets;
  std::vector<PhaseConfig> phases;

  const AgingTarget* FindTarget(std::string_view name) const;
  const PhaseConfig* FindPhase(std::string_view name) const;
  bool operator==(const AgingConfig&) const = default;
};

struct Config {
  // [web]
  std::string listen_address = ":9647";
  // [log]
  LogLevel log_level = LogLevel::kInfo;
  // [state]
  std::string state_directory = "/var/lib/drivewatch";
  // The host's register of retention studies (aging/retention/study_register.h).
  std::string study_register = "/var/lib/drivewatch/studies.d";
  // [discovery]: how often the NVMe topology is rescanned (hot-plug), and
  // how long a vanished drive keeps reporting drivewatch_drive_up 0 before
  // its series go away.
  std::chrono::milliseconds discovery_interval{30'000};
  std::chrono::milliseconds drive_grace_period{600'000};
  // [drives]
  DriveSelection drives;
  // [probes.NAME] enabled and interval of every light probe, by NAME; what
  // each probe reads and its defaults are in config/probe_catalog.cc.
  ProbeSettingsByName probes = DescribedProbeDefaults();
  // [probes.thermal] async_events: enable the SMART / temperature
  // asynchronous events (feature 0Bh bits 7:0) and run the health and
  // thermal probes as soon as the kernel reports one.
  bool async_events = true;
  // [probes.power] meters
  std::vector<PowerMeter> power_meters;
  // [probes.power] at_load_max_age: drivewatch_power_at_load_watts goes
  // away when no window has been measured for this long.
  std::chrono::milliseconds power_at_load_max_age{900'000};

  // [probes.read_latency]
  ReadLatencySettings read_latency;
  // [probes.self_test]: the schedules; enabled and interval are in `probes`.
  SelfTestConfig self_test;

  // [aging]: heavy phases and the targets handed over to them.
  AgingConfig aging;

  // The settings of the light probe described as `name` ("health").
  // Throws std::logic_error for a name the catalog does not describe: the
  // caller's mistake, which no config file can cause.
  const ProbeSettings& probe(std::string_view name) const;
  ProbeSettings& probe(std::string_view name);

  bool operator==(const Config&) const = default;
};

// "every 7d", "window 01:00-05:00 on sat sun", "by hand only".
std::string FormatPhaseSchedule(const PhaseSchedule& schedule);

// The built-in defaults, used when no --config.file is given.
Config Defaults();

// A located problem in a config file.
struct ConfigError {
  std::string file;
  int line = 0;     // 1-based; 0 when the file could not be read at all
  int column = 0;   // 1-based
  std::string key;  // dotted key, e.g. "probes.health.interval"; may be empty
  std::string problem;  // "what is wrong (expected ...)"

  // "FILE:LINE:COL: dotted.key: what is wrong (expected ...)". The key part
  // is left out when `key` is empty, LINE:COL when `line` is 0.
  std::string ToString() const;
};

// Reads a replay phase's trace (params.trace, params.trace_device) and
// says what it holds, or why it cannot be replayed: a message naming the
// trace file and line, what is wrong and what was expected. config/ reads
// no trace itself (it includes nothing of aging/): the caller that links
// the aging side passes aging::InspectTrace (aging/phases/phase.h).
using TraceInspector = std::function<Expected<TraceFacts>(const ReplayParams& params)>;

// What the loader may do beyond parsing the text.
// Whether bytes [a_offset, a_offset + a_length) of target `a` and
// [b_offset, b_offset + b_length) of `b` (length 0: to the end of the
// target) reach a byte of the same storage now: a partition and its disk,
// two loop devices over one file, one directory spelled two ways
// (aging/safety/storage.h). nullopt when either cannot be resolved now (a drive
// not plugged in): the loader then compares names. `shared` says what
// they share, for the error.
struct StorageOverlap {
  bool overlap = false;
  std::string shared;
};
using StorageComparer = std::function<std::optional<StorageOverlap>(
    const AgingTarget& a, std::uint64_t a_offset, std::uint64_t a_length, const AgingTarget& b,
    std::uint64_t b_offset, std::uint64_t b_length)>;

// Whether what a phase of this kind runs is installed (pgbench: Debian's
// PostgreSQL binaries); an Error says what is missing and which package
// has it.
using ToolsChecker = std::function<Status(const PhaseParams& params)>;

struct LoadOptions {
  // Unset: replay traces are not read, and each counts as writing
  // (TraceFacts), so a replay phase on a block device needs destroy_data.
  // The runner reads the trace again before it touches the target either
  // way.
  TraceInspector inspect_trace;
  // Unset: targets are compared by name, device path and serial.
  StorageComparer compare_storage;
  // Unset: tools are looked for only when a phase runs.
  ToolsChecker check_tools;
};

// Parses and validates. Either a Config or every error found (at least one),
// sorted by position. Unknown keys suggest the closest valid key. Never
// throws.
struct LoadResult {
  std::optional<Config> config;
  std::vector<ConfigError> errors;
};
LoadResult LoadFile(const std::string& path, const LoadOptions& options = {});
// Same, from text; `name` is used as FILE in messages.
LoadResult LoadString(const std::string& text, const std::string& name,
                      const LoadOptions& options = {});

// Renders `config` as a TOML document with every key written. For any
// Config that LoadString() accepts, LoadString(ToToml(c)) gives back c;
// useful for printing the effective config.
std::string ToToml(const Config& config);

// The example config, config/drivewatch.toml: ToToml(Defaults()) with each
// table's and key's doc from the schema as the comment above it, after an
// opening comment. `dw_config_schema --example FILE` writes it.
std::string ExampleToml();

// "1m30s"-style durations as the config writes them: the non-zero parts of
// d, h, m, s and ms, largest first; zero is "0s". ParseDuration() reads
// every string this returns for non-negative input.
std::string FormatDuration(std::chrono::milliseconds d);

// Reads "500ms", "30s", "10m", "1h30m", "2d": one or more <integer><unit>
// parts with units d, h, m, s, ms, largest first, each at most once. No
// sign, fractions or spaces. On failure returns nullopt and, when `error` is
// given, stores a message such as
//   "30sec" is not a valid duration: unknown unit "sec" (expected d, h, m, s or
//   ms)
std::optional<std::chrono::milliseconds> ParseDuration(
    std::string_view text, std::string* error = nullptr);

// Byte sizes as the config writes them: a whole number and a unit, B, KiB,
// MiB, GiB or TiB ("4KiB", "64MiB"). FormatSize() uses the largest unit
// that divides exactly.
std::string FormatSize(std::uint64_t bytes);
std::optional<std::uint64_t> ParseSize(std::string_view text,
                                       std::string* error = nullptr);

// "debug", "info", "warn", "error": the spelling the config and the CLI use.
std::string_view LogLevelName(LogLevel level);
std::optional<LogLevel> ParseLogLevel(std::string_view name);

}  // namespace drivewatch::config
