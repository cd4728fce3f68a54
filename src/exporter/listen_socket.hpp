// The listening socket of the HTTP server (exporter/http_server.hpp), from a --listen address:
// "host:port" and "[v6]:port" bind what the host resolves to (its first address that binds);
// ":port" binds every interface, IPv6 and IPv4 together on one dual-stack socket
// (IPV6_V6ONLY off), or IPv4 alone where the host has no IPv6. Thread-safety: reentrant.
#pragma once

#include <cstdint>
#include <string>

#include "core/result.hpp"

namespace gpudoctor {

struct ListenSocket {
  int fd = -1;          // non-blocking, close-on-exec; the caller closes it
  std::string address;  // "127.0.0.1:9835", "[::]:9835" (the real port when 0 was asked)
  uint16_t port = 0;
};

Result<ListenSocket> open_listen_socket(const std::string& listen, int backlog = 1024);

}  // namespace gpudoctor
