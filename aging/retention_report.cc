// SPDX-License-Identifier: Apache-2.0
#include "aging/retention_report.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <initializer_list>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>

#include "aging/retention_study.h"
#include "probes/latency_histogram.h"

namespace drivewatch::aging {
namespace {

constexpr double kBoltzmannEvPerKelvin = 8.617e-5;
constexpr double kCelsiusOffset = 273.15;
constexpr double kSlowReadSeconds = 0.1;  // the reference report's limit
constexpr double kDay = 86400;

// Bad-block classes in order of severity: a cell of the map that holds
// several shows the first.
constexpr std::array<std::string_view, 4> kClasses = {
    "unreadable", "wrong_content", "misplaced", "stale"};
constexpr std::array<std::string_view, 4> kClassLabels = {
    "unreadable", "wrong content", "misplaced", "stale"};
constexpr std::array<std::string_view, 4> kClassColours = {
    "#d62728", "#ff7f0e", "#9467bd", "#17a2b8"};

constexpr std::array<std::string_view, 5> kSmartFields = {
    "media_errors", "error_log_entries", "power_cycles", "unsafe_shutdowns",
    "power_on_hours"};
constexpr std::array<std::string_view, 5> kSmartLabels = {
    "media errors", "error-log entries", "power cycles", "unsafe shutdowns",
    "power-on hours"};

// ---------------------------------------------------------------- access

const Json* At(const Json& root, std::initializer_list<std::string_view> path) {
  const Json* j = &root;
  for (std::string_view key : path) {
    j = j->Find(key);
    if (j == nullptr) return nullptr;
  }
  return j;
}

std::optional<double> Num(const Json* j) {
  if (j == nullptr || j->type() != Json::Type::kNumber) return std::nullopt;
  return j->AsDouble();
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
  return At(root, path)->AsUint();
}

std::string Str(const Json& root, std::initializer_list<std::string_view> path) {
  const Json* j = At(root, path);
  if (j == nullptr) return "-";
  if (j->type() == Json::Type::kString) {
    return j->AsString().empty() ? "-" : j->AsString();
  }
  if (j->type() == Json::Type::kNumber) return j->Dump();
  return "-";
}

// ------------------------------------------------------------ formatting

template <typename... Args>
std::string Format(const char* format, Args... args) {
  const int n = std::snprintf(nullptr, 0, format, args...);
  if (n <= 0) return "";
  std::string out(static_cast<std::size_t>(n), '\0');
  std::snprintf(out.data(), out.size() + 1, format, args...);
  return out;
}

std::string Utc(std::optional<double> seconds, const char* format = "%Y-%m-%d %H:%M UTC") {
  if (!seconds || !std::isfinite(*seconds)) return "-";
  const std::time_t t = static_cast<std::time_t>(*seconds);
  std::tm tm{};
  if (::gmtime_r(&t, &tm) == nullptr) return "-";
  char buf[64];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

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

std::string Ago(std::optional<double> when, double now) {
  if (!when) return "-";
  const double d = now - *when;
  if (d < 0) return "in the future";
  return Duration(d) + " ago";
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
  static constexpr std::array<const char*, 6> kUnits = {"B", "KiB", "MiB",
                                                        "GiB", "TiB", "PiB"};
  double v = *bytes;
  std::size_t u = 0;
  while (v >= 1024 && u + 1 < kUnits.size()) {
    v /= 1024;
    ++u;
  }
  return Format(v == std::floor(v) ? "%.0f %s" : "%.3g %s", v, kUnits[u]);
}

std::string Celsius(std::optional<double> kelvin) {
  if (!kelvin) return "-";
  return Format("%.1f \xc2\xb0" "C", *kelvin - kCelsiusOffset);
}

std::string Count(std::uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i != 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
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

std::string Html(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// Columns are as wide as their widest cell, counted in code points so
// "µs" and "°C" line up.
std::size_t Width(std::string_view s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// First column left-aligned, `right_from` and after right-aligned.
std::string Table(const std::vector<std::vector<std::string>>& rows,
                  std::string_view indent, std::size_t right_from = 1) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (std::size_t i = 0; i < row.size(); ++i) {
      widths[i] = std::max(widths[i], Width(row[i]));
    }
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line(indent);
    for (std::size_t i = 0; i < row.size(); ++i) {
      const std::string pad(widths[i] - Width(row[i]), ' ');
      if (i != 0) line += "  ";
      if (i >= right_from) {
        line += pad + row[i];
      } else {
        line += row[i];
        if (i + 1 != row.size()) line += pad;
      }
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

// ------------------------------------------------------------- the model

// A full read of the region: the baseline or one verify.
struct Read {
  std::string label;
  const Json* json = nullptr;
  std::optional<double> start;
  std::uint64_t blocks = 0;
  std::optional<std::uint64_t> ok;
  std::array<std::uint64_t, kClasses.size()> bad{};
  std::uint64_t bad_total = 0;
  std::unique_ptr<LatencyHistogram> histogram;  // null: no latency recorded
  std::optional<double> p50, p99, p999, max, over10, over100;
  std::uint64_t reads = 0;
  std::string outcome;

  std::uint64_t SlowReads() const {
    if (!over100) return 0;
    return static_cast<std::uint64_t>(std::llround(*over100 * static_cast<double>(reads)));
  }
  bool Slow() const {
    return (over100 && *over100 > 0) || (max && *max > kSlowReadSeconds);
  }
};

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
  r.blocks = v.Find("blocks") ? v.Find("blocks")->AsUint() : 0;
  if (const Json* ok = v.Find("ok"); ok && ok->type() == Json::Type::kNumber) {
    r.ok = ok->AsUint();
  }
  for (std::size_t c = 0; c < kClasses.size(); ++c) {
    if (const Json* n = At(v, {"bad", kClasses[c]})) r.bad[c] = n->AsUint();
    r.bad_total += r.bad[c];
  }
  if (const Json* buckets = At(v, {"latency", "buckets"});
      buckets && !buckets->items().empty()) {
    std::vector<std::pair<std::uint32_t, std::uint32_t>> sparse;
    for (const Json& b : buckets->items()) {
      if (b.items().size() != 2) continue;
      const std::uint64_t index = b.items()[0].AsUint();
      if (index >= LatencyHistogram::kBuckets) continue;
      sparse.emplace_back(static_cast<std::uint32_t>(index),
                          static_cast<std::uint32_t>(b.items()[1].AsUint()));
    }
    r.histogram = std::make_unique<LatencyHistogram>();
    r.histogram->MergeSparse(sparse, At(v, {"latency", "sum_ns"}) ? At(v, {"latency", "sum_ns"})->AsUint() : 0,
                             At(v, {"latency", "max_ns"}) ? At(v, {"latency", "max_ns"})->AsUint() : 0);
    r.reads = r.histogram->count();
  }
  if (const Json* count = At(v, {"latency", "count"})) {
    r.reads = count->AsUint(r.reads);
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
  if (const Json* o = v.Find("outcome")) r.outcome = o->AsString();
  return r;
}

double AccelerationFactor(double ea_ev, double reference_k, double temperature_k) {
  return std::exp(ea_ev / kBoltzmannEvPerKelvin *
                  (1 / reference_k - 1 / temperature_k));
}

struct Summary {
  std::string verdict;  // PASS, FAIL, INCOMPLETE, WAITING, WRITING
  std::string line;     // the verdict sentence shown at the top
  std::vector<Read> reads;  // the baseline (if any) first, then verifies
  bool has_baseline = false;

  // Time accounting as of the last verify, or estimated for `now` when
  // there is none.
  bool estimated = false;
  std::optional<double> as_of, wall, powered_on, powered_off, equivalent;
  double ea = 1.1, reference_k = 303.15;
  std::optional<double> storage_k, storage_af;

  const Read* Baseline() const { return has_baseline ? &reads.front() : nullptr; }
  const Read* LastVerify() const {
    return reads.size() > (has_baseline ? 1u : 0u) ? &reads.back() : nullptr;
  }
  const Read* Judged() const {
    return LastVerify() ? LastVerify() : Baseline();
  }
};

std::string BadBreakdown(const Read& r) {
  std::string out;
  for (std::size_t c = 0; c < kClasses.size(); ++c) {
    if (r.bad[c] == 0) continue;
    if (!out.empty()) out += ", ";
    out += Count(r.bad[c]) + " " + std::string(kClassLabels[c]);
  }
  return out;
}

Summary Summarize(const Json& study, double now) {
  Summary s;
  if (const Json* b = study.Find("baseline"); b && b->type() == Json::Type::kObject) {
    s.reads.push_back(LoadRead(*b, "baseline"));
    s.has_baseline = true;
  }
  if (const Json* vs = study.Find("verifies")) {
    int n = 0;
    for (const Json& v : vs->items()) {
      s.reads.push_back(LoadRead(v, "verify " + std::to_string(++n)));
    }
  }

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
    // No verify yet: what the accounting samples say so far.
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

  const std::string state = Str(study, {"state"});
  const Read* judged = s.Judged();
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
  auto join = [](const std::vector<std::string>& parts) {
    std::string out;
    for (const auto& p : parts) out += (out.empty() ? "" : "; ") + p;
    return out;
  };

  if (state == "writing" || (!judged && state != "failed")) {
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
  } else if (!problems.empty()) {
    s.verdict = "FAIL";
    s.line = "FAIL: " + join(problems);
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
  return s;
}

// The region as LBAs: [first, first + blocks).
struct Region {
  std::uint64_t first = 0;
  std::uint64_t blocks = 0;
  std::uint64_t block_size = 0;
};

Region RegionOf(const Json& study) {
  Region r;
  r.block_size = At(study, {"region", "block_size"}) ? At(study, {"region", "block_size"})->AsUint() : 0;
  if (r.block_size == 0) return r;
  const std::uint64_t offset = At(study, {"region", "offset"}) ? At(study, {"region", "offset"})->AsUint() : 0;
  const std::uint64_t length = At(study, {"region", "length"}) ? At(study, {"region", "length"})->AsUint() : 0;
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
  if (!study.Find("pattern")) return "-";
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

Json OptionalNumber(std::optional<double> v) {
  return v && std::isfinite(*v) ? Json(*v) : Json();
}

Json SummaryJson(const Summary& s) {
  Json out = Json::Object();
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
  bad = Json::Object();
  for (std::size_t c = 0; c < kClasses.size(); ++c) {
    bad[kClasses[c]] = judged ? judged->bad[c] : 0;
  }
  bad["total"] = judged ? judged->bad_total : 0;
  out["slow_reads_over_100ms"] = judged ? judged->SlowReads() : 0;
  Json& shift = out["latency_shift"];
  shift = Json::Object();
  const Read* base = s.Baseline();
  const Read* last = s.LastVerify();
  if (base && last) {
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
  if (last && last->json->Find("smart_delta")) {
    out["smart_delta"] = *last->json->Find("smart_delta");
  } else {
    out["smart_delta"] = Json();
  }
  return out;
}

// ---------------------------------------------------------------- text

std::string RenderText(const Json& study, const Summary& s, double now) {
  std::string out;
  out += "Retention study " + Str(study, {"study"}) + " (" + Str(study, {"id"}) + ")\n";
  out += s.line + "\n\n";

  out += "Drive\n";
  out += Table({{"model", Str(study, {"model"})},
                {"serial", Str(study, {"serial"})},
                {"firmware", Str(study, {"firmware"})},
                {"device", Str(study, {"device"}) + " (namespace " + Str(study, {"nsid"}) + ")"},
                {"target", Str(study, {"target"})}},
               "  ", 99);
  out += "\nStudy\n";
  std::string state = Str(study, {"state"});
  if (Str(study, {"reason"}) != "-") state += " (" + Str(study, {"reason"}) + ")";
  out += Table({{"state", state},
                {"region", RegionText(study)},
                {"pattern", PatternText(study)},
                {"written", WrittenText(study, now)}},
               "  ", 99);

  out += "\nTime";
  if (s.estimated) {
    out += " (estimated now, no verify yet)";
  } else if (const Read* last = s.LastVerify()) {
    out += " (as of " + last->label + ", " + Utc(last->start) + ")";
  }
  out += "\n";
  out += Table({{"wall age", Duration(s.wall)},
                {"powered on", Duration(s.powered_on)},
                {"powered off", PoweredOffText(s)},
                {"equivalent age", EquivalentText(s)}},
               "  ", 99);

  if (const Json* events = study.Find("events"); events && !events->items().empty()) {
    out += "\nEvents\n";
    std::vector<std::vector<std::string>> rows;
    for (const Json& e : events->items()) {
      rows.push_back({Utc(Num(e, {"time"})), Str(e, {"kind"}), Str(e, {"detail"})});
    }
    out += Table(rows, "  ", 99);
  }

  if (s.reads.empty()) {
    out += "\nNo read-back yet.\n";
    return out;
  }

  out += "\nReads\n";
  std::vector<std::vector<std::string>> rows = {
      {"read", "date", "age", "blocks", "ok", "unreadable", "wrong", "misplaced",
       "stale", "outcome"}};
  for (const Read& r : s.reads) {
    rows.push_back({r.label, Utc(r.start), Duration(Num(*r.json, {"age_seconds"})),
                    Count(r.blocks), r.ok ? Count(*r.ok) : "-", Count(r.bad[0]),
                    Count(r.bad[1]), Count(r.bad[2]), Count(r.bad[3]),
                    r.outcome.empty() ? "-" : r.outcome});
  }
  out += Table(rows, "  ");

  out += "\nRead latency";
  if (s.has_baseline) out += " (change against the baseline)";
  out += "\n";
  rows = {{""}};
  for (const Read& r : s.reads) rows[0].push_back(r.label);
  const Read* base = s.Baseline();
  auto latency_row = [&](std::string name, std::optional<double> Read::*field) {
    std::vector<std::string> row = {std::move(name)};
    for (const Read& r : s.reads) {
      std::string cell = Latency(r.*field);
      if (base && &r != base) {
        const std::string d = Delta(r.*field, base->*field);
        if (!d.empty()) cell += " (" + d + ")";
      }
      row.push_back(cell);
    }
    rows.push_back(row);
  };
  auto ratio_row = [&](std::string name, std::optional<double> Read::*field) {
    std::vector<std::string> row = {std::move(name)};
    for (const Read& r : s.reads) {
      std::string cell = Percent(r.*field);
      if (base && &r != base) {
        const std::string d = DeltaPoints(r.*field, base->*field);
        if (!d.empty()) cell += " (" + d + ")";
      }
      row.push_back(cell);
    }
    rows.push_back(row);
  };
  latency_row("p50", &Read::p50);
  latency_row("p99", &Read::p99);
  latency_row("p99.9", &Read::p999);
  latency_row("max", &Read::max);
  ratio_row("> 10 ms", &Read::over10);
  ratio_row("> 100 ms", &Read::over100);
  out += Table(rows, "  ");

  const Read* judged = s.Judged();
  out += "\nBad blocks (" + judged->label + ")\n";
  if (judged->bad_total == 0) {
    out += "  none\n";
  } else {
    rows.clear();
    for (std::size_t c = 0; c < kClasses.size(); ++c) {
      rows.push_back({std::string(kClassLabels[c]), Count(judged->bad[c])});
    }
    out += Table(rows, "  ");
    if (const Json* ranges = judged->json->Find("ranges"); ranges && !ranges->items().empty()) {
      rows.clear();
      for (const Json& range : ranges->items()) {
        const auto first = Whole(range, {"first_lba"});
        const auto last = Whole(range, {"last_lba"});
        std::string lbas = "LBA " + (first ? Count(*first) : "-");
        if (last && first && *last != *first) lbas += "-" + Count(*last);
        std::string detail;
        if (range.Find("error")) detail = Str(range, {"error"});
        if (range.Find("first_difference")) detail = "first difference at byte " + Str(range, {"first_difference"});
        if (range.Find("found_lba")) detail = "holds LBA " + Str(range, {"found_lba"});
        if (range.Find("found_study")) detail = "holds study " + Str(range, {"found_study"});
        std::string cls = Str(range, {"class"});
        const auto it = std::find(kClasses.begin(), kClasses.end(), cls);
        if (it != kClasses.end()) cls = kClassLabels[static_cast<std::size_t>(it - kClasses.begin())];
        rows.push_back({lbas, cls, detail});
      }
      out += Table(rows, "  ", 99);
      if (judged->json->Find("ranges_truncated") &&
          judged->json->Find("ranges_truncated")->AsBool()) {
        out += "  (more ranges not recorded)\n";
      }
    }
  }

  out += "\nSMART since the write\n";
  rows = {{"", "at write"}};
  for (const Read& r : s.reads) rows[0].push_back(r.label);
  for (std::size_t f = 0; f < kSmartFields.size(); ++f) {
    std::vector<std::string> row = {std::string(kSmartLabels[f]),
                                    Str(study, {"smart_at_write", kSmartFields[f]})};
    for (const Read& r : s.reads) row.push_back(Signed(SmartDelta(r, kSmartFields[f])));
    rows.push_back(row);
  }
  out += Table(rows, "  ");
  return out;
}

// ---------------------------------------------------------------- HTML

constexpr std::array<std::string_view, 8> kSeriesColours = {
    "#2563eb", "#f59e0b", "#dc2626", "#16a34a", "#9333ea", "#0891b2", "#db2777", "#65a30d"};

std::string_view SeriesColour(std::size_t i, bool has_baseline) {
  if (has_baseline && i == 0) return "#64748b";
  return kSeriesColours[(i - (has_baseline ? 1 : 0)) % kSeriesColours.size()];
}

constexpr const char* kCss = R"(
*{box-sizing:border-box}
body{margin:0;background:#f3f4f6;color:#111827;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
main{max-width:1100px;margin:0 auto;padding:24px}
h1{font-size:24px;margin:0 0 4px}
h1 small{font-weight:400;color:#6b7280;font-size:15px}
h2{font-size:17px;margin:0 0 12px;color:#1f2937}
.sub{color:#6b7280;margin:0 0 16px}
.verdict{padding:14px 20px;border-radius:10px;font-size:20px;font-weight:650;margin:0 0 18px;border-left:8px solid}
.verdict.pass{background:#dcfce7;color:#14532d;border-color:#16a34a}
.verdict.fail{background:#fee2e2;color:#7f1d1d;border-color:#dc2626}
.verdict.damaged,.verdict.unreadable{background:#fee2e2;color:#7f1d1d;border-color:#7f1d1d}
.verdict.incomplete,.verdict.waiting,.verdict.writing{background:#e0e7ff;color:#1e3a8a;border-color:#6366f1}
section{background:#fff;border-radius:10px;padding:18px 22px;margin:0 0 18px;box-shadow:0 1px 3px rgba(0,0,0,.08)}
.cols{display:grid;grid-template-columns:1fr 1fr;gap:18px;margin:0 0 18px}
.cols section{margin:0}
dl{display:grid;grid-template-columns:max-content 1fr;gap:4px 16px;margin:0}
dt{color:#6b7280}
dd{margin:0;font-weight:500}
table{border-collapse:collapse;width:100%;font-variant-numeric:tabular-nums}
th,td{padding:6px 10px;border-bottom:1px solid #e5e7eb;text-align:right;white-space:nowrap}
th:first-child,td:first-child{text-align:left}
thead th{color:#6b7280;font-weight:600;font-size:13px}
.d{color:#6b7280;font-size:12px;margin-left:6px}
.worse{color:#b91c1c;font-weight:600}
.better{color:#15803d}
.chip{display:inline-block;width:12px;height:12px;border-radius:3px;margin-right:6px;vertical-align:-1px}
.classes{display:flex;gap:22px;flex-wrap:wrap;margin:10px 0 0}
.classes .count{font-weight:700;font-size:18px;margin-left:4px}
#events th,#events td{text-align:left}
.note{color:#6b7280;font-size:13px;margin:8px 0 0}
svg{display:block;width:100%;height:auto}
svg text{font:12px system-ui,-apple-system,"Segoe UI",Roboto,Arial,sans-serif;fill:#4b5563}
)";

// The latency chart: for each read, the share of reads slower than x
// (complementary CDF), both axes logarithmic, so the tail that retention
// loss stretches (ECC retries, read-retry voltages) is as visible as the
// median.
std::string LatencyChart(const Summary& s) {
  constexpr double kW = 1000, kH = 400, kLeft = 80, kRight = 20, kTop = 16, kBottom = 46;
  constexpr double kXMin = -5, kXMax = 1;  // 10 µs .. 10 s
  constexpr double kYMin = -6;             // 100% .. 0.0001%
  const double pw = kW - kLeft - kRight, ph = kH - kTop - kBottom;
  auto x = [&](double seconds) {
    const double l = std::clamp(std::log10(std::max(seconds, 1e-12)), kXMin, kXMax);
    return kLeft + (l - kXMin) / (kXMax - kXMin) * pw;
  };
  auto y = [&](double fraction) {
    const double l = std::clamp(std::log10(std::max(fraction, 1e-12)), kYMin, 0.0);
    return kTop + (0 - l) / (0 - kYMin) * ph;
  };
  std::string out = Format(
      "<svg class=\"latency-chart\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" "
      "aria-label=\"Share of reads slower than a latency, per read of the region\">\n",
      kW, kH);
  // Grid and axes.
  static constexpr std::array<const char*, 7> kXLabels = {"10 \xc2\xb5s", "100 \xc2\xb5s", "1 ms",
                                                          "10 ms", "100 ms", "1 s", "10 s"};
  for (int d = 0; d <= 6; ++d) {
    const double gx = x(std::pow(10.0, kXMin + d));
    out += Format("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e5e7eb\"/>", gx,
                  kTop, gx, kTop + ph);
    out += Format("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", gx,
                  kTop + ph + 18, kXLabels[d]);
  }
  static constexpr std::array<const char*, 7> kYLabels = {"100%", "10%", "1%", "0.1%",
                                                          "0.01%", "0.001%", "0.0001%"};
  for (int d = 0; d <= 6; ++d) {
    const double gy = y(std::pow(10.0, -d));
    out += Format("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e5e7eb\"/>",
                  kLeft, gy, kLeft + pw, gy);
    out += Format("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", kLeft - 8,
                  gy + 4, kYLabels[d]);
  }
  out += Format("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">read latency</text>\n",
                kLeft + pw / 2, kH - 6);
  out += Format(
      "<text transform=\"translate(14 %.1f) rotate(-90)\" text-anchor=\"middle\">reads "
      "slower than this</text>\n",
      kTop + ph / 2);
  // 100 ms: the reference report's limit.
  const double lx = x(kSlowReadSeconds);
  out += Format(
      "<line class=\"limit\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#dc2626\" "
      "stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>",
      lx, kTop, lx, kTop + ph);
  out += Format(
      "<text x=\"%.1f\" y=\"%.1f\" style=\"fill:#dc2626\">100 ms limit</text>\n", lx + 6,
      kTop + 14);

  // Series.
  for (std::size_t i = 0; i < s.reads.size(); ++i) {
    const Read& r = s.reads[i];
    if (!r.histogram || r.histogram->count() == 0) continue;
    const LatencyHistogram& h = *r.histogram;
    const double total = static_cast<double>(h.count());
    std::uint64_t seen = 0;
    std::string d = Format("M%.1f %.1f", kLeft, y(1));
    for (std::size_t b = 0; b < LatencyHistogram::kBuckets; ++b) {
      const std::uint64_t n = h.bucket(b);
      if (n == 0) continue;
      const double before = (total - static_cast<double>(seen)) / total;
      seen += n;
      const double after = (total - static_cast<double>(seen)) / total;
      const double lo = static_cast<double>(LatencyHistogram::LowerBound(b)) * 1e-9;
      const double hi = b == LatencyHistogram::kOverflowIndex
                            ? std::pow(10.0, kXMax)
                            : static_cast<double>(LatencyHistogram::UpperBound(b)) * 1e-9;
      d += Format("L%.1f %.1f", x(lo), y(before));
      if (after > 0) {
        d += Format("L%.1f %.1f", x(hi), y(after));
      } else {
        d += Format("L%.1f %.1f", x(hi), kTop + ph);
      }
    }
    const bool last = &r == s.LastVerify();
    out += Format(
        "<path class=\"series\" data-series=\"%s\" d=\"%s\" fill=\"none\" stroke=\"%s\" "
        "stroke-width=\"%s\" stroke-linejoin=\"round\"%s/>\n",
        Html(r.label).c_str(), d.c_str(), std::string(SeriesColour(i, s.has_baseline)).c_str(),
        last ? "2.5" : "1.6", (s.has_baseline && i == 0) ? " stroke-dasharray=\"5 3\"" : "");
  }
  // Legend, top right inside the plot, below the limit's label: a drive
  // whose reads are mostly slower than 1 ms is in trouble anyway.
  std::size_t drawn = 0;
  for (const Read& r : s.reads) drawn += r.histogram && r.histogram->count() != 0;
  double ly = kTop + 40;
  const double lxl = kLeft + pw - 262;
  out += "<g class=\"legend\">";
  out += Format("<rect x=\"%.1f\" y=\"%.1f\" width=\"250\" height=\"%.1f\" fill=\"#fff\" "
                "fill-opacity=\"0.9\" rx=\"4\"/>",
                lxl - 8, ly - 16, 18 * static_cast<double>(drawn) + 8);
  for (std::size_t i = 0; i < s.reads.size(); ++i) {
    const Read& r = s.reads[i];
    if (!r.histogram || r.histogram->count() == 0) continue;
    const std::string colour(SeriesColour(i, s.has_baseline));
    out += Format("<rect x=\"%.1f\" y=\"%.1f\" width=\"18\" height=\"4\" fill=\"%s\"/>", lxl,
                  ly - 6, colour.c_str());
    std::string label = r.label;
    if (auto age = Num(*r.json, {"age_seconds"}); age && r.label != "baseline") {
      label += ", " + Duration(age);
    }
    label += ", " + Utc(r.start, "%Y-%m-%d");
    out += Format("<text x=\"%.1f\" y=\"%.1f\">", lxl + 26, ly) + Html(label) + "</text>";
    ly += 18;
  }
  out += "</g>\n</svg>\n";
  return out;
}

// The region as a grid of cells, each a run of consecutive LBAs; a cell
// holding any bad block takes the colour of its worst class.
std::string BadBlockMap(const Json& study, const Read& r, std::array<std::uint64_t, 4>* cells_per_class) {
  const Region region = RegionOf(study);
  constexpr std::uint64_t kCols = 128, kRows = 16;
  constexpr double kW = 1000, kCellH = 14, kTopPad = 2, kLeftPad = 0;
  const double cell_w = kW / static_cast<double>(kCols);
  std::string out;
  if (region.blocks == 0) return "<p class=\"note\">The region is unknown.</p>\n";
  const std::uint64_t cells = std::min(region.blocks, kCols * kRows);
  const std::uint64_t per_cell = (region.blocks + cells - 1) / cells;
  const std::uint64_t rows = (cells + kCols - 1) / kCols;
  const double height = static_cast<double>(rows) * kCellH + 2 * kTopPad;

  // cell -> (worst class, ranges text)
  std::map<std::uint64_t, std::pair<std::size_t, std::string>> marked;
  std::uint64_t outside = 0;
  if (const Json* ranges = r.json->Find("ranges")) {
    for (const Json& range : ranges->items()) {
      const std::string cls = Str(range, {"class"});
      const auto it = std::find(kClasses.begin(), kClasses.end(), cls);
      if (it == kClasses.end()) continue;
      const std::size_t c = static_cast<std::size_t>(it - kClasses.begin());
      const std::uint64_t first = range.Find("first_lba") ? range.Find("first_lba")->AsUint() : 0;
      std::uint64_t last = range.Find("last_lba") ? range.Find("last_lba")->AsUint(first) : first;
      if (last < first) last = first;
      if (first < region.first || first >= region.first + region.blocks) {
        ++outside;
        continue;
      }
      last = std::min(last, region.first + region.blocks - 1);
      std::string what = "LBA " + std::to_string(first);
      if (last != first) what += "\xe2\x80\x93" + std::to_string(last);
      what += ": " + std::string(kClassLabels[c]);
      for (std::uint64_t cell = (first - region.first) / per_cell;
           cell <= (last - region.first) / per_cell; ++cell) {
        auto [slot, inserted] = marked.try_emplace(cell, c, what);
        if (!inserted) {
          slot->second.first = std::min(slot->second.first, c);
          if (slot->second.second.size() < 400) slot->second.second += "\n" + what;
        }
      }
    }
  }
  out += Format(
      "<svg class=\"bad-block-map\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" aria-label=\"Bad "
      "blocks in the region\">\n",
      kW, height);
  out += Format(
      "<rect class=\"region\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" rx=\"3\" "
      "fill=\"#bbf7d0\"/>\n",
      kLeftPad, kTopPad, cell_w * static_cast<double>(std::min(cells, kCols)),
      static_cast<double>(rows) * kCellH);
  // Faint row separators so the strip reads as a grid.
  for (std::uint64_t row = 1; row < rows; ++row) {
    const double gy = kTopPad + static_cast<double>(row) * kCellH;
    out += Format("<line x1=\"0\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#f0fdf4\"/>", gy,
                  kW, gy);
  }
  out += "\n";
  for (const auto& [cell, what] : marked) {
    const double cx = kLeftPad + static_cast<double>(cell % kCols) * cell_w;
    const double cy = kTopPad + static_cast<double>(cell / kCols) * kCellH;
    (*cells_per_class)[what.first] += 1;
    out += Format(
        "<rect class=\"bad %s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
        "fill=\"%s\">",
        std::string(kClasses[what.first]).c_str(), cx, cy, cell_w, kCellH,
        std::string(kClassColours[what.first]).c_str());
    out += "<title>" + Html(what.second) + "</title></rect>\n";
  }
  out += "</svg>\n";
  out += "<p class=\"note\">" + Count(cells) + " cells of " + Plural(per_cell, "block", "blocks") +
         " each, LBA " + Count(region.first) + " top left to " +
         Count(region.first + region.blocks - 1) + " bottom right; green is intact.";
  if (outside != 0) out += " " + Plural(outside, "range lies", "ranges lie") + " outside the region.";
  if (r.json->Find("ranges_truncated") && r.json->Find("ranges_truncated")->AsBool()) {
    out += " Only the first recorded ranges are shown (the list was truncated).";
  }
  out += "</p>\n";
  return out;
}

std::string Row(std::string_view label, const std::string& escaped_value) {
  return "<dt>" + std::string(label) + "</dt><dd>" + escaped_value + "</dd>\n";
}

std::string DeltaCell(const std::string& value, const std::string& delta, bool worse,
                      bool better) {
  std::string out = "<td>" + value;
  if (!delta.empty()) {
    out += "<span class=\"d";
    if (worse) out += " worse";
    if (better) out += " better";
    out += "\">" + delta + "</span>";
  }
  return out + "</td>";
}

std::string RenderHtml(const Json& study, const Summary& s, double now) {
  const std::string name = Html(Str(study, {"study"}));
  std::string verdict_class = s.verdict;
  std::transform(verdict_class.begin(), verdict_class.end(), verdict_class.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::string out;
  out += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += "<title>Retention study " + name + "</title>\n<style>" + std::string(kCss) +
         "</style>\n</head>\n<body>\n<main>\n";
  out += "<h1>Retention study " + name + " <small>" + Html(Str(study, {"id"})) + "</small></h1>\n";
  out += "<p class=\"sub\">" + Html(Str(study, {"model"})) + " &middot; serial " +
         Html(Str(study, {"serial"})) + " &middot; report generated " + Html(Utc(now)) + "</p>\n";
  out += "<div class=\"verdict " + verdict_class + "\" id=\"verdict\">" + Html(s.line) +
         "</div>\n";

  // Facts and time.
  out += "<div class=\"cols\">\n<section id=\"facts\"><h2>Drive and study</h2><dl>\n";
  out += Row("model", Html(Str(study, {"model"})));
  out += Row("serial", "<span id=\"serial\">" + Html(Str(study, {"serial"})) + "</span>");
  out += Row("firmware", Html(Str(study, {"firmware"})));
  out += Row("device", Html(Str(study, {"device"})) + " (namespace " +
                           Html(Str(study, {"nsid"})) + ")");
  out += Row("target", Html(Str(study, {"target"})));
  std::string state = Str(study, {"state"});
  if (Str(study, {"reason"}) != "-") state += " (" + Str(study, {"reason"}) + ")";
  out += Row("state", Html(state));
  out += Row("region", Html(RegionText(study)));
  out += Row("pattern", Html(PatternText(study)));
  out += Row("written", Html(WrittenText(study, now)));
  out += "</dl></section>\n";

  out += "<section id=\"time\"><h2>Time";
  if (s.estimated) {
    out += " <small class=\"d\">estimated now, no verify yet</small>";
  } else if (const Read* last = s.LastVerify()) {
    out += " <small class=\"d\">as of " + Html(last->label) + ", " + Html(Utc(last->start)) +
           "</small>";
  }
  out += "</h2><dl>\n";
  out += Row("wall age", Html(Duration(s.wall)));
  out += Row("powered on", Html(Duration(s.powered_on)));
  out += Row("powered off", Html(PoweredOffText(s)));
  out += Row("equivalent age", Html(EquivalentText(s)));
  out += Row("reference", Html(Format("%s, Ea %.2g eV, k = 8.617e-5 eV/K",
                                      Celsius(s.reference_k).c_str(), s.ea)));
  out += Row("stored at", s.storage_k ? Html(Celsius(s.storage_k))
                                      : std::string("not configured"));
  out += "</dl></section>\n</div>\n";

  if (const Json* events = study.Find("events"); events && !events->items().empty()) {
    out += "<section id=\"events\"><h2>Events</h2><table><thead><tr><th>when</th><th>event</th>"
           "<th style=\"text-align:left\">detail</th></tr></thead><tbody>\n";
    for (const Json& e : events->items()) {
      out += "<tr class=\"event\"><td>" + Html(Utc(Num(e, {"time"}))) + "</td><td>" +
             Html(Str(e, {"kind"})) + "</td><td style=\"text-align:left\">" +
             Html(Str(e, {"detail"})) + "</td></tr>\n";
    }
    out += "</tbody></table></section>\n";
  }

  if (s.reads.empty()) {
    out += "<section><h2>Reads</h2><p>Nothing has been read back yet.</p></section>\n";
    out += "</main>\n</body>\n</html>\n";
    return out;
  }

  // Latency.
  const Read* base = s.Baseline();
  out += "<section id=\"latency\"><h2>Read latency</h2>\n" + LatencyChart(s);
  out += "<table class=\"latency\"><thead><tr><th></th>";
  for (const Read& r : s.reads) out += "<th>" + Html(r.label) + "</th>";
  out += "</tr></thead><tbody>\n";
  auto latency_row = [&](std::string_view label, std::optional<double> Read::*field) {
    out += "<tr><td>" + std::string(label) + "</td>";
    for (const Read& r : s.reads) {
      std::string d;
      bool worse = false, better = false;
      if (base && &r != base) {
        d = Delta(r.*field, base->*field);
        if (r.*field && base->*field) {
          worse = *(r.*field) > *(base->*field) * 1.2;
          better = *(r.*field) < *(base->*field) * 0.8;
        }
      }
      out += DeltaCell(Html(Latency(r.*field)), Html(d), worse, better);
    }
    out += "</tr>\n";
  };
  auto ratio_row = [&](std::string_view label, std::optional<double> Read::*field) {
    out += "<tr><td>" + std::string(label) + "</td>";
    for (const Read& r : s.reads) {
      std::string d;
      bool worse = false;
      if (base && &r != base) {
        d = DeltaPoints(r.*field, base->*field);
        worse = r.*field && base->*field && *(r.*field) > *(base->*field);
      }
      out += DeltaCell(Html(Percent(r.*field)), Html(d), worse, false);
    }
    out += "</tr>\n";
  };
  latency_row("p50", &Read::p50);
  latency_row("p99", &Read::p99);
  latency_row("p99.9", &Read::p999);
  latency_row("max", &Read::max);
  ratio_row("reads &gt; 10 ms", &Read::over10);
  ratio_row("reads &gt; 100 ms", &Read::over100);
  out += "</tbody></table>\n";
  if (base) out += "<p class=\"note\">Changes are against the baseline read.</p>\n";
  out += "</section>\n";

  // Bad blocks.
  const Read* judged = s.Judged();
  out += "<section id=\"bad-blocks\"><h2>Bad blocks <small class=\"d\">" + Html(judged->label) +
         "</small></h2>\n";
  std::array<std::uint64_t, 4> cells{};
  out += BadBlockMap(study, *judged, &cells);
  out += "<div class=\"classes\">";
  for (std::size_t c = 0; c < kClasses.size(); ++c) {
    out += "<span class=\"class\"><span class=\"chip\" style=\"background:" +
           std::string(kClassColours[c]) + "\"></span>" + std::string(kClassLabels[c]) +
           "<span class=\"count\" data-class=\"" + std::string(kClasses[c]) + "\">" +
           Count(judged->bad[c]) + "</span></span>";
  }
  out += "</div>\n";
  out += "<table class=\"reads\"><thead><tr><th>read</th><th>date</th><th>age</th>"
         "<th>equivalent age</th><th>blocks</th><th>ok</th><th>unreadable</th><th>wrong</th>"
         "<th>misplaced</th><th>stale</th><th>outcome</th></tr></thead><tbody>\n";
  for (const Read& r : s.reads) {
    out += "<tr><td>" + Html(r.label) + "</td><td>" + Html(Utc(r.start, "%Y-%m-%d")) +
           "</td><td>" + Html(Duration(Num(*r.json, {"age_seconds"}))) + "</td><td>" +
           Html(Duration(Num(*r.json, {"equivalent_age_seconds"}))) + "</td><td>" +
           Count(r.blocks) + "</td><td>" + (r.ok ? Count(*r.ok) : "-") + "</td>";
    for (std::size_t c = 0; c < kClasses.size(); ++c) {
      out += std::string(r.bad[c] != 0 ? "<td class=\"worse\">" : "<td>") + Count(r.bad[c]) +
             "</td>";
    }
    out += "<td>" + Html(r.outcome.empty() ? "-" : r.outcome) + "</td></tr>\n";
  }
  out += "</tbody></table>\n</section>\n";

  // SMART.
  out += "<section id=\"smart\"><h2>SMART since the write</h2><table><thead><tr><th></th>"
         "<th>at write</th>";
  for (const Read& r : s.reads) out += "<th>" + Html(r.label) + "</th>";
  out += "</tr></thead><tbody>\n";
  for (std::size_t f = 0; f < kSmartFields.size(); ++f) {
    const bool alarming = f <= 1 || f == 3;  // media errors, error log, unsafe shutdowns
    out += "<tr><td>" + std::string(kSmartLabels[f]) + "</td><td>" +
           Html(Str(study, {"smart_at_write", kSmartFields[f]})) + "</td>";
    for (const Read& r : s.reads) {
      const auto d = SmartDelta(r, kSmartFields[f]);
      const bool worse = alarming && d && *d > 0;
      out += std::string(worse ? "<td class=\"worse\">" : "<td>") + Html(Signed(d)) + "</td>";
    }
    out += "</tr>\n";
  }
  out += "</tbody></table>\n<p class=\"note\">Changes since the pattern was written.</p>\n"
         "</section>\n";
  out += "</main>\n</body>\n</html>\n";
  return out;
}

}  // namespace

std::string RenderRetentionReport(const Json& study, ReportFormat format, double now) {
  if (Status valid = ValidateStudy(study); !valid) {
    const Json* name = study.Find("study");
    return RenderDamagedStudyReport(name ? name->AsString() : std::string(),
                                    valid.error().message, true, format);
  }
  const Summary summary = Summarize(study, now);
  switch (format) {
    case ReportFormat::kJson: {
      Json out = study;
      out["summary"] = SummaryJson(summary);
      return out.Dump(2) + "\n";
    }
    case ReportFormat::kHtml:
      return RenderHtml(study, summary, now);
    case ReportFormat::kText:
      break;
  }
  return RenderText(study, summary, now);
}

namespace {

// A damaged record's name or a file name may hold anything: control
// characters are shown escaped, so no text of theirs can start a line that
// reads like a verdict.
std::string Printable(std::string_view s) {
  std::string out;
  for (unsigned char ch : s) {
    if (ch < 0x20 || ch == 0x7f) {
      out += Format("\\x%02x", ch);
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out;
}

}  // namespace

std::string RenderDamagedStudyReport(const std::string& raw_name, const std::string& raw_problem,
                                     bool damaged, ReportFormat format) {
  const std::string name = Printable(raw_name);
  const std::string problem = Printable(raw_problem);
  const std::string verdict = damaged ? "DAMAGED" : "UNREADABLE";
  const std::string line =
      verdict + ": " + problem +
      (damaged ? "; the record cannot be trusted, so it gives no result"
               : "; the record could not be read, so it gives no result");
  switch (format) {
    case ReportFormat::kJson: {
      Json out = Json::Object();
      out["study"] = name;
      Json& summary = out["summary"];
      summary = Json::Object();
      summary["verdict"] = verdict;
      summary["verdict_line"] = line;
      summary["problem"] = problem;
      return out.Dump(2) + "\n";
    }
    case ReportFormat::kHtml: {
      std::string class_name = verdict;
      std::transform(class_name.begin(), class_name.end(), class_name.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
             "<title>Retention study " + Html(name) + "</title>\n<style>" + std::string(kCss) +
             "</style>\n</head>\n<body>\n<main>\n<h1>Retention study " + Html(name) +
             "</h1>\n<div class=\"verdict " + class_name + "\" id=\"verdict\">" + Html(line) +
             "</div>\n</main>\n</body>\n</html>\n";
    }
    case ReportFormat::kText:
      break;
  }
  return "Retention study " + name + "\n" + line + "\n";
}

std::string RenderRetentionList(const std::vector<Json>& studies, double now,
                                const std::vector<UnloadableStudy>& unloadable) {
  if (studies.empty() && unloadable.empty()) return "no retention studies\n";
  std::vector<std::vector<std::string>> rows = {
      {"STUDY", "STATE", "SERIAL", "TARGET", "REGION", "WRITTEN", "AGE", "EQUIV AGE",
       "LAST VERIFY", "BAD"}};
  std::vector<UnloadableStudy> untrusted = unloadable;
  for (const Json& study : studies) {
    if (Status valid = ValidateStudy(study); !valid) {
      untrusted.push_back({Str(study, {"study"}), valid.error().message, true});
      continue;
    }
    const Summary s = Summarize(study, now);
    const Read* last = s.LastVerify();
    const auto written = Num(study, {"written", "end"});
    rows.push_back({Str(study, {"study"}), Str(study, {"state"}), Str(study, {"serial"}),
                    Str(study, {"target"}), Bytes(Num(study, {"region", "length"})),
                    Utc(written, "%Y-%m-%d %H:%M"),
                    written ? Duration(std::max(0.0, now - *written)) : "-",
                    Duration(s.equivalent),
                    last ? Utc(last->start, "%Y-%m-%d %H:%M") : "-",
                    last ? Count(last->bad_total) : "-"});
  }
  for (const UnloadableStudy& u : untrusted) {
    rows.push_back({Printable(u.name), u.damaged ? "DAMAGED" : "UNREADABLE", "-", "-", "-", "-",
                    "-", "-", "-", "-"});
  }
  std::string out = Table(rows, "", 99);
  if (!untrusted.empty()) {
    out += "\nstudies whose record gives no result:\n";
    for (const UnloadableStudy& u : untrusted) {
      out += "  " + Printable(u.name) + ": " + Printable(u.problem) + "\n";
    }
  }
  return out;
}

}  // namespace drivewatch::aging
