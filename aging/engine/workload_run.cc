// SPDX-License-Identifier: Apache-2.0
#include "aging/engine/workload_run.h"

#include <algorithm>
#include <string>

namespace drivewatch::aging::workload_detail {
namespace {

const char* OpName(Op op) {
  switch (op) {
    case Op::kRead: return "read";
    case Op::kWrite: return "write";
    case Op::kTrim: return "trim";
  }
  return "?";
}

}  // namespace

std::optional<std::uint64_t> RunState::NextOffset(std::uint32_t* size) {
  const std::uint64_t bs = spec_.block_size;
  *size = spec_.block_size;
  if (drawing_) return plan_.region_offset + drawn_.Next(size);
  if (spec_.access == Access::kRandom) {
    return plan_.region_offset + permutation_.Next() * bs;
  }
  if (seq_pos_ >= plan_.region_length) {
    if (!spec_.wrap) return std::nullopt;
    seq_pos_ = 0;
  }
  const std::uint64_t offset = plan_.region_offset + seq_pos_;
  seq_pos_ += bs;
  return offset;
}

std::optional<RunState::PlannedIo> RunState::NextIo() {
  if (spec_.source != nullptr) return NextSourcedIo();
  PlannedIo io;
  if (pacer_) {
    // Never skip arrivals: a late one is issued and its latency counts
    // from when it was due (no coordinated omission).
    io.due_ns = ToNs(pacer_->next());
    pacer_->Advance(pacer_->next());
  }
  const std::optional<std::uint64_t> offset = NextOffset(&io.size);
  if (!offset) return std::nullopt;
  io.offset = *offset;
  io.op = mix_.Next();
  return io;
}

// An I/O the source got wrong is never issued: one outside the target
// would grow a directory target's file, or reach past a study's region.
std::optional<RunState::PlannedIo> RunState::NextSourcedIo() {
  const std::uint64_t lbs = target_.logical_block_size();
  while (std::optional<IoSource::Io> next = spec_.source->Next()) {
    PlannedIo io;
    std::uint32_t percent = 0;
    switch (next->op) {
      case IoSource::Op::kRead: io.op = Op::kRead; percent = spec_.read_percent; break;
      case IoSource::Op::kWrite: io.op = Op::kWrite; percent = spec_.write_percent; break;
      case IoSource::Op::kTrim: io.op = Op::kTrim; percent = spec_.trim_percent; break;
    }
    io.offset = next->offset;
    io.size = next->size;
    if (next->due) {
      io.due_ns = start_ns_ + static_cast<std::uint64_t>(std::max<std::int64_t>(0, next->due->count()));
    }
    if (percent > 0 && io.size > 0 && io.size <= spec_.block_size && io.offset % lbs == 0 &&
        io.size % lbs == 0 && io.offset <= target_.size() &&
        io.size <= target_.size() - io.offset) {
      return io;
    }
    RecordError(io.op, io.offset,
                "not issued: " + std::to_string(io.size) +
                    " bytes outside the target, not in whole logical blocks, above block_size, "
                    "or of an operation the run does not do");
    if (spec_.max_errors != 0 && result_.errors >= spec_.max_errors) {
      result_.end = WorkloadResult::End::kErrors;
      return std::nullopt;
    }
  }
  return std::nullopt;
}

// Whether another I/O may start: no bound reached, no stop, not too many
// errors. Sets result_.end for the first that holds.
bool RunState::IssueAllowed(std::uint64_t now) {
  if (region_done_) return false;
  if (stop_.stop_requested()) {
    result_.end = WorkloadResult::End::kStopped;
    return false;
  }
  if (spec_.max_errors != 0 && result_.errors >= spec_.max_errors) {
    result_.end = WorkloadResult::End::kErrors;
    return false;
  }
  if (spec_.max_bytes != 0 && issued_bytes_ >= spec_.max_bytes) return false;
  if (spec_.max_time.count() > 0 &&
      now - start_ns_ >= static_cast<std::uint64_t>(spec_.max_time.count())) {
    return false;
  }
  return true;
}

void RunState::Count(Op op, std::uint64_t latency_ns, std::uint64_t service_ns, std::uint64_t bs) {
  done_bytes_ += bs;
  switch (op) {
    case Op::kRead:
      result_.read_latency.Add(latency_ns);
      result_.read_service.Add(service_ns);
      sample_.read_bytes += bs;
      ++sample_.read_ios;
      break;
    case Op::kWrite:
      result_.write_latency.Add(latency_ns);
      result_.write_service.Add(service_ns);
      sample_.write_bytes += bs;
      ++sample_.write_ios;
      break;
    case Op::kTrim:
      result_.trim_latency.Add(latency_ns);
      result_.trim_service.Add(service_ns);
      sample_.trim_bytes += bs;
      ++sample_.trim_ios;
      break;
  }
}

void RunState::RecordError(Op op, std::uint64_t offset, const std::string& what) {
  if (result_.errors++ == 0) {
    first_error_ns_ = NowNs();
    result_.first_error =
        std::string(OpName(op)) + " at offset " + std::to_string(offset) + ": " + what;
  }
}

void RunState::CloseSample(std::uint64_t end_ns) {
  sample_.seconds = static_cast<double>(end_ns - sample_start_ns_) / 1e9;
  result_.samples.push_back(sample_);
  sample_ = ThroughputSample{};
  sample_start_ns_ = end_ns;
  if (progress_) {
    WorkloadProgress p;
    p.last_second = result_.samples.back();
    p.bytes_done = done_bytes_;
    p.elapsed = std::chrono::nanoseconds(end_ns - start_ns_);
    p.fraction = Fraction(end_ns);
    progress_(p);
  }
}

void RunState::RollSamples(std::uint64_t now) {
  while (now - sample_start_ns_ >= kNsPerSecond) {
    CloseSample(sample_start_ns_ + kNsPerSecond);
  }
}

double RunState::Fraction(std::uint64_t now) const {
  if (spec_.source != nullptr) return std::clamp(spec_.source->Fraction(), 0.0, 1.0);
  double f = 0;
  if (spec_.max_bytes != 0) {
    f = std::max(f, static_cast<double>(done_bytes_) / spec_.max_bytes);
  }
  if (spec_.max_time.count() > 0) {
    f = std::max(f, static_cast<double>(now - start_ns_) / spec_.max_time.count());
  }
  if (spec_.access == Access::kSequential && !spec_.wrap) {
    const std::uint64_t span = plan_.region_length - spec_.start;
    f = std::max(f, span == 0 ? 1.0
                              : static_cast<double>(seq_pos_ - spec_.start) / span);
  }
  return std::min(f, 1.0);
}

}  // namespace drivewatch::aging::workload_detail
