// SPDX-License-Identifier: Apache-2.0
// The endurance phase's parts that stand on their own (its story is
// aging/phases/endurance_phase.cc): the JESD219 workload, the write amplification
// of a pass, and the progress file that lets a test of months resume after a
// restart exactly where its last checkpoint left it (docs/aging.md,
// "endurance").
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "aging/engine/workload.h"
#include "aging/safety/storage.h"
#include "config/util/expected.h"
#include "config/util/json.h"

namespace drivewatch::aging {

class PhaseContext;

// JEDEC JESD219A's enterprise transfer sizes for a namespace of
// `logical_block_size`: a size that is not a whole number of logical blocks
// is rounded up to one, and equal sizes merge (on 4 KiB blocks 512 B to
// 3.5 KiB become 4 KiB: 77 % of the I/Os). Percents sum to 100.
std::vector<SizeShare> Jesd219Sizes(std::uint32_t logical_block_size);
// Its LBA skew: 50 % of accesses to the first 5 % of the region, 30 % to
// the next 15 %, 20 % to the remaining 80 %.
std::vector<LbaZone> Jesd219Zones();

// Physical (NAND) bytes over host bytes written in the same span; nullopt
// when either is unknown, not finite or not above 0 (no host writes, a
// counter that went backwards).
std::optional<double> WriteAmplification(double physical_bytes_delta, double host_bytes_delta);

// The drive's physical media bytes written so far, for the WAF: from the OCP
// SMART / Health Information Extended log (C0h) when the drive has it.
// nullopt when the target is not NVMe or the drive has no usable C0h log.
std::optional<double> ReadPhysicalMediaBytesWritten(PhaseContext& ctx);

// Where an endurance test is, saved after every chunk of writes (at least
// once a minute) in <state>/endurance/<phase>.progress.
struct EnduranceProgress {
  std::string workload;          // "sequential" or "jesd219"
  std::uint64_t capacity = 0;    // bytes one pass writes (one drive write)
  std::uint64_t seed = 0;        // the test's: data pattern and jesd219 offsets
  double started = 0;            // Unix time the test began
  std::uint64_t pass = 0;        // full passes done
  std::uint64_t pass_bytes = 0;  // written in the current pass
  // Chunks of the current pass done: with the seed and the pass, it seeds
  // the next chunk's random generator, so a resumed jesd219 pass draws what
  // it would have drawn.
  std::uint64_t chunk = 0;
  std::uint64_t host_bytes = 0;  // written by the test, all its runs
  std::uint64_t pass_start_host_bytes = 0;
  std::optional<double> pass_start_physical_bytes;
  std::uint8_t critical_warning = 0;  // bits set at the last checkpoint
  bool ended = false;                 // an end was reached: no more passes
  std::string end_reason;
  Json passes = Json::array();  // one record per completed pass
  // The storage the test writes (aging/safety/storage.h), recorded when it began:
  // its progress is refused on any other. Empty in files written before it
  // was kept; such a test records it at its next run.
  std::vector<StorageExtent> storage;
};

std::string EnduranceProgressPath(const std::string& state_directory, const std::string& phase);
Json ToJson(const EnduranceProgress& p);
// Checks every field: errors read "PATH: KEY: expected ...".
Expected<EnduranceProgress> ParseEnduranceProgress(const std::string& text,
                                                   const std::string& path);

// The largest progress file a run reads back. It grows by one pass record
// (about 200 bytes) a pass, so this holds some 20,000 passes.
inline constexpr std::size_t kMaxEnduranceProgressBytes = std::size_t{4} << 20;
// Reads the progress file at `path` and checks it (ParseEnduranceProgress);
// one larger than kMaxEnduranceProgressBytes is refused, unread, with
// errnum EFBIG and a message naming the file.
Expected<EnduranceProgress> LoadEnduranceProgress(const std::string& path);

// `drivewatch endurance reset NAME`: ends the test of endurance phase
// `phase` so that its next run starts a new one. Under the phase target's
// lock (EBUSY while a run holds it), a checkpoint a killed run left is
// recorded first (so its progress is written back and not lost), then the
// progress file is renamed aside to <progress>.reset-<UTC time>, kept, not
// deleted; a damaged one too (the reset is the way past it). The history
// keeps the test's runs and passes. Returns what was done, in words; ENOENT
// when there is no test to reset.
Expected<std::string> ResetEnduranceTest(const std::string& state_directory,
                                         const std::string& phase, const std::string& target);

}  // namespace drivewatch::aging
