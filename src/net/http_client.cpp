#include "net/http_client.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "text/text.hpp"

namespace gpudoctor::net {
namespace {

using Clock = std::chrono::steady_clock;

using text::lower;

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::max<long long>(0, left.count()));
}

// One connection: a socket, with TLS on top when the URL says https. Every wait is bounded by
// the request's deadline.
class Connection {
 public:
  ~Connection() {
    if (ssl_) SSL_free(ssl_);
    if (ctx_) SSL_CTX_free(ctx_);
    if (fd_ >= 0) ::close(fd_);
  }

  Result<Nothing> open(const Url& url, Clock::time_point deadline, const std::string& what,
                       const std::string& ca_file) {
    deadline_ = deadline;
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    addrinfo* res = nullptr;
    const std::string port = std::to_string(url.port);
    if (const int rc = getaddrinfo(url.host.c_str(), port.c_str(), &hints, &res); rc != 0)
      return failure(fmt::format("{}: cannot resolve {}: {}", what, url.host, gai_strerror(rc)));
    std::string error = "no address";
    for (addrinfo* a = res; a && fd_ < 0; a = a->ai_next) {
      const int fd =
          ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
        error = std::strerror(errno);
        ::close(fd);
        continue;
      }
      pollfd p{fd, POLLOUT, 0};
      int soerr = 0;
      socklen_t len = sizeof soerr;
      if (::poll(&p, 1, remaining_ms(deadline)) != 1 ||
          getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0 || soerr != 0) {
        error = soerr ? std::strerror(soerr) : "timed out";
        ::close(fd);
        continue;
      }
      fd_ = fd;
    }
    freeaddrinfo(res);
    if (fd_ < 0)
      return failure(
          fmt::format("{}: cannot connect to {}:{}: {}", what, url.host, url.port, error));
    const int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (url.scheme == "https") return start_tls(url, what, ca_file);
    return kOk;
  }

  // Sends everything; false on error or timeout.
  bool send_all(std::string_view data) {
    while (!data.empty()) {
      ssize_t n;
      if (ssl_) {
        ERR_clear_error();
        n = SSL_write(ssl_, data.data(), static_cast<int>(data.size()));
        if (n <= 0 && !wait_tls(static_cast<int>(n))) return false;
      } else {
        n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
        if (n < 0 && !((errno == EAGAIN || errno == EWOULDBLOCK) && wait(POLLOUT))) return false;
      }
      if (n > 0) data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // Reads some bytes into out; 0 at the end of the stream, -1 on error or timeout.
  ssize_t receive(std::string& out) {
    char buf[65536];
    for (;;) {
      ssize_t n;
      if (ssl_) {
        ERR_clear_error();
        n = SSL_read(ssl_, buf, sizeof buf);
        if (n <= 0) {
          const int e = SSL_get_error(ssl_, static_cast<int>(n));
          if (e == SSL_ERROR_ZERO_RETURN) return 0;
          if (!wait_tls(static_cast<int>(n))) return e == SSL_ERROR_SYSCALL ? 0 : -1;
          continue;
        }
      } else {
        n = ::recv(fd_, buf, sizeof buf, 0);
        if (n < 0) {
          if ((errno == EAGAIN || errno == EWOULDBLOCK) && wait(POLLIN)) continue;
          return -1;
        }
      }
      out.append(buf, static_cast<size_t>(n));
      return n;
    }
  }

  bool timed_out() const { return Clock::now() >= deadline_; }

 private:
  bool wait(short events) {
    pollfd p{fd_, events, 0};
    return ::poll(&p, 1, remaining_ms(deadline_)) == 1;
  }

  bool wait_tls(int rc) {
    const int e = SSL_get_error(ssl_, rc);
    if (e == SSL_ERROR_WANT_READ) return wait(POLLIN);
    if (e == SSL_ERROR_WANT_WRITE) return wait(POLLOUT);
    return false;
  }

  Result<Nothing> start_tls(const Url& url, const std::string& what, const std::string& ca_file) {
    ctx_ = SSL_CTX_new(TLS_client_method());
    if (!ctx_) return failure(what + ": cannot create a TLS context");
    SSL_CTX_set_min_proto_version(ctx_, TLS1_2_VERSION);
    if (ca_file.empty())
      SSL_CTX_set_default_verify_paths(ctx_);
    else if (SSL_CTX_load_verify_locations(ctx_, ca_file.c_str(), nullptr) != 1)
      return failure(fmt::format("{}: cannot load the CA file {}", what, ca_file));
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
    ssl_ = SSL_new(ctx_);
    if (!ssl_) return failure(what + ": cannot create a TLS connection");
    SSL_set_fd(ssl_, fd_);
    in6_addr ip{};
    if (inet_pton(AF_INET, url.host.c_str(), &ip) == 1 ||
        inet_pton(AF_INET6, url.host.c_str(), &ip) == 1) {
      X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), url.host.c_str());  // no SNI for IPs
    } else {
      SSL_set_tlsext_host_name(ssl_, url.host.c_str());
      SSL_set1_host(ssl_, url.host.c_str());
    }
    for (;;) {
      ERR_clear_error();
      const int r = SSL_connect(ssl_);
      if (r == 1) return kOk;
      if (!wait_tls(r)) {
        const long verify = SSL_get_verify_result(ssl_);
        if (verify != X509_V_OK)
          return failure(fmt::format("{}: TLS certificate of {} not accepted: {}", what, url.host,
                                     X509_verify_cert_error_string(verify)));
        const unsigned long e = ERR_get_error();
        char buf[256] = "timed out";
        if (e) ERR_error_string_n(e, buf, sizeof buf);
        return failure(fmt::format("{}: TLS handshake with {} failed: {}", what, url.host, buf));
      }
    }
  }

  int fd_ = -1;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  Clock::time_point deadline_;
};

}  // namespace

