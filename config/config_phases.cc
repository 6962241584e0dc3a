// SPDX-License-Identifier: Apache-2.0
#include "config/loader.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "config/checks.h"

namespace drivewatch::config::detail {

namespace {

// The keys every phase kind has; each kind's own are in its struct
// (config/phase_kinds.h).
constexpr std::array<std::string_view, 7> kPhaseCommonKeys{
    "name", "kind", "target", "interval", "window", "weekdays", "max_duration"};

// Every [[aging.phases]] key: the common ones, then the kinds'.
std::span<const std::string_view> PhaseKeys() {
  static const std::vector<std::string_view> keys = [] {
    std::vector<std::string_view> out(kPhaseCommonKeys.begin(), kPhaseCommonKeys.end());
    for (const PhaseKey& key : PhaseKindKeys()) out.push_back(key.name);
    return out;
  }();
  return keys;
}

constexpr std::string_view kPhasesPath = "aging.phases";

constexpr Range kPhaseIntervalRange{milliseconds{60'000}, std::chrono::days{366}};
constexpr Range kMaxDurationRange{milliseconds{1'000}, std::chrono::days{30}};

}  // namespace

std::string Loader::RegionText(const RetentionWriteParams& p) {
  return "[" + FormatSize(p.region_offset) + ", " +
         (p.region_length == 0 ? std::string("the end of the target")
                               : FormatSize(p.region_offset + p.region_length)) +
         ")";
}

void Loader::CheckStudyOverlaps(const PhaseConfig& phase, const toml::source_position& where) {
  constexpr std::string_view kPath = "aging.phases";
  const ReadTarget* mine = FindReadTarget(phase.target);
  if (mine == nullptr || !PhaseKindWrites(phase.params)) return;
  // What a phase writes of its target: a study its region, any other kind
  // all of it (length 0: to the end).
  const auto written = [](const PhaseConfig& p) -> std::pair<std::uint64_t, std::uint64_t> {
    if (const auto* study = std::get_if<RetentionWriteParams>(&p.params)) {
      return {study->region_offset, study->region_length};
    }
    return {0, 0};
  };
  for (const ReadPhase& other : read_phases_) {
    const PhaseConfig& o = other.phase;
    const ReadTarget* theirs = FindReadTarget(o.target);
    if (theirs == nullptr || !PhaseKindWrites(o.params)) continue;
    const auto* mine_study = std::get_if<RetentionWriteParams>(&phase.params);
    const auto* their_study = std::get_if<RetentionWriteParams>(&o.params);
    if (!mine_study && !their_study) continue;
    if (mine_study && their_study && mine_study->study == their_study->study) continue;

    // Two targets are compared on the storage they reach now (a partition
    // and its disk, two loop devices over one file); when either cannot
    // be resolved (a drive not plugged in), by name.
    std::optional<StorageOverlap> shared;
    if (phase.target != o.target && options_.compare_storage) {
      const auto [a0, al] = written(phase);
      const auto [b0, bl] = written(o);
      shared = options_.compare_storage(mine->target, a0, al, theirs->target, b0, bl);
    }
    std::string on = "target " + Quote(phase.target);
    if (shared) {
      if (!shared->overlap) continue;
      on += " (which reaches the same bytes as target " + Quote(o.target) + ": " +
            shared->shared + ")";
    } else {
      if (!SameStorage(mine->target, theirs->target)) continue;
      if (phase.target != o.target) on += " (the same storage as " + Quote(o.target) + ")";
      if (mine_study && their_study) {
        const std::uint64_t a0 = mine_study->region_offset, b0 = their_study->region_offset;
        const std::uint64_t a1 = mine_study->region_length ? a0 + mine_study->region_length : UINT64_MAX;
        const std::uint64_t b1 = their_study->region_length ? b0 + their_study->region_length : UINT64_MAX;
        if (!(a0 < b1 && b0 < a1)) continue;
      }
    }
    if (mine_study && their_study) {
      const RetentionWriteParams& a = *mine_study;
      const RetentionWriteParams& b = *their_study;
      Report(where, std::string(kPath),
             "retention study " + Quote(a.study) + " region " + RegionText(a) +
                 " on " + on + " overlaps retention study " + Quote(b.study) + " region " +
                 RegionText(b) + " of phase " + Quote(o.name) + " at " + At(other.where) +
                 " (expected the regions of two studies on one drive not to overlap: "
                 "each verify would find the other's blocks)");
      continue;
    }
    const PhaseConfig& study = mine_study ? phase : o;
    const RetentionWriteParams& held = mine_study ? *mine_study : *their_study;
    const PhaseConfig& writer = mine_study ? o : phase;
    const toml::source_position& study_at = mine_study ? where : other.where;
    const toml::source_position& writer_at = mine_study ? other.where : where;
    Report(where, std::string(kPath),
           "phase " + Quote(writer.name) + " (kind " + Quote(PhaseKindName(writer.params)) +
               ", at " + At(writer_at) + ") writes " + on + ", where retention study " +
               Quote(held.study) + " of phase " + Quote(study.name) + " (at " + At(study_at) +
               ") holds the region " + RegionText(held) +
               " (expected another target for it; once the study is over, end it with "
               "drivewatch retention end " + held.study + " and remove phase " +
               Quote(study.name) + ")");
  }
}

void Loader::CheckWriteAcknowledged(const PhaseConfig& phase, const PhaseTarget& target) {
  const ReadTarget& named = *target.named;
  if (!PhaseKindWrites(phase.params) || named.target.block_device.empty() ||
      named.target.destroy_data) {
    return;
  }
  std::string what;
  if (const auto* replay = std::get_if<ReplayParams>(&phase.params)) {
    what = replay->trace_facts.read
               ? " (trace " + replay->trace + " writes or trims from line " +
                     std::to_string(replay->trace_facts.first_write_line) + " on)"
               : " (trace " + replay->trace + " was not read, so it counts as writing)";
  }
  Report(target.node->source().begin, std::string(kPhasesPath) + ".target",
         "phase kind " + Quote(PhaseKindName(phase.params)) + " writes target " +
             Quote(phase.target) + what + ", which does not acknowledge that all data on " +
             named.target.block_device +
             " will be destroyed (expected destroy_data = true in its "
             "[[aging.targets]] entry at " + At(named.where) + ")");
}

void Loader::CheckPowerStateTarget(const PhaseConfig& phase, const PhaseTarget& target) {
  const ReadTarget& named = *target.named;
  if (!PhaseKindChangesPowerState(phase.params)) return;
  if (named.target.serial.empty()) {
    Report(target.node->source().begin, std::string(kPhasesPath) + ".target",
           "phase kind " + Quote(PhaseKindName(phase.params)) +
               " changes the power settings of the drive of target " +
               Quote(phase.target) + ", which names no drive serial (expected an "
               "[[aging.targets]] entry with block_device and serial, not the one at " +
               At(named.where) + ")");
  } else if (!named.target.block_device.empty()) {
    if (auto problem = detail::NotNvmeNamespaceProblem(named.target.block_device)) {
      Report(target.node->source().begin, std::string(kPhasesPath) + ".target",
             "phase kind " + Quote(PhaseKindName(phase.params)) +
                 " sends NVMe admin commands (Identify, Set Features 02h and 0Ch) to the "
                 "drive of target " + Quote(phase.target) + ", and its block_device " +
                 *problem + " (expected a target whose block_device is an NVMe "
                 "namespace such as \"/dev/nvme0n1\", not the one at " +
                 At(named.where) + ")");
    }
  }
}

void Loader::CheckDirectoryTarget(const PhaseConfig& phase, const PhaseTarget& target) {
  const ReadTarget& named = *target.named;
  if (!PhaseKindNeedsDirectory(phase.params) || !named.target.directory.empty()) return;
  Report(target.node->source().begin, std::string(kPhasesPath) + ".target",
         "phase kind " + Quote(PhaseKindName(phase.params)) +
             " runs an application on a file system, but target " + Quote(phase.target) +
             " is the block device " + named.target.block_device +
             " (expected an [[aging.targets]] entry with directory, not the one at " +
             At(named.where) + ")");
}

bool Loader::ReadPhaseKind(const toml::table& e, PhaseConfig& phase) {
  const std::span<const std::string_view> kinds = PhaseKindNames();
  const std::string path = std::string(kPhasesPath) + ".kind";
  const toml::node* kind = e.get("kind");
  if (kind == nullptr) {
    Report(e.source().begin, path, "missing kind (expected " + OneOf(kinds) + ")");
  } else if (const auto* v = kind->as_string(); v == nullptr) {
    WrongType(*kind, path, "a string, " + OneOf(kinds));
  } else if (std::optional<PhaseParams> params = DefaultPhaseParams(v->get())) {
    phase.params = std::move(*params);
    return true;
  } else {
    Report(kind->source().begin, path,
           Quote(v->get()) + " is not a phase kind (expected " + OneOf(kinds) + ")");
  }
  return false;
}

Loader::PhaseTarget Loader::ReadPhaseTarget(const toml::table& e, PhaseConfig& phase,
                                            bool kind_known) {
  const std::string path = std::string(kPhasesPath) + ".target";
  const toml::node* target = e.get("target");
  if (target == nullptr) {
    Report(e.source().begin, path,
           "missing target (expected the name of an [[aging.targets]] "
           "entry)");
    return {};
  }
  const auto* v = target->as_string();
  if (v == nullptr) {
    WrongType(*target, path, "the name of an [[aging.targets]] entry");
    return {};
  }
  if (FindReadTarget(v->get()) == nullptr) {
    std::string known;
    for (const ReadTarget& a : read_targets_) {
      known += (known.empty() ? "" : ", ") + Quote(a.target.name);
    }
    Report(target->source().begin, path,
           Quote(v->get()) + " is not an [[aging.targets]] name " +
               (known.empty() ? std::string("(no targets are configured)")
                              : "(expected one of: " + known + ")"));
    return {};
  }
  phase.target = v->get();
  const PhaseTarget named{FindReadTarget(phase.target), target};
  if (kind_known) {
    // Whether a replay writes is known once its trace is read, later.
    if (!std::holds_alternative<ReplayParams>(phase.params)) {
      CheckWriteAcknowledged(phase, named);
    }
    CheckPowerStateTarget(phase, named);
    CheckDirectoryTarget(phase, named);
  }
  return named;
}

void Loader::ReadPhaseEntry(const toml::table& e, PhaseConfig& phase, std::size_t errors_before,
                            std::vector<Located>& names) {
  phase.name = ReadName(e, kPhasesPath, "phase", names);
  const bool kind_known = ReadPhaseKind(e, phase);
  const PhaseTarget named = ReadPhaseTarget(e, phase, kind_known);
  if (errors_.size() == errors_before) CheckKindKeys(e, phase.params);
  ReadPhaseSchedule(e, phase.schedule);
  ReadDuration(e, "max_duration", kPhasesPath, kMaxDurationRange,
               phase.max_duration);
  ReadKindKeys(e, phase.params, kind_known);
  if (const auto* perf = std::get_if<PerfParams>(&phase.params);
      perf != nullptr && errors_.size() == errors_before) {
    CheckPerfPhase(e, *perf, FindReadTarget(phase.target));
  }
  if (auto* replay = std::get_if<ReplayParams>(&phase.params); replay && kind_known) {
    const std::size_t errors_before_trace = errors_.size();
    if (!replay->trace.empty()) InspectTrace(e, *replay);
    // A trace that could not be read says so; no second error for it.
    if (named.named != nullptr && errors_.size() == errors_before_trace) {
      CheckWriteAcknowledged(phase, named);
    }
  }
  if (kind_known && options_.check_tools) {
    if (Status s = options_.check_tools(phase.params); !s) {
      Report(e.get("kind")->source().begin, std::string(kPhasesPath) + ".kind",
             "phase " + Quote(phase.name) + " (kind " + Quote(PhaseKindName(phase.params)) +
                 "): " + s.error().message);
    }
  }
  if (errors_.size() == errors_before) {
    CheckStudyOverlaps(phase, e.source().begin);
    read_phases_.push_back(ReadPhase{phase, e.source().begin});
  }
}

void Loader::ReadPhases(const toml::table& t, std::vector<PhaseConfig>& out) {
  std::vector<Located> names;
  ReadTables(t, "phases", "aging", PhaseKeys(), "a table with name, kind and target", out,
             [&](const toml::table& e, PhaseConfig& phase, std::size_t errors_before) {
               ReadPhaseEntry(e, phase, errors_before, names);
             });
}

void Loader::CheckKindKeys(const toml::table& e, const PhaseParams& params) {
  for (const PhaseKey& key : PhaseKindKeys()) {
    const toml::node* n = e.get(key.name);
    if (n == nullptr || PhaseKindHasKey(params, key.name)) continue;
    std::string users;
    ForEachPhaseKind([&](const auto& kind) {
      if (PhaseKindHasKey(kind, key.name)) {
        users += (users.empty() ? "" : ", ") + Quote(std::decay_t<decltype(kind)>::kName);
      }
    });
    Report(n->source().begin, "aging.phases." + std::string(key.name),
           "not used by kind " + Quote(PhaseKindName(params)) + " (expected only on kind " +
               users + ")");
  }
}

void Loader::ReadKindKeys(const toml::table& e, PhaseParams& params, bool kind_known) {
  constexpr std::string_view kPath = "aging.phases";
  std::vector<std::string_view> read;
  if (kind_known) {
    std::visit(
        [&](auto& p) {
          std::decay_t<decltype(p)>::Keys(p, [&](const PhaseKey& key, auto& field) {
            ReadPhaseKey(e, kPath, key, field);
            read.push_back(key.name);
          });
        },
        params);
  }
  ForEachPhaseKind([&](auto scratch) {
    decltype(scratch)::Keys(scratch, [&](const PhaseKey& key, auto& field) {
      if (std::find(read.begin(), read.end(), key.name) != read.end()) return;
      read.push_back(key.name);
      if (e.get(key.name) != nullptr) ReadPhaseValue(e, kPath, key, field);
    });
  });
}

void Loader::ReadPhaseValue(const toml::table& e, std::string_view path, const PhaseKey& key,
                            std::uint32_t& out) {
  if (key.type == PhaseKeyType::kInteger) {
    return ReadInteger(e, key.name, path, static_cast<std::int64_t>(key.min),
                       static_cast<std::int64_t>(key.max), out);
  }
  std::uint64_t size = out;
  ReadPhaseValue(e, path, key, size);
  out = static_cast<std::uint32_t>(size);  // key.max keeps it in range
}

void Loader::ReadPhaseValue(const toml::table& e, std::string_view path, const PhaseKey& key,
                            std::uint64_t& out) {
  const toml::node* node = e.get(key.name);
  const std::string name = Join(path, key.name);
  const std::optional<std::uint64_t> size = Size(*node, name);
  if (!size) return;
  if (static_cast<double>(*size) < key.min || static_cast<double>(*size) > key.max ||
      *size % key.multiple != 0) {
    return Report(node->source().begin, name,
                  Quote(FormatSize(*size)) + std::string(key.expected));
  }
  out = *size;
}

void Loader::ReadPhaseValue(const toml::table& e, std::string_view path, const PhaseKey& key,
                            double& out) {
  ReadNumber(e, key.name, path, key.min, key.max, key.expected, out);
}

void Loader::ReadPhaseValue(const toml::table& e, std::string_view path, const PhaseKey& key,
                            bool& out) {
  ReadBool(e, key.name, path, out);
}

void Loader::ReadPhaseValue(const toml::table& e, std::string_view path, const PhaseKey& key,
                            milliseconds& out) {
  ReadDuration(e, key.name, path, DurationRange(key), out);
}

void Loader::ReadPhaseValue(const toml::table& e, std::string_view path, const PhaseKey& key,
                            std::vector<milliseconds>& out) {
  ReadDurationList(e, key.name, path, DurationRange(key), out);
}

void Loader::ReadPhaseValue(const toml::table& e, std::string_view path, const PhaseKey& key,
                            std::string& out) {
  const std::string name = Join(path, key.name);
  const toml::node* node = e.get(key.name);
  const auto* v = node->as_string();
  if (key.type == PhaseKeyType::kPath) {
    if (v == nullptr) return WrongType(*node, name, "an absolute path");
    if (auto problem = AbsolutePathProblem(v->get())) {
      return Report(node->source().begin, name, *problem);
    }
    out = v->get();
    return;
  }
  if (key.type == PhaseKeyType::kText) {
    if (v == nullptr) return WrongType(*node, name, "a non-empty string");
    if (v->get().empty() || std::any_of(v->get().begin(), v->get().end(), [](char c) {
          return std::iscntrl(static_cast<unsigned char>(c));
        })) {
      return Report(node->source().begin, name,
                    Quote(v->get()) + " is empty or holds a control character (expected " +
                        PhaseKeyRange(key) + ")");
    }
    out = v->get();
    return;
  }
  if (v == nullptr) {
    WrongType(*node, name,
              key.choices.empty() ? "a non-empty string of letters, digits, _, - and ."
                                  : "a string, " + PhaseKeyRange(key));
  } else if (v->get().empty() ||
             !std::all_of(v->get().begin(), v->get().end(), [](char c) {
               return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ||
                      c == '.';
             })) {
    BadName(*node, name);
  } else if (!key.choices.empty() &&
             std::find(key.choices.begin(), key.choices.end(), v->get()) == key.choices.end()) {
    Report(node->source().begin, name,
           Quote(v->get()) + " is not one of its values (expected " + PhaseKeyRange(key) + ")");
  } else {
    out = v->get();
  }
}

void Loader::ReadPhaseValue(const toml::table& e, std::string_view path, const PhaseKey& key,
                            std::vector<PerfCell>& out) {
  const std::string name = Join(path, key.name);
  const toml::node* node = e.get(key.name);
  const std::string expected = "an array of tables, written [[" + name + "]]";
  const toml::array* array = node->as_array();
  if (array == nullptr) return WrongType(*node, name, expected);
  std::vector<std::string_view> field_names;
  for (const PhaseKey& field : key.fields) field_names.push_back(field.name);
  std::vector<PerfCell> cells;
  std::vector<Located> names;
  for (std::size_t i = 0; i < array->size(); ++i) {
    const toml::node& element = *array->get(i);
    const std::string at = name + "[" + std::to_string(i) + "]";
    const toml::table* t = element.as_table();
    if (t == nullptr) {
      WrongType(element, at, "a table with name, access, operation and block_size, in " + expected);
      continue;
    }
    const std::size_t errors_before = errors_.size();
    CheckKeys(*t, at, field_names, "");
    PerfCell cell;
    PerfCell::Keys(cell, [&](const PhaseKey& field, auto& value) {
      ReadPhaseKey(*t, at, field, value);
    });
    if (const toml::node* n = t->get("name"); n != nullptr && !cell.name.empty()) {
      const auto first = std::find_if(names.begin(), names.end(),
                                      [&](const Located& l) { return l.value == cell.name; });
      if (first != names.end()) {
        Report(n->source().begin, at + ".name",
               Quote(cell.name) + " is already a cell of this phase, at " + At(first->where) +
                   " (expected unique names)");
      } else {
        names.push_back(Located{cell.name, n->source().begin});
      }
    }
    if (errors_.size() == errors_before) CheckPerfCell(*t, at, cell);
    if (errors_.size() == errors_before) cells.push_back(std::move(cell));
  }
  out = std::move(cells);
}

void Loader::ReadPhaseValue(const toml::table& e, std::string_view path, const PhaseKey& key,
                            ReplaySpeed& out) {
  const toml::node* node = e.get(key.name);
  const std::string name = Join(path, key.name);
  if (const auto* text = node->as_string()) {
    if (text->get() == "recorded") {
      out = ReplaySpeed{};
    } else if (text->get() == "max") {
      out = ReplaySpeed{.max = true};
    } else {
      Report(node->source().begin, name,
             Quote(text->get()) + " is not a replay speed (expected " +
                 std::string(key.expected) + ")");
    }
    return;
  }
  double scale = 1;
  const std::size_t errors_before = errors_.size();
  ReadNumber(e, key.name, path, key.min, key.max, key.expected, scale);
  if (errors_.size() == errors_before) out = ReplaySpeed{.scale = scale};
}

void Loader::InspectTrace(const toml::table& e, ReplayParams& params) {
  if (!options_.inspect_trace) return;
  Expected<TraceFacts> facts = options_.inspect_trace(params);
  if (!facts) {
    return Report(e.get("trace")->source().begin, "aging.phases.trace", facts.error().message);
  }
  params.trace_facts = *facts;
}

Range Loader::DurationRange(const PhaseKey& key) {
  return Range{milliseconds{static_cast<std::int64_t>(key.min)},
               milliseconds{static_cast<std::int64_t>(key.max)}};
}

void Loader::ReadPhaseSchedule(const toml::table& e, PhaseSchedule& out) {
  constexpr std::string_view kPath = "aging.phases";
  const toml::node* interval = e.get("interval");
  const toml::node* window = e.get("window");
  const toml::node* weekdays = e.get("weekdays");
  if (interval != nullptr && window != nullptr) {
    Report(window->source().begin, std::string(kPath) + ".window",
           "both interval and window are set (expected one of them, or "
           "neither for a phase run only by hand)");
    return;
  }
  ReadDuration(e, "interval", kPath, kPhaseIntervalRange, out.interval);
  if (window != nullptr) {
    const std::string key = std::string(kPath) + ".window";
    constexpr std::string_view kExpected =
        "a local time window \"HH:MM-HH:MM\", such as \"01:00-05:00\"";
    const auto* v = window->as_string();
    if (v == nullptr) return WrongType(*window, key, kExpected);
    auto minutes = [](std::string_view hm) -> int {
      if (hm.size() != 5 || hm[2] != ':' || !std::isdigit(hm[0]) ||
          !std::isdigit(hm[1]) || !std::isdigit(hm[3]) || !std::isdigit(hm[4]))
        return -1;
      const int h = (hm[0] - '0') * 10 + (hm[1] - '0');
      const int m = (hm[3] - '0') * 10 + (hm[4] - '0');
      return h < 24 && m < 60 ? h * 60 + m : -1;
    };
    const std::string_view text = v->get();
    const int start = text.size() == 11 && text[5] == '-'
                          ? minutes(text.substr(0, 5)) : -1;
    const int end = text.size() == 11 && text[5] == '-'
                        ? minutes(text.substr(6)) : -1;
    if (start < 0 || end < 0 || start == end) {
      return Report(window->source().begin, key,
                    Quote(text) + " is not a time window (expected " +
                        std::string(kExpected) + ", start and end differing)");
    }
    out.window_start = start;
    out.window_end = end;
  }
  if (weekdays != nullptr) {
    const std::string key = std::string(kPath) + ".weekdays";
    if (window == nullptr) {
      return Report(weekdays->source().begin, key,
                    "weekdays without a window (expected window = "
                    "\"HH:MM-HH:MM\" beside it)");
    }
    const std::string expected =
        "a non-empty array of days, each one of: " + OneOf(kWeekdayNames).substr(8);
    const toml::array* array = weekdays->as_array();
    if (array == nullptr) return WrongType(*weekdays, key, expected);
    if (array->empty()) return BadCount(*weekdays, key, expected);
    std::uint8_t mask = 0;
    for (const toml::node& element : *array) {
      const auto* d = element.as_string();
      if (d == nullptr) return WrongType(element, key, expected);
      auto it = std::find(kWeekdayNames.begin(), kWeekdayNames.end(), d->get());
      if (it == kWeekdayNames.end()) {
        return Report(element.source().begin, key,
                      Quote(d->get()) + " is not a weekday (expected " +
                          OneOf(kWeekdayNames) + ")");
      }
      const auto bit = static_cast<std::uint8_t>(1u << (it - kWeekdayNames.begin()));
      if (mask & bit) {
        return Report(element.source().begin, key,
                      Quote(d->get()) + " is listed twice (expected each day once)");
      }
      mask |= bit;
    }
    out.weekdays = mask;
  }
}

}  // namespace drivewatch::config::detail
