#include "export/http_server.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "formats/text.hpp"

namespace gpudoctor {
namespace {

using Clock = std::chrono::steady_clock;

using text::lower;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

std::string_view reason_phrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 413:
      return "Content Too Large";
    case 431:
      return "Request Header Fields Too Large";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Error";
  }
}

std::string openssl_error() {
  const unsigned long e = ERR_get_error();
  if (e == 0) return "unknown TLS error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}

// Blocks the signals the main thread handles, so they never land on a server thread.
void block_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGPIPE);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

enum class ParseResult { kIncomplete, kOk, kBad, kTooLarge, kVersion, kBody };

// Parses one request head at the start of `in`; `used` gets its length.
ParseResult parse_request(std::string_view in, size_t max_bytes, HttpRequest& req, size_t& used) {
  size_t end = in.find("\r\n\r\n");
  size_t sep = 4;
  if (const size_t lf = in.find("\n\n"); lf != std::string_view::npos && lf < end)
    end = lf, sep = 2;
  if (end == std::string_view::npos)
    return in.size() > max_bytes ? ParseResult::kTooLarge : ParseResult::kIncomplete;
  if (end + sep > max_bytes) return ParseResult::kTooLarge;
  used = end + sep;
  std::string_view head = in.substr(0, end);
  size_t eol = std::min(head.find('\n'), head.size());
  std::string_view line = trim(head.substr(0, eol));
  const size_t sp1 = line.find(' ');
  const size_t sp2 = line.rfind(' ');
  if (sp1 == std::string_view::npos || sp2 == sp1) return ParseResult::kBad;
  req = HttpRequest{};
  req.method = std::string(line.substr(0, sp1));
  req.target = std::string(trim(line.substr(sp1 + 1, sp2 - sp1 - 1)));
  req.version = std::string(line.substr(sp2 + 1));
  if (req.method.empty() || req.target.empty() || req.target.find(' ') != std::string::npos)
    return ParseResult::kBad;
  if (req.version != "HTTP/1.1" && req.version != "HTTP/1.0")
    return req.version.rfind("HTTP/", 0) == 0 ? ParseResult::kVersion : ParseResult::kBad;
  const size_t q = req.target.find('?');
  req.path = req.target.substr(0, q);
  if (q != std::string::npos) req.query = req.target.substr(q + 1);
  size_t pos = eol + 1;
  while (pos < head.size()) {
    eol = std::min(head.find('\n', pos), head.size());
    std::string_view h = head.substr(pos, eol - pos);
    pos = eol + 1;
    if (!h.empty() && h.back() == '\r') h.remove_suffix(1);
    if (h.empty()) continue;
    if (h.front() == ' ' || h.front() == '\t') return ParseResult::kBad;  // obsolete folding
    const size_t colon = h.find(':');
    if (colon == std::string_view::npos || colon == 0) return ParseResult::kBad;
    // A header name is a token (RFC 9110): "Content-Length : 5" is refused, not misread.
    const std::string_view name = h.substr(0, colon);
    if (!std::all_of(name.begin(), name.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) ||
                 (c != 0 && std::strchr("!#$%&'*+-.^_`|~", c) != nullptr);
        }))
      return ParseResult::kBad;
    if (req.headers.size() >= 100) return ParseResult::kTooLarge;
    req.headers.emplace_back(lower(name), std::string(trim(h.substr(colon + 1))));
  }
  // No request body is served. Every Content-Length counts, so a second one cannot smuggle a
  // body past the first.
  int lengths = 0;
  bool body = false;
  for (const auto& [k, v] : req.headers) {
    if (k == "content-length") ++lengths, body |= v != "0";
    if (k == "transfer-encoding") body = true;
  }
  if (lengths > 1) return ParseResult::kBad;
  if (body) return ParseResult::kBody;
  return ParseResult::kOk;
}

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
  bool queued = false;  // in the loop's list of connections to drive again
  Clock::time_point deadline;
  uint32_t events = 0;

  ~Conn() {
    if (ssl) SSL_free(ssl);
    if (fd >= 0) ::close(fd);
  }
};

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

