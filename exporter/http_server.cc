// SPDX-License-Identifier: Apache-2.0
#include "exporter/http_server.h"

#include <sys/resource.h>
#include <zlib.h>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <list>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>

#include "probes/log.h"

namespace drivewatch {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

// Connections the kernel queues before accept(): room for a fleet of
// scrapers connecting at once (tests/load uses 64).
constexpr int kListenBacklog = 1024;
// How long a refused or failed connection is drained before it is closed,
// so that unread request bytes do not turn the close into a reset that
// loses the error response.
constexpr std::chrono::seconds kLingerTimeout{1};
// Descriptors kept for everything but connections: drives, io_uring, the
// state directory, a reload's files.
constexpr size_t kReservedDescriptors = 128;

// The parts of a request head drivewatch looks at. Beast parses the whole
// head and this keeps only these, so a request holds no more memory than
// its read buffer, and the field count is capped as it is read.
class RequestHead : public http::basic_parser<true> {
 public:
  explicit RequestHead(size_t max_fields) : max_fields_(max_fields) {}

  http::verb method = http::verb::unknown;
  int version = 11;
  std::string target;
  std::string authorization;
  std::string accept_encoding;
  bool too_many_fields = false;

 private:
  void on_request_impl(http::verb m, beast::string_view, beast::string_view t, int v,
                       beast::error_code&) override {
    method = m;
    version = v;
    target.assign(t.data(), t.size());
  }
  void on_response_impl(int, beast::string_view, int, beast::error_code& ec) override {
    ec = http::error::bad_version;  // a request parser never sees one
  }
  void on_field_impl(http::field name, beast::string_view, beast::string_view value,
                     beast::error_code& ec) override {
    if (++fields_ > max_fields_) {
      too_many_fields = true;
      ec = http::error::header_limit;
      return;
    }
    if (name == http::field::authorization) {
      authorization.assign(value.data(), value.size());
    } else if (name == http::field::accept_encoding) {
      if (!accept_encoding.empty()) accept_encoding += ", ";
      accept_encoding.append(value.data(), value.size());
    }
  }
  void on_header_impl(beast::error_code&) override {}
  void on_body_init_impl(const boost::optional<std::uint64_t>&, beast::error_code&) override {}
  // A read-only endpoint has no use for a body: it is read and dropped.
  size_t on_body_impl(beast::string_view body, beast::error_code&) override {
    return body.size();
  }
  void on_chunk_header_impl(std::uint64_t, beast::string_view, beast::error_code&) override {}
  size_t on_chunk_body_impl(std::uint64_t, beast::string_view body,
                            beast::error_code&) override {
    return body.size();
  }
  void on_finish_impl(beast::error_code&) override {}

  size_t fields_ = 0;
  size_t max_fields_;
};

// Fastest level: the copy is made once per publish, on the serving thread.
std::string Gzip(std::string_view in) {
  z_stream zs{};
  if (deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return {};
  }
  std::string out(deflateBound(&zs, in.size()), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return rc == Z_STREAM_END ? out : std::string();
}

std::shared_ptr<const std::string> Text(std::string s) {
  return std::make_shared<const std::string>(std::move(s));
}

// What a web config turns into for serving. A reload builds a new one;
// connections and requests in flight keep the one they started with.
struct ServingConfig {
  WebConfig web;
  std::unique_ptr<asio::ssl::context> tls;  // null for plain HTTP
  std::shared_ptr<BasicAuth> auth;          // null without users
};

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

bool IsParseError(const beast::error_code& ec) {
  return ec.category() == beast::error_code(http::error::bad_target).category();
}

// Asio's own errors, as errno values where they are ones.
bool OutOfDescriptors(const beast::error_code& ec) {
  return ec == asio::error::no_descriptors || ec.value() == ENFILE ||
         ec == asio::error::no_buffer_space || ec == asio::error::no_memory;
}

}  // namespace

namespace detail {

bool AcceptsGzip(std::string_view accept_encoding) {
  // Split by hand: Beast 1.81's ext_list gives an element without
  // parameters the previous element's ones ("*;q=0, gzip" reads as gzip
  // with q=0).
  const auto trim = [](std::string_view v) {
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
    return v;
  };
  std::optional<bool> gzip, any;
  while (!accept_encoding.empty()) {
    const size_t comma = accept_encoding.find(',');
    std::string_view element = accept_encoding.substr(0, comma);
    accept_encoding.remove_prefix(comma == std::string_view::npos ? accept_encoding.size()
                                                                  : comma + 1);
    const size_t semi = element.find(';');
    const std::string_view coding = trim(element.substr(0, semi));
    bool acceptable = true;
    if (semi != std::string_view::npos) {
      // weight = OWS ";" OWS "q=" qvalue
      const std::string_view weight = trim(element.substr(semi + 1));
      if (weight.size() < 2 || (weight[0] != 'q' && weight[0] != 'Q') || weight[1] != '=') {
        acceptable = false;
      } else {
        const std::string_view value = weight.substr(2);
        double q = 0;
        const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), q);
        acceptable = ec == std::errc() && end == value.data() + value.size() && q > 0;
      }
    }
    const beast::string_view name(coding.data(), coding.size());
    if (beast::iequals(name, "gzip") || beast::iequals(name, "x-gzip")) {
      gzip = acceptable;
    } else if (coding == "*") {
      any = acceptable;
    }
  }
  if (gzip) return *gzip;
  return any.value_or(false);
}

}  // namespace detail

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
};

