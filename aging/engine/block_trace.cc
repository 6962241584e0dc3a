// SPDX-License-Identifier: Apache-2.0
#include "aging/engine/block_trace.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "config/util/sys.h"
#include "config/util/text.h"

namespace drivewatch::aging {
namespace {

using util::Quote;

constexpr std::string_view kIologV2Header = "fio version 2 iolog";
constexpr std::string_view kIologV3Header = "fio version 3 iolog";
constexpr std::string_view kBlkparseExample =
    "\"8,0 3 1 0.000000000 697 Q WS 223490 + 8 [proc]\"";
constexpr std::size_t kReadChunk = 64 * 1024;
constexpr std::size_t kListedDevices = 16;

// Up to N whitespace-separated words of a line, and how many there were
// (counting past N).
template <std::size_t N>
struct Words {
  std::array<std::string_view, N> word;
  std::size_t count = 0;
};
template <std::size_t N>
Words<N> Split(std::string_view line) {
  Words<N> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i == line.size()) break;
    std::size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
    if (out.count < N) out.word[out.count] = line.substr(i, j - i);
    ++out.count;
    i = j;
  }
  return out;
}

// A decimal number of digits only, or nullopt (empty, a sign, a letter, or
// past 2^64 - 1).
std::optional<std::uint64_t> Number(std::string_view s) {
  if (s.empty() || s.size() > 20) return std::nullopt;
  std::uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    const std::uint64_t d = static_cast<std::uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return std::nullopt;
    v = v * 10 + d;
  }
  return v;
}

// blkparse's "SECONDS.NANOSECONDS" (up to nine digits after the point).
std::optional<std::uint64_t> BlkparseTime(std::string_view s) {
  const std::size_t dot = s.find('.');
  if (dot == std::string_view::npos || dot + 1 == s.size() || s.size() - dot - 1 > 9) {
    return std::nullopt;
  }
  const std::optional<std::uint64_t> sec = Number(s.substr(0, dot));
  const std::optional<std::uint64_t> frac = Number(s.substr(dot + 1));
  if (!sec || !frac || *sec > kMaxTraceTimeNs / 1'000'000'000) return std::nullopt;
  std::uint64_t ns = *frac;
  for (std::size_t digits = s.size() - dot - 1; digits < 9; ++digits) ns *= 10;
  return *sec * 1'000'000'000 + ns;
}

// "MAJ,MIN" as numbers, so "259,0" and "259,00" are one device.
std::optional<std::pair<std::uint64_t, std::uint64_t>> DeviceNumber(std::string_view s) {
  const std::size_t comma = s.find(',');
  if (comma == std::string_view::npos) return std::nullopt;
  const auto major = Number(s.substr(0, comma));
  const auto minor = Number(s.substr(comma + 1));
  if (!major || !minor) return std::nullopt;
  return std::pair{*major, *minor};
}

// RWBS as blkparse fills it: [F]{D,W,R,N}[F][A][S][M].
bool Rwbs(std::string_view s) {
  if (s.empty() || s.size() > 7) return false;
  return s.find_first_not_of("FDWRNASM") == std::string_view::npos;
}

bool IsBlkparseEvent(const Words<10>& w) {
  return w.count >= 7 && DeviceNumber(w.word[0]) && Number(w.word[1]) && Number(w.word[2]) &&
         BlkparseTime(w.word[3]) && Number(w.word[4]) && !w.word[5].empty() &&
         w.word[5].size() <= 2 && Rwbs(w.word[6]);
}

// blkparse ends its output with statistics per CPU and device.
bool IsBlkparseStatistics(std::string_view line) {
  if (line.starts_with("Total (")) return true;
  if (!line.starts_with("CPU")) return false;
  std::size_t i = 3;
  while (i < line.size() && line[i] >= '0' && line[i] <= '9') ++i;
  return i > 3 && line.substr(i).starts_with(" (");
}

constexpr std::string_view kIologActions =
    "add, open or close, or read, write, trim, sync, datasync or wait with an offset and a "
    "length";

}  // namespace

std::string_view TraceFormatName(TraceFormat format) {
  switch (format) {
    case TraceFormat::kIologV2: return "fio iolog version 2";
    case TraceFormat::kIologV3: return "fio iolog version 3";
    case TraceFormat::kBlkparse: return "blkparse";
  }
  return "?";
}

BlockTraceReader::~BlockTraceReader() {
  if (fd_ >= 0) ::close(fd_);
}

