// SPDX-License-Identifier: Apache-2.0
#include "exporter/http/http_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>

#include "exporter/metric_store.h"

namespace drivewatch {
namespace {

// alice / wonderland at cost 4, as in web_config_test.cc.
const std::string kAliceHash = "$2y$04$7XgErvA/q6MDvzDEkYtj7.sL8dpSX8ZqA1ZaZ3VVxlk88.QfWOB7a";

TEST(HttpServerTest, ReconfigureKeepsTheListeningSocket) {
  MetricStore store;
  HttpServer http(store, "<html></html>");
  ASSERT_TRUE(http.Start("127.0.0.1:0").ok());
  const int port = http.port();
  httplib::Client client("127.0.0.1", port);
  auto before = client.Get("/metrics");
  ASSERT_TRUE(before);
  EXPECT_EQ(before->status, 200);
  WebConfig web;
  web.users = {{"alice", kAliceHash}};
  ASSERT_TRUE(http.Reconfigure(web).ok());
  EXPECT_EQ(http.port(), port);
  httplib::Client again("127.0.0.1", port);
  auto anonymous = again.Get("/metrics");
  ASSERT_TRUE(anonymous);
  EXPECT_EQ(anonymous->status, 401);
  again.set_basic_auth("alice", "wonderland");
  auto ok = again.Get("/metrics");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  // A config whose files do not load is refused and the old one stays.
  WebConfig broken = web;
  broken.tls = TlsServerConfig{};
  broken.tls->cert_file = "/nonexistent/server.crt";
  broken.tls->key_file = "/nonexistent/server.key";
  const auto refused = http.Reconfigure(broken);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message, ::testing::HasSubstr("cert_file"));
  auto still = again.Get("/metrics");
  ASSERT_TRUE(still);
  EXPECT_EQ(still->status, 200);
}

TEST(HttpServerTest, TooManyConnectionsEvictTheOldestIdle) {
  MetricStore store;
  HttpLimits limits;
  limits.max_connections = 4;
  HttpServer http(store, "", {}, limits);
  ASSERT_TRUE(http.Start("127.0.0.1:0").ok());
  std::vector<std::unique_ptr<httplib::Client>> clients;
  for (int i = 0; i < 8; ++i) {
    clients.push_back(std::make_unique<httplib::Client>("127.0.0.1", http.port()));
    clients.back()->set_keep_alive(true);
    auto res = clients.back()->Get("/-/healthy");
    ASSERT_TRUE(res) << i;
    EXPECT_EQ(res->status, 200) << i;
  }
  // The newest kept-alive connections still answer; the server holds at
  // most four, so the first ones were closed for the later ones.
  auto last = clients.back()->Get("/-/healthy");
  ASSERT_TRUE(last);
  EXPECT_EQ(last->status, 200);
}

}  // namespace
}  // namespace drivewatch
