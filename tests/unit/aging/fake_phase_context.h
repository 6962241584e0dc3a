// SPDX-License-Identifier: Apache-2.0
// A fake PhaseContext (aging/phases/phase.h), for the unit tests of each
// kind's story (aging/phases/<kind>_phase.cc). A fake on purpose: what a
// kind does with a workload's answer is the subject, and no drive can be
// told to answer a chosen way: deliver a given IOPS run after run, fail one
// step with EIO, report I/O errors, or be stopped after N steps. The
// runner's own context (aging/runner/phase_runner.cc) is tested end to end
// in tests/integration.
//
// By default each Run is answered with a synthetic result and no I/O:
//   - a workload bounded by bytes (max_bytes, or one pass over its range:
//     neither wrap nor max_time) does exactly those bytes; one bounded by
//     time does one second of its I/O (a kind's story does not depend on
//     how long);
//   - at `rates` IOPS (the next of them for each Run, the last repeating),
//     shared among reads, writes and trims by the spec's percentages, each
//     I/O taking 100 µs;
//   - a workload fed by an IoSource (replay) takes every I/O it hands out.
// `shape` may change any answer. With UseFile the workload runs for real,
// through the engine on that file, for kinds whose data matters (a
// retention study writes and verifies its blocks).
#pragma once

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <unistd.h>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "aging/phases/phase.h"
#include "tests/common/scratch_dir.h"

namespace drivewatch::testing {

using aging::PhaseContext;
using aging::PhaseReport;
using aging::WorkloadResult;
using aging::WorkloadSpec;

class FakePhaseContext : public PhaseContext {
 public:
  static constexpr std::uint64_t kLatencyNs = 100'000;

  explicit FakePhaseContext(config::PhaseParams params, std::vector<double> rates = {1000})
      : rates(std::move(rates)) {
    phase_.name = std::string(config::PhaseKindName(params));
    phase_.target = "t";
    phase_.params = std::move(params);
    target_.name = "t";
    facts = Json::object();
    for (const char* k : {"serial", "model", "firmware", "device"}) facts[k] = "";
    facts["nsid"] = std::uint64_t{0};
  }

  // ---- What the test scripts.
  std::vector<double> rates;      // IOPS of each Run in turn; the last repeats
  std::uint64_t capacity_bytes = 64u << 20;
  std::uint32_t logical_block = 512;
  double fill = 0.5;              // what the history says of the fill level
  std::string state_dir = "/nonexistent";
  std::string register_path = "/nonexistent/register";
  Json facts;                     // DriveFacts(): serial, nsid, model, firmware, device
  bool is_nvme = false;
  Controller* ctrl = nullptr;     // controller(): null, as for a file target
  // The Run of this step answers this error (as a write gate refusal or an
  // engine that cannot start would).
  std::map<std::string, Error, std::less<>> failing_steps;
  // The Run of this step reports this many I/O errors, the first one named.
  std::map<std::string, std::uint64_t, std::less<>> io_errors;
  // The n-th step (Run or Idle, from 1) is where the phase is stopped: that
  // Run ends kStopped with half its I/O done, that Idle returns false, and
  // stopped() is true from then on.
  std::optional<std::size_t> stop_at_step;
  // Called with each answer before it is returned, to change it.
  std::function<void(const WorkloadSpec&, std::string_view step, WorkloadResult&)> shape;
  // Called before each Run that goes to the file (UseFile).
  std::function<void(const WorkloadSpec&, std::string_view step)> before_file_run;
  // What TimedRead answers (power-states' exit latency).
  std::function<Expected<std::chrono::nanoseconds>(std::uint64_t offset, std::uint32_t size)>
      timed_read = [](std::uint64_t, std::uint32_t) {
        return Expected<std::chrono::nanoseconds>(std::chrono::microseconds{50});
      };

  // What WorkDirectory answers: this directory (a ScratchDir's, say), or
  // when empty the refusal `work_refusal`.
  std::string work_directory;
  Error work_refusal{EPERM, -1, "t: refusing to write: no work directory in this test"};
  // Called with each Progress (a test may stop the phase from it).
  std::function<void(std::string_view step, double fraction)> on_progress;

