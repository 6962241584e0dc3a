// SPDX-License-Identifier: Apache-2.0
// `drivewatch report`'s inputs: history records and retention studies,
// each checked (a history is untrusted input, DESIGN.md decision 12), the
// same run from two files counted once, and every record or value left out
// said with its file and why.
#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <set>
#include <tuple>

#include "aging/report/drive_report_detail.h"
#include "aging/report/report_format.h"
#include "config/kinds/perf.h"

namespace drivewatch::aging::drive_report_detail {
namespace {

using report_format::Format;

std::string Text(const Json& r, std::string_view key) {
  const Json* v = Find(r, key);
  return v != nullptr && v->is_string() ? AsString(*v) : std::string();
}

// A run as the report keeps it, without what it reads from its results
// and series; `order` is its place over all sources.
Run RunOf(const RunRecord& record, const std::string& source, std::uint64_t order) {
  Run run;
  run.source = source;
  run.drive = record.Drive();
  run.id = record.id;
  run.phase = record.phase;
  run.kind = record.kind;
  run.outcome = record.outcome;
  run.target = record.target;
  run.model = record.model;
  run.firmware = record.firmware;
  run.start = *record.start;
  run.end = *record.end;
  run.order = order;
  return run;
}

// A step as the report keeps it, without its values.
Step StepOf(const StepRecord& record, const std::string& source, std::uint64_t order) {
  Step s;
  s.source = source;
  s.drive = record.Drive();
  s.run = record.run;
  s.phase = record.phase;
  s.test = record.test;
  s.step = record.step;
  s.time = record.time;
  s.order = order;
  return s;
}

// The numbers of an object: finite and 0 or more (every measure is);
// a negative one is left out and said. Other types (an old record's
// nested objects, text) are not measures and are passed over.
std::map<std::string, double, std::less<>> Numbers(const Json* object, const std::string& where,
                                                   std::vector<std::string>& problems) {
  std::map<std::string, double, std::less<>> out;
  if (object == nullptr) return out;
  for (const auto& [key, v] : Members(*object)) {
    if (!v.is_number()) continue;
    const double d = AsDouble(v);
    if (!std::isfinite(d) || d < 0) {
      problems.push_back(where + ": " + key + " is " + DumpJson(v) +
                         " (expected a number, 0 or more): left out");
      continue;
    }
    out.emplace(key, d);
  }
  return out;
}


// The keys of runs and steps already taken, as 64-bit hashes in an open-
// addressed table: 16 bytes a record at most, so deduplicating a history
// of a million records costs some 16 MB, not a string per record. Two
// different records share a hash with odds of about n^2 / 2^65 (3e-8 for
// a million): the later would be counted as a duplicate.
class SeenKeys {
 public:
  // False when `key` was seen before.
  bool Insert(std::string_view key) {
    std::uint64_t h = std::hash<std::string_view>{}(key);
    if (h == 0) h = 1;  // 0 marks an empty slot
    if ((size_ + 1) * 2 > slots_.size()) Grow();
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = h & mask;; i = (i + 1) & mask) {
      if (slots_[i] == h) return false;
      if (slots_[i] == 0) {
        slots_[i] = h;
        ++size_;
        return true;
      }
    }
  }

 private:
  void Grow() {
    std::vector<std::uint64_t> old(std::max<std::size_t>(1024, slots_.size() * 2), 0);
    old.swap(slots_);
    const std::size_t mask = slots_.size() - 1;
    for (std::uint64_t h : old) {
      if (h == 0) continue;
      std::size_t i = h & mask;
      while (slots_[i] != 0) i = (i + 1) & mask;
      slots_[i] = h;
    }
  }
  std::vector<std::uint64_t> slots_;
  std::size_t size_ = 0;
};

// What a report can tell two runs apart by: every section picks its rows
// by a rule on these (kind, fill level, which results and series it has,
// its perf cells: PickRuns' `wanted`, GroupsOf), so of the runs that share
// all of them, only the first and the latest can ever be a row. Keeping
// those two per class (and the runs asked for by id) keeps every row the
// whole history would give, in memory bounded by the classes, not the
// records.
std::string ClassOf(const Run& r) {
  std::string key = r.drive + '\n' + r.kind + '\n' + r.phase + '\n' + r.outcome + '\n' +
                    std::to_string(FillLevel(r)) + '\n';
  for (const auto& [k, v] : r.results) key += k + ',';
  key += '\n';
  if (r.series != nullptr) {
    for (const auto& [k, v] : Members(*r.series)) {
      const bool empty = (v.is_array() && Items(v).empty()) ||
                         (v.is_object() && Members(v).empty());
      key += k + ':' + std::to_string(static_cast<int>(v.type())) + (empty ? "0," : "1,");
    }
  }
  key += '\n';
  for (const Cell& c : r.cells) key += c.name + '=' + c.Label() + ',';
  return key;
}

// Orders runs as the report lists them: by start, then id, then the order
// read (so the sort is stable).
bool Before(const Run& a, const Run& b) {
  return std::tie(a.start, a.id, a.order) < std::tie(b.start, b.id, b.order);
}
bool StepBefore(const Step& a, const Step& b) {
  return std::tie(a.time, a.order) < std::tie(b.time, b.order);
}

// The runs and steps a report can show, kept while the history streams by.
class Keeper {
 public:
  explicit Keeper(const std::vector<std::string>& wanted)
      : wanted_(wanted.begin(), wanted.end()) {}

