// SPDX-License-Identifier: Apache-2.0
// replay: a block trace (fio's iolog version 2 or 3, or blkparse's default
// output; aging/engine/block_trace.h) replayed onto the target, the way test
// reports replay a recorded client workload and give how long it took:
//   1. The whole trace is read and checked (ScanTrace). The config read it
//      too when it was loaded (InspectTrace, below): a trace of reads only
//      made the runner open the target for reading, checking only its
//      serial. If the trace now writes or trims (the file changed since),
//      the run is refused before anything touches the target.
//   2. The trace is streamed once more through the workload engine: each
//      I/O aligned to the logical block size, folded onto the capacity and
//      split at 2 MiB (MapTraceIo), due at its recorded time from the
//      trace's first I/O divided by replay_speed (each I/O issued late for
//      want of a free slot of queue_depth counts its latency from when it
//      was due), or at once for "max". A writing replay is one write pass
//      over the whole target, so no byte of a retention study's region is
//      touched. The file is checked line by line again as it streams, and
//      a write that appears now in a read-only run stops it.
//   3. Results: the replay's duration (first submission to last
//      completion) beside the trace's own span, latency per operation,
//      throughput, and what mapping did to the trace's I/O.
#include <algorithm>
#include <cmath>

#include "aging/engine/block_trace.h"
#include "aging/phases/phase.h"

namespace drivewatch::aging {
namespace {

// Hands the engine the trace's I/O, mapped onto the target, each with its
// due time.
class TraceSource : public IoSource {
 public:
  TraceSource(BlockTraceReader& reader, const TraceSummary& summary, const TraceMapping& mapping,
              const config::ReplaySpeed& speed, bool may_write, const std::string& trace)
      : reader_(reader), summary_(summary), mapping_(mapping), speed_(speed),
        may_write_(may_write), trace_(trace) {}

  std::optional<Io> Next() override {
    while (next_ == pieces_.size()) {
      if (error_) return std::nullopt;
      auto event = reader_.Next();
      if (!event) {
        error_ = event.error();
        return std::nullopt;
      }
      if (!*event) return std::nullopt;
      const TraceIo& io = **event;
      if (io.op == TraceIo::Op::kFlush) {
        ++flushes_;
        continue;
      }
      if (io.op != TraceIo::Op::kRead && !may_write_) {
        error_ = Error{EPERM, -1,
                       trace_ + ":" + std::to_string(io.line) +
                           ": refusing to replay a write or trim: the trace held only reads "
                           "when the replay began, so the target is open for reading only "
                           "(the trace changed while it was replayed)"};
        return std::nullopt;
      }
      ++trace_ios_;
      pieces_.clear();
      next_ = 0;
      MapTraceIo(io, mapping_, pieces_, counts_);
      if (!speed_.max) {
        // Never due before the I/O the trace had before it.
        const std::uint64_t t0 = summary_.first_time_ns;
        last_ns_ = std::max(last_ns_, io.time_ns > t0 ? io.time_ns - t0 : 0);
        const double scaled = speed_.scale == 1 ? static_cast<double>(last_ns_)
                                                : static_cast<double>(last_ns_) / speed_.scale;
        due_ = std::chrono::nanoseconds(static_cast<std::int64_t>(scaled));
      }
    }
    const MappedIo& m = pieces_[next_++];
    Io out;
    out.op = m.op == TraceIo::Op::kWrite  ? Op::kWrite
             : m.op == TraceIo::Op::kTrim ? Op::kTrim
                                          : Op::kRead;
    out.offset = m.offset;
    out.size = m.size;
    out.due = due_;
    return out;
  }

  double Fraction() const override {
    return static_cast<double>(trace_ios_) / static_cast<double>(summary_.ios());
  }

  const std::optional<Error>& error() const { return error_; }
  const MappingCounts& counts() const { return counts_; }
  std::uint64_t trace_ios() const { return trace_ios_; }
  std::uint64_t flushes() const { return flushes_; }

 private:
  BlockTraceReader& reader_;
  const TraceSummary& summary_;
  const TraceMapping mapping_;
  const config::ReplaySpeed speed_;
  const bool may_write_;
  const std::string& trace_;
  std::vector<MappedIo> pieces_;  // the current trace I/O's
  std::size_t next_ = 0;
  std::optional<std::chrono::nanoseconds> due_;
  std::uint64_t last_ns_ = 0;
  std::optional<Error> error_;
  MappingCounts counts_;
  std::uint64_t trace_ios_ = 0;
  std::uint64_t flushes_ = 0;
};

// The engine's shares of each operation, from the trace's counts: they
// size its buffers and make a run with writes or trims a write pass. Each
// operation present gets at least 1.
void SetShares(const TraceSummary& s, WorkloadSpec& spec) {
  std::uint32_t* shares[3] = {&spec.read_percent, &spec.write_percent, &spec.trim_percent};
  const std::uint64_t counts[3] = {s.reads, s.writes, s.trims};
  std::uint32_t sum = 0;
  std::size_t largest = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    *shares[i] = counts[i] == 0
                     ? 0
                     : std::max<std::uint32_t>(
                           1, static_cast<std::uint32_t>(counts[i] * 100 / s.ios()));
    sum += *shares[i];
    if (counts[i] > counts[largest]) largest = i;
  }
  *shares[largest] = *shares[largest] + 100 - sum;
}

// An operation's response latency (from when each I/O was due, so a
// replay that fell behind shows it) and its service latency (from the
// submission, as fio times).
void Latencies(const char* op, const LatencyHistogram& h, const LatencyHistogram& service,
               Json& results) {
  if (h.count() == 0) return;
  const std::string p = op;
  results[p + "_p50_seconds"] = h.Quantile(0.5);
  results[p + "_p99_seconds"] = h.Quantile(0.99);
  results[p + "_p99_9_seconds"] = h.Quantile(0.999);
  results[p + "_max_seconds"] = h.MaxSeconds();
  results[p + "_service_p50_seconds"] = service.Quantile(0.5);
  results[p + "_service_p99_seconds"] = service.Quantile(0.99);
  results[p + "_service_p99_9_seconds"] = service.Quantile(0.999);
}

}  // namespace

