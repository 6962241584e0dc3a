// SPDX-License-Identifier: Apache-2.0
#include "aging/report/retention_report_model.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <utility>

#include "aging/retention/retention_study.h"
#include "config/util/text.h"

namespace drivewatch::aging::retention_report_detail {
namespace {

constexpr double kBoltzmannEvPerKelvin = 8.617e-5;
constexpr double kCelsiusOffset = 273.15;
constexpr double kDay = 86400;

const Json* At(const Json& root, std::initializer_list<std::string_view> path) {
  const Json* j = &root;
  for (std::string_view key : path) {
    j = Find(*j, key);
    if (j == nullptr) return nullptr;
  }
  return j;
}

std::string Ago(std::optional<double> when, double now) {
  if (!when) return "-";
  const double d = now - *when;
  if (d < 0) return "in the future";
  return Duration(d) + " ago";
}

double HistogramFractionAbove(const LatencyHistogram& h, double seconds) {
  if (h.count() == 0) return 0;
  const auto limit = static_cast<std::uint64_t>(seconds * 1e9);
  std::uint64_t above = 0;
  for (std::size_t i = 0; i < LatencyHistogram::kBuckets; ++i) {
    if (LatencyHistogram::LowerBound(i) >= limit) above += h.bucket(i);
  }
  return static_cast<double>(above) / static_cast<double>(h.count());
}

Read LoadRead(const Json& v, std::string label) {
  Read r;
  r.label = std::move(label);
  r.json = &v;
  r.start = Num(v, {"start"});
  r.blocks = Find(v, "blocks") ? AsUint(*Find(v, "blocks")) : 0;
  if (const Json* ok = Find(v, "ok"); ok && ok->is_number()) {
    r.ok = AsUint(*ok);
  }
  for (std::size_t c = 0; c < kClasses.size(); ++c) {
    if (const Json* n = At(v, {"bad", kClasses[c]})) r.bad[c] = AsUint(*n);
    r.bad_total += r.bad[c];
  }
  if (const Json* buckets = At(v, {"latency", "buckets"});
      buckets && !Items(*buckets).empty()) {
    std::vector<std::pair<std::uint32_t, std::uint32_t>> sparse;
    for (const Json& b : Items(*buckets)) {
      if (Items(b).size() != 2) continue;
      const std::uint64_t index = AsUint(Items(b)[0]);
      if (index >= LatencyHistogram::kBuckets) continue;
      sparse.emplace_back(static_cast<std::uint32_t>(index),
                          static_cast<std::uint32_t>(AsUint(Items(b)[1])));
    }
    r.histogram = std::make_unique<LatencyHistogram>();
    r.histogram->MergeSparse(sparse, Whole(v, {"latency", "sum_ns"}).value_or(0),
                             Whole(v, {"latency", "max_ns"}).value_or(0));
    r.reads = r.histogram->count();
  }
  if (const Json* count = At(v, {"latency", "count"})) {
    r.reads = AsUint(*count, r.reads);
  }
  // The recorded quantiles are what verify computed; recompute from the
  // histogram only when they are missing.
  const LatencyHistogram* h = r.histogram.get();
  auto quantile = [&](std::string_view key, double q) -> std::optional<double> {
    if (auto v2 = Num(v, {"quantiles", key})) return v2;
    if (h && h->count() != 0) return q >= 1 ? h->MaxSeconds() : h->Quantile(q);
    return std::nullopt;
  };
  r.p50 = quantile("p50", 0.5);
  r.p99 = quantile("p99", 0.99);
  r.p999 = quantile("p99_9", 0.999);
  r.max = quantile("max", 1);
  r.over10 = Num(v, {"over_10ms_ratio"});
  if (!r.over10 && h) r.over10 = HistogramFractionAbove(*h, 0.01);
  r.over100 = Num(v, {"over_100ms_ratio"});
  if (!r.over100 && h) r.over100 = HistogramFractionAbove(*h, kSlowReadSeconds);
  if (const Json* o = Find(v, "outcome")) r.outcome = AsString(*o);
  return r;
}

double AccelerationFactor(double ea_ev, double reference_k, double temperature_k) {
  return std::exp(ea_ev / kBoltzmannEvPerKelvin *
                  (1 / reference_k - 1 / temperature_k));
}

std::string BadBreakdown(const Read& r) {
  std::string out;
  for (std::size_t c = 0; c < kClasses.size(); ++c) {
    if (r.bad[c] == 0) continue;
    if (!out.empty()) out += ", ";
    out += Count(r.bad[c]) + " " + std::string(kClassLabels[c]);
  }
  return out;
}

Json OptionalNumber(std::optional<double> v) {
  return v && std::isfinite(*v) ? Json(*v) : Json();
}

}  // namespace

// ---------------------------------------------------------------- access

std::optional<double> Num(const Json* j) {
  if (j == nullptr || !j->is_number()) return std::nullopt;
  return AsDouble(*j);
}

std::optional<double> Num(const Json& root,
                          std::initializer_list<std::string_view> path) {
  return Num(At(root, path));
}

// An LBA or a count: a number from 0 to below 2^64, else nothing (a study
// file edited by hand, or damaged, may hold anything).
std::optional<std::uint64_t> Whole(const Json& root,
                                   std::initializer_list<std::string_view> path) {
  const auto v = Num(root, path);
  if (!v || !(*v >= 0) || *v >= 18446744073709551616.0) return std::nullopt;
  return AsUint(*At(root, path));
}

std::string Str(const Json& root, std::initializer_list<std::string_view> path) {
  const Json* j = At(root, path);
  if (j == nullptr) return "-";
  if (j->is_string()) {
    return AsString(*j).empty() ? "-" : AsString(*j);
  }
  if (j->is_number()) return DumpJson(*j);
  return "-";
}

// ------------------------------------------------------------ formatting

std::string Duration(std::optional<double> seconds) {
  if (!seconds || !std::isfinite(*seconds)) return "-";
  const double s = *seconds;
  const double a = std::fabs(s);
  if (a < 120) return Format("%.0f s", s);
  if (a < 2 * 3600) return Format("%.0f min", s / 60);
  if (a < 2 * kDay) return Format("%.1f h", s / 3600);
  if (a < 730 * kDay) return Format("%.1f days", s / kDay);
  return Format("%.1f years", s / (365.25 * kDay));
}

std::string Latency(std::optional<double> seconds) {
  if (!seconds) return "-";
  const double s = *seconds;
  if (std::isinf(s)) return "timeout";
  if (s < 1e-3) return Format("%.1f \xc2\xb5s", s * 1e6);
  if (s < 1) return Format("%.2f ms", s * 1e3);
  return Format("%.2f s", s);
}

std::string Percent(std::optional<double> ratio) {
  if (!ratio) return "-";
  const double p = *ratio * 100;
  if (p == 0) return "0%";
  if (p >= 0.1) return Format("%.2f%%", p);
  return Format("%.2g%%", p);
}

std::string Bytes(std::optional<double> bytes) {
  if (!bytes) return "-";
  return util::FormatBytes(*bytes, util::ByteStyle::kSignificant);
}

std::string Celsius(std::optional<double> kelvin) {
  if (!kelvin) return "-";
  return Format("%.1f \xc2\xb0" "C", *kelvin - kCelsiusOffset);
}

std::string Plural(std::uint64_t n, std::string_view one, std::string_view many) {
  return Count(n) + " " + std::string(n == 1 ? one : many);
}

// Relative change of a latency against the baseline, "+12%".
std::string Delta(std::optional<double> value, std::optional<double> base) {
  if (!value || !base || !std::isfinite(*value) || !std::isfinite(*base) ||
      *base <= 0) {
    return "";
  }
  const double ratio = *value / *base;
  if (ratio >= 10) return Format("\xc3\x97%.0f", ratio);
  const double pct = (ratio - 1) * 100;
  if (std::fabs(pct) < 0.5) return "\xc2\xb1" "0%";
  return Format("%+.0f%%", pct);
}

// Change of a fraction in percentage points.
std::string DeltaPoints(std::optional<double> value, std::optional<double> base) {
  if (!value || !base) return "";
  const double pp = (*value - *base) * 100;
  if (pp == 0) return "\xc2\xb1" "0";
  if (std::fabs(pp) >= 0.1) return Format("%+.2f pp", pp);
  return Format("%+.2g pp", pp);
}

std::vector<svg::Point> LatencyTail(const LatencyHistogram& h, double min_seconds,
                                    double max_seconds) {
  std::vector<svg::Point> out;
  if (h.count() == 0) return out;
  const double total = static_cast<double>(h.count());
  std::uint64_t seen = 0;
  out.push_back({min_seconds, 1});
  for (std::size_t b = 0; b < LatencyHistogram::kBuckets; ++b) {
    const std::uint64_t n = h.bucket(b);
    if (n == 0) continue;
    const double before = (total - static_cast<double>(seen)) / total;
    seen += n;
    const double after = (total - static_cast<double>(seen)) / total;
    const double lo = static_cast<double>(LatencyHistogram::LowerBound(b)) * 1e-9;
    const double hi = b == LatencyHistogram::kOverflowIndex
                          ? max_seconds
                          : static_cast<double>(LatencyHistogram::UpperBound(b)) * 1e-9;
    out.push_back({lo, before});
    out.push_back({hi, after});
  }
  return out;
}

std::string LatencyTick(double seconds) {
  if (seconds < 1e-3) return Format("%.0f \xc2\xb5s", seconds * 1e6);
  if (seconds < 1) return Format("%.0f ms", seconds * 1e3);
  return Format("%.0f s", seconds);
}

// ------------------------------------------------------------- the model

std::vector<RangeRow> RangeRows(const Read& r) {
  std::vector<RangeRow> out;
  const Json* ranges = r.json ? Find(*r.json, "ranges") : nullptr;
  if (ranges == nullptr) return out;
  for (const Json& range : Items(*ranges)) {
    const auto first = Whole(range, {"first_lba"});
    const auto last = Whole(range, {"last_lba"});
    RangeRow row;
    row.lbas = "LBA " + (first ? Count(*first) : "-");
    if (last && first && *last != *first) row.lbas += "-" + Count(*last);
    if (Find(range, "error")) row.detail = Str(range, {"error"});
    if (Find(range, "first_difference")) {
      row.detail = "first difference at byte " + Str(range, {"first_difference"});
    }
    if (Find(range, "found_lba")) row.detail = "holds LBA " + Str(range, {"found_lba"});
    if (Find(range, "found_study")) row.detail = "holds study " + Str(range, {"found_study"});
    row.klass = Str(range, {"class"});
    const auto it = std::find(kClasses.begin(), kClasses.end(), row.klass);
    if (it != kClasses.end()) row.klass = kClassLabels[static_cast<std::size_t>(it - kClasses.begin())];
    out.push_back(std::move(row));
  }
  return out;
}

std::string Summary::MethodNote() const {
  if (reads.empty()) return "";
  const bool one = std::all_of(reads.begin(), reads.end(),
                               [&](const Read& r) { return r.method == reads.front().method; });
  if (one) return "Latency, every read: " + reads.front().method + ".";
  std::string out = "Latency, ";
  for (const Read& r : reads) {
    out += (&r == &reads.front() ? "" : "; ") + r.label + ": " + r.method;
  }
  return out + ". A change is shown only against a baseline taken the same way.";
}

namespace {

// The baseline and every verify, each read with how its latency was
// taken and whether that compares with the baseline.
void LoadReads(const Json& study, Summary& s) {
  if (const Json* b = Find(study, "baseline"); b && b->is_object()) {
    s.reads.push_back(LoadRead(*b, "baseline"));
    s.has_baseline = true;
  }
  if (const Json* vs = Find(study, "verifies")) {
    int n = 0;
    for (const Json& v : Items(*vs)) {
      s.reads.push_back(LoadRead(v, "verify " + std::to_string(++n)));
    }
  }
  for (Read& r : s.reads) {
    r.method = LatencyMethodText(*r.json);
    r.comparable = !s.has_baseline || SameLatencyMethod(*s.reads.front().json, *r.json);
  }
}

// The study's ages: as the last verify recorded them, or, with no verify
// yet, what the accounting samples say so far.
void LoadTime(const Json& study, double now, Summary& s) {
  s.ea = Num(study, {"accounting", "activation_energy_ev"}).value_or(1.1);
  s.reference_k = Num(study, {"accounting", "reference_temperature_k"}).value_or(303.15);
  s.storage_k = Num(study, {"accounting", "storage_temperature_k"});
  if (s.storage_k && *s.storage_k > 0 && s.reference_k > 0) {
    s.storage_af = AccelerationFactor(s.ea, s.reference_k, *s.storage_k);
  }
  const std::optional<double> written_end = Num(study, {"written", "end"});
  if (const Read* last = s.LastVerify()) {
    s.as_of = last->start;
    s.wall = Num(*last->json, {"age_seconds"});
    s.powered_on = Num(*last->json, {"powered_on_seconds"});
    s.powered_off = Num(*last->json, {"powered_off_seconds"});
    s.equivalent = Num(*last->json, {"equivalent_age_seconds"});
  } else if (written_end) {
    s.estimated = true;
    s.as_of = now;
    s.wall = std::max(0.0, now - *written_end);
    s.powered_on = Num(study, {"accounting", "powered_on_sampled_seconds"});
    const double on = s.powered_on.value_or(0);
    s.powered_off = std::max(0.0, *s.wall - on);
    if (s.storage_af) {
      s.equivalent =
          Num(study, {"accounting", "powered_on_equivalent_seconds"}).value_or(on) +
          *s.powered_off * *s.storage_af;
    }
  }
}

// What fails the study, joined with "; ": the judged read's bad blocks and
// slow reads, or the reason a study failed without either.
std::string FailProblems(const Json& study, const Read* judged, const std::string& state) {
  std::vector<std::string> problems;
  if (judged && judged->bad_total != 0) {
    problems.push_back(Plural(judged->bad_total, "bad block", "bad blocks") +
                       " (" + BadBreakdown(*judged) + ")");
  }
  if (judged && judged->Slow()) {
    const std::uint64_t slow = judged->SlowReads();
    problems.push_back(
        (slow != 0 ? Plural(slow, "read", "reads") + " over 100 ms"
                   : std::string("a read over 100 ms")) +
        " (max " + Latency(judged->max) + ")");
  }
  if (state == "failed" && problems.empty()) {
    const std::string reason = Str(study, {"reason"});
    problems.push_back(reason == "-" ? "the study failed" : "the study failed: " + reason);
  }
  std::string out;
  for (const auto& p : problems) out += (out.empty() ? "" : "; ") + p;
  return out;
}

// The verdict of a study still being written, or not yet read back.
void WritingVerdict(const Json& study, const std::string& state, Summary& s) {
  s.verdict = "WRITING";
  const auto next = Num(study, {"written", "next_offset"});
  const auto length = Num(study, {"region", "length"});
  const auto offset = Num(study, {"region", "offset"}).value_or(0);
  if (state != "writing") {
    s.verdict = "WAITING";
    s.line = "WAITING: no baseline read recorded yet";
  } else if (next && length && *length > 0) {
    const double pct = std::clamp((*next - offset) / *length * 100, 0.0, 100.0);
    s.line = Format("WRITING: the pattern is being written (%.0f%% of the region)", pct);
  } else {
    s.line = "WRITING: the pattern is being written";
  }
}

void Verdict(const Json& study, Summary& s) {
  const std::string state = Str(study, {"state"});
  const Read* judged = s.Judged();
  const std::string problems = FailProblems(study, judged, state);
  if (state == "writing" || (!judged && state != "failed")) {
    WritingVerdict(study, state, s);
  } else if (!problems.empty()) {
    s.verdict = "FAIL";
    s.line = "FAIL: " + problems;
  } else if (judged->outcome == "aborted") {
    s.verdict = "INCOMPLETE";
    s.line = "INCOMPLETE: the last " + judged->label + " was aborted before reading every block";
  } else if (!s.LastVerify()) {
    s.verdict = "WAITING";
    s.line = "WAITING: baseline intact (" + Plural(judged->blocks, "block", "blocks") +
             "); no verify yet";
  } else {
    s.verdict = "PASS";
    s.line = "PASS: every block intact, no read over 100 ms";
    if (s.wall) s.line += " after " + Duration(s.wall);
  }
}

}  // namespace

Summary Summarize(const Json& study, double now) {
  Summary s;
  LoadReads(study, s);
  LoadTime(study, now, s);
  Verdict(study, s);
  return s;
}

Region RegionOf(const Json& study) {
  Region r;
  r.block_size = Whole(study, {"region", "block_size"}).value_or(0);
  if (r.block_size == 0) return r;
  const std::uint64_t offset = Whole(study, {"region", "offset"}).value_or(0);
  const std::uint64_t length = Whole(study, {"region", "length"}).value_or(0);
  r.first = offset / r.block_size;
  r.blocks = length / r.block_size;
  return r;
}

std::string RegionText(const Json& study) {
  const Region region = RegionOf(study);
  if (region.blocks == 0) return "-";
  const double offset = Num(study, {"region", "offset"}).value_or(0);
  return Bytes(Num(study, {"region", "length"})) + " at offset " +
         (offset == 0 ? std::string("0") : Bytes(offset)) + " (LBA " + Count(region.first) +
         "\xe2\x80\x93" + Count(region.first + region.blocks - 1) + ", " +
         Count(region.blocks) + " blocks of " + Count(region.block_size) + " B)";
}

std::string PatternText(const Json& study) {
  if (!Find(study, "pattern")) return "-";
  return "version " + Str(study, {"pattern", "version"}) + ", seed " +
         Str(study, {"pattern", "seed"});
}

std::string WrittenText(const Json& study, double now) {
  const auto start = Num(study, {"written", "start"});
  const auto end = Num(study, {"written", "end"});
  if (end) {
    std::string out = Utc(end) + " (" + Ago(end, now) + ")";
    if (start) out += ", took " + Duration(*end - *start);
    return out;
  }
  if (start) return "started " + Utc(start) + ", not finished";
  return "-";
}

std::string PoweredOffText(const Summary& s) {
  if (!s.wall) return "-";
  if (s.powered_off) return Duration(s.powered_off) + (s.estimated ? " (so far)" : "");
  // The verify could not read the SMART power-on hours, so the time the
  // drive was on while drivewatch was not sampling is not known.
  return "unknown (no SMART power-on hours)";
}

std::string EquivalentText(const Summary& s) {
  if (!s.wall) return "-";
  std::string ref = Format("at %s (Ea %.2g eV)", Celsius(s.reference_k).c_str(), s.ea);
  if (!s.equivalent) {
    if (!s.storage_k) return "unknown (no storage temperature configured)";
    if (!s.powered_off) return "unknown (powered-off time unknown)";
    return "-";
  }
  std::string out = Duration(s.equivalent) + " " + ref;
  if (s.storage_k && s.storage_af) {
    out += Format("; stored at %s, acceleration %.3g\xc3\x97", Celsius(s.storage_k).c_str(),
                  *s.storage_af);
  }
  return out;
}

// Per-verify SMART delta field (since the write).
std::optional<double> SmartDelta(const Read& r, std::string_view field) {
  return Num(*r.json, {"smart_delta", field});
}

std::string Signed(std::optional<double> v) {
  if (!v) return "-";
  return Format("%+.0f", *v);
}

// ---------------------------------------------------------------- JSON

Json SummaryJson(const Summary& s) {
  Json out = Json::object();
  out["verdict"] = s.verdict;
  out["verdict_line"] = s.line;
  out["as_of"] = OptionalNumber(s.as_of);
  out["estimated"] = s.estimated;
  out["wall_age_seconds"] = OptionalNumber(s.wall);
  out["powered_on_seconds"] = OptionalNumber(s.powered_on);
  out["powered_off_seconds"] = OptionalNumber(s.powered_off);
  out["equivalent_age_seconds"] = OptionalNumber(s.equivalent);
  out["reference_temperature_k"] = s.reference_k;
  out["activation_energy_ev"] = s.ea;
  out["storage_acceleration_factor"] = OptionalNumber(s.storage_af);
  out["verifies"] = static_cast<std::uint64_t>(s.reads.size() - (s.has_baseline ? 1 : 0));
  const Read* judged = s.Judged();
  out["judged_read"] = judged ? Json(judged->label) : Json();
  Json& bad = out["bad"];
  bad = Json::object();
  for (std::size_t c = 0; c < kClasses.size(); ++c) {
    bad[kClasses[c]] = judged ? judged->bad[c] : 0;
  }
  bad["total"] = judged ? judged->bad_total : 0;
  out["slow_reads_over_100ms"] = judged ? judged->SlowReads() : 0;
  Json& shift = out["latency_shift"];
  shift = Json::object();
  const Read* base = s.Baseline();
  const Read* last = s.LastVerify();
  if (base && last && !last->comparable) {
    shift["not_compared"] = "the baseline's latency is " + base->method + ", the last verify's " +
                            last->method + ": not the same measure";
  } else if (base && last) {
    auto add = [&](std::string_view key, std::optional<double> Read::*field) {
      Json& e = shift[key];
      e["baseline"] = OptionalNumber(base->*field);
      e["last"] = OptionalNumber(last->*field);
      if (base->*field && last->*field && std::isfinite(*(base->*field)) &&
          std::isfinite(*(last->*field))) {
        e["delta"] = *(last->*field) - *(base->*field);
        e["ratio"] = *(base->*field) > 0 ? Json(*(last->*field) / *(base->*field)) : Json();
      } else {
        e["delta"] = Json();
        e["ratio"] = Json();
      }
    };
    add("p50", &Read::p50);
    add("p99", &Read::p99);
    add("p99_9", &Read::p999);
    add("max", &Read::max);
    add("over_10ms_ratio", &Read::over10);
    add("over_100ms_ratio", &Read::over100);
  }
  if (last && Find(*last->json, "smart_delta")) {
    out["smart_delta"] = *Find(*last->json, "smart_delta");
  } else {
    out["smart_delta"] = Json();
  }
  return out;
}

}  // namespace drivewatch::aging::retention_report_detail