  void Take(Run&& run) {
    auto r = std::make_shared<const Run>(std::move(run));
    if (!r->model.empty()) {
      auto& [named, model] = names_[r->drive];
      if (!named || !Before(*r, *named)) {
        named = r;
        model = r->model;
      }
    }
    if (wanted_.count(r->id)) asked_.push_back(r);
    StepRuns& sr = step_runs_[r->drive];
    if (r->id == sr.first_id) sr.first = r;
    if (r->id == sr.last_id) sr.last = r;
    auto& [first, last] = classes_[ClassOf(*r)];
    if (!first || Before(*r, *first)) first = r;
    if (!last || !Before(*r, *last)) last = r;
  }

  void Take(Step&& step) {
    Log& log = logs_[step.drive];
    ++log.totals.count;
    if (!log.first) {
      log.first_test = step.test;
    } else if (step.test != log.first_test) {
      log.totals.one_test = false;
    }
    StepRuns& sr = step_runs_[step.drive];
    if (!log.first || StepBefore(step, *log.first)) {
      log.first = step;
      if (sr.first_id != step.run) sr.first.reset();
      sr.first_id = step.run;
    }
    if (wanted_.count(step.run)) {
      auto [it, fresh] = log.asked.try_emplace(step.run, step);
      if (!fresh && !StepBefore(step, it->second)) it->second = step;
    }
    const bool latest = log.last.empty() || !StepBefore(step, log.last.rbegin()->second);
    if (latest) {
      if (sr.last_id != step.run) sr.last.reset();
      sr.last_id = step.run;
    }
    log.last.emplace(std::make_pair(step.time, step.order), std::move(step));
    if (log.last.size() > kPassRows) log.last.erase(log.last.begin());
  }

  void Finish(Inputs& in) {
    std::set<const Run*> taken;
    auto keep = [&](const std::shared_ptr<const Run>& r) {
      if (r && taken.insert(r.get()).second) in.runs.push_back(*r);
    };
    for (const auto& [key, ends] : classes_) {
      keep(ends.first);
      keep(ends.second);
    }
    for (const auto& r : asked_) keep(r);
    for (const auto& [drive, sr] : step_runs_) {
      keep(sr.first);
      keep(sr.last);
    }
    std::sort(in.runs.begin(), in.runs.end(), Before);
    for (auto& [drive, log] : logs_) {
      in.step_totals[drive] = log.totals;
      std::vector<Step> steps;
      if (log.first) steps.push_back(*log.first);
      for (auto& [run, step] : log.asked) steps.push_back(step);
      for (auto& [when, step] : log.last) steps.push_back(step);
      std::sort(steps.begin(), steps.end(), StepBefore);
      steps.erase(std::unique(steps.begin(), steps.end(),
                              [](const Step& a, const Step& b) { return a.order == b.order; }),
                  steps.end());
      for (Step& st : steps) in.steps.push_back(std::move(st));
    }
    std::stable_sort(in.steps.begin(), in.steps.end(), StepBefore);
    for (const auto& [drive, named] : names_) in.drive_names[drive] = named.second;
  }

