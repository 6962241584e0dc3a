// SPDX-License-Identifier: Apache-2.0
// `drivewatch report` over long histories: its peak memory (max RSS) and
// wall time for histories of N records. Goal (issue: the report streams
// the history): a 1,000,000-record history reported in under 100 MB RSS,
// time linear in records.
//
//   build/tests/report_history_bench --binary=build/exporter/drivewatch
//       [--binary=OTHER_BUILD/exporter/drivewatch] [--records=100000,1000000]
//       [--rounds=5] [--dir=/var/tmp/dw-report-bench]   (one command line)
//
// The histories are made once into --dir (history-N.dwh) from the recorded
// fixture tests/fixtures/report/host-a.dwh: its runs and passes repeated
// with times moved on and new run ids, plus more endurance passes, so the
// mix is ~860 bytes a record (a year of perf, fill, reclaim, trim, replay,
// power-state and endurance runs; most records are endurance passes). Each
// round runs every binary on every size, interleaved, as
//   BINARY report HISTORY --format=html --output=DIR/report.html
// and reads its peak RSS and CPU from wait4(2). Printed: per binary and
// size, the median wall seconds, CPU seconds, max RSS in MB, and
// microseconds per record (flat when time is linear in records).
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "aging/history/history.h"
#include "config/util/json.h"

namespace {

using drivewatch::AsDouble;
using drivewatch::AsString;
using drivewatch::Find;
using drivewatch::Json;
using drivewatch::aging::FramedRecord;
using drivewatch::aging::IsStepRecord;

std::vector<std::string> Flags(int argc, char** argv, const std::string& name) {
  std::vector<std::string> out;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--" + name + "=", 0) == 0) out.push_back(a.substr(name.size() + 3));
  }
  return out;
}

std::vector<long> Sizes(const std::string& list) {
  std::vector<long> out;
  std::stringstream ss(list);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(std::atol(item.c_str()));
  return out;
}

// Writes a history of `records` records to `path` (framed as Append frames
// them, without an fsync each).
bool MakeHistory(const std::string& path, long records) {
  const std::string fixture = std::string(DW_FIXTURE_DIR) + "/report/host-a.dwh";
  auto contents = drivewatch::aging::HistoryFile(fixture).Read();
  if (!contents || contents->records.empty()) {
    std::fprintf(stderr, "report_history_bench: cannot read %s\n", fixture.c_str());
    return false;
  }
  std::vector<Json> runs, passes;
  for (const Json& r : contents->records) (IsStepRecord(r) ? passes : runs).push_back(r);
  constexpr int kPassesPerCycle = 250;
  const std::string tmp = path + ".tmp";
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  long written = 0;
  std::uint64_t step = 0;
  for (long cycle = 0; written < records; ++cycle) {
    // A cycle spans a simulated day; the fixture's own span is a month or
    // two, so runs of one cycle and the next interleave in time as a
    // merged fleet history does.
    const double shift = static_cast<double>(cycle) * 86400.0;
    const std::string suffix = "-c" + std::to_string(cycle);
    auto moved = [&](const Json& record) {
      Json r = record;
      r["run"] = AsString(*Find(r, "run")) + suffix;
      for (const char* key : {"start", "end", "time"}) {
        if (const Json* t = Find(r, key)) r[key] = AsDouble(*t) + shift;
      }
      return r;
    };
    for (const Json& r : runs) {
      if (written >= records) break;
      out << FramedRecord(moved(r));
      ++written;
    }
    for (int k = 0; k < kPassesPerCycle && written < records && !passes.empty(); ++k) {
      Json r = moved(passes[static_cast<std::size_t>(k) % passes.size()]);
      r["step"] = ++step;
      r["time"] = AsDouble(*Find(r, "time")) + k;
      out << FramedRecord(r);
      ++written;
    }
  }
  out.close();
  if (!out || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::fprintf(stderr, "report_history_bench: cannot write %s\n", path.c_str());
    return false;
  }
  return true;
}

struct Sample {
  double wall = 0, cpu = 0, rss_mb = 0;
  bool ok = false;
};

Sample RunReport(const std::string& binary, const std::string& history, const std::string& out) {
  Sample s;
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    if (null >= 0) ::dup2(null, 2);
    const std::string output = "--output=" + out;
    execl(binary.c_str(), binary.c_str(), "report", history.c_str(), "--format=html",
          output.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  rusage ru{};
  if (pid < 0 || wait4(pid, &status, 0, &ru) != pid) return s;
  s.wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  s.cpu = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
          static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  s.rss_mb = static_cast<double>(ru.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB
  s.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  return s;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> binaries = Flags(argc, argv, "binary");
  if (binaries.empty()) {
    std::fprintf(stderr,
                 "usage: report_history_bench --binary=PATH [--binary=PATH]... "
                 "[--records=N,N...] [--rounds=K] [--dir=DIR]\n");
    return 2;
  }
  const auto records_flag = Flags(argc, argv, "records");
  const std::vector<long> sizes =
      Sizes(records_flag.empty() ? "100000,300000,1000000" : records_flag.back());
  const auto rounds_flag = Flags(argc, argv, "rounds");
  const int rounds = rounds_flag.empty() ? 5 : std::atoi(rounds_flag.back().c_str());
  const auto dir_flag = Flags(argc, argv, "dir");
  const std::string dir = dir_flag.empty() ? "/var/tmp/dw-report-bench" : dir_flag.back();
  ::mkdir(dir.c_str(), 0755);

  std::map<long, std::string> histories;
  for (long n : sizes) {
    const std::string path = dir + "/history-" + std::to_string(n) + ".dwh";
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) {
      std::fprintf(stderr, "report_history_bench: making %s\n", path.c_str());
      if (!MakeHistory(path, n)) return 1;
      ::stat(path.c_str(), &st);
    }
    histories[n] = path;
    std::printf("history of %ld records: %s, %.1f MB (%.0f bytes a record)\n", n, path.c_str(),
                static_cast<double>(st.st_size) / 1e6,
                static_cast<double>(st.st_size) / static_cast<double>(n));
  }
  // samples[binary][records]
  std::map<std::string, std::map<long, std::vector<Sample>>> samples;
  for (int round = 1; round <= rounds; ++round) {
    for (long n : sizes) {
      for (const std::string& b : binaries) {
        const Sample s = RunReport(b, histories[n], dir + "/report.html");
        std::fprintf(stderr, "round %d: %s %ld records: %s %.2f s wall, %.2f s CPU, %.1f MB\n",
                     round, b.c_str(), n, s.ok ? "ok" : "FAILED", s.wall, s.cpu, s.rss_mb);
        samples[b][n].push_back(s);
      }
    }
  }
  std::printf("%-44s %9s %9s %9s %10s %12s\n", "binary", "records", "wall s", "CPU s",
              "max RSS MB", "us/record");
  int status = 0;
  for (const std::string& b : binaries) {
    for (long n : sizes) {
      std::vector<double> wall, cpu, rss;
      for (const Sample& s : samples[b][n]) {
        if (!s.ok) status = 1;
        wall.push_back(s.wall);
        cpu.push_back(s.cpu);
        rss.push_back(s.rss_mb);
      }
      std::printf("%-44s %9ld %9.2f %9.2f %10.1f %12.2f\n", b.c_str(), n, Median(wall),
                  Median(cpu), Median(rss), Median(cpu) * 1e6 / static_cast<double>(n));
    }
  }
  return status;
}