Result<std::pair<std::string, uint16_t>> parse_listen_address(const std::string& text) {
  std::string host, port;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':')
      return usage_error(fmt::format("--listen {}: expected [IPv6 address]:port", text));
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string::npos)
      return usage_error(
          fmt::format("--listen {}: expected host:port (e.g. 127.0.0.1:9835)", text));
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  char* end = nullptr;
  const long p = std::strtol(port.c_str(), &end, 10);
  if (port.empty() || *end != '\0' || p < 0 || p > 65535)
    return usage_error(fmt::format("--listen {}: the port must be a number 0-65535", text));
  return std::make_pair(host, static_cast<uint16_t>(p));
}

struct HttpServer::Impl {
  HttpServerOptions opt;
  HttpHandler handler;
  int listen_fd = -1, epoll_fd = -1, wake_fd = -1;
  SSL_CTX* ctx = nullptr;
  std::string address;
  uint16_t port = 0;
  std::thread loop_thread, auth_thread;
  std::atomic<bool> stopping{false};
  std::vector<int> again;  // connections drive() left with work to do (the loop thread's)
  std::unordered_map<int, std::unique_ptr<Conn>> conns;
  uint64_t next_id = 1;

  std::unique_ptr<BasicAuth> auth;
  struct AuthJob {
    uint64_t id;
    int fd;
    std::string authorization;
    bool ok = false;
  };
  std::mutex auth_mu;
  std::condition_variable auth_cv;
  std::deque<AuthJob> auth_jobs, auth_done;
  static constexpr size_t kMaxAuthJobs = 32;

  mutable std::mutex stats_mu;
  HttpServerStats st;

  ~Impl() {
    conns.clear();
    if (listen_fd >= 0) ::close(listen_fd);
    if (epoll_fd >= 0) ::close(epoll_fd);
    if (wake_fd >= 0) ::close(wake_fd);
    if (ctx) SSL_CTX_free(ctx);
  }

  void count(uint64_t HttpServerStats::*field) {
    std::lock_guard lock(stats_mu);
    ++(st.*field);
  }

  void wake() {
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(wake_fd, &one, sizeof one);
  }

