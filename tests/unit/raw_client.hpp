// A raw client socket for the HTTP server's tests: what a scraper, a slow client or an
// attacker sends, byte for byte, from any loopback address.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace gpudoctor {

// A raw client socket: what a scraper, a slow client or an attacker sends.
class RawClient {
 public:
  // From `source` (a 127.0.0.0/8 address: each is a different peer to the server's limits).
  explicit RawClient(uint16_t port, const char* source = nullptr) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (source) {
      sockaddr_in from{};
      from.sin_family = AF_INET;
      inet_pton(AF_INET, source, &from.sin_addr);
      ::bind(fd_, reinterpret_cast<sockaddr*>(&from), sizeof from);
    }
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    timeval tv{3, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~RawClient() { ::close(fd_); }
  bool connected() const { return connected_; }
  bool send(const std::string& s) {
    return ::send(fd_, s.data(), s.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(s.size());
  }
  // Reads until `count` responses are complete (by Content-Length), the peer closes, or 3 s.
  std::string read_responses(int count = 1) {
    std::string out;
    char buf[65536];
    for (;;) {
      int complete = 0;
      for (size_t pos = 0;;) {
        const size_t head = out.find("\r\n\r\n", pos);
        if (head == std::string::npos) break;
        const size_t cl = out.find("Content-Length: ", pos);
        if (cl == std::string::npos || cl > head) break;
        const size_t len = std::strtoul(out.c_str() + cl + 16, nullptr, 10);
        const bool head_only = last_was_head_;
        const size_t end = head + 4 + (head_only ? 0 : len);
        if (out.size() < end) break;
        ++complete;
        pos = end;
      }
      if (complete >= count) return out;
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        closed_ = true;
        return out;
      }
      out.append(buf, static_cast<size_t>(n));
    }
  }
  // True when the server closed the connection (recv returns 0 or an error) within `wait`.
  bool closed_within(std::chrono::milliseconds wait) {
    timeval tv{0, static_cast<suseconds_t>(wait.count() * 1000)};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char buf[4096];
    for (;;) {
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n == 0) return true;
      if (n < 0) return errno == ECONNRESET;
    }
  }
  bool closed() const { return closed_; }
  void head_mode(bool on) { last_was_head_ = on; }

 private:
  int fd_ = -1;
  bool connected_ = false, closed_ = false, last_was_head_ = false;
};

}  // namespace gpudoctor
