// SPDX-License-Identifier: Apache-2.0
// The config reader's inside, shared by the files that read one part of
// the config each: config.cc (the top and [drives]), config_values.cc (one
// value of each type), config_probes.cc, config_read_latency.cc,
// config_aging.cc and config_phases.cc; and by ToToml (config_toml_out.cc).
#pragma once

#include <toml++/toml.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/checks.h"
#include "config/config.h"
#include "config/schema.h"

namespace drivewatch::config::detail {

using std::chrono::milliseconds;

struct Located {
  std::string value;
  toml::source_position where;
};

constexpr std::array<std::string_view, 7> kWeekdayNames{
    "sun", "mon", "tue", "wed", "thu", "fri", "sat"};

// A key as TOML would write it, so the dotted path reads back unambiguously.
std::string KeyText(std::string_view key);
std::string Join(std::string_view path, std::string_view key);
// "string \"yes\"", "integer 30", "table": what a wrong-typed value was.
std::string Describe(const toml::node& node);
// "one of: \"a\", \"b\"", or the one name quoted.
std::string OneOf(std::span<const std::string_view> names);
// "line 3, column 5".
std::string At(const toml::source_position& where);
// Identify Controller pads SN and MN with spaces; some firmware pads with
// NULs instead (for util::Trim).
inline constexpr std::string_view kIdentifyPadding{" \0", 2};
// toml++'s description of a parse error, made to read like ours.
std::string FromToml(std::string_view description);
bool MatchesAny(const std::vector<std::string>& patterns, const std::string& s);
// "01:00-05:00".
std::string FormatWindow(const PhaseSchedule& s);
// The shortest text that reads back as `v`.
std::string Number(double v);

// Walks the parsed document once and records every problem it meets; it
// never stops at the first, so one check-config run shows them all.
class Loader {
 public:
  explicit Loader(std::string file, LoadOptions options = {})
      : file_(std::move(file)), options_(std::move(options)) {}
  LoadResult Load(const toml::table& root);

  // The keys of a section that are not simple (see SchemaSection::read_rest).
  void ReadDrives(const toml::table& drives, Config& out);
  void ReadPower(const toml::table& power, Config& out);
  // Reads the block size before the targets, whose offsets must be
  // multiples of it (config_read_latency.cc).
  void ReadReadLatency(const toml::table& t, Config& out);
  void ReadSelfTest(const toml::table& t, Config& out);
  // [[aging.targets]] and [[aging.phases]]. Phases are read after the
  // targets so a phase can be checked against the target it names
  // (config_aging.cc).
  void ReadAging(const toml::table& t, Config& out);

 private:
  // Every [[aging.targets]] entry with a name, as read, good or not: a
  // phase naming a target that has problems of its own gets no second
  // error for the name, and the checks between phases and targets see
  // what was written.
  struct ReadTarget {
    AgingTarget target;
    toml::source_position where;
  };
  // A phase read so far, for the checks between phases.
  struct ReadPhase {
    PhaseConfig phase;
    toml::source_position where;
  };

  // The top, [drives] (config.cc).

  // Reads one list of globs; reports bad and repeated entries at their own
  // position and returns the good ones with where they were.
  std::vector<Located> ReadPatterns(const toml::table& table,
                                    std::string_view name,
                                    std::string_view path);
  // include_<what> and exclude_<what>: each list on its own, then a pattern
  // in both, which would leave the include meaningless.
  void ReadSelection(const toml::table& drives, std::string_view what,
                     std::vector<std::string>& include_out,
                     std::vector<std::string>& exclude_out);

  // One value of each type, and the problems every reader reports (config_values.cc).

