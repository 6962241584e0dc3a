// SPDX-License-Identifier: Apache-2.0
// The web config: TLS, basic auth and extra response headers for the HTTP
// endpoint, read from the Prometheus exporter-toolkit YAML file given with
// --web.config.file (the format of node_exporter and friends; see
// docs/security.md). The YAML is read by libyaml (web_config_yaml.cc), kept
// to the block style those files use: block mappings, block sequences of
// single values, one-line plain and quoted scalars and comments. Anchors,
// aliases, tags, flow collections, block scalars, values spanning lines,
// complex and duplicate keys and a second document are refused with a
// located error.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

struct ssl_ctx_st;  // OpenSSL's SSL_CTX, kept out of this header

namespace drivewatch {

// Go's crypto/tls ClientAuthType, by the names exporter-toolkit accepts.
enum class ClientAuth {
  kNoClientCert,
  kRequestClientCert,           // asked for, neither required nor verified
  kRequireAnyClientCert,        // required, not verified
  kVerifyClientCertIfGiven,     // verified against client_ca_file if sent
  kRequireAndVerifyClientCert,  // required and verified: real mutual TLS
};

enum class TlsVersion { kTls12, kTls13 };

// Where a value sits in the web-config file (1-based), for error messages.
struct WebConfigLocation {
  int line = 0;
  int column = 0;
  bool operator==(const WebConfigLocation&) const = default;
};

struct TlsServerConfig {
  // Absolute, or made relative to the web-config file's directory.
  std::string cert_file;
  std::string key_file;
  std::string client_ca_file;  // "" when not set
  ClientAuth client_auth = ClientAuth::kNoClientCert;
  TlsVersion min_version = TlsVersion::kTls12;
  TlsVersion max_version = TlsVersion::kTls13;
  bool prefer_server_cipher_suites = true;
  WebConfigLocation cert_file_at, key_file_at, client_ca_file_at;

  bool operator==(const TlsServerConfig&) const = default;
};

struct BasicAuthUser {
  std::string name;
  std::string bcrypt_hash;  // "$2y$10$..." (or $2a$, $2b$); checked at load
  bool operator==(const BasicAuthUser&) const = default;
};

struct WebConfig {
  std::string file;                  // the file it came from, "" for none
  std::optional<TlsServerConfig> tls;  // plain HTTP when empty
  std::vector<BasicAuthUser> users;  // no authentication when empty
  // Extra response headers, canonical names (Content-Security-Policy, ...).
  std::vector<std::pair<std::string, std::string>> headers;

  bool operator==(const WebConfig&) const = default;
};

struct WebConfigError {
  std::string file;
  int line = 0;    // 0 when the problem is the whole file
  int column = 0;
  std::string key;  // dotted path, e.g. "tls_server_config.min_version"
  std::string problem;
  // "FILE:LINE:COL: key: problem", the shape every drivewatch config error has.
  std::string ToString() const;
};

struct LoadedWebConfig {
  std::optional<WebConfig> config;     // set when errors is empty
  std::vector<WebConfigError> errors;  // every problem found, in file order
  // Accepted but risky, e.g. a private key every user can read.
  std::vector<WebConfigError> warnings;
};

// Limits that keep a hostile or broken file cheap to reject.
inline constexpr size_t kMaxWebConfigBytes = 1 << 20;
inline constexpr int kMaxWebConfigDepth = 16;
inline constexpr size_t kMaxWebConfigNodes = 20000;

// Reads and validates `path`: syntax, keys, values, bcrypt hashes, and (when
// TLS is configured) that the certificate, key and client CA files load and
// that the key matches the certificate.
LoadedWebConfig LoadWebConfigFile(const std::string& path);

// Parses and validates `text` as if read from `file_name`. Relative paths
// are joined to `base_dir`. With check_files false, certificate and key
// files are not opened (for fuzzing and syntax-only tests).
LoadedWebConfig ParseWebConfig(std::string_view text, const std::string& file_name,
                               const std::string& base_dir, bool check_files = true);

// A problem applying TLS settings: which setting, and what went wrong.
struct TlsSetupProblem {
  std::string key;  // "cert_file", "key_file", "client_ca_file" or ""
  std::string message;
};

// Puts `tls` on a server SSL_CTX: versions, TLS 1.2 suites (ECDHE with
// AEAD only, as Go's defaults minus CBC), certificate chain, key (checked
// against the certificate), client CA list and verification mode. The
// single place both validation and the server set TLS up.
std::optional<TlsSetupProblem> ConfigureTlsServerContext(const TlsServerConfig& tls,
                                                         ssl_ctx_st* ctx);

// True if `hash` looks like a bcrypt hash crypt(3) can check:
// $2a$/$2b$/$2y$, a two-digit cost from 04 to 31, 53 characters of bcrypt's
// base64. Sets *why otherwise.
bool IsBcryptHash(std::string_view hash, std::string* why = nullptr);

// Checks a Basic-auth password against a bcrypt hash with crypt_r(3), and
// compares the result in constant time.
bool BcryptMatches(const std::string& password, const std::string& hash);

namespace detail {

struct YamlEntry;

// A node of the web-config YAML, built from libyaml's events. Exposed for
// the unit tests.
struct YamlNode {
  enum class Kind { kNull, kScalar, kMapping, kSequence };
  Kind kind = Kind::kNull;
  std::string scalar;  // kScalar
  bool quoted = false;
  std::vector<YamlEntry> entries;  // kMapping, in order
  std::vector<YamlNode> items;                            // kSequence
  WebConfigLocation at;      // where the value starts (or its key, if null)
  WebConfigLocation key_at;  // where its key starts, for mapping values
};

// One "key: value" of a mapping. A struct of its own rather than a
// std::pair, which may not hold the still-incomplete YamlNode.
struct YamlEntry {
  std::string key;
  YamlNode value;
};

struct YamlResult {
  std::optional<YamlNode> root;  // a mapping (possibly empty) on success
  WebConfigError error;          // set when root is empty (file left blank)
};

// Reads the block style described above with libyaml's event parser
// (which does not recurse), within kMaxWebConfigBytes, kMaxWebConfigDepth
// and kMaxWebConfigNodes.
YamlResult ParseYamlSubset(std::string_view text);

}  // namespace detail
}  // namespace drivewatch
