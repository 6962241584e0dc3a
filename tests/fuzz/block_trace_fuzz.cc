// SPDX-License-Identifier: Apache-2.0
// The block trace reader (aging/engine/block_trace.h) on a file holding the fuzz
// bytes (a memfd, so no disk is touched): ScanTrace, then the trace streamed
// again as a replay streams it, each I/O mapped onto a small target.
// Properties: every event is within the reader's limits; the stream agrees
// with the scan (the same I/O, the same first write); every mapped I/O is
// inside the target, in whole logical blocks, at most 2 MiB, and the pieces
// of an I/O add up to its aligned length; every error names the file.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "aging/engine/block_trace.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace drivewatch::aging;
  const std::string path = FuzzFile(data, size);

  for (const std::string device : {"", "259,0", "/dev/nvme0n1"}) {
    const auto summary = ScanTrace(path, device);
    if (!summary) {
      DW_FUZZ_CHECK(summary.error().message.rfind(path + ":", 0) == 0,
                    "an error that does not name the trace");
      continue;
    }
    DW_FUZZ_CHECK(summary->ios() > 0, "a summary without I/O");
    DW_FUZZ_CHECK(summary->first_write_line == 0 || summary->writes_data(),
                  "a first write line without a write");
    DW_FUZZ_CHECK(summary->last_time_ns >= summary->first_time_ns, "a negative span");

    auto reader = BlockTraceReader::Open(path, TraceReadOptions{device, summary->blkparse_action});
    DW_FUZZ_CHECK(reader.ok(), "a trace that scanned does not open");
    const TraceMapping mapping{3u << 20, 4096, 2u << 20};
    MappingCounts counts;
    std::vector<MappedIo> pieces;
    std::uint64_t ios = 0, first_write = 0;
    for (;;) {
      auto io = (*reader)->Next();
      DW_FUZZ_CHECK(io.ok(), "a trace that scanned fails when streamed");
      if (!*io) break;
      const TraceIo& t = **io;
      DW_FUZZ_CHECK(t.time_ns <= kMaxTraceTimeNs, "a time past the limit");
      if (t.op == TraceIo::Op::kFlush) continue;
      DW_FUZZ_CHECK(t.length > 0 && t.length <= kMaxTraceIoBytes, "a length out of range");
      DW_FUZZ_CHECK(t.offset + t.length <= kMaxTraceOffset, "an offset past the limit");
      ++ios;
      if (t.op != TraceIo::Op::kRead && first_write == 0) first_write = t.line;
      pieces.clear();
      MapTraceIo(t, mapping, pieces, counts);
      std::uint64_t bytes = 0;
      for (const MappedIo& m : pieces) {
        DW_FUZZ_CHECK(m.size > 0 && m.size <= mapping.max_io, "a mapped size out of range");
        DW_FUZZ_CHECK(m.offset % 4096 == 0 && m.size % 4096 == 0, "a mapped I/O off a block");
        DW_FUZZ_CHECK(m.offset + m.size <= mapping.capacity, "a mapped I/O past the target");
        bytes += m.size;
      }
      const std::uint64_t aligned =
          (t.offset + t.length + 4095) / 4096 * 4096 - t.offset / 4096 * 4096;
      DW_FUZZ_CHECK(bytes == aligned, "the pieces do not add up to the I/O");
    }
    DW_FUZZ_CHECK(ios == summary->ios(), "the stream and the scan disagree on the I/O");
    DW_FUZZ_CHECK(first_write == summary->first_write_line,
                  "the stream and the scan disagree on the first write");
  }
  return 0;
}