  void Report(const toml::source_position& where, std::string key,
              std::string problem);
  void WrongType(const toml::node& node, std::string key,
                 std::string_view expected);
  // A name or study that is a string, but not one drivewatch can use in a
  // file name and a label: says which character is wrong.
  void BadName(const toml::node& node, std::string key);
  // An array whose elements may be fine, but not their number.
  void BadCount(const toml::node& node, std::string key, std::string_view expected);
  // `noun` names what the keys of this table are ("probe"); empty means
  // "table" or "key" by the value's type.
  void CheckKeys(const toml::table& table, std::string_view path,
                 std::span<const std::string_view> known,
                 std::string_view noun);
  // '"a.b" or "c.b"': the places a key or table of this name belongs, or
  // empty when there is none.
  static std::string Elsewhere(std::string_view name, bool is_table);
  // The sub-table `name`, or null when it is absent or not a table (the
  // latter reported).
  const toml::table* Table(const toml::table& parent, std::string_view name,
                           std::string_view path);
  void ReadString(const toml::table& table, std::string_view name,
                  std::string_view path,
                  std::optional<std::string> (*check)(std::string_view),
                  std::string& out);
  void ReadLogLevel(const toml::table& table, std::string_view name,
                    std::string_view path, LogLevel& out);
  void ReadBool(const toml::table& table, std::string_view name,
                std::string_view path, bool& out);
  void ReadDuration(const toml::table& table, std::string_view name,
                    std::string_view path, Range range, milliseconds& out);
  // A part of a device or file: the optional `offset` and `length` sizes,
  // each a multiple of `unit`; `not_multiple` follows the quoted size in the
  // error otherwise. Absent keys leave their field as it is.
  void ReadRegion(const toml::table& t, std::string_view path, std::uint64_t unit,
                  const std::string& not_multiple, std::uint64_t& offset,
                  std::uint64_t& length);
  // The `serial` of one table in an array that has one table per drive:
  // present, a non-empty string, and not in `seen` yet (a duplicate names
  // where the first one is). Returns the serial as written, or "" after
  // reporting why there is none.
  std::string ReadUniqueSerial(const toml::table& t, std::string_view path,
                               std::string_view duplicate_has,
                               std::string_view expected, std::vector<Located>& seen);
  // A schedule string; reported at its own position.
  void ReadSchedule(const toml::table& table, std::string_view name,
                    std::string_view path, Schedule& out);
  std::optional<std::uint64_t> Size(const toml::node& node, std::string key);
  // An array of tables at `key`, or null (reported when it is not one).
  const toml::array* TableArray(const toml::table& t, std::string_view name,
                                std::string_view path);
  // The `name` of one array element: letters, digits, _, - and ., unique
  // among `seen`. Empty when missing or bad (reported).
  std::string ReadName(const toml::table& e, std::string_view path,
                       std::string_view noun, std::vector<Located>& seen);
  // A target's block_device or directory: exactly one is set. Returns
  // their nodes (null when absent).
  std::pair<const toml::node*, const toml::node*> ReadDeviceOrDirectory(
      const toml::table& e, std::string_view path, std::string& device_out,
      std::string& directory_out,
      std::optional<std::string> (*device_problem)(std::string_view) =
          detail::AbsolutePathProblem);
  // An integer or float in [min, max].
  void ReadNumber(const toml::table& t, std::string_view name,
                  std::string_view path, double min, double max,
                  std::string_view expected, double& out);
  // A whole number in [min, max].
  void ReadInteger(const toml::table& t, std::string_view name,
                   std::string_view path, std::int64_t min, std::int64_t max,
                   std::uint32_t& out);
  void ReadDurationList(const toml::table& t, std::string_view name,
                        std::string_view path, Range range,
                        std::vector<milliseconds>& out);

