// SPDX-License-Identifier: Apache-2.0
#include "exporter/http/web_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "exporter/commands/cli.h"
#include "exporter/http/http_server.h"
#include "exporter/metric_store.h"

namespace drivewatch {
namespace {

using ::testing::HasSubstr;
using Kind = detail::YamlNode::Kind;

const std::string kFixtures = std::string(DW_FIXTURE_DIR) + "/webconfig/";
// alice / wonderland and bob / builder, bcrypt cost 4.
const std::string kAliceHash = "$2y$04$7XgErvA/q6MDvzDEkYtj7.sL8dpSX8ZqA1ZaZ3VVxlk88.QfWOB7a";
const std::string kBobHash = "$2b$04$jNFKUrT/U3gAFH11fTex6eTho/Q5zvpqnqp.wsg96iaL.oZBlCelC";

std::vector<std::string> Errors(const LoadedWebConfig& loaded) {
  std::vector<std::string> out;
  for (const auto& e : loaded.errors) out.push_back(e.ToString());
  return out;
}

LoadedWebConfig Parse(std::string_view text) {
  return ParseWebConfig(text, "web.yml", "/etc/dw", /*check_files=*/false);
}

// Every error, one per line.
std::string FirstError(std::string_view text) {
  std::string out;
  for (const auto& e : Parse(text).errors) out += e.ToString() + "\n";
  return out;
}

// --- the YAML subset --------------------------------------------------------

TEST(YamlSubsetTest, NestedMappingsScalarsAndComments) {
  auto r = detail::ParseYamlSubset(
      "# comment\n"
      "a:\n"
      "  b: plain value  # trailing comment\n"
      "  c: 'it''s # not a comment'\n"
      "  d: \"tab\\there \\u00e9 \\\"q\\\"\"\n"
      "  e:\n"
      "  f: ~\n"
      "  g:\n"
      "    h: x#y\n"
      "top: 1\n");
  ASSERT_TRUE(r.root) << r.error.problem;
  const auto& root = *r.root;
  ASSERT_EQ(root.entries.size(), 2u);
  const auto& a = root.entries[0].value;
  ASSERT_EQ(a.kind, Kind::kMapping);
  ASSERT_EQ(a.entries.size(), 6u);
  EXPECT_EQ(a.entries[0].value.scalar, "plain value");
  EXPECT_EQ(a.entries[0].value.at.line, 3);
  EXPECT_EQ(a.entries[0].value.at.column, 6);
  EXPECT_EQ(a.entries[1].value.scalar, "it's # not a comment");
  EXPECT_TRUE(a.entries[1].value.quoted);
  EXPECT_EQ(a.entries[2].value.scalar, "tab\there \xc3\xa9 \"q\"");
  EXPECT_EQ(a.entries[3].value.kind, Kind::kNull);
  EXPECT_EQ(a.entries[4].value.kind, Kind::kNull);
  ASSERT_EQ(a.entries[5].value.kind, Kind::kMapping);
  EXPECT_EQ(a.entries[5].value.entries[0].value.scalar, "x#y");
  EXPECT_EQ(root.entries[1].key, "top");
}

TEST(YamlSubsetTest, BlockSequencesIndentedAndAtTheKeysLevel) {
  auto r = detail::ParseYamlSubset(
      "a:\n"
      "- one\n"
      "- 'two'\n"
      "b:\n"
      "  - three\n"
      "c: d\n");
  ASSERT_TRUE(r.root) << r.error.problem;
  const auto& e = r.root->entries;
  ASSERT_EQ(e.size(), 3u);
  ASSERT_EQ(e[0].value.kind, Kind::kSequence);
  ASSERT_EQ(e[0].value.items.size(), 2u);
  EXPECT_EQ(e[0].value.items[1].scalar, "two");
  ASSERT_EQ(e[1].value.kind, Kind::kSequence);
  EXPECT_EQ(e[1].value.items[0].scalar, "three");
  EXPECT_EQ(e[2].value.scalar, "d");
}

TEST(YamlSubsetTest, DocumentStartBomAndCrlfAreAccepted) {
  auto r = detail::ParseYamlSubset("\xEF\xBB\xBF---\r\na: b\r\n");
  ASSERT_TRUE(r.root) << r.error.problem;
  EXPECT_EQ(r.root->entries[0].value.scalar, "b");
  auto empty = detail::ParseYamlSubset("");
  ASSERT_TRUE(empty.root);
  EXPECT_TRUE(empty.root->entries.empty());
}

TEST(YamlSubsetTest, UnsupportedSyntaxIsLocated) {
  struct Case {
    const char* text;
    const char* error;
  };
  const Case cases[] = {
      {"a: &x b\n", "web.yml:1:4: a: anchors (&) are not supported"},
      {"a: *x\n", "web.yml:1:4: a: aliases (*) are not supported"},
      {"a: !!str b\n", "web.yml:1:4: a: tags (!) are not supported"},
      {"a: [b, c]\n", "web.yml:1:4: a: flow collections"},
      {"a: |\n  text\n", "web.yml:1:4: a: block scalars"},
      {"a: \"open\n", "web.yml:1:4: a: unterminated double-quoted string"},
      {"a: 'open\n", "web.yml:1:4: a: unterminated single-quoted string"},
      {"a: \"bad \\q\"\n", "web.yml:1:9: a: unknown escape \\q"},
      {"a:\n\tb: c\n", "web.yml:2:1: tab in indentation"},
      {"a: b\na: c\n", "web.yml:2:1: a: duplicate key \"a\" (first at line 1)"},
      {"a: b\n  c: d\n", "web.yml:2:3: unexpected indentation"},
      {"a:\n    b: c\n  d: e\n", "web.yml:3:3: a: indentation does not match"},
      {"a: b: c\n", "web.yml:1:5: a: a ':' followed by a space inside a value"},
      {"just text\n", "web.yml:1:1: expected \"key: value\""},
      {"a:\n- b: c\n", "web.yml:2:3: a: mappings inside lists are not supported"},
      {"- a\n", "web.yml:1:1: a \"- \" list item where a key was expected"},
      {"? a\n", "web.yml:1:1: a key cannot start with '?'"},
      {"a: b\n---\nc: d\n", "web.yml:2:1: a second YAML document"},
      {"a:\n  b:\n    c: d\n   e: f\n", "web.yml:4:4: a.b: indentation does not match"},
      {"a: \"x\" y\n", "web.yml:1:8: a: unexpected text after the quoted string"},
      {"a: b\x01\n", "web.yml:1:5: control character 1"},
      {"a:b\n", "web.yml:1:1: expected \"key: value\""},
  };
  for (const auto& c : cases) {
    auto loaded = Parse(c.text);
    ASSERT_EQ(loaded.errors.size(), 1u) << c.text;
    EXPECT_THAT(loaded.errors[0].ToString(), HasSubstr(c.error)) << c.text;
  }
}

TEST(YamlSubsetTest, DeepNestingIsRefusedWithoutRecursion) {
  std::string text;
  for (int i = 0; i < 1000; ++i) {
    text += std::string(static_cast<size_t>(i), ' ') + "k:\n";
  }
  auto r = detail::ParseYamlSubset(text);
  ASSERT_FALSE(r.root);
  EXPECT_THAT(r.error.problem, HasSubstr("nested deeper than 16 levels"));
  EXPECT_EQ(r.error.line, kMaxWebConfigDepth + 1);  // the root is a level too
}

TEST(YamlSubsetTest, SizeAndEntryLimits) {
  const std::string big(kMaxWebConfigBytes + 1, '#');
  EXPECT_FALSE(detail::ParseYamlSubset(big).root);
  std::string many = "a:\n";
  for (size_t i = 0; i <= kMaxWebConfigNodes; ++i) many += "- x\n";
  auto r = detail::ParseYamlSubset(many);
  ASSERT_FALSE(r.root);
  EXPECT_THAT(r.error.problem, HasSubstr("more than"));
}

TEST(YamlSubsetTest, ManyKeysStayCheapAndErrorsAreCapped) {
  std::string text = "basic_auth_users:\n";
  for (int i = 0; i < 15000; ++i) text += "  user" + std::to_string(i) + ": x\n";
  auto loaded = Parse(text);
  ASSERT_EQ(loaded.errors.size(), 51u);
  EXPECT_EQ(loaded.errors.back().problem, "14950 more problems not shown");
  EXPECT_THAT(FirstError("a: 1\n" + std::string(300, 'k') + ": 2\n"),
              HasSubstr("web.yml:2:1: a key longer than 256 bytes"));
}

// A cheap stand-in for the fuzzer: random and mutated inputs never crash
// and always give either a config or a located error.
TEST(YamlSubsetTest, RandomInputNeverCrashes) {
  std::mt19937 rng(1234);
  const std::string alphabet = "ab: -#'\"\\\n\t{}[]&*!|>?%@`~\r\x01\xc3\xa9$2y";
  std::ifstream in(kFixtures + "good_basic_auth.yml");
  const std::string seed((std::istreambuf_iterator<char>(in)), {});
  for (int round = 0; round < 3000; ++round) {
    std::string text;
    if (round % 2 == 0) {
      const size_t n = rng() % 200;
      for (size_t i = 0; i < n; ++i) text += alphabet[rng() % alphabet.size()];
    } else {
      text = seed;
      for (int k = 0; k < 4; ++k) {
        text[rng() % text.size()] = alphabet[rng() % alphabet.size()];
      }
    }
    auto loaded = Parse(text);
    if (!loaded.config) {
      ASSERT_FALSE(loaded.errors.empty());
      EXPECT_EQ(loaded.errors[0].file, "web.yml");
    }
  }
}

// --- validation -------------------------------------------------------------

TEST(WebConfigTest, GoodFixtureWithUsersAndHeaders) {
  auto loaded = LoadWebConfigFile(kFixtures + "good_basic_auth.yml");
  ASSERT_TRUE(loaded.config) << ::testing::PrintToString(Errors(loaded));
  const WebConfig& c = *loaded.config;
  EXPECT_FALSE(c.tls);
  ASSERT_EQ(c.users.size(), 3u);
  EXPECT_EQ(c.users[0].name, "alice");
  EXPECT_EQ(c.users[1].name, "bob");
  EXPECT_EQ(c.users[2].bcrypt_hash.substr(0, 4), "$2a$");
  ASSERT_EQ(c.headers.size(), 3u);
  EXPECT_EQ(c.headers[0].first, "Content-Security-Policy");
  EXPECT_EQ(c.headers[0].second, "default-src 'self'");
}

TEST(WebConfigTest, EmptySectionsMeanPlainHttpWithoutAuth) {
  auto loaded = LoadWebConfigFile(kFixtures + "good_empty.yml");
  ASSERT_TRUE(loaded.config) << ::testing::PrintToString(Errors(loaded));
  EXPECT_FALSE(loaded.config->tls);
  EXPECT_TRUE(loaded.config->users.empty());
  EXPECT_TRUE(loaded.config->headers.empty());
}

TEST(WebConfigTest, RelativePathsAreRelativeToTheFilesDirectory) {
  std::ifstream in(kFixtures + "tls_relative.yml");
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  auto loaded = ParseWebConfig(text, "tls_relative.yml", "/srv/dw", false);
  ASSERT_TRUE(loaded.config) << ::testing::PrintToString(Errors(loaded));
  const auto& tls = *loaded.config->tls;
  EXPECT_EQ(tls.cert_file, "/srv/dw/certs/server.crt");
  EXPECT_EQ(tls.key_file, "/etc/drivewatch/server.key");
  EXPECT_EQ(tls.client_ca_file, "/srv/dw/certs/ca.crt");
  EXPECT_EQ(tls.client_auth, ClientAuth::kRequireAndVerifyClientCert);
  EXPECT_EQ(tls.min_version, TlsVersion::kTls13);
  // Through the file loader the base is the fixture directory.
  auto from_file = LoadWebConfigFile(kFixtures + "tls_relative.yml");
  ASSERT_FALSE(from_file.errors.empty());
  EXPECT_THAT(from_file.errors[0].ToString(),
              HasSubstr("tls_relative.yml:4:14: tls_server_config.cert_file: cannot read \"" +
                        kFixtures + "certs/server.crt\""));
}

TEST(WebConfigTest, WeakVersionsAreRefusedWithTheirLocation) {
  auto loaded = LoadWebConfigFile(kFixtures + "bad_weak_tls.yml");
  ASSERT_EQ(loaded.errors.size(), 2u);
  EXPECT_EQ(loaded.errors[0].ToString(),
            kFixtures + "bad_weak_tls.yml:4:16: tls_server_config.min_version: \"TLS10\" "
                        "is too weak (expected TLS12 or TLS13)");
  EXPECT_THAT(loaded.errors[1].ToString(), HasSubstr(":5:16: tls_server_config.max_version"));
  EXPECT_THAT(FirstError("tls_server_config:\n  cert_file: a\n  key_file: b\n"
                         "  min_version: TLS14\n"),
              HasSubstr("\"TLS14\" is not a TLS version (expected TLS12 or TLS13)"));
  EXPECT_THAT(FirstError("tls_server_config:\n  cert_file: a\n  key_file: b\n"
                         "  min_version: TLS13\n  max_version: TLS12\n"),
              HasSubstr("web.yml:5:16: tls_server_config.max_version: "));
}

TEST(WebConfigTest, UnknownKeysSuggestTheClosest) {
  auto loaded = LoadWebConfigFile(kFixtures + "bad_unknown_keys.yml");
  ASSERT_EQ(loaded.errors.size(), 2u) << ::testing::PrintToString(Errors(loaded));
  EXPECT_THAT(loaded.errors[0].ToString(),
              HasSubstr(":4:3: tls_server_config.client_auth_typ: unknown key (did you "
                        "mean \"client_auth_type\"?)"));
  EXPECT_THAT(loaded.errors[1].ToString(),
              HasSubstr(":5:1: basic_auth_user: unknown key (did you mean "
                        "\"basic_auth_users\"?)"));
  EXPECT_THAT(FirstError("zzz: 1\n"), HasSubstr("zzz: unknown key (expected tls_server_config"));
}

TEST(WebConfigTest, ClientAuthRules) {
  EXPECT_THAT(FirstError("tls_server_config:\n  cert_file: a\n  key_file: b\n"
                         "  client_auth_type: RequireAndVerifyClientCert\n"),
              HasSubstr("web.yml:4:21: tls_server_config.client_auth_type: "
                        "RequireAndVerifyClientCert needs client_ca_file"));
  EXPECT_THAT(FirstError("tls_server_config:\n  cert_file: a\n  key_file: b\n"
                         "  client_ca_file: ca.crt\n"),
              HasSubstr("client_ca_file is set but client_auth_type is NoClientCert"));
  EXPECT_THAT(FirstError("tls_server_config:\n  client_auth_type: RequestClientCert\n"),
              HasSubstr("web.yml:1:1: tls_server_config: cert_file is missing"));
  auto legacy = Parse("tls_server_config:\n  cert_file: a\n  key_file: b\n"
                      "  client_auth_type: RequireClientCert\n");
  ASSERT_TRUE(legacy.config);
  EXPECT_EQ(legacy.config->tls->client_auth, ClientAuth::kRequireAnyClientCert);
}

TEST(WebConfigTest, HeadersFollowExporterToolkitsAllowList) {
  auto loaded = LoadWebConfigFile(kFixtures + "bad_headers.yml");
  ASSERT_EQ(loaded.errors.size(), 4u);
  EXPECT_THAT(loaded.errors[0].ToString(),
              HasSubstr(":3:5: http_server_config.headers.Authorization: HTTP header "
                        "\"Authorization\" cannot be configured"));
  EXPECT_THAT(loaded.errors[2].ToString(),
              HasSubstr("\"allow\" is not allowed (expected deny or sameorigin)"));
  EXPECT_THAT(loaded.errors[3].ToString(), HasSubstr("did you mean \"X-Content-Type-Options\"?"));
  EXPECT_THAT(FirstError("http_server_config:\n  headers:\n    X-XSS-Protection: \"1\\r\\nSet-Cookie: a\"\n"),
              HasSubstr("control characters are not allowed"));
  auto lower = Parse("http_server_config:\n  headers:\n    x-frame-options: deny\n");
  ASSERT_TRUE(lower.config);
  EXPECT_EQ(lower.config->headers[0].first, "X-Frame-Options");
}

TEST(WebConfigTest, MalformedHashesAreRefusedAtLoad) {
  auto loaded = LoadWebConfigFile(kFixtures + "bad_hashes.yml");
  ASSERT_EQ(loaded.errors.size(), 7u) << ::testing::PrintToString(Errors(loaded));
  EXPECT_THAT(loaded.errors[0].ToString(),
              HasSubstr(":2:10: basic_auth_users.plain: the password hash is not a bcrypt hash"));
  // The message never repeats the hash itself.
  for (const auto& e : loaded.errors) EXPECT_THAT(e.problem, ::testing::Not(HasSubstr("7XgErvA")));
}

TEST(WebConfigTest, UnsupportedExporterToolkitSettingsAreNamed) {
  EXPECT_THAT(FirstError("tls_server_config:\n  cert: |\n"), HasSubstr("block scalars"));
  EXPECT_THAT(FirstError("tls_server_config:\n  cert: abc\n  key_file: k\n"),
              HasSubstr("tls_server_config.cert: inline PEM is not supported"));
  EXPECT_THAT(FirstError("tls_server_config:\n  cert_file: a\n  key_file: b\n"
                         "  curve_preferences:\n    - X25519\n"),
              HasSubstr("web.yml:5:5: tls_server_config.curve_preferences: is not supported"));
  EXPECT_THAT(FirstError("rate_limit:\n  burst: 1\n"), HasSubstr("rate_limit: rate limiting"));
  EXPECT_THAT(FirstError("http_server_config:\n  http2: maybe\n"),
              HasSubstr("\"maybe\" is not a boolean"));
  EXPECT_THAT(FirstError("basic_auth_users: alice\n"),
              HasSubstr("basic_auth_users: expected a mapping, got a single value"));
}

// --- bcrypt -----------------------------------------------------------------

TEST(BcryptTest, HashShapes) {
  EXPECT_TRUE(IsBcryptHash(kAliceHash));
  EXPECT_TRUE(IsBcryptHash(kBobHash));
  std::string why;
  EXPECT_FALSE(IsBcryptHash("$2x$04$7XgErvA/q6MDvzDEkYtj7.sL8dpSX8ZqA1ZaZ3VVxlk88.QfWOB7a", &why));
  EXPECT_FALSE(IsBcryptHash("$2y$03$7XgErvA/q6MDvzDEkYtj7.sL8dpSX8ZqA1ZaZ3VVxlk88.QfWOB7a", &why));
  EXPECT_THAT(why, HasSubstr("cost 3"));
  EXPECT_FALSE(IsBcryptHash("", &why));
}

TEST(BcryptTest, CryptChecksEveryPrefix) {
  EXPECT_TRUE(BcryptMatches("wonderland", kAliceHash));
  EXPECT_FALSE(BcryptMatches("wonderlanD", kAliceHash));
  EXPECT_FALSE(BcryptMatches("", kAliceHash));
  std::string b = kAliceHash, a = kAliceHash;
  b[2] = 'b';
  a[2] = 'a';
  EXPECT_TRUE(BcryptMatches("wonderland", b));
  EXPECT_TRUE(BcryptMatches("wonderland", a));
  EXPECT_TRUE(BcryptMatches("builder", kBobHash));
  EXPECT_FALSE(BcryptMatches(std::string("builder\0x", 9), kBobHash));
}

// --- the command line -------------------------------------------------------

TEST(WebConfigFlagTest, ParsedAndCheckedByCheckConfig) {
  auto serve = ParseCommandLine({"drivewatch", "--web.config.file=/etc/dw/web.yml"});
  ASSERT_TRUE(serve.cli) << serve.error;
  EXPECT_EQ(serve.cli->web_config_file, "/etc/dw/web.yml");
  auto both = ParseCommandLine({"drivewatch", "check-config", "a.toml", "--web.config.file", "w.yml"});
  ASSERT_TRUE(both.cli) << both.error;
  EXPECT_EQ(both.cli->args.size(), 1u);
  auto web_only = ParseCommandLine({"drivewatch", "check-config", "--web.config.file=w.yml"});
  ASSERT_TRUE(web_only.cli) << web_only.error;
  EXPECT_TRUE(web_only.cli->args.empty());
  EXPECT_EQ(ParseCommandLine({"drivewatch", "check-config"}).error,
            "check-config takes exactly one FILE");
  EXPECT_THAT(UsageText(), HasSubstr("--web.config.file=FILE"));
}

// --- the HTTP layer ---------------------------------------------------------

std::string Basic(const std::string& user_pass) {
  std::string out(4 * ((user_pass.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(user_pass.data()),
                                static_cast<int>(user_pass.size()));
  out.resize(static_cast<size_t>(n));
  return "Basic " + out;
}

TEST(HttpAuthTest, BasicAuthChecksAndCachesOnlySuccesses) {
  MetricStore store;
  WebConfig web;
  web.users = {{"alice", kAliceHash}, {"bob", kBobHash}};
  HttpServer http(store, "", web);
  EXPECT_TRUE(http.Authorized(Basic("alice:wonderland")));
  EXPECT_TRUE(http.Authorized(Basic("alice:wonderland")));  // from the cache
  EXPECT_TRUE(http.Authorized("basic  " + Basic("bob:builder").substr(6)));
  EXPECT_FALSE(http.Authorized(Basic("alice:builder")));
  EXPECT_FALSE(http.Authorized(Basic("mallory:wonderland")));
  EXPECT_FALSE(http.Authorized(Basic("alice")));
  EXPECT_FALSE(http.Authorized(""));
  EXPECT_FALSE(http.Authorized("Bearer abc"));
  EXPECT_FALSE(http.Authorized("Basic !!!!"));
  EXPECT_FALSE(http.Authorized("Basic YQ"));  // unpadded
  // A password with a colon: only the first colon splits.
  WebConfig open;
  HttpServer anyone(store, "", open);
  EXPECT_TRUE(anyone.Authorized(""));
}

TEST(BasicAuthCacheTest, BoundedAndStartsOver) {
  BasicAuthCache cache;
  for (size_t i = 0; i < BasicAuthCache::kMaxEntries + 5; ++i) {
    cache.Insert(std::to_string(i));
  }
  EXPECT_LE(cache.size(), BasicAuthCache::kMaxEntries);
  EXPECT_TRUE(cache.Contains(std::to_string(BasicAuthCache::kMaxEntries + 4)));
}

// A self-signed certificate and its key, written as PEM files.
void WriteSelfSigned(const std::string& cert_path, const std::string& key_path) {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  ASSERT_NE(key, nullptr);
  X509* x = X509_new();
  X509_set_version(x, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
  X509_gmtime_adj(X509_getm_notBefore(x), 0);
  X509_gmtime_adj(X509_getm_notAfter(x), 3600);
  X509_set_pubkey(x, key);
  X509_NAME* name = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("localhost"), -1, -1, 0);
  X509_set_issuer_name(x, name);
  ASSERT_GT(X509_sign(x, key, EVP_sha256()), 0);
  FILE* f = std::fopen(cert_path.c_str(), "w");
  PEM_write_X509(f, x);
  std::fclose(f);
  f = std::fopen(key_path.c_str(), "w");
  PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr);
  std::fclose(f);
  X509_free(x);
  EVP_PKEY_free(key);
}

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dw-webconfig-test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    WriteSelfSigned(dir_ + "/server.crt", dir_ + "/server.key");
    WriteSelfSigned(dir_ + "/other.crt", dir_ + "/other.key");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  LoadedWebConfig Load(const std::string& yaml) {
    std::ofstream(dir_ + "/web.yml") << yaml;
    return LoadWebConfigFile(dir_ + "/web.yml");
  }
  std::string dir_;
};

TEST_F(TlsTest, CertificatesLoadRelativeToTheFile) {
  auto loaded = Load("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n");
  ASSERT_TRUE(loaded.config) << ::testing::PrintToString(Errors(loaded));
  EXPECT_EQ(loaded.config->tls->cert_file, dir_ + "/server.crt");
}

TEST_F(TlsTest, MismatchedKeyIsRefusedAtTheKey) {
  auto loaded = Load("tls_server_config:\n  cert_file: server.crt\n  key_file: other.key\n");
  ASSERT_EQ(loaded.errors.size(), 1u);
  EXPECT_THAT(loaded.errors[0].ToString(),
              HasSubstr("web.yml:3:13: tls_server_config.key_file: \"" + dir_ +
                        "/other.key\" does not match the certificate"));
}

TEST_F(TlsTest, GarbageFilesAreRefused) {
  std::ofstream(dir_ + "/junk.pem") << "not a certificate\n";
  auto cert = Load("tls_server_config:\n  cert_file: junk.pem\n  key_file: server.key\n");
  ASSERT_EQ(cert.errors.size(), 1u);
  EXPECT_THAT(cert.errors[0].ToString(), HasSubstr("cert_file: \"" + dir_ + "/junk.pem\" holds no usable PEM certificate"));
  auto key = Load("tls_server_config:\n  cert_file: server.crt\n  key_file: junk.pem\n");
  ASSERT_EQ(key.errors.size(), 1u);
  EXPECT_THAT(key.errors[0].ToString(), HasSubstr("holds no usable PEM private key"));
  auto ca = Load("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
                 "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: junk.pem\n");
  ASSERT_EQ(ca.errors.size(), 1u);
  EXPECT_THAT(ca.errors[0].ToString(), HasSubstr("web.yml:5:19: tls_server_config.client_ca_file"));
  auto dir = Load("tls_server_config:\n  cert_file: .\n  key_file: server.key\n");
  ASSERT_EQ(dir.errors.size(), 1u);
  EXPECT_THAT(dir.errors[0].ToString(), HasSubstr("is not a regular file"));
}

TEST_F(TlsTest, ServesHttpsWithBasicAuthAndOnlyReads) {
  auto loaded = Load("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
                     "basic_auth_users:\n  alice: " + kAliceHash + "\n"
                     "http_server_config:\n  headers:\n    X-Frame-Options: deny\n");
  ASSERT_TRUE(loaded.config) << ::testing::PrintToString(Errors(loaded));
  MetricStore store;
  HttpServer http(store, "<html></html>", *loaded.config);
  ASSERT_TRUE(http.Start("127.0.0.1:0").ok());
  EXPECT_THAT(http.MetricsUrl(), ::testing::StartsWith("https://127.0.0.1:"));
  httplib::SSLClient client("127.0.0.1", http.port());
  client.enable_server_certificate_verification(false);
  auto anonymous = client.Get("/metrics");
  ASSERT_TRUE(anonymous);
  EXPECT_EQ(anonymous->status, 401);
  EXPECT_EQ(anonymous->get_header_value("WWW-Authenticate"), "Basic realm=\"drivewatch\"");
  EXPECT_EQ(anonymous->get_header_value("X-Frame-Options"), "deny");
  client.set_basic_auth("alice", "wonderland");
  auto ok = client.Get("/-/healthy");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  auto post = client.Post("/metrics", "x", "text/plain");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405);
  EXPECT_EQ(post->get_header_value("Allow"), "GET, HEAD");
  http.Stop();
}

// A TLS client driven by hand over a socket, so that a test can send its
// ClientHello in pieces and stop wherever it likes. Every wait is bounded.
class HandDrivenTlsClient {
 public:
  explicit HandDrivenTlsClient(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    ctx_ = SSL_CTX_new(TLS_client_method());
    ssl_ = SSL_new(ctx_);
    in_ = BIO_new(BIO_s_mem());
    out_ = BIO_new(BIO_s_mem());
    SSL_set_bio(ssl_, in_, out_);  // ssl_ owns both
    SSL_set_connect_state(ssl_);
    SSL_do_handshake(ssl_);  // wants the server's answer, leaves the ClientHello
    hello_ = TakeOutput();
  }
  ~HandDrivenTlsClient() {
    SSL_free(ssl_);
    SSL_CTX_free(ctx_);
    ::close(fd_);
  }

