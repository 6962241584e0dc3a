// SPDX-License-Identifier: Apache-2.0
// The read latency probe: paced 4 KiB random O_DIRECT reads through
// io_uring on one target (an NVMe namespace's block device, another block
// device, or a test file), each timestamped on its own, recorded fio-style
// (latency_histogram.h) per rate and, across rates, per the idle gap that
// came before the read. Its metrics and their meaning are in
// read_latency_metrics.cc and docs/metrics.md; how to read the idle-gap
// data is in docs/read-latency.md.
//
// Unlike the admin-command probes, this one runs continuously: attached to
// a read reactor (read_reactor.h), which serves every target from one
// thread and one io_uring, the probe decides when each read is due (its
// pacer and the drive's turns), which block, and what a result means;
// Emit() takes a snapshot for the metric store from any thread, never
// touching the drive.
#pragma once

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <stop_token>
#include <string>
#include <vector>

#include "config/util/expected.h"
#include "probes/latency/drive_load.h"
#include "probes/latency/drive_pacing.h"
#include "probes/latency/latency_window.h"
#include "probes/latency/pacing.h"
#include "probes/latency/read_reactor.h"
#include "probes/sample_sink.h"

namespace drivewatch {

// What the probe reads.
struct ReadTarget {
  enum class Kind { kNamespace, kBlockDevice, kFile };
  Kind kind = Kind::kBlockDevice;
  // Identity on every series: {serial, nsid} for a namespace, {target} for
  // a configured block device or file.
  Labels labels;
  // The block device; for kFile, the directory that holds the test file.
  std::string path;
  std::string file_name;       // kFile: the test file's name in `path`
  std::uint64_t file_size = 0;  // kFile: its size
  // The byte range reads fall in; length 0 means to the end.
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  // kNamespace: whose namespace `path` must be. Checked in sysfs (under
  // `sysfs_root`) on the device actually opened, before any read, so a
  // kernel name that moved to another drive is refused rather than read
  // under this serial (namespace_identity.h).
  std::string serial;
  std::uint32_t nsid = 0;
  std::string sysfs_root = "/sys";
};

struct ReadLatencySettings {
  // IOPS, taken in turn for `rate_period` each, so that one rate's idle
  // gaps are never filled by another's reads.
  std::vector<std::uint32_t> rates{10, 100};
  std::chrono::milliseconds rate_period{60'000};
  ArrivalProcess arrivals = ArrivalProcess::kFixed;
  std::uint32_t block_size = 4096;
  std::chrono::milliseconds timeout{5'000};
  // Sliding windows and their label values ("15m", "1h").
  std::vector<std::chrono::milliseconds> windows{std::chrono::minutes(15),
                                                 std::chrono::hours(1)};
  std::vector<std::string> window_names{"15m", "1h"};
  // A file target is not created if that would leave less than this share
  // of its file system free.
  double min_free_ratio = 0.05;
  // After each round of `rates`, read nothing for this long (0: never), so
  // the drive can be seen idle (the power draw probe's idle windows) and
  // the first read after it wakes the drive from its deepest idle state.
  std::chrono::milliseconds idle_period{0};
};

// The idle gap before a read: the time from the previous completion on the
// same target to this submission.
enum class IdleGap { kUnder1ms, k1to10ms, k10to100ms, k100msTo1s, k1to10s, kOver10s };
constexpr std::size_t kIdleGapClasses = 6;
IdleGap ClassifyIdleGap(std::chrono::nanoseconds gap);
// The `idle_gap` label value: "0-1ms", "1-10ms", ..., "10s+".
const char* IdleGapName(IdleGap gap);

class ReadLatencyProbe {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  ReadLatencyProbe(ReadTarget target, ReadLatencySettings settings);
  ~ReadLatencyProbe();

  // Reads the target on `reactor` until Detach(): opens it (creating a
  // test file if needed) and reads at the configured rates. A target that
  // fails to open or goes away is retried with a growing delay (1 s to
  // 1 min); errors are logged once until it works again. The reactor must
  // outlive the attachment.
  void Attach(ReadReactor& reactor);
  // Stops reading; when it returns the reactor no longer calls the probe.
  // A read in flight is let land, uncounted.
  void Detach();
  // Attach on a reactor of the probe's own until `stop`, then Detach
  // (tests and tools; the daemon shares one reactor among its targets).
  void Run(std::stop_token stop);

  // collect --once: `reads` reads at the highest configured rate on
  // `reactor`, then the probe is done. FinishBurst waits for that (or
  // `stop`), detaches, and returns false if the target would not open.
  void StartBurst(ReadReactor& reactor, std::size_t reads);
  bool FinishBurst(const std::stop_token& stop);
  // StartBurst and FinishBurst on a reactor of the probe's own.
  bool RunBurst(std::size_t reads, std::stop_token stop);

  // The kernel gave the namespace or device another name (a rescan after a
  // reset or re-plug): reopen under `path` within about a second, keeping
  // every counter and window, so the series continue. The identity check
  // runs again on the new device. Not for files.
  void MoveBlockDevice(const std::string& path);

  // Tells `observer` when reading at a rate starts and stops and about
  // every read (drive_load.h), from the reactor thread. Set before Attach().
  void SetLoadObserver(std::unique_ptr<LoadObserver> observer);
  // Shares the drive's rates with the drive's other namespaces
  // (drive_pacing.h): the probe joins `pacing` while its target is open.
  // Set before Attach(); without it the probe paces alone from its creation.
  void SetDrivePacing(std::shared_ptr<DrivePacing> pacing);

  // The pause hook for heavy phases: after Pause() returns, no new read is
  // submitted until the matching Resume() (pauses nest). A read already in
  // flight completes normally. A paused target costs its reactor nothing:
  // no wake-up until Resume().
  void Pause();
  void Resume();

  // Writes every metric of this target into `sink`. Thread-safe; reads
  // only memory.
  void Emit(SampleSink& sink) const;
  // As Emit, with the windows evaluated at `now` (tests).
  void EmitAt(SampleSink& sink, TimePoint now) const;

  // Counts for tests and the benchmark.
  struct Stats {
    std::uint64_t reads = 0;  // completed successfully
    std::uint64_t errors = 0;
    std::uint64_t timeouts = 0;
    std::uint64_t skipped_arrivals = 0;
    std::uint64_t identity_mismatches = 0;
    TimePoint first_submit{};
    TimePoint last_submit{};
  };
  Stats stats() const;
  // The lifetime histogram of successful reads at `rate`.
  LatencyHistogram Lifetime(std::uint32_t rate) const;

  // Every metric this probe can emit, for documentation and tests.
  static std::span<const MetricDesc* const> Metrics();

 private:
  struct RateState;
  class Reader;
  class Driver;  // what the reactor asks and tells (read_latency_probe.cc)

  void Record(RateState& rs, const ReadOutcome& outcome);  // rs: one of rates_
  // Opens the target and records whether it is up; counts an identity
  // mismatch. The opener thread.
  Status OpenTarget(Reader& reader);
  // Tells the reactor the probe's plan changed (pause, resume, move).
  void WakeReactor();

  const ReadTarget target_;
  const ReadLatencySettings settings_;
  const TimePoint start_;

  mutable std::mutex mu_;
  std::condition_variable_any burst_cv_;
  int paused_ = 0;                                        // mu_
  bool burst_done_ = false;                               // mu_
  bool burst_failed_ = false;                             // mu_
  bool up_ = false;                                       // mu_
  std::map<std::uint32_t, std::unique_ptr<RateState>> rates_;          // made once; contents mu_
  std::array<std::unique_ptr<LatencyWindows>, kIdleGapClasses> idle_;  // mu_
  std::map<std::string, std::uint64_t> errors_;           // mu_, by error name
  std::uint64_t timeouts_ = 0;                            // mu_
  std::uint64_t identity_mismatches_ = 0;                 // mu_
  Stats stats_;                                           // mu_
  bool have_completion_ = false;                          // mu_
  TimePoint last_completion_{};                           // mu_
  std::string device_path_;                               // mu_
  std::unique_ptr<LoadObserver> load_;  // set before Attach(); reactor thread
  std::shared_ptr<DrivePacing> pacing_;  // set before Attach()
  bool moved_ = false;                                    // mu_, device_path_ changed

  // The reactor serving the probe: held across Wake and Remove, so that a
  // Pause() racing a Detach() never reaches a reactor that is gone.
  std::mutex attach_mu_;
  ReadReactor* reactor_ = nullptr;  // attach_mu_
  std::unique_ptr<Driver> driver_;
};

}  // namespace drivewatch
