// One connection of the HTTP server (exporter/http_server.hpp) and its non-blocking reads and
// writes, plain or TLS. The event loop owns every Conn; these functions never block.
// Thread-safety: a Conn belongs to the event-loop thread.
#pragma once

#include <openssl/ssl.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "exporter/http_server.hpp"

namespace gpudoctor::http {

struct Conn {
  // kDrain: the answer is out and our side shut; unread input is read and dropped for a moment,
  // so closing does not reset the connection before the client has read the answer.
  enum class Phase { kHandshake, kRead, kAuth, kWrite, kDrain };
  int fd = -1;
  uint64_t id = 0;
  SSL* ssl = nullptr;
  Phase phase = Phase::kRead;
  std::string in;
  HttpRequest pending;  // waiting for the authentication thread
  bool pending_head_only = false;
  std::string out_head;
  std::shared_ptr<const std::string> out_body;
  size_t out_sent = 0;  // over head and body together
  bool close_after = false;
  bool queued = false;   // in the loop's list of connections to drive again
  bool counted = false;  // in the server's and its peer's counts of held connections
  std::string peer;      // the peer's address (http::peer_key)
  // Since when it is idle (between requests, or since it was accepted), or since its head or
  // handshake began: the order in which connections give way (exporter/http_admission.hpp).
  std::chrono::steady_clock::time_point since;
  std::chrono::steady_clock::time_point deadline;
  uint32_t events = 0;

  ~Conn() {
    if (ssl) SSL_free(ssl);
    if (fd >= 0) ::close(fd);
  }
};

// kMore: progress, go on; kWait: wait until readable (reading) or writable (writing);
// kWaitOther: TLS needs the other direction first; kClosed: the connection is to be closed.
enum class Io { kMore, kWait, kWaitOther, kClosed };

// Reads what is available into c.in (stopping once it holds more than max_request_bytes); a
// request's first byte starts its read-header deadline.
Io read_some(Conn& c, size_t max_request_bytes, std::chrono::milliseconds read_header_timeout);
// Writes what the socket takes of c's answer (head, then body).
Io write_some(Conn& c);

}  // namespace gpudoctor::http
