// TLS of `serve`'s HTTP server: TLS 1.2 with forward-secret AEAD suites only (ECDHE with
// AES-GCM or ChaCha20-Poly1305, exporter-toolkit's default list), TLS 1.3, min_version, and
// errors in the TLS files named at their line of the web configuration. Clients are OpenSSL
// ones that offer exactly one suite or version, so a refusal is the server's.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "exporter/http_server.hpp"
#include "exporter/tls_context.hpp"
#include "exporter/web_config.hpp"

namespace gpudoctor {
namespace {

// An EC and an RSA self-signed certificate for 127.0.0.1, made with the openssl command.
struct Certificates {
  std::filesystem::path dir;
  bool ok = false;
  Certificates() {
    dir = std::filesystem::temp_directory_path() / fmt::format("gd-tls-suites-{}", getpid());
    std::filesystem::create_directories(dir);
    ok = true;
    for (const char* kind : {"ec", "rsa"}) {
      const std::string key_opts = std::string(kind) == "ec"
                                       ? "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1"
                                       : "-newkey rsa:2048";
      const std::string cmd = fmt::format(
          "openssl req -x509 {} -nodes -days 2 -subj /CN=gpudoctor-test "
          "-addext subjectAltName=IP:127.0.0.1 -keyout '{}/{}.key' -out '{}/{}.crt' "
          ">/dev/null 2>&1",
          key_opts, dir.string(), kind, dir.string(), kind);
      ok = ok && std::system(cmd.c_str()) == 0;
    }
  }
  ~Certificates() { std::filesystem::remove_all(dir); }
  std::string config(const std::string& kind, const std::string& extra = "") const {
    const auto path = dir / fmt::format("{}-{}.yml", kind, extra.size());
    std::ofstream(path) << "tls_server_config:\n  cert_file: " << kind
                        << ".crt\n  key_file: " << kind << ".key\n"
                        << extra;
    return path.string();
  }
};

std::unique_ptr<HttpServer> start_tls(const std::string& web_config) {
  auto web = load_web_config(web_config);
  EXPECT_TRUE(web) << web.error().message;
  if (!web) return nullptr;
  HttpServerOptions o;
  o.listen = "127.0.0.1:0";
  o.web = web.value();
  auto s = HttpServer::start(o, [](const HttpRequest&) { return HttpResponse::text(200, "ok\n"); });
  EXPECT_TRUE(s) << (s ? "" : s.error().message);
  return s ? std::move(s.value()) : nullptr;
}

// True when a handshake offering only `version` (and, for TLS 1.2, only `suite`) completes.
bool handshake(uint16_t port, int version, const char* suite = nullptr) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set_security_level(ctx, 0);  // the client offers what it is told; the server judges
  SSL_CTX_set_min_proto_version(ctx, version);
  SSL_CTX_set_max_proto_version(ctx, version);
  if (suite && SSL_CTX_set_cipher_list(ctx, suite) != 1) {
    ADD_FAILURE() << "this OpenSSL has no " << suite;
    SSL_CTX_free(ctx);
    return false;
  }
  SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = false;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    timeval tv{3, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    SSL* ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    ok = SSL_connect(ssl) == 1;
    SSL_free(ssl);
  }
  ::close(fd);
  SSL_CTX_free(ctx);
  return ok;
}

TEST(Tls, Tls12OffersOnlyForwardSecretAeadSuites) {
  Certificates certs;
  ASSERT_TRUE(certs.ok) << "the openssl command is needed (scripts/install-deps.sh installs it)";
  auto ec = start_tls(certs.config("ec"));
  ASSERT_TRUE(ec);
  EXPECT_TRUE(handshake(ec->port(), TLS1_2_VERSION, "ECDHE-ECDSA-AES128-GCM-SHA256"));
  EXPECT_TRUE(handshake(ec->port(), TLS1_2_VERSION, "ECDHE-ECDSA-AES256-GCM-SHA384"));
  EXPECT_TRUE(handshake(ec->port(), TLS1_2_VERSION, "ECDHE-ECDSA-CHACHA20-POLY1305"));
  EXPECT_TRUE(handshake(ec->port(), TLS1_3_VERSION));
  // Forward secret but CBC: refused.
  EXPECT_FALSE(handshake(ec->port(), TLS1_2_VERSION, "ECDHE-ECDSA-AES128-SHA"));
  EXPECT_FALSE(handshake(ec->port(), TLS1_2_VERSION, "ECDHE-ECDSA-AES256-SHA384"));
  EXPECT_FALSE(handshake(ec->port(), TLS1_1_VERSION));
  auto rsa = start_tls(certs.config("rsa"));
  ASSERT_TRUE(rsa);
  EXPECT_TRUE(handshake(rsa->port(), TLS1_2_VERSION, "ECDHE-RSA-AES128-GCM-SHA256"));
  EXPECT_TRUE(handshake(rsa->port(), TLS1_2_VERSION, "ECDHE-RSA-CHACHA20-POLY1305"));
  // AEAD without forward secrecy (RSA key exchange), and finite-field DHE: refused.
  EXPECT_FALSE(handshake(rsa->port(), TLS1_2_VERSION, "AES128-GCM-SHA256"));
  EXPECT_FALSE(handshake(rsa->port(), TLS1_2_VERSION, "DHE-RSA-AES128-GCM-SHA256"));
  EXPECT_FALSE(handshake(rsa->port(), TLS1_2_VERSION, "ECDHE-RSA-AES128-SHA256"));
}

TEST(Tls, MinVersionTls13) {
  Certificates certs;
  ASSERT_TRUE(certs.ok);
  auto s = start_tls(certs.config("ec", "  min_version: TLS13\n"));
  ASSERT_TRUE(s);
  EXPECT_TRUE(handshake(s->port(), TLS1_3_VERSION));
  EXPECT_FALSE(handshake(s->port(), TLS1_2_VERSION, "ECDHE-ECDSA-AES128-GCM-SHA256"));
}

// A key that is not the certificate's, or a file that is no certificate: an error at start that
// names the web configuration's line.
TEST(Tls, BadKeyMaterialNamesTheLine) {
  Certificates certs;
  ASSERT_TRUE(certs.ok);
  const auto path = certs.dir / "mixed.yml";
  std::ofstream(path) << "# a key that is not the certificate's\n"
                      << "tls_server_config:\n  cert_file: ec.crt\n  key_file: rsa.key\n";
  auto web = load_web_config(path.string());
  ASSERT_TRUE(web) << web.error().message;
  auto ctx = make_tls_context(web.value());
  ASSERT_FALSE(ctx);
  EXPECT_EQ(ctx.error().message.rfind(fmt::format("{}:4: key_file ", path.string()), 0), 0u)
      << ctx.error().message;
  EXPECT_NE(ctx.error().message.find("does not match cert_file"), std::string::npos);
  std::ofstream(path) << "tls_server_config:\n  cert_file: mixed.yml\n  key_file: ec.key\n";
  web = load_web_config(path.string());
  ASSERT_TRUE(web) << web.error().message;
  ctx = make_tls_context(web.value());
  ASSERT_FALSE(ctx);
  EXPECT_EQ(
      ctx.error().message.rfind(fmt::format("{}:2: cannot load cert_file ", path.string()), 0), 0u)
      << ctx.error().message;
}

}  // namespace
}  // namespace gpudoctor
