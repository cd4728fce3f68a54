// scrape_rate: scrapes an HTTP endpoint at a fixed rate and reports latency percentiles measured
// from each request's scheduled time, so a stall shows up in every request it delays (wrk, at
// full speed, measures a saturated client instead). Keep-alive connections, one thread each.
// Usage: gpudoctor_scrape_rate HOST:PORT PATH RATE_PER_S SECONDS [CONNECTIONS]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

int connect_to(const std::string& host, int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, host.c_str(), &a.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    std::perror("connect");
    std::exit(1);
  }
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

// Reads one response (headers with Content-Length, then the body); false on error.
bool read_response(int fd, std::string& buf) {
  buf.clear();
  char tmp[65536];
  size_t need = std::string::npos;
  for (;;) {
    if (need == std::string::npos) {
      const size_t end = buf.find("\r\n\r\n");
      if (end != std::string::npos) {
        const size_t cl = buf.find("Content-Length: ");
        if (cl == std::string::npos || cl > end) return false;
        need = end + 4 + std::strtoul(buf.c_str() + cl + 16, nullptr, 10);
      }
    }
    if (need != std::string::npos && buf.size() >= need) return true;
    const ssize_t n = ::recv(fd, tmp, sizeof tmp, 0);
    if (n <= 0) return false;
    buf.append(tmp, static_cast<size_t>(n));
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s HOST:PORT PATH RATE_PER_S SECONDS [CONNECTIONS]\n", argv[0]);
    return 2;
  }
  const std::string target = argv[1];
  const std::string host = target.substr(0, target.rfind(':'));
  const int port = std::atoi(target.c_str() + target.rfind(':') + 1);
  const std::string request =
      std::string("GET ") + argv[2] + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n";
  const double rate = std::atof(argv[3]);
  const double seconds = std::atof(argv[4]);
  const int conns = argc > 5 ? std::atoi(argv[5]) : 4;

  std::vector<std::vector<double>> latencies(static_cast<size_t>(conns));
  std::vector<int> errors(static_cast<size_t>(conns), 0);
  const auto start = Clock::now() + std::chrono::milliseconds(100);
  std::vector<std::thread> threads;
  for (int c = 0; c < conns; ++c) {
    threads.emplace_back([&, c] {
      const int fd = connect_to(host, port);
      const auto period = std::chrono::duration<double>(conns / rate);
      const auto offset = std::chrono::duration<double>(c / rate);
      std::string buf;
      for (long i = 0;; ++i) {
        const auto due = start + std::chrono::duration_cast<Clock::duration>(offset + i * period);
        if (due > start + std::chrono::duration<double>(seconds)) break;
        std::this_thread::sleep_until(due);
        if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
                static_cast<ssize_t>(request.size()) ||
            !read_response(fd, buf) || buf.compare(0, 12, "HTTP/1.1 200") != 0) {
          ++errors[static_cast<size_t>(c)];
          continue;
        }
        latencies[static_cast<size_t>(c)].push_back(
            std::chrono::duration<double, std::micro>(Clock::now() - due).count());
      }
      ::close(fd);
    });
  }
  for (auto& t : threads) t.join();
  std::vector<double> all;
  int errs = 0;
  for (int c = 0; c < conns; ++c) {
    all.insert(all.end(), latencies[static_cast<size_t>(c)].begin(),
               latencies[static_cast<size_t>(c)].end());
    errs += errors[static_cast<size_t>(c)];
  }
  if (all.empty()) {
    std::fprintf(stderr, "no successful request\n");
    return 1;
  }
  std::sort(all.begin(), all.end());
  auto pct = [&](double p) { return all[std::min(all.size() - 1, size_t(p * all.size()))]; };
  std::printf(
      "%zu requests in %.0f s (%.0f/s) over %d connections, %d errors; latency from the "
      "scheduled time: p50 %.0f us, p90 %.0f us, p99 %.0f us, p99.9 %.0f us, max %.0f us\n",
      all.size(), seconds, static_cast<double>(all.size()) / seconds, conns, errs, pct(0.5),
      pct(0.9), pct(0.99), pct(0.999), all.back());
  return errs == 0 ? 0 : 1;
}
