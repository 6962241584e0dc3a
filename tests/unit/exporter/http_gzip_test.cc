// SPDX-License-Identifier: Apache-2.0
// Whether a scraper's Accept-Encoding lets /metrics go gzipped
// (exporter/http/http_gzip.cc): q-values, the wildcard, and an explicit
// refusal beating the wildcard.
#include <gtest/gtest.h>

#include "exporter/http/http_server.h"

namespace drivewatch {
namespace {

TEST(AcceptsGzipTest, HonoursQValues) {
  using detail::AcceptsGzip;
  EXPECT_TRUE(AcceptsGzip("gzip"));
  EXPECT_TRUE(AcceptsGzip("deflate, gzip;q=0.5"));
  EXPECT_TRUE(AcceptsGzip("GZIP"));
  EXPECT_TRUE(AcceptsGzip("*"));
  EXPECT_FALSE(AcceptsGzip(""));
  EXPECT_FALSE(AcceptsGzip("identity"));
  EXPECT_FALSE(AcceptsGzip("gzip;q=0"));
  EXPECT_FALSE(AcceptsGzip("gzip;q=0.000"));
  EXPECT_FALSE(AcceptsGzip("gzip; q=0, deflate"));
  EXPECT_FALSE(AcceptsGzip("*;q=1, gzip;q=0"));  // explicit beats *
  EXPECT_TRUE(AcceptsGzip("*;q=0, gzip"));
  EXPECT_FALSE(AcceptsGzip("*;q=0"));
  EXPECT_FALSE(AcceptsGzip("gzip;q=junk"));
}

}  // namespace
}  // namespace drivewatch
