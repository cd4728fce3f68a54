// The TLS side of the HTTP server (exporter/http_server.hpp): an OpenSSL server context from a web
// configuration. TLS 1.2 offers only forward-secret AEAD suites (ECDHE with AES-GCM or
// ChaCha20-Poly1305, the list Prometheus' exporter-toolkit defaults to); TLS 1.3's suites are
// all of that kind. Errors name the web configuration file and the line of the key at fault.
// Thread-safety: make_tls_context is reentrant; a context is shared read-only by connections.
#pragma once

#include <openssl/ssl.h>

#include <memory>
#include <string>

#include "core/result.hpp"
#include "exporter/web_config.hpp"

namespace gpudoctor {

struct SslCtxFree {
  void operator()(SSL_CTX* ctx) const { SSL_CTX_free(ctx); }
};
using TlsContext = std::unique_ptr<SSL_CTX, SslCtxFree>;

// OpenSSL's names of the TLS 1.2 suites served, strongest first.
extern const char* const kTls12CipherSuites;

Result<TlsContext> make_tls_context(const WebConfig& web);

// The last OpenSSL error as text ("unknown TLS error" when there is none).
std::string openssl_error();

}  // namespace gpudoctor
