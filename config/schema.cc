// SPDX-License-Identifier: Apache-2.0
#include "config/schema.h"

#include <algorithm>
#include <array>
#include <deque>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "config/checks.h"
#include "config/loader.h"
#include "config/probe_catalog.h"

namespace drivewatch::config::detail {
namespace {

using std::chrono::milliseconds;

const std::array kWebKeys{
    SchemaKey{"listen_address",
              "Where the HTTP server listens for Prometheus scrapes (/metrics).\n"
              "Forms: \"host:port\", \"[IPv6]:port\", or \":port\" for every address.\n"
              "IPv6 addresses go in brackets. Port 1 to 65535.",
              Field<std::string>{[](Config& c) -> std::string& { return c.listen_address; }},
              {}, {}, ListenAddressProblem},
};
const std::array kLogKeys{
    SchemaKey{"level",
              "The least severe log messages that are written.\n"
              "One of \"debug\", \"info\", \"warn\", \"error\".",
              Field<LogLevel>{[](Config& c) -> LogLevel& { return c.log_level; }}},
};
const std::array kStateKeys{
    SchemaKey{"directory",
              "Where phase checkpoints and the long-term history are kept.\n"
              "An absolute path.",
              Field<std::string>{[](Config& c) -> std::string& { return c.state_directory; }},
              {}, {}, StateDirectoryProblem},
    SchemaKey{"study_register",
              "The host's register of retention studies, read before every write pass\n"
              "so that no config writes over a study another config started, whatever\n"
              "its state directory. Every drivewatch on a host must share it: change it\n"
              "only where the default cannot be written. An absolute path.",
              Field<std::string>{[](Config& c) -> std::string& { return c.study_register; }},
              {}, {}, StateDirectoryProblem},
};
const std::array kDiscoveryKeys{
    SchemaKey{"interval",
              "How often the NVMe controllers are rescanned to notice hot-plugged and\n"
              "removed drives. Duration, 1s to 1h.",
              Field<milliseconds>{
                  [](Config& c) -> milliseconds& { return c.discovery_interval; }},
              Range{milliseconds{1'000}, std::chrono::hours{1}}},
    SchemaKey{"grace_period",
              "How long a drive that vanished keeps reporting drivewatch_drive_up 0\n"
              "before its series are dropped. A drive that comes back within this time\n"
              "(after a controller reset or a reseat) keeps continuous series.\n"
              "Duration, 0s to 30d; 0s drops a vanished drive at once.",
              Field<milliseconds>{
                  [](Config& c) -> milliseconds& { return c.drive_grace_period; }},
              Range{milliseconds{0}, std::chrono::days{30}}},
};
const std::array kDrivesKeys{
    SchemaKey{"include_serials",
              "Which controllers are watched, by shell glob (as fnmatch(3): *, ?, [...])\n"
              "against the Identify Controller serial number (SN) and model number (MN),\n"
              "with the padding spaces trimmed. A controller is watched when it matches\n"
              "an include list, or both include lists are empty, and matches neither\n"
              "exclude list. Patterns may not be empty, repeated in a list, or appear in\n"
              "both the include and the exclude list of the same field.\n"
              "\n"
              "Serials to watch, e.g. [\"S5GXNG0N*\", \"PHM2*\"]. Empty: all serials.",
              {}, {}, {},
              nullptr, WriteIncludeSerials},
    SchemaKey{"exclude_serials",
              "Serials never to watch, even if an include list matches them.",
              {}, {}, {}, nullptr,
              WriteExcludeSerials},
    SchemaKey{"include_models",
              "Models to watch, e.g. [\"Samsung SSD 980 PRO*\"]. Empty: all models.",
              {}, {}, {},
              nullptr, WriteIncludeModels},
    SchemaKey{"exclude_models",
              "Models never to watch, e.g. [\"QEMU NVMe Ctrl\"].",
              {}, {}, {}, nullptr,
              WriteExcludeModels},
};
// The thermal, power and self-test probes' keys beyond enabled and
// interval (config/probe_catalog.cc).
const std::array kThermalKeys{
    SchemaKey{"async_events",
              "Instant alerts: switch on the drive's SMART / temperature asynchronous\n"
              "events (Set Features 0Bh, bits 7:0; not saved across power cycles, and\n"
              "re-applied after a controller reset) and listen for the kernel's\n"
              "NVME_AEN uevents. When a drive raises one, the health and thermal probes\n"
              "run on it at once instead of at their next interval. Without the\n"
              "privileges for this, drivewatch says so once and keeps polling.",
              Field<bool>{[](Config& c) -> bool& { return c.async_events; }}},
};
const std::array kPowerKeys{
    SchemaKey{"at_load_max_age",
              "drivewatch_power_at_load_watts shows the last 10-IOPS window's power;\n"
              "when no window has been measured for this long (the read latency\n"
              "probe paused by a heavy phase or off, or other host I/O spoiling every\n"
              "window), the series goes away rather than showing an old figure as\n"
              "current. Longer than the read latency probe's cycle of rates and idle\n"
              "period. Duration, 10s to 24h.",
              Field<milliseconds>{
                  [](Config& c) -> milliseconds& { return c.power_at_load_max_age; }},
              Range{milliseconds{10'000}, std::chrono::hours{24}}},
    SchemaKey{"meters",
              "External power meters, one per drive serial (exact serial, not a glob),\n"
              "each with exactly one of:\n"
              "  hwmon:   absolute path of a hwmon power*_input file (microwatts), e.g.\n"
              "           an INA226 on the drive's supply rail;\n"
              "  command: a program and its arguments (no shell; the program's absolute\n"
              "           path first) that prints the drive's power in watts and exits 0.\n"
              "timeout (optional, default \"2s\", 100ms to 30s) bounds each reading; a\n"
              "command still running then is killed. For example:\n"
              "  meters = [\n"
              "    { serial = \"S4EWNX0R123456\", hwmon = \"/sys/class/hwmon/hwmon3/power1_input\" },\n"
              "    { serial = \"PHM2123400AB\", command = [\"/usr/local/bin/read-meter\", \"--channel\", \"2\"], timeout = \"5s\" },\n"
              "  ]", {}, {}, {}, nullptr,
              WriteMeters},
};
const std::array kMeterKeys{
    SchemaKey{"serial",
              "The drive's serial number."},
    SchemaKey{"hwmon",
              "A hwmon power*_input file, in microwatts."},
    SchemaKey{"command",
              "A program printing watts, its absolute path first."},
    SchemaKey{"timeout",
              "How long one reading may take. Duration, 100ms to 30s."},
};
const std::array kReadLatencyKeys{
    SchemaKey{"enabled",
              "Read latency as a drive's user sees it: paced random reads with O_DIRECT\n"
              "(never from the page cache) through io_uring at queue depth 1, each read\n"
              "timestamped on its own, recorded in a log-linear histogram (at most 0.78%\n"
              "error) and exported as a histogram plus p50/p99/p99.9/max over sliding\n"
              "windows, per rate and per idle gap before the read. Reads only: nothing\n"
              "on a drive is ever written. See docs/metrics.md and docs/read-latency.md.\n"
              "Whether the probe runs at all.",
              Field<bool>{[](Config& c) -> bool& { return c.read_latency.enabled; }}},
    SchemaKey{"namespaces",
              "Read every discovered NVMe namespace through its block device\n"
              "(/dev/nvmeXnY), read-only, labelled by serial and nsid.",
              Field<bool>{[](Config& c) -> bool& { return c.read_latency.namespaces; }}},
    SchemaKey{"rates",
              "Read rates in IOPS (1 to 10000), taken in turn, each for rate_period, so\n"
              "one rate's idle gaps are never filled by another's reads. 10 and 100 IOPS\n"
              "are the reference test report's low-load latency points.",
              {}, {}, {}, nullptr,
              WriteRates},
    SchemaKey{"rate_period",
              "How long each rate runs before the next takes over. Duration, 1s to 24h.",
              Field<milliseconds>{
                  [](Config& c) -> milliseconds& { return c.read_latency.rate_period; }},
              Range{milliseconds{1'000}, std::chrono::hours{24}}},
    SchemaKey{"idle_period",
              "After each round of rates, read nothing for this long, so the drive can\n"
              "be seen idle: the power draw probe measures idle power in these gaps\n"
              "(drivewatch_idle_power_watts), and the first read after one shows the\n"
              "wake-up from the drive's deepest idle state (idle_gap \"10s+\"). \"0s\"\n"
              "reads without gaps, and idle power is then only measured while the\n"
              "probe is paused or off. Duration, 0s to 24h.",
              Field<milliseconds>{
                  [](Config& c) -> milliseconds& { return c.read_latency.idle_period; }},
              Range{milliseconds{0}, std::chrono::hours{24}}},
    SchemaKey{"arrivals",
              "\"fixed\": one read every 1/rate seconds, like fio's rate_iops.\n"
              "\"poisson\": random gaps with mean 1/rate, which spreads the idle time\n"
              "before reads over a wide range and so feeds every idle-gap class.",
              {}, {}, {},
              nullptr, WriteArrivals},
    SchemaKey{"block_size",
              "Bytes per read: a power of two from \"512B\" to \"1MiB\", a multiple of the\n"
              "device's logical block size.", {},
              {}, {}, nullptr, WriteBlockSize},
    SchemaKey{"timeout",
              "A read without a completion after this long is counted in\n"
              "drivewatch_read_timeouts_total and in the histogram's +Inf bucket; the\n"
              "probe waits for it to land before the next read. Duration, 10ms to 60s.",
              Field<milliseconds>{
                  [](Config& c) -> milliseconds& { return c.read_latency.timeout; }},
              Range{milliseconds{10}, milliseconds{60'000}}},
    SchemaKey{"windows",
              "Sliding windows of the quantile gauges, 1 to 4 durations from 1m to 1d.\n"
              "p99.9 needs 10000 reads to mean anything: about 17 minutes at 10 IOPS.",
              {}, {}, {},
              nullptr, WriteWindows},
    SchemaKey{"targets",
              "More targets, each labelled target=<name>: a block device (read-only),\n"
              "or a directory in which drivewatch creates one test file,\n"
              "drivewatch-<name>.dat, of file_size bytes of data, once, and reuses it\n"
              "(fio's test-directory style; it refuses to fill the file system past 95%).\n"
              "offset and length (default \"0B\": to the end) limit where reads fall;\n"
              "sizes are \"512B\", \"4KiB\", \"64MiB\", \"1GiB\", \"1TiB\" and multiples of\n"
              "block_size. For example:\n"
              "  targets = [\n"
              "    { name = \"sdb\", block_device = \"/dev/sdb\", offset = \"1GiB\", length = \"10GiB\" },\n"
              "    { name = \"var\", directory = \"/var/tmp/drivewatch\", file_size = \"256MiB\" },\n"
              "  ]", {},
              {}, {}, nullptr, WriteReadTargets},
};
const std::array kReadTargetKeys{
    SchemaKey{"name",
              "The target's name, for its label."},
    SchemaKey{"block_device",
              "A block device to read."},
    SchemaKey{"directory",
              "A directory in which a test file is read."},
    SchemaKey{"file_size",
              "The test file's size: at least 1MiB."},
    SchemaKey{"offset",
              "Where the probed region starts."},
    SchemaKey{"length",
              "How long the probed region is; 0B: to the end."},
};
const std::array kSelfTestKeys{
    SchemaKey{"short",
              "When every drive runs a short and an extended test, in the host's local\n"
              "time: \"\" (never), \"daily HH:MM\", \"weekly DAY HH:MM\" (DAY: mon, tue, wed,\n"
              "thu, fri, sat, sun) or \"monthly D HH:MM\" (D: 1 to 28). A test that cannot\n"
              "start at its time (another test running, a heavy phase on the drive,\n"
              "drivewatch down) may still start up to one hour later, else waits for the\n"
              "next time. For example short = \"daily 02:00\", extended = \"weekly sun 03:00\".",
              Field<Schedule>{[](Config& c) -> Schedule& { return c.self_test.short_test; }}},
    SchemaKey{"extended",
              "",
              Field<Schedule>{[](Config& c) -> Schedule& { return c.self_test.extended_test; }}},
    SchemaKey{"abort_on_shutdown",
              "On SIGTERM, abort a test that drivewatch started and that still runs, so\n"
              "a stopping service leaves the drive idle. false lets it finish.",
              Field<bool>{[](Config& c) -> bool& { return c.self_test.abort_on_shutdown; }}},
    SchemaKey{"drives",
              "Per-drive schedules, by exact serial; a key left out follows the ones\n"
              "above. For example:\n"
              "  drives = [\n"
              "    { serial = \"S4EWNX0R123456\", short = \"daily 01:30\", extended = \"\" },\n"
              "  ]", {}, {}, {}, nullptr,
              WriteSelfTestDrives},
};
const std::array kSelfTestDriveKeys{
    SchemaKey{"serial",
              "The drive's serial number."},
    SchemaKey{"short",
              "When this drive runs a short self-test."},
    SchemaKey{"extended",
              "When this drive runs an extended self-test."},
};
const std::array kAgingKeys{
    SchemaKey{"temperature_margin",
              "Heavy phases: the test methodology of a professional SSD review (SLC\n"
              "cache fill, SLC reclaim after idle, performance at fill levels, trim\n"
              "efficiency), run on schedules, on targets handed over for testing only.\n"
              "A phase aborts when the composite temperature comes within this many\n"
              "kelvins of WCTEMP or TMT1 (number, 0 to 50).",
              Field<double>{[](Config& c) -> double& { return c.aging.temperature_margin; }},
              {}, NumberRange{0, 50, "a number of kelvins from 0 to 50"}},
    SchemaKey{"targets",
              "What phases may write to. drivewatch writes nowhere else. block_device\n"
              "must be a block device: a regular file there (a disk image) is refused,\n"
              "never written; to age a file, use a directory target. A block device\n"
              "target names the serial the device must show before every write pass\n"
              "(the NVMe Identify SN; for other devices sysfs' serial, for a loop device\n"
              "\"loop:\" + its backing file), the NVMe namespace, and destroy_data = true:\n"
              "everything on it is destroyed. It is still refused while the device or a\n"
              "partition of it is mounted, used as swap or held by dm/md, and while it\n"
              "holds a partition table, file system, RAID or LVM signature unless\n"
              "allow_signatures = true. A directory target writes only its own file,\n"
              "drivewatch-aging-<name>.dat, of file_size bytes, and never leaves less\n"
              "than free_space_reserve (a fraction) of its file system free. For example:\n"
              "  targets = [\n"
              "    { name = \"scratch\", block_device = \"/dev/disk/by-id/nvme-Samsung_SSD_980_S64DNX0R123456\",\n"
              "      serial = \"S64DNX0R123456\", namespace = 1, destroy_data = true },\n"
              "    { name = \"tmpdir\", directory = \"/var/tmp/drivewatch\", file_size = \"4GiB\",\n"
              "      free_space_reserve = 0.1 },\n"
              "  ]", {}, {}, {}, nullptr,
              WriteAgingTargets},
    SchemaKey{"phases",
              "The phases, each on one target. kind is one of:\n"
              "  fill     trim the target, then write it sequentially (block_size,\n"
              "           queue_depth) up to fill_percent (default 50), recording the\n"
              "           1 s throughput series and the SLC cache size: the bytes\n"
              "           written until throughput stays below slc_drop_fraction (0.6)\n"
              "           of the initial plateau for slc_sustain (\"10s\"), on a rolling\n"
              "           median over slc_median_window (\"5s\").\n"
              "  reclaim  for each reclaim_idle duration ([\"1m\", \"2m\", \"3m\", \"4m\"]):\n"
              "           idle that long, then write sequentially for reclaim_write\n"
              "           (\"1m\"); reports how long the fast (cached) stage lasted.\n"
              "  perf     at the current fill level, a matrix of cells, each for\n"
              "           perf_duration (\"30s\") unless it says otherwise. Without cells\n"
              "           or a preset: sequential read and write, random 4KiB read and\n"
              "           write IOPS (queue_depth), QD1 512B random read and write\n"
              "           p99.9, and mixed 90/10 and 50/50 read/write at\n"
              "           perf_mixed_iops (1000). preset = \"builtin\": that matrix, then\n"
              "           the phase's cells; preset = \"phoronix\": Phoronix's fio\n"
              "           cells (4KiB random read and write at QD1 and QD32, 2MiB\n"
              "           sequential read at QD1, QD8 and QD32, and write at QD8), then\n"
              "           the phase's own cells, one [[aging.phases.cells]] table each:\n"
              "           name, access (\"sequential\" or \"random\"), operation\n"
              "           (\"read\", \"write\", \"trim\", or \"mix\" with read_percent),\n"
              "           block_size, queue_depth (1), jobs (1), rate_iops, and duration\n"
              "           or bytes. purge = true deallocates the target first,\n"
              "           precondition = true then writes it twice over in 128KiB\n"
              "           sequential writes, steady_state = true runs each cell in\n"
              "           rounds until the last five are steady or max_rounds (25), as\n"
              "           the SNIA SSS PTS does. Otherwise each cell runs `runs` (3)\n"
              "           times, and again while its standard error is over\n"
              "           max_standard_error (0.02) of its mean, up to max_runs (10), as\n"
              "           the Phoronix Test Suite does; it records the mean, standard\n"
              "           error and count, and every run. See docs/aging.md.\n"
              "  trim     fill to fill_percent (default 90), sequential write, trim the\n"
              "           first trim_percent (50), sequential write again.\n"
              "  retention-write   start the data-retention study `study`: write the\n"
              "           region [offset, offset + length) (whole MiB; length \"0B\": to\n"
              "           the end) with a verifiable pattern, flush, read it back as the\n"
              "           baseline. activation_energy (eV, 1.1) and\n"
              "           reference_temperature (°C, 30) set its Arrhenius equivalent age.\n"
              "           Until `drivewatch retention end STUDY`, no other phase writes\n"
              "           the region, on any target that reaches the drive; check-config\n"
              "           refuses overlapping studies and other writers on its drive.\n"
              "  retention-verify  read the study back, classify every bad block and\n"
              "           compare read latency with the baseline; storage_temperature\n"
              "           (°C) is where the drive sat powered off (unset: unknown).\n"
              "           Both take block_size (the I/O size, \"128KiB\") and\n"
              "           queue_depth. See docs/retention.md.\n"
              "  power-states  enter each power state the drive lists (APST off, put\n"
              "           back after), measure its power over dwell (\"10s\") and its exit\n"
              "           latency over exit_samples (20) timed 4 KiB reads, each settle\n"
              "           (\"1s\") after entering it; then idle and 10-IOPS power. Writes\n"
              "           nothing (no destroy_data), but needs a target with a serial.\n"
              "           See docs/aging.md.\n"
              "  endurance  write the whole target over and over, workload =\n"
              "           \"sequential\" (block_size, queue_depth) or \"jesd219\" (JESD219A's\n"
              "           enterprise mix of sizes and skewed random offsets), until\n"
              "           drive_writes passes (1), SMART Percentage Used reaches\n"
              "           percentage_used, or bytes_written; max_drive_writes_per_day\n"
              "           caps the rate. Resumes after a restart from\n"
              "           <state>/endurance/<phase>.progress. See docs/aging.md.\n"
              "  replay   replay a block trace onto the target: trace (fio's iolog\n"
              "           version 2 or 3, or blkparse's text output; trace_device keeps\n"
              "           one device or file of it), at replay_speed (\"recorded\", \"max\",\n"
              "           or a factor of the recorded rate), at most queue_depth (32) I/Os\n"
              "           in flight. Offsets past the target are folded onto it, I/O\n"
              "           aligned to its logical block size, I/O over 2 MiB split. It\n"
              "           writes only when the trace writes or trims (then destroy_data,\n"
              "           as any writer); a trace of reads needs only the serial. See\n"
              "           docs/aging.md.\n"
              "  sqlite   Phoronix's pts/sqlite on a directory target's file system:\n"
              "           threads (1) threads, each with its own database, insert inserts\n"
              "           (7500) rows each, one transaction per row, under journal_mode\n"
              "           (\"wal\") and synchronous (\"full\"); elapsed time, inserts/s and\n"
              "           commit latency. Its databases live in a work directory beside\n"
              "           the target's file, removed after the run. See docs/aging.md.\n"
              "  pgbench  Phoronix's pts/pgbench: a private PostgreSQL server (Debian's\n"
              "           postgresql-15) in that work directory, on a Unix socket there\n"
              "           only, initialised at scale (100), then clients (10) sessions\n"
              "           over jobs (1) threads for run_time (\"60s\"), mode \"read-write\"\n"
              "           or \"select-only\"; TPS, latency and the server's WAL fsyncs.\n"
              "Schedule: interval = \"30d\" (since the last run started), or window =\n"
              "\"01:00-05:00\" (local time) with weekdays = [\"sat\", \"sun\"] (default every\n"
              "day), once per window; neither means by hand only (drivewatch phase run).\n"
              "max_duration (default \"6h\") aborts a run that takes longer. A key that a\n"
              "kind does not use is an error. For example:\n"
              "  phases = [\n"
              "    { name = \"fill-half\", kind = \"fill\", target = \"scratch\", interval = \"30d\",\n"
              "      max_duration = \"4h\", fill_percent = 50 },\n"
              "    { name = \"perf-weekend\", kind = \"perf\", target = \"scratch\",\n"
              "      window = \"01:00-05:00\", weekdays = [\"sat\", \"sun\"] },\n"
              "    { name = \"client-trace\", kind = \"replay\", target = \"scratch\",\n"
              "      trace = \"/var/lib/drivewatch/traces/client.txt\", replay_speed = \"recorded\" },\n"
              "    { name = \"sqlite-4\", kind = \"sqlite\", target = \"scratch\", threads = 4,\n"
              "      interval = \"30d\" },\n"
              "    { name = \"pgbench-rw\", kind = \"pgbench\", target = \"scratch\", scale = 100,\n"
              "      clients = 10, interval = \"30d\" },\n"
              "  ]\n"
              "or, as tables, a perf matrix: the Phoronix cells on a preconditioned\n"
              "drive, and random reads at 100 IOPS for their latency:\n"
              "  [[aging.phases]]\n"
              "  name = \"phoronix\"\n"
              "  kind = \"perf\"\n"
              "  target = \"scratch\"\n"
              "  preset = \"phoronix\"\n"
              "  precondition = true\n"
              "  [[aging.phases.cells]]\n"
              "  name = \"rand_read_4k_100iops\"\n"
              "  access = \"random\"\n"
              "  operation = \"read\"\n"
              "  block_size = \"4KiB\"\n"
              "  rate_iops = 100", {}, {}, {}, nullptr,
              WriteAgingPhases},
};
const std::array kAgingTargetKeys{
    SchemaKey{"name",
              "The target's name, which phases name."},
    SchemaKey{"block_device",
              "A whole block device."},
    SchemaKey{"directory",
              "A directory in which the target's own file is written."},
    SchemaKey{"serial",
              "The serial of the drive behind block_device."},
    SchemaKey{"namespace",
              "The namespace behind block_device."},
    SchemaKey{"destroy_data",
              "The acknowledgement that data on the device is destroyed."},
    SchemaKey{"allow_signatures",
              "Whether a device with a filesystem or RAID signature is used."},
    SchemaKey{"file_size",
              "The size of the directory target's file."},
    SchemaKey{"free_space_reserve",
              "The share of the filesystem that stays free, 0 to 1."},
};

// The top tables are never hinted: "did you mean" points a misplaced
// [health] at [probes.health], not a misplaced [web] anywhere.
constexpr bool kElement = true;
constexpr bool kHinted = true;
// The sections written here. A light probe's section (config/probe_catalog.cc)
// is here only for the keys it has beyond enabled and interval, in the
// catalog's order; every other described probe's section comes from the
// catalog alone (Sections()).
const std::array kWrittenSections{
    SchemaSection{"web", kWebKeys, "", !kElement, !kHinted},
    SchemaSection{"log", kLogKeys, "", !kElement, !kHinted},
    SchemaSection{"state", kStateKeys, "", !kElement, !kHinted},
    SchemaSection{"discovery", kDiscoveryKeys, "", !kElement, !kHinted},
    SchemaSection{"drives", kDrivesKeys, "", !kElement, !kHinted, &Loader::ReadDrives},
    SchemaSection{"probes.thermal", kThermalKeys, ""},
    SchemaSection{"probes.power", kPowerKeys, "", !kElement, kHinted, &Loader::ReadPower},
    SchemaSection{"probes.power.meters", kMeterKeys, "One external power meter.", kElement},
    SchemaSection{"probes.read_latency", kReadLatencyKeys, "", !kElement, kHinted,
                  &Loader::ReadReadLatency},
    SchemaSection{"probes.read_latency.targets", kReadTargetKeys, "One read latency target.",
                  kElement},
    SchemaSection{"probes.self_test", kSelfTestKeys, "", !kElement, kHinted,
                  &Loader::ReadSelfTest},
    SchemaSection{"probes.self_test.drives", kSelfTestDriveKeys,
                  "One drive's self-test schedules.", kElement},
    SchemaSection{"aging", kAgingKeys, "", !kElement, kHinted, &Loader::ReadAging},
    SchemaSection{"aging.targets", kAgingTargetKeys, "One aging target.", kElement},
};

constexpr std::string_view kExamplePreamble =
    "drivewatch example configuration.\n"
    "\n"
    "Every key is set here to its built-in default, so this file changes\n"
    "nothing until you edit it; delete any key to keep its default. Check your\n"
    "edits with:\n"
    "\n"
    "  drivewatch check-config /etc/drivewatch/drivewatch.toml\n"
    "\n"
    "Durations are strings: a whole number and a unit, largest unit first,\n"
    "each unit at most once. Units: d (days), h, m, s, ms. Examples: \"500ms\",\n"
    "\"30s\", \"10m\", \"1h30m\", \"2d\". A bare number such as 30 is an error, since\n"
    "its unit would be a guess.\n"
    "\n"
    "Unknown keys are errors (with a \"did you mean\" hint), so a typo cannot\n"
    "silently fall back to a default.";

// The enabled and interval keys of a described probe.
std::array<SchemaKey, 2> ProbeKeys(const ProbeDescription& probe) {
  const std::string_view name = probe.name;
  return {
      SchemaKey{"enabled", probe.reads,
                Field<bool>{[name](Config& c) -> bool& { return c.probe(name).enabled; }}},
      SchemaKey{"interval", probe.interval_doc,
                Field<milliseconds>{
                    [name](Config& c) -> milliseconds& { return c.probe(name).interval; }},
                Range{milliseconds{1'000}, probe.max_interval}},
  };
}

// The written sections with every described probe's section: a probe with
// keys of its own gets its enabled and interval first, in its written
// section's place; the others come in the catalog's order, before the next
// written probe section or after the last one.
struct Schema {
  std::deque<std::string> paths;             // "probes.NAME"
  std::deque<std::vector<SchemaKey>> keys;   // each probe section's
  std::vector<SchemaSection> sections;

  Schema() {
    const std::span<const ProbeDescription> catalog = ProbeCatalog();
    std::size_t placed = 0;  // catalog[0, placed) have their section
    bool in_probes = false;
    const auto place = [&](std::size_t end, const SchemaSection* written) {
      for (; placed < end; ++placed) {
        const ProbeDescription& probe = catalog[placed];
        const std::string_view path = paths.emplace_back("probes." + std::string(probe.name));
        std::vector<SchemaKey>& k = keys.emplace_back();
        for (SchemaKey& key : ProbeKeys(probe)) k.push_back(std::move(key));
        const bool own_keys = written != nullptr && placed + 1 == end;
        if (own_keys) k.insert(k.end(), written->keys.begin(), written->keys.end());
        SchemaSection section = own_keys ? *written : SchemaSection{path, {}, ""};
        section.keys = k;
        sections.push_back(section);
      }
    };
    for (const SchemaSection& written : kWrittenSections) {
      const bool probe_section = written.path.starts_with("probes.");
      const auto probe = std::find_if(catalog.begin(), catalog.end(), [&](const auto& d) {
        return written.path == "probes." + std::string(d.name);
      });
      if (probe != catalog.end()) {
        const auto at = static_cast<std::size_t>(probe - catalog.begin());
        if (at < placed) {
          throw std::logic_error("config schema: [" + std::string(written.path) +
                                 "] is written out of the probe catalog's order");
        }
        place(at + 1, &written);
      } else {
        if (in_probes && !probe_section) place(catalog.size(), nullptr);
        sections.push_back(written);
      }
      in_probes = probe_section;
    }
    place(catalog.size(), nullptr);
  }
};

const Schema& TheSchema() {
  static const Schema schema;
  return schema;
}

}  // namespace

std::span<const SchemaSection> Sections() { return TheSchema().sections; }

const SchemaSection& Section(std::string_view path) {
  const std::span<const SchemaSection> sections = Sections();
  return *std::find_if(sections.begin(), sections.end(),
                       [&](const SchemaSection& s) { return s.path == path; });
}

std::vector<std::string_view> KeyNames(const SchemaSection& section) {
  std::vector<std::string_view> names;
  for (const SchemaKey& key : section.keys) names.push_back(key.name);
  return names;
}

std::string_view ExamplePreamble() { return kExamplePreamble; }

}  // namespace drivewatch::config::detail