 private:
  struct Log {
    Inputs::StepTotals totals;
    std::string first_test;
    std::optional<Step> first;
    std::map<std::string, Step> asked;  // a wanted run id's last pass
    std::map<std::pair<double, std::uint64_t>, Step> last;  // the latest kPassRows
  };
  // The runs of a drive's first and latest pass, for their age.
  struct StepRuns {
    std::string first_id, last_id;
    std::shared_ptr<const Run> first, last;
  };
  std::set<std::string, std::less<>> wanted_;
  std::map<std::string, std::pair<std::shared_ptr<const Run>, std::shared_ptr<const Run>>> classes_;
  std::vector<std::shared_ptr<const Run>> asked_;
  std::map<std::string, StepRuns> step_runs_;
  std::map<std::string, Log> logs_;
  std::map<std::string, std::pair<std::shared_ptr<const Run>, std::string>> names_;
};

// The values left out are listed up to a bound, then counted.
void TrimProblems(Inputs& in) {
  if (in.problems.size() > kMaxProblemsListed) {
    in.problems_unlisted += in.problems.size() - kMaxProblemsListed;
    in.problems.resize(kMaxProblemsListed);
  }
}

// A run's series that are arrays of numbers, each finite and 0 or more; an
// array holding anything else is left out and said.
void ReadSeriesNumbers(Run& run, const std::string& source, std::vector<std::string>& problems) {
  for (const auto& [key, v] : Members(*run.series)) {
    if (!v.is_array() || Items(v).empty() ||
        !Items(v).front().is_number()) {
      continue;  // arrays of records are read where they are used
    }
    std::vector<double> values;
    for (const Json& x : Items(v)) {
      const double d = AsDouble(x, -1);
      if (!x.is_number() || !std::isfinite(d) || d < 0) {
        problems.push_back(source + ": run " + run.id + ": series." + key + " holds " +
                           DumpJson(x) + " (expected numbers, 0 or more): left out");
        values.clear();
        break;
      }
      values.push_back(d);
    }
    if (!values.empty()) run.numbers.emplace(key, std::move(values));
  }
}

// What every history's records go through: the keys of the runs and steps
// already taken, what a report can show of them, and the place of each
// record over all sources.
struct Taken {
  explicit Taken(const std::vector<std::string>& wanted_runs) : keeper(wanted_runs) {}
  SeenKeys seen;
  Keeper keeper;
  std::uint64_t order = 0;
};

// One history file as it streams by: each record checked and taken, and
// what the file held and left out counted for its entry in the sources.
class HistoryReading {
 public:
  HistoryReading(const HistorySource& h, Taken& taken, Inputs& in)
      : h_(h), taken_(taken), in_(in) {}

  void Take(Json&& r) {
    ++index_;
    TrimProblems(in_);
    const bool step = IsStepRecord(r);
    const std::string where = "record " + std::to_string(index_);
    if (!step && !IsRunRecord(r)) {
      Damage(where + ": record is " + DumpJson(*Find(r, "record")) +
             " (expected \"run\" or \"step\"): left out");
    } else if (step) {
      TakeStep(r, where);
    } else {
      TakeRun(std::move(r), where);
    }
  }

  // The file's entry in the sources, once all of it is read.
  Json Source(const HistoryDamage& read) {
    Json source = Json::object();
    source["file"] = h_.name;
    source["kind"] = "history";
    // What the file's framing lost comes first, as the file has it.
    Json framing = Json::array();
    for (const std::string& d : read.damaged) framing.push_back(d);
    for (const Json& d : Items(damaged_)) {
      if (Items(framing).size() < kMaxDamageListed) {
        framing.push_back(d);
      } else {
        ++unlisted_;
      }
    }
    unlisted_ += read.damaged_unlisted;
    source["records"] = runs_ + steps_;
    source["runs"] = runs_;
    source["steps"] = steps_;
    source["duplicates"] = duplicates_;
    source["torn_tail_bytes"] = std::uint64_t{read.torn_tail_bytes};
    source["damaged"] = std::move(framing);
    if (unlisted_ > 0) source["damaged_unlisted"] = unlisted_;
    return source;
  }

 private:
  void Damage(std::string what) {
    if (Items(damaged_).size() < kMaxDamageListed) {
      damaged_.push_back(std::move(what));
    } else {
      ++unlisted_;
    }
  }

  // False, and counted as a duplicate, when another record (of this file
  // or an earlier one) had `key`.
  bool FirstSeen(std::string_view key) {
    if (taken_.seen.Insert(key)) return true;
    ++duplicates_;
    return false;
  }

  void TakeStep(const Json& r, const std::string& where) {
    Expected<StepRecord> record = ReadStepRecord(r);
    if (!record) {
      Damage(where + ": " + record.error().message + ": left out");
      return;
    }
    Step s = StepOf(*record, h_.name, taken_.order++);
    const std::string key =
        "step\n" + s.drive + "\n" + s.phase + "\n" + s.test + "\n" + std::to_string(s.step);
    if (!FirstSeen(key)) return;
    s.values = Numbers(&record->results,
                       h_.name + ": step " + std::to_string(s.step) + " of run " + s.run,
                       in_.problems);
    taken_.keeper.Take(std::move(s));
    ++steps_;
  }

