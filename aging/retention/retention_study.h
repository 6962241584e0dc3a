// SPDX-License-Identifier: Apache-2.0
// A data-retention study's durable record and its time accounting
// (docs/retention.md). A study is one JSON file in the state directory,
// <state>/retention/<name>.json, replaced atomically on every change, so a
// crash leaves the previous version. The schema (version 2):
//
//   crc32c, version, study, id (16 hex digits), state (writing | baseline |
//   active | failed | ended), reason, ended_at, end_reason, target, serial,
//   nsid, model, firmware, device,
//   region {offset, length, block_size}, pattern {version, seed, study_id},
//   written {start, end, next_offset}, smart_at_write {...},
//   accounting {...}, events [...], baseline VERIFY, verifies [VERIFY...]
//
// with VERIFY as RetentionVerifier::Finish() builds it. LBAs are study
// blocks (offset / block_size) from the start of the device or file.
//
// The file stays plain JSON that jq reads. Its first line is
//   {\n "crc32c": "<8 hex digits>",\n
// and the CRC-32C covers every byte after that line exactly as it is on
// disk, so checking it needs no parse and re-dump. Version 1 records
// (written before the checksum) have no such line; they are still read,
// and checked field by field like every record.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "aging/retention/retention_block.h"
#include "aging/safety/storage.h"
#include "config/util/expected.h"
#include "config/util/json.h"
#include "probes/latency/latency_histogram.h"

