// SPDX-License-Identifier: Apache-2.0
// The bytes of a retention study record and the checks a record must pass
// before anything trusts it (DESIGN.md decision 12). Declared in
// aging/retention/retention_study.h; docs/retention.md describes the format.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

#include "aging/retention/retention_study.h"
#include "aging/safety/storage.h"
#include "config/util/crc32c.h"
#include "config/util/text.h"

namespace drivewatch::aging {
namespace {

// The first line of a version 2 record, before the 8 hex digits; the
// checksum covers every byte after that line, exactly as on disk.
constexpr std::string_view kChecksumHead = "{\n \"crc32c\": \"";
constexpr std::string_view kChecksumTail = "\",\n";
constexpr std::size_t kChecksumLine = kChecksumHead.size() + 8 + kChecksumTail.size();
constexpr int kRecordVersion = 2;
constexpr double kTwo63 = 9223372036854775808.0;

std::string Hex8(std::uint32_t v) { return util::Hex(v, 8); }

bool IsHex(std::string_view s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// A value as the message shows it: compact JSON, cut short.
std::string Shown(const Json* v) {
  if (v == nullptr) return "missing";
  std::string s = DumpJson(*v);
  if (s.size() > 48) s = s.substr(0, 45) + "...";
  return s;
}

// Walks a record and keeps the first problem found, naming the field by
// its path ("region.block_size", "verifies[2].ok").
class RecordCheck {
 public:
  explicit RecordCheck(std::string where) : where_(std::move(where)) {}

  bool ok() const { return problem_.empty(); }
  Status Result() const {
    if (ok()) return Ok{};
    return Error{EBADMSG, -1, where_ + ": damaged retention study record: " + problem_};
  }

  void Fail(const std::string& field, const Json* value, const std::string& expected) {
    if (ok()) problem_ = field + " is " + Shown(value) + " (expected " + expected + ")";
  }

  // `nullable`: null stands for absent (the reports recompute it).
  const Json* Object(const Json& parent, const std::string& prefix, const char* key,
                     bool required, bool nullable = false) {
    const Json* v = Find(parent, key);
    if ((v == nullptr && !required) || (v && nullable && v->is_null())) return nullptr;
    if (v == nullptr || !v->is_object()) {
      Fail(prefix + key, v, "an object");
      return nullptr;
    }
    return v;
  }

  // A whole number in [min, max]; nullopt (with the problem noted) when it
  // is not one, or when it is absent and required.
  std::optional<std::uint64_t> Whole(const Json& parent, const std::string& prefix,
                                     const char* key, bool required, std::uint64_t min,
                                     std::uint64_t max, const std::string& expected) {
    const Json* v = Find(parent, key);
    if (v == nullptr && !required) return std::nullopt;
    if (v == nullptr || !v->is_number()) {
      Fail(prefix + key, v, expected);
      return std::nullopt;
    }
    const double d = AsDouble(*v);
    if (!(d >= 0) || d >= kTwo63 || std::floor(d) != d) {
      Fail(prefix + key, v, expected);
      return std::nullopt;
    }
    const std::uint64_t n = AsUint(*v);
    if (n < min || n > max) {
      Fail(prefix + key, v, expected);
      return std::nullopt;
    }
    return n;
  }

  // A finite number in [min, max]; `nullable` also takes null (unknown).
  std::optional<double> Number(const Json& parent, const std::string& prefix, const char* key,
                               bool required, double min, double max,
                               const std::string& expected, bool nullable = false) {
    const Json* v = Find(parent, key);
    if ((v == nullptr && !required) || (v && nullable && v->is_null())) return std::nullopt;
    const double d = v && v->is_number() ? AsDouble(*v) : NAN;
    if (!(d >= min && d <= max)) {
      Fail(prefix + key, v, expected);
      return std::nullopt;
    }
    return d;
  }

  const std::string* String(const Json& parent, const std::string& prefix, const char* key,
                            bool required, bool nonempty = false) {
    const Json* v = Find(parent, key);
    if (v == nullptr && !required) return nullptr;
    if (v == nullptr || !v->is_string() || (nonempty && AsString(*v).empty())) {
      Fail(prefix + key, v, nonempty ? "a non-empty string" : "a string");
      return nullptr;
    }
    return &AsString(*v);
  }

  // An object whose members are all numbers (SMART snapshots and deltas).
  void Numbers(const Json& parent, const std::string& prefix, const char* key) {
    const Json* o = Object(parent, prefix, key, false);
    if (o == nullptr) return;
    for (const auto& [name, v] : Members(*o)) {
      if (!v.is_number()) Fail(prefix + key + "." + name, &v, "a number");
    }
  }

 private:
  std::string where_;
  std::string problem_;
};

constexpr double kMaxTime = 1e11;        // Unix seconds, year 5138
constexpr double kMaxSeconds = 1e11;     // a duration
constexpr double kMaxKelvin = 1000;

// A read's latency fields (PutLatency): the quantiles in seconds, the
// shares as ratios, the histogram's buckets an array.
void CheckLatency(RecordCheck& c, const Json& v, const std::string& p) {
  if (const Json* q = c.Object(v, p, "quantiles", false, true)) {
    for (const char* k : {"p50", "p99", "p99_9", "max"}) {
      c.Number(*q, p + "quantiles.", k, false, 0, kMaxSeconds, "seconds");
    }
  }
  for (const char* k : {"over_10ms_ratio", "over_100ms_ratio"}) {
    c.Number(v, p, k, false, 0, 1, "a ratio from 0 to 1");
  }
  if (const Json* lat = c.Object(v, p, "latency", false, true)) {
    if (const Json* b = Find(*lat, "buckets"); b && !b->is_array()) {
      c.Fail(p + "latency.buckets", b, "an array of [index, count] pairs");
    }
  }
}

// How a read's latency distribution was taken (recorded since the 4 KiB
// QD1 sample), and the pass's own latencies beside it.
void CheckLatencyMethod(RecordCheck& c, const Json& v, const std::string& p,
                        std::uint64_t blocks) {
  if (const Json* m = c.Object(v, p, "latency_method", false)) {
    const std::string mp = p + "latency_method.";
    c.Whole(*m, mp, "block_size", true, 512, std::uint64_t{1} << 30, "a block size in bytes");
    c.Whole(*m, mp, "queue_depth", true, 1, 65535, "a queue depth from 1 to 65535");
    c.Whole(*m, mp, "reads", true, 0, blocks, "a count of reads up to " + std::to_string(blocks));
    c.Whole(*m, mp, "failed_reads", false, 0, blocks,
            "a count of reads up to " + std::to_string(blocks));
    c.Whole(*m, mp, "region_blocks", true, blocks, blocks, std::to_string(blocks));
    if (const std::string* access = c.String(*m, mp, "access", true);
        access && *access != "random" && *access != "sequential") {
      c.Fail(mp + "access", Find(*m, "access"), "random or sequential");
    }
  }
  if (const Json* pass = c.Object(v, p, "pass_latency", false)) {
    const std::string pp = p + "pass_latency.";
    c.Whole(*pass, pp, "block_size", true, 512, std::uint64_t{1} << 30, "a block size in bytes");
    c.Whole(*pass, pp, "queue_depth", true, 1, 65535, "a queue depth from 1 to 65535");
    CheckLatency(c, *pass, pp);
  }
}

// A VERIFY object (RetentionVerifier::Finish plus what the phase adds),
// for a region of `blocks` study blocks starting at LBA `first`.
void CheckRead(RecordCheck& c, const Json& v, const std::string& at, std::uint64_t first,
               std::uint64_t blocks) {
  if (!v.is_object()) return c.Fail(at, &v, "an object");
  const std::string p = at + ".";
  const auto start = c.Number(v, p, "start", true, 0, kMaxTime, "Unix seconds");
  c.Number(v, p, "end", true, start.value_or(0), kMaxTime, "Unix seconds, not before start");
  const std::string* outcome = c.String(v, p, "outcome", false);
  if (outcome && *outcome != "completed" && *outcome != "aborted") {
    c.Fail(p + "outcome", Find(v, "outcome"), "\"completed\" or \"aborted\"");
  }
  c.Whole(v, p, "blocks", true, blocks, blocks,
          std::to_string(blocks) + ", the region's 4 KiB blocks");
  const auto ok = c.Whole(v, p, "ok", true, 0, blocks, "a count of blocks up to " + std::to_string(blocks));
  std::uint64_t bad_total = 0;
  if (const Json* bad = c.Object(v, p, "bad", true)) {
    for (const char* k : {"unreadable", "wrong_content", "misplaced", "stale"}) {
      bad_total += c.Whole(*bad, p + "bad.", k, true, 0, blocks,
                           "a count of blocks up to " + std::to_string(blocks))
                       .value_or(0);
    }
  }
  const auto checked = c.Whole(v, p, "checked", false, 0, blocks,
                               "a count of blocks up to " + std::to_string(blocks));
  if (!c.ok() || !ok) return;
  const std::uint64_t read = checked.value_or(*ok + bad_total);
  if (*ok + bad_total != read) {
    return c.Fail(p + "ok", Find(v, "ok"),
                  std::to_string(read - std::min(read, bad_total)) + ": ok plus bad (" +
                      std::to_string(bad_total) + ") must equal checked (" +
                      std::to_string(read) + ")");
  }
  if ((outcome == nullptr || *outcome == "completed") && read != blocks) {
    return c.Fail(p + (checked ? "checked" : "ok"), Find(v, checked ? "checked" : "ok"),
                  "a completed read to check all " + std::to_string(blocks) + " blocks");
  }
  if (const Json* ranges = Find(v, "ranges")) {
    if (!ranges->is_array()) return c.Fail(p + "ranges", ranges, "an array");
    std::size_t i = 0;
    for (const Json& r : Items(*ranges)) {
      const std::string rp = p + "ranges[" + std::to_string(i++) + "].";
      if (!r.is_object()) return c.Fail(rp.substr(0, rp.size() - 1), &r, "an object");
      const std::string* klass = c.String(r, rp, "class", true);
      if (klass && *klass != "unreadable" && *klass != "wrong_content" && *klass != "misplaced" &&
          *klass != "stale") {
        c.Fail(rp + "class", Find(r, "class"), "unreadable, wrong_content, misplaced or stale");
      }
      const std::string inside = "an LBA of the region, " + std::to_string(first) + " to " +
                                 std::to_string(first + blocks - 1);
      const auto lo = c.Whole(r, rp, "first_lba", true, first, first + blocks - 1, inside);
      c.Whole(r, rp, "last_lba", true, lo.value_or(first), first + blocks - 1,
              inside + ", not before first_lba");
    }
  }
  CheckLatency(c, v, p);
  CheckLatencyMethod(c, v, p, blocks);
  c.Numbers(v, p, "smart");
  c.Numbers(v, p, "smart_delta");
  for (const char* k : {"age_seconds", "powered_on_seconds", "powered_off_seconds",
                        "powered_on_equivalent_seconds"}) {
    c.Number(v, p, k, false, 0, kMaxSeconds, "seconds", true);
  }
  c.Number(v, p, "equivalent_age_seconds", false, 0, 1e300, "seconds", true);
}

// What the later checks of a study need from the earlier ones: its id and
// state when they are strings, and its region when that is sound.
struct StudyFacts {
  const std::string* id = nullptr;
  const std::string* state = nullptr;
  std::uint64_t offset = 0, length = 0;  // bytes; length 0: the region is not sound
};

// The study's name, id, state and the strings that name its drive.
void CheckIdentity(RecordCheck& c, const Json& study, const std::string& expected_name,
                   StudyFacts& facts) {
  c.Whole(study, "", "version", true, 1, kRecordVersion, "1 or 2");
  if (const std::string* name = c.String(study, "", "study", true, true); name) {
    // As the config allows study names: the name goes into file names and
    // into the first line of the text report.
    const bool safe = std::all_of(name->begin(), name->end(), [](char ch) {
      return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
             ch == '_' || ch == '-' || ch == '.';
    });
    if (!safe) {
      c.Fail("study", Find(study, "study"), "letters, digits, _, - and . only");
    } else if (!expected_name.empty() && *name != expected_name) {
      c.Fail("study", Find(study, "study"), "\"" + expected_name + "\", the file's name");
    }
  }
  const std::string* id = c.String(study, "", "id", true);
  if (id && (id->size() != 16 || !IsHex(*id) || *id == "0000000000000000")) {
    c.Fail("id", Find(study, "id"), "16 lower-case hex digits, not all zero");
  }
  const std::string* state = c.String(study, "", "state", true);
  if (state && *state != "writing" && *state != "baseline" && *state != "active" &&
      *state != "failed" && *state != "ended") {
    c.Fail("state", Find(study, "state"), "writing, baseline, active, failed or ended");
  }
  c.String(study, "", "reason", false);
  c.String(study, "", "target", true, true);
  for (const char* k : {"serial", "model", "firmware", "device", "end_reason"}) {
    c.String(study, "", k, false);
  }
  c.Whole(study, "", "nsid", false, 0, 0xffffffffu, "a namespace id from 0 to 4294967295");
  c.Number(study, "", "ended_at", state && *state == "ended", 0, kMaxTime,
           "Unix seconds (the time the study was ended)");
  facts.id = id;
  facts.state = state;
}

// The region the pattern covers, kept in `facts` when it is sound.
void CheckRegion(RecordCheck& c, const Json& study, StudyFacts& facts) {
  const Json* r = c.Object(study, "", "region", true);
  if (r == nullptr) return;
  c.Whole(*r, "region.", "block_size", true, kRetentionBlockSize, kRetentionBlockSize, "4096");
  const auto o = c.Whole(*r, "region.", "offset", true, 0, UINT64_MAX, "a byte offset, a multiple of 4096");
  const auto l = c.Whole(*r, "region.", "length", true, kRetentionBlockSize, UINT64_MAX,
                         "a length in bytes, a multiple of 4096 and at least 4096");
  if (o && *o % kRetentionBlockSize != 0) {
    c.Fail("region.offset", Find(*r, "offset"), "a multiple of 4096");
  } else if (l && *l % kRetentionBlockSize != 0) {
    c.Fail("region.length", Find(*r, "length"), "a multiple of 4096");
  } else if (o && l && *l > static_cast<std::uint64_t>(kTwo63) - *o) {
    c.Fail("region.length", Find(*r, "length"),
           "a region that ends before byte 2^63 (offset " + std::to_string(*o) + ")");
  } else if (o && l) {
    facts.offset = *o;
    facts.length = *l;
  }
}

void CheckPattern(RecordCheck& c, const Json& study, const StudyFacts& facts) {
  const Json* p = c.Object(study, "", "pattern", true);
  if (p == nullptr) return;
  c.Whole(*p, "pattern.", "version", true, kRetentionBlockVersion, kRetentionBlockVersion,
          std::to_string(kRetentionBlockVersion));
  if (const Json* seed = Find(*p, "seed"); seed == nullptr || !seed->is_number() ||
                                          AsUint(*seed, 1) != AsUint(*seed, 2)) {
    c.Fail("pattern.seed", seed, "a whole number from 0 to 2^64-1");
  }
  if (const std::string* sid = c.String(*p, "pattern.", "study_id", true);
      sid && facts.id && *sid != *facts.id) {
    c.Fail("pattern.study_id", Find(*p, "study_id"), "\"" + *facts.id + "\", the study's id");
  }
}

// How far the pattern is written: all of the region once the study is
// past writing.
void CheckWritten(RecordCheck& c, const Json& study, const StudyFacts& facts) {
  const bool past_writing =
      facts.state && (*facts.state == "baseline" || *facts.state == "active");
  const Json* w = c.Object(study, "", "written", true);
  if (w == nullptr || facts.length == 0) return;
  const std::uint64_t offset = facts.offset, length = facts.length;
  const auto start = c.Number(*w, "written.", "start", true, 0, kMaxTime, "Unix seconds");
  c.Number(*w, "written.", "end", past_writing, start.value_or(0), kMaxTime,
           "Unix seconds, not before written.start" +
               std::string(past_writing ? " (the study is past writing)" : ""));
  const std::string range = std::to_string(offset) + " to " + std::to_string(offset + length);
  const auto next = c.Whole(*w, "written.", "next_offset", true, offset, offset + length,
                            "a byte offset from " + range + ", a multiple of 4096");
  if (next && *next % kRetentionBlockSize != 0) {
    c.Fail("written.next_offset", Find(*w, "next_offset"), "a multiple of 4096");
  } else if (next && past_writing && *next != offset + length) {
    c.Fail("written.next_offset", Find(*w, "next_offset"),
           std::to_string(offset + length) + ", the region's end (the study is past writing)");
  }
}

void CheckAccounting(RecordCheck& c, const Json& study) {
  const Json* a = c.Object(study, "", "accounting", true);
  if (a == nullptr) return;
  const std::string p = "accounting.";
  c.Number(*a, p, "reference_temperature_k", true, 1, kMaxKelvin, "kelvin, 1 to 1000");
  c.Number(*a, p, "activation_energy_ev", true, 0.001, 10, "eV, 0.001 to 10");
  c.Number(*a, p, "storage_temperature_k", false, 1, kMaxKelvin, "kelvin, 1 to 1000, or null", true);
  c.Number(*a, p, "last_temperature_k", false, 1, kMaxKelvin, "kelvin, 1 to 1000", true);
  c.Number(*a, p, "last_sample", false, 0, kMaxTime, "Unix seconds", true);
  c.Number(*a, p, "powered_on_sampled_seconds", false, 0, kMaxSeconds, "seconds");
  c.Number(*a, p, "powered_on_equivalent_seconds", false, 0, 1e300, "seconds");
}

// The baseline (which an active study must have) and every verify, each
// against the region's blocks.
void CheckReads(RecordCheck& c, const Json& study, const StudyFacts& facts) {
  const std::uint64_t first = facts.offset / kRetentionBlockSize;
  const std::uint64_t blocks = facts.length / kRetentionBlockSize;
  if (const Json* b = Find(study, "baseline")) {
    CheckRead(c, *b, "baseline", first, blocks);
  } else if (facts.state && *facts.state == "active") {
    c.Fail("baseline", nullptr, "the baseline read of an active study");
  }
  if (const Json* vs = Find(study, "verifies")) {
    if (!vs->is_array()) {
      c.Fail("verifies", vs, "an array");
    } else {
      std::size_t i = 0;
      for (const Json& v : Items(*vs)) {
        CheckRead(c, v, "verifies[" + std::to_string(i++) + "]", first, blocks);
        if (!c.ok()) break;
      }
    }
  }
}

}  // namespace

Status ValidateStudy(const Json& study, const std::string& where,
                     const std::string& expected_name) {
  RecordCheck c(where);
  if (!study.is_object()) {
    c.Fail("the record", &study, "a JSON object");
    return c.Result();
  }
  StudyFacts facts;
  CheckIdentity(c, study, expected_name, facts);
  CheckRegion(c, study, facts);
  // The storage the region reaches (aging/safety/storage.h), recorded from this
  // version on; older records name only the device.
  if (const Json* st = Find(study, "storage")) {
    if (auto extents = StorageFromJson(*st, ""); !extents) {
      c.Fail("storage", st, "a list of storage extents: " + extents.error().message);
    }
  }
  CheckPattern(c, study, facts);
  CheckWritten(c, study, facts);
  c.Numbers(study, "", "smart_at_write");
  c.Numbers(study, "", "last_smart");
  CheckAccounting(c, study);
  if (const Json* e = Find(study, "events"); e && !e->is_array()) {
    c.Fail("events", e, "an array");
  }
  if (!c.ok() || facts.length == 0) return c.Result();
  CheckReads(c, study, facts);
  return c.Result();
}

std::string SerializeStudy(const Json& study) {
  Json record = Json::object();
  record["version"] = kRecordVersion;
  for (const auto& [k, v] : Members(study)) {
    if (k != "version" && k != "crc32c") record[k] = v;
  }
  // DumpJson(v, 1) starts "{\n" and holds at least "version": what follows the
  // checksum line is the rest of that text, byte for byte.
  const std::string body = DumpJson(record, 1).substr(2) + "\n";
  return std::string(kChecksumHead) + Hex8(Crc32c(body.data(), body.size())) +
         std::string(kChecksumTail) + body;
}

Expected<Json> ParseChecksummedRecord(std::string_view bytes, const std::string& path,
                                      std::string_view noun) {
  const auto damaged = [&](const std::string& problem) {
    return Error{EBADMSG, -1, path + ": damaged " + std::string(noun) + ": " + problem};
  };
  bool checksummed = false;
  if (bytes.starts_with(kChecksumHead) && bytes.size() >= kChecksumLine &&
      bytes.substr(kChecksumHead.size() + 8, kChecksumTail.size()) == kChecksumTail &&
      IsHex(bytes.substr(kChecksumHead.size(), 8))) {
    const std::string_view body = bytes.substr(kChecksumLine);
    const std::string computed = Hex8(Crc32c(body.data(), body.size()));
    const std::string_view recorded = bytes.substr(kChecksumHead.size(), 8);
    if (computed != recorded) {
      return damaged("checksum " + computed + " does not match the recorded crc32c \"" +
                     std::string(recorded) + "\" (the file changed after drivewatch wrote it)");
    }
    checksummed = true;
  }
  auto json = ParseJson(bytes);
  if (!json) return damaged("not JSON: " + json.error().message);
  if (!json->is_object()) {
    return damaged("the record is " + Shown(&*json) + " (expected an object)");
  }
  Json record = Json::object();
  for (const auto& [k, v] : Members(*json)) {
    if (k != "crc32c") record[k] = v;
  }
  if (!checksummed) {
    if (Find(*json, "crc32c")) {
      return damaged("crc32c is not on the record's first line, as drivewatch writes it "
                     "(the file was rewritten by another program)");
    }
    if (const Json* v = Find(*json, "version"); v == nullptr || !(*v == Json(1))) {
      return damaged("no crc32c checksum line (expected one in every record of version 2 "
                     "and later; version is " + Shown(v) + ")");
    }
  } else if (const Json* v = Find(*json, "version");
             v == nullptr || !(*v == Json(kRecordVersion))) {
    return damaged("version is " + Shown(v) + " (expected 2 in a record with a checksum)");
  }
  return record;
}

Expected<Json> ParseStudyRecord(std::string_view bytes, const std::string& path,
                                const std::string& name) {
  auto study = ParseChecksummedRecord(bytes, path, "retention study record");
  if (!study) return study.error();
  if (Status s = ValidateStudy(*study, path, name); !s) return s.error();
  return study;
}

}  // namespace drivewatch::aging