Error BlockTraceReader::Problem(std::string_view what) const {
  return Error{EINVAL, -1, path_ + ":" + std::to_string(line_) + ": " + std::string(what)};
}

Expected<std::unique_ptr<BlockTraceReader>> BlockTraceReader::Open(
    const std::string& path, const TraceReadOptions& options) {
  std::unique_ptr<BlockTraceReader> r(new BlockTraceReader());
  r->path_ = path;
  r->options_ = options;
  r->fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (r->fd_ < 0) return util::SysError(errno, path);
  struct stat st;
  if (::fstat(r->fd_, &st) != 0) return util::SysError(errno, path, "fstat");
  if (!S_ISREG(st.st_mode)) {
    return Error{EINVAL, -1,
                 path + ": not a regular file (expected a trace file, which a replay reads "
                        "twice: once to check it, once to replay it)"};
  }
  // blktrace's own binary records start with its magic, 0x65617400 | version.
  char magic[4] = {};
  if (::pread(r->fd_, magic, sizeof(magic), 0) == 4 && magic[1] == 't' && magic[2] == 'a' &&
      magic[3] == 'e') {
    return Error{EINVAL, -1,
                 path + ": a binary blktrace file (expected blkparse's text output of it: "
                        "blkparse -i DEVICE -o trace.txt)"};
  }
  r->buffer_.resize(kReadChunk + kMaxTraceLineBytes);
  std::optional<std::string_view> first;
  for (;;) {
    auto line = r->NextLine();
    if (!line) return line.error();
    if (!*line) {
      return Error{EINVAL, -1,
                   path + ": empty (expected a block trace: fio's iolog version 2 or 3, or "
                          "blkparse's default output)"};
    }
    // blkparse output may start with blank lines; an iolog's header is its
    // first line.
    if (!util::Trim(**line).empty()) {
      first = *line;
      break;
    }
  }
  const std::string_view head = *first;
  if (head.starts_with(kIologV2Header)) {
    r->format_ = TraceFormat::kIologV2;
  } else if (head.starts_with(kIologV3Header)) {
    r->format_ = TraceFormat::kIologV3;
  } else if (head.starts_with("fio version ")) {
    return r->Problem(Quote(head.substr(0, 40)) +
                      " is an iolog version drivewatch cannot read (expected \"" +
                      std::string(kIologV2Header) + "\" or \"" + std::string(kIologV3Header) +
                      "\")");
  } else if (IsBlkparseEvent(Split<10>(head))) {
    r->format_ = TraceFormat::kBlkparse;
    r->pending_line_ = std::string(head);  // an event: parsed by the first Next()
  } else {
    return r->Problem(
        "not a block trace drivewatch can replay (expected a first line \"" +
        std::string(kIologV2Header) + "\" or \"" + std::string(kIologV3Header) +
        "\", or blkparse's default output such as " + std::string(kBlkparseExample) + ")");
  }
  return r;
}

Expected<std::optional<std::string_view>> BlockTraceReader::NextLine() {
  for (;;) {
    const char* start = buffer_.data() + begin_;
    const void* nl = std::memchr(start, '\n', end_ - begin_);
    std::size_t length = 0;
    bool found = nl != nullptr;
    if (found) {
      length = static_cast<std::size_t>(static_cast<const char*>(nl) - start);
    } else if (eof_) {
      if (begin_ == end_) return std::optional<std::string_view>();
      length = end_ - begin_;  // the last line, without a line end
    }
    if (found || eof_) {
      ++line_;
      if (length > kMaxTraceLineBytes) {
        return Problem("a line of " + std::to_string(length) + " bytes (expected at most " +
                       std::to_string(kMaxTraceLineBytes) + " bytes a line)");
      }
      std::string_view line(start, length);
      begin_ += length + (found ? 1 : 0);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.find('\0') != std::string_view::npos) {
        return Problem("a NUL byte (expected text: a block trace is a text file)");
      }
      return std::optional<std::string_view>(line);
    }
    if (end_ - begin_ > kMaxTraceLineBytes) {
      ++line_;
      return Problem("a line longer than " + std::to_string(kMaxTraceLineBytes) +
                     " bytes (expected at most that a line)");
    }
    // Keep the partial line, read more after it.
    std::memmove(buffer_.data(), start, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
    const ssize_t n = ::read(fd_, buffer_.data() + end_, buffer_.size() - end_);
    if (n < 0) {
      if (errno == EINTR) continue;
      return util::SysError(errno, path_, "read");
    }
    if (n == 0) eof_ = true;
    end_ += static_cast<std::size_t>(n);
  }
}