  // [[path.name]], an array of tables with the keys `keys`:
  // read_one(table, item, errors_before) fills one item, and an item that
  // has problems of its own is left out. `out` keeps its value when the
  // array is absent.
  template <class T, class ReadOne>
  void ReadTables(const toml::table& parent, std::string_view name, std::string_view path,
                  std::span<const std::string_view> keys, std::string_view expected,
                  std::vector<T>& out, ReadOne&& read_one) {
    const toml::array* array = TableArray(parent, name, path);
    if (array == nullptr) return;
    const std::string key = Join(path, name);
    std::vector<T> items;
    for (const toml::node& element : *array) {
      const toml::table* table = element.as_table();
      if (table == nullptr) {
        WrongType(element, key, expected);
        continue;
      }
      const std::size_t errors_before = errors_.size();
      CheckKeys(*table, key, keys, "");
      T item;
      read_one(*table, item, errors_before);
      if (errors_.size() == errors_before) items.push_back(std::move(item));
    }
    out = std::move(items);
  }

  // [probes.*] but read_latency (config_probes.cc).

  // A section's table as its SchemaSection says: its keys checked, its
  // simple values read, then the others by its read_rest.
  void ReadSection(const toml::table& table, const SchemaSection& section,
                   Config& out);
  void ReadSimple(const toml::table& table, std::string_view path,
                  const SchemaKey& key, Config& out);
  // probes.power.meters: an array of tables, one per drive serial.
  void ReadMeters(const toml::table& power, std::vector<PowerMeter>& out);
  void ReadCommand(const toml::node& node, std::vector<std::string>& out);

  // [probes.read_latency] (config_read_latency.cc).

  void ReadRates(const toml::table& t, std::vector<std::uint32_t>& out);
  void ReadWindows(const toml::table& t, std::vector<milliseconds>& out);
  void ReadReadTargets(const toml::table& t, std::uint32_t block_size,
                       std::vector<ReadLatencyTarget>& out);

  // [aging] and [[aging.targets]] (config_aging.cc).

  void ReadAgingTargets(const toml::table& t, std::vector<AgingTarget>& out);
  // Keys only one kind of target (a block device, a directory) has.
  void CheckTargetKindKeys(const toml::table& e, bool is_device, bool is_directory);
  // serial: required on a block device target, exactly as the device shows it.
  void ReadTargetSerial(const toml::table& e, bool is_device, AgingTarget& target);
  const ReadTarget* FindReadTarget(std::string_view name) const;
  // Two targets that reach the same bytes: one entry, one device path, or
  // one drive namespace by serial.
  static bool SameStorage(const AgingTarget& a, const AgingTarget& b);

  // [[aging.phases]] (config_phases.cc).