  void TakeRun(Json&& r, const std::string& where) {
    Expected<RunRecord> record = ReadRunRecord(std::move(r));
    if (!record) {
      Damage(where + ": " + record.error().message + ": left out");
      return;
    }
    Run run = RunOf(*record, h_.name, taken_.order++);
    // Run ids are unique within a process and told apart across
    // processes by their start; two hosts may share a directory
    // target's name, so the drive is part of it too.
    const std::string key = "run\n" + run.id + "\n" + run.drive + "\n" + Format("%.3f", run.start);
    if (!FirstSeen(key)) return;
    if (!record->drive_at_start.is_null()) {
      if (auto age = DriveAgeFromJson(record->drive_at_start)) {
        run.age = *age;
      } else {
        run.age_problem = age.error().message;
        in_.problems.push_back(h_.name + ": run " + run.id + ": " + run.age_problem +
                               ": its age is shown as unknown");
      }
    }
    run.results =
        Numbers(&record->results, h_.name + ": run " + run.id + ": results", in_.problems);
    run.owned = std::make_shared<const RunRecord>(std::move(*record));
    run.record = run.owned.get();
    run.series = &run.record->series;
    ReadSeriesNumbers(run, h_.name, in_.problems);
    if (run.kind == config::PerfParams::kName) run.cells = ParseCells(run, in_.problems);
    taken_.keeper.Take(std::move(run));
    ++runs_;
  }

  const HistorySource& h_;
  Taken& taken_;
  Inputs& in_;
  std::size_t index_ = 0;  // of the record in the file, from 1
  std::uint64_t runs_ = 0, steps_ = 0, duplicates_ = 0, unlisted_ = 0;
  Json damaged_ = Json::array();  // records left out, as the file has them
};

// The retention studies, each a source and (once, by its id) a study.
void ReadStudies(const std::vector<StudyFile>& studies, Inputs& in) {
  std::set<std::string> study_ids;
  for (const StudyFile& f : studies) {
    Study s;
    s.name = f.name;
    if (!f.record) {
      s.problem = f.record.error().message;
    } else {
      s.record = &*f.record;
      if (const std::string name = Text(*f.record, "study"); !name.empty()) s.name = name;
      const Json* id = Find(*f.record, "id");
      if (id != nullptr && !study_ids.insert(AsString(*id)).second)
        continue;  // the same study twice
      s.drive = DriveName(Text(*f.record, "serial"), Text(*f.record, "target"));
    }
    Json source = Json::object();
    source["file"] = f.name;
    source["kind"] = "retention study";
    source["damaged"] = Json::array();
    if (!s.problem.empty()) source["damaged"].push_back(s.problem);
    in.sources.push_back(std::move(source));
    in.studies.push_back(std::move(s));
  }
}

}  // namespace

Expected<Inputs> ReadInputs(const std::vector<HistorySource>& histories,
                            const std::vector<StudyFile>& studies,
                            const std::vector<std::string>& wanted_runs) {
  Inputs in;
  Taken taken(wanted_runs);
  for (const HistorySource& h : histories) {
    HistoryReading reading(h, taken, in);
    Expected<HistoryDamage> read = h.read([&](Json&& r) { reading.Take(std::move(r)); });
    if (!read) return read.error();
    in.sources.push_back(reading.Source(*read));
  }
  TrimProblems(in);
  taken.keeper.Finish(in);
  ReadStudies(studies, in);
  return in;
}

}  // namespace drivewatch::aging::drive_report_detail

namespace drivewatch::aging {

HistorySource HistorySource::File(std::string name, std::string path) {
  return {std::move(name), [path = std::move(path)](const std::function<void(Json&&)>& each) {
            return HistoryFile(path).ForEach(each);
          }};
}

HistorySource HistorySource::Held(std::string name, HistoryContents contents) {
  auto held = std::make_shared<const HistoryContents>(std::move(contents));
  return {std::move(name),
          [held](const std::function<void(Json&&)>& each) -> Expected<HistoryDamage> {
            for (const Json& r : held->records) each(Json(r));
            return static_cast<const HistoryDamage&>(*held);
          }};
}

}  // namespace drivewatch::aging
