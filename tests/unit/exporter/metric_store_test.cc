// SPDX-License-Identifier: Apache-2.0
#include "exporter/metric_store.h"

#include <gtest/gtest.h>
#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <iterator>
#include <map>
#include <random>
#include <sstream>

namespace drivewatch {
namespace {

constexpr MetricDesc kTemp{"drivewatch_test_temperature_celsius",
                           "A test temperature.", MetricType::kGauge};
constexpr MetricDesc kWritten{"drivewatch_test_written_bytes_total",
                              "A test counter.", MetricType::kCounter};

TEST(MetricStoreTest, RendersFamiliesSortedWithHelpAndType) {
  MetricStore store;
  store.Publish("SN2/probe/health", {{&kTemp, {{"serial", "SN2"}}, 41},
                                     {&kWritten, {{"serial", "SN2"}}, 1e6}});
  store.Publish("SN1/probe/health", {{&kTemp, {{"serial", "SN1"}}, 40.5}});
  EXPECT_EQ(*store.Render(),
            "# HELP drivewatch_test_temperature_celsius A test temperature.\n"
            "# TYPE drivewatch_test_temperature_celsius gauge\n"
            "drivewatch_test_temperature_celsius{serial=\"SN1\"} 40.5\n"
            "drivewatch_test_temperature_celsius{serial=\"SN2\"} 41\n"
            "# HELP drivewatch_test_written_bytes_total A test counter.\n"
            "# TYPE drivewatch_test_written_bytes_total counter\n"
            "drivewatch_test_written_bytes_total{serial=\"SN2\"} 1000000\n");
}

TEST(MetricStoreTest, PublishReplacesAScopeWhole) {
  MetricStore store;
  store.Publish("SN1/probe/health", {{&kTemp, {{"serial", "SN1"}}, 40},
                                     {&kWritten, {{"serial", "SN1"}}, 5}});
  store.Publish("SN1/probe/health", {{&kTemp, {{"serial", "SN1"}}, 42}});
  const std::string text = *store.Render();
  EXPECT_NE(text.find("{serial=\"SN1\"} 42\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("written"), std::string::npos) << text;
}

TEST(MetricStoreTest, RemovePrefixDropsOnlyThatDrive) {
  MetricStore store;
  store.Publish("SN1/probe/health", {{&kTemp, {{"serial", "SN1"}}, 40}});
  store.Publish("SN1/drive", {{&kWritten, {{"serial", "SN1"}}, 1}});
  store.Publish("SN10/probe/health", {{&kTemp, {{"serial", "SN10"}}, 30}});
  store.RemovePrefix("SN1/");
  EXPECT_EQ(*store.Render(),
            "# HELP drivewatch_test_temperature_celsius A test temperature.\n"
            "# TYPE drivewatch_test_temperature_celsius gauge\n"
            "drivewatch_test_temperature_celsius{serial=\"SN10\"} 30\n");
}

TEST(MetricStoreTest, RenderIsCachedUntilSomethingChanges) {
  MetricStore store;
  store.Publish("a", {{&kTemp, {}, 1}});
  const auto first = store.Render();
  EXPECT_EQ(first, store.Render());  // same shared text, not re-rendered
  store.Publish("a", {{&kTemp, {}, 2}});
  const auto second = store.Render();
  EXPECT_NE(first, second);
  EXPECT_NE(second->find("drivewatch_test_temperature_celsius 2\n"),
            std::string::npos);
  // A snapshot handed out stays valid and unchanged.
  EXPECT_NE(first->find("drivewatch_test_temperature_celsius 1\n"),
            std::string::npos);
}

TEST(MetricStoreTest, DuplicateSeriesFromTwoScopesAreEmittedOnce) {
  MetricStore store;
  store.Publish("a", {{&kTemp, {{"serial", "SN1"}}, 1}});
  store.Publish("b", {{&kTemp, {{"serial", "SN1"}}, 2}});
  const std::string text = *store.Render();
  EXPECT_EQ(text.find("SN1\"} 2"), std::string::npos) << text;
  EXPECT_NE(text.find("SN1\"} 1"), std::string::npos) << text;
}

TEST(MetricStoreTest, EscapesLabelValues) {
  MetricStore store;
  store.Publish("a", {{&kTemp, {{"model", "A \"quoted\" \\ name"}}, 1}});
  EXPECT_NE(store.Render()->find(R"(model="A \"quoted\" \\ name")"),
            std::string::npos)
      << *store.Render();
}

}  // namespace
}  // namespace drivewatch

namespace drivewatch {
namespace {

constexpr MetricDesc kLatency{"drivewatch_test_latency_seconds",
                              "A test histogram.", MetricType::kHistogram};

TEST(MetricStoreTest, RendersHistogramsWithTheInfBucket) {
  MetricStore store;
  auto h = std::make_shared<HistogramValue>();
  h->upper_bounds = {0.001, 0.01};
  h->cumulative_counts = {3, 5};
  h->count = 6;
  h->sum = 0.5;
  BatchSink sink;
  sink.AddHistogram(kLatency, {{"serial", "SN1"}}, h);
  store.Publish("SN1/probe/latency", std::move(sink.samples()));
  EXPECT_EQ(*store.Render(),
            "# HELP drivewatch_test_latency_seconds A test histogram.\n"
            "# TYPE drivewatch_test_latency_seconds histogram\n"
            "drivewatch_test_latency_seconds_count{serial=\"SN1\"} 6\n"
            "drivewatch_test_latency_seconds_sum{serial=\"SN1\"} 0.5\n"
            "drivewatch_test_latency_seconds_bucket{serial=\"SN1\",le=\"0.001\"} 3\n"
            "drivewatch_test_latency_seconds_bucket{serial=\"SN1\",le=\"0.01\"} 5\n"
            "drivewatch_test_latency_seconds_bucket{serial=\"SN1\",le=\"+Inf\"} 6\n");
}

}  // namespace
}  // namespace drivewatch

namespace drivewatch {
namespace {

// prometheus-cpp is the oracle: MetricStore serializes each series when it
// is published and joins the pieces at a scrape, and the whole must be byte
// for byte what prometheus::TextSerializer writes for all the families at
// once. OracleText builds those families from the samples, independently of
// the store: grouped by name (help and type of the first sample), labels
// sorted, series stable-sorted by labels and a repeated series kept once
// (the first, in scope order).
using Scopes = std::map<std::string, std::vector<Sample>>;
using namespace std::string_literals;

std::string OracleText(const Scopes& scopes) {
  std::map<std::string, prometheus::MetricFamily> families;
  for (const auto& [scope, samples] : scopes) {
    for (const Sample& s : samples) {
      auto& family = families[s.desc->name];
      if (family.name.empty()) {
        family.name = s.desc->name;
        family.help = s.desc->help;
        family.type = s.desc->type == MetricType::kCounter
                          ? prometheus::MetricType::Counter
                      : s.desc->type == MetricType::kHistogram
                          ? prometheus::MetricType::Histogram
                          : prometheus::MetricType::Gauge;
      }
      prometheus::ClientMetric m;
      for (const auto& [name, value] : s.labels) m.label.push_back({name, value});
      std::sort(m.label.begin(), m.label.end());
      if (s.desc->type == MetricType::kCounter) m.counter.value = s.value;
      if (s.desc->type == MetricType::kGauge) m.gauge.value = s.value;
      if (s.desc->type == MetricType::kHistogram && s.histogram) {
        const HistogramValue& h = *s.histogram;
        m.histogram.sample_count = h.count;
        m.histogram.sample_sum = h.sum;
        for (size_t i = 0;
             i < h.upper_bounds.size() && i < h.cumulative_counts.size(); ++i) {
          m.histogram.bucket.push_back({h.cumulative_counts[i], h.upper_bounds[i]});
        }
        m.histogram.bucket.push_back(
            {h.count, std::numeric_limits<double>::infinity()});
      }
      family.metric.push_back(std::move(m));
    }
  }
  std::vector<prometheus::MetricFamily> out;
  for (auto& [name, family] : families) {
    auto& metrics = family.metric;
    std::stable_sort(metrics.begin(), metrics.end(),
                     [](const auto& a, const auto& b) { return a.label < b.label; });
    metrics.erase(std::unique(metrics.begin(), metrics.end(),
                              [](const auto& a, const auto& b) {
                                return a.label == b.label;
                              }),
                  metrics.end());
    out.push_back(std::move(family));
  }
  std::ostringstream text;
  prometheus::TextSerializer().Serialize(text, out);
  return std::move(text).str();
}

std::string StoreText(const Scopes& scopes) {
  MetricStore store;
  for (const auto& [scope, samples] : scopes) store.Publish(scope, samples);
  return *store.Render();
}

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

constexpr MetricDesc kValue{"drivewatch_test_value", "Help with \\ and \"quotes\".",
                            MetricType::kGauge};
constexpr MetricDesc kTotal{"drivewatch_test_events_total", "",
                            MetricType::kCounter};
constexpr MetricDesc kSeconds{"drivewatch_test_seconds", "A histogram.",
                              MetricType::kHistogram};
// Same name as kValue, another type and help: the first sample's win.
constexpr MetricDesc kValueAsCounter{"drivewatch_test_value", "Other help.",
                                     MetricType::kCounter};

TEST(MetricStoreTest, TrickyLabelsAndValuesMatchPrometheusCpp) {
  auto h = std::make_shared<HistogramValue>();
  h->upper_bounds = {1e-5, 2.5e-4, 0.1, 1, 1e300};
  h->cumulative_counts = {0, 1, 9007199254740993u, 18446744073709551614u,
                          18446744073709551615u};
  h->count = 18446744073709551615u;
  h->sum = 1.0 / 3;
  auto no_buckets = std::make_shared<HistogramValue>();
  no_buckets->sum = kNaN;
  Scopes scopes;
  scopes["SN1/probe/a"] = {
      {&kValue, {{"serial", "SN1"}, {"model", "back\\slash"}}, kNaN},
      {&kValue, {{"serial", "SN1"}, {"model", "a \"quoted\" name"}}, kInf},
      {&kValue, {{"serial", "SN1"}, {"model", "new\nline"}}, -kInf},
      {&kValue, {{"serial", "SN1"}, {"model", "zero"}}, 0},
      {&kValue, {{"serial", "SN1"}, {"model", "minus zero"}}, -0.0},
      {&kValue, {{"serial", "SN1"}, {"model", "negative"}}, -273.15},
      {&kValue, {{"serial", "SN1"}, {"model", "tiny"}}, 1e-300},
      {&kValue, {{"serial", "SN1"}, {"model", "denormal"}}, 5e-324},
      {&kValue, {{"serial", "SN1"}, {"model", "huge"}}, 1e300},
      {&kValue, {{"serial", "SN1"}, {"model", "max"}}, 1.7976931348623157e308},
      {&kValue, {{"serial", "SN1"}, {"model", "2^53+2"}}, 9007199254740994.0},
      {&kValue, {{"serial", "SN1"}, {"model", "2^63"}}, 9223372036854775808.0},
      {&kValue, {{"serial", "SN1"}, {"model", "1e16-2"}}, 9999999999999998.0},
      {&kValue, {{"serial", "SN1"}, {"model", "1e16"}}, 1e16},
      {&kValue, {{"serial", "SN1"}, {"model", "-1e15"}}, -1e15},
      {&kValue, {{"serial", "SN1"}, {"model", "third"}}, 1.0 / 3},
      {&kValue, {{"serial", "SN1"}, {"model", "0.1+0.2"}}, 0.1 + 0.2},
      {&kValue, {{"serial", "SN1"}, {"model", "nul\0byte"s}}, 7},
      {&kValue, {{"serial", "SN1"}, {"model", "\xc3\xa9t\xc3\xa9"}}, 8},
      {&kSeconds, {{"serial", "SN1"}, {"nsid", "\"1\"\n"}}, 0, h},
      {&kSeconds, {}, 0, h},
      {&kSeconds, {{"serial", "SN1"}, {"nsid", "2"}}, 0, no_buckets},
      {&kSeconds, {{"serial", "SN1"}, {"nsid", "3"}}, 0, nullptr},
      {&kTotal, {}, 12345678901234567890.0},
  };
  scopes["SN0/probe/b"] = {
      // Sorts before SN1's by label order, not scope order.
      {&kValue, {{"serial", "SN1"}, {"model", "a"}}, 1},
      {&kValue, {{"serial", "SN1"}}, 2},  // a prefix of the others' labels
      {&kValue, {}, 3},
      {&kTotal, {{"a", "x"}, {"b", "y"}}, 4},
  };
  scopes["SN2/probe/c"] = {
      {&kValueAsCounter, {{"serial", "SN2"}}, 5},  // rendered 0: gauge family
      {&kValue, {{"serial", "SN1"}, {"model", "zero"}}, 99},  // duplicate
  };
  const std::string text = StoreText(scopes);
  EXPECT_EQ(text, OracleText(scopes));
  // What the oracle says, so a change in it would not go unnoticed.
  EXPECT_NE(text.find("drivewatch_test_value{model=\"back\\\\slash\",serial=\"SN1\"} Nan\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("{model=\"a \\\"quoted\\\" name\",serial=\"SN1\"} +Inf\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("{model=\"new\\nline\",serial=\"SN1\"} -Inf\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("{model=\"minus zero\",serial=\"SN1\"} -0\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("{model=\"tiny\",serial=\"SN1\"} 1e-300\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("{model=\"2^53+2\",serial=\"SN1\"} 9007199254740994\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("{model=\"2^63\",serial=\"SN1\"} 9.223372036854776e+18\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("{model=\"third\",serial=\"SN1\"} 0.3333333333333333\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("drivewatch_test_seconds_bucket{le=\"1e+300\"} 18446744073709551615\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("# HELP drivewatch_test_value Help with \\ and \"quotes\".\n"),
            std::string::npos) << text;
  EXPECT_EQ(text.find("# HELP drivewatch_test_events_total"), std::string::npos)
      << text;
}

// Random stores against the oracle: values from random bit patterns and
// decimal-looking numbers, label values from an alphabet of the characters
// that need escaping or order oddly, histograms of every shape.
TEST(MetricStoreTest, RandomStoresMatchPrometheusCpp) {
  std::mt19937_64 rng(20240611);
  const auto pick = [&rng](std::size_t n) {
    return static_cast<std::size_t>(rng() % n);
  };
  const auto value = [&]() -> double {
    switch (pick(6)) {
      case 0: {
        const double special[] = {kNaN, kInf, -kInf, 0.0, -0.0, 1e16, -1e16};
        return special[pick(std::size(special))];
      }
      case 1:
        return std::bit_cast<double>(rng());
      case 2:
        return static_cast<double>(static_cast<std::int64_t>(rng()) >> pick(64));
      case 3:
        return static_cast<double>(static_cast<std::int64_t>(rng() % 2000001) - 1000000) /
               std::pow(10.0, static_cast<double>(pick(12)));
      default:
        return std::ldexp(static_cast<double>(rng() >> 11), static_cast<int>(pick(200)) - 120);
    }
  };
  const auto label_value = [&]() {
    static const std::string alphabet("ab\\\"\n\0\xc3 z", 9);
    std::string v(pick(4), ' ');
    for (char& c : v) c = alphabet[pick(alphabet.size())];
    return v;
  };
  const MetricDesc* descs[] = {&kValue, &kTotal, &kSeconds, &kValueAsCounter};
  for (int round = 0; round < 200; ++round) {
    Scopes scopes;
    for (int scope = 0, n = static_cast<int>(pick(6)); scope < n; ++scope) {
      std::vector<Sample>& samples = scopes["s" + std::to_string(pick(8))];
      for (int i = 0, m = static_cast<int>(pick(12)); i < m; ++i) {
        Sample s{descs[pick(std::size(descs))], {}, value(), nullptr};
        for (const char* name : {"serial", "a", "ab", "b"}) {
          if (pick(2) == 0) s.labels.emplace_back(name, label_value());
        }
        if (s.desc->type == MetricType::kHistogram && pick(5) != 0) {
          auto h = std::make_shared<HistogramValue>();
          for (std::size_t b = 0, k = pick(5); b < k; ++b) {
            h->upper_bounds.push_back(value());
            h->cumulative_counts.push_back(rng() >> pick(64));
          }
          if (pick(4) == 0) h->upper_bounds.push_back(value());  // one too many
          h->count = rng();
          h->sum = value();
          s.histogram = std::move(h);
        }
        samples.push_back(std::move(s));
      }
    }
    ASSERT_EQ(StoreText(scopes), OracleText(scopes)) << "round " << round;
    // The store as a Collectable: its families serialize to its text.
    MetricStore store;
    for (const auto& [scope, samples] : scopes) store.Publish(scope, samples);
    std::ostringstream collected;
    prometheus::TextSerializer().Serialize(collected, store.Collect());
    ASSERT_EQ(*store.Render(), collected.str()) << "round " << round;
  }
}

// What Collect() gives a prometheus-cpp consumer (a Registry, a push
// gateway): families sorted by name, the first scope's help and type, the
// series of every scope sorted by labels, a repeated series once.
TEST(MetricStoreTest, CollectMergesScopesAsPrometheusCppFamilies) {
  MetricStore store;
  store.Publish("SN2/probe/c", {{&kValueAsCounter, {{"serial", "SN2"}}, 5},
                                {&kTotal, {{"serial", "SN2"}}, 6}});
  store.Publish("SN1/probe/a", {{&kValue, {{"serial", "SN1"}}, 1},
                                {&kValue, {{"serial", "SN0"}}, 2}});
  store.Publish("SN3/probe/d", {{&kValue, {{"serial", "SN1"}}, 99}});  // duplicate
  const std::vector<prometheus::MetricFamily> families = store.Collect();
  ASSERT_EQ(families.size(), 2u);
  EXPECT_EQ(families[0].name, "drivewatch_test_events_total");
  EXPECT_EQ(families[0].type, prometheus::MetricType::Counter);
  const prometheus::MetricFamily& value = families[1];
  EXPECT_EQ(value.name, "drivewatch_test_value");
  EXPECT_EQ(value.help, kValue.help);  // SN1's scope sorts first
  EXPECT_EQ(value.type, prometheus::MetricType::Gauge);
  ASSERT_EQ(value.metric.size(), 3u);
  EXPECT_EQ(value.metric[0].label.at(0).value, "SN0");
  EXPECT_EQ(value.metric[0].gauge.value, 2);
  EXPECT_EQ(value.metric[1].label.at(0).value, "SN1");
  EXPECT_EQ(value.metric[1].gauge.value, 1);  // the first scope's, not 99
  EXPECT_EQ(value.metric[2].label.at(0).value, "SN2");
  EXPECT_EQ(value.metric[2].gauge.value, 0);  // a counter in a gauge family
  EXPECT_EQ(value.metric[2].counter.value, 5);
  const std::string text = *store.Render();
  EXPECT_NE(text.find("drivewatch_test_value{serial=\"SN2\"} 0\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace drivewatch
