// SPDX-License-Identifier: Apache-2.0
// The HTTP surface: GET /metrics (the store's latest snapshot), a landing
// page at /, and /-/healthy. It only reads: nothing over HTTP can change what
// drivewatch does, and any method but GET and HEAD gets 405. TLS, basic auth
// and extra headers come from the web config (exporter/http/web_config.h).
//
// Served by Boost.Beast on one Asio event loop (docs/security.md says why),
// so an idle or slow peer costs a socket and a few kilobytes, never a
// thread. Every connection has an overall deadline for its request head, the
// head has a byte and a field cap (431 past them), connections are capped
// with the oldest idle one evicted for a newcomer, and bcrypt runs off the
// serving thread (exporter/http/basic_auth.h).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "config/util/expected.h"
#include "exporter/http/basic_auth.h"
#include "exporter/http/web_config.h"
#include "exporter/metric_store.h"

namespace drivewatch {

struct ListenAddress {
  std::string host;  // "" for every address
  int port = 0;      // 0 picks a free port
};
// Parses "host:port", "[v6]:port" or ":port".
Expected<ListenAddress> ParseListenAddress(const std::string& text);

// The serving limits. The defaults are the daemon's; tests shrink them.
struct HttpLimits {
  // From accept (or a keep-alive request's first byte) to the end of the
  // request head, TLS handshake included: the whole head, not per byte.
  std::chrono::milliseconds head_timeout{10000};
  // How long a keep-alive connection may wait for its next request.
  std::chrono::milliseconds idle_timeout{60000};
  // For writing a response to a peer that reads slowly.
  std::chrono::milliseconds write_timeout{30000};
  // Request line plus header fields, in bytes, and the number of fields.
  size_t max_header_bytes = 16 * 1024;
  size_t max_header_fields = 100;
  size_t max_body_bytes = 64 * 1024;  // read and discarded
  // Open connections; a newcomer past it evicts the oldest idle one.
  // Start() lowers it to the open-file limit less 128 descriptors.
  size_t max_connections = 1024;
  // TLS connections from a whole ClientHello (when their TLS state, some
  // 90 KiB, is made) to their first whole request head; a newcomer past it
  // closes the oldest. It bounds what peers that stall in or just after
  // the handshake cost; an honest client counts for a round trip or two.
  size_t max_tls_handshakes = 64;
  // bcrypt checks waiting for the worker; past it, 503.
  size_t max_pending_bcrypt = 8;
};

class HttpServer {
 public:
  // An empty `web` (the default) serves plain HTTP with no authentication.
  HttpServer(const MetricStore& store, std::string landing_page, WebConfig web = {},
             HttpLimits limits = {});
  ~HttpServer();

  // Binds and starts serving on a background thread. Fails if the address
  // cannot be bound or the TLS files no longer load.
  Status Start(const std::string& listen_address);
  // Applies a new web config (certificates reread) to the connections
  // accepted from now on and to every next request, without closing the
  // listening socket. On error the running config stays.
  Status Reconfigure(const WebConfig& web);
  void Stop();
  // The port actually bound (useful with port 0).
  int port() const { return port_; }
  // A URL a human can paste, e.g. "https://localhost:9647/metrics".
  std::string MetricsUrl() const;
  const WebConfig& web_config() const { return web_; }

  // Whether an Authorization header value lets the request in, checked on
  // the calling thread. Always true when no users are configured. Exposed
  // for tests.
  bool Authorized(const std::string& authorization);

  class Impl;

 private:
  const MetricStore& store_;
  std::string landing_page_;
  WebConfig web_;
  HttpLimits limits_;
  std::unique_ptr<BasicAuth> auth_;  // for Authorized(); follows Reconfigure()
  std::unique_ptr<Impl> impl_;
  std::string host_;
  int port_ = 0;
};

namespace detail {
// Whether an Accept-Encoding value (RFC 9110 §12.5.3) lets the response be
// gzipped: "gzip" or "*" with a q-value above 0, an explicit gzip entry
// taking precedence over "*".
bool AcceptsGzip(std::string_view accept_encoding);
}  // namespace detail

}  // namespace drivewatch
