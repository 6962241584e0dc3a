// SPDX-License-Identifier: Apache-2.0
// Content coding for /metrics: whether a client takes gzip, and the gzip
// itself (zlib).
#include <zlib.h>

#include <boost/beast/core/string.hpp>

#include <charconv>
#include <optional>
#include <string>
#include <string_view>

#include "exporter/http/http_server.h"
#include "exporter/http/http_server_impl.h"

namespace drivewatch {

namespace http_detail {

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

}  // namespace http_detail

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

}  // namespace drivewatch
