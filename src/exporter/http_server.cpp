#include "exporter/http_server.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "exporter/auth_worker.hpp"
#include "exporter/http_admission.hpp"
#include "exporter/http_conn.hpp"
#include "exporter/http_parse.hpp"
#include "exporter/listen_socket.hpp"
#include "exporter/tls_context.hpp"
#include "text/text.hpp"

namespace gpudoctor {
namespace {

using Clock = std::chrono::steady_clock;
using http::Conn;
using http::Io;
using http::ParseResult;
using text::lower;

}  // namespace

std::string_view HttpRequest::header(std::string_view lower_name) const {
  for (const auto& [k, v] : headers)
    if (k == lower_name) return v;
  return {};
}

HttpResponse HttpResponse::text(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.body = std::make_shared<const std::string>(std::move(body));
  return r;
}

struct HttpServer::Impl {
  HttpServerOptions opt;
  HttpHandler handler;
  int listen_fd = -1, epoll_fd = -1, wake_fd = -1;
  int reserve_fd = -1;  // kept for the moment accept() runs out of descriptors
  TlsContext tls_ctx;
  SSL_CTX* ctx = nullptr;         // tls_ctx's, or none
  std::atomic<size_t> active{0};  // held connections (stats() reads it from other threads)
  size_t draining = 0;            // connections closing
  http::PeerCounts peers;
  bool accept_paused = false;
  Clock::time_point accept_resume;
  std::chrono::milliseconds accept_backoff{0};
  std::string address;
  uint16_t port = 0;
  std::thread loop_thread;
  std::atomic<bool> stopping{false};
  std::vector<int> again;  // connections drive() left with work to do (the loop thread's)
  std::unordered_map<int, std::unique_ptr<Conn>> conns;
  uint64_t next_id = 1;

  std::unique_ptr<BasicAuth> auth;
  std::unique_ptr<AuthWorker> auth_worker;

  mutable std::mutex stats_mu;
  HttpServerStats st;

  ~Impl() {
    conns.clear();
    if (listen_fd >= 0) ::close(listen_fd);
    if (epoll_fd >= 0) ::close(epoll_fd);
    if (wake_fd >= 0) ::close(wake_fd);
    if (reserve_fd >= 0) ::close(reserve_fd);
  }

  void count(uint64_t HttpServerStats::*field) {
    std::lock_guard lock(stats_mu);
    ++(st.*field);
  }

  void wake() {
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(wake_fd, &one, sizeof one);
  }

  Result<Nothing> bind_listen() {
    auto l = open_listen_socket(opt.listen);
    if (!l) return l.error();
    listen_fd = l->fd;
    address = l->address;
    port = l->port;
    return kOk;
  }

  void set_events(Conn& c, uint32_t events) {
    if (c.events == events) return;
    epoll_event ev{};
    ev.events = events;
    ev.data.fd = c.fd;
    epoll_ctl(epoll_fd, EPOLL_CTL_MOD, c.fd, &ev);
    c.events = events;
  }

  // Leaves the counts of held connections (and of one peer's).
  void uncount(Conn& c) {
    if (!c.counted) return;
    c.counted = false;
    --active;
    peers.remove(c.peer);
  }

  void close_conn(int fd) {
    const auto it = conns.find(fd);
    if (it == conns.end()) return;
    uncount(*it->second);
    if (it->second->phase == Conn::Phase::kDrain) --draining;
    conns.erase(it);  // the destructor closes the socket
  }

  // Our side is done: close_notify and FIN, then unread input is read and dropped for up to a
  // second, so closing does not reset the connection before the client has read what it got.
  // Closes at once when too many are closing already. False when the connection is gone.
  bool begin_drain(Conn& c) {
    uncount(c);
    if (draining >= std::max<size_t>(16, opt.max_connections / 4)) {
      close_conn(c.fd);
      return false;
    }
    if (c.ssl) {
      ERR_clear_error();
      SSL_shutdown(c.ssl);
    }
    ::shutdown(c.fd, SHUT_WR);
    c.phase = Conn::Phase::kDrain;
    ++draining;
    c.deadline = Clock::now() + std::chrono::milliseconds(1000);
    c.in.clear();
    c.out_sent = 0;
    set_events(c, EPOLLIN);
    return true;
  }

