// A small HTTP/1.1 server for `gpudoctor serve`: one event-loop thread (epoll, non-blocking
// sockets) serving GET and HEAD, keep-alive and pipelining, optional TLS (OpenSSL) and basic
// authentication as configured by a web configuration file (exporter/web_config.hpp).
// Why not cpp-httplib: its timeouts apply to each read, so a client that sends a byte every few
// seconds holds one of its fixed pool of threads for as long as it likes, and a handful of such
// clients stall every scrape. Here every request has a deadline for the whole of its head (the
// TLS handshake included), a size limit and a connection limit, and a slow client costs a file
// descriptor, never a thread. bcrypt checks run on a separate thread so that a wrong password
// never delays other scrapers. (docs/architecture.md weighs libmicrohttpd against this.)
// Staying reachable (docs/prometheus.md, "Hardening"): one peer address holds at most
// max_connections_per_address connections; at either limit the oldest idle connection (then the
// oldest slow one) gives way to the newcomer (exporter/http_admission.hpp); when none can, the
// newcomer is answered 503 and closed gently. From 3/4 of max_connections on, idle and slow
// connections are closed after 2 s. Out of file descriptors (EMFILE), accepting pauses and backs
// off instead of spinning.
// Thread-safety: start() and stop() from one thread; the handler runs on the event-loop thread
// and must be quick (serve it from a snapshot).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "exporter/web_config.hpp"

namespace gpudoctor {

struct HttpRequest {
  std::string method, target, path, query, version;
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-case
  // The value of the first header of that (lower-case) name, "" when absent.
  std::string_view header(std::string_view lower_name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::shared_ptr<const std::string> body;  // shared: a snapshot's body is never copied
  std::vector<std::pair<std::string, std::string>> headers;

  static HttpResponse text(int status, std::string body);
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

struct HttpServerOptions {
  std::string listen = "127.0.0.1:9835";  // host:port, [v6]:port, :port (all interfaces)
  WebConfig web;                          // TLS and basic auth; empty: plain, open
  size_t max_connections = 512;
  size_t max_connections_per_address = 32;  // per peer IP address
  size_t max_request_bytes = 16384;         // request line and headers
  // From a connection's start (TLS handshake included) or a request's first byte to the end of
  // its head.
  std::chrono::milliseconds read_header_timeout{10000};
  std::chrono::milliseconds idle_timeout{120000};  // keep-alive between requests
  std::chrono::milliseconds write_timeout{10000};  // to hand over a whole response
  // A head or handshake under way this long is slow: it may give way to a newcomer.
  std::chrono::milliseconds slow_after{1000};
  // From 3/4 of max_connections on, idle and slow connections are closed after this long.
  std::chrono::milliseconds pressed_timeout{2000};
};

struct HttpServerStats {
  uint64_t requests = 0;
  uint64_t timed_out = 0;      // connections cut off by a deadline
  uint64_t rejected = 0;       // 4xx/5xx for malformed, oversized, unauthorised or over-limit
  uint64_t refused = 0;        // connections turned away at a limit (503, or closed with TLS)
  uint64_t evicted = 0;        // idle or slow connections closed to make room
  uint64_t accept_errors = 0;  // accept() out of descriptors or memory (EMFILE and the like)
  size_t connections = 0;      // held now (not counting those closing)
};

class HttpServer {
 public:
  // Binds, loads TLS material, and starts the event loop. Errors name the address or the file.
  static Result<std::unique_ptr<HttpServer>> start(HttpServerOptions options, HttpHandler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Closes every connection and joins the threads; idempotent.
  void stop();
  // The bound address ("127.0.0.1:9835"; the real port when 0 was asked for).
  std::string address() const;
  uint16_t port() const;
  bool tls() const;
  HttpServerStats stats() const;

  struct Impl;

 private:
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Splits "host:port", "[v6]:port" or ":port"; the host is "" for all interfaces (IPv6 and IPv4:
// one dual-stack socket, or IPv4 alone where the host has no IPv6). A host with a colon outside
// brackets ("127.0.0.1:9835:1") is a usage error, never a name to resolve.
Result<std::pair<std::string, uint16_t>> parse_listen_address(const std::string& text);

}  // namespace gpudoctor
