// SPDX-License-Identifier: Apache-2.0
// TLS for the HTTP endpoint: the OpenSSL server context a web config's
// tls_server_config describes, set up in one place for both the check at
// load time and the server.
#include "exporter/http/web_config_tls.h"

#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "config/checks.h"

namespace drivewatch {

using config::detail::Quote;

namespace {

std::string OpenSslError() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    // "error:0A080002:SSL routines::system lib": keep the reason only.
    std::string_view s = buf;
    if (size_t c = s.rfind(':'); c != std::string_view::npos) s.remove_prefix(c + 1);
    if (!out.empty()) out += "; ";
    out += s;
  }
  return out.empty() ? "unknown OpenSSL error" : out;
}

// Readability first, so the message carries errno rather than OpenSSL's.
std::optional<std::string> UnreadableFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "cannot read " + Quote(path) + ": " + std::strerror(errno);
  struct stat st {};
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  ::close(fd);
  if (!regular) return Quote(path) + " is not a regular file";
  return std::nullopt;
}

int AcceptAnyClientCert(int, X509_STORE_CTX*) { return 1; }

// Protocol versions, TLS 1.2 cipher suites and the connection options.
std::optional<TlsSetupProblem> SetProtocol(const TlsServerConfig& tls, SSL_CTX* ctx) {
  const auto version = [](TlsVersion v) {
    return v == TlsVersion::kTls13 ? TLS1_3_VERSION : TLS1_2_VERSION;
  };
  if (!SSL_CTX_set_min_proto_version(ctx, version(tls.min_version)) ||
      !SSL_CTX_set_max_proto_version(ctx, version(tls.max_version))) {
    return TlsSetupProblem{"min_version", "cannot set the TLS versions: " + OpenSslError()};
  }
  // TLS 1.2 only: 1.3 has nothing but AEAD suites. docs/security.md
  // promises forward secrecy and AEAD, which OpenSSL's default list (with
  // CBC and SHA-1 suites) does not keep.
  static constexpr char kTls12Suites[] =
      "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
      "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
      "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";
  if (SSL_CTX_set_cipher_list(ctx, kTls12Suites) != 1) {
    return TlsSetupProblem{"", "cannot set the TLS 1.2 cipher suites: " + OpenSslError()};
  }
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
                               (tls.prefer_server_cipher_suites
                                    ? SSL_OP_CIPHER_SERVER_PREFERENCE
                                    : 0));
  return std::nullopt;
}

// The server's certificate chain and its private key, which must match.
std::optional<TlsSetupProblem> LoadCertificateAndKey(const TlsServerConfig& tls,
                                                     SSL_CTX* ctx) {
  if (auto why = UnreadableFile(tls.cert_file)) return TlsSetupProblem{"cert_file", *why};
  if (SSL_CTX_use_certificate_chain_file(ctx, tls.cert_file.c_str()) != 1) {
    return TlsSetupProblem{"cert_file", Quote(tls.cert_file) +
                                            " holds no usable PEM certificate: " +
                                            OpenSslError()};
  }
  if (auto why = UnreadableFile(tls.key_file)) return TlsSetupProblem{"key_file", *why};
  if (SSL_CTX_use_PrivateKey_file(ctx, tls.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    const std::string err = OpenSslError();
    if (err.find("values mismatch") != std::string::npos ||
        err.find("mismatch") != std::string::npos) {
      return TlsSetupProblem{"key_file", Quote(tls.key_file) +
                                             " does not match the certificate in " +
                                             Quote(tls.cert_file)};
    }
    return TlsSetupProblem{"key_file", Quote(tls.key_file) +
                                           " holds no usable PEM private key (an "
                                           "encrypted key is not supported): " +
                                           err};
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    ERR_clear_error();
    return TlsSetupProblem{"key_file", Quote(tls.key_file) +
                                           " does not match the certificate in " +
                                           Quote(tls.cert_file)};
  }
  return std::nullopt;
}

// The CAs client certificates are verified against, also named in the
// CertificateRequest.
std::optional<TlsSetupProblem> LoadClientCa(const TlsServerConfig& tls, SSL_CTX* ctx) {
  if (auto why = UnreadableFile(tls.client_ca_file)) {
    return TlsSetupProblem{"client_ca_file", *why};
  }
  if (SSL_CTX_load_verify_locations(ctx, tls.client_ca_file.c_str(), nullptr) != 1) {
    return TlsSetupProblem{"client_ca_file", Quote(tls.client_ca_file) +
                                                 " holds no usable PEM certificate: " +
                                                 OpenSslError()};
  }
  // The CA names sent in the CertificateRequest, so clients pick the
  // right certificate.
  STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(tls.client_ca_file.c_str());
  if (names == nullptr || sk_X509_NAME_num(names) == 0) {
    if (names) sk_X509_NAME_pop_free(names, X509_NAME_free);
    ERR_clear_error();
    return TlsSetupProblem{"client_ca_file",
                           Quote(tls.client_ca_file) + " holds no PEM certificate"};
  }
  SSL_CTX_set_client_CA_list(ctx, names);
  return std::nullopt;
}

// Asks for client certificates as client_auth_type says: Go's
// RequestClientCert and RequireAnyClientCert take any certificate;
// OpenSSL verifies whatever it gets unless the callback says yes.
void SetClientVerification(ClientAuth client_auth, SSL_CTX* ctx) {
  int mode = SSL_VERIFY_NONE;
  bool verify = false;
  switch (client_auth) {
    case ClientAuth::kNoClientCert:
      break;
    case ClientAuth::kRequestClientCert:
      mode = SSL_VERIFY_PEER;
      break;
    case ClientAuth::kRequireAnyClientCert:
      mode = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
      break;
    case ClientAuth::kVerifyClientCertIfGiven:
      mode = SSL_VERIFY_PEER;
      verify = true;
      break;
    case ClientAuth::kRequireAndVerifyClientCert:
      mode = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
      verify = true;
      break;
  }
  SSL_CTX_set_verify(ctx, mode, verify ? nullptr : AcceptAnyClientCert);
}

}  // namespace

std::optional<TlsSetupProblem> ConfigureTlsServerContext(const TlsServerConfig& tls,
                                                         SSL_CTX* ctx) {
  ERR_clear_error();
  if (auto problem = SetProtocol(tls, ctx)) return problem;
  if (auto problem = LoadCertificateAndKey(tls, ctx)) return problem;
  if (!tls.client_ca_file.empty()) {
    if (auto problem = LoadClientCa(tls, ctx)) return problem;
  }
  SetClientVerification(tls.client_auth, ctx);
  ERR_clear_error();
  return std::nullopt;
}

std::optional<TlsSetupProblem> CheckTlsServerConfig(const TlsServerConfig& tls) {
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(SSL_CTX_new(TLS_server_method()),
                                                         SSL_CTX_free);
  if (!ctx) return TlsSetupProblem{"", "cannot create a TLS context: " + OpenSslError()};
  return ConfigureTlsServerContext(tls, ctx.get());
}

}  // namespace drivewatch
