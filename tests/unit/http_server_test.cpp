// The HTTP server of `serve`: requests and keep-alive, pipelining, errors, limits and deadlines
// (slow and oversized requests are cut off and the server stays up), basic auth and TLS.
#include <arpa/inet.h>
#include <crypt.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "exporter/http_server.hpp"
#include "net/http_client.hpp"
#include "raw_client.hpp"

namespace gpudoctor {
namespace {

using namespace std::chrono_literals;

HttpResponse hello(const HttpRequest& req) {
  if (req.path == "/hello") return HttpResponse::text(200, "hello " + req.query + "\n");
  return HttpResponse::text(404, "nope\n");
}

std::unique_ptr<HttpServer> start(HttpServerOptions o = {}, HttpHandler h = hello) {
  o.listen = "127.0.0.1:0";
  auto s = HttpServer::start(std::move(o), std::move(h));
  EXPECT_TRUE(s) << (s ? "" : s.error().message);
  return s ? std::move(s.value()) : nullptr;
}

TEST(HttpServer, ServesKeepAliveAndPipelinedRequests) {
  auto s = start();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->address(), fmt::format("127.0.0.1:{}", s->port()));
  RawClient c(s->port());
  ASSERT_TRUE(c.connected());
  ASSERT_TRUE(c.send("GET /hello?x=1 HTTP/1.1\r\nHost: a\r\n\r\n"));
  std::string r = c.read_responses();
  EXPECT_EQ(r.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << r;
  EXPECT_NE(r.find("Content-Type: text/plain; charset=utf-8\r\n"), std::string::npos);
  EXPECT_NE(r.find("Connection: keep-alive\r\n"), std::string::npos);
  EXPECT_NE(r.find("\r\n\r\nhello x=1\n"), std::string::npos);
  // Same connection, two pipelined requests, one of them unknown.
  ASSERT_TRUE(
      c.send("GET /hello?x=2 HTTP/1.1\r\nHost: a\r\n\r\nGET /other HTTP/1.1\r\nHost: a\r\n\r\n"));
  r = c.read_responses(2);
  EXPECT_NE(r.find("hello x=2\n"), std::string::npos) << r;
  EXPECT_NE(r.find("HTTP/1.1 404 Not Found\r\n"), std::string::npos) << r;
  // HEAD: the headers with the length, no body; HTTP/1.0 closes after the answer.
  c.head_mode(true);
  ASSERT_TRUE(c.send("HEAD /hello HTTP/1.0\r\n\r\n"));
  r = c.read_responses();
  EXPECT_NE(r.find("Content-Length: 7\r\n"), std::string::npos) << r;
  EXPECT_EQ(r.find("hello"), std::string::npos) << r;
  EXPECT_NE(r.find("Connection: close\r\n"), std::string::npos) << r;
  EXPECT_TRUE(c.closed_within(1000ms));
  EXPECT_EQ(s->stats().requests, 4u);
}

// More pipelined requests than one pass over a connection serves: the rest are answered too,
// without waiting for another socket event.
TEST(HttpServer, ServesALongPipeline) {
  auto s = start();
  ASSERT_TRUE(s);
  RawClient c(s->port());
  ASSERT_TRUE(c.connected());
  std::string many;
  // 2,000 requests, 60 KB: more than the server buffers at once (it reads on as it answers).
  for (int i = 0; i < 2000; ++i)
    many += fmt::format("GET /hello?n={} HTTP/1.1\r\nHost: a\r\n\r\n", i);
  ASSERT_GT(many.size(), 2 * HttpServerOptions{}.max_request_bytes);
  ASSERT_TRUE(c.send(many));
  const auto t0 = std::chrono::steady_clock::now();
  const std::string r = c.read_responses(2000);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
  EXPECT_NE(r.find("hello n=0\n"), std::string::npos);
  EXPECT_NE(r.find("hello n=1999\n"), std::string::npos) << r.size();
  EXPECT_EQ(s->stats().timed_out, 0u);
}

TEST(HttpServer, RejectsWhatItDoesNotServe) {
  auto s = start();
  ASSERT_TRUE(s);
  const std::pair<std::string, std::string> cases[] = {
      {"POST /hello HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 405 "},
      {"PUT /hello HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello", "HTTP/1.1 413 "},
      {"GET /hello HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n", "HTTP/1.1 413 "},
      {"HELLO\r\n\r\n", "HTTP/1.1 400 "},
      {"GET /hello HTTP/2.0\r\n\r\n", "HTTP/1.1 505 "},
      {"GET /hello HTTP/1.1\r\nHost: a\r\n folded: header\r\n\r\n", "HTTP/1.1 400 "},
      // Header names are tokens, and a second Content-Length cannot smuggle a body in.
      {"GET /hello HTTP/1.1\r\nHost: a\r\nContent-Length : 5\r\n\r\nhello", "HTTP/1.1 400 "},
      {"GET /hello HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\nContent-Length: 5\r\n\r\nhello",
       "HTTP/1.1 400 "},
      {"GET /hello HTTP/1.1\r\nHost: a\r\nX-Big: " + std::string(20000, 'a') + "\r\n\r\n",
       "HTTP/1.1 431 "},
      {"GET /" + std::string(40000, 'a'), "HTTP/1.1 431 "},  // never ends: cut at the limit
  };
  for (const auto& [request, status] : cases) {
    RawClient c(s->port());
    c.send(request);
    const std::string r = c.read_responses();
    EXPECT_EQ(r.rfind(status, 0), 0u) << request.substr(0, 60) << " -> " << r.substr(0, 80);
    EXPECT_TRUE(c.closed_within(1000ms)) << request.substr(0, 60);
  }
  RawClient ok(s->port());  // still up
  ok.send("GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_EQ(ok.read_responses().rfind("HTTP/1.1 200 OK", 0), 0u);
}

TEST(HttpServer, CutsOffSlowClients) {
  HttpServerOptions o;
  o.read_header_timeout = 400ms;
  o.idle_timeout = 600ms;
  auto s = start(o);
  ASSERT_TRUE(s);
  // A client that trickles a byte every 100 ms never finishes its head: cut off by the deadline
  // for the whole head, not per read.
  RawClient slow(s->port());
  const auto t0 = std::chrono::steady_clock::now();
  const std::string request = "GET /hello HTTP/1.1\r\nHost: a\r\nX-Slow: " + std::string(40, 'z');
  bool cut = false;
  for (char ch : request) {
    if (!slow.send(std::string(1, ch))) {
      cut = true;
      break;
    }
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_TRUE(cut || slow.closed_within(100ms));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2000ms);
  // A connection that says nothing is closed too, and so is an idle keep-alive one.
  RawClient silent(s->port());
  EXPECT_TRUE(silent.closed_within(1500ms));
  RawClient idle(s->port());
  idle.send("GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_EQ(idle.read_responses().rfind("HTTP/1.1 200 OK", 0), 0u);
  EXPECT_TRUE(idle.closed_within(1500ms));
  EXPECT_GE(s->stats().timed_out, 3u);
}

// A client stuck in the middle of its head does not stall the others: a scrape is answered while
// it is still held (a server waiting on it would answer only after cutting it off, and the head
// deadline here is far longer than the test). How fast the scrape is answered meanwhile is a
// figure, not a test: bench/serve_hardening_bench.py measures it under slow clients.
TEST(HttpServer, AnswersOthersWhileAHeadTrickles) {
  HttpServerOptions o;
  o.read_header_timeout = 60s;
  o.idle_timeout = 60s;
  auto s = start(o);
  ASSERT_TRUE(s);
  RawClient slow(s->port());
  ASSERT_TRUE(slow.send("GET /hello HTTP/1.1\r\nHost: a\r\nX-Slow: zz"));
  RawClient fast(s->port());
  fast.send("GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_EQ(fast.read_responses().rfind("HTTP/1.1 200 OK", 0), 0u);
  EXPECT_EQ(s->stats().timed_out, 0u);
  // The slow one is still there, and is answered once its head is complete.
  ASSERT_TRUE(slow.send("z\r\n\r\n"));
  EXPECT_EQ(slow.read_responses().rfind("HTTP/1.1 200 OK", 0), 0u);
}

// Full: the oldest idle connection gives way to a newcomer (tests/unit/http_limits_test.cpp
// has the rest of the limits).
TEST(HttpServer, LimitsConnections) {
  HttpServerOptions o;
  o.max_connections = 3;
  auto s = start(o);
  ASSERT_TRUE(s);
  std::vector<std::unique_ptr<RawClient>> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(std::make_unique<RawClient>(s->port()));
    std::this_thread::sleep_for(20ms);
  }
  std::this_thread::sleep_for(100ms);
  RawClient extra(s->port());
  extra.send("GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_EQ(extra.read_responses().rfind("HTTP/1.1 200 OK", 0), 0u);
  EXPECT_TRUE(held[0]->closed_within(1000ms));
  EXPECT_EQ(s->stats().evicted, 1u);
  for (int i = 0; i < 300 && s->stats().connections != 3; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(s->stats().connections, 3u);
}

TEST(HttpServer, StopsWithOpenConnections) {
  auto s = start();
  ASSERT_TRUE(s);
  RawClient a(s->port()), b(s->port());
  b.send("GET /hel");
  std::this_thread::sleep_for(50ms);
  const auto t0 = std::chrono::steady_clock::now();
  s->stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1000ms);
  EXPECT_TRUE(a.closed_within(500ms));
}

TEST(HttpServer, ListenAddresses) {
  auto a = parse_listen_address("127.0.0.1:9835");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->first, "127.0.0.1");
  EXPECT_EQ(a->second, 9835);
  a = parse_listen_address("[::1]:80");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->first, "::1");
  a = parse_listen_address(":9835");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->first, "");
  EXPECT_FALSE(parse_listen_address("localhost"));
  EXPECT_FALSE(parse_listen_address("host:99999"));
  EXPECT_FALSE(parse_listen_address("[::1:80"));
  auto s = start();
  ASSERT_TRUE(s);
  HttpServerOptions o;
  o.listen = s->address();  // taken
  auto clash = HttpServer::start(o, hello);
  ASSERT_FALSE(clash);
  EXPECT_NE(clash.error().message.find("cannot listen on"), std::string::npos);
}

std::string bcrypt_hash(const std::string& password) {
  char* salt = crypt_gensalt_ra("$2y$", 4, nullptr, 0);
  auto data = std::make_unique<crypt_data>();
  std::string hash = crypt_r(password.c_str(), salt, data.get());
  free(salt);
  return hash;
}

TEST(HttpServer, BasicAuthentication) {
  HttpServerOptions o;
  o.web.users = {{"prometheus", bcrypt_hash("scrape")}};
  auto s = start(o);
  ASSERT_TRUE(s);
  auto get = [&](const std::string& auth) {
    RawClient c(s->port());
    c.send("GET /hello HTTP/1.1\r\nHost: a\r\n" + auth + "\r\n");
    return c.read_responses();
  };
  std::string r = get("");
  EXPECT_EQ(r.rfind("HTTP/1.1 401 ", 0), 0u) << r;
  EXPECT_NE(r.find("WWW-Authenticate: Basic realm=\"gpudoctor\""), std::string::npos);
  r = get("Authorization: Basic " + net::base64_encode("prometheus:wrong") + "\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 401 ", 0), 0u) << r;
  r = get("Authorization: Basic " + net::base64_encode("nobody:scrape") + "\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 401 ", 0), 0u) << r;
  {
    // A refused HEAD has no body, and a 401 closes the connection so that clients without
    // credentials cannot hold the slots scrapers need.
    RawClient c(s->port());
    c.head_mode(true);
    c.send("HEAD /hello HTTP/1.1\r\nHost: a\r\nAuthorization: Basic " +
           net::base64_encode("prometheus:wrong") + "\r\n\r\n");
    r = c.read_responses();
    EXPECT_EQ(r.rfind("HTTP/1.1 401 ", 0), 0u) << r;
    EXPECT_NE(r.find("Content-Length: 13\r\n"), std::string::npos) << r;
    EXPECT_TRUE(r.ends_with("\r\n\r\n")) << r;
    EXPECT_NE(r.find("Connection: close\r\n"), std::string::npos) << r;
    EXPECT_TRUE(c.closed_within(1000ms));
  }
  for (int i = 0; i < 2; ++i) {  // the second time from the cache of passed credentials
    r = get("Authorization: Basic " + net::base64_encode("prometheus:scrape") + "\r\n");
    EXPECT_EQ(r.rfind("HTTP/1.1 200 OK", 0), 0u) << r;
  }
}

