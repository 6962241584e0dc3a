// SPDX-License-Identifier: Apache-2.0
#include "exporter/scheduler.h"

#include <algorithm>
#include <deque>

namespace drivewatch {

struct StrandExecutor::Strand {
  std::mutex mu;
  std::condition_variable cv;       // work arrived, or stop
  std::condition_variable idle_cv;  // work finished
  std::deque<std::function<void()>> work;  // pending, in order
  bool busy = false;  // work pending or running
  bool stop = false;
};

StrandExecutor::~StrandExecutor() { Shutdown(std::chrono::milliseconds(0)); }

bool StrandExecutor::Post(const std::string& key, std::function<void()> work) {
  std::shared_ptr<Strand> strand;
  {
    std::lock_guard lock(mu_);
    if (stopping_) return false;
    auto& slot = strands_[key];
    if (!slot) {
      slot = std::make_shared<Strand>();
      // The thread holds only its strand, never the executor, so one left
      // behind in a hung ioctl at shutdown touches nothing freed.
      std::thread([s = slot] {
        std::unique_lock lock(s->mu);
        for (;;) {
          s->cv.wait(lock, [&] { return s->stop || !s->work.empty(); });
          if (s->work.empty()) return;  // stopping and nothing left to do
          auto work = std::move(s->work.front());
          s->work.pop_front();
          lock.unlock();
          work();
          lock.lock();
          // At shutdown, work not started yet is dropped.
          if (s->stop) s->work.clear();
          if (s->work.empty()) {
            s->busy = false;
            s->idle_cv.notify_all();
          }
          if (s->stop) return;
        }
      }).detach();
    }
    strand = slot;
  }
  std::lock_guard lock(strand->mu);
  if (strand->stop) return false;
  strand->busy = true;
  strand->work.push_back(std::move(work));
  strand->cv.notify_one();
  return true;
}

int StrandExecutor::Shutdown(std::chrono::milliseconds timeout) {
  std::vector<std::shared_ptr<Strand>> strands;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    for (auto& [key, s] : strands_) strands.push_back(s);
  }
  for (auto& s : strands) {
    std::lock_guard lock(s->mu);
    s->stop = true;
    s->cv.notify_one();
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int busy = 0;
  for (auto& s : strands) {
    std::unique_lock lock(s->mu);
    if (!s->idle_cv.wait_until(lock, deadline, [&] { return !s->busy; })) ++busy;
  }
  return busy;
}

Scheduler::Scheduler(const Clock& clock, Executor& executor)
    : clock_(clock), executor_(executor) {}

Scheduler::JobId Scheduler::Add(std::string name, std::string key,
                                Duration interval, std::function<void()> fn,
                                Duration first_delay) {
  std::lock_guard lock(mu_);
  const JobId id = next_id_++;
  const TimePoint now = clock_.Now();
  jobs_.emplace(id, Job{std::move(name), std::move(key), interval,
                        now + first_delay, now, std::move(fn)});
  poked_ = true;
  wake_.notify_all();
  return id;
}

void Scheduler::Remove(JobId id) {
  std::lock_guard lock(mu_);
  jobs_.erase(id);
}

void Scheduler::RunSoon(JobId id) {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return;
  it->second.next_due = std::min(it->second.next_due, clock_.Now());
  poked_ = true;
  wake_.notify_all();
}

void Scheduler::SetInterval(JobId id, Duration interval) {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return;
  it->second.interval = interval;
  it->second.next_due = it->second.last_run + interval;
  poked_ = true;
  wake_.notify_all();
}

Scheduler::TimePoint Scheduler::Tick() {
  std::vector<std::pair<std::string, std::function<void()>>> due;
  std::vector<std::shared_ptr<std::atomic<bool>>> flags;  // same order
  TimePoint next = TimePoint::max();
  {
    std::lock_guard lock(mu_);
    const TimePoint now = clock_.Now();
    for (auto& [id, job] : jobs_) {
      if (job.next_due <= now) {
        if (job.in_flight->exchange(true)) {
          ++skipped_;  // its previous run is still queued or running
        } else {
          due.emplace_back(job.key, [fn = job.fn, flag = job.in_flight] {
            fn();
            flag->store(false);
          });
          flags.push_back(job.in_flight);
        }
        job.last_run = now;
        // Keep the phase of the period, but never try to catch up on runs
        // missed while the machine slept or a drive hung.
        job.next_due += job.interval;
        if (job.next_due <= now) job.next_due = now + job.interval;
      }
      next = std::min(next, job.next_due);
    }
  }
  // Post outside the lock: an inline executor runs the work right here, and
  // the work may call back into the scheduler.
  for (std::size_t i = 0; i < due.size(); ++i) {
    if (!executor_.Post(due[i].first, std::move(due[i].second))) {
      flags[i]->store(false);
      std::lock_guard lock(mu_);
      ++skipped_;
    }
  }
  return next;
}

std::uint64_t Scheduler::skipped() const {
  std::lock_guard lock(mu_);
  return skipped_;
}

void Scheduler::Loop(const std::function<void()>& heartbeat,
                     Duration heartbeat_every) {
  for (;;) {
    const TimePoint next = Tick();
    heartbeat();
    std::unique_lock lock(mu_);
    if (stop_) return;
    if (poked_) {
      poked_ = false;
      continue;
    }
    // Sleep on the real steady clock: the loop only runs with SystemClock.
    const auto now = clock_.Now();
    const auto until = std::min(next, now + heartbeat_every);
    wake_.wait_for(lock, until - now, [&] { return stop_ || poked_; });
    if (stop_) return;
    poked_ = false;
  }
}

void Scheduler::Stop() {
  std::lock_guard lock(mu_);
  stop_ = true;
  wake_.notify_all();
}

}  // namespace drivewatch
