// SPDX-License-Identifier: Apache-2.0
// Block traces, as the replay phase (aging/phases/replay_phase.cc) reads them, and
// how a trace's I/O is mapped onto a target. A trace is untrusted input: it
// is streamed (a trace may be gigabytes), every line is checked, and every
// problem names the file and the line, what was wrong and what was
// expected ("/srv/t.log:12: unknown action \"flush\" (expected ...)").
//
// Formats, told apart by the first line:
//   - fio's iolog version 2: "fio version 2 iolog", then lines
//     "FILE ACTION" (add, open, close) or "FILE ACTION OFFSET LENGTH"
//     (read, write, trim, sync, datasync, wait), offsets and lengths in
//     bytes. A file is added, then opened, before its I/O. "wait N" makes
//     the I/O after it due no earlier than N milliseconds after the start:
//     fio's HOWTO says microseconds relative to the previous wait, but fio
//     (1.35 to 3.33 and since) sleeps until N ms after its own start, and
//     we follow what fio replays.
//   - fio's iolog version 3: "fio version 3 iolog", then the same lines
//     each led by a timestamp in microseconds from the start (what fio's
//     write_iolog writes); no wait.
//   - blkparse's default text output, one event a line:
//       8,0    3        1     0.000000000   697  Q  WS 223490 + 8 [proc]
//     device, CPU, sequence, seconds, pid, action, RWBS, sector + sectors
//     (512 bytes each). The I/O is the D (issue) event when the trace has
//     any: what the block layer handed the device after merging and
//     splitting the queued requests, so what the drive saw. A trace
//     recorded with only Q (queue) events is replayed from those; taking
//     both would replay every I/O twice. RWBS D is a discard (a trim), W a
//     write, R a read; an event without sectors (a flush, "FN") carries no
//     data. blkparse's closing statistics ("CPU0 (8,0):", "Total (8,0):")
//     end the events.
// Flushes (sync, datasync, blkparse's flush-only events) carry no data
// and are not replayed; they are counted. A write that asks for a preflush
// or FUA is replayed as a plain write. Every file or device of a trace is
// replayed onto the one target, as fio's replay_redirect does, unless a
// device filter names one.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/util/expected.h"

namespace drivewatch::aging {

enum class TraceFormat { kIologV2, kIologV3, kBlkparse };
// "fio iolog version 2", "fio iolog version 3", "blkparse".
std::string_view TraceFormatName(TraceFormat format);

// One event of a trace, as recorded: an I/O, or a flush (no data).
struct TraceIo {
  enum class Op : std::uint8_t { kRead, kWrite, kTrim, kFlush };
  Op op = Op::kRead;
  std::uint64_t offset = 0;   // bytes
  std::uint64_t length = 0;   // bytes; above 0 but for a flush
  std::uint64_t time_ns = 0;  // on the trace's clock
  std::uint64_t line = 0;     // 1-based
  char action = 0;            // blkparse: 'D' or 'Q'; an iolog: 0
};

// What a trace may hold; beyond these it is refused as damaged.
inline constexpr std::size_t kMaxTraceLineBytes = 4096;
// fio reads a length as a 32-bit number; blktrace records bytes in one.
inline constexpr std::uint64_t kMaxTraceIoBytes = 0xffffffffULL;
inline constexpr std::uint64_t kMaxTraceOffset = std::uint64_t{1} << 60;  // 1 EiB
inline constexpr std::uint64_t kMaxTraceTimeNs = 366ULL * 86'400 * 1'000'000'000;
// Distinct file names of an iolog.
inline constexpr std::size_t kMaxTraceFiles = 1024;

struct TraceReadOptions {
  // Only this device's ("MAJ,MIN", blkparse) or file's (an iolog) events;
  // empty: all.
  std::string device;
  // blkparse: the action that is the I/O, 'D' or 'Q' (ScanTrace() picks
  // it); 0 gives both.
  char blkparse_action = 0;
};

// Streams a trace's events in order, a line at a time; memory stays bounded
// whatever the trace's size.
class BlockTraceReader {
 public:
  // Opens `path`, which must be a regular file (it is read twice: once to
  // check it, once to replay it), and reads its format from its first line.
  static Expected<std::unique_ptr<BlockTraceReader>> Open(const std::string& path,
                                                         const TraceReadOptions& options);
  ~BlockTraceReader();
  BlockTraceReader(const BlockTraceReader&) = delete;
  BlockTraceReader& operator=(const BlockTraceReader&) = delete;

