// SPDX-License-Identifier: Apache-2.0
#include "aging/retention/retention_study.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <utility>

#include "aging/retention/study_register.h"
#include "config/util/durable_file.h"
#include "config/util/sys.h"
#include "config/util/text.h"
#include "probes/drive/identify.h"
#include "probes/drive/namespace_identity.h"
#include "probes/drive/nvme_drive_layer.h"
#include "probes/drive/smart_log.h"

namespace drivewatch::aging {
namespace {

constexpr double kBoltzmannEvPerK = 8.617e-5;
// Bad blocks remembered one by one; beyond this the counts stay exact but
// the ranges are cut short (ranges_truncated).
constexpr std::size_t kMaxBadEntries = 100'000;
constexpr std::size_t kMaxRanges = 1'000;

double Number(const Json* v, double fallback = 0) { return v ? AsDouble(*v, fallback) : fallback; }

const Json* Path(const Json& j, std::initializer_list<const char*> keys) {
  const Json* at = &j;
  for (const char* k : keys) {
    at = Find(*at, k);
    if (at == nullptr) return nullptr;
  }
  return at;
}

}  // namespace

std::string RetentionDirectory(const std::string& state_directory) {
  return state_directory + "/retention";
}

std::string StudyPath(const std::string& state_directory, const std::string& study) {
  return RetentionDirectory(state_directory) + "/" + study + ".json";
}

Expected<Json> LoadStudy(const std::string& state_directory, const std::string& study) {
  const std::string path = StudyPath(state_directory, study);
  auto record = ReadStudyRecord(path, study);
  if (!record && record.error().errnum == ENOENT) {
    return Error{ENOENT, -1, "no retention study \"" + study + "\" (" + path + " does not exist)"};
  }
  return record;
}

Expected<Json> ReadStudyRecord(const std::string& path, const std::string& name) {
  auto text = ReadWholeFile(path, kMaxStudyRecordBytes, "a retention study record");
  if (!text) {
    const Error& e = text.error();
    if (e.errnum == EFBIG && e.message.starts_with(path + ": ")) {
      return Error{EBADMSG, -1,
                   path + ": damaged retention study record: " + e.message.substr(path.size() + 2)};
    }
    return e;
  }
  return ParseStudyRecord(*text, path, name);
}

Status SaveStudy(const std::string& state_directory, const Json& study) {
  if (Status s = EnsureDirectory(RetentionDirectory(state_directory)); !s) return s;
  const Json* name = Find(study, "study");
  if (name == nullptr || AsString(*name).empty()) {
    return Error{EINVAL, -1, "a retention study needs a name"};
  }
  return WriteFileAtomically(StudyPath(state_directory, AsString(*name)), SerializeStudy(study));
}

std::vector<StudyFile> ReadStudies(const std::string& state_directory) {
  std::vector<std::string> names;
  if (DIR* d = opendir(RetentionDirectory(state_directory).c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string n = e->d_name;
      if (n.size() > 5 && n.ends_with(".json")) names.push_back(n.substr(0, n.size() - 5));
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  std::vector<StudyFile> out;
  for (const std::string& n : names) out.push_back(StudyFile{n, LoadStudy(state_directory, n)});
  return out;
}

std::vector<Json> ListStudies(const std::string& state_directory,
                              std::vector<std::string>* problems) {
  std::vector<Json> out;
  for (StudyFile& f : ReadStudies(state_directory)) {
    if (f.record) {
      out.push_back(std::move(*f.record));
    } else if (problems) {
      problems->push_back(f.record.error().message);
    }
  }
  return out;
}

void PutLatency(Json& into, const LatencyHistogram& h, std::uint64_t over_10ms,
                std::uint64_t over_100ms) {
  Json lat = Json::object();
  Json buckets = Json::array();
  for (const auto& [index, n] : h.NonZero()) {
    Json pair = Json::array();
    pair.push_back(std::uint64_t{index});
    pair.push_back(std::uint64_t{n});
    buckets.push_back(std::move(pair));
  }
  lat["buckets"] = buckets;
  lat["sum_ns"] = h.sum_ns();
  lat["max_ns"] = h.max_ns();
  lat["count"] = h.count();
  into["latency"] = lat;
  Json q = Json::object();
  q["p50"] = h.Quantile(0.5);
  q["p99"] = h.Quantile(0.99);
  q["p99_9"] = h.Quantile(0.999);
  q["max"] = h.MaxSeconds();
  into["quantiles"] = q;
  const double reads = static_cast<double>(h.count());
  into["over_10ms_ratio"] = reads > 0 ? static_cast<double>(over_10ms) / reads : 0.0;
  into["over_100ms_ratio"] = reads > 0 ? static_cast<double>(over_100ms) / reads : 0.0;
}

namespace {

std::string SizeText(std::uint64_t bytes) {
  if (bytes % 1024 == 0 && bytes >= 1024) return std::to_string(bytes / 1024) + " KiB";
  return std::to_string(bytes) + " bytes";
}

}  // namespace

std::string LatencyMethodText(const Json& read) {
  const Json* m = Find(read, "latency_method");
  if (m == nullptr || !m->is_object()) {
    return "its own pass over every block, block size and queue depth not on record";
  }
  const Json* bs = Find(*m, "block_size");
  const Json* qd = Find(*m, "queue_depth");
  const Json* blocks = Find(*m, "region_blocks");
  std::string out = (bs ? SizeText(AsUint(*bs)) : std::string("?")) + " random reads at QD" +
                    (qd ? std::to_string(AsUint(*qd)) : std::string("?")) +
                    " over a sample of the region";
  if (blocks) out += " (of its " + std::to_string(AsUint(*blocks)) + " blocks)";
  return out;
}

bool SameLatencyMethod(const Json& a, const Json& b) {
  const Json* ma = Find(a, "latency_method");
  const Json* mb = Find(b, "latency_method");
  if (ma == nullptr || mb == nullptr) return ma == mb;
  for (const char* key : {"block_size", "queue_depth", "access"}) {
    const Json* x = Find(*ma, key);
    const Json* y = Find(*mb, key);
    if (x == nullptr || y == nullptr || !(*x == *y)) return false;
  }
  return true;
}

Json CompareWithBaseline(const Json& baseline, const Json& verify) {
  Json delta = Json::object();
  if (!SameLatencyMethod(baseline, verify)) {
    delta["not_compared"] = "the baseline's latency is " + LatencyMethodText(baseline) +
                            ", this verify's " + LatencyMethodText(verify) +
                            ": not the same measure";
    return delta;
  }
  for (const char* q : {"p50", "p99", "p99_9", "max"}) {
    const Json* b = Path(baseline, {"quantiles", q});
    const Json* v = Path(verify, {"quantiles", q});
    if (b && v) delta[q] = AsDouble(*v) - AsDouble(*b);
  }
  for (const char* r : {"over_10ms_ratio", "over_100ms_ratio"}) {
    const Json* b = Find(baseline, r);
    const Json* v = Find(verify, r);
    if (b && v) delta[r] = AsDouble(*v) - AsDouble(*b);
  }
  return delta;
}

StudyLock::StudyLock(StudyLock&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
StudyLock& StudyLock::operator=(StudyLock&& o) noexcept {
  std::swap(fd_, o.fd_);
  return *this;
}
StudyLock::~StudyLock() {
  if (fd_ >= 0) ::close(fd_);
}

Expected<StudyLock> LockStudy(const std::string& state_directory, const std::string& study,
                              std::chrono::milliseconds wait) {
  if (Status s = EnsureDirectory(RetentionDirectory(state_directory)); !s) return s.error();
  const std::string path = RetentionDirectory(state_directory) + "/" + study + ".lock";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0640);
  if (fd < 0) return util::SysError(errno, path);
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK &&
         std::chrono::steady_clock::now() < deadline) {
    ::usleep(20'000);
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd);
    return Error{err == EWOULDBLOCK ? EBUSY : err, -1,
                 "retention study \"" + study + "\" is busy (another phase or drivewatch "
                 "process holds " + path + ")"};
  }
  StudyLock lock;
  lock.fd_ = fd;
  return lock;
}

std::optional<std::string> FindNvmeNamespace(const std::string& serial, std::uint32_t nsid,
                                             const std::string& sysfs_root) {
  DIR* d = opendir((sysfs_root + "/class/block").c_str());
  if (d == nullptr) return std::nullopt;
  std::optional<std::string> found;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    // Namespaces (nvme0n1), not partitions (nvme0n1p1).
    if (name.rfind("nvme", 0) != 0 || name.find('n', 4) == std::string::npos ||
        name.find('p', 4) != std::string::npos) {
      continue;
    }
    auto dev = ReadWholeFile(sysfs_root + "/class/block/" + name + "/dev");
    if (!dev) continue;
    unsigned major_no = 0, minor_no = 0;
    if (std::sscanf(dev->c_str(), "%u:%u", &major_no, &minor_no) != 2) continue;
    auto id = ReadNamespaceIdentity(sysfs_root, makedev(major_no, minor_no));
    if (id && id->serial == serial && id->nsid == nsid) {
      found = "/dev/" + name;
      break;
    }
  }
  closedir(d);
  return found;
}

Status EndStudy(const std::string& state_directory, const std::string& study,
                const std::string& reason, const std::string& study_register) {
  auto lock = LockStudy(state_directory, study, std::chrono::seconds{30});
  if (!lock) return lock.error();
  auto loaded = LoadStudy(state_directory, study);
  if (!loaded) return loaded.error();
  Json record = *loaded;
  if (Find(record, "state") && AsString(*Find(record, "state")) == "ended") return Ok{};
  record["state"] = "ended";
  record["ended_at"] =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  record["end_reason"] = reason;
  if (Status s = SaveStudy(state_directory, record); !s) return s;
  // The record says "ended" now, which is what the write gate reads; the
  // entry is only the register's pointer to it.
  if (const Json* id = Find(record, "id")) (void)UnregisterStudy(study_register, AsString(*id));
  return Ok{};
}

std::string StudyIdHex(std::uint64_t id) { return util::Hex(id, 16); }

std::uint64_t ParseStudyId(const std::string& hex) {
  return std::strtoull(hex.c_str(), nullptr, 16);
}

RetentionPattern PatternOf(const Json& study) {
  RetentionPattern p{};
  p.study_id = ParseStudyId(
      Path(study, {"pattern", "study_id"}) ? AsString(*Path(study, {"pattern", "study_id"})) : "");
  p.seed = Path(study, {"pattern", "seed"}) ? AsUint(*Path(study, {"pattern", "seed"})) : 0;
  p.block_size = static_cast<std::uint32_t>(
      Path(study, {"region", "block_size"})
          ? AsUint(*Path(study, {"region", "block_size"}), kRetentionBlockSize)
          : kRetentionBlockSize);
  return p;
}

Expected<Json> ReadSmartSnapshot(int fd) {
  auto smart = ReadSmartLog(*NvmeControllerOn(fd));
  if (!smart) return smart.error();
  auto u = [](unsigned __int128 v) {
    return static_cast<std::uint64_t>(std::min<unsigned __int128>(v, ~std::uint64_t{0}));
  };
  Json j = Json::object();
  j["power_on_hours"] = u(smart->power_on_hours);
  j["power_cycles"] = u(smart->power_cycles);
  j["unsafe_shutdowns"] = u(smart->unsafe_shutdowns);
  j["media_errors"] = u(smart->media_errors);
  j["error_log_entries"] = u(smart->error_log_entries);
  j["composite_temperature_k"] = static_cast<std::uint64_t>(smart->composite_temperature_k);
  return j;
}

Json SmartDelta(const Json& before, const Json& after) {
  Json d = Json::object();
  for (const char* k : {"power_on_hours", "power_cycles", "unsafe_shutdowns", "media_errors",
                        "error_log_entries"}) {
    const Json* a = Find(before, k);
    const Json* b = Find(after, k);
    if (a && b) {
      d[k] = static_cast<std::int64_t>(AsUint(*b)) - static_cast<std::int64_t>(AsUint(*a));
    }
  }
  return d;
}

double AccelerationFactor(double kelvin, double reference_kelvin, double ea_ev) {
  return std::exp(ea_ev / kBoltzmannEvPerK * (1.0 / reference_kelvin - 1.0 / kelvin));
}

void AddTemperatureSample(Json& study, double now, double kelvin, double max_gap) {
  Json& a = study["accounting"];
  const bool sampled_before =
      Find(a, "last_sample") != nullptr && !Find(a, "last_sample")->is_null();
  const double last = Number(Find(a, "last_sample"), 0);
  const double last_k = Number(Find(a, "last_temperature_k"), 0);
  const double dt = now - last;
  if (sampled_before && last_k > 0 && dt > 0 && dt <= max_gap) {
    const double ref = Number(Find(a, "reference_temperature_k"), 303.15);
    const double ea = Number(Find(a, "activation_energy_ev"), 1.1);
    const double mean_k = (kelvin + last_k) / 2;
    a["powered_on_sampled_seconds"] = Number(Find(a, "powered_on_sampled_seconds")) + dt;
    a["powered_on_equivalent_seconds"] =
        Number(Find(a, "powered_on_equivalent_seconds")) + dt * AccelerationFactor(mean_k, ref, ea);
  }
  a["last_sample"] = now;
  a["last_temperature_k"] = kelvin;
}

RetentionAges ComputeAges(const Json& study, double now, const Json* smart_now,
                          double storage_kelvin) {
  RetentionAges ages;
  const double written = Number(Path(study, {"written", "end"}), now);
  ages.wall_seconds = std::max(0.0, now - written);
  const Json* a = Find(study, "accounting");
  const double sampled = a ? Number(Find(*a, "powered_on_sampled_seconds")) : 0;
  const double sampled_eq = a ? Number(Find(*a, "powered_on_equivalent_seconds")) : 0;
  const double ref = a ? Number(Find(*a, "reference_temperature_k"), 303.15) : 303.15;
  const double ea = a ? Number(Find(*a, "activation_energy_ev"), 1.1) : 1.1;
  ages.powered_on_seconds = sampled;
  const Json* at_write = Find(study, "smart_at_write");
  bool smart_known = false;
  if (smart_now && at_write && Find(*at_write, "power_on_hours") &&
      Find(*smart_now, "power_on_hours")) {
    const double hours = static_cast<double>(AsUint(*Find(*smart_now, "power_on_hours"))) -
                         static_cast<double>(AsUint(*Find(*at_write, "power_on_hours")));
    // Power-on hours count whole hours: never below what was sampled.
    ages.powered_on_seconds = std::max(sampled, std::max(0.0, hours) * 3600);
    smart_known = true;
  }
  ages.powered_on_seconds = std::min(ages.powered_on_seconds, ages.wall_seconds);
  // Powered-on time drivewatch did not sample counts at the mean factor of
  // the time it did (1 when it sampled nothing).
  const double mean_af = sampled > 0 ? sampled_eq / sampled : 1.0;
  ages.powered_on_equivalent_seconds =
      sampled_eq + std::max(0.0, ages.powered_on_seconds - sampled) * mean_af;
  if (smart_known) {
    ages.powered_off_seconds = std::max(0.0, ages.wall_seconds - ages.powered_on_seconds);
    if (storage_kelvin == storage_kelvin) {
      ages.equivalent_age_seconds =
          ages.powered_on_equivalent_seconds +
          *ages.powered_off_seconds * AccelerationFactor(storage_kelvin, ref, ea);
    }
  }
  return ages;
}

RetentionVerifier::RetentionVerifier(const RetentionPattern& pattern, std::uint64_t blocks)
    : pattern_(pattern), blocks_(blocks) {}

void RetentionVerifier::Bad(std::uint64_t lba, const std::string& klass, const Json& detail) {
  if (ranges_.size() >= kMaxBadEntries) {
    truncated_ = true;
    return;
  }
  Json r = Json::object();
  r["class"] = klass;
  r["first_lba"] = lba;
  r["last_lba"] = lba;
  for (const auto& [k, v] : Members(detail)) r[k] = v;
  ranges_.push_back(std::move(r));
}

void RetentionVerifier::OnRead(std::uint64_t offset, const void* data, std::uint32_t size,
                               int result, std::uint64_t latency_ns) {
  checked_ += size / pattern_.block_size;
  if (result == static_cast<int>(size)) {
    latency_.Add(latency_ns);
    if (latency_ns > 10'000'000) ++over_10ms_;
    if (latency_ns > 100'000'000) ++over_100ms_;
  }
  Classify(offset, data, size, result);
}

void RetentionVerifier::OnRetry(std::uint64_t offset, const void* data, std::uint32_t size,
                                int result) {
  checked_ += size / pattern_.block_size;
  Classify(offset, data, size, result);
}

void RetentionVerifier::Classify(std::uint64_t offset, const void* data, std::uint32_t size,
                                 int result) {
  const std::uint32_t bs = pattern_.block_size;
  const std::uint64_t first = offset / bs;
  const std::uint64_t n = size / bs;
  if (result != static_cast<int>(size)) {
    // The whole read failed (or came back short): every block in it is
    // unreadable; it is not a latency sample.
    unreadable_ += n;
    Json detail = Json::object();
    detail["error"] = result < 0 ? std::string(std::strerror(-result))
                                 : "short read, " + std::to_string(result) + " of " +
                                       std::to_string(size) + " bytes";
    for (std::uint64_t i = 0; i < n; ++i) Bad(first + i, "unreadable", detail);
    return;
  }
  ok_ += CheckRetentionBlocks(pattern_, first, n, data,
                              [&](std::size_t i, const BlockCheck& c) {
                                Json detail = Json::object();
                                switch (c.verdict) {
                                  case BlockVerdict::kWrongContent:
                                    ++wrong_;
                                    detail["first_difference"] = std::uint64_t{c.first_difference};
                                    Bad(first + i, "wrong_content", detail);
                                    break;
                                  case BlockVerdict::kMisplaced:
                                    ++misplaced_;
                                    detail["found_lba"] = c.found_lba;
                                    Bad(first + i, "misplaced", detail);
                                    break;
                                  case BlockVerdict::kStale:
                                    ++stale_;
                                    detail["found_study"] = StudyIdHex(c.found_study);
                                    Bad(first + i, "stale", detail);
                                    break;
                                  case BlockVerdict::kOk:
                                    break;
                                }
                              });
}

std::uint64_t RetentionVerifier::bad_blocks() const {
  return unreadable_ + wrong_ + misplaced_ + stale_;
}

Json RetentionVerifier::Finish(double start, double end, bool completed) const {
  Json v = Json::object();
  v["start"] = start;
  v["end"] = end;
  v["outcome"] = completed ? "completed" : "aborted";
  v["blocks"] = blocks_;
  v["checked"] = checked_;
  v["ok"] = ok_;
  Json& bad = v["bad"];
  bad = Json::object();
  bad["unreadable"] = unreadable_;
  bad["wrong_content"] = wrong_;
  bad["misplaced"] = misplaced_;
  bad["stale"] = stale_;
  // Runs of one class over consecutive LBAs become one range.
  std::vector<const Json*> sorted;
  for (const Json& r : ranges_) sorted.push_back(&r);
  std::sort(sorted.begin(), sorted.end(), [](const Json* a, const Json* b) {
    return AsUint(*Find(*a, "first_lba")) < AsUint(*Find(*b, "first_lba"));
  });
  Json ranges = Json::array();
  std::size_t count = 0;
  Json current;
  for (const Json* r : sorted) {
    if (!current.is_null() && AsString(*Find(current, "class")) == AsString(*Find(*r, "class")) &&
        AsUint(*Find(current, "last_lba")) + 1 == AsUint(*Find(*r, "first_lba"))) {
      current["last_lba"] = AsUint(*Find(*r, "last_lba"));
      continue;
    }
    if (!current.is_null()) {
      if (count++ < kMaxRanges) ranges.push_back(current);
    }
    current = *r;
  }
  if (!current.is_null() && count++ < kMaxRanges) ranges.push_back(current);
  v["ranges"] = ranges;
  if (truncated_ || count > kMaxRanges) v["ranges_truncated"] = true;
  PutLatency(v, latency_, over_10ms_, over_100ms_);
  return v;
}

}  // namespace drivewatch::aging