  bool connected() const { return connected_; }
  const std::string& hello() const { return hello_; }

  bool Send(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  // Whether the server sent something (kept for the handshake) within 5 s.
  bool Answered() { return Receive(); }
  // Whether the server has closed the connection within 5 s; what it sent
  // before is dropped.
  bool ClosedByServer() {
    while (Receive()) {
    }
    return closed_;
  }
  // Whether the connection is still open now, without waiting.
  bool OpenNow() {
    char buf[4096];
    for (;;) {
      const ssize_t n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) {
        BIO_write(in_, buf, static_cast<int>(n));
        continue;
      }
      return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
  }
  // Finishes the handshake, once hello() has been sent.
  bool Handshake() {
    for (;;) {
      const int r = SSL_do_handshake(ssl_);
      if (!Send(TakeOutput())) return false;
      if (r == 1) return true;
      if (SSL_get_error(ssl_, r) != SSL_ERROR_WANT_READ || !Receive()) return false;
    }
  }
  // Finishes the handshake, sends a GET for `path` and returns the
  // response's status line, or "" if any step fails.
  std::string Get(const std::string& path) {
    if (!Handshake()) return "";
    const std::string request = "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n";
    if (SSL_write(ssl_, request.data(), static_cast<int>(request.size())) <= 0) return "";
    if (!Send(TakeOutput())) return "";
    std::string response;
    while (response.find("\r\n") == std::string::npos) {
      char buf[4096];
      const int n = SSL_read(ssl_, buf, sizeof buf);
      if (n > 0) {
        response.append(buf, static_cast<size_t>(n));
      } else if (SSL_get_error(ssl_, n) != SSL_ERROR_WANT_READ || !Receive()) {
        return "";
      }
    }
    return response.substr(0, response.find("\r\n"));
  }

 private:
  std::string TakeOutput() {
    char* data = nullptr;
    const long n = BIO_get_mem_data(out_, &data);
    std::string bytes(data, static_cast<size_t>(n));
    (void)BIO_reset(out_);
    return bytes;
  }
  // Reads what the server sends next into the TLS state; false on a
  // close, an error or 5 s of silence.
  bool Receive() {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 5000) != 1) return false;
    char buf[4096];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) {
      closed_ = true;
      return false;
    }
    BIO_write(in_, buf, static_cast<int>(n));
    return true;
  }

  int fd_ = -1;
  bool connected_ = false;
  bool closed_ = false;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  BIO* in_ = nullptr;   // what the server sent, for ssl_
  BIO* out_ = nullptr;  // what ssl_ has to send
  std::string hello_;
};

