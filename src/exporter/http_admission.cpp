#include "exporter/http_admission.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>

namespace gpudoctor::http {

std::string peer_key(const sockaddr_storage& address) {
  unsigned char key[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 0, 0};
  if (address.ss_family == AF_INET) {
    const auto* a4 = reinterpret_cast<const sockaddr_in*>(&address);
    std::memcpy(key + 12, &a4->sin_addr, 4);
  } else if (address.ss_family == AF_INET6) {
    const auto* a6 = reinterpret_cast<const sockaddr_in6*>(&address);
    std::memcpy(key, &a6->sin6_addr, 16);
  }
  return std::string(reinterpret_cast<const char*>(key), sizeof key);
}

std::string peer_text(std::string_view key) {
  char buf[INET6_ADDRSTRLEN] = {0};
  if (key.size() != 16) return "?";
  static const unsigned char kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(key.data(), kMapped, 12) == 0) {
    inet_ntop(AF_INET, key.data() + 12, buf, sizeof buf);
  } else {
    in6_addr a6;
    std::memcpy(&a6, key.data(), 16);
    inet_ntop(AF_INET6, &a6, buf, sizeof buf);
  }
  return buf;
}

size_t PeerCounts::count(const std::string& key) const {
  const auto it = counts_.find(key);
  return it == counts_.end() ? 0 : it->second;
}

void PeerCounts::remove(const std::string& key) {
  const auto it = counts_.find(key);
  if (it == counts_.end()) return;
  if (--it->second == 0) counts_.erase(it);
}

int pick_victim(const std::vector<Candidate>& candidates, Clock::time_point now,
                Clock::duration min_slow_age) {
  const Candidate* idle = nullptr;
  const Candidate* slow = nullptr;
  for (const Candidate& c : candidates) {
    if (c.idle) {
      if (!idle || c.since < idle->since) idle = &c;
    } else if (now - c.since >= min_slow_age) {
      if (!slow || c.since < slow->since) slow = &c;
    }
  }
  if (idle) return idle->fd;
  if (slow) return slow->fd;
  return -1;
}

}  // namespace gpudoctor::http
