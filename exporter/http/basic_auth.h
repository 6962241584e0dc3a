// SPDX-License-Identifier: Apache-2.0
// HTTP basic authentication against the web config's bcrypt hashes, split
// so that the serving thread never runs bcrypt: Prepare() answers from a
// cache of accepted credentials or says a bcrypt check is needed, and that
// check runs on BcryptQueue's one low-priority thread. A flood of wrong
// passwords therefore costs one core at the lowest priority at most, and a
// scraper whose credential is cached never waits behind it.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <vector>

#include "exporter/http/web_config.h"

namespace drivewatch {

// Remembers which (user, hash, password) triples bcrypt has accepted, as
// exporter-toolkit does, so a scrape every few seconds costs a hash lookup
// rather than a bcrypt run. Keys are SHA-256 digests: no password is kept.
// Failures are not cached, so guessing never fills it; it is bounded and
// starts over when full.
class BasicAuthCache {
 public:
  static constexpr size_t kMaxEntries = 1024;
  bool Contains(const std::string& digest) const;
  void Insert(const std::string& digest);
  size_t size() const;

 private:
  mutable std::mutex mu_;
  std::unordered_set<std::string> accepted_;
};

class BasicAuth {
 public:
  explicit BasicAuth(std::vector<BasicAuthUser> users);

  bool enabled() const { return !users_.empty(); }

  // What a request's Authorization header leads to without running bcrypt.
  struct Check {
    enum class Result { kAllowed, kDenied, kVerify };
    Result result = Result::kDenied;
    // For kVerify: what Verify() needs.
    std::string password;
    std::string hash;
    std::string cache_key;
    bool known_user = false;
  };
  // Cheap: parsing, a constant-time user lookup and a cache lookup. An
  // unknown user is checked against a decoy hash of the highest cost in
  // use, so the time taken does not say which users exist.
  Check Prepare(std::string_view authorization) const;
  // Runs bcrypt (tens of milliseconds and more) and caches a success.
  bool Verify(const Check& check);
  // Prepare() and, when needed, Verify() on the calling thread.
  bool Authorized(std::string_view authorization);

 private:
  std::vector<BasicAuthUser> users_;
  std::string decoy_hash_;
  BasicAuthCache cache_;
};

// One worker thread, at the lowest scheduling priority, running bcrypt
// checks in order. At most `max_pending` wait; Submit() refuses more, so a
// flood cannot grow memory or delay a legitimate check without bound.
class BcryptQueue {
 public:
  explicit BcryptQueue(size_t max_pending);
  ~BcryptQueue();
  BcryptQueue(const BcryptQueue&) = delete;
  BcryptQueue& operator=(const BcryptQueue&) = delete;

  // False when `max_pending` jobs already wait (the job is not kept).
  bool Submit(std::function<void()> job);
  // Drops the jobs still waiting and joins the worker.
  void Shutdown();

 private:
  void Run();

  const size_t max_pending_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::thread worker_;
};

namespace detail {
// RFC 4648 base64, strict: padding required, no whitespace.
std::optional<std::string> DecodeBase64(std::string_view in);
}  // namespace detail

}  // namespace drivewatch
