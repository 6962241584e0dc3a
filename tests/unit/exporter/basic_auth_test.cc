// SPDX-License-Identifier: Apache-2.0
// HTTP basic authentication (exporter/http/basic_auth.h): strict base64,
// the cheap Prepare() that never runs bcrypt, the cache of successes only,
// and the bounded low-priority bcrypt queue.
#include "exporter/http/basic_auth.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <optional>
#include <string>

namespace drivewatch {
namespace {

// alice / wonderland at cost 4, as in web_config_test.cc.
const std::string kAliceHash = "$2y$04$7XgErvA/q6MDvzDEkYtj7.sL8dpSX8ZqA1ZaZ3VVxlk88.QfWOB7a";
const std::string kAliceAuth = "Basic YWxpY2U6d29uZGVybGFuZA==";  // alice:wonderland
const std::string kWrongAuth = "Basic YWxpY2U6d3Jvbmc=";          // alice:wrong

TEST(Base64Test, DecodesTheRfc4648VectorsStrictly) {
  using detail::DecodeBase64;
  // RFC 4648 section 10 (the empty string aside: no credentials are empty).
  EXPECT_EQ(DecodeBase64("Zg=="), "f");
  EXPECT_EQ(DecodeBase64("Zm8="), "fo");
  EXPECT_EQ(DecodeBase64("Zm9v"), "foo");
  EXPECT_EQ(DecodeBase64("Zm9vYg=="), "foob");
  EXPECT_EQ(DecodeBase64("Zm9vYmE="), "fooba");
  EXPECT_EQ(DecodeBase64("Zm9vYmFy"), "foobar");
  EXPECT_EQ(DecodeBase64("YWxpY2U6d29uZGVybGFuZA=="), "alice:wonderland");
  EXPECT_EQ(DecodeBase64("+/+/"), std::string("\xfb\xff\xbf"));
  EXPECT_EQ(DecodeBase64(""), std::nullopt);
  EXPECT_EQ(DecodeBase64("Zg"), std::nullopt);         // padding required
  EXPECT_EQ(DecodeBase64("Zm9v Yg=="), std::nullopt);  // no whitespace
  EXPECT_EQ(DecodeBase64("Zg=a"), std::nullopt);       // data after padding
  EXPECT_EQ(DecodeBase64("Zg==Zm9v"), std::nullopt);   // padding only at the end
  EXPECT_EQ(DecodeBase64("Z==="), std::nullopt);       // at most two
  EXPECT_EQ(DecodeBase64("Zm9-"), std::nullopt);       // not the URL alphabet
  EXPECT_EQ(DecodeBase64(std::string(4100, 'A')), std::nullopt);  // past the bound
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
  std::promise<void> both_ran;
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
  EXPECT_TRUE(queue.Submit([&] {
    second = order++;
    both_ran.set_value();
  }));
  EXPECT_FALSE(queue.Submit([] {}));  // two already wait
  release.set_value();
  both_ran.get_future().wait();  // however slow the machine: no deadline to miss
  EXPECT_EQ(first, 0);
  EXPECT_EQ(second, 1);
}

}  // namespace
}  // namespace drivewatch
