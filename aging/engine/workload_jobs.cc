// SPDX-License-Identifier: Apache-2.0
// A workload of several jobs (fio's numjobs): each an engine of its own on
// its own thread, started together, their results summed (workload_jobs.h).
#include "aging/engine/workload_jobs.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <latch>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

namespace drivewatch::aging::workload_detail {
namespace {

void AddCounts(ThroughputSample& to, const ThroughputSample& from) {
  to.read_bytes += from.read_bytes;
  to.write_bytes += from.write_bytes;
  to.trim_bytes += from.trim_bytes;
  to.read_ios += from.read_ios;
  to.write_ios += from.write_ios;
  to.trim_ios += from.trim_ios;
}

// CLOCK_MONOTONIC, the engine's clock.
std::uint64_t NowNs() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

}  // namespace

std::vector<WorkloadSpec> JobSpecs(const WorkloadSpec& spec, const Plan& plan) {
  const std::uint64_t bs = spec.block_size;
  const std::uint64_t jobs = spec.jobs;
  const std::uint64_t region_blocks = plan.region_length / bs;
  const std::uint64_t bound_blocks = (spec.max_bytes + bs - 1) / bs;  // rounded up, as one job
  // Job j's share of n whole blocks: the remainder goes to the first ones.
  const auto share = [&](std::uint64_t n, std::uint64_t j) {
    return n / jobs + (j < n % jobs ? 1 : 0);
  };
  std::vector<WorkloadSpec> out;
  std::uint64_t slice_begin = 0;  // blocks into the region
  for (std::uint64_t j = 0; j < jobs; ++j) {
    WorkloadSpec s = spec;
    s.jobs = 1;
    s.seed = spec.seed + j;
    s.data_seed = spec.data_seed + j;
    s.offset = plan.region_offset;
    s.length = plan.region_length;
    if (spec.access == Access::kSequential) {
      const std::uint64_t slice = share(region_blocks, j);
      s.offset += slice_begin * bs;
      s.length = slice * bs;
      s.start = 0;
      slice_begin += slice;
    }
    if (spec.max_bytes != 0) {
      s.max_bytes = share(bound_blocks, j) * bs;
      if (s.max_bytes == 0) continue;  // 0 would be no bound at all
    }
    out.push_back(std::move(s));
  }
  return out;
}

WorkloadResult MergeJobs(const std::vector<JobRun>& jobs, bool stopped) {
  WorkloadResult out;
  out.total.seconds = 0;  // the longest job's, below
  bool errors_end = false, stopped_end = false;
  std::uint64_t first_error_ns = 0;
  for (const JobRun& job : jobs) {
    const WorkloadResult& r = job.result;
    errors_end |= r.end == WorkloadResult::End::kErrors;
    stopped_end |= r.end == WorkloadResult::End::kStopped;
    if (out.samples.size() < r.samples.size()) {
      // Seconds no job has reached yet start empty; max() below sets them.
      out.samples.resize(r.samples.size(), ThroughputSample{.seconds = 0});
    }
    for (std::size_t k = 0; k < r.samples.size(); ++k) {
      AddCounts(out.samples[k], r.samples[k]);
      out.samples[k].seconds = std::max(out.samples[k].seconds, r.samples[k].seconds);
    }
    AddCounts(out.total, r.total);
    out.total.seconds = std::max(out.total.seconds, r.total.seconds);
    out.read_latency.Merge(r.read_latency);
    out.write_latency.Merge(r.write_latency);
    out.trim_latency.Merge(r.trim_latency);
    out.read_service.Merge(r.read_service);
    out.write_service.Merge(r.write_service);
    out.trim_service.Merge(r.trim_service);
    out.errors += r.errors;
    out.late += r.late;
    if (r.errors > 0 && (out.first_error.empty() || job.first_error_ns < first_error_ns)) {
      out.first_error = r.first_error;
      first_error_ns = job.first_error_ns;
    }
  }
  // One job's errors stop the others, which then end kStopped.
  if (stopped && stopped_end) {
    out.end = WorkloadResult::End::kStopped;
  } else if (errors_end) {
    out.end = WorkloadResult::End::kErrors;
  } else if (stopped_end) {
    out.end = WorkloadResult::End::kStopped;
  }
  out.next_start = 0;  // a run of several jobs is not continued (start is 0)
  return out;
}

bool ProgressMerger::all_ended() const {
  return std::all_of(jobs_.begin(), jobs_.end(), [](const Job& j) { return j.ended; });
}

std::optional<WorkloadProgress> ProgressMerger::Next() {
  bool any = false;
  for (const Job& j : jobs_) {
    if (j.seen.size() > next_) {
      any = true;
    } else if (!j.ended) {
      return std::nullopt;  // this second is not over for every job yet
    }
  }
  if (!any) return std::nullopt;
  WorkloadProgress out;
  out.last_second.seconds = 0;
  double fraction = 0;
  for (const Job& j : jobs_) {
    if (j.seen.empty()) continue;
    const WorkloadProgress& p = j.seen[std::min(next_, j.seen.size() - 1)];
    if (next_ < j.seen.size()) {
      AddCounts(out.last_second, p.last_second);
      out.last_second.seconds = std::max(out.last_second.seconds, p.last_second.seconds);
      out.elapsed = std::max(out.elapsed, p.elapsed);
    }
    out.bytes_done += p.bytes_done;
    fraction += p.fraction;
  }
  out.fraction = fraction / static_cast<double>(jobs_.size());
  ++next_;
  return out;
}

namespace {

// What the calling thread and the job threads share while a run lasts.
struct JobsRun {
  JobsRun(WorkloadTarget& target, std::vector<WorkloadSpec> specs, std::vector<Plan> plans,
          const ProgressCallback& progress)
      : target(target),
        specs(std::move(specs)),
        plans(std::move(plans)),
        n(this->specs.size()),
        progress(progress),
        merger(n),
        set_up(static_cast<std::ptrdiff_t>(n)),
        setups(n, Ok{}),
        runs(n) {}

