// SPDX-License-Identifier: Apache-2.0
// What the retention report's text, JSON and HTML renderings share: the
// summary model of a study (its reads, verdict and time accounting) and the
// formatting of values for people. Internal to aging/report/retention_report*.cc.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "aging/report/report_format.h"
#include "aging/report/svg_chart.h"
#include "config/util/json.h"
#include "probes/latency/latency_histogram.h"

namespace drivewatch::aging::retention_report_detail {

using report_format::Count;
using report_format::Format;
using report_format::Html;
using report_format::kCss;
using report_format::Table;
using report_format::Utc;

inline constexpr double kSlowReadSeconds = 0.1;  // the reference report's limit

// Bad-block classes in order of severity: a cell of the map that holds
// several shows the first.
inline constexpr std::array<std::string_view, 4> kClasses = {
    "unreadable", "wrong_content", "misplaced", "stale"};
inline constexpr std::array<std::string_view, 4> kClassLabels = {
    "unreadable", "wrong content", "misplaced", "stale"};
inline constexpr std::array<std::string_view, 4> kClassColours = {
    "#d62728", "#ff7f0e", "#9467bd", "#17a2b8"};

inline constexpr std::array<std::string_view, 5> kSmartFields = {
    "media_errors", "error_log_entries", "power_cycles", "unsafe_shutdowns",
    "power_on_hours"};
inline constexpr std::array<std::string_view, 5> kSmartLabels = {
    "media errors", "error-log entries", "power cycles", "unsafe shutdowns",
    "power-on hours"};

std::optional<double> Num(const Json* j);

std::optional<double> Num(const Json& root,
                          std::initializer_list<std::string_view> path);

// An LBA or a count: a number from 0 to below 2^64, else nothing (a study
// file edited by hand, or damaged, may hold anything).
std::optional<std::uint64_t> Whole(const Json& root,
                                   std::initializer_list<std::string_view> path);

// Text for a field: "-" when missing or empty.
std::string Str(const Json& root, std::initializer_list<std::string_view> path);

std::string Duration(std::optional<double> seconds);

std::string Latency(std::optional<double> seconds);

std::string Percent(std::optional<double> ratio);

std::string Bytes(std::optional<double> bytes);

std::string Celsius(std::optional<double> kelvin);

std::string Plural(std::uint64_t n, std::string_view one, std::string_view many);

// Relative change of a latency against the baseline, "+12%".
std::string Delta(std::optional<double> value, std::optional<double> base);

// Change of a fraction in percentage points.
std::string DeltaPoints(std::optional<double> value, std::optional<double> base);

// The latency tail of a histogram as a complementary CDF: points (latency
// in seconds as x, share of reads slower as y), stepping at every bucket with reads,
// from (min_seconds, 1) down to 0 after the slowest read (drawn to
// max_seconds when that is in the overflow bucket). `drivewatch retention
// report` and `drivewatch report` chart it on log-log axes over these
// bounds (10 µs to 10 s).
inline constexpr double kLatencyTailMinSeconds = 1e-5;
inline constexpr double kLatencyTailMaxSeconds = 10;
std::vector<svg::Point> LatencyTail(const LatencyHistogram& h,
                                   double min_seconds = kLatencyTailMinSeconds,
                                   double max_seconds = kLatencyTailMaxSeconds);
// A decade of the latency axis: "10 µs", "1 ms", "10 s".
std::string LatencyTick(double seconds);

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
  // How its latency distribution was taken (LatencyMethodText), and
  // whether that is how the baseline's was: a change against the baseline
  // is shown only then.
  std::string method;
  bool comparable = true;

  std::uint64_t SlowReads() const {
    if (!over100) return 0;
    return static_cast<std::uint64_t>(std::llround(*over100 * static_cast<double>(reads)));
  }
  bool Slow() const {
    return (over100 && *over100 > 0) || (max && *max > kSlowReadSeconds);
  }
};

// One recorded range of bad blocks, for a table: "LBA 4,096-4,111", its
// class as people say it, what was found ("Input/output error", "holds
// LBA 17").
struct RangeRow {
  std::string lbas, klass, detail;
};
std::vector<RangeRow> RangeRows(const Read& r);

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
  // How the latencies were taken, one sentence: "Latency: 4 KiB random
  // reads at QD1, ... (every read)." or one clause per read when they
  // differ.
  std::string MethodNote() const;
  const Read* Judged() const {
    return LastVerify() ? LastVerify() : Baseline();
  }
};

Summary Summarize(const Json& study, double now);

// The region as LBAs: [first, first + blocks).
struct Region {
  std::uint64_t first = 0;
  std::uint64_t blocks = 0;
  std::uint64_t block_size = 0;
};

Region RegionOf(const Json& study);

std::string RegionText(const Json& study);

std::string PatternText(const Json& study);

std::string WrittenText(const Json& study, double now);

std::string PoweredOffText(const Summary& s);

std::string EquivalentText(const Summary& s);

// Per-verify SMART delta field (since the write).
std::optional<double> SmartDelta(const Read& r, std::string_view field);

std::string Signed(std::optional<double> v);

// The "summary" member of `drivewatch retention report --format json`.
Json SummaryJson(const Summary& s);

// The text and HTML reports (retention_report_text.cc, _html.cc).
std::string RenderText(const Json& study, const Summary& s, double now);
std::string RenderHtml(const Json& study, const Summary& s, double now);

}  // namespace drivewatch::aging::retention_report_detail
