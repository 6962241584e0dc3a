// SPDX-License-Identifier: Apache-2.0
#include "exporter/http/basic_auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>

namespace drivewatch {
namespace detail {

std::optional<std::string> DecodeBase64(std::string_view in) {
  if (in.empty() || in.size() % 4 != 0 || in.size() > 4096) return std::nullopt;
  const auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  out.reserve(in.size() / 4 * 3);
  for (size_t i = 0; i < in.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = in[i + k];
      if (c == '=' && i + 4 == in.size() && k >= 2) {
        v[k] = 0;
        ++pad;
        continue;
      }
      if (pad > 0) return std::nullopt;  // data after padding
      v[k] = value(c);
      if (v[k] < 0) return std::nullopt;
    }
    const unsigned n = (v[0] << 18) | (v[1] << 12) | (v[2] << 6) | v[3];
    out.push_back(static_cast<char>(n >> 16));
    if (pad < 2) out.push_back(static_cast<char>((n >> 8) & 0xff));
    if (pad < 1) out.push_back(static_cast<char>(n & 0xff));
  }
  return out;
}

}  // namespace detail

namespace {

std::string Sha256(std::string_view a, std::string_view b, std::string_view c) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  // Lengths first, so ("ab","c") and ("a","bc") differ.
  const uint64_t lens[3] = {a.size(), b.size(), c.size()};
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  EVP_DigestUpdate(ctx, lens, sizeof lens);
  EVP_DigestUpdate(ctx, a.data(), a.size());
  EVP_DigestUpdate(ctx, b.data(), b.size());
  EVP_DigestUpdate(ctx, c.data(), c.size());
  EVP_DigestFinal_ex(ctx, digest, &len);
  EVP_MD_CTX_free(ctx);
  return std::string(reinterpret_cast<char*>(digest), len);
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace

bool BasicAuthCache::Contains(const std::string& digest) const {
  std::lock_guard lock(mu_);
  return accepted_.count(digest) > 0;
}

void BasicAuthCache::Insert(const std::string& digest) {
  std::lock_guard lock(mu_);
  if (accepted_.size() >= kMaxEntries) accepted_.clear();
  accepted_.insert(digest);
}

size_t BasicAuthCache::size() const {
  std::lock_guard lock(mu_);
  return accepted_.size();
}

BasicAuth::BasicAuth(std::vector<BasicAuthUser> users) : users_(std::move(users)) {
  // The decoy has the highest cost in use, so an unknown user is never
  // answered faster than a known one. Its salt and digest are arbitrary:
  // crypt() runs the full cost and the comparison then fails.
  int cost = 4;
  for (const auto& u : users_) {
    if (!IsBcryptHash(u.bcrypt_hash)) continue;  // never matches anyway
    cost = std::max(cost, (u.bcrypt_hash[4] - '0') * 10 + (u.bcrypt_hash[5] - '0'));
  }
  char prefix[16];
  std::snprintf(prefix, sizeof prefix, "$2b$%02d$", cost);
  decoy_hash_ = std::string(prefix) + std::string(53, '.');
}

BasicAuth::Check BasicAuth::Prepare(std::string_view authorization) const {
  using Result = Check::Result;
  Check out;
  if (users_.empty()) {
    out.result = Result::kAllowed;
    return out;
  }
  // RFC 7617: "Basic" (any case), one space, base64 of "user:password".
  if (authorization.size() < 6 || strncasecmp(authorization.data(), "Basic ", 6) != 0) {
    return out;
  }
  size_t start = 6;
  while (start < authorization.size() && authorization[start] == ' ') ++start;
  const auto decoded = detail::DecodeBase64(authorization.substr(start));
  if (!decoded) return out;
  const size_t colon = decoded->find(':');
  if (colon == std::string::npos) return out;
  const std::string_view user = std::string_view(*decoded).substr(0, colon);
  // Look at every user, so the time taken does not say which matched.
  const BasicAuthUser* found = nullptr;
  for (const auto& u : users_) {
    if (ConstantTimeEquals(u.name, user)) found = &u;
  }
  out.password = decoded->substr(colon + 1);
  out.hash = found ? found->bcrypt_hash : decoy_hash_;
  out.cache_key = Sha256(user, out.hash, out.password);
  out.known_user = found != nullptr;
  out.result = found && cache_.Contains(out.cache_key) ? Result::kAllowed : Result::kVerify;
  return out;
}

bool BasicAuth::Verify(const Check& check) {
  const bool ok = BcryptMatches(check.password, check.hash);
  if (!ok || !check.known_user) return false;
  cache_.Insert(check.cache_key);
  return true;
}

bool BasicAuth::Authorized(std::string_view authorization) {
  const Check check = Prepare(authorization);
  switch (check.result) {
    case Check::Result::kAllowed:
      return true;
    case Check::Result::kDenied:
      return false;
    case Check::Result::kVerify:
      return Verify(check);
  }
  return false;
}

BcryptQueue::BcryptQueue(size_t max_pending)
    : max_pending_(max_pending), worker_([this] { Run(); }) {}

BcryptQueue::~BcryptQueue() { Shutdown(); }

bool BcryptQueue::Submit(std::function<void()> job) {
  std::lock_guard lock(mu_);
  if (stopping_ || jobs_.size() >= max_pending_) return false;
  jobs_.push_back(std::move(job));
  wake_.notify_one();
  return true;
}

void BcryptQueue::Shutdown() {
  std::deque<std::function<void()>> dropped;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    dropped.swap(jobs_);
    wake_.notify_one();
  }
  if (worker_.joinable()) worker_.join();
  // `dropped` is destroyed here, on the caller's thread.
}

void BcryptQueue::Run() {
  // Linux applies a nice value to the one thread whose id is given: bcrypt
  // then only uses CPU that serving and the probes leave over.
  ::setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), 19);
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();
  }
}

}  // namespace drivewatch
