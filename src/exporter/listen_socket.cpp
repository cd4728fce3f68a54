#include "exporter/listen_socket.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "exporter/http_server.hpp"

namespace gpudoctor {
namespace {

// Every interface: one IPv6 socket that takes IPv4 too; -1 (errno set) when IPv6 is missing.
int bind_dual_stack(uint16_t port, int backlog) {
  const int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const int one = 1, zero = 0;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_addr = in6addr_any;
  a.sin6_port = htons(port);
  if (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero) != 0 ||
      ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, backlog) != 0) {
    const int e = errno;
    ::close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

}  // namespace

Result<ListenSocket> open_listen_socket(const std::string& listen, int backlog) {
  auto hp = parse_listen_address(listen);
  if (!hp) return hp.error();
  const auto& [host, p] = hp.value();
  ListenSocket out;
  std::string last_error = "no address";
  if (host.empty()) {
    out.fd = bind_dual_stack(p, backlog);
    // No IPv6 on this host (the module absent, or disabled): IPv4's every interface alone.
    if (out.fd < 0 && errno != EAFNOSUPPORT && errno != EADDRNOTAVAIL && errno != EPROTONOSUPPORT)
      return failure(fmt::format("cannot listen on {}: {}", listen, std::strerror(errno)));
  }
  if (out.fd < 0) {
    addrinfo hints{};
    hints.ai_family = host.empty() ? AF_INET : AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo* res = nullptr;
    const std::string port_text = std::to_string(p);
    if (const int rc =
            getaddrinfo(host.empty() ? nullptr : host.c_str(), port_text.c_str(), &hints, &res);
        rc != 0)
      return usage_error(fmt::format("--listen {}: {}", listen, gai_strerror(rc)));
    for (addrinfo* a = res; a; a = a->ai_next) {
      const int fd =
          ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      const int one = 1;
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, backlog) == 0) {
        out.fd = fd;
        break;
      }
      last_error = std::strerror(errno);
      ::close(fd);
    }
    freeaddrinfo(res);
  }
  if (out.fd < 0) return failure(fmt::format("cannot listen on {}: {}", listen, last_error));
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  getsockname(out.fd, reinterpret_cast<sockaddr*>(&ss), &len);
  char buf[INET6_ADDRSTRLEN] = {0};
  if (ss.ss_family == AF_INET6) {
    auto* a6 = reinterpret_cast<sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &a6->sin6_addr, buf, sizeof buf);
    out.port = ntohs(a6->sin6_port);
    out.address = fmt::format("[{}]:{}", buf, out.port);
  } else {
    auto* a4 = reinterpret_cast<sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &a4->sin_addr, buf, sizeof buf);
    out.port = ntohs(a4->sin_port);
    out.address = fmt::format("{}:{}", buf, out.port);
  }
  return out;
}

}  // namespace gpudoctor