Result<Url> parse_url(const std::string& text) {
  Url u;
  const size_t scheme_end = text.find("://");
  if (scheme_end == std::string::npos)
    return usage_error(fmt::format("{}: expected a URL such as http://prometheus:9090", text));
  u.scheme = lower(text.substr(0, scheme_end));
  if (u.scheme != "http" && u.scheme != "https")
    return usage_error(fmt::format("{}: only http:// and https:// URLs are supported", text));
  std::string rest = text.substr(scheme_end + 3);
  const size_t slash = std::min(rest.find_first_of("/?#"), rest.size());
  std::string authority = rest.substr(0, slash);
  std::string path = rest.substr(slash);
  if (const size_t cut = path.find_first_of("?#"); cut != std::string::npos) path.resize(cut);
  if (const size_t at = authority.rfind('@'); at != std::string::npos) {
    const std::string userinfo = authority.substr(0, at);
    authority = authority.substr(at + 1);
    const size_t colon = userinfo.find(':');
    u.user = userinfo.substr(0, colon);
    if (colon != std::string::npos) u.password = userinfo.substr(colon + 1);
  }
  std::string port;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string::npos) return usage_error(text + ": unterminated [IPv6 address]");
    u.host = authority.substr(1, close - 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') return usage_error(text + ": expected :port after ]");
      port = authority.substr(close + 2);
    }
  } else {
    const size_t colon = authority.rfind(':');
    u.host = authority.substr(0, colon);
    if (colon != std::string::npos) port = authority.substr(colon + 1);
  }
  if (u.host.empty()) return usage_error(text + ": the URL names no host");
  if (port.empty()) {
    u.port = u.scheme == "https" ? 443 : 80;
  } else {
    char* end = nullptr;
    const long p = std::strtol(port.c_str(), &end, 10);
    if (*end != '\0' || p <= 0 || p > 65535) return usage_error(text + ": bad port " + port);
    u.port = static_cast<uint16_t>(p);
  }
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  u.path = path.empty() ? "/" : path;
  return u;
}

std::string url_encode(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~')
      out += static_cast<char>(c);
    else
      out += fmt::format("%{:02X}", c);
  }
  return out;
}

std::string base64_encode(std::string_view in) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (unsigned char c : in) {
    acc = (acc << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += kAlphabet[(acc >> bits) & 63];
    }
  }
  if (bits > 0) out += kAlphabet[(acc << (6 - bits)) & 63];
  while (out.size() % 4) out += '=';
  return out;
}

std::optional<std::string> base64_decode(std::string_view in) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  while (!in.empty() && in.back() == '=') in.remove_suffix(1);
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    const int v = value(c);
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  if (bits >= 6) return std::nullopt;  // one character left over carries no whole byte
  return out;
}

Result<std::string> decode_chunked(std::string_view body) {
  std::string out;
  size_t pos = 0;
  for (;;) {
    const size_t eol = body.find("\r\n", pos);
    if (eol == std::string_view::npos) return failure("incomplete chunked body");
    std::string_view size_text = body.substr(pos, eol - pos);
    if (const size_t semi = size_text.find(';'); semi != std::string_view::npos)
      size_text = size_text.substr(0, semi);
    size_t size = 0;
    if (size_text.empty()) return failure("malformed chunk size");
    for (char c : size_text) {
      const int d = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                    : (c >= 'a' && c <= 'f')                    ? c - 'a' + 10
                    : (c >= 'A' && c <= 'F')                    ? c - 'A' + 10
                                                                : -1;
      if (d < 0 || size > (size_t{1} << 40)) return failure("malformed chunk size");
      size = size * 16 + static_cast<size_t>(d);
    }
    pos = eol + 2;
    if (size == 0) return out;  // trailers, if any, are not needed
    if (body.size() < pos + size + 2) return failure("incomplete chunked body");
    out.append(body.substr(pos, size));
    pos += size + 2;
  }
}