  WorkloadTarget& target;
  const std::vector<WorkloadSpec> specs;
  const std::vector<Plan> plans;
  const std::size_t n;
  const ProgressCallback& progress;
  std::stop_source jobs_stop;
  std::mutex mu;
  std::condition_variable changed;
  ProgressMerger merger;  // mu
  std::latch set_up;
  std::latch go{1};
  std::uint64_t start_ns = 0;  // written before go opens; 0: give up
  std::vector<Status> setups;
  std::vector<std::optional<Expected<JobRun>>> runs;  // mu
  std::optional<Error> spawn_error;
};

// Job j's thread: sets up, waits for the common start, runs, and stops the
// other jobs when it ends on errors or fails.
void RunJobThread(JobsRun& run, std::size_t j) {
  const std::stop_token token = run.jobs_stop.get_token();
  ProgressCallback report;
  if (run.progress) {
    report = [&run, j](const WorkloadProgress& p) {
      {
        std::lock_guard lock(run.mu);
        run.merger.Add(j, p);
      }
      run.changed.notify_one();
    };
  }
  Expected<JobRun> r = RunJob(run.target, run.specs[j], run.plans[j], token, report,
                              [&run, j](const Status& s) -> std::optional<std::uint64_t> {
                                run.setups[j] = s;
                                run.set_up.count_down();
                                run.go.wait();
                                if (run.start_ns == 0) return std::nullopt;
                                return run.start_ns;
                              });
  if (!r || r->result.end == WorkloadResult::End::kErrors) run.jobs_stop.request_stop();
  {
    std::lock_guard lock(run.mu);
    run.runs[j] = std::move(r);
    run.merger.End(j);
  }
  run.changed.notify_one();
}

// The calling thread, once the jobs run: the merged progress, a second at
// a time, until every job has ended.
void HandOutProgress(JobsRun& run) {
  std::unique_lock lock(run.mu);
  for (;;) {
    while (std::optional<WorkloadProgress> p = run.merger.Next()) {
      lock.unlock();
      run.progress(*p);
      lock.lock();
    }
    if (run.merger.all_ended()) break;
    run.changed.wait(lock);
  }
}

// Starts a thread per job, gives them the start time once every one has set
// up (or gives up, when one could not), and returns when all have ended.
void StartAndJoin(JobsRun& run) {
  std::vector<std::jthread> threads;
  try {
    for (std::size_t j = 0; j < run.n; ++j) {
      threads.emplace_back([&run, j] { RunJobThread(run, j); });
    }
  } catch (const std::system_error& e) {
    run.spawn_error =
        Error{e.code().value(), -1,
              "workload on " + run.target.path() + ": starting job " +
                  std::to_string(threads.size()) + " of " + std::to_string(run.n) + ": " +
                  e.what()};
    run.set_up.count_down(static_cast<std::ptrdiff_t>(run.n - threads.size()));
  }
  run.set_up.wait();
  const bool all_set_up =
      !run.spawn_error && std::all_of(run.setups.begin(), run.setups.end(),
                                      [](const Status& s) { return static_cast<bool>(s); });
  if (all_set_up) run.start_ns = NowNs();
  run.go.count_down();
  if (all_set_up) HandOutProgress(run);
}  // joins the jobs

}  // namespace

// The calling thread starts the jobs, gives them one start time once all
// have set up (none does any I/O before), then hands out the merged
// progress until every job has ended. A job that ends on max_errors or an
// engine failure stops the others.
Expected<WorkloadResult> RunJobs(WorkloadTarget& target, const WorkloadSpec& spec, const Plan& plan,
                                 const std::stop_token& stop, const ProgressCallback& progress) {
  std::vector<WorkloadSpec> specs = JobSpecs(spec, plan);
  std::vector<Plan> plans;
  for (const WorkloadSpec& s : specs) {
    Expected<Plan> p = Validate(target, s);
    if (!p) return p.error();
    plans.push_back(*p);
  }
  JobsRun run(target, std::move(specs), std::move(plans), progress);
  {
    const std::stop_callback forward(stop, [&run] { run.jobs_stop.request_stop(); });
    StartAndJoin(run);
  }
  if (run.spawn_error) return *run.spawn_error;
  for (const Status& s : run.setups) {
    if (!s) return s.error();
  }
  std::vector<JobRun> done;
  for (std::optional<Expected<JobRun>>& r : run.runs) {
    if (!*r) return r->error();
    done.push_back(std::move(**r));
  }
  return MergeJobs(done, stop.stop_requested());
}

}  // namespace drivewatch::aging::workload_detail
