// SPDX-License-Identifier: Apache-2.0
#include "exporter/http_server.h"

#include <httplib.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

namespace drivewatch {
namespace {

// Connections the kernel queues before accept(): room for a fleet of
// scrapers connecting at once (tests/load uses 64).
constexpr int kListenBacklog = 128;

// RFC 4648 base64, strict: padding required, no whitespace.
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

Expected<ListenAddress> ParseListenAddress(const std::string& text) {
  const auto bad = [&](const std::string& why) {
    return Error{EINVAL, -1,
                 "listen address \"" + text + "\": " + why +
                     " (expected host:port, [ipv6]:port or :port)"};
  };
  ListenAddress out;
  std::string port;
  if (!text.empty() && text[0] == '[') {
    const size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() ||
        text[close + 1] != ':') {
      return bad("unterminated IPv6 address or missing port");
    }
    out.host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string::npos) return bad("missing port");
    out.host = text.substr(0, colon);
    if (out.host.find(':') != std::string::npos) {
      return bad("IPv6 addresses need brackets");
    }
    port = text.substr(colon + 1);
  }
  int value = -1;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() ||
      value < 0 || value > 65535) {
    return bad("port \"" + port + "\" is not a number from 0 to 65535");
  }
  out.port = value;
  return out;
}

HttpServer::HttpServer(const MetricStore& store, std::string landing_page, WebConfig web)
    : store_(store), landing_page_(std::move(landing_page)), web_(std::move(web)) {
  // The decoy has the highest cost in use, so an unknown user is never
  // answered faster than a known one. Its salt and digest are arbitrary:
  // crypt() runs the full cost and the comparison then fails.
  int cost = 4;
  for (const auto& u : web_.users) {
    if (!IsBcryptHash(u.bcrypt_hash)) continue;  // never matches anyway
    cost = std::max(cost, (u.bcrypt_hash[4] - '0') * 10 + (u.bcrypt_hash[5] - '0'));
  }
  char prefix[16];
  std::snprintf(prefix, sizeof prefix, "$2b$%02d$", cost);
  decoy_hash_ = std::string(prefix) + std::string(53, '.');
}

HttpServer::~HttpServer() { Stop(); }

bool HttpServer::Authorized(const std::string& authorization) {
  if (web_.users.empty()) return true;
  // RFC 7617: "Basic" (any case), one space, base64 of "user:password".
  if (authorization.size() < 6 || strncasecmp(authorization.c_str(), "Basic ", 6) != 0) {
    return false;
  }
  size_t start = 6;
  while (start < authorization.size() && authorization[start] == ' ') ++start;
  const auto decoded = DecodeBase64(std::string_view(authorization).substr(start));
  if (!decoded) return false;
  const size_t colon = decoded->find(':');
  if (colon == std::string::npos) return false;
  const std::string_view user = std::string_view(*decoded).substr(0, colon);
  const std::string password = decoded->substr(colon + 1);
  // Look at every user, so the time taken does not say which matched.
  const BasicAuthUser* found = nullptr;
  for (const auto& u : web_.users) {
    if (ConstantTimeEquals(u.name, user)) found = &u;
  }
  const std::string& hash = found ? found->bcrypt_hash : decoy_hash_;
  const std::string key = Sha256(user, hash, password);
  if (found && auth_cache_.Contains(key)) return true;
  bool ok = false;
  {
    std::lock_guard lock(bcrypt_mu_);
    ok = BcryptMatches(password, hash);
  }
  if (!ok || !found) return false;
  auth_cache_.Insert(key);
  return true;
}

