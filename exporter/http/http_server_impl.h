// SPDX-License-Identifier: Apache-2.0
// Internal to the HTTP server: what its listener (exporter/http/http_server.cc)
// and its connections (exporter/http/http_connection.cc) share. The listener
// owns the serving thread, the connection list and the current serving
// config; a connection reads request heads and answers them.
#pragma once

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>

#include <chrono>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "config/util/log.h"
#include "exporter/http/basic_auth.h"
#include "exporter/http/http_server.h"
#include "exporter/http/web_config.h"
#include "exporter/metric_store.h"

namespace drivewatch {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;

namespace http_detail {

inline std::shared_ptr<const std::string> Text(std::string s) {
  return std::make_shared<const std::string>(std::move(s));
}

// gzip of `in` at the fastest level (exporter/http/http_gzip.cc); empty if zlib
// fails.
std::string Gzip(std::string_view in);

// What a web config turns into for serving. A reload builds a new one;
// connections and requests in flight keep the one they started with.
struct ServingConfig {
  WebConfig web;
  std::unique_ptr<asio::ssl::context> tls;  // null for plain HTTP
  std::shared_ptr<BasicAuth> auth;          // null without users
};

// The connection list and limits live here, touched only on the serving
// thread; the config is shared with the thread that reloads.
class ConnectionBase {
 public:
  virtual ~ConnectionBase() = default;
  // Closes the socket; pending operations end and the connection goes.
  virtual void Close() = 0;
  bool busy = false;  // between a complete request head and its response
  bool tracked = false;
  std::list<ConnectionBase*>::iterator where;
  bool handshaking = false;  // in HttpServer::Impl::handshakes_
  std::list<ConnectionBase*>::iterator handshake_where;
};

}  // namespace http_detail

class HttpServer::Impl {
 public:
  Impl(const MetricStore& store, const std::string& landing_page, const HttpLimits& limits,
       std::shared_ptr<const http_detail::ServingConfig> serving)
      : store_(store),
        landing_page_(http_detail::Text(landing_page)),
        healthy_(http_detail::Text("drivewatch is healthy.\n")),
        limits_(limits),
        serving_(std::move(serving)),
        bcrypt_(limits.max_pending_bcrypt) {}

  ~Impl() {
    io_.stop();
    if (thread_.joinable()) thread_.join();
    bcrypt_.Shutdown();
  }

  Status Listen(const ListenAddress& addr, const std::string& text, std::string* bound_host,
                int* bound_port);
  void Run() {
    Accept();
    thread_ = std::thread([this] {
      for (;;) {
        try {
          io_.run();
          return;
        } catch (const std::exception& e) {
          log::Error(std::string("HTTP server: ") + e.what() + "; serving on");
        }
      }
    });
  }

  std::shared_ptr<const http_detail::ServingConfig> Current() {
    std::lock_guard lock(serving_mu_);
    return serving_;
  }
  void SetServing(std::shared_ptr<const http_detail::ServingConfig> s) {
    std::lock_guard lock(serving_mu_);
    serving_ = std::move(s);
  }

  void Track(http_detail::ConnectionBase* c) {
    c->where = connections_.insert(connections_.end(), c);
    c->tracked = true;
  }
  void Untrack(http_detail::ConnectionBase* c) {
    if (!c->tracked) return;
    connections_.erase(c->where);
    c->tracked = false;
  }
  // Marks `c` the most recently active: it is now waiting for a request.
  void Touch(http_detail::ConnectionBase* c) {
    if (c->tracked) connections_.splice(connections_.end(), connections_, c->where);
  }
  // A TLS connection is about to make its TLS state. Past
  // max_tls_handshakes the oldest one still before its first request is
  // closed.
  void TrackHandshake(http_detail::ConnectionBase* c) {
    if (handshakes_.size() >= limits_.max_tls_handshakes && !handshakes_.empty()) {
      http_detail::ConnectionBase* oldest = handshakes_.front();
      UntrackHandshake(oldest);
      Untrack(oldest);
      oldest->Close();
      ++evicted_;
    }
    c->handshake_where = handshakes_.insert(handshakes_.end(), c);
    c->handshaking = true;
  }
  // Its first request head is in, or it goes.
  void UntrackHandshake(http_detail::ConnectionBase* c) {
    if (!c->handshaking) return;
    handshakes_.erase(c->handshake_where);
    c->handshaking = false;
  }
  // Closes the connection that has waited longest for a request.
  bool EvictOldestIdle() {
    for (http_detail::ConnectionBase* c : connections_) {
      if (c->busy) continue;
      Untrack(c);
      c->Close();
      ++evicted_;
      return true;
    }
    return false;
  }

  // The metrics text, or its gzip, cached until the store publishes anew.
  std::pair<std::shared_ptr<const std::string>, bool> Metrics(bool gzip) {
    auto text = store_.Render();
    if (text != text_) {
      text_ = text;
      gzip_.reset();
    }
    if (!gzip) return {text, false};
    if (!gzip_) gzip_ = http_detail::Text(http_detail::Gzip(*text));
    if (gzip_->empty()) return {text, false};
    return {gzip_, true};
  }

  const MetricStore& store_;
  const std::shared_ptr<const std::string> landing_page_;
  const std::shared_ptr<const std::string> healthy_;
  const HttpLimits limits_;
  std::string address_;  // as given, for messages

  // Declared before io_: connections still owned by its handlers leave
  // this list when io_ is destroyed.
  std::list<http_detail::ConnectionBase*> connections_;
  // TLS connections with their TLS state made and no request head yet,
  // oldest first.
  std::list<http_detail::ConnectionBase*> handshakes_;
  size_t evicted_ = 0;
  std::shared_ptr<const std::string> text_, gzip_;

  asio::io_context io_{1};
  tcp::acceptor acceptor_{io_};
  asio::steady_timer accept_retry_{io_};
  std::chrono::steady_clock::time_point last_accept_warning_{};

  std::mutex serving_mu_;
  std::shared_ptr<const http_detail::ServingConfig> serving_;
  // After io_, so it is gone (worker joined) before io_ is.
  BcryptQueue bcrypt_;
  std::thread thread_;

 private:
  void Accept();
  void OnAccept(const beast::error_code& ec, tcp::socket socket);
};

namespace http_detail {

// Serves a connection just accepted, over TLS when `serving` has it.
void StartConnection(HttpServer::Impl& server, tcp::socket socket,
                     std::shared_ptr<const ServingConfig> serving);

}  // namespace http_detail

}  // namespace drivewatch
