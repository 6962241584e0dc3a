// SPDX-License-Identifier: Apache-2.0
// The HTTP surface: GET /metrics (the store's latest snapshot), a landing
// page at /, and /-/healthy. It only reads: nothing over HTTP can change what
// drivewatch does, and any method but GET and HEAD gets 405. Served by
// cpp-httplib, which (unlike prometheus-cpp's civetweb exposer on bookworm)
// listens on IPv6 too, with TLS from OpenSSL. TLS, basic auth and extra
// headers come from the web config (exporter/web_config.h).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>

#include "exporter/metric_store.h"
#include "exporter/web_config.h"
#include "probes/expected.h"

namespace httplib {
class Server;
}

namespace drivewatch {

struct ListenAddress {
  std::string host;  // "" for every address
  int port = 0;      // 0 picks a free port
};
// Parses "host:port", "[v6]:port" or ":port".
Expected<ListenAddress> ParseListenAddress(const std::string& text);

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

class HttpServer {
 public:
  // An empty `web` (the default) serves plain HTTP with no authentication.
  HttpServer(const MetricStore& store, std::string landing_page, WebConfig web = {});
  ~HttpServer();

  // Binds and starts serving on a background thread pool. Fails if the
  // address cannot be bound or the TLS files no longer load.
  Status Start(const std::string& listen_address);
  void Stop();
  // The port actually bound (useful with port 0).
  int port() const { return port_; }
  // A URL a human can paste, e.g. "https://localhost:9647/metrics".
  std::string MetricsUrl() const;
  const WebConfig& web_config() const { return web_; }

  // Whether an Authorization header value lets the request in. Always true
  // when no users are configured. Exposed for tests.
  bool Authorized(const std::string& authorization);

 private:
  const MetricStore& store_;
  std::string landing_page_;
  WebConfig web_;
  BasicAuthCache auth_cache_;
  // One bcrypt at a time: each takes tens of milliseconds of CPU.
  std::mutex bcrypt_mu_;
  std::string decoy_hash_;  // checked for unknown users, so timing hides them
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::string host_;
  int port_ = 0;
  int socket_fd_ = -1;  // the listening socket, set while Start() binds
};

}  // namespace drivewatch