  // Idle: between requests, or nothing sent yet. Slow: a head or handshake under way.
  static bool evictable(const Conn& c) {
    return c.counted && (c.phase == Conn::Phase::kRead || c.phase == Conn::Phase::kHandshake);
  }
  static bool idle(const Conn& c) { return c.phase == Conn::Phase::kRead && c.in.empty(); }

  // Makes room by closing one connection (of `peer` only, when given): true when one went.
  bool evict_one(const std::string* peer, Clock::time_point now) {
    std::vector<http::Candidate> candidates;
    for (const auto& [fd, c] : conns)
      if (evictable(*c) && (!peer || c->peer == *peer))
        candidates.push_back({fd, idle(*c), c->since});
    const int victim = http::pick_victim(candidates, now, opt.slow_after);
    if (victim < 0) return false;
    count(&HttpServerStats::evicted);
    begin_drain(*conns.at(victim));
    return true;
  }

  // What a refused plain-HTTP connection is told; TLS ones are closed without it (answering
  // would need the handshake, the dear part).
  static constexpr std::string_view kFull =
      "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
      "Content-Length: 44\r\nRetry-After: 1\r\nConnection: close\r\n\r\n"
      "too many connections: try again in a moment\n";

  void accept_all() {
    for (int i = 0; i < 64; ++i) {  // then the others get a turn
      sockaddr_storage ss{};
      socklen_t len = sizeof ss;
      const int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&ss), &len,
                               SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          if (out_of_descriptors()) continue;
          return;
        }
        break;  // EAGAIN: all taken
      }
      accept_backoff = std::chrono::milliseconds(0);
      admit(fd, http::peer_key(ss));
    }
  }

  // accept() failed for want of descriptors. The oldest idle connection gives its descriptor
  // up at once, and accepting goes on. With none idle, one waiting client is told 503 through
  // the reserve descriptor and accepting pauses (10 ms, doubling to 1 s) instead of spinning on
  // a listening socket that stays readable. False when accepting is to stop for now.
  bool out_of_descriptors() {
    count(&HttpServerStats::accept_errors);
    std::vector<http::Candidate> candidates;
    for (const auto& [fd, c] : conns)
      if (evictable(*c) && idle(*c)) candidates.push_back({fd, true, c->since});
    if (const int victim = http::pick_victim(candidates, Clock::now(), Clock::duration::max());
        victim >= 0) {
      count(&HttpServerStats::evicted);
      close_conn(victim);
      return true;
    }
    if (reserve_fd >= 0) {
      ::close(reserve_fd);
      if (const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
          fd >= 0) {
        count(&HttpServerStats::refused);
        if (!ctx) send_full(fd);
        ::close(fd);
      }
      reserve_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    }
    accept_backoff = std::clamp(accept_backoff * 2, std::chrono::milliseconds(10),
                                std::chrono::milliseconds(1000));
    accept_resume = Clock::now() + accept_backoff;
    epoll_event ev{};
    ev.data.fd = listen_fd;
    epoll_ctl(epoll_fd, EPOLL_CTL_MOD, listen_fd, &ev);  // no events until accept_resume
    accept_paused = true;
    return false;
  }

  static void send_full(int fd) {
    [[maybe_unused]] const ssize_t n = ::send(fd, kFull.data(), kFull.size(), MSG_NOSIGNAL);
  }

  void admit(int fd, std::string peer) {
    const auto now = Clock::now();
    bool room = true;
    if (peers.count(peer) >= opt.max_connections_per_address) room = evict_one(&peer, now);
    if (room && active >= opt.max_connections) room = evict_one(nullptr, now);
    if (!room) {
      count(&HttpServerStats::refused);
      if (draining >= std::max<size_t>(16, opt.max_connections / 4)) {
        if (!ctx) send_full(fd);
        ::close(fd);
        return;
      }
    }
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    // Room for a whole /metrics answer (about 12 KiB per GPU) in one send, so a scrape needs
    // no second trip through the loop.
    const int sndbuf = 512 * 1024;
    if (room) setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
    auto c = std::make_unique<Conn>();
    c->fd = fd;
    c->id = next_id++;
    c->peer = std::move(peer);
    c->since = now;
    c->deadline = now + opt.read_header_timeout;
    if (ctx && room) {
      c->ssl = SSL_new(ctx);
      if (!c->ssl) return;  // c closes fd
      SSL_set_fd(c->ssl, fd);
      SSL_set_accept_state(c->ssl);
      c->phase = Conn::Phase::kHandshake;
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) return;  // c closes fd
    c->events = EPOLLIN;
    Conn& ref = *c;
    conns.emplace(fd, std::move(c));
    if (!room) {
      if (!ctx) send_full(fd);
      begin_drain(ref);
      return;
    }
    ref.counted = true;
    ++active;
    peers.add(ref.peer);
    drive(ref);
  }

  void respond(Conn& c, HttpResponse r, bool head_only, bool close_after) {
    if (r.status >= 400) count(&HttpServerStats::rejected);
    const size_t body_size = r.body ? r.body->size() : 0;
    std::string h = fmt::format("HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n",
                                r.status, http::reason_phrase(r.status), r.content_type, body_size);
    for (const auto& [k, v] : r.headers) h += fmt::format("{}: {}\r\n", k, v);
    h += close_after ? "Connection: close\r\n\r\n" : "Connection: keep-alive\r\n\r\n";
    c.out_head = std::move(h);
    c.out_body = head_only ? nullptr : std::move(r.body);
    c.out_sent = 0;
    c.close_after = close_after;
    c.phase = Conn::Phase::kWrite;
    c.deadline = Clock::now() + opt.write_timeout;
  }

  void reject(Conn& c, int status, std::string message) {
    respond(c, HttpResponse::text(status, std::move(message) + "\n"), false, true);
  }

  void dispatch(Conn& c, const HttpRequest& req) {
    const bool head_only = req.method == "HEAD";
    const std::string_view connection = req.header("connection");
    bool close_after = req.version == "HTTP/1.0" ? lower(connection) != "keep-alive"
                                                 : lower(connection) == "close";
    if (stopping) close_after = true;
    count(&HttpServerStats::requests);
    respond(c, handler(req), head_only, close_after);
  }

  // Takes complete requests from c.in while the connection is reading.
  void process_input(Conn& c) {
    while (c.phase == Conn::Phase::kRead && !c.in.empty()) {
      HttpRequest req;
      size_t used = 0;
      switch (http::parse_request(c.in, opt.max_request_bytes, req, used)) {
        case ParseResult::kIncomplete:
          return;
        case ParseResult::kTooLarge:
          return reject(c, 431, "request head too large");
        case ParseResult::kBad:
          return reject(c, 400, "malformed request");
        case ParseResult::kHost:
          return reject(c, 400, "an HTTP/1.1 request needs exactly one Host header");
        case ParseResult::kVersion:
          return reject(c, 505, "only HTTP/1.0 and HTTP/1.1 are served");
        case ParseResult::kBody:
          return reject(c, 413, "request bodies are not accepted");
        case ParseResult::kOk:
          break;
      }
      c.in.erase(0, used);
      if (req.method != "GET" && req.method != "HEAD") {
        HttpResponse r = HttpResponse::text(405, "only GET and HEAD are served\n");
        r.headers.emplace_back("Allow", "GET, HEAD");
        respond(c, std::move(r), false, true);
        return;
      }
      if (auth) {
        const std::string_view authorization = req.header("authorization");
        switch (auth->quick(authorization)) {
          case BasicAuth::Verdict::kAllowed:
            break;
          case BasicAuth::Verdict::kDenied:
            return unauthorized(c, req.method == "HEAD");
          case BasicAuth::Verdict::kNeedsCheck: {
            if (!auth_worker->submit({c.id, c.fd, std::string(authorization)})) {
              HttpResponse r = HttpResponse::text(503, "too many logins at once\n");
              r.headers.emplace_back("Retry-After", "1");
              respond(c, std::move(r), req.method == "HEAD", true);
              return;
            }
            c.pending = std::move(req);
            c.phase = Conn::Phase::kAuth;
            set_events(c, 0);
            return;
          }
        }
      }
      dispatch(c, req);
    }
  }

  // A 401 closes the connection: clients without credentials cannot hold connection slots that
  // scrapers need (a browser or Prometheus reconnects with them).
  void unauthorized(Conn& c, bool head_only) {
    HttpResponse r = HttpResponse::text(401, "Unauthorized\n");
    r.headers.emplace_back("WWW-Authenticate", "Basic realm=\"gpudoctor\", charset=\"UTF-8\"");
    respond(c, std::move(r), head_only, true);
  }

  // Advances a connection as far as it goes without blocking.
  void drive(Conn& c) {
    for (int round = 0; round < 64; ++round) {
      if (c.phase == Conn::Phase::kHandshake) {
        ERR_clear_error();
        const int r = SSL_do_handshake(c.ssl);
        if (r == 1) {
          c.phase = Conn::Phase::kRead;
          c.since = Clock::now();
          continue;
        }
        const int e = SSL_get_error(c.ssl, r);
        if (e == SSL_ERROR_WANT_READ) return set_events(c, EPOLLIN);
        if (e == SSL_ERROR_WANT_WRITE) return set_events(c, EPOLLOUT);
        return close_conn(c.fd);
      }
      if (c.phase == Conn::Phase::kAuth) return;
      if (c.phase == Conn::Phase::kDrain) {
        char buf[16384];
        for (;;) {
          const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
          if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
          c.out_sent += n > 0 ? static_cast<size_t>(n) : 0;
          if (n <= 0 || c.out_sent > (size_t{1} << 20)) return close_conn(c.fd);
        }
      }
      if (c.phase == Conn::Phase::kRead) {
        const Io io = read_some(c, opt.max_request_bytes, opt.read_header_timeout);
        if (io == Io::kClosed && c.in.empty()) return close_conn(c.fd);
        process_input(c);
        if (c.phase == Conn::Phase::kRead) {
          if (io == Io::kClosed) return close_conn(c.fd);
          if (io == Io::kWait) return set_events(c, EPOLLIN);
          if (io == Io::kWaitOther) return set_events(c, EPOLLOUT);
          continue;
        }
      }
      if (c.phase == Conn::Phase::kWrite) {
        const Io io = write_some(c);
        if (io == Io::kClosed) return close_conn(c.fd);
        if (io == Io::kWait) return set_events(c, EPOLLOUT);
        if (io == Io::kWaitOther) return set_events(c, EPOLLIN);
        if (c.close_after) {
          if (!begin_drain(c)) return;
          continue;
        }
        c.out_head.clear();
        c.out_body.reset();
        c.phase = Conn::Phase::kRead;
        c.since = Clock::now();
        c.deadline = c.since + (c.in.empty() ? opt.idle_timeout : opt.read_header_timeout);
        set_events(c, EPOLLIN);
        continue;  // a pipelined request may be waiting, or TLS may hold buffered bytes
      }
    }
    // Rounds used up with work left (a long pipeline): no socket event will come for what is
    // already buffered, so the loop drives it again after serving the others.
    if (!c.queued) {
      c.queued = true;
      again.push_back(c.fd);
    }
  }

  void finish_auth_jobs() {
    if (!auth_worker) return;  // a wake-up from stop()
    for (auto& j : auth_worker->take_done()) {
      const auto it = conns.find(j.fd);
      if (it == conns.end() || it->second->id != j.id) continue;  // gone meanwhile
      Conn& c = *it->second;
      if (c.phase != Conn::Phase::kAuth) continue;
      c.phase = Conn::Phase::kRead;
      if (j.ok)
        dispatch(c, c.pending);
      else
        unauthorized(c, c.pending.method == "HEAD");
      drive(c);
    }
  }

  void sweep(Clock::time_point now) {
    // Near the limit, idle and slow connections have pressed_timeout, not the full timeouts.
    const bool pressed = active >= opt.max_connections - opt.max_connections / 4;
    std::vector<int> expired, pressed_out;
    for (const auto& [fd, c] : conns) {
      if (c->phase == Conn::Phase::kAuth) continue;
      if (now > c->deadline)
        expired.push_back(fd);
      else if (pressed && evictable(*c) && now - c->since >= opt.pressed_timeout)
        pressed_out.push_back(fd);
    }
    for (int fd : expired) {
      if (conns[fd]->phase != Conn::Phase::kDrain) count(&HttpServerStats::timed_out);
      close_conn(fd);
    }
    for (int fd : pressed_out) {
      count(&HttpServerStats::evicted);
      begin_drain(*conns[fd]);
    }
  }

  void loop() {
    block_stop_signals();
    epoll_event events[64];
    auto next_sweep = Clock::now();
    while (!stopping) {
      if (accept_paused && Clock::now() >= accept_resume) {
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.fd = listen_fd;
        epoll_ctl(epoll_fd, EPOLL_CTL_MOD, listen_fd, &ev);
        accept_paused = false;
      }
      int wait_ms = again.empty() ? 100 : 0;
      if (accept_paused)
        wait_ms = std::min<int>(
            wait_ms, static_cast<int>(
                         std::chrono::ceil<std::chrono::milliseconds>(accept_resume - Clock::now())
                             .count()));
      const int n = epoll_wait(epoll_fd, events, 64, std::max(wait_ms, 0));
      for (int i = 0; i < n && !stopping; ++i) {
        const int fd = events[i].data.fd;
        if (fd == listen_fd) {
          accept_all();
        } else if (fd == wake_fd) {
          uint64_t v;
          [[maybe_unused]] const ssize_t r = ::read(wake_fd, &v, sizeof v);
          finish_auth_jobs();
        } else if (const auto it = conns.find(fd); it != conns.end()) {
          if (events[i].events & (EPOLLERR | EPOLLHUP) && !(events[i].events & EPOLLIN))
            close_conn(fd);
          else
            drive(*it->second);
        }
      }
      std::vector<int> redrive;
      redrive.swap(again);
      for (int fd : redrive)
        if (const auto it = conns.find(fd); it != conns.end() && !stopping) {
          it->second->queued = false;
          drive(*it->second);
        }
      const auto now = Clock::now();
      if (now >= next_sweep) {
        sweep(now);
        next_sweep = now + std::chrono::milliseconds(100);
      }
    }
  }
};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() {
  stop();
}

