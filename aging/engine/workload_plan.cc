// SPDX-License-Identifier: Apache-2.0
// What a workload is before it runs: its target opened with O_DIRECT, its
// spec checked against the target, and its one-line description.
#include "aging/engine/workload_plan.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>

#include "config/config.h"
#include "config/util/direct_open.h"
#include "config/workload_limits.h"

namespace drivewatch::aging {
namespace {

constexpr std::uint32_t kMinBlockSize = 512;
constexpr std::uint32_t kMaxBlockSize = 2u << 20;
// Shared with the configuration's checks.
constexpr std::uint32_t kMaxQueueDepth = config::kWorkloadMaxQueueDepth;
constexpr std::uint32_t kMaxJobs = config::kWorkloadMaxJobs;
constexpr std::uint64_t kMaxInFlight = config::kWorkloadMaxInFlight;

// "4KiB", "1MiB": like config::FormatSize(), but never in GiB or TiB, so a
// 1 GiB block reads "1024MiB" in a workload's description.
std::string SizeText(std::uint64_t bytes) {
  if (bytes != 0 && bytes % (1u << 20) == 0) return std::to_string(bytes >> 20) + "MiB";
  return config::FormatSize(bytes);
}

}  // namespace

namespace workload_detail {
namespace {

// What several jobs cannot share (WorkloadSpec::jobs).
template <class Fail>
Status ValidateJobs(const WorkloadSpec& s, const Plan& plan, const Fail& fail) {
  const std::string jobs = "jobs " + std::to_string(s.jobs);
  if (s.jobs < 1 || s.jobs > kMaxJobs) {
    return fail(jobs + ": expected 1 to " + std::to_string(kMaxJobs));
  }
  if (s.jobs == 1) return Ok{};
  const std::uint64_t in_flight = std::uint64_t{s.queue_depth} * s.jobs;
  if (in_flight > kMaxInFlight) {
    return fail("queue_depth " + std::to_string(s.queue_depth) + " x " + jobs + " = " +
                std::to_string(in_flight) + " I/Os in flight: expected at most " +
                std::to_string(kMaxInFlight));
  }
  if (s.rate_iops > 0) {
    return fail(jobs + " with rate_iops: expected jobs 1 in a paced run");
  }
  if (s.fill || s.on_read) {
    return fail(jobs +
                " with a fill or on_read hook: expected jobs 1 (the hooks run on "
                "the engine thread, and are not made to be called from several)");
  }
  if (s.source != nullptr) {
    return fail(jobs + " with an I/O source: expected jobs 1 (a source is one ordered stream)");
  }
  if (s.access == Access::kSequential && s.start != 0) {
    return fail(jobs + " with start " + std::to_string(s.start) +
                ": expected start 0 (each job begins at the start of its slice)");
  }
  const std::uint64_t blocks = plan.region_length / s.block_size;
  if (s.access == Access::kSequential && blocks < s.jobs) {
    return fail(jobs + " over a region of " + std::to_string(blocks) + " blocks of " +
                std::to_string(s.block_size) + ": expected at least one block per job");
  }
  return Ok{};
}

// The I/O itself: the mix, block size, queue depth and rate, and writes
// only to a target open for them.
template <class Fail>
Status ValidateIo(const WorkloadTarget& target, const WorkloadSpec& s, const Fail& fail) {
  const std::uint64_t mix = std::uint64_t{s.read_percent} + s.write_percent +
                            s.trim_percent;
  if (mix != 100) {
    return fail("read_percent + write_percent + trim_percent = " +
                std::to_string(mix) + ": expected 100");
  }
  const std::uint32_t lbs = target.logical_block_size();
  if (s.block_size < kMinBlockSize || s.block_size > kMaxBlockSize ||
      s.block_size % lbs != 0) {
    return fail("block_size " + std::to_string(s.block_size) +
                ": expected a multiple of the logical block size " +
                std::to_string(lbs) + " from " + std::to_string(kMinBlockSize) +
                " to " + std::to_string(kMaxBlockSize));
  }
  if (s.queue_depth < 1 || s.queue_depth > kMaxQueueDepth) {
    return fail("queue_depth " + std::to_string(s.queue_depth) +
                ": expected 1 to " + std::to_string(kMaxQueueDepth));
  }
  if (!(s.rate_iops >= 0) || !std::isfinite(s.rate_iops)) {
    return fail("rate_iops " + std::to_string(s.rate_iops) +
                ": expected 0 (unthrottled) or a positive rate");
  }
  if ((s.write_percent > 0 || s.trim_percent > 0) && !target.writable()) {
    return fail("write_percent " + std::to_string(s.write_percent) +
                ", trim_percent " + std::to_string(s.trim_percent) +
                ": the target is open read-only, expected 0 and 0");
  }
  return Ok{};
}

// The region of the target the workload covers, into `plan`, and where a
// sequential run starts in it.
template <class Fail>
Status ValidateRegion(const WorkloadTarget& target, const WorkloadSpec& s, Plan& plan,
                      const Fail& fail) {
  const std::uint64_t bs = s.block_size;
  if (s.offset % bs != 0 || s.offset >= target.size()) {
    return fail("offset " + std::to_string(s.offset) +
                ": expected a multiple of block_size " + std::to_string(bs) +
                " below the target's size " + std::to_string(target.size()));
  }
  plan.region_offset = s.offset;
  if (s.length == 0) {
    // "To its end": whole blocks only.
    plan.region_length = (target.size() - s.offset) / bs * bs;
  } else if (s.length % bs != 0 || s.length > target.size() - s.offset) {
    return fail("length " + std::to_string(s.length) +
                ": expected a multiple of block_size " + std::to_string(bs) +
                " with offset + length at most the target's size " +
                std::to_string(target.size()));
  } else {
    plan.region_length = s.length;
  }
  if (plan.region_length < bs) {
    return fail("region [" + std::to_string(s.offset) + ", " +
                std::to_string(s.offset + plan.region_length) +
                "): expected at least one block of " + std::to_string(bs));
  }
  if (s.access == Access::kSequential &&
      (s.start % bs != 0 || s.start >= plan.region_length)) {
    return fail("start " + std::to_string(s.start) +
                ": expected a multiple of block_size " + std::to_string(bs) +
                " below the region's length " +
                std::to_string(plan.region_length));
  }
  return Ok{};
}

// A random workload's skew: its size mix and its LBA zones.
template <class Fail>
Status ValidateSkew(const WorkloadTarget& target, const WorkloadSpec& s, const Fail& fail) {
  if (s.size_mix.empty() && s.lba_zones.empty()) return Ok{};
  if (s.access != Access::kRandom) return fail("size_mix, lba_zones: expected random access");
  const std::uint32_t lbs = target.logical_block_size();
  std::uint32_t sum = 0, largest = 0;
  for (const SizeShare& share : s.size_mix) {
    if (share.size < kMinBlockSize || share.size > kMaxBlockSize || share.size % lbs != 0) {
      return fail("size_mix size " + std::to_string(share.size) +
                  ": expected a multiple of the logical block size " + std::to_string(lbs) +
                  " from " + std::to_string(kMinBlockSize) + " to " +
                  std::to_string(kMaxBlockSize));
    }
    sum += share.percent;
    largest = std::max(largest, share.size);
  }
  if (!s.size_mix.empty() && (sum != 100 || largest != s.block_size)) {
    return fail("size_mix: percents sum to " + std::to_string(sum) + ", largest size " +
                std::to_string(largest) + ": expected 100, and block_size " +
                std::to_string(s.block_size) + " the largest size");
  }
  double region = 0;
  sum = 0;
  for (const LbaZone& z : s.lba_zones) {
    if (!(z.region_percent > 0) || !std::isfinite(z.region_percent)) {
      return fail("lba_zones region_percent " + std::to_string(z.region_percent) +
                  ": expected above 0");
    }
    region += z.region_percent;
    sum += z.access_percent;
  }
  if (!s.lba_zones.empty() && (sum != 100 || std::fabs(region - 100) > 1e-6)) {
    return fail("lba_zones: access_percent sums to " + std::to_string(sum) +
                ", region_percent to " + std::to_string(region) + ": expected 100 and 100");
  }
  return Ok{};
}

// A run that would never end by itself needs a bound.
template <class Fail>
Status ValidateBounds(const WorkloadSpec& s, const Fail& fail) {
  const bool endless = s.access == Access::kRandom || s.wrap;
  if (endless && s.max_bytes == 0 && s.max_time.count() <= 0) {
    return fail(std::string(s.access == Access::kRandom ? "random access"
                                                        : "wrap") +
                ": expected a bound, max_bytes or max_time, above 0");
  }
  if (s.max_time.count() < 0) {
    return fail("max_time " + std::to_string(s.max_time.count()) +
                " ns: expected 0 (no bound) or more");
  }
  return Ok{};
}

}  // namespace

Expected<Plan> Validate(const WorkloadTarget& target, const WorkloadSpec& s) {
  auto fail = [&](const std::string& what) -> Error {
    return Error{EINVAL, -1, "workload on " + target.path() + ": " + what};
  };
  Plan plan;
  if (Status io = ValidateIo(target, s, fail); !io) return io.error();
  if (Status region = ValidateRegion(target, s, plan, fail); !region) return region.error();
  if (Status skew = ValidateSkew(target, s, fail); !skew) return skew.error();
  if (Status bounds = ValidateBounds(s, fail); !bounds) return bounds.error();
  if (Status jobs = ValidateJobs(s, plan, fail); !jobs) return jobs.error();
  return plan;
}

}  // namespace workload_detail

Expected<std::unique_ptr<WorkloadTarget>> WorkloadTarget::Open(
    const std::string& path, Mode mode) {
  std::unique_ptr<WorkloadTarget> t(new WorkloadTarget());
  t->path_ = path;
  t->mode_ = mode;
  auto opened = util::OpenDirect(
      path, mode == kReadWrite ? util::DirectAccess::kReadWrite : util::DirectAccess::kRead);
  if (!opened) return opened.error();
  t->fd_ = opened->fd;
  if (S_ISBLK(opened->st.st_mode)) {
    t->rdev_ = opened->st.st_rdev;
  } else if (!S_ISREG(opened->st.st_mode)) {
    return Error{EINVAL, -1, path + ": not a block device or a regular file"};
  }
  t->size_ = opened->size;
  t->logical_block_size_ = opened->logical_block_size;
  return t;
}

WorkloadTarget::~WorkloadTarget() {
  if (fd_ >= 0) ::close(fd_);
}

std::string Describe(const WorkloadSpec& spec) {
  std::string out = spec.source != nullptr               ? "replay of "
                    : spec.access == Access::kSequential ? "sequential "
                                                         : "random ";
  const std::pair<std::uint32_t, const char*> parts[] = {
      {spec.read_percent, "read"}, {spec.write_percent, "write"},
      {spec.trim_percent, "trim"}};
  std::string shares, names;
  int kinds = 0;
  for (const auto& [percent, name] : parts) {
    if (percent == 0) continue;
    shares += (kinds ? "/" : "") + std::to_string(percent);
    names += (kinds ? "/" : "") + std::string(name);
    ++kinds;
  }
  out += kinds > 1 ? shares + " " + names : names;
  out += spec.size_mix.empty() && spec.source == nullptr
             ? " " + SizeText(spec.block_size)
             : " mixed sizes up to " + SizeText(spec.block_size);
  if (!spec.lba_zones.empty()) out += " skewed over " + std::to_string(spec.lba_zones.size()) + " zones";
  out += " QD" + std::to_string(spec.queue_depth);
  if (spec.jobs > 1) out += " x" + std::to_string(spec.jobs) + " jobs";
  if (spec.rate_iops > 0) {
    char rate[32];
    std::snprintf(rate, sizeof(rate), "%g", spec.rate_iops);
    out += std::string(" at ") + rate + " IOPS";
  }
  return out;
}

}  // namespace drivewatch::aging