namespace drivewatch::aging {

// The study's logical block: every block carries its header and checksum.
inline constexpr std::uint32_t kRetentionBlockSize = 4096;

std::string RetentionDirectory(const std::string& state_directory);
std::string StudyPath(const std::string& state_directory, const std::string& study);
// A missing study is an error with errnum ENOENT; a damaged one (bad
// checksum, not JSON, a field that fails ValidateStudy) one with EBADMSG
// whose message names the file, the field, the value and what was
// expected; an unreadable one carries read(2)'s errno (EACCES, EIO, ...).
Expected<Json> LoadStudy(const std::string& state_directory, const std::string& study);
// Writes `study` as a version 2 record with its checksum (SerializeStudy),
// atomically: temp file, fsync, rename, fsync of the directory.
Status SaveStudy(const std::string& state_directory, const Json& study);
// Every study in the state directory, by name; the ones that cannot be
// loaded (damaged or unreadable) are left out and reported in `problems`.
std::vector<Json> ListStudies(const std::string& state_directory,
                              std::vector<std::string>* problems = nullptr);
// Every <name>.json in the retention directory, sorted by name, loaded or
// with the error LoadStudy gave.
struct StudyFile {
  std::string name;
  Expected<Json> record;
};
std::vector<StudyFile> ReadStudies(const std::string& state_directory);

// The exact bytes SaveStudy writes: the checksum line, then `study` (its
// "version" set to 2, any "crc32c" member dropped) pretty-printed.
std::string SerializeStudy(const Json& study);
// A record's bytes as read from `path` (named in errors): the checksum
// checked when there is one (required from version 2 on), then the JSON,
// then ValidateStudy with `name`, the file's study name. The result has no
// "crc32c" member. Every failure is EBADMSG.
Expected<Json> ParseStudyRecord(std::string_view bytes, const std::string& path,
                                const std::string& name);
// The checksum line, the JSON and the version of any record SerializeStudy
// wrote (a study, a study register entry), without the study's own field
// checks. Errors read "PATH: damaged NOUN: ...", EBADMSG.
Expected<Json> ParseChecksummedRecord(std::string_view bytes, const std::string& path,
                                      std::string_view noun);
// The largest study record read back. A study grows by one read (the
// baseline, each verify: some 20 KB as written), so this holds several
// hundred verifies.
inline constexpr std::size_t kMaxStudyRecordBytes = std::size_t{16} << 20;
// Reads the study record at `path` and parses it (ParseStudyRecord). A file
// larger than kMaxStudyRecordBytes is damaged (EBADMSG) and never read
// whole; a missing one is ENOENT, an unreadable one read(2)'s errno.
Expected<Json> ReadStudyRecord(const std::string& path, const std::string& name);
// Every field of a study record, as docs/retention.md lists them: types,
// the region (block_size 4096, offset and length multiples of it, length
// > 0, no overflow), the pattern (study_id == id), how far the write got
// for the state, accounting numbers finite and in range, and the counts of
// the baseline and every verify (blocks == length / 4096, ok + bad ==
// checked, a completed read checked every block, ranges inside the
// region). `expected_name` empty: the name is not compared. Fails with
// EBADMSG: "<where>: damaged retention study record: region.block_size is
// 0 (expected 4096)". Whether the region fits the target needs the target:
// the phases check that when they open it.
Status ValidateStudy(const Json& study, const std::string& where = "retention study",
                     const std::string& expected_name = "");

// The pattern parameters recorded in a study.
RetentionPattern PatternOf(const Json& study);

// The SMART / Health counters a study compares (power_on_hours,
// power_cycles, unsafe_shutdowns, media_errors, error_log_entries,
// composite_temperature_k), read through admin passthrough on `fd`, an
// NVMe namespace; an error for anything else.
Expected<Json> ReadSmartSnapshot(int fd);
// after - before for each counter both have.
Json SmartDelta(const Json& before, const Json& after);

// Arrhenius acceleration of aging at `kelvin` relative to `reference_kelvin`:
// AF = exp(Ea / k * (1 / T_ref - 1 / T)), k = 8.617e-5 eV/K (NOTES.md).
double AccelerationFactor(double kelvin, double reference_kelvin, double ea_ev);

// Adds a temperature sample taken at `now` (Unix seconds) to the study's
// accounting: the time since the previous sample counts as powered-on time
// at the mean of the two temperatures, unless it is longer than `max_gap`
// (drivewatch or the drive was down: that time is not seen, and is
// accounted from the SMART power-on hours instead, see ComputeAges).
void AddTemperatureSample(Json& study, double now, double kelvin, double max_gap);

struct RetentionAges {
  double wall_seconds = 0;        // since the write ended
  double powered_on_seconds = 0;  // SMART power-on hours delta, else sampled
  std::optional<double> powered_off_seconds;   // wall - powered on, when SMART is known
  double powered_on_equivalent_seconds = 0;    // at the reference temperature
  std::optional<double> equivalent_age_seconds;  // needs the storage temperature
};
// The study's ages at `now`, with `smart_now` (may be null: then the
// powered-on time is what drivewatch sampled, and powered-off unknown) and
// the storage temperature in kelvin (NaN: unknown).
RetentionAges ComputeAges(const Json& study, double now, const Json* smart_now,
                          double storage_kelvin);

// Collects a verify pass's verdicts, read latencies and bad ranges, then
// builds its VERIFY object. Feed it every read of the region, in any
// order.
class RetentionVerifier {
 public:
  // `blocks`: how many blocks the region holds (the pass's denominator).
  RetentionVerifier(const RetentionPattern& pattern, std::uint64_t blocks);
  // One read of `size` bytes at byte `offset`; `result` as the workload
  // engine reports it (size, a short count, or -errno).
  void OnRead(std::uint64_t offset, const void* data, std::uint32_t size, int result,
              std::uint64_t latency_ns);
  // A block read again on its own after the read holding it failed, so
  // that only the blocks that really cannot be read count as unreadable.
  // Not a latency sample; it replaces that read's blocks in the counts.
  void OnRetry(std::uint64_t offset, const void* data, std::uint32_t size, int result);
  // The VERIFY object (without the SMART and age fields the phase adds).
  Json Finish(double start, double end, bool completed) const;
  std::uint64_t bad_blocks() const;
  std::uint64_t blocks_checked() const { return checked_; }

 private:
  void Bad(std::uint64_t lba, const std::string& klass, const Json& detail);
  void Classify(std::uint64_t offset, const void* data, std::uint32_t size, int result);

