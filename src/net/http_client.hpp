// A minimal blocking HTTP/1.1 client for reading HTTP APIs (the Prometheus query API): GET with
// a deadline, http:// and https:// (OpenSSL, the system's CA certificates, host name checked),
// user:password@ in the URL as basic authentication, Content-Length, chunked or read-to-close
// bodies, and a size limit. One request per connection. No exceptions; errors name the URL.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.hpp"

namespace gpudoctor::net {

struct Url {
  std::string scheme;  // "http" or "https"
  std::string host;    // without brackets for IPv6
  uint16_t port = 0;
  std::string path;  // "/api/v1/query_range" (the base path of the URL included), never empty
  std::string user, password;
};
// "http://host:9090/prefix" -> parts; the path keeps no trailing slash except for "/".
Result<Url> parse_url(const std::string& text);
// "a b&c" -> "a%20b%26c" (RFC 3986 unreserved characters kept).
std::string url_encode(std::string_view s);

struct HttpGetOptions {
  std::chrono::milliseconds timeout{30000};  // the whole request
  size_t max_body_bytes = size_t{1} << 30;
  std::string ca_file;  // https: trust this PEM file instead of the system's CA certificates
  std::vector<std::pair<std::string, std::string>> headers;
};

struct HttpGetResult {
  int status = 0;
  std::string content_type;
  std::string body;
};

// GET url.path + path_and_query (which starts with '/' or '?', or is empty).
Result<HttpGetResult> http_get(const Url& url, const std::string& path_and_query,
                               const HttpGetOptions& options = {});

std::string base64_encode(std::string_view in);
// nullopt for characters outside the standard alphabet; padding optional.
std::optional<std::string> base64_decode(std::string_view in);

// Decodes a chunked body; nullopt when it is malformed or incomplete.
Result<std::string> decode_chunked(std::string_view body);

}  // namespace gpudoctor::net
