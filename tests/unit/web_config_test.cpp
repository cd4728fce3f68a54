// The web configuration file (exporter-toolkit's format) and basic authentication with bcrypt.
#include <crypt.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "exporter/web_config.hpp"
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

TEST(WebConfig, AuthOnly) {
  auto c = parse_web_config(
      "tls_server_config: {}\nbasic_auth_users:\n  u: " + bcrypt_hash("p") + "\n", "web.yml");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_FALSE(c->tls());
  EXPECT_EQ(c->users.size(), 1u);
}

TEST(WebConfig, MistakesAreErrorsNamingTheLine) {
  const std::pair<std::string, std::string> cases[] = {
      {"tls_server_config:\n  cert_file: a.crt\n",
       "web.yml:2: tls_server_config needs both cert_file and key_file"},
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
      {"tls_server_config:\n  min_version: SSL3\n", "web.yml:2: min_version SSL3: expected TLS12"},
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

// Whatever cannot be read, parsed or validated is an error naming the file and the line: the
// server never starts without the TLS or the authentication the file asked for.
TEST(WebConfig, FailsClosed) {
  const std::string good = bcrypt_hash("p");
  const std::string cost99 = good.substr(0, 4) + "99" + good.substr(6);
  const std::string cost03 = good.substr(0, 4) + "03" + good.substr(6);
  std::string bad_char = good;
  bad_char[40] = '!';
  const std::pair<std::string, std::string> cases[] = {
      {"", "web.yml: no tls_server_config or basic_auth_users"},
      {"# only a comment\n\n", "web.yml: no tls_server_config or basic_auth_users"},
      {"basic_auth_users:\n  u: " + cost99 + "\n",
       "web.yml:2: user u: the password must be a bcrypt hash (e.g. from `htpasswd -nBC 10 \"\" | "
       "tr -d ':\\n'`); this one has bcrypt cost 99; bcrypt's cost is 4 to 31"},
      {"basic_auth_users:\n  u: " + cost03 + "\n", "this one has bcrypt cost 3;"},
      {"basic_auth_users:\n  ok: " + good + "\n  u: '" + bad_char + "'\n",
       "web.yml:3: user u: the password must be a bcrypt hash"},
      {"basic_auth_users:\n  ok: " + good + "\n  u: '" + bad_char + "'\n",
       "this one has byte 0x21 at character 41"},
      {"basic_auth_users:\n  u: $2x$10$" + good.substr(7) + "\n",
       "web.yml:2: user u: the password must be a bcrypt hash (e.g. from `htpasswd -nBC 10 \"\" | "
       "tr -d ':\\n'`); this one is not a bcrypt hash"},
      {"tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: TLS10\n",
       "web.yml:4: min_version TLS10: TLS 1.0 and 1.1 are not served"},
      {"tls_server_config:\n  max_version: TLS11\n", "web.yml:2: max_version TLS11"},
      {"tls_server_config:\n  key_file: b\n", "web.yml:2: tls_server_config needs both"},
      {"tls_server_config:\n  cert_file: a\n  cert_file: b\n", "web.yml:3: cert_file given twice"},
      {"tls_server_config:\n  cert_file: a\n  key_file: b\n  max_version: TLS12\n"
       "  min_version: TLS13\n",
       "web.yml:4: max_version is below min_version"},
      {"basic_auth_users:\n  u: " + good + "\nweb_config:\n  x: y\n",
       "web.yml:3: unknown key web_config"},
  };
  for (const auto& [yaml, message] : cases) {
    const auto c = parse_web_config(yaml, "web.yml");
    ASSERT_FALSE(c) << yaml;
    EXPECT_NE(c.error().message.find(message), std::string::npos)
        << yaml << " -> " << c.error().message;
  }
  // Files: a directory, a FIFO, a file without read permission (when not root, who reads all),
  // and TLS files that are not there, named at their line.
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("gd-web-{}", getpid());
  std::filesystem::create_directories(dir);
  auto load_error = [](const std::filesystem::path& p) {
    const auto c = load_web_config(p.string());
    return c ? std::string("(loaded)") : c.error().message;
  };
  EXPECT_EQ(load_error(dir), fmt::format("--web-config {}: is a directory", dir.string()));
  ASSERT_EQ(mkfifo((dir / "fifo").c_str(), 0600), 0);
  EXPECT_EQ(load_error(dir / "fifo"),
            fmt::format("--web-config {}: is not a regular file", (dir / "fifo").string()));
  std::ofstream(dir / "web.yml") << "basic_auth_users:\n  u: " << good << "\n";
  ASSERT_TRUE(load_web_config((dir / "web.yml").string()));
  if (geteuid() != 0) {
    std::filesystem::permissions(dir / "web.yml", std::filesystem::perms::none);
    EXPECT_NE(load_error(dir / "web.yml").find("Permission denied"), std::string::npos);
  }
  std::ofstream(dir / "tls.yml") << "tls_server_config:\n  cert_file: tls.yml\n"
                                 << "  key_file: missing.key\n";
  EXPECT_EQ(load_error(dir / "tls.yml"),
            fmt::format("{0}/tls.yml:3: key_file {0}/missing.key: No such file or directory",
                        dir.string()));
  std::ofstream(dir / "ca.yml") << "tls_server_config:\n  cert_file: tls.yml\n"
                                << "  key_file: tls.yml\n  client_ca_file: .\n";
  EXPECT_EQ(load_error(dir / "ca.yml"),
            fmt::format("{0}/ca.yml:4: client_ca_file {0}/.: is a directory", dir.string()));
  std::filesystem::remove_all(dir);
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

// Passwords are compared whole: bcrypt reads a C string of at most 72 bytes, so a password with
// a NUL, or a longer one, would match on its start alone.
TEST(WebConfig, PasswordsComparedWhole) {
  const std::string h = bcrypt_hash("abc");
  EXPECT_TRUE(bcrypt_matches("abc", h));
  EXPECT_FALSE(bcrypt_matches(std::string("abc\0def", 7), h));
  const std::string long72(72, 'x');
  const std::string h72 = bcrypt_hash(long72);
  EXPECT_TRUE(bcrypt_matches(long72, h72));
  EXPECT_FALSE(bcrypt_matches(long72 + "y", h72));
  BasicAuth auth({{"u", h}});
  EXPECT_FALSE(auth.check("Basic " + net::base64_encode(std::string("u:abc\0zzz", 9))));
  EXPECT_TRUE(auth.check("Basic " + net::base64_encode("u:abc")));
}

// Every check costs the bcrypt work of the dearest configured hash, whoever asks: an unknown
// name, or a known one with a cheaper hash (htpasswd's default cost is 5), answers as slowly as
// the dearest, so timing tells neither names nor costs. The work is counted, not timed.
TEST(WebConfig, BasicAuthCostsTheSameForEveryName) {
  auto hash_at = [](const std::string& password, int cost) {
    char* salt = crypt_gensalt_ra("$2b$", cost, nullptr, 0);
    auto data = std::make_unique<crypt_data>();
    std::string hash = crypt_r(password.c_str(), salt, data.get());
    free(salt);
    return hash;
  };
  BasicAuth auth({{"cheap", hash_at("c", 4)}, {"dear", hash_at("d", 7)}});
  EXPECT_EQ(auth.max_cost(), 7);
  uint64_t work = 0;
  const std::pair<std::string, bool> attempts[] = {{"nobody:x", false}, {"cheap:x", false},
                                                   {"cheap:c", true},   {"dear:x", false},
                                                   {"dear:d", true},    {"dear:", false}};
  for (const auto& [credentials, ok] : attempts) {
    EXPECT_EQ(auth.check("Basic " + net::base64_encode(credentials), &work), ok) << credentials;
    EXPECT_EQ(work, uint64_t{1} << 7) << credentials;
  }
  // One user: the decoy costs what that user's hash costs (not a fixed 10).
  BasicAuth one({{"u", hash_at("p", 5)}});
  EXPECT_FALSE(one.check("Basic " + net::base64_encode("stranger:p"), &work));
  EXPECT_EQ(work, uint64_t{1} << 5);
  EXPECT_EQ(bcrypt_cost("$2y$12$abc"), 12);
  EXPECT_EQ(bcrypt_cost("plaintext"), 0);
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