Result<HttpGetResult> http_get(const Url& url, const std::string& path_and_query,
                               const HttpGetOptions& options) {
  std::string target = url.path == "/" ? "" : url.path;
  target += path_and_query;
  if (target.empty() || target.front() != '/') target.insert(0, "/");
  const std::string what = fmt::format("GET {}://{}:{}{}", url.scheme, url.host, url.port,
                                       target.substr(0, target.find('?')));
  const auto deadline = Clock::now() + options.timeout;
  Connection conn;
  if (auto r = conn.open(url, deadline, what, options.ca_file); !r) return r.error();
  const bool v6 = url.host.find(':') != std::string::npos;
  std::string req = fmt::format(
      "GET {} HTTP/1.1\r\nHost: {}{}{}:{}\r\nConnection: close\r\n"
      "User-Agent: gpudoctor/" GPUDOCTOR_VERSION "\r\n",
      target, v6 ? "[" : "", url.host, v6 ? "]" : "", url.port);
  if (!url.user.empty() || !url.password.empty())
    req += "Authorization: Basic " + base64_encode(url.user + ":" + url.password) + "\r\n";
  for (const auto& [k, v] : options.headers) req += k + ": " + v + "\r\n";
  req += "\r\n";
  if (!conn.send_all(req))
    return failure(fmt::format("{}: {}", what, conn.timed_out() ? "timed out" : "send failed"));

  std::string raw;
  size_t head_end = std::string::npos;
  HttpGetResult res;
  std::optional<size_t> length;
  bool chunked = false;
  for (;;) {
    const ssize_t n = conn.receive(raw);
    if (n < 0)
      return failure(fmt::format("{}: {}", what, conn.timed_out() ? "timed out" : "read failed"));
    if (head_end == std::string::npos) {
      head_end = raw.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        const std::string_view head(raw.data(), head_end);
        const size_t sp = head.find(' ');
        if (head.substr(0, 5) != "HTTP/" || sp == std::string_view::npos)
          return failure(fmt::format("{}: the answer is not HTTP", what));
        res.status = std::atoi(std::string(head.substr(sp + 1, 3)).c_str());
        size_t pos = head.find("\r\n");
        while (pos != std::string_view::npos && pos < head.size()) {
          const size_t eol = std::min(head.find("\r\n", pos + 2), head.size());
          const std::string_view line = head.substr(pos + 2, eol - pos - 2);
          pos = eol;
          const size_t colon = line.find(':');
          if (colon == std::string_view::npos) continue;
          const std::string name = lower(line.substr(0, colon));
          std::string_view value = line.substr(colon + 1);
          while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
          if (name == "content-length")
            length = std::strtoull(std::string(value).c_str(), nullptr, 10);
          if (name == "transfer-encoding" && lower(value).find("chunked") != std::string::npos)
            chunked = true;
          if (name == "content-type") res.content_type = std::string(value);
        }
        head_end += 4;
      } else if (raw.size() > 65536) {
        return failure(fmt::format("{}: response head too large", what));
      }
    }
    if (head_end != std::string::npos) {
      const size_t body_bytes = raw.size() - head_end;
      if (body_bytes > options.max_body_bytes)
        return failure(fmt::format("{}: the response is larger than {} MiB", what,
                                   options.max_body_bytes >> 20));
      if (length && body_bytes >= *length) break;
      if (chunked && raw.size() >= 5 && raw.compare(raw.size() - 5, 5, "0\r\n\r\n") == 0) {
        auto decoded = decode_chunked(std::string_view(raw).substr(head_end));
        if (decoded) {
          res.body = std::move(decoded.value());
          return res;
        }
      }
    }
    if (n == 0) break;
  }
  if (head_end == std::string::npos)
    return failure(fmt::format("{}: connection closed before an answer", what));
  std::string_view body = std::string_view(raw).substr(head_end);
  if (chunked) {
    auto decoded = decode_chunked(body);
    if (!decoded) return failure(fmt::format("{}: {}", what, decoded.error().message));
    res.body = std::move(decoded.value());
  } else {
    if (length && body.size() < *length)
      return failure(fmt::format("{}: connection closed before the whole answer", what));
    res.body = std::string(length ? body.substr(0, *length) : body);
  }
  return res;
}

}  // namespace gpudoctor::net