  Result<Nothing> setup_tls() {
    const WebConfig& w = opt.web;
    ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) return failure("cannot create a TLS context: " + openssl_error());
    auto version = [](const std::string& v) {
      return v == "TLS10"   ? TLS1_VERSION
             : v == "TLS11" ? TLS1_1_VERSION
             : v == "TLS13" ? TLS1_3_VERSION
                            : TLS1_2_VERSION;
    };
    SSL_CTX_set_min_proto_version(ctx, version(w.min_version));
    if (!w.max_version.empty()) SSL_CTX_set_max_proto_version(ctx, version(w.max_version));
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    if (SSL_CTX_use_certificate_chain_file(ctx, w.cert_file.c_str()) != 1)
      return usage_error(
          fmt::format("web config: cannot load cert_file {}: {}", w.cert_file, openssl_error()));
    if (SSL_CTX_use_PrivateKey_file(ctx, w.key_file.c_str(), SSL_FILETYPE_PEM) != 1)
      return usage_error(
          fmt::format("web config: cannot load key_file {}: {}", w.key_file, openssl_error()));
    if (SSL_CTX_check_private_key(ctx) != 1)
      return usage_error(fmt::format("web config: key_file {} does not match cert_file {}",
                                     w.key_file, w.cert_file));
    static const unsigned char kSessionContext[] = "gpudoctor";
    SSL_CTX_set_session_id_context(ctx, kSessionContext, sizeof kSessionContext - 1);
    if (!w.client_ca_file.empty()) {
      if (SSL_CTX_load_verify_locations(ctx, w.client_ca_file.c_str(), nullptr) != 1)
        return usage_error(fmt::format("web config: cannot load client_ca_file {}: {}",
                                       w.client_ca_file, openssl_error()));
      if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(w.client_ca_file.c_str()))
        SSL_CTX_set_client_CA_list(ctx, names);
    }
    const std::string& t = w.client_auth_type;
    auto accept_any = [](int, X509_STORE_CTX*) { return 1; };
    if (t == "RequestClientCert")
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, accept_any);
    else if (t == "RequireAnyClientCert")
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, accept_any);
    else if (t == "VerifyClientCertIfGiven")
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    else if (t == "RequireAndVerifyClientCert")
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
    else
      SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
    return kOk;
  }

  Result<Nothing> bind_listen() {
    auto hp = parse_listen_address(opt.listen);
    if (!hp) return hp.error();
    const auto& [host, p] = hp.value();
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo* res = nullptr;
    const std::string port_text = std::to_string(p);
    if (const int rc =
            getaddrinfo(host.empty() ? nullptr : host.c_str(), port_text.c_str(), &hints, &res);
        rc != 0)
      return usage_error(fmt::format("--listen {}: {}", opt.listen, gai_strerror(rc)));
    std::string last_error = "no address";
    for (addrinfo* a = res; a; a = a->ai_next) {
      const int fd =
          ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      const int one = 1;
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 512) == 0) {
        listen_fd = fd;
        break;
      }
      last_error = std::strerror(errno);
      ::close(fd);
    }
    freeaddrinfo(res);
    if (listen_fd < 0)
      return failure(fmt::format("cannot listen on {}: {}", opt.listen, last_error));
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    getsockname(listen_fd, reinterpret_cast<sockaddr*>(&ss), &len);
    char buf[INET6_ADDRSTRLEN] = {0};
    if (ss.ss_family == AF_INET6) {
      auto* a6 = reinterpret_cast<sockaddr_in6*>(&ss);
      inet_ntop(AF_INET6, &a6->sin6_addr, buf, sizeof buf);
      port = ntohs(a6->sin6_port);
      address = fmt::format("[{}]:{}", buf, port);
    } else {
      auto* a4 = reinterpret_cast<sockaddr_in*>(&ss);
      inet_ntop(AF_INET, &a4->sin_addr, buf, sizeof buf);
      port = ntohs(a4->sin_port);
      address = fmt::format("{}:{}", buf, port);
    }
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

  void close_conn(int fd) { conns.erase(fd); }  // the destructor closes the socket

  void accept_all() {
    for (;;) {
      const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;  // EAGAIN, or a transient error: next readiness retries
      if (conns.size() >= opt.max_connections) {
        count(&HttpServerStats::rejected);
        ::close(fd);
        continue;
      }
      const int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      // Room for a whole /metrics answer (about 12 KiB per GPU) in one send, so a scrape needs
      // no second trip through the loop.
      const int sndbuf = 512 * 1024;
      setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
      auto c = std::make_unique<Conn>();
      c->fd = fd;
      c->id = next_id++;
      c->deadline = Clock::now() + opt.request_timeout;
      if (ctx) {
        c->ssl = SSL_new(ctx);
        if (!c->ssl) {
          ::close(fd);
          c->fd = -1;
          continue;
        }
        SSL_set_fd(c->ssl, fd);
        SSL_set_accept_state(c->ssl);
        c->phase = Conn::Phase::kHandshake;
      }
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = fd;
      if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) continue;  // c closes fd
      c->events = EPOLLIN;
      Conn& ref = *c;
      conns.emplace(fd, std::move(c));
      drive(ref);
    }
  }

  // Reads what is available; false when the connection must be closed.
  // kWait: wait until readable (reading) or writable (writing); kWaitOther: TLS needs the
  // other direction first.
  enum class Io { kMore, kWait, kWaitOther, kClosed };
  Io read_some(Conn& c) {
    // Enough waiting already (a long pipeline): leave the rest in the kernel, where TCP slows
    // the client down, instead of buffering all it sends.
    if (c.in.size() > opt.max_request_bytes) return Io::kMore;
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
      if (c.in.empty()) c.deadline = Clock::now() + opt.request_timeout;  // a request begins
      c.in.append(buf, static_cast<size_t>(n));
      if (c.in.size() > opt.max_request_bytes + sizeof buf) return Io::kMore;  // judged below
    }
  }

  void respond(Conn& c, HttpResponse r, bool head_only, bool close_after) {
    if (r.status >= 400) count(&HttpServerStats::rejected);
    const size_t body_size = r.body ? r.body->size() : 0;
    std::string h = fmt::format("HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n",
                                r.status, reason_phrase(r.status), r.content_type, body_size);
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
      switch (parse_request(c.in, opt.max_request_bytes, req, used)) {
        case ParseResult::kIncomplete:
          return;
        case ParseResult::kTooLarge:
          return reject(c, 431, "request head too large");
        case ParseResult::kBad:
          return reject(c, 400, "malformed request");
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
            std::lock_guard lock(auth_mu);
            if (auth_jobs.size() >= kMaxAuthJobs) {
              HttpResponse r = HttpResponse::text(503, "too many logins at once\n");
              r.headers.emplace_back("Retry-After", "1");
              respond(c, std::move(r), req.method == "HEAD", true);
              return;
            }
            auth_jobs.push_back({c.id, c.fd, std::string(authorization)});
            auth_cv.notify_one();
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

  // Writes what the socket takes; returns false when the connection is to be closed.
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

  // Advances a connection as far as it goes without blocking.
  void drive(Conn& c) {
    for (int round = 0; round < 64; ++round) {
      if (c.phase == Conn::Phase::kHandshake) {
        ERR_clear_error();
        const int r = SSL_do_handshake(c.ssl);
        if (r == 1) {
          c.phase = Conn::Phase::kRead;
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
        const Io io = read_some(c);
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
          if (c.ssl) {
            ERR_clear_error();
            SSL_shutdown(c.ssl);
          }
          ::shutdown(c.fd, SHUT_WR);
          c.phase = Conn::Phase::kDrain;
          c.deadline = Clock::now() + std::chrono::milliseconds(1000);
          c.in.clear();
          c.out_sent = 0;
          set_events(c, EPOLLIN);
          continue;
        }
        c.out_head.clear();
        c.out_body.reset();
        c.phase = Conn::Phase::kRead;
        c.deadline = Clock::now() + (c.in.empty() ? opt.idle_timeout : opt.request_timeout);
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
    std::deque<AuthJob> done;
    {
      std::lock_guard lock(auth_mu);
      done.swap(auth_done);
    }
    for (auto& j : done) {
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

  void auth_loop() {
    block_signals();
    for (;;) {
      AuthJob job;
      {
        std::unique_lock lock(auth_mu);
        auth_cv.wait(lock, [&] { return stopping || !auth_jobs.empty(); });
        if (stopping) return;
        job = std::move(auth_jobs.front());
        auth_jobs.pop_front();
      }
      job.ok = auth->check(job.authorization);
      {
        std::lock_guard lock(auth_mu);
        auth_done.push_back(std::move(job));
      }
      wake();
    }
  }

  void sweep(Clock::time_point now) {
    std::vector<int> expired;
    for (const auto& [fd, c] : conns)
      if (c->phase != Conn::Phase::kAuth && now > c->deadline) expired.push_back(fd);
    for (int fd : expired) {
      if (conns[fd]->phase != Conn::Phase::kDrain) count(&HttpServerStats::timed_out);
      close_conn(fd);
    }
  }

  void loop() {
    block_signals();
    epoll_event events[64];
    auto next_sweep = Clock::now();
    while (!stopping) {
      const int n = epoll_wait(epoll_fd, events, 64, again.empty() ? 100 : 0);
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
  if (impl->opt.web.tls())
    if (auto r = impl->setup_tls(); !r) return r.error();
  if (!impl->opt.web.users.empty()) impl->auth = std::make_unique<BasicAuth>(impl->opt.web.users);
  if (auto r = impl->bind_listen(); !r) return r.error();
  impl->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  impl->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (impl->epoll_fd < 0 || impl->wake_fd < 0)
    return failure(fmt::format("cannot create the event loop: {}", std::strerror(errno)));
  for (int fd : {impl->listen_fd, impl->wake_fd}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    epoll_ctl(impl->epoll_fd, EPOLL_CTL_ADD, fd, &ev);
  }
  Impl* raw = impl.get();
  raw->loop_thread = std::thread([raw] { raw->loop(); });
  if (raw->auth) raw->auth_thread = std::thread([raw] { raw->auth_loop(); });
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

void HttpServer::stop() {
  if (!impl_) return;
  {
    // Under the lock, or the auth thread may miss the wake-up between its check and its wait.
    std::lock_guard lock(impl_->auth_mu);
    impl_->stopping = true;
  }
  impl_->wake();
  impl_->auth_cv.notify_all();
  if (impl_->loop_thread.joinable()) impl_->loop_thread.join();
  if (impl_->auth_thread.joinable()) impl_->auth_thread.join();
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
  return impl_->st;
}

}  // namespace gpudoctor
