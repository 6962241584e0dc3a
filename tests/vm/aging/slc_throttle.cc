// SPDX-License-Identifier: Apache-2.0
// slc_throttle: the "SLC cache" of the aging VM scenario's S3 (tests/vm/aging),
// made in the guest kernel's block layer: the fill's writes to DEVICE run at
// FAST_BPS until the kernel has completed TRIGGER_BYTES of them, then at
// SLOW_BPS (the cache ran out). Runs in the guest, as root:
//
//   slc_throttle DEVICE FAST_CGROUP SLOW_CGROUP FAST_BPS SLOW_BPS TRIGGER_BYTES AFTER_S TIMEOUT_S SAMPLES [DIAG_TTY]
//
// DEVICE is a kernel block device name (nvme2n1); FAST_CGROUP and
// SLOW_CGROUP two cgroup v2 directories whose parent has the io controller
// enabled; the fill runs in FAST_CGROUP. It
//   1. reads DEVICE's MAJ:MIN and its bytes written so far (the base:
//      /sys/block/DEVICE/stat, sectors written, counted as writes complete);
//   2. writes "MAJ:MIN wbps=FAST_BPS" to FAST_CGROUP/io.max and
//      "MAJ:MIN wbps=SLOW_BPS" to SLOW_CGROUP/io.max, and prints "ready";
//   3. polls the bytes written since the base every 20 ms (absolute
//      deadlines on CLOCK_MONOTONIC); at the first poll at or above
//      TRIGGER_BYTES it moves every process of FAST_CGROUP to SLOW_CGROUP
//      (the writes already queued finish at the fast rate, every later one
//      goes at the slow rate: lowering io.max in place instead made the
//      6.1 kernel let ~27 MB of queued writes through at once, then stop
//      for 1.3 s to make up for them);
//   4. polls AFTER_S seconds more, and writes every poll to SAMPLES:
//        # monotonic_s bytes_since_base (throttle command sent C0, returned C1)
//      (C0, C1: when the move began and ended)
//        T BYTES
//      the format tests/vm/aging/aging.py's "analyze" reads.
// It exits 0 after step 4; 1 if TIMEOUT_S passed without the crossing (the
// samples are written, the header says "(no crossing)", nothing moved; and,
// for the host to read while the fill may still hang, DIAG_TTY (the guest's
// console) gets lines "DWVM-MARK: slc-diag ..." with the device's stat and
// inflight counts and the kernel's log from /dev/kmsg, whatever its level);
// 2 on a usage, sysfs or cgroup error (said on stderr). What it moved stays
// in SLOW_CGROUP (the scenario's S4 fills under the slow limit).
//
// Why in the guest and not QEMU's block_set_io_throttle, as S3 did before:
// the trigger reads the kernel's own count of completed writes, with no QMP
// round trip, and the limit is the kernel's blk-throttle (cgroup v2 io.max);
// QEMU's query-blockstats still counts what reached the device (S3 compares
// the fill's written_bytes with it). S3 had failed about once in 20 to 40
// runs with QEMU's throttle (no write completed for a minute); it failed
// once in 20 the same way with this model too, so that stall lies below
// both (QEMU's NVMe queues or the guest's driver), not in the throttle.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

constexpr double kPollSeconds = 0.02;

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "slc_throttle: %s\n", what.c_str());
  std::exit(2);
}

double Now() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

void SleepUntil(double t) {
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(t);
  ts.tv_nsec = static_cast<long>((t - static_cast<double>(ts.tv_sec)) * 1e9);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

std::string ReadLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) Fail("cannot read " + path);
  return line;
}

// Bytes written to the device: /sys/block/DEVICE/stat's seventh field is
// sectors written (512 bytes each, whatever the logical block size).
uint64_t BytesWritten(const std::string& stat_path) {
  std::istringstream fields(ReadLine(stat_path));
  uint64_t v = 0;
  for (int i = 0; i < 7; ++i) {
    if (!(fields >> v)) Fail(stat_path + ": fewer than 7 fields");
  }
  return v * 512;
}

void SetLimit(const std::string& io_max, const std::string& dev, uint64_t bps) {
  std::ofstream out(io_max);
  out << dev << " wbps=" << bps << "\n";
  out.flush();
  if (!out) Fail("cannot write '" + dev + " wbps=" + std::to_string(bps) + "' to " + io_max);
}

