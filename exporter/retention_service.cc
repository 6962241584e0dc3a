// SPDX-License-Identifier: Apache-2.0
#include "exporter/retention_service.h"

#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <condition_variable>
#include <map>

#include "aging/retention/retention_study.h"
#include "config/util/log.h"

namespace drivewatch {
namespace {


constexpr MetricDesc kInfo{
    "drivewatch_retention_study_info",
    "1 for each data-retention study; its id and state (writing, baseline, "
    "active, failed, ended) as labels.",
    MetricType::kGauge};
constexpr MetricDesc kAge{"drivewatch_retention_age_seconds",
                          "Wall time since the study's write ended.", MetricType::kGauge};
constexpr MetricDesc kPoweredOn{
    "drivewatch_retention_powered_on_seconds",
    "Time the drive was powered since the write: the SMART power-on hours delta "
    "(whole hours), or what drivewatch sampled when that is unknown.",
    MetricType::kGauge};
constexpr MetricDesc kPoweredOff{
    "drivewatch_retention_powered_off_seconds",
    "Estimated time the drive was powered off since the write (wall minus "
    "powered on). Absent when the power-on hours are unknown.",
    MetricType::kGauge};
constexpr MetricDesc kEquivalentOn{
    "drivewatch_retention_powered_on_equivalent_seconds",
    "The powered-on time weighted by the Arrhenius factor of the temperatures "
    "drivewatch saw, at the study's reference temperature.",
    MetricType::kGauge};
constexpr MetricDesc kEquivalent{
    "drivewatch_retention_equivalent_age_seconds",
    "Temperature-weighted age at the reference temperature, powered-off time "
    "included at the configured storage temperature. Absent without one.",
    MetricType::kGauge};
constexpr MetricDesc kLastVerify{
    "drivewatch_retention_last_verify_timestamp_seconds",
    "Unix time the study's last completed verify ended.", MetricType::kGauge};
constexpr MetricDesc kVerifies{"drivewatch_retention_verifies_total",
                               "Completed verifies of the study.", MetricType::kCounter};
constexpr MetricDesc kBlocks{"drivewatch_retention_blocks_verified",
                             "4 KiB blocks the last verify read back.", MetricType::kGauge};
constexpr MetricDesc kBad{
    "drivewatch_retention_bad_blocks",
    "Blocks the last verify (or the baseline, read=\"baseline\") found bad, by "
    "class: unreadable, wrong_content, misplaced, stale.",
    MetricType::kGauge};
constexpr MetricDesc kLatency{
    "drivewatch_retention_read_latency_seconds",
    "Read latency percentile (50, 99, 99.9, 100) of the baseline read and of "
    "the last verify.",
    MetricType::kGauge};
constexpr MetricDesc kOver{
    "drivewatch_retention_reads_over_ratio",
    "Fraction of reads slower than the threshold (10ms, 100ms), of the baseline "
    "and of the last verify.",
    MetricType::kGauge};
constexpr MetricDesc kSmartDelta{
    "drivewatch_retention_smart_delta",
    "Change of a SMART counter between the write and the last verify: "
    "media_errors, error_log_entries, power_cycles, unsafe_shutdowns, "
    "power_on_hours.",
    MetricType::kGauge};

constexpr MetricDesc kDamaged{
    "drivewatch_retention_study_damaged",
    "1 when the study's record in the state directory cannot be trusted: damaged "
    "(checksum, JSON or a field fails validation) or unreadable; its other "
    "drivewatch_retention_* series then keep their last good values. 0 when it loads.",
    MetricType::kGauge};

const Json* Get(const Json& j, std::initializer_list<const char*> keys) {
  const Json* at = &j;
  for (const char* k : keys) {
    if ((at = Find(*at, k)) == nullptr) return nullptr;
  }
  return at;
}

std::string Str(const Json& j, const char* key) {
  const Json* v = Find(j, key);
  return v ? AsString(*v) : std::string();
}

void AddRead(std::vector<Sample>& out, const Labels& base, const Json& read, const char* which) {
  auto with = [&](std::initializer_list<std::pair<const char*, std::string>> extra) {
    Labels l = base;
    l.emplace_back("read", which);
    for (const auto& [k, v] : extra) l.emplace_back(k, v);
    return l;
  };
  for (auto [key, pct] : {std::pair{"p50", "50"}, std::pair{"p99", "99"},
                          std::pair{"p99_9", "99.9"}, std::pair{"max", "100"}}) {
    if (const Json* q = Get(read, {"quantiles", key})) {
      out.push_back(Sample{&kLatency, with({{"percentile", pct}}), AsDouble(*q)});
    }
  }
  for (auto [key, t] : {std::pair{"over_10ms_ratio", "10ms"}, std::pair{"over_100ms_ratio", "100ms"}}) {
    if (const Json* v = Find(read, key)) {
      out.push_back(Sample{&kOver, with({{"threshold", t}}), AsDouble(*v)});
    }
  }
  if (const Json* bad = Find(read, "bad")) {
    for (const auto& [klass, n] : Members(*bad)) {
      out.push_back(Sample{&kBad, with({{"class", klass}}), AsDouble(n)});
    }
  }
}

}  // namespace

RetentionService::RetentionService(MetricStore& store, std::chrono::milliseconds interval,
                                   std::string sysfs_root)
    : store_(store), interval_(interval), sysfs_root_(std::move(sysfs_root)) {}

RetentionService::~RetentionService() { Stop(); }

void RetentionService::Start(const config::Config& config) {
  Reconfigure(config);
  thread_ = std::jthread([this](std::stop_token stop) {
    std::mutex m;
    std::condition_variable_any cv;
    while (!stop.stop_requested()) {
      Tick(std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
               .count());
      std::unique_lock lock(m);
      cv.wait_for(lock, stop, interval_, [] { return false; });
    }
  });
}

void RetentionService::Reconfigure(const config::Config& config) {
  std::lock_guard lock(mu_);
  state_directory_ = config.state_directory;
}

void RetentionService::Stop() {
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
}

void RetentionService::Tick(double now) {
  std::string state;
  {
    std::lock_guard lock(mu_);
    state = state_directory_;
  }
  std::lock_guard tick(tick_mu_);
  std::vector<Sample> samples;
  std::map<std::string, std::vector<Sample>> last_good;
  std::map<std::string, std::string> problems;
  for (aging::StudyFile& file : aging::ReadStudies(state)) {
    const std::string& name = file.name;
    if (file.record) {
      Json& study = *file.record;
      if (auto sampled = SampleTemperature(state, study, now); !sampled) {
        file.record = sampled.error();  // damaged between the two reads
      } else {
        last_good[name] = StudySamples(study, now);
      }
    }
    if (!file.record && file.record.error().errnum == ENOENT) continue;  // just removed
    const bool damaged = !file.record;
    samples.push_back(Sample{&kDamaged, Labels{{"study", name}}, damaged ? 1.0 : 0.0});
    if (damaged) {
      problems[name] = file.record.error().message;
      // The study's series keep their last good values, so an alert on its
      // bad blocks still holds while the record cannot be read.
      if (auto it = last_good_.find(name); it != last_good_.end()) last_good[name] = it->second;
    }
    const auto before = problems_.find(name);
    if (damaged && (before == problems_.end() || before->second != problems[name])) {
      log::Error("retention: " + problems[name] + "; the study is exported as damaged" +
                 (last_good.count(name) ? " with its last good values" : ", without results"));
    } else if (!damaged && before != problems_.end()) {
      log::Info("retention study " + name + ": its record loads again");
    }
  }
  for (const auto& [name, series] : last_good) samples.insert(samples.end(), series.begin(), series.end());
  last_good_ = std::move(last_good);
  problems_ = std::move(problems);
  store_.Publish("retention", std::move(samples));
}

Status RetentionService::SampleTemperature(const std::string& state, Json& study, double now) {
  const std::string name = Str(study, "study");
  if (Str(study, "state") != "active" || Find(study, "nsid") == nullptr ||
      AsUint(*Find(study, "nsid")) == 0) {
    return Ok{};
  }
  auto lock = aging::LockStudy(state, name);
  if (!lock) return Ok{};  // a phase holds it; the next pass samples
  // Reload under the lock: a verify may have just saved it.
  auto fresh = aging::LoadStudy(state, name);
  if (!fresh) return fresh.error();
  study = *fresh;
  const auto nsid = static_cast<std::uint32_t>(AsUint(*Find(study, "nsid")));
  auto path = aging::FindNvmeNamespace(Str(study, "serial"), nsid, sysfs_root_);
  if (!path) return Ok{};
  const int fd = ::open(path->c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Ok{};
  if (auto smart = aging::ReadSmartSnapshot(fd)) {
    const double k = AsDouble(*Find(*smart, "composite_temperature_k"));
    if (k > 0) aging::AddTemperatureSample(study, now, k, 3.0 * interval_.count() / 1000.0);
    study["last_smart"] = *smart;
    if (Status s = aging::SaveStudy(state, study); !s) {
      log::Warn("retention study " + name + ": " + s.error().message);
    }
  }
  ::close(fd);
  return Ok{};
}

std::vector<Sample> RetentionService::StudySamples(const Json& study, double now) const {
  std::vector<Sample> samples;
  const std::string name = Str(study, "study");
  const Labels labels{{"study", name}, {"serial", Str(study, "serial")},
                      {"target", Str(study, "target")}};
  Labels info = labels;
  info.emplace_back("id", Str(study, "id"));
  info.emplace_back("state", Str(study, "state"));
  samples.push_back(Sample{&kInfo, info, 1});
  if (Find(study, "written") == nullptr || Find(*Find(study, "written"), "end") == nullptr)
    return samples;
  const Json* smart = Find(study, "last_smart");
  const Json* verifies = Find(study, "verifies");
  const Json* last = verifies && !Items(*verifies).empty() ? &Items(*verifies).back() : nullptr;
  if (smart == nullptr && last) smart = Find(*last, "smart");
  const Json* storage = Get(study, {"accounting", "storage_temperature_k"});
  const aging::RetentionAges ages = aging::ComputeAges(
      study, now, smart, storage && !storage->is_null() ? AsDouble(*storage) : NAN);
  samples.push_back(Sample{&kAge, labels, ages.wall_seconds});
  samples.push_back(Sample{&kPoweredOn, labels, ages.powered_on_seconds});
  samples.push_back(Sample{&kEquivalentOn, labels, ages.powered_on_equivalent_seconds});
  if (ages.powered_off_seconds) samples.push_back(Sample{&kPoweredOff, labels, *ages.powered_off_seconds});
  if (ages.equivalent_age_seconds) samples.push_back(Sample{&kEquivalent, labels, *ages.equivalent_age_seconds});
  samples.push_back(Sample{&kVerifies, labels,
                           verifies ? static_cast<double>(Items(*verifies).size()) : 0.0});
  if (const Json* baseline = Find(study, "baseline"))
    AddRead(samples, labels, *baseline, "baseline");
  if (last) {
    AddRead(samples, labels, *last, "last_verify");
    if (const Json* end = Find(*last, "end"))
      samples.push_back(Sample{&kLastVerify, labels, AsDouble(*end)});
    if (const Json* b = Find(*last, "checked"))
      samples.push_back(Sample{&kBlocks, labels, AsDouble(*b)});
    if (const Json* delta = Find(*last, "smart_delta")) {
      for (const auto& [counter, v] : Members(*delta)) {
        Labels l = labels;
        l.emplace_back("counter", counter);
        samples.push_back(Sample{&kSmartDelta, l, AsDouble(v)});
      }
    }
  }
  return samples;
}

}  // namespace drivewatch