  RetentionPattern pattern_;
  std::uint64_t blocks_;
  std::uint64_t checked_ = 0;
  std::uint64_t ok_ = 0;
  std::uint64_t unreadable_ = 0, wrong_ = 0, misplaced_ = 0, stale_ = 0;
  std::vector<Json> ranges_;  // merged runs of one class
  bool truncated_ = false;
  LatencyHistogram latency_;
  std::uint64_t over_10ms_ = 0, over_100ms_ = 0;
};

// The read-latency distribution a read of the region records (its
// "latency", "quantiles", "over_10ms_ratio", "over_100ms_ratio") is taken
// as the reference report takes it: one block (4 KiB) at a time at queue
// depth 1, at random over the region, this many reads (all of the region's
// blocks when it holds fewer), so a p99.9 rests on 10 reads beyond it. The
// verify's own pass (every block, in reads of its block_size at its
// queue_depth) is kept beside it as "pass_latency", stated the same way;
// "latency_method" says how the distribution was taken.
inline constexpr std::uint64_t kLatencySampleReads = 10000;

// A read's latency fields as the study records them: "latency" (the
// histogram), "quantiles" (p50, p99, p99_9, max) and the shares of reads
// over 10 ms and 100 ms, put into `into`.
void PutLatency(Json& into, const LatencyHistogram& h, std::uint64_t over_10ms,
                std::uint64_t over_100ms);

// How a read's latency distribution was taken, in words: "4 KiB random
// reads at QD1, 10,000 of the region's 16,384 blocks", or for a read
// recorded before "latency_method" was, "the read's own 128 KiB... reads
// (size and queue depth not on record)".
std::string LatencyMethodText(const Json& read);

// A verify against the baseline: the change of p50, p99, p99_9 and max
// (seconds) and of the fractions of reads over 10 ms and 100 ms, when the
// two distributions were taken the same way (LatencyMethodText); else
// {"not_compared": why}.
Json CompareWithBaseline(const Json& baseline, const Json& verify);
// Whether two reads' latency distributions were taken the same way.
bool SameLatencyMethod(const Json& a, const Json& b);

// Holds a study for one writer: the phase that writes or verifies it, or
// the daemon adding a temperature sample. flock on
// <state>/retention/<study>.lock; released when destroyed.
class StudyLock {
 public:
  StudyLock() = default;
  StudyLock(StudyLock&& o) noexcept;
  StudyLock& operator=(StudyLock&& o) noexcept;
  ~StudyLock();

 private:
  friend Expected<StudyLock> LockStudy(const std::string&, const std::string&,
                                       std::chrono::milliseconds);
  int fd_ = -1;
};
// Waits up to `wait` for another holder to let go (the daemon's
// temperature sample holds it for milliseconds; a phase for its whole run),
// then fails with EBUSY.
Expected<StudyLock> LockStudy(const std::string& state_directory, const std::string& study,
                              std::chrono::milliseconds wait = std::chrono::milliseconds{0});

// The block device of NVMe namespace `nsid` of the controller with serial
// `serial`, whatever the kernel named it this boot ("/dev/nvme1n1"), from
// sysfs under `sysfs_root`; nullopt when it is not present.
std::optional<std::string> FindNvmeNamespace(const std::string& serial, std::uint32_t nsid,
                                             const std::string& sysfs_root = "/sys");

// Ends a study by the operator's word (`drivewatch retention end`): its
// state becomes "ended" (with ended_at, Unix seconds, and end_reason), so
// its region is no longer held against other phases' writes and it is
// verified no more. Its record and verifies stay. Ending an ended study is
// not an error; a missing one is ENOENT, a busy one EBUSY.
// Its entry in the host's study register (aging/retention/study_register.h) goes
// too.
Status EndStudy(const std::string& state_directory, const std::string& study,
                const std::string& reason,
                const std::string& study_register = SystemPaths{}.study_register);

// "0123456789abcdef".
std::string StudyIdHex(std::uint64_t id);
std::uint64_t ParseStudyId(const std::string& hex);

}  // namespace drivewatch::aging