Result<std::unique_ptr<HttpServer>> HttpServer::start(HttpServerOptions options,
                                                      HttpHandler handler) {
  auto impl = std::make_unique<Impl>();
  impl->opt = std::move(options);
  impl->handler = std::move(handler);
  if (impl->opt.web.tls()) {
    auto t = make_tls_context(impl->opt.web);
    if (!t) return t.error();
    impl->tls_ctx = std::move(t.value());
    impl->ctx = impl->tls_ctx.get();
  }
  if (impl->opt.max_connections == 0 || impl->opt.max_connections_per_address == 0)
    return usage_error("the connection limits must be at least 1");
  if (!impl->opt.web.users.empty()) impl->auth = std::make_unique<BasicAuth>(impl->opt.web.users);
  if (auto r = impl->bind_listen(); !r) return r.error();
  impl->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  impl->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  impl->reserve_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (impl->epoll_fd < 0 || impl->wake_fd < 0)
    return failure(fmt::format("cannot create the event loop: {}", std::strerror(errno)));
  for (int fd : {impl->listen_fd, impl->wake_fd}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    epoll_ctl(impl->epoll_fd, EPOLL_CTL_ADD, fd, &ev);
  }
  Impl* raw = impl.get();
  if (raw->auth)
    raw->auth_worker = std::make_unique<AuthWorker>(*raw->auth, [raw] { raw->wake(); });
  raw->loop_thread = std::thread([raw] { raw->loop(); });
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

void HttpServer::stop() {
  if (!impl_) return;
  impl_->stopping = true;
  impl_->wake();
  if (impl_->loop_thread.joinable()) impl_->loop_thread.join();
  if (impl_->auth_worker) impl_->auth_worker->stop();
  impl_->conns.clear();
}

std::string HttpServer::address() const {
  return impl_->address;
}
uint16_t HttpServer::port() const {
  return impl_->port;
}
bool HttpServer::tls() const {
  return impl_->ctx != nullptr;
}
HttpServerStats HttpServer::stats() const {
  std::lock_guard lock(impl_->stats_mu);
  HttpServerStats s = impl_->st;
  s.connections = impl_->active;
  return s;
}

}  // namespace gpudoctor
