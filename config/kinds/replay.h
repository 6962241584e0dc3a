// SPDX-License-Identifier: Apache-2.0
// The replay kind (its story: aging/phases/replay_phase.cc).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "config/kinds/phase_key.h"

namespace drivewatch::config {

// replay's keys (docs/aging.md "replay").
inline constexpr PhaseKey kTraceKey{
    .name = "trace", .type = PhaseKeyType::kPath,
    .missing = "missing trace (expected the absolute path of a block trace: fio's iolog "
               "version 2 or 3, or blkparse's default output)",
    .doc = "The block trace replayed: fio's iolog version 2 or 3, or the text blkparse "
           "prints, told apart by its first line. Read when the config is loaded and again "
           "when the phase runs."};
inline constexpr PhaseKey kTraceDeviceKey{
    .name = "trace_device", .type = PhaseKeyType::kText,
    .doc = "Replays only this device's or file's I/O: blkparse's \"MAJ,MIN\" (such as "
           "\"259,0\") or a file name of an iolog; unset: every device and file of the trace, "
           "all onto the one target."};
inline constexpr PhaseKey kReplaySpeedKey{
    .name = "replay_speed", .type = PhaseKeyType::kReplaySpeed, .min = 0.001, .max = 1000,
    .expected = "\"recorded\", \"max\", or a number from 0.001 to 1000 that scales the "
                "recorded rate",
    .doc = "\"recorded\": each I/O is due at its recorded time from the start; \"max\": as "
           "fast as queue_depth allows; a number scales the recorded rate (2: twice as fast)."};


// replay_speed: the recorded timing, scaled, or none.
struct ReplaySpeed {
  // "max": as fast as queue_depth allows, the recorded times ignored.
  bool max = false;
  // Otherwise the recorded rate times this ("recorded" is 1; 2 is twice as
  // fast, each I/O due at half its recorded time from the start).
  double scale = 1;
  bool operator==(const ReplaySpeed&) const = default;
};

// What a replay phase's trace held when the config was loaded: not a key,
// filled by the loader's TraceInspector (config.h), which reads the trace
// on the aging side. Until a trace has been read it counts as writing.
struct TraceFacts {
  bool read = false;
  // The line of the trace's first write or trim; 0 when it has none.
  std::uint64_t first_write_line = 0;
  bool operator==(const TraceFacts&) const = default;
};

// replay: replays a block trace onto the target, folded onto its capacity,
// with its recorded timing, scaled, or as fast as queue_depth allows. It
// writes when its trace writes or trims (Writes()): then the interlocks and
// destroy_data apply as for any writing kind; a trace of reads only needs
// the target's serial.
struct ReplayParams {
  static constexpr std::string_view kName = "replay";
  // May write: whether it does is Writes(), per phase.
  static constexpr bool kWrites = true;
  std::string trace;
  std::string trace_device;  // "": every device and file
  ReplaySpeed replay_speed;
  std::uint32_t queue_depth = 32;
  TraceFacts trace_facts;

  bool Writes() const { return !trace_facts.read || trace_facts.first_write_line != 0; }

  template <class Self, class F>
  static void Keys(Self& p, F&& f) {
    f(kTraceKey, p.trace);
    f(kTraceDeviceKey, p.trace_device);
    f(kReplaySpeedKey, p.replay_speed);
    f(kQueueDepthKey, p.queue_depth);
  }
  bool operator==(const ReplayParams&) const = default;
};

}  // namespace drivewatch::config
