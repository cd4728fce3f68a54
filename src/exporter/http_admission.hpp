// Who may hold a connection of the HTTP server (exporter/http_server.hpp): connections counted per
// peer address, and which connection gives way when a peer or the whole server is at its limit.
// The policy is here, apart from the sockets, so that its order is tested on its own: the oldest
// idle connection goes first (a keep-alive connection between requests, or one that has sent
// nothing yet), then the oldest slow one (a request head or a TLS handshake in progress for at
// least a minimum age); a connection that is being answered or checked is never chosen.
// Thread-safety: none; the server's event-loop thread owns these.
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gpudoctor::http {

using Clock = std::chrono::steady_clock;

// A peer's address as a 16-byte key; IPv4 and IPv4-mapped IPv6 (a dual-stack socket's view of
// an IPv4 client) give the same key. The port is not part of it.
std::string peer_key(const sockaddr_storage& address);
// "127.0.0.1" or "::1" for a key.
std::string peer_text(std::string_view key);

class PeerCounts {
 public:
  size_t count(const std::string& key) const;
  void add(const std::string& key) { ++counts_[key]; }
  void remove(const std::string& key);
  size_t peers() const { return counts_.size(); }

 private:
  std::unordered_map<std::string, size_t> counts_;
};

struct Candidate {
  int fd = -1;
  bool idle = false;        // between requests, or nothing sent yet
  Clock::time_point since;  // when it became idle, or when its head or handshake began
};

// The connection to close to make room (its fd), or -1 when none may go: the oldest idle one,
// else the oldest slow one whose head or handshake began at least min_slow_age ago.
int pick_victim(const std::vector<Candidate>& candidates, Clock::time_point now,
                Clock::duration min_slow_age);

}  // namespace gpudoctor::http