  // ---- What the phase did, in order.
  std::vector<WorkloadSpec> specs;                // every Run's spec
  std::vector<std::string> steps;                 // and its step
  std::vector<std::pair<double, double>> progress;  // and its progress from, to
  std::vector<std::pair<std::string, std::chrono::nanoseconds>> idles;
  std::vector<std::string> events;                // "run <step>", "idle <step>"
  std::vector<PhaseReport> checkpoints;
  struct StepRecord {
    std::string test;
    std::uint64_t step = 0;
    Json fields;
  };
  std::vector<StepRecord> step_records;
  std::vector<std::uint64_t> work_bytes;  // each WorkDirectory's `bytes`

  // Stops the phase, as SIGTERM or an abort condition would.
  void Stop() { stop_.request_stop(); }

  // Runs the workloads for real on `path` (opened O_DIRECT, read-write),
  // whose size, rounded down to whole MiB, becomes the capacity.
  void UseFile(const std::string& path) {
    auto io = aging::WorkloadTarget::Open(path, aging::WorkloadTarget::kReadWrite);
    ASSERT_TRUE(io) << io.error().message;
    file_ = std::move(*io);
    capacity_bytes = file_->size() >> 20 << 20;
    logical_block = file_->logical_block_size();
  }

  // The synthetic answer described at the top of this file; `halted`: a
  // stop half way through, with half its I/O done.
  WorkloadResult Synthetic(const WorkloadSpec& spec, double rate, bool halted = false) const {
    WorkloadResult r;
    if (halted) r.end = WorkloadResult::End::kStopped;
    std::uint64_t ios = 0;
    std::uint64_t read_ios = 0, write_ios = 0, trim_ios = 0;
    std::uint64_t read_bytes = 0, write_bytes = 0, trim_bytes = 0;
    const std::uint64_t range = spec.length != 0 ? spec.length : capacity_bytes - spec.offset;
    if (spec.source != nullptr) {
      while (!halted || spec.source->Fraction() < 0.5) {
        const std::optional<aging::IoSource::Io> io = spec.source->Next();
        if (!io) break;
        using Op = aging::IoSource::Op;
        ++ios;
        if (io->op == Op::kRead) {
          ++read_ios;
          read_bytes += io->size;
        } else if (io->op == Op::kWrite) {
          ++write_ios;
          write_bytes += io->size;
        } else {
          ++trim_ios;
          trim_bytes += io->size;
        }
      }
      r.total.seconds = rate > 0 ? static_cast<double>(ios) / rate : 0;
    } else {
      const bool by_bytes = spec.max_bytes > 0 || (!spec.wrap && spec.max_time.count() == 0);
      if (by_bytes) {
        const std::uint64_t from = spec.access == aging::Access::kSequential ? spec.start : 0;
        const std::uint64_t bytes = spec.max_bytes > 0 ? spec.max_bytes : range - from;
        ios = (bytes + spec.block_size - 1) / spec.block_size / (halted ? 2 : 1);
        r.total.seconds = rate > 0 ? static_cast<double>(ios) / rate : 0;
      } else {
        ios = static_cast<std::uint64_t>(rate) / (halted ? 2 : 1);
        r.total.seconds = halted ? 0.5 : 1;
      }
      read_ios = ios * spec.read_percent / 100;
      trim_ios = ios * spec.trim_percent / 100;
      write_ios = ios - read_ios - trim_ios;
      read_bytes = read_ios * spec.block_size;
      write_bytes = write_ios * spec.block_size;
      trim_bytes = trim_ios * spec.block_size;
    }
    r.total.read_ios = read_ios;
    r.total.write_ios = write_ios;
    r.total.trim_ios = trim_ios;
    r.total.read_bytes = read_bytes;
    r.total.write_bytes = write_bytes;
    r.total.trim_bytes = trim_bytes;
    for (std::uint64_t i = 0; i < read_ios; ++i) r.read_latency.Add(kLatencyNs);
    for (std::uint64_t i = 0; i < write_ios; ++i) r.write_latency.Add(kLatencyNs);
    for (std::uint64_t i = 0; i < trim_ios; ++i) r.trim_latency.Add(kLatencyNs);
    r.read_service.Merge(r.read_latency);
    r.write_service.Merge(r.write_latency);
    r.trim_service.Merge(r.trim_latency);
    r.samples.push_back(r.total);
    r.next_start = spec.wrap ? (spec.start + r.total.bytes()) % std::max<std::uint64_t>(range, 1)
                             : spec.start + r.total.bytes();
    return r;
  }