TEST_F(TlsTest, TlsStateWaitsForAWholeClientHelloAndIsBounded) {
  auto loaded = Load("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n");
  ASSERT_TRUE(loaded.config) << ::testing::PrintToString(Errors(loaded));
  MetricStore store;
  HttpLimits limits;
  limits.max_tls_handshakes = 1;
  HttpServer http(store, "", *loaded.config, limits);
  ASSERT_TRUE(http.Start("127.0.0.1:0").ok());
  HandDrivenTlsClient split(http.port());
  HandDrivenTlsClient whole(http.port());
  ASSERT_TRUE(split.connected() && whole.connected());
  ASSERT_GT(split.hello().size(), 60u);
  ASSERT_TRUE(split.Send(split.hello().substr(0, 60)));
  ASSERT_TRUE(whole.Send(whole.hello()));
  ASSERT_TRUE(whole.Answered()) << "no ServerHello for a whole ClientHello";
  // Part of a ClientHello made no TLS state, so `whole` took the only
  // place without closing `split`.
  EXPECT_TRUE(split.OpenNow());
  ASSERT_TRUE(split.Send(split.hello().substr(60)));
  // Now `split` has the place, and `whole`, the oldest, is closed for it.
  EXPECT_TRUE(whole.ClosedByServer());
  // The handshake goes on from the bytes buffered in two reads.
  EXPECT_EQ(split.Get("/-/healthy"), "HTTP/1.1 200 OK");
  http.Stop();
}

