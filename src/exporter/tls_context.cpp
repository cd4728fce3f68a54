#include "exporter/tls_context.hpp"

#include <openssl/err.h>

#include <fmt/format.h>

namespace gpudoctor {

const char* const kTls12CipherSuites =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

std::string openssl_error() {
  const unsigned long e = ERR_get_error();
  if (e == 0) return "unknown TLS error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  ERR_clear_error();
  return buf;
}

Result<TlsContext> make_tls_context(const WebConfig& w) {
  ERR_clear_error();
  TlsContext ctx(SSL_CTX_new(TLS_server_method()));
  if (!ctx) return failure("cannot create a TLS context: " + openssl_error());
  SSL_CTX* c = ctx.get();
  // The parser admits TLS12 and TLS13 only (web_config.cpp says why).
  auto version = [](const std::string& v) {
    return v == "TLS13" ? TLS1_3_VERSION : TLS1_2_VERSION;
  };
  const std::string where_min = w.where("tls_server_config.min_version");
  if (SSL_CTX_set_min_proto_version(c, version(w.min_version)) != 1)
    return usage_error(fmt::format("{}: min_version {}: the TLS library refuses it: {}", where_min,
                                   w.min_version, openssl_error()));
  if (!w.max_version.empty() && SSL_CTX_set_max_proto_version(c, version(w.max_version)) != 1)
    return usage_error(fmt::format("{}: max_version {}: the TLS library refuses it: {}",
                                   w.where("tls_server_config.max_version"), w.max_version,
                                   openssl_error()));
  if (SSL_CTX_set_cipher_list(c, kTls12CipherSuites) != 1)
    return failure("the TLS library offers none of the TLS 1.2 AEAD suites: " + openssl_error());
  SSL_CTX_set_options(
      c, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_COMPRESSION);
  SSL_CTX_set_mode(c, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  const std::string where_cert = w.where("tls_server_config.cert_file");
  const std::string where_key = w.where("tls_server_config.key_file");
  if (SSL_CTX_use_certificate_chain_file(c, w.cert_file.c_str()) != 1)
    return usage_error(
        fmt::format("{}: cannot load cert_file {}: {}", where_cert, w.cert_file, openssl_error()));
  if (SSL_CTX_use_PrivateKey_file(c, w.key_file.c_str(), SSL_FILETYPE_PEM) != 1)
    return usage_error(
        fmt::format("{}: cannot load key_file {}: {}", where_key, w.key_file, openssl_error()));
  if (SSL_CTX_check_private_key(c) != 1)
    return usage_error(fmt::format("{}: key_file {} does not match cert_file {}", where_key,
                                   w.key_file, w.cert_file));
  static const unsigned char kSessionContext[] = "gpudoctor";
  SSL_CTX_set_session_id_context(c, kSessionContext, sizeof kSessionContext - 1);
  if (!w.client_ca_file.empty()) {
    const std::string where_ca = w.where("tls_server_config.client_ca_file");
    if (SSL_CTX_load_verify_locations(c, w.client_ca_file.c_str(), nullptr) != 1)
      return usage_error(fmt::format("{}: cannot load client_ca_file {}: {}", where_ca,
                                     w.client_ca_file, openssl_error()));
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(w.client_ca_file.c_str());
    if (!names)
      return usage_error(fmt::format("{}: client_ca_file {} holds no certificate: {}", where_ca,
                                     w.client_ca_file, openssl_error()));
    SSL_CTX_set_client_CA_list(c, names);
  }
  const std::string& t = w.client_auth_type;
  auto accept_any = [](int, X509_STORE_CTX*) { return 1; };
  if (t == "RequestClientCert")
    SSL_CTX_set_verify(c, SSL_VERIFY_PEER, accept_any);
  else if (t == "RequireAnyClientCert")
    SSL_CTX_set_verify(c, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, accept_any);
  else if (t == "VerifyClientCertIfGiven")
    SSL_CTX_set_verify(c, SSL_VERIFY_PEER, nullptr);
  else if (t == "RequireAndVerifyClientCert")
    SSL_CTX_set_verify(c, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  else
    SSL_CTX_set_verify(c, SSL_VERIFY_NONE, nullptr);
  return ctx;
}

}  // namespace gpudoctor
