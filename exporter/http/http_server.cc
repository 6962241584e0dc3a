// SPDX-License-Identifier: Apache-2.0
#include "exporter/http/http_server.h"

#include <sys/resource.h>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "config/util/log.h"
#include "exporter/http/http_server_impl.h"

namespace drivewatch {

namespace {

using http_detail::ServingConfig;

// Connections the kernel queues before accept(): room for a fleet of
// scrapers connecting at once (tests/load uses 64).
constexpr int kListenBacklog = 1024;
// Descriptors kept for everything but connections: drives, io_uring, the
// state directory, a reload's files.
constexpr size_t kReservedDescriptors = 128;

Expected<std::shared_ptr<const ServingConfig>> MakeServing(const WebConfig& web,
                                                           const std::string& where) {
  auto serving = std::make_shared<ServingConfig>();
  serving->web = web;
  if (!web.users.empty()) serving->auth = std::make_shared<BasicAuth>(web.users);
  if (web.tls) {
    const auto fail = [&](const std::string& why) {
      return Error{EINVAL, -1, "cannot set up TLS on " + where + ": " + why};
    };
    try {
      serving->tls = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_server);
    } catch (const std::exception& e) {
      return fail(std::string("cannot create an OpenSSL context: ") + e.what());
    }
    if (auto problem = ConfigureTlsServerContext(*web.tls, serving->tls->native_handle())) {
      return fail((problem->key.empty() ? "" : problem->key + ": ") + problem->message);
    }
  }
  return std::shared_ptr<const ServingConfig>(std::move(serving));
}

// Asio's own errors, as errno values where they are ones.
bool OutOfDescriptors(const beast::error_code& ec) {
  return ec == asio::error::no_descriptors || ec.value() == ENFILE ||
         ec == asio::error::no_buffer_space || ec == asio::error::no_memory;
}

}  // namespace

void HttpServer::Impl::Accept() {
  acceptor_.async_accept([this](const beast::error_code& ec, tcp::socket socket) {
    OnAccept(ec, std::move(socket));
  });
}

void HttpServer::Impl::OnAccept(const beast::error_code& ec, tcp::socket socket) {
  if (ec == asio::error::operation_aborted) return;
  if (ec) {
    if (OutOfDescriptors(ec)) {
      const auto now = std::chrono::steady_clock::now();
      if (now - last_accept_warning_ > std::chrono::seconds(10)) {
        last_accept_warning_ = now;
        log::Warn("cannot accept a connection on " + address_ + ": " + ec.message() +
                  " (" + std::to_string(connections_.size()) +
                  " open); closing the oldest idle one and retrying");
      }
      EvictOldestIdle();
      accept_retry_.expires_after(std::chrono::milliseconds(100));
      accept_retry_.async_wait([this](const beast::error_code& e) {
        if (!e) Accept();
      });
      return;
    }
    return Accept();  // the peer went before accept(): nothing to do
  }
  beast::error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  if (connections_.size() >= limits_.max_connections && !EvictOldestIdle()) {
    socket.close(ignored);  // every connection is mid-request
    return Accept();
  }
  auto serving = Current();
  http_detail::StartConnection(*this, std::move(socket), std::move(serving));
  Accept();
}

Status HttpServer::Impl::Listen(const ListenAddress& addr, const std::string& text,
                                std::string* bound_host, int* bound_port) {
  address_ = text;
  // An empty host means every address: IPv6 "::" with IPV6_V6ONLY off also
  // accepts IPv4; fall back to IPv4 where IPv6 is off.
  const std::vector<std::string> hosts =
      addr.host.empty() ? std::vector<std::string>{"::", "0.0.0.0"}
                        : std::vector<std::string>{addr.host};
  beast::error_code ec;
  for (const auto& host : hosts) {
    tcp::resolver resolver(io_);
    const auto endpoints = resolver.resolve(host, std::to_string(addr.port),
                                            tcp::resolver::passive |
                                                tcp::resolver::numeric_service,
                                            ec);
    if (ec) continue;
    for (const auto& entry : endpoints) {
      const tcp::endpoint ep = entry.endpoint();
      acceptor_.open(ep.protocol(), ec);
      if (ec) continue;
      // SO_REUSEADDR allows a quick restart over TIME_WAIT; SO_REUSEPORT,
      // which would let a second drivewatch share the port, stays off.
      acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
      if (ep.address().is_v6() && addr.host.empty()) {
        acceptor_.set_option(asio::ip::v6_only(false), ec);
      }
      if (!acceptor_.bind(ep, ec) && !acceptor_.listen(kListenBacklog, ec)) {
        *bound_host = host;
        *bound_port = acceptor_.local_endpoint(ec).port();
        return Ok{};
      }
      beast::error_code ignored;
      acceptor_.close(ignored);
    }
  }
  return Error{ec.value(), -1, "cannot listen on " + text + ": " + ec.message()};
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

HttpServer::HttpServer(const MetricStore& store, std::string landing_page, WebConfig web,
                       HttpLimits limits)
    : store_(store),
      landing_page_(std::move(landing_page)),
      web_(std::move(web)),
      limits_(limits),
      auth_(std::make_unique<BasicAuth>(web_.users)) {}

HttpServer::~HttpServer() { Stop(); }

bool HttpServer::Authorized(const std::string& authorization) {
  return auth_->Authorized(authorization);
}

Status HttpServer::Start(const std::string& listen_address) {
  Stop();
  auto addr = ParseListenAddress(listen_address);
  if (!addr) return addr.error();
  auto serving = MakeServing(web_, listen_address);
  if (!serving) return serving.error();
  // The connection cap stays below the open-file limit, so a flood of
  // connections meets eviction rather than EMFILE.
  HttpLimits limits = limits_;
  struct rlimit files {};
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY) {
    const size_t soft = files.rlim_cur;
    const size_t room = soft > 2 * kReservedDescriptors ? soft - kReservedDescriptors : soft / 2;
    limits.max_connections = std::min(limits.max_connections, room);
  }
  auto impl = std::make_unique<Impl>(store_, landing_page_, limits, std::move(*serving));
  if (Status s = impl->Listen(*addr, listen_address, &host_, &port_); !s) return s;
  impl_ = std::move(impl);
  impl_->Run();
  return Ok{};
}

Status HttpServer::Reconfigure(const WebConfig& web) {
  if (!impl_) return Error{EINVAL, -1, "the HTTP server is not running"};
  auto serving = MakeServing(web, impl_->address_);
  if (!serving) return serving.error();
  impl_->SetServing(std::move(*serving));
  web_ = web;
  auth_ = std::make_unique<BasicAuth>(web_.users);
  return Ok{};
}

void HttpServer::Stop() { impl_.reset(); }

std::string HttpServer::MetricsUrl() const {
  std::string host = host_;
  if (host == "::" || host == "0.0.0.0" || host.empty()) host = "localhost";
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return std::string(web_.tls ? "https://" : "http://") + host + ":" +
         std::to_string(port_) + "/metrics";
}

}  // namespace drivewatch