// A self-signed certificate for 127.0.0.1 made with the openssl command.
struct TlsFiles {
  std::filesystem::path dir, cert, key;
  bool ok = false;
  TlsFiles() {
    dir = std::filesystem::temp_directory_path() / fmt::format("gd-tls-{}", getpid());
    std::filesystem::create_directories(dir);
    cert = dir / "server.crt";
    key = dir / "server.key";
    const std::string cmd = fmt::format(
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 "
        "-subj /CN=gpudoctor-test -addext subjectAltName=IP:127.0.0.1,DNS:localhost "
        "-keyout '{}' -out '{}' >/dev/null 2>&1",
        key.string(), cert.string());
    ok = std::system(cmd.c_str()) == 0;
  }
  ~TlsFiles() { std::filesystem::remove_all(dir); }
};

TEST(HttpServer, TlsWithBasicAuth) {
  TlsFiles files;
  ASSERT_TRUE(files.ok) << "the openssl command is needed (scripts/install-deps.sh installs it)";
  {
    std::ofstream(files.dir / "web.yml")
        << "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
        << "basic_auth_users:\n  prometheus: " << bcrypt_hash("scrape") << "\n";
  }
  auto web = load_web_config((files.dir / "web.yml").string());
  ASSERT_TRUE(web) << web.error().message;
  HttpServerOptions o;
  o.web = web.value();
  auto s = start(o);
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->tls());
  net::HttpGetOptions g;
  g.ca_file = files.cert.string();
  g.timeout = 5000ms;
  auto url = net::parse_url(fmt::format("https://prometheus:scrape@127.0.0.1:{}", s->port()));
  ASSERT_TRUE(url);
  auto r = net::http_get(url.value(), "/hello?tls=1", g);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "hello tls=1\n");
  url->password = "wrong";
  r = net::http_get(url.value(), "/hello", g);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->status, 401);
  // Without the CA the certificate is not trusted; plain HTTP to the TLS port gets nothing.
  g.ca_file.clear();
  url->password = "scrape";
  EXPECT_FALSE(net::http_get(url.value(), "/hello", g));
  RawClient plain(s->port());
  plain.send("GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_EQ(plain.read_responses().find("hello"), std::string::npos);
  // Missing or mismatched key material is an error at start.
  HttpServerOptions bad = o;
  bad.web.key_file = (files.dir / "missing.key").string();
  EXPECT_FALSE(HttpServer::start(bad, hello));
}

