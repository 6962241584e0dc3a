// SPDX-License-Identifier: Apache-2.0
// The phase history: the long-term record of every heavy-phase run, kept in
// the state directory because Prometheus often keeps only weeks. One file,
// append-only, one record per run (DESIGN.md decision 7):
//
//   DWH1 <length> <crc32c> <json>\n
//
// <length> is the byte length of <json> in decimal, <crc32c> the CRC-32C
// (Castagnoli) of <json> as 8 lower-case hex digits, <json> a single-line
// object (config/util/json.h). A record is appended with one write(2) and made
// durable with fdatasync(2) before Append returns; the file's directory is
// fsynced when the file is created.
//
// A power cut can leave the last record torn (partly written). Readers skip
// a torn last record and say so; Append first cuts a torn tail back to the
// last whole record, so one crash never poisons later appends. A record in
// the middle whose checksum fails is reported and skipped, never silently
// taken.
//
// A record's JSON never holds a raw newline, so records are lines. Reading
// goes line by line and resynchronizes after damage at the next line that
// is an intact record (header, length, newline and checksum all hold) or
// that starts "DWH1 "; an intact record glued to the end of a damaged line
// is found by its magic (so a flipped newline loses only the record it
// ended).
//
// A record is read back only when its JSON is at most kMaxRecordBytes
// long and none of its objects has more than kMaxJsonObjectMembers
// members; a larger one is reported as damaged. Reading streams the file
// and holds at most one record's worth of a line, so a huge line (a
// damaged file, a hand edit) costs neither memory nor time beyond reading
// past it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "config/util/crc32c.h"
#include "config/util/expected.h"
#include "config/util/json.h"

namespace drivewatch::aging {

// The longest record JSON readers take. drivewatch's largest records are
// a long fill's 1 s throughput series (about 20 bytes a second: some 14 h
// fit) and an endurance test's passes (about 200 bytes each: some 5,000).
inline constexpr std::size_t kMaxRecordBytes = std::size_t{1} << 20;
// The largest phase checkpoint recovery reads (it becomes a record).
inline constexpr std::size_t kMaxCheckpointBytes = 4 * kMaxRecordBytes;

// The damaged stretches a read lists one by one; past this many it only
// counts them (a file of a million broken lines must not cost a million
// messages).
inline constexpr std::size_t kMaxDamageListed = 1000;

// What a read found besides the good records.
struct HistoryDamage {
  // Bytes after the last good record that do not form a whole record (a
  // torn append); 0 normally.
  std::size_t torn_tail_bytes = 0;
  // Damaged stretches before the torn tail: records whose header, length,
  // checksum or JSON failed, or that are larger than a record may be, with
  // their line (1-based) and byte offset, e.g. "line 12 (offset 4096):
  // checksum 1a2b3c4d, expected 5e6f7a8b" (computed, then the recorded one).
  // Reading goes on at the next record. At most kMaxDamageListed of them;
  // the rest are counted in damaged_unlisted.
  std::vector<std::string> damaged;
  std::uint64_t damaged_unlisted = 0;
};

struct HistoryContents : HistoryDamage {
  std::vector<Json> records;  // the good ones, in file order
};

// The line Append writes for `record`: "DWH1 <length> <crc32c> <json>\n".
std::string FramedRecord(const Json& record);

// Appends from several HistoryFile objects or processes (the daemon and a
// foreground `drivewatch phase run`) on the same file are serialized with
// flock(2). One object is not safe to use from two threads at once.
class HistoryFile {
 public:
  explicit HistoryFile(std::string path) : path_(std::move(path)) {}
  const std::string& path() const { return path_; }

  // Appends `record` (an object) durably. Creates the file (mode 0640) on
  // first use. Errors name the file and the failing call, e.g.
  // "/var/lib/drivewatch/history.log: write: No space left on device"; the
  // file is then left as it was before the call (a partial write is cut
  // back; a torn tail it found is gone either way). A torn tail is cut off
  // first, silently: see repaired_bytes().
  // Only the first Append (or one after another writer grew the file)
  // reads the file to find its tail; later ones trust the remembered end.
  Status Append(const Json& record);

  // Bytes of torn tail the last Append cut off (0 normally), so the caller
  // can log the repair.
  std::size_t repaired_bytes() const { return repaired_bytes_; }

  // Reads every record. A missing file is an empty history, not an error.
  Expected<HistoryContents> Read() const;

  // Streams the file: calls `each` with every good record in file order,
  // holding one record at a time (a history of years is read in the
  // memory of one record), and returns what was left out. A missing file
  // is an empty history.
  Expected<HistoryDamage> ForEach(const std::function<void(Json&&)>& each) const;

 private:
  Status CutTornTail(int fd, std::uint64_t size);

  std::string path_;
  // The file's identity and size when it last ended with a whole record
  // (verified_end_ < 0: not checked yet), so Append rereads only when
  // something else changed the file.
  std::int64_t verified_end_ = -1;
  std::uint64_t verified_dev_ = 0;
  std::uint64_t verified_ino_ = 0;
  std::size_t repaired_bytes_ = 0;
};


// Besides one record per run, a run may put steps of itself on record
// (endurance: one per pass, PhaseContext::RecordStep): those carry
// "record": "step", the run's id, phase, kind, target and serial, "time"
// (Unix seconds), "test" (what the steps belong to: an endurance test spans
// runs) and "step" (its number). A record without "record" is a run's.
// Their fields, and the one reader of each: aging/history/run_record.h.
bool IsRunRecord(const Json& record);
bool IsStepRecord(const Json& record);

// How `drivewatch history` prints records.
enum class HistoryFormat { kTable, kJson, kCsv };
struct HistoryFilter {
  std::string serial;  // empty: any
  std::string phase;   // empty: any (matches the record's "phase" name)
};
// table: one line per run with the common columns (start time, phase,
// kind, target, serial, outcome, duration) and its result values as
// key=value; json: one object per line (JSON Lines); csv: RFC 4180 with a
// header, one column per field seen in any selected record (nested
// objects flattened as a.b, arrays left out).
std::string RenderHistory(const std::vector<Json>& records,
                          const HistoryFilter& filter, HistoryFormat format);

}  // namespace drivewatch::aging
