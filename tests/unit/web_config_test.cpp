// The web configuration file (exporter-toolkit's format) and basic authentication with bcrypt.
#include <crypt.h>

#include <memory>

#include <gtest/gtest.h>

#include "export/web_config.hpp"
#include "net/http_client.hpp"

namespace gpudoctor {
namespace {

// A bcrypt hash of `password` with a low cost, made here so the test needs no fixture.
std::string bcrypt_hash(const std::string& password, const char* prefix = "$2b$") {
  char* salt = crypt_gensalt_ra(prefix, 4, nullptr, 0);
  EXPECT_NE(salt, nullptr);
  auto data = std::make_unique<crypt_data>();
  std::string hash = crypt_r(password.c_str(), salt, data.get());
  free(salt);
  return hash;
}

TEST(WebConfig, ReadsTlsAndUsers) {
  const std::string alice = bcrypt_hash("wonderland");
  const auto c = parse_web_config(
      "# exporter web config\n"
      "tls_server_config:\n"
      "  cert_file: server.crt   # relative to the file\n"
      "  key_file: \"/etc/gpudoctor/server.key\"\n"
      "  client_auth_type: RequireAndVerifyClientCert\n"
      "  client_ca_file: 'ca.pem'\n"
      "  min_version: TLS13\n"
      "\n"
      "http_server_config:\n"
      "  http2: false\n"
      "basic_auth_users:\n"
      "  alice: " +
          alice + "\n  \"bob smith\": '" + alice + "'\n",
      "web.yml", "/etc/gpudoctor");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_TRUE(c->tls());
  EXPECT_EQ(c->cert_file, "/etc/gpudoctor/server.crt");
  EXPECT_EQ(c->key_file, "/etc/gpudoctor/server.key");
  EXPECT_EQ(c->client_ca_file, "/etc/gpudoctor/ca.pem");
  EXPECT_EQ(c->client_auth_type, "RequireAndVerifyClientCert");
  EXPECT_EQ(c->min_version, "TLS13");
  ASSERT_EQ(c->users.size(), 2u);
  EXPECT_EQ(c->users.at("alice"), alice);
  EXPECT_EQ(c->users.at("bob smith"), alice);
}

TEST(WebConfig, EmptyAndAuthOnly) {
  auto c = parse_web_config("", "web.yml");
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->tls());
  EXPECT_TRUE(c->users.empty());
  c = parse_web_config("tls_server_config: {}\nbasic_auth_users:\n  u: " + bcrypt_hash("p") + "\n",
                       "web.yml");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_FALSE(c->tls());
  EXPECT_EQ(c->users.size(), 1u);
}

TEST(WebConfig, MistakesAreErrorsNamingTheLine) {
  const std::pair<std::string, std::string> cases[] = {
      {"tls_server_config:\n  cert_file: a.crt\n", "needs both cert_file and key_file"},
      {"tls_config:\n  cert_file: a\n", "web.yml:1: unknown key tls_config"},
      {"basic_auth_users:\n  bob: secret\n", "web.yml:2: user bob: the password must be a bcrypt"},
      {"tls_server_config:\n\tcert_file: a\n", "web.yml:2: tabs are not allowed"},
      {"tls_server_config:\n  cipher_suites:\n    - X\n", "not supported by gpudoctor"},
      {"tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: Maybe\n",
       "client_auth_type Maybe"},
      {"tls_server_config:\n  cert_file: a\n  key_file: b\n"
       "  client_auth_type: RequireAndVerifyClientCert\n",
       "needs client_ca_file"},
      {"tls_server_config:\n  cert_file: \"a\n", "unterminated quoted string"},
      {"tls_server_config:\n  min_version: SSL3\n", "expected TLS10, TLS11, TLS12 or TLS13"},
      {"basic_auth_users: [a]\n", "web.yml:1"},
      {"  cert_file: a\n", "indented line outside a section"},
  };
  for (const auto& [yaml, message] : cases) {
    const auto c = parse_web_config(yaml, "web.yml");
    ASSERT_FALSE(c) << yaml;
    EXPECT_NE(c.error().message.find(message), std::string::npos)
        << yaml << " -> " << c.error().message;
  }
  EXPECT_FALSE(load_web_config("/no/such/web.yml"));
}

TEST(WebConfig, Base64AndBasicHeader) {
  EXPECT_EQ(net::base64_encode(""), "");
  EXPECT_EQ(net::base64_encode("a"), "YQ==");
  EXPECT_EQ(net::base64_encode("ab"), "YWI=");
  EXPECT_EQ(net::base64_encode("abc"), "YWJj");
  EXPECT_EQ(net::base64_encode("user:pa ss"), "dXNlcjpwYSBzcw==");
  for (std::string s : {"", "x", "xy", "xyz", "prometheus:s3cr3t:with:colons"})
    EXPECT_EQ(net::base64_decode(net::base64_encode(s)), s);
  EXPECT_FALSE(net::base64_decode("not base64!"));
  auto c = parse_basic_authorization("Basic " + net::base64_encode("prometheus:s3:cr3t"));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->user, "prometheus");
  EXPECT_EQ(c->password, "s3:cr3t");
  EXPECT_TRUE(parse_basic_authorization("basic " + net::base64_encode("a:b")));
  EXPECT_FALSE(parse_basic_authorization("Bearer abc"));
  EXPECT_FALSE(parse_basic_authorization("Basic " + net::base64_encode("no-colon")));
  EXPECT_FALSE(parse_basic_authorization(""));
}

TEST(WebConfig, BcryptVariants) {
  for (const char* prefix : {"$2b$", "$2y$", "$2a$"}) {
    const std::string h = bcrypt_hash("correct horse", prefix);
    ASSERT_EQ(h.rfind(prefix, 0), 0u) << h;
    EXPECT_TRUE(bcrypt_matches("correct horse", h)) << prefix;
    EXPECT_FALSE(bcrypt_matches("correct horse!", h)) << prefix;
    EXPECT_FALSE(bcrypt_matches("", h)) << prefix;
  }
  EXPECT_FALSE(bcrypt_matches("x", "not a hash"));
}

TEST(WebConfig, BasicAuthRemembersWhatPassed) {
  BasicAuth auth({{"prometheus", bcrypt_hash("scrape")}});
  ASSERT_TRUE(auth.enabled());
  const std::string good = "Basic " + net::base64_encode("prometheus:scrape");
  const std::string bad = "Basic " + net::base64_encode("prometheus:wrong");
  const std::string stranger = "Basic " + net::base64_encode("mallory:scrape");
  EXPECT_EQ(auth.quick(""), BasicAuth::Verdict::kDenied);
  EXPECT_EQ(auth.quick("Bearer x"), BasicAuth::Verdict::kDenied);
  EXPECT_EQ(auth.quick(good), BasicAuth::Verdict::kNeedsCheck);
  EXPECT_FALSE(auth.check(bad));
  EXPECT_FALSE(auth.check(stranger));
  EXPECT_EQ(auth.quick(bad), BasicAuth::Verdict::kNeedsCheck);  // failures are not remembered
  EXPECT_TRUE(auth.check(good));
  EXPECT_EQ(auth.quick(good), BasicAuth::Verdict::kAllowed);
  EXPECT_FALSE(BasicAuth({}).enabled());
}

}  // namespace
}  // namespace gpudoctor