  // ---- PhaseContext.
  const config::PhaseConfig& phase() const override { return phase_; }
  config::PhaseConfig& mutable_phase() { return phase_; }
  std::uint64_t capacity() const override { return capacity_bytes; }
  std::uint32_t logical_block_size() const override { return logical_block; }
  double fill_ratio() const override { return fill; }
  bool stopped() const override { return stop_.stop_requested(); }
  void Checkpoint(const PhaseReport& report) override { checkpoints.push_back(report); }
  const config::AgingTarget& target() const override { return target_; }
  const std::string& state_directory() const override { return state_dir; }
  int fd() const override { return file_ ? file_->fd() : -1; }
  bool nvme() const override { return is_nvme; }
  Json DriveFacts() const override { return facts; }
  std::string study_register() const override { return register_path; }
  Controller* controller() override { return ctrl; }

  Expected<WorkloadResult> Run(const WorkloadSpec& spec, std::string_view step,
                               double from, double to) override {
    specs.push_back(spec);
    steps.emplace_back(step);
    progress.emplace_back(from, to);
    events.push_back("run " + std::string(step));
    if (stopped()) return WorkloadResult{WorkloadResult::End::kStopped};
    const bool stop_here = NextStepStops();
    if (auto f = failing_steps.find(step); f != failing_steps.end()) return f->second;
    WorkloadResult r;
    if (file_) {
      if (before_file_run) before_file_run(spec, step);
      if (stop_here) stop_.request_stop();
      auto real = aging::RunWorkload(*file_, spec, stop_.get_token());
      if (!real) return real;
      r = std::move(*real);
    } else {
      const double rate = rates.empty() ? 0 : rates[std::min(next_rate_++, rates.size() - 1)];
      r = Synthetic(spec, rate, stop_here);
      if (stop_here) stop_.request_stop();
    }
    if (auto e = io_errors.find(step); e != io_errors.end()) {
      r.errors = e->second;
      r.first_error = "write at offset 0: Input/output error";
      if (spec.max_errors > 0 && r.errors >= spec.max_errors) r.end = WorkloadResult::End::kErrors;
    }
    if (shape) shape(spec, step, r);
    return r;
  }

  bool Idle(std::chrono::nanoseconds duration, std::string_view step, double,
            double) override {
    idles.emplace_back(std::string(step), duration);
    events.push_back("idle " + std::string(step));
    if (stopped()) return false;
    if (NextStepStops()) {
      stop_.request_stop();
      return false;
    }
    return true;
  }

  Expected<std::chrono::nanoseconds> TimedRead(std::uint64_t offset,
                                               std::uint32_t size) override {
    return timed_read(offset, size);
  }

  Expected<std::string> WorkDirectory(std::uint64_t bytes, std::string_view) override {
    work_bytes.push_back(bytes);
    if (work_directory.empty()) return work_refusal;
    return work_directory;
  }
  void Progress(std::string_view step, double fraction) override {
    if (on_progress) on_progress(step, fraction);
  }

  // Once per (test, step), as the runner's context keeps them.
  Status RecordStep(const std::string& test, std::uint64_t step, const Json& fields) override {
    for (const StepRecord& r : step_records) {
      if (r.test == test && r.step == step) return Ok{};
    }
    step_records.push_back({test, step, fields});
    return Ok{};
  }

 private:
  bool NextStepStops() { return stop_at_step && ++steps_taken_ == *stop_at_step; }

  config::PhaseConfig phase_;
  config::AgingTarget target_;
  std::unique_ptr<aging::WorkloadTarget> file_;
  std::stop_source stop_;
  std::size_t next_rate_ = 0;
  std::size_t steps_taken_ = 0;
};

// A file of `bytes` zeros (sparse) in `dir`, for UseFile.
inline std::string ZeroFile(const ScratchDir& dir, const std::string& name, std::uint64_t bytes) {
  const std::string p = dir / name;
  std::ofstream(p).close();
  std::filesystem::resize_file(p, bytes);
  return p;
}

// A result of the report, or -1 when it has none.
inline double Result(const PhaseReport& r, const std::string& key) {
  const Json* v = Find(r.results, key);
  return v ? AsDouble(*v, -1) : -1;
}

}  // namespace drivewatch::testing