  // "[1GiB, 2GiB)", "[1GiB, the end of the target)".
  static std::string RegionText(const RetentionWriteParams& p);
  // Where `phase` (at `where`) would write bytes that a retention study
  // configured by an earlier phase holds, or the other way round: the
  // study's verify would then blame the drive for what drivewatch itself
  // overwrote.
  void CheckStudyOverlaps(const PhaseConfig& phase, const toml::source_position& where);
  void ReadPhases(const toml::table& t, std::vector<PhaseConfig>& out);
  // One [[aging.phases]] entry, as ReadTables' read_one; its steps below.
  void ReadPhaseEntry(const toml::table& e, PhaseConfig& phase, std::size_t errors_before,
                      std::vector<Located>& names);
  // The kind, its default parameters into `phase`; false when it is
  // missing or unknown (reported).
  bool ReadPhaseKind(const toml::table& e, PhaseConfig& phase);
  // The [[aging.targets]] entry a phase names, and the node that names it.
  struct PhaseTarget {
    const ReadTarget* named = nullptr;  // null: missing or unknown (reported)
    const toml::node* node = nullptr;
  };
  PhaseTarget ReadPhaseTarget(const toml::table& e, PhaseConfig& phase, bool kind_known);
  // A phase that writes a block device needs its destroy_data.
  void CheckWriteAcknowledged(const PhaseConfig& phase, const PhaseTarget& target);
  // A phase that changes power settings needs an NVMe drive by serial.
  void CheckPowerStateTarget(const PhaseConfig& phase, const PhaseTarget& target);
  void CheckDirectoryTarget(const PhaseConfig& phase, const PhaseTarget& target);
  // A key of another kind than the phase's is refused, naming the kinds
  // that have it.
  void CheckKindKeys(const toml::table& e, const PhaseParams& params);
  // The kind's own keys into `params` when the kind is known. Every other
  // kind's key that is present is checked all the same, into a value thrown
  // away, so one run shows every mistake.
  void ReadKindKeys(const toml::table& e, PhaseParams& params, bool kind_known);
  // One kind key (or a key of one of its tables, at `path`) as its
  // PhaseKey says; a missing key that the PhaseKey requires is reported.
  template <class T>
  void ReadPhaseKey(const toml::table& e, std::string_view path, const PhaseKey& key, T& out) {
    if (e.get(key.name) == nullptr) {
      if (!key.missing.empty()) {
        Report(e.source().begin, Join(path, key.name), std::string(key.missing));
      }
      return;
    }
    ReadPhaseValue(e, path, key, out);
  }
  // The value of a key that is there, by its type: sizes and whole numbers,
  // numbers, booleans, durations, names, perf cells.
  void ReadPhaseValue(const toml::table& e, std::string_view path, const PhaseKey& key,
                      std::uint32_t& out);
  void ReadPhaseValue(const toml::table& e, std::string_view path, const PhaseKey& key,
                      std::uint64_t& out);
  void ReadPhaseValue(const toml::table& e, std::string_view path, const PhaseKey& key,
                      double& out);
  void ReadPhaseValue(const toml::table& e, std::string_view path, const PhaseKey& key,
                      bool& out);
  void ReadPhaseValue(const toml::table& e, std::string_view path, const PhaseKey& key,
                      milliseconds& out);
  void ReadPhaseValue(const toml::table& e, std::string_view path, const PhaseKey& key,
                      std::vector<milliseconds>& out);
  void ReadPhaseValue(const toml::table& e, std::string_view path, const PhaseKey& key,
                      std::string& out);
  void ReadPhaseValue(const toml::table& e, std::string_view path, const PhaseKey& key,
                      std::vector<PerfCell>& out);
  void ReadPhaseValue(const toml::table& e, std::string_view path, const PhaseKey& key,
                      ReplaySpeed& out);
  // An optional value is set only when it reads without a problem.
  template <class T>
  void ReadPhaseValue(const toml::table& e, std::string_view path, const PhaseKey& key,
                      std::optional<T>& out) {
    T value{};
    const std::size_t errors_before = errors_.size();
    ReadPhaseValue(e, path, key, value);
    if (errors_.size() == errors_before) out = std::move(value);
  }
  static Range DurationRange(const PhaseKey& key);

  // perf (config_perf.cc). One [[aging.phases.cells]] table's own rules
  // (a mix has its read percent, duration or bytes, the limits of the
  // engine), after its keys were read without a problem.
  void CheckPerfCell(const toml::table& t, const std::string& path, const PerfCell& cell);
  // A perf phase as a whole: cell names unique across its preset and its
  // cells, block sizes the target's logical block size divides (where it
  // can be known now), and no reads of a purged, unwritten target.
  void CheckPerfPhase(const toml::table& e, const PerfParams& perf,
                      const ReadTarget* target);
  // A replay phase's trace, read through options_.inspect_trace into
  // params.trace_facts; what is wrong with it is reported at its `trace`
  // key.
  void InspectTrace(const toml::table& e, ReplayParams& params);
  // interval, or window (+ weekdays): see PhaseSchedule.
  void ReadPhaseSchedule(const toml::table& e, PhaseSchedule& out);

  std::string file_;
  LoadOptions options_;
  std::vector<ConfigError> errors_;
  std::vector<ReadTarget> read_targets_;
  std::vector<ReadPhase> read_phases_;
};

}  // namespace drivewatch::config::detail
