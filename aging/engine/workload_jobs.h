// SPDX-License-Identifier: Apache-2.0
// Internal to the workload engine: a run of several jobs (WorkloadSpec::jobs
// above 1, fio's numjobs). Each job is a whole engine of its own (ring,
// buffers, counters) on its own thread, over its share of the work
// (JobSpecs); the jobs start together, and their results are summed into
// the run's (MergeJobs, ProgressMerger). aging/engine/workload_jobs.cc runs them;
// RunJob, one job, is aging/engine/workload.cc's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <stop_token>
#include <vector>

#include "aging/engine/workload.h"
#include "aging/engine/workload_plan.h"
#include "config/util/expected.h"

namespace drivewatch::aging::workload_detail {

// One job's outcome, and when it counted its first failed I/O
// (CLOCK_MONOTONIC ns, 0 if none), so the run's first_error is the
// earliest of all the jobs'.
struct JobRun {
  WorkloadResult result;
  std::uint64_t first_error_ns = 0;
};

// Called by a job once its ring and buffers are set up (or failed to be);
// returns the run's common start time (CLOCK_MONOTONIC ns), or nullopt when
// the run is given up before any I/O because a job could not set up.
using JobReady = std::function<std::optional<std::uint64_t>(const Status& setup)>;

// Runs one job, `spec` (one of JobSpecs) over `plan`, on the calling
// thread: the ring is created there, and IORING_SETUP_SINGLE_ISSUER ties it
// to that thread. Sets up, calls `ready`, then runs from the start it gave.
Expected<JobRun> RunJob(WorkloadTarget& target, const WorkloadSpec& spec, const Plan& plan,
                        const std::stop_token& stop, const ProgressCallback& progress,
                        const JobReady& ready);

// RunWorkload of a validated spec with jobs > 1.
Expected<WorkloadResult> RunJobs(WorkloadTarget& target, const WorkloadSpec& spec, const Plan& plan,
                                 const std::stop_token& stop, const ProgressCallback& progress);

// Each job's own spec (jobs 1), as WorkloadSpec::jobs describes: the region
// made explicit (sequential: job j's slice), seed and data_seed plus j, and
// its share of max_bytes. A job whose share of max_bytes is nothing is left
// out, so there may be fewer than spec.jobs.
std::vector<WorkloadSpec> JobSpecs(const WorkloadSpec& spec, const Plan& plan);

// The run's result from its jobs' (in job order): per-second samples and
// totals summed, latencies merged, errors and late I/Os summed, first_error
// the earliest. `stopped`: the caller's stop token was requested.
WorkloadResult MergeJobs(const std::vector<JobRun>& jobs, bool stopped);

// The run's progress from its jobs': second k is handed out once every job
// has reported its k-th second or ended, as the sum of the jobs' k-th
// seconds (the interval: the longest of them), the sum of their bytes done
// and the longest elapsed time; its fraction is the mean of the jobs'
// fractions (an ended job counts with its last). Not thread-safe: the
// caller locks.
class ProgressMerger {
 public:
  explicit ProgressMerger(std::size_t jobs) : jobs_(jobs) {}
  void Add(std::size_t job, const WorkloadProgress& p) { jobs_[job].seen.push_back(p); }
  void End(std::size_t job) { jobs_[job].ended = true; }
  bool all_ended() const;
  // The next second, once every job has reported it or ended.
  std::optional<WorkloadProgress> Next();

 private:
  struct Job {
    std::vector<WorkloadProgress> seen;  // one per second, in order
    bool ended = false;
  };
  std::vector<Job> jobs_;
  std::size_t next_ = 0;
};

}  // namespace drivewatch::aging::workload_detail
