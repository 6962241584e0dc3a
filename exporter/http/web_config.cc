// SPDX-License-Identifier: Apache-2.0
// The web config's meaning: which keys exporter-toolkit defines and what
// drivewatch accepts in them, bcrypt hashes, and reading the file. The
// YAML is read in web_config_yaml.cc, TLS is set up in web_config_tls.cc.
#include "exporter/http/web_config.h"

#include <crypt.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <span>
#include <tuple>

#include "config/checks.h"
#include "exporter/http/web_config_tls.h"

namespace drivewatch {

using config::detail::ClosestMatch;
using config::detail::Quote;

std::string WebConfigError::ToString() const {
  std::string out = file;
  if (line > 0) out += ":" + std::to_string(line) + ":" + std::to_string(column);
  out += ": ";
  if (!key.empty()) out += key + ": ";
  out += problem;
  return out;
}

// ---------------------------------------------------------------------------
// bcrypt

bool IsBcryptHash(std::string_view hash, std::string* why) {
  const auto fail = [&](std::string text) {
    if (why) *why = std::move(text);
    return false;
  };
  if (hash.size() < 4 || hash[0] != '$' || hash[1] != '2' || hash[3] != '$' ||
      (hash[2] != 'a' && hash[2] != 'b' && hash[2] != 'y')) {
    return fail("is not a bcrypt hash (expected $2y$, $2b$ or $2a$ then the cost, "
                "e.g. from htpasswd -nBC 10)");
  }
  if (hash.size() != 60) {
    return fail("is not a bcrypt hash: " + std::to_string(hash.size()) +
                " characters, expected 60");
  }
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (!digit(hash[4]) || !digit(hash[5]) || hash[6] != '$') {
    return fail("is not a bcrypt hash: the cost after " + std::string(hash.substr(0, 4)) +
                " must be two digits");
  }
  const int cost = (hash[4] - '0') * 10 + (hash[5] - '0');
  if (cost < 4 || cost > 31) {
    return fail("has bcrypt cost " + std::to_string(cost) + " (expected 04 to 31)");
  }
  for (size_t i = 7; i < hash.size(); ++i) {
    const char c = hash[i];
    const bool ok = c == '.' || c == '/' || (c >= 'A' && c <= 'Z') ||
                    (c >= 'a' && c <= 'z') || digit(c);
    if (!ok) {
      return fail("is not a bcrypt hash: character " + std::to_string(i + 1) +
                  " is outside bcrypt's base64 alphabet");
    }
  }
  return true;
}

bool BcryptMatches(const std::string& password, const std::string& hash) {
  if (password.find('\0') != std::string::npos) return false;
  auto data = std::make_unique<crypt_data>();  // about 32 KiB: not on the stack
  std::memset(data.get(), 0, sizeof(crypt_data));
  const char* out = crypt_r(password.c_str(), hash.c_str(), data.get());
  // libxcrypt returns NULL or a string starting with '*' on failure.
  if (out == nullptr || out[0] == '*') return false;
  const size_t n = std::strlen(out);
  return n == hash.size() && CRYPTO_memcmp(out, hash.data(), n) == 0;
}

// ---------------------------------------------------------------------------
// Validation

namespace {

using detail::YamlNode;
using Kind = YamlNode::Kind;

// Past this many, the rest of a hopeless file is not worth reading about.
constexpr size_t kMaxErrors = 50;

constexpr std::string_view kTopKeys[] = {"tls_server_config", "http_server_config",
                                         "basic_auth_users", "rate_limit"};
constexpr std::string_view kTlsKeys[] = {
    "cert_file",        "key_file",         "client_auth_type", "client_ca_file",
    "min_version",      "max_version",      "prefer_server_cipher_suites",
    "cipher_suites",    "curve_preferences", "client_allowed_sans",
    "cert",             "key",              "client_ca"};
constexpr std::string_view kHttpKeys[] = {"headers", "http2"};
constexpr std::string_view kClientAuthNames[] = {
    "NoClientCert", "RequestClientCert", "RequireAnyClientCert",
    "VerifyClientCertIfGiven", "RequireAndVerifyClientCert"};
// exporter-toolkit's allow list (web/handler.go); a fixed set keeps the
// Prometheus ecosystem consistent and keeps Content-Type, Authorization,
// Set-Cookie and friends out of an operator's hands. nullptr: any value.
struct AllowedHeader {
  std::string_view name;
  std::array<std::string_view, 2> values;
};
constexpr AllowedHeader kAllowedHeaders[] = {
    {"Strict-Transport-Security", {}},
    {"X-Content-Type-Options", {"nosniff", ""}},
    {"X-Frame-Options", {"deny", "sameorigin"}},
    {"X-XSS-Protection", {}},
    {"Content-Security-Policy", {}},
};

std::string JoinPath(std::string_view a, std::string_view b) {
  return a.empty() ? std::string(b) : std::string(a) + "." + std::string(b);
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

const char* KindName(Kind k) {
  switch (k) {
    case Kind::kNull: return "nothing";
    case Kind::kScalar: return "a single value";
    case Kind::kMapping: return "a mapping";
    case Kind::kSequence: return "a list";
  }
  return "?";
}

std::string OneOf(std::span<const std::string_view> names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out += names[i];
  }
  return out;
}

class Validator {
 public:
  Validator(std::string file, std::string base_dir, bool check_files)
      : file_(std::move(file)), base_dir_(std::move(base_dir)), check_files_(check_files) {}