void BlockTraceReader::Saw(std::string_view device) {
  if (devices_.size() >= kListedDevices) return;
  if (std::find(devices_.begin(), devices_.end(), device) == devices_.end()) {
    devices_.emplace_back(device);
  }
}

Expected<std::optional<TraceIo>> BlockTraceReader::Next() {
  for (;;) {
    if (ended_) return std::optional<TraceIo>();
    std::string_view line;
    if (pending_line_) {
      line = *pending_line_;
    } else {
      auto next = NextLine();
      if (!next) return next.error();
      if (!*next) return std::optional<TraceIo>();
      line = **next;
    }
    auto io = format_ == TraceFormat::kBlkparse ? ParseBlkparse(line) : ParseIolog(line);
    pending_line_.reset();
    if (!io || *io) return io;
  }
}

Expected<std::optional<TraceIo>> BlockTraceReader::ParseIolog(std::string_view line) {
  const bool v3 = format_ == TraceFormat::kIologV3;
  const Words<6> w = Split<6>(line);
  if (w.count == 0) return std::optional<TraceIo>();  // a blank line
  const std::size_t lead = v3 ? 1 : 0;  // the timestamp
  const std::string_view form =
      v3 ? "TIMESTAMP FILE ACTION, or TIMESTAMP FILE ACTION OFFSET LENGTH"
         : "FILE ACTION, or FILE ACTION OFFSET LENGTH";
  if (w.count != lead + 2 && w.count != lead + 4) {
    return Problem(std::to_string(w.count) + " fields (expected " + std::string(form) + ")");
  }
  TraceIo io;
  io.line = line_;
  if (v3) {
    const std::optional<std::uint64_t> us = Number(w.word[0]);
    if (!us || *us > kMaxTraceTimeNs / 1000) {
      return Problem("timestamp " + Quote(w.word[0]) +
                     " is not a number of microseconds up to 366 days (expected " +
                     std::string(form) + ")");
    }
    io.time_ns = *us * 1000;
  }
  const std::string_view name = w.word[lead];
  const std::string_view action = w.word[lead + 1];
  if (w.count == lead + 2) {
    if (Status s = IologFileAction(name, action, form); !s) return s.error();
    return std::optional<TraceIo>();
  }
  const std::optional<std::uint64_t> offset = Number(w.word[lead + 2]);
  const std::optional<std::uint64_t> length = Number(w.word[lead + 3]);
  if (!offset || !length) {
    return Problem("offset " + Quote(w.word[lead + 2]) + " and length " +
                   Quote(w.word[lead + 3]) + " (expected whole numbers of bytes)");
  }
  if (action == "wait") {
    if (Status s = IologWait(*offset, v3); !s) return s.error();
    return std::optional<TraceIo>();
  }
  if (Status s = IologIo(name, action, *offset, *length, io); !s) return s.error();
  if (!v3) io.time_ns = wait_clock_ns_;
  Saw(name);
  if (!options_.device.empty() && name != options_.device) return std::optional<TraceIo>();
  return std::optional<TraceIo>(io);
}

Status BlockTraceReader::IologFileAction(std::string_view name, std::string_view action,
                                         std::string_view form) {
  const auto file = files_.find(name);
  if (action == "add") {
    if (file == files_.end()) {
      if (files_.size() >= kMaxTraceFiles) {
        return Problem("more than " + std::to_string(kMaxTraceFiles) +
                       " files added (expected at most that many)");
      }
      files_.emplace(std::string(name), false);
    }
  } else if (action == "open" || action == "close") {
    if (file == files_.end()) {
      return Problem(std::string(action) + " of " + Quote(name) +
                     ", which no add named before (expected \"" + std::string(name) +
                     " add\" first)");
    }
    if (action == "close" && !file->second) {
      return Problem("close of " + Quote(name) + ", which is not open (expected \"" +
                     std::string(name) + " open\" before it)");
    }
    file->second = action == "open";
  } else if (action == "read" || action == "write" || action == "trim" || action == "sync" ||
             action == "datasync" || action == "wait") {
    return Problem(std::string(action) + " without an offset and a length (expected " +
                   std::string(form) + ")");
  } else {
    return Problem("unknown action " + Quote(action) + " (expected " +
                   std::string(kIologActions) + ")");
  }
  return Ok{};
}

