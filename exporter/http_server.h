// The HTTP surface: GET /metrics (the store's latest snapshot), a landing
// page at /, and /-/healthy. It only reads: nothing over HTTP can change what
// drivewatch does. Served by cpp-httplib, which (unlike prometheus-cpp's
// civetweb exposer on bookworm) listens on IPv6 too.
#pragma once

#include <memory>
#include <string>
#include <thread>

#include "exporter/metric_store.h"
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

class HttpServer {
 public:
  HttpServer(const MetricStore& store, std::string landing_page);
  ~HttpServer();

  // Binds and starts serving on a background thread pool.
  Status Start(const std::string& listen_address);
  void Stop();
  // The port actually bound (useful with port 0).
  int port() const { return port_; }
  // A URL a human can paste, e.g. "http://localhost:9647/metrics".
  std::string MetricsUrl() const;

 private:
  const MetricStore& store_;
  std::string landing_page_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::string host_;
  int port_ = 0;
};

}  // namespace drivewatch
