#include "exporter/http_server.h"

#include <httplib.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <thread>

namespace drivewatch {

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

HttpServer::HttpServer(const MetricStore& store, std::string landing_page)
    : store_(store), landing_page_(std::move(landing_page)) {}

HttpServer::~HttpServer() { Stop(); }

Status HttpServer::Start(const std::string& listen_address) {
  auto addr = ParseListenAddress(listen_address);
  if (!addr) return addr.error();
  auto server = std::make_unique<httplib::Server>();
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
  server->set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
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
  return "http://" + host + ":" + std::to_string(port_) + "/metrics";
}

}  // namespace drivewatch