  LoadedWebConfig Run(const YamlNode& root) {
    WebConfig out;
    out.file = file_;
    for (const auto& [key, node] : root.entries) {
      if (key == "tls_server_config") {
        Tls(node, &out);
      } else if (key == "http_server_config") {
        Http(node, &out);
      } else if (key == "basic_auth_users") {
        Users(node, &out);
      } else if (key == "rate_limit") {
        Report(node.key_at, key,
               "rate limiting is not supported by drivewatch (its endpoint serves "
               "a cached snapshot; put a reverse proxy in front to limit rates)");
      } else {
        Unknown(node, "", key, kTopKeys);
      }
    }
    LoadedWebConfig loaded;
    loaded.warnings = std::move(warnings_);
    if (errors_.empty()) {
      loaded.config = std::move(out);
    } else {
      std::stable_sort(errors_.begin(), errors_.end(),
                       [](const WebConfigError& a, const WebConfigError& b) {
                         return std::tie(a.line, a.column) < std::tie(b.line, b.column);
                       });
      if (errors_.size() > kMaxErrors) {
        const size_t more = errors_.size() - kMaxErrors;
        errors_.resize(kMaxErrors);
        errors_.push_back({file_, 0, 0, "",
                           std::to_string(more) + " more problems not shown"});
      }
      loaded.errors = std::move(errors_);
    }
    return loaded;
  }

 private:
  void Report(WebConfigLocation at, std::string key, std::string problem) {
    errors_.push_back({file_, at.line, at.column, std::move(key), std::move(problem)});
  }

  void Unknown(const YamlNode& node, std::string_view path, const std::string& key,
               std::span<const std::string_view> known) {
    std::string what = "unknown key";
    if (auto near = ClosestMatch(key, known)) {
      what += " (did you mean " + Quote(*near) + "?)";
    } else {
      what += " (expected " + OneOf(known) + ")";
    }
    Report(node.key_at, JoinPath(path, key), what);
  }

  bool Expect(const YamlNode& node, const std::string& path, Kind kind) {
    if (node.kind == kind || node.kind == Kind::kNull) return true;
    Report(node.at, path,
           std::string("expected ") + KindName(kind) + ", got " + KindName(node.kind));
    return false;
  }

  // A string setting: a scalar, or nothing (left unset).
  std::optional<std::string> String(const YamlNode& node, const std::string& path) {
    if (!Expect(node, path, Kind::kScalar)) return std::nullopt;
    return node.kind == Kind::kScalar ? node.scalar : std::string();
  }

  std::optional<bool> Bool(const YamlNode& node, const std::string& path) {
    if (!Expect(node, path, Kind::kScalar)) return std::nullopt;
    if (node.kind == Kind::kNull) return std::nullopt;
    if (!node.quoted && (node.scalar == "true" || node.scalar == "True" ||
                         node.scalar == "TRUE")) {
      return true;
    }
    if (!node.quoted && (node.scalar == "false" || node.scalar == "False" ||
                         node.scalar == "FALSE")) {
      return false;
    }
    Report(node.at, path, Quote(node.scalar) + " is not a boolean (expected true or false)");
    return std::nullopt;
  }