Expected<config::TraceFacts> InspectTrace(const config::ReplayParams& phase) {
  auto summary = ScanTrace(phase.trace, phase.trace_device);
  if (!summary) return summary.error();
  return config::TraceFacts{.read = true, .first_write_line = summary->first_write_line};
}

Status RunKind(const config::ReplayParams& phase, PhaseContext& ctx, PhaseReport& report) {
  auto summary = ScanTrace(phase.trace, phase.trace_device);
  if (!summary) return summary.error();
  // What the config saw decided how the target was opened.
  const bool may_write = config::PhaseKindWrites(ctx.phase().params);
  if (summary->writes_data() && !may_write) {
    return Error{EPERM, -1,
                 phase.trace + ":" + std::to_string(summary->first_write_line) +
                     ": refusing to replay: the trace writes or trims from this line on, but "
                     "held only reads when the config was loaded, so target \"" +
                     ctx.target().name +
                     "\" was opened for reading only (the trace changed since: check the "
                     "config again with drivewatch check-config, and reload the daemon)"};
  }
  report.results["recorded_span_seconds"] =
      std::chrono::duration<double>(summary->span()).count();
  report.results["trace_ios"] = summary->ios();

  auto reader = BlockTraceReader::Open(
      phase.trace, TraceReadOptions{phase.trace_device, summary->blkparse_action});
  if (!reader) return reader.error();
  const std::uint64_t lbs = ctx.logical_block_size();
  const TraceMapping mapping{ctx.capacity(), static_cast<std::uint32_t>(lbs)};
  TraceSource source(**reader, *summary, mapping, phase.replay_speed, may_write, phase.trace);

  WorkloadSpec spec;
  spec.source = &source;
  SetShares(*summary, spec);
  // Room for the largest mapped I/O: aligning adds at most a block.
  spec.block_size = static_cast<std::uint32_t>(
      std::min({(summary->largest_io + lbs - 1) / lbs * lbs + lbs,
                std::uint64_t{mapping.max_io}, mapping.capacity}));
  spec.queue_depth = phase.queue_depth;
  ctx.Checkpoint(report);
  auto run = ctx.Run(spec, "replay", 0, 1);
  if (!run) return run.error();
  const WorkloadResult& r = *run;

  Json& results = report.results;
  const double seconds = r.total.seconds;
  results["replay_duration_seconds"] = seconds;
  results["replayed_ios"] = source.trace_ios();
  results["read_ios"] = r.total.read_ios;
  results["write_ios"] = r.total.write_ios;
  results["trim_ios"] = r.total.trim_ios;
  results["late_ios"] = r.late;
  results["aligned_ios"] = source.counts().aligned;
  results["folded_ios"] = source.counts().folded;
  results["split_ios"] = source.counts().split;
  results["flush_ios"] = source.flushes();
  results["read_bytes"] = r.total.read_bytes;
  results["written_bytes"] = r.total.write_bytes;
  results["trimmed_bytes"] = r.total.trim_bytes;
  results["replay_bytes_per_second"] =
      seconds > 0 ? static_cast<double>(r.total.read_bytes + r.total.write_bytes) / seconds : 0.0;
  results["replay_iops"] = seconds > 0 ? static_cast<double>(r.total.ios()) / seconds : 0.0;
  Latencies("read", r.read_latency, r.read_service, results);
  Latencies("write", r.write_latency, r.write_service, results);
  Latencies("trim", r.trim_latency, r.trim_service, results);
  report.series["throughput_bytes_per_second"] = ThroughputSeries(r);
  if (source.error()) return *source.error();
  if (r.errors > 0) {
    return Error{EIO, -1,
                 "replay: " + std::to_string(r.errors) + " I/O errors, first: " + r.first_error};
  }
  return Ok{};
}

// A replay that trimmed, or was interrupted before it could say, leaves the
// level unknown (one that stopped before its I/O has no trimmed_bytes); one
// that only read or wrote leaves the filled part written.
double FillLevelAfter(const config::ReplayParams&, const Json& record, double level) {
  const Json* outcome = Find(record, "outcome");
  const Json* results = Find(record, "results");
  const Json* trimmed = results ? Find(*results, "trimmed_bytes") : nullptr;
  const bool interrupted = outcome != nullptr && AsString(*outcome) == "interrupted";
  if (trimmed ? AsDouble(*trimmed, 1) != 0 : interrupted) return -1;
  return level;
}

}  // namespace drivewatch::aging
