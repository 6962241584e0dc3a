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

#include "exporter/http/basic_auth.h"
#include "exporter/metric_store.h"

namespace drivewatch {
namespace {

// alice / wonderland at cost 4, as in web_config_test.cc.
const std::string kAliceHash = "$2y$04$7XgErvA/q6MDvzDEkYtj7.sL8dpSX8ZqA1ZaZ3VVxlk88.QfWOB7a";
const std::string kAliceAuth = "Basic YWxpY2U6d29uZGVybGFuZA==";  // alice:wonderland
const std::string kWrongAuth = "Basic YWxpY2U6d3Jvbmc=";          // alice:wrong

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

TEST(BasicAuthTest, PrepareNeverRunsBcryptAndCachesOnlySuccesses) {
  BasicAuth auth({{"alice", kAliceHash}});
  using Result = BasicAuth::Check::Result;
  EXPECT_EQ(auth.Prepare("").result, Result::kDenied);
  EXPECT_EQ(auth.Prepare("Bearer x").result, Result::kDenied);
  auto first = auth.Prepare(kAliceAuth);
  ASSERT_EQ(first.result, Result::kVerify);
  EXPECT_TRUE(auth.Verify(first));
  EXPECT_EQ(auth.Prepare(kAliceAuth).result, Result::kAllowed);
  auto wrong = auth.Prepare(kWrongAuth);
  ASSERT_EQ(wrong.result, Result::kVerify);
  EXPECT_FALSE(auth.Verify(wrong));
  EXPECT_EQ(auth.Prepare(kWrongAuth).result, Result::kVerify);  // not cached
  // An unknown user goes to bcrypt (the decoy) too, and never passes.
  auto mallory = auth.Prepare("Basic bWFsbG9yeTp3b25kZXJsYW5k");  // mallory:wonderland
  ASSERT_EQ(mallory.result, Result::kVerify);
  EXPECT_FALSE(mallory.known_user);
  EXPECT_FALSE(auth.Verify(mallory));
  BasicAuth open({});
  EXPECT_EQ(open.Prepare("").result, Result::kAllowed);
}

TEST(BcryptQueueTest, RefusesPastItsBoundAndRunsInOrder) {
  BcryptQueue queue(2);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> order{0};
  int first = -1, second = -1;
  std::promise<void> started;
  ASSERT_TRUE(queue.Submit([&] {
    started.set_value();
    released.wait();
  }));
  started.get_future().wait();  // the worker holds the first job
  EXPECT_TRUE(queue.Submit([&] { first = order++; }));
  EXPECT_TRUE(queue.Submit([&] { second = order++; }));
  EXPECT_FALSE(queue.Submit([] {}));  // two already wait
  release.set_value();
  for (int i = 0; i < 1000 && order < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(first, 0);
  EXPECT_EQ(second, 1);
}

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