  std::string Resolve(const std::string& path) const {
    if (path.empty() || path[0] == '/' || base_dir_.empty()) return path;
    return base_dir_.back() == '/' ? base_dir_ + path : base_dir_ + "/" + path;
  }

  std::optional<TlsVersion> Version(const YamlNode& node, const std::string& path) {
    auto s = String(node, path);
    if (!s) return std::nullopt;
    if (s->empty()) return std::nullopt;
    if (*s == "TLS12") return TlsVersion::kTls12;
    if (*s == "TLS13") return TlsVersion::kTls13;
    if (*s == "TLS10" || *s == "TLS11") {
      Report(node.at, path, Quote(*s) + " is too weak (expected TLS12 or TLS13)");
    } else {
      Report(node.at, path, Quote(*s) + " is not a TLS version (expected TLS12 or TLS13)");
    }
    return std::nullopt;
  }

  // What the tls_server_config keys said, as Tls reads them.
  struct TlsSeen {
    TlsServerConfig tls;
    bool enabled = false;  // any TLS setting given
    bool have_auth_type = false;
    WebConfigLocation auth_at;
    WebConfigLocation max_at;
  };

  void Tls(const YamlNode& section, WebConfig* out) {
    const std::string base = "tls_server_config";
    if (!Expect(section, base, Kind::kMapping)) return;
    const size_t errors_before = errors_.size();
    TlsSeen seen{.auth_at = section.key_at, .max_at = section.key_at};
    for (const auto& [key, node] : section.entries) {
      TlsKey(key, node, base, &seen);
    }
    if (!seen.enabled) return;  // exporter-toolkit: no TLS setting means plain HTTP
    CheckTlsCombination(section, base, seen);
    if (errors_.size() == errors_before && check_files_) {
      CheckTlsFiles(section, base, seen.tls);
    }
    out->tls = std::move(seen.tls);
  }

  void TlsKey(const std::string& key, const YamlNode& node, const std::string& base,
              TlsSeen* seen) {
    const std::string path = JoinPath(base, key);
    TlsServerConfig& tls = seen->tls;
    if (key == "cert_file" || key == "key_file" || key == "client_ca_file") {
      auto s = String(node, path);
      if (!s || s->empty()) return;
      seen->enabled = true;
      if (key == "cert_file") {
        tls.cert_file = Resolve(*s);
        tls.cert_file_at = node.at;
      } else if (key == "key_file") {
        tls.key_file = Resolve(*s);
        tls.key_file_at = node.at;
      } else {
        tls.client_ca_file = Resolve(*s);
        tls.client_ca_file_at = node.at;
      }
    } else if (key == "client_auth_type") {
      ClientAuthType(node, path, seen);
    } else if (key == "min_version") {
      if (auto v = Version(node, path)) tls.min_version = *v;
    } else if (key == "max_version") {
      seen->max_at = node.at;
      if (auto v = Version(node, path)) tls.max_version = *v;
    } else if (key == "prefer_server_cipher_suites") {
      if (auto b = Bool(node, path)) tls.prefer_server_cipher_suites = *b;
    } else if (key == "cipher_suites" || key == "curve_preferences" ||
               key == "client_allowed_sans") {
      if (!Expect(node, path, Kind::kSequence)) return;
      if (node.items.empty()) return;  // empty means the defaults
      Report(node.at, path,
             key == "client_allowed_sans"
                 ? std::string("is not supported by drivewatch (issue client "
                               "certificates from a CA of their own instead)")
                 : "is not supported by drivewatch (OpenSSL's defaults apply: "
                   "TLS 1.3 suites and ECDHE with AEAD ciphers for TLS 1.2)");
    } else if (key == "cert" || key == "key" || key == "client_ca") {
      Report(node.key_at, path,
             "inline PEM is not supported by drivewatch; put it in a file and "
             "use " + key + "_file");
    } else {
      Unknown(node, base, key, kTlsKeys);
    }
  }

