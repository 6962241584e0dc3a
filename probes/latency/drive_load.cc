// SPDX-License-Identifier: Apache-2.0
#include "probes/latency/drive_load.h"

namespace drivewatch {

class DriveLoadBoard::Reader : public LoadObserver {
 public:
  Reader(DriveLoadBoard& board, std::string serial)
      : board_(board), serial_(std::move(serial)) {}
  ~Reader() override { board_.Remove(serial_, this); }
  void LoadStarted(std::uint32_t rate, TimePoint at) override {
    board_.Set(serial_, this, rate, at);
  }
  void LoadStopped(TimePoint at) override { board_.Set(serial_, this, 0, at); }
  void ReadIssued() override { board_.AddRead(serial_); }

 private:
  DriveLoadBoard& board_;
  const std::string serial_;
};

DriveLoadBoard::DriveLoadBoard(NowFn now) : now_(std::move(now)) {
  if (!now_) now_ = [] { return std::chrono::steady_clock::now(); };
}

DriveLoadBoard::~DriveLoadBoard() = default;

std::unique_ptr<LoadObserver> DriveLoadBoard::Observe(const std::string& serial) {
  auto reader = std::make_unique<Reader>(*this, serial);
  std::lock_guard lock(mu_);
  Drive& d = drives_[serial];
  d.rates.emplace(reader.get(), 0);
  d.state.readers = static_cast<int>(d.rates.size());
  return reader;
}

DriveLoadState DriveLoadBoard::State(const std::string& serial) const {
  std::lock_guard lock(mu_);
  auto it = drives_.find(serial);
  return it == drives_.end() ? DriveLoadState{} : it->second.state;
}

void DriveLoadBoard::Set(const std::string& serial, const Reader* reader,
                         std::uint32_t rate,
                         std::chrono::steady_clock::time_point at) {
  std::lock_guard lock(mu_);
  Drive& d = drives_[serial];
  d.rates[reader] = rate;
  std::uint32_t total = 0;
  for (const auto& [r, each] : d.rates) total += each;
  if (total != d.state.rate) {
    d.state.rate = total;
    d.state.since = at;
  }
}

void DriveLoadBoard::AddRead(const std::string& serial) {
  std::lock_guard lock(mu_);
  ++drives_[serial].state.reads;
}

void DriveLoadBoard::Remove(const std::string& serial, const Reader* reader) {
  const auto at = now_();
  std::lock_guard lock(mu_);
  auto it = drives_.find(serial);
  if (it == drives_.end()) return;
  Drive& d = it->second;
  d.rates.erase(reader);
  d.state.readers = static_cast<int>(d.rates.size());
  std::uint32_t total = 0;
  for (const auto& [r, each] : d.rates) total += each;
  if (total != d.state.rate) {
    d.state.rate = total;
    d.state.since = at;
  }
  // The read count stays: it is compared with the drive's own counters,
  // which do not restart when a reader does.
}

}  // namespace drivewatch