Status BlockTraceReader::IologWait(std::uint64_t ms, bool v3) {
  if (v3) {
    return Problem(
        "wait in an iolog of version 3 (expected the timestamps to carry the timing, as "
        "fio writes them)");
  }
  if (ms > kMaxTraceTimeNs / 1'000'000) {
    return Problem("wait until " + std::to_string(ms) +
                   " ms (expected at most 366 days of milliseconds)");
  }
  wait_clock_ns_ = std::max(wait_clock_ns_, ms * 1'000'000);
  return Ok{};
}

Status BlockTraceReader::IologIo(std::string_view name, std::string_view action,
                                 std::uint64_t offset, std::uint64_t length, TraceIo& io) {
  if (action == "read") {
    io.op = TraceIo::Op::kRead;
  } else if (action == "write") {
    io.op = TraceIo::Op::kWrite;
  } else if (action == "trim") {
    io.op = TraceIo::Op::kTrim;
  } else if (action == "sync" || action == "datasync") {
    io.op = TraceIo::Op::kFlush;
  } else if (action == "add" || action == "open" || action == "close") {
    return Problem(std::string(action) + " with an offset and a length (expected \"" +
                   std::string(name) + " " + std::string(action) + "\" alone)");
  } else {
    return Problem("unknown action " + Quote(action) + " (expected " +
                   std::string(kIologActions) + ")");
  }
  const auto file = files_.find(name);
  if (file == files_.end() || !file->second) {
    return Problem(std::string(action) + " on " + Quote(name) + ", which is not open (expected \"" +
                   std::string(name) + " add\" and \"" + std::string(name) +
                   " open\" before its I/O)");
  }
  if (io.op != TraceIo::Op::kFlush) {
    if (length == 0 || length > kMaxTraceIoBytes) {
      return Problem(std::string(action) + " of " + std::to_string(length) +
                     " bytes (expected 1 to " + std::to_string(kMaxTraceIoBytes) + " bytes)");
    }
    if (offset > kMaxTraceOffset - length) {
      return Problem(std::string(action) + " at offset " + std::to_string(offset) +
                     " (expected an offset that, with its length, stays below 1 EiB)");
    }
    io.offset = offset;
    io.length = length;
  }
  return Ok{};
}

Expected<std::optional<TraceIo>> BlockTraceReader::ParseBlkparse(std::string_view line) {
  if (util::Trim(line).empty()) return std::optional<TraceIo>();
  const Words<10> w = Split<10>(line);
  if (!IsBlkparseEvent(w)) {
    if (IsBlkparseStatistics(line)) {
      ended_ = true;
      return std::optional<TraceIo>();
    }
    return Problem(Quote(line.substr(0, 80)) +
                   " is not a blkparse event (expected blkparse's default output, DEVICE CPU "
                   "SEQUENCE SECONDS PID ACTION RWBS ..., such as " +
                   std::string(kBlkparseExample) + ")");
  }
  const char action = w.word[5].size() == 1 ? w.word[5][0] : 0;
  if (action != 'D' && action != 'Q') return std::optional<TraceIo>();
  if (options_.blkparse_action != 0 && action != options_.blkparse_action) {
    return std::optional<TraceIo>();
  }
  TraceIo io;
  io.line = line_;
  io.action = action;
  io.time_ns = *BlkparseTime(w.word[3]);
  const std::string_view rwbs = w.word[6];
  const bool preflush = rwbs.size() > 1 && rwbs[0] == 'F';
  const char kind = preflush ? rwbs[1] : rwbs[0];
  // "SECTOR + SECTORS": an event without it carries no data.
  const bool data = w.count >= 10 && w.word[8] == "+";
  if (data) {
    const std::optional<std::uint64_t> sector = Number(w.word[7]);
    const std::optional<std::uint64_t> sectors = Number(w.word[9]);
    if (!sector || !sectors || *sectors == 0 || *sectors > kMaxTraceIoBytes / 512 ||
        *sector > (kMaxTraceOffset - *sectors * 512) / 512) {
      return Problem("sector " + Quote(w.word[7]) + " + " + Quote(w.word[9]) +
                     " (expected a sector below 1 EiB and 1 to " +
                     std::to_string(kMaxTraceIoBytes / 512) + " sectors of 512 bytes)");
    }
    io.offset = *sector * 512;
    io.length = *sectors * 512;
  }
  if (data && kind == 'D') {
    io.op = TraceIo::Op::kTrim;
  } else if (data && kind == 'W') {
    io.op = TraceIo::Op::kWrite;
  } else if (data && kind == 'R') {
    io.op = TraceIo::Op::kRead;
  } else if (rwbs[0] == 'F') {
    io.op = TraceIo::Op::kFlush;
    io.offset = io.length = 0;
  } else {
    return std::optional<TraceIo>();  // no data, no flush (a passthrough command)
  }
  Saw(w.word[0]);
  if (!options_.device.empty()) {
    const auto mine = DeviceNumber(options_.device);
    if (!mine || *mine != *DeviceNumber(w.word[0])) return std::optional<TraceIo>();
  }
  return std::optional<TraceIo>(io);
}