Status HttpServer::Start(const std::string& listen_address) {
  auto addr = ParseListenAddress(listen_address);
  if (!addr) return addr.error();
  std::unique_ptr<httplib::Server> server;
  if (web_.tls) {
    std::optional<TlsSetupProblem> problem;
    auto tls_server = std::make_unique<httplib::SSLServer>([&](SSL_CTX& ctx) {
      problem = ConfigureTlsServerContext(*web_.tls, &ctx);
      return !problem.has_value();
    });
    if (!tls_server->is_valid()) {
      return Error{EINVAL, -1,
                   "cannot set up TLS on " + listen_address + ": " +
                       (problem ? (problem->key.empty() ? "" : problem->key + ": ") +
                                      problem->message
                                : std::string("cannot create an OpenSSL context"))};
    }
    server = std::move(tls_server);
  } else {
    server = std::make_unique<httplib::Server>();
  }
  if (!web_.headers.empty()) {
    httplib::Headers headers;
    for (const auto& [name, value] : web_.headers) headers.emplace(name, value);
    server->set_default_headers(std::move(headers));
  }
  // Authentication first, so nobody without credentials learns anything;
  // then only reads get through.
  server->set_pre_routing_handler([this](const httplib::Request& req,
                                         httplib::Response& res) {
    if (!web_.users.empty() && !Authorized(req.get_header_value("Authorization"))) {
      res.status = 401;
      res.set_header("WWW-Authenticate", "Basic realm=\"drivewatch\"");
      res.set_content("Unauthorized\n", "text/plain; charset=utf-8");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (req.method != "GET" && req.method != "HEAD") {
      res.status = 405;
      res.set_header("Allow", "GET, HEAD");
      res.set_content("Method Not Allowed: drivewatch's HTTP endpoint only reads\n",
                      "text/plain; charset=utf-8");
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  // Few threads: Prometheus scrapes one at a time, and each request is a
  // copy of a cached string.
  server->new_task_queue = [] { return new httplib::ThreadPool(4); };
  server->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    const auto text = store_.Render();
    res.set_content(*text, "text/plain; version=0.0.4; charset=utf-8");
  });
  server->Get("/-/healthy", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("drivewatch is healthy.\n", "text/plain; charset=utf-8");
  });
  server->Get("/", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(landing_page_, "text/html; charset=utf-8");
  });
  server->set_payload_max_length(64 * 1024);
  // cpp-httplib's default also sets SO_REUSEPORT, which would let a second
  // drivewatch share the port silently; SO_REUSEADDR alone only allows a
  // quick restart over TIME_WAIT.
  // The server keeps this callback: it writes a member, not a local of
  // Start() that would be gone if the server ever bound again.
  socket_fd_ = -1;
  server->set_socket_options([this](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    socket_fd_ = sock;  // the last one offered is the one that binds
  });

  // An empty host means every address: IPv6 "::" also accepts IPv4 on
  // Linux's default (bindv6only=0); fall back to IPv4 where IPv6 is off.
  std::vector<std::string> hosts;
  if (addr->host.empty()) {
    hosts = {"::", "0.0.0.0"};
  } else {
    hosts = {addr->host};
  }
  int bound = -1;
  int err = 0;
  for (const auto& host : hosts) {
    errno = 0;
    if (addr->port == 0) {
      bound = server->bind_to_any_port(host);
    } else {
      bound = server->bind_to_port(host, addr->port) ? addr->port : -1;
    }
    err = errno;
    if (bound > 0) {
      host_ = host;
      break;
    }
  }
  if (bound <= 0) {
    return Error{err, -1,
                 "cannot listen on " + listen_address + ": " +
                     (err ? std::strerror(err) : "bind failed")};
  }
  // cpp-httplib (Debian's shared library, built with its default) listens
  // with a backlog of 5: with more clients connecting at once the kernel
  // drops SYNs and a client retries only after 1 s, then 3 s (64 scrapers in
  // tests/load saw requests time out at 2 s). listen() again on the bound
  // socket raises the backlog; Linux allows that on a listening socket.
  if (socket_fd_ >= 0 && ::listen(socket_fd_, kListenBacklog) != 0) {
    const int listen_err = errno;
    ::close(socket_fd_);  // not listening yet, so the server would not close it
    return Error{listen_err, -1,
                 "cannot listen on " + listen_address + " with a backlog of " +
                     std::to_string(kListenBacklog) + ": " + std::strerror(listen_err)};
  }
  port_ = bound;
  server_ = std::move(server);
  thread_ = std::thread([s = server_.get()] { s->listen_after_bind(); });
  // stop() is a no-op until the accept loop runs; wait for it so that a
  // Stop() right after Start() cannot leave the thread blocked in accept.
  while (!server_->is_running()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return Ok{};
}

void HttpServer::Stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
  server_.reset();
}

std::string HttpServer::MetricsUrl() const {
  std::string host = host_;
  if (host == "::" || host == "0.0.0.0" || host.empty()) host = "localhost";
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return std::string(web_.tls ? "https://" : "http://") + host + ":" +
         std::to_string(port_) + "/metrics";
}

}  // namespace drivewatch