  void ClientAuthType(const YamlNode& node, const std::string& path, TlsSeen* seen) {
    auto s = String(node, path);
    if (!s || s->empty()) return;
    seen->enabled = true;
    seen->have_auth_type = true;
    seen->auth_at = node.at;
    if (*s == "RequireClientCert") *s = "RequireAnyClientCert";  // old name
    const auto it = std::find(std::begin(kClientAuthNames), std::end(kClientAuthNames), *s);
    if (it == std::end(kClientAuthNames)) {
      std::string what = Quote(*s) + " is not a client auth type";
      if (auto near = ClosestMatch(*s, kClientAuthNames)) {
        what += " (did you mean " + Quote(*near) + "?)";
      } else {
        what += " (expected " + OneOf(kClientAuthNames) + ")";
      }
      Report(node.at, path, what);
      return;
    }
    seen->tls.client_auth = static_cast<ClientAuth>(it - std::begin(kClientAuthNames));
  }

  // The settings that only make sense together.
  void CheckTlsCombination(const YamlNode& section, const std::string& base,
                           const TlsSeen& seen) {
    const TlsServerConfig& tls = seen.tls;
    if (tls.cert_file.empty()) Report(section.key_at, base, "cert_file is missing");
    if (tls.key_file.empty()) Report(section.key_at, base, "key_file is missing");
    if (tls.max_version < tls.min_version) {
      Report(seen.max_at, base + ".max_version",
             "TLS13 minimum with a TLS12 maximum leaves no version (max_version must "
             "not be below min_version)");
    }
    const bool verifies = tls.client_auth == ClientAuth::kVerifyClientCertIfGiven ||
                          tls.client_auth == ClientAuth::kRequireAndVerifyClientCert;
    if (!tls.client_ca_file.empty() && tls.client_auth == ClientAuth::kNoClientCert) {
      Report(seen.have_auth_type ? seen.auth_at : tls.client_ca_file_at,
             base + (seen.have_auth_type ? ".client_auth_type" : ".client_ca_file"),
             "client_ca_file is set but client_auth_type is NoClientCert (set "
             "client_auth_type to RequireAndVerifyClientCert)");
    }
    if (verifies && tls.client_ca_file.empty()) {
      Report(seen.auth_at, base + ".client_auth_type",
             std::string(kClientAuthNames[static_cast<int>(tls.client_auth)]) +
                 " needs client_ca_file (the CA that signs client certificates)");
    }
  }

  // The certificate, key and CA files load and match; a key every user
  // can read is a warning.
  void CheckTlsFiles(const YamlNode& section, const std::string& base,
                     const TlsServerConfig& tls) {
    if (auto problem = CheckTlsServerConfig(tls)) {
      WebConfigLocation at = section.key_at;
      if (problem->key == "cert_file") at = tls.cert_file_at;
      if (problem->key == "key_file") at = tls.key_file_at;
      if (problem->key == "client_ca_file") at = tls.client_ca_file_at;
      Report(at, problem->key.empty() ? base : JoinPath(base, problem->key),
             problem->message);
    } else if (struct stat st {}; ::stat(tls.key_file.c_str(), &st) == 0 &&
                                  (st.st_mode & S_IROTH) != 0) {
      // Not an error: Go's exporters take such a key too, and a test
      // setup may want it. But anyone on the machine can impersonate
      // the endpoint with it.
      char mode[8];
      std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
      warnings_.push_back({file_, tls.key_file_at.line, tls.key_file_at.column,
                           base + ".key_file",
                           Quote(tls.key_file) + " is readable by every user (mode " +
                               mode + "; expected 0600, or 0640 with a group only "
                               "drivewatch is in)"});
    }
  }

  void Http(const YamlNode& section, WebConfig* out) {
    const std::string base = "http_server_config";
    if (!Expect(section, base, Kind::kMapping)) return;
    for (const auto& [key, node] : section.entries) {
      const std::string path = JoinPath(base, key);
      if (key == "http2") {
        Bool(node, path);  // drivewatch speaks HTTP/1.1 either way
      } else if (key == "headers") {
        if (!Expect(node, path, Kind::kMapping)) continue;
        for (const auto& [name, value] : node.entries) {
          Header(name, value, path, out);
        }
      } else {
        Unknown(node, base, key, kHttpKeys);
      }
    }
  }