class HttpServer::Impl {
 public:
  Impl(const MetricStore& store, const std::string& landing_page, const HttpLimits& limits,
       std::shared_ptr<const ServingConfig> serving)
      : store_(store),
        landing_page_(Text(landing_page)),
        healthy_(Text("drivewatch is healthy.\n")),
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

  std::shared_ptr<const ServingConfig> Current() {
    std::lock_guard lock(serving_mu_);
    return serving_;
  }
  void SetServing(std::shared_ptr<const ServingConfig> s) {
    std::lock_guard lock(serving_mu_);
    serving_ = std::move(s);
  }

  void Track(ConnectionBase* c) {
    c->where = connections_.insert(connections_.end(), c);
    c->tracked = true;
  }
  void Untrack(ConnectionBase* c) {
    if (!c->tracked) return;
    connections_.erase(c->where);
    c->tracked = false;
  }
  // Marks `c` the most recently active: it is now waiting for a request.
  void Touch(ConnectionBase* c) {
    if (c->tracked) connections_.splice(connections_.end(), connections_, c->where);
  }
  // Closes the connection that has waited longest for a request.
  bool EvictOldestIdle() {
    for (ConnectionBase* c : connections_) {
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
    if (!gzip_) gzip_ = Text(Gzip(*text));
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
  std::list<ConnectionBase*> connections_;
  size_t evicted_ = 0;
  std::shared_ptr<const std::string> text_, gzip_;

  asio::io_context io_{1};
  tcp::acceptor acceptor_{io_};
  asio::steady_timer accept_retry_{io_};
  std::chrono::steady_clock::time_point last_accept_warning_{};

  std::mutex serving_mu_;
  std::shared_ptr<const ServingConfig> serving_;
  // After io_, so it is gone (worker joined) before io_ is.
  BcryptQueue bcrypt_;
  std::thread thread_;

 private:
  void Accept();
  void OnAccept(const beast::error_code& ec, tcp::socket socket);
};

namespace {

template <class Stream>
class Connection : public ConnectionBase,
                   public std::enable_shared_from_this<Connection<Stream>> {
 public:
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

  Connection(HttpServer::Impl& server, tcp::socket socket,
             std::shared_ptr<const ServingConfig> serving)
      : server_(server), serving_(std::move(serving)), stream_(MakeStream(std::move(socket))) {
    server_.Track(this);
  }
  ~Connection() override { server_.Untrack(this); }

  void Close() override {
    beast::error_code ignored;
    Lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
    Lowest().socket().close(ignored);
  }

  void Start() {
    head_.emplace(server_.limits_.max_header_fields);
    Limit();
    Lowest().expires_after(server_.limits_.head_timeout);
    if constexpr (kTls) {
      beast::async_detect_ssl(
          Lowest(), buffer_, [self = this->shared_from_this()](beast::error_code ec, bool tls) {
            if (ec) return;
            if (!tls) return self->RefusePlainHttp();
            self->stream_.async_handshake(
                asio::ssl::stream_base::server, self->buffer_.data(),
                // Variadic: Boost 1.81 constrains this handler as if it took
                // only the error code, then calls it with the bytes used.
                [self](beast::error_code ec, auto... used) {
                  if (ec) return;
                  self->buffer_.consume((size_t{0} + ... + used));
                  self->ReadSome();
                });
          });
    } else {
      ReadSome();
    }
  }

 private:
  Stream MakeStream(tcp::socket socket) {
    if constexpr (kTls) {
      return Stream(beast::tcp_stream(std::move(socket)), *serving_->tls);
    } else {
      return Stream(std::move(socket));
    }
  }
  beast::tcp_stream& Lowest() { return beast::get_lowest_layer(stream_); }

  void Limit() {
    head_->header_limit(static_cast<std::uint32_t>(server_.limits_.max_header_bytes));
    head_->body_limit(server_.limits_.max_body_bytes);
  }

  void ReadSome() {
    http::async_read_some(stream_, buffer_, *head_,
                          [self = this->shared_from_this()](beast::error_code ec, size_t) {
                            self->OnRead(ec);
                          });
  }

  void OnRead(const beast::error_code& ec) {
    if (ec == http::error::header_limit || ec == http::error::buffer_overflow) {
      return Refuse(http::status::request_header_fields_too_large,
                    head_->too_many_fields
                        ? "Request Header Fields Too Large: more than " +
                              std::to_string(server_.limits_.max_header_fields) + " fields\n"
                        : "Request Header Fields Too Large: more than " +
                              std::to_string(server_.limits_.max_header_bytes) + " bytes\n");
    }
    if (ec == http::error::body_limit) {
      return Refuse(http::status::payload_too_large, "Payload Too Large\n");
    }
    if (ec && IsParseError(ec) && ec != http::error::end_of_stream &&
        ec != http::error::partial_message) {
      return Refuse(http::status::bad_request, "Bad Request: " + ec.message() + "\n");
    }
    if (ec) return;  // closed, reset or timed out: nobody to answer
    if (!head_started_) {
      // A keep-alive request's first bytes: its whole head must now arrive
      // within head_timeout, however slowly it drips.
      head_started_ = true;
      Lowest().expires_after(server_.limits_.head_timeout);
    }
    if (!head_->is_done()) return ReadSome();
    Handle();
  }

  void Handle() {
    busy = true;
    Lowest().expires_never();
    auto serving = server_.Current();
    if (!serving->auth) return Route(*serving);
    auto check = serving->auth->Prepare(head_->authorization);
    using Result = BasicAuth::Check::Result;
    if (check.result == Result::kAllowed) return Route(*serving);
    if (check.result == Result::kDenied) return Unauthorized(*serving);
    auto self = this->shared_from_this();
    auto executor = stream_.get_executor();
    const bool queued = server_.bcrypt_.Submit(
        [self, executor, serving, check = std::move(check)]() mutable {
          const bool ok = serving->auth->Verify(check);
          // The connection goes back to the serving thread, which alone
          // may drop it.
          asio::post(executor, [self = std::move(self), serving = std::move(serving), ok] {
            if (ok) {
              self->Route(*serving);
            } else {
              self->Unauthorized(*serving);
            }
          });
        });
    if (!queued) {
      // Answered after a pause rather than at once, so a client looping on
      // wrong passwords is slowed down instead of spinning on the server.
      // Meanwhile the connection may be evicted like an idle one.
      busy = false;
      delay_.emplace(stream_.get_executor());
      delay_->expires_after(std::chrono::seconds(1));
      delay_->async_wait([self = std::move(self), serving](const beast::error_code&) {
        self->busy = true;
        self->Send(*serving, http::status::service_unavailable, "text/plain; charset=utf-8",
                   Text("Service Unavailable: too many password checks waiting; try again\n"),
                   {{"Retry-After", "1"}});
      });
    }
  }

  void Unauthorized(const ServingConfig& serving) {
    Send(serving, http::status::unauthorized, "text/plain; charset=utf-8",
         Text("Unauthorized\n"), {{"WWW-Authenticate", "Basic realm=\"drivewatch\""}});
  }

  void Route(const ServingConfig& serving) {
    const auto method = head_->method;
    if (method != http::verb::get && method != http::verb::head) {
      return Send(serving, http::status::method_not_allowed, "text/plain; charset=utf-8",
                  Text("Method Not Allowed: drivewatch's HTTP endpoint only reads\n"),
                  {{"Allow", "GET, HEAD"}});
    }
    const std::string_view target = head_->target;
    const std::string_view path = target.substr(0, target.find('?'));
    if (path == "/metrics") {
      auto [body, gzipped] = server_.Metrics(detail::AcceptsGzip(head_->accept_encoding));
      std::vector<std::pair<std::string, std::string>> extra = {{"Vary", "Accept-Encoding"}};
      if (gzipped) extra.emplace_back("Content-Encoding", "gzip");
      return Send(serving, http::status::ok, "text/plain; version=0.0.4; charset=utf-8",
                  std::move(body), extra);
    }
    if (path == "/-/healthy") {
      return Send(serving, http::status::ok, "text/plain; charset=utf-8", server_.healthy_);
    }
    if (path == "/") {
      return Send(serving, http::status::ok, "text/html; charset=utf-8", server_.landing_page_);
    }
    Send(serving, http::status::not_found, "text/plain; charset=utf-8", Text("Not Found\n"));
  }

  void Send(const ServingConfig& serving, http::status status, std::string_view type,
            std::shared_ptr<const std::string> body,
            const std::vector<std::pair<std::string, std::string>>& extra = {},
            bool close = false) {
    res_.emplace(status, head_ && head_->version == 10 ? 10 : 11);
    for (const auto& [name, value] : serving.web.headers) res_->set(name, value);
    res_->set(http::field::content_type, beast::string_view(type.data(), type.size()));
    for (const auto& [name, value] : extra) res_->set(name, value);
    body_ = std::move(body);
    const bool head_only = head_ && head_->method == http::verb::head;
    res_->body() = head_only ? beast::span<const char>()
                             : beast::span<const char>(body_->data(), body_->size());
    res_->content_length(body_->size());
    res_->keep_alive(!close && head_ && head_->is_done() && head_->keep_alive());
    Lowest().expires_after(server_.limits_.write_timeout);
    http::async_write(stream_, *res_,
                      [self = this->shared_from_this()](beast::error_code ec, size_t) {
                        self->OnWrite(ec);
                      });
  }

  // Answers a request that cannot be served and closes the connection.
  void Refuse(http::status status, std::string text) {
    busy = true;
    Send(*serving_, status, "text/plain; charset=utf-8", Text(std::move(text)), {},
         /*close=*/true);
  }

  void OnWrite(const beast::error_code& ec) {
    if (ec) return;
    if (!res_->keep_alive()) return Linger();
    res_.reset();
    body_.reset();
    busy = false;
    server_.Touch(this);
    head_.emplace(server_.limits_.max_header_fields);
    Limit();
    // Pipelined requests already read start their head deadline now; an
    // empty buffer waits as an idle keep-alive connection.
    head_started_ = buffer_.size() > 0;
    Lowest().expires_after(head_started_ ? server_.limits_.head_timeout
                                         : server_.limits_.idle_timeout);
    ReadSome();
  }

  // Go's answer, in plain text, to plain HTTP on a TLS port.
  void RefusePlainHttp() {
    static constexpr std::string_view kAnswer =
        "HTTP/1.0 400 Bad Request\r\n"
        "Content-Type: text/plain; charset=utf-8\r\n"
        "Connection: close\r\n"
        "Content-Length: 48\r\n"
        "\r\n"
        "Client sent an HTTP request to an HTTPS server.\n";
    Lowest().expires_after(server_.limits_.write_timeout);
    asio::async_write(Lowest(), asio::buffer(kAnswer.data(), kAnswer.size()),
                      [self = this->shared_from_this()](beast::error_code ec, size_t) {
                        if (!ec) self->Linger();
                      });
  }

  // Half-closes, then reads and drops what the peer still sends until it
  // closes too or kLingerTimeout passes.
  void Linger() {
    beast::error_code ignored;
    Lowest().socket().shutdown(tcp::socket::shutdown_send, ignored);
    Lowest().expires_after(kLingerTimeout);
    Drain();
  }
  void Drain() {
    static char scratch[4096];  // contents never read
    Lowest().async_read_some(asio::buffer(scratch),
                             [self = this->shared_from_this()](beast::error_code ec, size_t) {
                               if (!ec) self->Drain();
                             });
  }

  HttpServer::Impl& server_;
  std::shared_ptr<const ServingConfig> serving_;  // the one accepted with
  Stream stream_;
  beast::flat_buffer buffer_{64 * 1024};
  std::optional<RequestHead> head_;
  bool head_started_ = true;  // the first head's deadline runs from accept
  std::optional<http::response<http::span_body<const char>>> res_;
  std::shared_ptr<const std::string> body_;  // what res_ points into
  std::optional<asio::steady_timer> delay_;  // before a 503
};

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
  if (serving->tls) {
    std::make_shared<Connection<beast::ssl_stream<beast::tcp_stream>>>(*this, std::move(socket),
                                                                        serving)
        ->Start();
  } else {
    std::make_shared<Connection<beast::tcp_stream>>(*this, std::move(socket), serving)->Start();
  }
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
