// SPDX-License-Identifier: Apache-2.0
// One HTTP connection's life on the serving thread: TLS detection and
// handshake, the request head read within its deadline and caps, basic
// auth (bcrypt off the thread), routing, the response, and lingering
// before a close.
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "exporter/http/http_server_impl.h"

namespace drivewatch {

namespace http = beast::http;

namespace {

// How long a refused or failed connection is drained before it is closed,
// so that unread request bytes do not turn the close into a reset that
// loses the error response.
constexpr std::chrono::seconds kLingerTimeout{1};

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

bool IsParseError(const beast::error_code& ec) {
  return ec.category() == beast::error_code(http::error::bad_target).category();
}

}  // namespace

namespace {

using http_detail::ConnectionBase;
using http_detail::ServingConfig;
using http_detail::Text;

// RFC 8446 §5.1: a record is a 5-byte header, whose last two bytes are the
// length, and at most 2^14 bytes of payload.
constexpr size_t kTlsRecordHeader = 5;
constexpr size_t kTlsMaxRecordPayload = size_t{1} << 14;

template <bool kTls>
class Connection : public ConnectionBase,
                   public std::enable_shared_from_this<Connection<kTls>> {
 public:
  using TlsStream = beast::ssl_stream<beast::tcp_stream>;
  using Stream = std::conditional_t<kTls, TlsStream, beast::tcp_stream>;

  Connection(HttpServer::Impl& server, tcp::socket socket,
             std::shared_ptr<const ServingConfig> serving)
      : server_(server), serving_(std::move(serving)), tcp_(std::move(socket)) {
    server_.Track(this);
  }
  ~Connection() override {
    server_.UntrackHandshake(this);
    server_.Untrack(this);
  }

  void Close() override {
    beast::error_code ignored;
    Lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
    Lowest().socket().close(ignored);
  }

  void Start() {
    head_.emplace(server_.limits_.max_header_fields);
    Limit();
    head_deadline_ = std::chrono::steady_clock::now() + server_.limits_.head_timeout;
    Lowest().expires_at(head_deadline_);
    if constexpr (kTls) {
      beast::async_detect_ssl(
          tcp_, buffer_, [self = this->shared_from_this()](beast::error_code ec, bool tls) {
            if (ec) return;
            if (!tls) return self->RefusePlainHttp();
            self->ReadClientHello();
          });
    } else {
      ReadSome();
    }
  }

 private:
  // The stream requests are read from and answered on.
  Stream& stream() {
    if constexpr (kTls) {
      return *tls_;
    } else {
      return tcp_;
    }
  }
  beast::tcp_stream& Lowest() {
    if constexpr (kTls) {
      if (tls_) return beast::get_lowest_layer(*tls_);
    }
    return tcp_;
  }

  // An SSL object with its buffers (Asio's two 17 KiB record buffers, the
  // BIO pair's, OpenSSL's read buffer) takes some 90 KiB, so it is made
  // only once the first record, the ClientHello, is whole. Until then a
  // peer holds no more than a buffer about the size of what it sent, and a
  // thousand peers that stall part way through cost a few MiB, not 90.
  void ReadClientHello() {
    // async_detect_ssl answered "TLS", so the record header is in.
    const auto* header = static_cast<const unsigned char*>(buffer_.data().data());
    const size_t payload = (size_t{header[3]} << 8) | header[4];
    // A record announcing more is handed over at 2^14 bytes; OpenSSL
    // refuses it with a record_overflow alert.
    const size_t record = kTlsRecordHeader + std::min(payload, kTlsMaxRecordPayload);
    if (buffer_.size() >= record) return Handshake();
    // No read goes past the record, and read_size keeps the buffer within
    // about twice what has arrived (512 bytes at first).
    tcp_.async_read_some(buffer_.prepare(beast::read_size(buffer_, record - buffer_.size())),
                         [self = this->shared_from_this()](beast::error_code ec, size_t n) {
                           if (ec) return;
                           self->buffer_.commit(n);
                           self->ReadClientHello();
                         });
  }

  void Handshake() {
    server_.TrackHandshake(this);
    tls_.emplace(std::move(tcp_), *serving_->tls);
    // Stated again rather than trusting the move to carry the timer: the
    // head deadline runs from accept, handshake included.
    Lowest().expires_at(head_deadline_);
    tls_->async_handshake(asio::ssl::stream_base::server, buffer_.data(),
                          // Variadic: Boost 1.81 constrains this handler as
                          // if it took only the error code, then calls it
                          // with the bytes used.
                          [self = this->shared_from_this()](beast::error_code ec, auto... used) {
                            if (ec) return;
                            self->buffer_.consume((size_t{0} + ... + used));
                            self->ReadSome();
                          });
  }

  void Limit() {
    head_->header_limit(static_cast<std::uint32_t>(server_.limits_.max_header_bytes));
    head_->body_limit(server_.limits_.max_body_bytes);
  }

  void ReadSome() {
    http::async_read_some(stream(), buffer_, *head_,
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
    server_.UntrackHandshake(this);
    Lowest().expires_never();
    auto serving = server_.Current();
    if (!serving->auth) return Route(*serving);
    auto check = serving->auth->Prepare(head_->authorization);
    using Result = BasicAuth::Check::Result;
    if (check.result == Result::kAllowed) return Route(*serving);
    if (check.result == Result::kDenied) return Unauthorized(*serving);
    auto self = this->shared_from_this();
    auto executor = stream().get_executor();
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
      delay_.emplace(stream().get_executor());
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
    http::async_write(stream(), *res_,
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
  // The accepted connection. Over TLS it moves into tls_ with the
  // ClientHello (ReadClientHello says why).
  beast::tcp_stream tcp_;
  [[no_unique_address]] std::conditional_t<kTls, std::optional<TlsStream>, std::monostate> tls_;
  // The first request head's deadline, from accept; the TLS handshake
  // counts against it.
  std::chrono::steady_clock::time_point head_deadline_;
  beast::flat_buffer buffer_{64 * 1024};
  std::optional<RequestHead> head_;
  bool head_started_ = true;  // the first head's deadline runs from accept
  std::optional<http::response<http::span_body<const char>>> res_;
  std::shared_ptr<const std::string> body_;  // what res_ points into
  std::optional<asio::steady_timer> delay_;  // before a 503
};

}  // namespace

namespace http_detail {

void StartConnection(HttpServer::Impl& server, tcp::socket socket,
                     std::shared_ptr<const ServingConfig> serving) {
  if (serving->tls) {
    std::make_shared<Connection<true>>(server, std::move(socket), serving)->Start();
  } else {
    std::make_shared<Connection<false>>(server, std::move(socket), serving)->Start();
  }
}

}  // namespace http_detail

}  // namespace drivewatch
