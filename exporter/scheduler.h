// SPDX-License-Identifier: Apache-2.0
// The scheduler: the only owner of time in drivewatch. It decides which job
// is due; it never runs a drive command itself. Due jobs are handed to an
// Executor, which in the daemon runs each drive's work on that drive's own
// thread, so a hung controller stalls only itself.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "exporter/clock.h"

namespace drivewatch {

// Runs work for a key (a drive serial, or "discovery"). Work for one key
// never overlaps: it runs in the order posted, one item at a time.
class Executor {
 public:
  virtual ~Executor() = default;
  // Runs `work` for `key` after the key's earlier work. Returns false,
  // dropping the work, when it cannot be taken (shutting down). Queueing is
  // bounded by the scheduler, which keeps at most one run of each job
  // pending: a slow drive's runs are skipped, not piled up.
  virtual bool Post(const std::string& key, std::function<void()> work) = 0;
};

// Runs work at once on the calling thread. For tests and one-shot collection.
class InlineExecutor : public Executor {
 public:
  bool Post(const std::string&, std::function<void()> work) override {
    work();
    return true;
  }
};

// One lazily started worker thread per key, with a queue, so that several
// probes due at once on one drive (or a RunSoon of two of them) all run.
class StrandExecutor : public Executor {
 public:
  StrandExecutor() = default;
  ~StrandExecutor() override;
  bool Post(const std::string& key, std::function<void()> work) override;
  // Asks every worker to finish; waits up to `timeout` for running work.
  // Workers stuck in the kernel (a hung ioctl) are left behind, detached.
  // Returns the number of keys still busy at the deadline.
  int Shutdown(std::chrono::milliseconds timeout);

 private:
  struct Strand;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Strand>> strands_;
  bool stopping_ = false;
};

class Scheduler {
 public:
  using JobId = std::uint64_t;
  using Duration = Clock::Monotonic::duration;
  using TimePoint = Clock::Monotonic::time_point;

  Scheduler(const Clock& clock, Executor& executor);

  // Adds a job that first runs `first_delay` from now, then every
  // `interval`. `key` chooses the executor strand.
  JobId Add(std::string name, std::string key, Duration interval,
            std::function<void()> fn, Duration first_delay = Duration::zero());
  void Remove(JobId id);
  // Runs the job as soon as possible (at the next Tick), keeping its period.
  void RunSoon(JobId id);
  // Changes a job's interval; its next run is rescheduled from its last one.
  void SetInterval(JobId id, Duration interval);

  // Posts every job due at Now(), except a job whose previous run has not
  // finished yet (counted in skipped()). Returns when the next job is due
  // (TimePoint::max() when there are no jobs). Never runs work on the
  // scheduler's thread unless the executor does so.
  TimePoint Tick();

  // Number of runs dropped because the job's previous run was still queued
  // or running (a slow or hung drive), or the executor refused them.
  std::uint64_t skipped() const;

  // The daemon loop: Tick, then sleep until the next job, a RunSoon/Add, or
  // Stop(). `heartbeat` is called every loop turn and at least every
  // `heartbeat_every` (the systemd watchdog ping: it proves this loop lives).
  void Loop(const std::function<void()>& heartbeat,
            Duration heartbeat_every);
  void Stop();

 private:
  struct Job {
    std::string name;
    std::string key;
    Duration interval;
    TimePoint next_due;
    TimePoint last_run;
    std::function<void()> fn;
    // Set from posting until the run ends; shared with the posted work.
    std::shared_ptr<std::atomic<bool>> in_flight =
        std::make_shared<std::atomic<bool>>(false);
  };

  const Clock& clock_;
  Executor& executor_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::map<JobId, Job> jobs_;
  JobId next_id_ = 1;
  std::uint64_t skipped_ = 0;
  bool stop_ = false;
  bool poked_ = false;
};

}  // namespace drivewatch