TEST_F(TlsTest, HeadDeadlineCoversEveryStepOfTheHandshake) {
  auto loaded = Load("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n");
  ASSERT_TRUE(loaded.config) << ::testing::PrintToString(Errors(loaded));
  MetricStore store;
  HttpLimits limits;
  limits.head_timeout = std::chrono::milliseconds(300);
  HttpServer http(store, "", *loaded.config, limits);
  ASSERT_TRUE(http.Start("127.0.0.1:0").ok());
  // Stalled before any TLS state, after a whole ClientHello, and after a
  // finished handshake with no request: each is closed, none before the
  // deadline.
  const auto start = std::chrono::steady_clock::now();
  HandDrivenTlsClient partial(http.port()), hello(http.port()), idle(http.port());
  ASSERT_TRUE(partial.connected() && hello.connected() && idle.connected());
  ASSERT_TRUE(partial.Send(partial.hello().substr(0, 60)));
  ASSERT_TRUE(hello.Send(hello.hello()));
  ASSERT_TRUE(idle.Send(idle.hello()) && idle.Handshake());
  for (HandDrivenTlsClient* client : {&partial, &hello, &idle}) {
    EXPECT_TRUE(client->ClosedByServer());
    EXPECT_GE(std::chrono::steady_clock::now() - start, limits.head_timeout);
  }
  http.Stop();
}

TEST(HttpServerTest, PlainHttpRefusesWritesWith405) {
  MetricStore store;
  HttpServer http(store, "");
  ASSERT_TRUE(http.Start("127.0.0.1:0").ok());
  EXPECT_THAT(http.MetricsUrl(), ::testing::StartsWith("http://127.0.0.1:"));
  httplib::Client client("127.0.0.1", http.port());
  for (const char* method : {"POST", "PUT", "DELETE", "PATCH", "OPTIONS"}) {
    httplib::Request req;
    req.method = method;
    req.path = "/metrics";
    auto res = client.send(req);
    ASSERT_TRUE(res) << method;
    EXPECT_EQ(res->status, 405) << method;
  }
  auto head = client.Head("/metrics");
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
  http.Stop();
}

}  // namespace
}  // namespace drivewatch
