// SPDX-License-Identifier: Apache-2.0
// What drivewatch's own reads are doing to a drive right now: the seam
// between the read latency probe, which causes the load, and the power
// draw probe, which measures power over the windows in which that load is
// steady (10 IOPS) or absent (idle).
//
// The read latency probe reports through a LoadObserver, one per target:
// when a rate's turn starts and stops (pauses, idle turns, a closed
// target), and every read it submits. The DriveLoadBoard adds up the
// observers of one drive (one per namespace) by serial:
//
//   reader thread(s)                       power draw probe (drive strand)
//   observer->LoadStarted(10, t)  ---->    board.State("SN") = {rate 10,
//   observer->ReadIssued() ...             since t, reads n, readers 1}
//   observer->LoadStopped(t')     ---->    {rate 0, since t', ...}
//
// The observer calls take one short mutex and never wait on the drive, so
// the pacing thread is never held up by the power side.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace drivewatch {

class LoadObserver {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  virtual ~LoadObserver() = default;
  // Reads at `rate` IOPS begin at `at` (a rate's turn, or reading again
  // after a pause or a reopen). Replaces any earlier rate.
  virtual void LoadStarted(std::uint32_t rate, TimePoint at) = 0;
  // No more reads until the next LoadStarted. Repeating it is harmless.
  virtual void LoadStopped(TimePoint at) = 0;
  // One read was submitted to the drive (whatever its outcome).
  virtual void ReadIssued() = 0;
};

// drivewatch's load on one drive, added up over its readers.
struct DriveLoadState {
  using TimePoint = std::chrono::steady_clock::time_point;
  // Total nominal IOPS of the readers that are reading now; 0 when none is
  // (idle turn, paused, not open, or no reader at all).
  std::uint32_t rate = 0;
  // When `rate` last changed (any reader starting or stopping); the time
  // point's epoch when it never did.
  TimePoint since{};
  // Reads drivewatch has submitted to the drive since it started.
  std::uint64_t reads = 0;
  // Readers registered for the drive (running read latency targets).
  int readers = 0;
};

class DriveLoadBoard {
 public:
  using NowFn = std::function<std::chrono::steady_clock::time_point()>;
  // `now` (the steady clock by default) stamps an observer's removal.
  explicit DriveLoadBoard(NowFn now = {});
  ~DriveLoadBoard();
  DriveLoadBoard(const DriveLoadBoard&) = delete;
  DriveLoadBoard& operator=(const DriveLoadBoard&) = delete;

  // A reader of the drive `serial`. Destroying the observer stops its load
  // and removes it. It must not outlive the board.
  std::unique_ptr<LoadObserver> Observe(const std::string& serial);
  // The drive's load now; all zero for a serial nobody reads.
  DriveLoadState State(const std::string& serial) const;

 private:
  class Reader;
  struct Drive {
    std::map<const Reader*, std::uint32_t> rates;  // 0: not reading
    DriveLoadState state;
  };
  void Set(const std::string& serial, const Reader* reader, std::uint32_t rate,
           std::chrono::steady_clock::time_point at);
  void AddRead(const std::string& serial);
  void Remove(const std::string& serial, const Reader* reader);

  NowFn now_;
  mutable std::mutex mu_;
  std::map<std::string, Drive> drives_;  // mu_
};

}  // namespace drivewatch