Expected<TraceSummary> ScanTrace(const std::string& path, const std::string& device) {
  auto reader = BlockTraceReader::Open(path, TraceReadOptions{device, 0});
  if (!reader) return reader.error();
  TraceSummary by_action[2];  // blkparse: D, Q; an iolog: the first only
  bool timed[2] = {false, false};
  for (;;) {
    auto next = (*reader)->Next();
    if (!next) return next.error();
    if (!*next) break;
    const TraceIo& io = **next;
    const int a = io.action == 'Q' ? 1 : 0;
    TraceSummary& s = by_action[a];
    switch (io.op) {
      case TraceIo::Op::kFlush:
        ++s.flushes;
        continue;
      case TraceIo::Op::kRead:
        ++s.reads;
        s.read_bytes += io.length;
        break;
      case TraceIo::Op::kWrite:
        ++s.writes;
        s.write_bytes += io.length;
        break;
      case TraceIo::Op::kTrim:
        ++s.trims;
        s.trim_bytes += io.length;
        break;
    }
    if (io.op != TraceIo::Op::kRead && s.first_write_line == 0) s.first_write_line = io.line;
    s.largest_io = std::max(s.largest_io, io.length);
    if (!timed[a]) s.first_time_ns = io.time_ns;
    timed[a] = true;
    s.last_time_ns = std::max(s.last_time_ns, io.time_ns);
  }
  const TraceFormat format = (*reader)->format();
  const bool issue = format != TraceFormat::kBlkparse || by_action[0].ios() > 0;
  TraceSummary summary = by_action[issue ? 0 : 1];
  summary.format = format;
  summary.blkparse_action = format == TraceFormat::kBlkparse ? (issue ? 'D' : 'Q') : 0;
  summary.devices = (*reader)->devices();
  if (summary.ios() == 0) {
    std::string found;
    for (const std::string& d : summary.devices) found += (found.empty() ? "" : ", ") + d;
    if (!device.empty()) {
      return Error{EINVAL, -1,
                   path + ": no I/O of trace_device " + Quote(device) + " (expected one of " +
                       (found.empty() ? std::string("its devices; it has no I/O at all")
                                      : "the trace's: " + found) +
                       ")"};
    }
    return Error{EINVAL, -1,
                 path + ": no read, write or trim in this " +
                     std::string(TraceFormatName(format)) +
                     " trace (expected at least one I/O to replay" +
                     (format == TraceFormat::kBlkparse
                          ? std::string("; blkparse: D or Q events with sectors")
                          : std::string()) +
                     ")"};
  }
  if (summary.last_time_ns < summary.first_time_ns) summary.last_time_ns = summary.first_time_ns;
  return summary;
}

void MapTraceIo(const TraceIo& io, const TraceMapping& m, std::vector<MappedIo>& out,
                MappingCounts& counts) {
  if (io.op == TraceIo::Op::kFlush || io.length == 0 || m.capacity == 0) return;
  const std::uint64_t lbs = m.logical_block_size;
  const std::uint64_t begin = io.offset / lbs * lbs;
  const std::uint64_t end = (io.offset + io.length + lbs - 1) / lbs * lbs;
  if (begin != io.offset || end != io.offset + io.length) ++counts.aligned;
  if (end > m.capacity) ++counts.folded;
  const std::size_t before = out.size();
  std::uint64_t pos = begin % m.capacity;
  for (std::uint64_t left = end - begin; left > 0;) {
    const std::uint64_t piece = std::min({left, std::uint64_t{m.max_io}, m.capacity - pos});
    out.push_back(MappedIo{io.op, pos, static_cast<std::uint32_t>(piece)});
    left -= piece;
    pos = (pos + piece) % m.capacity;
  }
  if (out.size() - before > 1) ++counts.split;
}

}  // namespace drivewatch::aging