  void Header(const std::string& name, const YamlNode& value, const std::string& base,
              WebConfig* out) {
    const std::string path = JoinPath(base, name);
    const AllowedHeader* allowed = nullptr;
    for (const auto& h : kAllowedHeaders) {
      if (EqualsIgnoreCase(h.name, name)) allowed = &h;
    }
    if (allowed == nullptr) {
      std::vector<std::string_view> names;
      for (const auto& h : kAllowedHeaders) names.push_back(h.name);
      std::string what = "HTTP header " + Quote(name) + " cannot be configured";
      if (auto near = ClosestMatch(name, names)) {
        what += " (did you mean " + Quote(*near) + "?)";
      } else {
        what += " (allowed: " + OneOf(names) + ")";
      }
      Report(value.key_at, path, what);
      return;
    }
    auto v = String(value, path);
    if (!v || v->empty()) return;  // blank: not sent
    for (unsigned char c : *v) {
      if (c < 0x20 || c == 0x7f) {
        Report(value.at, path, "control characters are not allowed in a header value");
        return;
      }
    }
    if (!allowed->values[0].empty()) {
      const bool ok = *v == allowed->values[0] || (!allowed->values[1].empty() &&
                                                   *v == allowed->values[1]);
      if (!ok) {
        std::string expected(allowed->values[0]);
        if (!allowed->values[1].empty()) expected += " or " + std::string(allowed->values[1]);
        Report(value.at, path, Quote(*v) + " is not allowed (expected " + expected + ")");
        return;
      }
    }
    out->headers.emplace_back(std::string(allowed->name), *v);
  }

  void Users(const YamlNode& section, WebConfig* out) {
    const std::string base = "basic_auth_users";
    if (!Expect(section, base, Kind::kMapping)) return;
    for (const auto& [name, node] : section.entries) {
      const std::string path = JoinPath(base, name);
      if (name.find(':') != std::string::npos) {
        Report(node.key_at, path, "a user name cannot contain ':' (RFC 7617)");
        continue;
      }
      if (node.kind != Kind::kScalar) {
        Report(node.at, path,
               node.kind == Kind::kNull ? std::string("has no password hash")
                                        : std::string("expected a bcrypt hash, got ") +
                                              KindName(node.kind));
        continue;
      }
      std::string why;
      if (!IsBcryptHash(node.scalar, &why)) {
        // The hash is a secret-ish value: name its shape, not its text.
        Report(node.at, path, "the password hash " + why);
        continue;
      }
      out->users.push_back({name, node.scalar});
    }
  }

  std::string file_;
  std::string base_dir_;
  bool check_files_;
  std::vector<WebConfigError> errors_;
  std::vector<WebConfigError> warnings_;
};

}  // namespace

LoadedWebConfig ParseWebConfig(std::string_view text, const std::string& file_name,
                               const std::string& base_dir, bool check_files) {
  auto yaml = detail::ParseYamlSubset(text);
  if (!yaml.root) {
    LoadedWebConfig out;
    WebConfigError e = yaml.error;
    e.file = file_name;
    out.errors.push_back(std::move(e));
    return out;
  }
  return Validator(file_name, base_dir, check_files).Run(*yaml.root);
}

LoadedWebConfig LoadWebConfigFile(const std::string& path) {
  const auto fail = [&](std::string problem) {
    LoadedWebConfig out;
    out.errors.push_back({path, 0, 0, "", std::move(problem)});
    return out;
  };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(std::string("cannot read the web config: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail("the web config is not a regular file");
  }
  std::string text;
  char buf[8192];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return fail(std::string("cannot read the web config: ") + std::strerror(err));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > kMaxWebConfigBytes) {
      ::close(fd);
      return fail("the web config is larger than " + std::to_string(kMaxWebConfigBytes) +
                  " bytes");
    }
  }
  ::close(fd);
  // exporter-toolkit resolves relative paths against the file's directory.
  std::string dir = ".";
  if (const size_t slash = path.rfind('/'); slash != std::string::npos) {
    dir = slash == 0 ? "/" : path.substr(0, slash);
  }
  return ParseWebConfig(text, path, dir, true);
}

}  // namespace drivewatch
