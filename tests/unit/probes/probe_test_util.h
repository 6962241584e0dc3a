// SPDX-License-Identifier: Apache-2.0
// Shared pieces of the probes tests: fixture loading, a fake Controller and a
// sink that records samples.
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "probes/drive/drive_layer.h"
#include "probes/sample_sink.h"

#include <gtest/gtest.h>

namespace drivewatch::testing {

inline std::filesystem::path FixtureDir() { return DW_FIXTURE_DIR; }

// The whole file, or an empty vector when it does not exist.
inline Bytes ReadFixture(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

inline Bytes Handmade(const std::string& name) {
  return ReadFixture(FixtureDir() / "handmade" / name);
}

inline constexpr char kHandmadeSerial[] = "HANDMADE-PM981";

// A fake controller: there is no NVMe hardware on the build machines, so
// the probes run against answers recorded from real controllers (QEMU's,
// through the kernel driver) or built by hand, looked up by command. It
// records what it was asked so tests can check the commands themselves.
// Commands with no answer fail the way a controller that lacks them does.
class FakeController : public Controller {
 public:
  struct Call {
    std::string command;  // "identify", "log", "feature", "set-feature"
    std::uint32_t id;     // CNS, LID or FID
    std::uint32_t nsid;   // or cdw11 for features
    std::size_t length;
    bool operator==(const Call&) const = default;
  };

  void SetIdentify(std::uint8_t cns, std::uint32_t nsid, Expected<Bytes> r) {
    identify_.insert_or_assign({cns, nsid}, std::move(r));
  }
  void SetLogPage(std::uint8_t lid, std::uint32_t nsid, Expected<Bytes> r) {
    logs_.insert_or_assign({lid, nsid}, std::move(r));
  }

  Expected<Bytes> Identify(std::uint8_t cns, std::uint32_t nsid) override {
    calls_.push_back({"identify", cns, nsid, 4096});
    auto it = identify_.find({cns, nsid});
    if (it == identify_.end()) return InvalidField("identify");
    return it->second;
  }
  Expected<Bytes> GetLogPage(std::uint8_t lid, std::uint32_t nsid,
                             std::size_t length) override {
    calls_.push_back({"log", lid, nsid, length});
    auto it = logs_.find({lid, nsid});
    if (it == logs_.end()) return InvalidField("get log page");
    return it->second;
  }
  // Get Features answers by (FID, CDW11). A Set Features of a FID with an
  // answer for CDW11 0 succeeds and changes that answer's dword 0, unless
  // FailSetFeature gave it an error.
  void SetFeatureAnswer(std::uint8_t fid, std::uint32_t cdw11,
                        Expected<FeatureValue> r) {
    features_.insert_or_assign({fid, cdw11}, std::move(r));
  }
  void SetFeatureResult(std::uint8_t fid, std::uint32_t cdw11,
                        std::uint32_t result) {
    SetFeatureAnswer(fid, cdw11, FeatureValue{result, {}});
  }
  void FailSetFeature(std::uint8_t fid, Error error) {
    set_errors_.insert_or_assign(fid, std::move(error));
  }

  Expected<FeatureValue> GetFeature(std::uint8_t fid, std::uint32_t cdw11,
                                    std::size_t length) override {
    calls_.push_back({"feature", fid, cdw11, length});
    auto it = features_.find({fid, cdw11});
    if (it == features_.end()) return InvalidField("get feature");
    return it->second;
  }
  Expected<std::uint32_t> SetFeature(std::uint8_t fid,
                                     std::uint32_t cdw11) override {
    calls_.push_back({"set-feature", fid, cdw11, 0});
    if (auto e = set_errors_.find(fid); e != set_errors_.end()) {
      return e->second;
    }
    auto it = features_.find({fid, 0});
    if (it == features_.end() || !it->second) return InvalidField("set feature");
    it->second.value().result = cdw11;
    return 0u;
  }

  // Get Log Page with LSP/offset: "log-at" calls record the LSP in `nsid`.
  // LSP 2 (release) answers zeros; otherwise the SetLogPage answer for
  // (LID, NSID), cut or zero-padded to `length` from `offset`.
  Expected<Bytes> GetLogPageAt(std::uint8_t lid, std::uint32_t nsid,
                               std::size_t length, std::uint8_t lsp,
                               std::uint64_t offset) override {
    calls_.push_back({"log-at", lid, lsp, length});
    if (lsp == 2) return Bytes(length);
    auto it = logs_.find({lid, nsid});
    if (it == logs_.end()) return InvalidField("get log page");
    if (!it->second) return it->second;
    Bytes out(length);
    const Bytes& all = it->second.value();
    for (std::size_t i = 0; i < length && offset + i < all.size(); ++i) {
      out[i] = all[offset + i];
    }
    return out;
  }
  // Get Log Page with a UUID index: "log-uuid" calls record the index in
  // `nsid`; answers come from SetLogPageUuid by (LID, UUID index).
  void SetLogPageUuid(std::uint8_t lid, std::uint8_t uuid_index,
                      Expected<Bytes> r) {
    uuid_logs_.insert_or_assign({lid, uuid_index}, std::move(r));
  }
  Expected<Bytes> GetLogPageUuid(std::uint8_t lid, std::uint32_t,
                                 std::size_t length,
                                 std::uint8_t uuid_index) override {
    calls_.push_back({"log-uuid", lid, uuid_index, length});
    auto it = uuid_logs_.find({lid, uuid_index});
    if (it == uuid_logs_.end()) return InvalidField("get log page");
    return it->second;
  }
  // Device Self-test: "self-test" calls record the STC in `id`; succeeds
  // unless FailSelfTest gave an error.
  Status DeviceSelfTest(std::uint8_t stc, std::uint32_t nsid) override {
    calls_.push_back({"self-test", stc, nsid, 0});
    if (self_test_error_) return *self_test_error_;
    return Ok{};
  }
  void FailSelfTest(Error e) { self_test_error_ = std::move(e); }

  const std::vector<Call>& calls() const { return calls_; }

  static Error InvalidField(const std::string& what) {
    return Error{0, 0x4002,
                 "/dev/nvme0: " + what + ": Invalid Field in Command (0x4002)"};
  }

 private:
  std::map<std::pair<std::uint8_t, std::uint32_t>, Expected<Bytes>> identify_;
  std::map<std::pair<std::uint8_t, std::uint32_t>, Expected<Bytes>> logs_;
  std::map<std::pair<std::uint8_t, std::uint32_t>, Expected<FeatureValue>>
      features_;
  std::map<std::pair<std::uint8_t, std::uint8_t>, Expected<Bytes>> uuid_logs_;
  std::map<std::uint8_t, Error> set_errors_;
  std::optional<Error> self_test_error_;
  std::vector<Call> calls_;
};

struct Sample {
  const MetricDesc* desc;
  Labels labels;
  double value;

  // "name{k="v",...}" with labels sorted by name: the identity of a series.
  std::string Key() const {
    Labels sorted = labels;
    std::sort(sorted.begin(), sorted.end());
    std::string key = desc->name;
    key += '{';
    for (std::size_t i = 0; i < sorted.size(); ++i) {
      if (i > 0) key += ',';
      key += sorted[i].first + "=\"" + sorted[i].second + "\"";
    }
    return key + '}';
  }
};

inline std::string SeriesKey(const std::string& name, Labels labels) {
  const MetricDesc desc{name.c_str(), "", MetricType::kGauge};
  return Sample{&desc, std::move(labels), 0}.Key();
}

class RecordingSink : public SampleSink {
 public:
  void Add(const MetricDesc& desc, Labels labels, double value) override {
    samples.push_back({&desc, std::move(labels), value});
  }
  void AddHistogram(const MetricDesc& desc, Labels labels,
                    std::shared_ptr<const HistogramValue> value) override {
    histograms.push_back({{&desc, std::move(labels), 0}, std::move(value)});
  }
  std::vector<Sample> samples;
  std::vector<std::pair<Sample, std::shared_ptr<const HistogramValue>>> histograms;
};

// Every metric a probe can emit, including those no fixture produces, is
// listed in docs/metrics.md (the dashboards' contract) and has a help text
// that says something.
inline void ExpectDocumented(std::span<const MetricDesc* const> metrics) {
  std::ifstream in(std::string(DW_SOURCE_DIR) + "/docs/metrics.md");
  std::stringstream text;
  text << in.rdbuf();
  const std::string docs = text.str();
  ASSERT_FALSE(docs.empty()) << "cannot read docs/metrics.md";
  for (const MetricDesc* desc : metrics) {
    EXPECT_NE(docs.find(std::string("`") + desc->name + "`"), std::string::npos)
        << desc->name << " is missing from docs/metrics.md";
    EXPECT_GT(std::string(desc->help).size(), 20u) << desc->name;
  }
}

}  // namespace drivewatch::testing