  TraceFormat format() const { return format_; }
  // The next I/O or flush, or nullopt at the end of the trace.
  Expected<std::optional<TraceIo>> Next();
  // The devices (blkparse) or files (an iolog) that held I/O so far,
  // whatever the filter: the first 16 met.
  const std::vector<std::string>& devices() const { return devices_; }

 private:
  BlockTraceReader() = default;
  // The next line, without its line end; nullopt at the end of the file.
  Expected<std::optional<std::string_view>> NextLine();
  Error Problem(std::string_view what) const;
  Expected<std::optional<TraceIo>> ParseIolog(std::string_view line);
  // ParseIolog's actions: "FILE add|open|close"; a v2 "wait" (its offset
  // the time in milliseconds); an I/O or flush on an open file, into `io`.
  Status IologFileAction(std::string_view name, std::string_view action,
                         std::string_view form);
  Status IologWait(std::uint64_t ms, bool v3);
  Status IologIo(std::string_view name, std::string_view action, std::uint64_t offset,
                 std::uint64_t length, TraceIo& io);
  Expected<std::optional<TraceIo>> ParseBlkparse(std::string_view line);
  void Saw(std::string_view device);

  std::string path_;
  int fd_ = -1;
  TraceFormat format_ = TraceFormat::kIologV2;
  TraceReadOptions options_;
  std::vector<char> buffer_;
  std::size_t begin_ = 0, end_ = 0;
  bool eof_ = false;
  bool ended_ = false;  // blkparse's statistics reached
  std::uint64_t line_ = 0;
  std::optional<std::string> pending_line_;  // the first line, read by Open
  std::uint64_t wait_clock_ns_ = 0;          // iolog v2: the last wait's time
  std::map<std::string, bool, std::less<>> files_;  // an iolog's: name, open
  std::vector<std::string> devices_;
};

// A whole trace, read once: what it holds, for the config check and before
// a replay.
struct TraceSummary {
  TraceFormat format = TraceFormat::kIologV2;
  char blkparse_action = 0;  // blkparse: 'D' or 'Q', the one replayed
  // The I/O replayed (of the device filter, and for blkparse the action).
  std::uint64_t reads = 0, writes = 0, trims = 0;
  std::uint64_t read_bytes = 0, write_bytes = 0, trim_bytes = 0;
  std::uint64_t flushes = 0;           // not replayed
  std::uint64_t first_write_line = 0;  // its first write or trim; 0: none
  std::uint64_t largest_io = 0;        // bytes, as recorded
  std::uint64_t first_time_ns = 0, last_time_ns = 0;  // of its I/O
  std::vector<std::string> devices;    // as BlockTraceReader::devices()

  std::uint64_t ios() const { return reads + writes + trims; }
  bool writes_data() const { return writes + trims > 0; }
  // The trace's own length: from its first I/O to its last.
  std::chrono::nanoseconds span() const {
    return std::chrono::nanoseconds(last_time_ns - first_time_ns);
  }
};

// Reads all of `path`, checking every line. A trace with no I/O (for the
// device filter `device`) is an error, one that names the devices it has.
Expected<TraceSummary> ScanTrace(const std::string& path, const std::string& device);

// How a trace's I/O lands on a target of `capacity` bytes (a multiple of
// the logical block size, which is a power of two):
//   1. aligned: the offset down and the end up to the logical block size
//      (an iolog may hold byte offsets);
//   2. folded: every byte b of the trace goes to b modulo the capacity, so
//      an I/O past the end lands at its offset modulo the capacity, and one
//      that straddles the end is cut there and goes on at the start;
//   3. split: into I/Os of at most max_io bytes (the engine's 2 MiB).
struct TraceMapping {
  std::uint64_t capacity = 0;
  std::uint32_t logical_block_size = 512;
  std::uint32_t max_io = 2u << 20;
};
struct MappedIo {
  TraceIo::Op op = TraceIo::Op::kRead;
  std::uint64_t offset = 0;
  std::uint32_t size = 0;
};
// Trace I/Os that mapping changed, each counted once per kind.
struct MappingCounts {
  std::uint64_t aligned = 0;  // offset or length not in whole logical blocks
  std::uint64_t folded = 0;   // reached past the capacity
  std::uint64_t split = 0;    // became more than one I/O
};
// Appends the target I/Os of `io` (none for a flush) to `out`.
void MapTraceIo(const TraceIo& io, const TraceMapping& mapping, std::vector<MappedIo>& out,
                MappingCounts& counts);

}  // namespace drivewatch::aging