TEST(HttpClient, UrlsAndChunkedBodies) {
  auto u = net::parse_url("https://user:pa%40ss@prom.example:9443/prefix/");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->scheme, "https");
  EXPECT_EQ(u->host, "prom.example");
  EXPECT_EQ(u->port, 9443);
  EXPECT_EQ(u->path, "/prefix");
  EXPECT_EQ(u->user, "user");
  u = net::parse_url("http://[::1]:9090");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->path, "/");
  u = net::parse_url("http://prometheus");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->port, 80);
  EXPECT_FALSE(net::parse_url("prometheus:9090"));
  EXPECT_FALSE(net::parse_url("ftp://x"));
  EXPECT_FALSE(net::parse_url("http://:9090"));
  EXPECT_EQ(net::url_encode("{a=\"b c\"}"), "%7Ba%3D%22b%20c%22%7D");
  auto d = net::decode_chunked("5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\n\r\n");
  ASSERT_TRUE(d);
  EXPECT_EQ(d.value(), "hello, world");
  EXPECT_FALSE(net::decode_chunked("5\r\nhel"));
  EXPECT_FALSE(net::decode_chunked("zz\r\n"));
  // Against the server: a real round trip, and a refused connection named in the error.
  auto s = start();
  ASSERT_TRUE(s);
  auto url = net::parse_url(fmt::format("http://127.0.0.1:{}", s->port()));
  auto r = net::http_get(url.value(), "/hello?q=1");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "hello q=1\n");
  const uint16_t port = s->port();
  s->stop();
  s.reset();
  auto refused =
      net::http_get(net::parse_url(fmt::format("http://127.0.0.1:{}", port)).value(), "/hello");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("cannot connect"), std::string::npos);
}

}  // namespace
}  // namespace gpudoctor
