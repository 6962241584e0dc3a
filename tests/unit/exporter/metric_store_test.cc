#include "exporter/metric_store.h"

#include <gtest/gtest.h>

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