// Moves every process of cgroup FROM to cgroup TO (cgroup.procs lists
// thread group IDs; writing one moves all its threads).
void MoveAll(const std::string& from, const std::string& to) {
  std::ifstream in(from + "/cgroup.procs");
  if (!in) Fail("cannot read " + from + "/cgroup.procs");
  std::vector<std::string> pids;
  for (std::string pid; std::getline(in, pid);)
    if (!pid.empty()) pids.push_back(pid);
  for (const auto& pid : pids) {
    // One write(2) a process, so that its errno is the move's own.
    const int fd = ::open((to + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) Fail("cannot open " + to + "/cgroup.procs: " + std::strerror(errno));
    const std::string line = pid + "\n";
    const ssize_t n = ::write(fd, line.data(), line.size());
    const int err = errno;
    ::close(fd);
    // A process that exited since the read is not an error (ESRCH).
    if (n < 0 && err != ESRCH) Fail("cannot move " + pid + " to " + to + ": " + std::strerror(err));
  }
}

// What the host needs to tell where a fill that wrote nothing is stuck:
// requests the kernel holds for the device (inflight), its counters, and
// the kernel's messages (an NVMe timeout, an abort, a reset), one marker
// line each, on TTY.
void Diagnose(const std::string& tty, const std::string& device) {
  std::FILE* out = std::fopen(tty.c_str(), "w");
  if (out == nullptr) return;
  const auto line = [&](const std::string& what, const std::string& text) {
    std::string clean = text;
    for (char& c : clean)
      if (c == '\n' || c == '\r') c = ' ';
    std::fprintf(out, "DWVM-MARK: slc-diag %s %s\n", what.c_str(), clean.c_str());
  };
  line("inflight", ReadLine("/sys/block/" + device + "/inflight"));
  line("stat", ReadLine("/sys/block/" + device + "/stat"));
  if (std::FILE* kmsg = std::fopen("/dev/kmsg", "re")) {
    // Each read returns one record; the file gives EAGAIN at the end when
    // non-blocking, EPIPE when a record was overwritten (go on).
    const int fd = fileno(kmsg);
    const int flags = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    // The newest 200 records (the file starts at the oldest).
    std::vector<std::string> records;
    char rec[2048];
    while (true) {
      const ssize_t got = read(fd, rec, sizeof rec - 1);
      if (got < 0 && errno == EPIPE) continue;
      if (got <= 0) break;
      records.emplace_back(rec, static_cast<size_t>(got));
    }
    std::fclose(kmsg);
    const size_t from = records.size() > 200 ? records.size() - 200 : 0;
    for (size_t i = from; i < records.size(); ++i) line("kmsg", records[i]);
  }
  std::fclose(out);
}

uint64_t Number(const char* s, const char* name) {
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v == 0)
    Fail(std::string(name) + " '" + s + "' is not a positive whole number");
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 10 && argc != 11) {
    std::fprintf(stderr,
                 "usage: slc_throttle DEVICE FAST_CGROUP SLOW_CGROUP FAST_BPS SLOW_BPS "
                 "TRIGGER_BYTES AFTER_S TIMEOUT_S SAMPLES [DIAG_TTY]\n");
    return 2;
  }
  const std::string diag_tty = argc == 11 ? argv[10] : "";
  const std::string device = argv[1];
  const std::string fast_cgroup = argv[2];
  const std::string slow_cgroup = argv[3];
  const uint64_t fast = Number(argv[4], "FAST_BPS");
  const uint64_t slow = Number(argv[5], "SLOW_BPS");
  const uint64_t trigger = Number(argv[6], "TRIGGER_BYTES");
  const double after = static_cast<double>(Number(argv[7], "AFTER_S"));
  const double timeout = static_cast<double>(Number(argv[8], "TIMEOUT_S"));
  const std::string samples_path = argv[9];
  const std::string stat_path = "/sys/block/" + device + "/stat";
  const std::string dev = ReadLine("/sys/block/" + device + "/dev");

  const uint64_t base = BytesWritten(stat_path);
  SetLimit(fast_cgroup + "/io.max", dev, fast);
  SetLimit(slow_cgroup + "/io.max", dev, slow);
  std::printf("ready %s base %llu\n", dev.c_str(), static_cast<unsigned long long>(base));
  std::fflush(stdout);

  std::vector<std::pair<double, uint64_t>> samples;
  const double end = Now() + timeout;
  double next = Now();
  double sent = 0, returned = 0;
  bool crossed = false;
  while (true) {
    const uint64_t w = BytesWritten(stat_path) - base;
    const double t = Now();
    samples.emplace_back(t, w);
    if (w >= trigger) {
      sent = Now();
      MoveAll(fast_cgroup, slow_cgroup);
      returned = Now();
      crossed = true;
      break;
    }
    if (t > end) break;
    next += kPollSeconds;
    SleepUntil(next);
  }
  if (crossed) {
    next = returned;
    samples.emplace_back(Now(), BytesWritten(stat_path) - base);
    while (Now() < returned + after) {
      next += kPollSeconds;
      SleepUntil(next);
      const uint64_t w = BytesWritten(stat_path) - base;
      samples.emplace_back(Now(), w);
    }
  }
  std::FILE* f = std::fopen(samples_path.c_str(), "w");
  if (f == nullptr) Fail("cannot write " + samples_path + ": " + std::strerror(errno));
  if (crossed) {
    std::fprintf(f, "# monotonic_s bytes_since_base (throttle command sent %.6f, returned %.6f)\n",
                 sent, returned);
  } else {
    std::fprintf(f, "# monotonic_s bytes_since_base (no crossing)\n");
  }
  for (const auto& [t, w] : samples)
    std::fprintf(f, "%.6f %llu\n", t, static_cast<unsigned long long>(w));
  if (std::fclose(f) != 0) Fail("cannot write " + samples_path + ": " + std::strerror(errno));
  if (!crossed) {
    if (!diag_tty.empty()) Diagnose(diag_tty, device);
    std::fprintf(stderr, "slc_throttle: %s wrote only %llu of %llu bytes within %.0f s\n",
                 device.c_str(), static_cast<unsigned long long>(samples.back().second),
                 static_cast<unsigned long long>(trigger), timeout);
    return 1;
  }
  return 0;
}
