#include "exporter/http_conn.hpp"

#include <openssl/err.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>

namespace gpudoctor::http {

using Clock = std::chrono::steady_clock;

Io read_some(Conn& c, size_t max_request_bytes, std::chrono::milliseconds read_header_timeout) {
  // Enough waiting already (a long pipeline): leave the rest in the kernel, where TCP slows
  // the client down, instead of buffering all it sends.
  if (c.in.size() > max_request_bytes) return Io::kMore;
  char buf[16384];
  for (;;) {
    ssize_t n;
    if (c.ssl) {
      ERR_clear_error();
      n = SSL_read(c.ssl, buf, sizeof buf);
      if (n <= 0) {
        const int e = SSL_get_error(c.ssl, static_cast<int>(n));
        if (e == SSL_ERROR_WANT_READ) return Io::kWait;
        if (e == SSL_ERROR_WANT_WRITE) return Io::kWaitOther;
        return Io::kClosed;
      }
    } else {
      n = ::recv(c.fd, buf, sizeof buf, 0);
      if (n == 0) return Io::kClosed;
      if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? Io::kWait : Io::kClosed;
    }
    if (c.in.empty()) c.since = Clock::now(), c.deadline = c.since + read_header_timeout;
    c.in.append(buf, static_cast<size_t>(n));
    if (c.in.size() > max_request_bytes + sizeof buf) return Io::kMore;  // judged below
  }
}

Io write_some(Conn& c) {
  const size_t head = c.out_head.size();
  const size_t total = head + (c.out_body ? c.out_body->size() : 0);
  while (c.out_sent < total) {
    ssize_t n;
    if (c.ssl) {
      const char* p = c.out_sent < head ? c.out_head.data() + c.out_sent
                                        : c.out_body->data() + (c.out_sent - head);
      const size_t len = c.out_sent < head ? head - c.out_sent : total - c.out_sent;
      ERR_clear_error();
      n = SSL_write(c.ssl, p, static_cast<int>(std::min<size_t>(len, 1 << 30)));
      if (n <= 0) {
        const int e = SSL_get_error(c.ssl, static_cast<int>(n));
        if (e == SSL_ERROR_WANT_WRITE) return Io::kWait;
        if (e == SSL_ERROR_WANT_READ) return Io::kWaitOther;
        return Io::kClosed;
      }
    } else {
      iovec iov[2];
      int count_iov = 0;
      if (c.out_sent < head) {
        iov[count_iov++] = {c.out_head.data() + c.out_sent, head - c.out_sent};
        if (c.out_body && !c.out_body->empty())
          iov[count_iov++] = {const_cast<char*>(c.out_body->data()), c.out_body->size()};
      } else {
        iov[count_iov++] = {const_cast<char*>(c.out_body->data()) + (c.out_sent - head),
                            total - c.out_sent};
      }
      msghdr msg{};
      msg.msg_iov = iov;
      msg.msg_iovlen = static_cast<size_t>(count_iov);
      n = ::sendmsg(c.fd, &msg, MSG_NOSIGNAL);
      if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? Io::kWait : Io::kClosed;
    }
    c.out_sent += static_cast<size_t>(n);
  }
  return Io::kMore;
}

}  // namespace gpudoctor::http
