// SPDX-License-Identifier: Apache-2.0
#include "exporter/state_health.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <vector>

#include "aging/history/history.h"
#include "aging/runner/phase_runner.h"
#include "config/util/durable_file.h"
#include "config/util/log.h"
#include "config/util/sys.h"

namespace drivewatch {
namespace {

constexpr MetricDesc kWritable{
    "drivewatch_state_directory_writable",
    "1 when the state directory took a 4 KiB write, fsync and unlink at the last "
    "probe (every 30 s); 0 when it is read-only, full, missing and cannot be "
    "created, or failing. Phase state, history and retention studies need it.",
    MetricType::kGauge};
constexpr MetricDesc kHistoryDamaged{
    "drivewatch_history_damaged_records",
    "Damaged records (header, length, checksum or JSON wrong) found in history.log "
    "the last time it was read; a torn last record (a crash while appending, "
    "repaired at the next append) is not counted.",
    MetricType::kGauge};
constexpr MetricDesc kHistoryReadable{
    "drivewatch_history_readable",
    "1 when history.log could be read (or does not exist yet) the last time it "
    "was read; 0 when reading it failed.",
    MetricType::kGauge};


}  // namespace

Status ProbeDirectoryWritable(const std::string& directory) {
  if (Status s = EnsureDirectory(directory); !s) return s;
  const std::string path = directory + "/.write-probe-" + std::to_string(::getpid());
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return util::SysError(errno, path, "open");
  std::vector<char> block(4096, 'w');
  Status result = Ok{};
  const ssize_t n = ::write(fd, block.data(), block.size());
  if (n < 0) {
    result = util::SysError(errno, path, "write");
  } else if (static_cast<std::size_t>(n) != block.size()) {
    result = util::SysError(ENOSPC, path, "write");  // a short write: the file system is full
  } else if (::fsync(fd) != 0) {
    result = util::SysError(errno, path, "fsync");
  }
  ::close(fd);
  if (::unlink(path.c_str()) != 0 && result) result = util::SysError(errno, path, "unlink");
  return result;
}

StateHealthService::StateHealthService(MetricStore& store, std::chrono::milliseconds interval)
    : store_(store), interval_(interval) {}

StateHealthService::~StateHealthService() { Stop(); }

void StateHealthService::Start(const config::Config& config) {
  Reconfigure(config);
  thread_ = std::jthread([this](std::stop_token stop) {
    std::mutex m;
    std::condition_variable_any cv;
    while (!stop.stop_requested()) {
      Tick();
      std::unique_lock lock(m);
      cv.wait_for(lock, stop, interval_, [] { return false; });
    }
  });
}

void StateHealthService::Reconfigure(const config::Config& config) {
  std::lock_guard lock(mu_);
  state_directory_ = config.state_directory;
}

void StateHealthService::Stop() {
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
}

void StateHealthService::Tick() {
  std::string state;
  {
    std::lock_guard lock(mu_);
    state = state_directory_;
  }
  std::lock_guard tick(tick_mu_);
  const Status writable = ProbeDirectoryWritable(state);
  const std::string write_problem = writable ? "" : writable.error().message;
  if (write_problem != write_problem_) {
    if (!writable) {
      log::Error("state directory " + state + " is not writable: " + write_problem +
                 "; phase state, history and retention studies cannot be saved");
    } else if (write_problem_ != "-") {
      log::Info("state directory " + state + " is writable again");
    }
    write_problem_ = write_problem;
  }

  // history.log is read again only when it changed: it grows by one record
  // per phase run, and it may hold years of them.
  const std::string path = aging::HistoryPath(state);
  FileStamp stamp;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    stamp = FileStamp{st.st_dev, st.st_ino, st.st_size,
                      std::int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec};
  }
  if (path != history_path_ || !(stamp == history_stamp_) || !history_readable_) {
    history_path_ = path;
    history_stamp_ = stamp;
    std::string problem;
    // Only the damage is wanted: the records stream past, one at a time.
    auto contents = aging::HistoryFile(path).ForEach([](Json&&) {});
    if (contents) {
      history_readable_ = true;
      const std::uint64_t damaged = contents->damaged.size() + contents->damaged_unlisted;
      history_damaged_ = static_cast<double>(damaged);
      if (damaged > 0) {
        problem = std::to_string(damaged) + " damaged record(s), the first at " +
                  contents->damaged.front();
      }
    } else {
      history_readable_ = false;
      problem = contents.error().message;
    }
    if (problem != history_problem_) {
      if (!problem.empty()) {
        log::Error(path + ": " + problem + " (see drivewatch history)");
      } else if (history_problem_ != "-") {
        log::Info(path + ": reads back whole again");
      }
      history_problem_ = problem;
    }
  }
  store_.Publish("exporter/state",
                 {Sample{&kWritable, {}, writable ? 1.0 : 0.0},
                  Sample{&kHistoryDamaged, {}, history_damaged_},
                  Sample{&kHistoryReadable, {}, history_readable_ ? 1.0 : 0.0}});
}

}  // namespace drivewatch
