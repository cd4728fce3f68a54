#include "exporter/http_parse.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "text/text.hpp"

namespace gpudoctor {
namespace http {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

}  // namespace

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
    req.headers.emplace_back(text::lower(name), std::string(trim(h.substr(colon + 1))));
  }
  // No request body is served. Every Content-Length counts, so a second one cannot smuggle a
  // body past the first.
  int lengths = 0, hosts = 0;
  bool body = false;
  for (const auto& [k, v] : req.headers) {
    if (k == "content-length") ++lengths, body |= v != "0";
    if (k == "transfer-encoding") body = true;
    if (k == "host") ++hosts;
  }
  if (lengths > 1) return ParseResult::kBad;
  if (body) return ParseResult::kBody;
  if (hosts > 1 || (hosts == 0 && req.version == "HTTP/1.1")) return ParseResult::kHost;
  return ParseResult::kOk;
}

}  // namespace http

Result<std::pair<std::string, uint16_t>> parse_listen_address(const std::string& text) {
  std::string host, port;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':')
      return usage_error(fmt::format("--listen {}: expected [IPv6 address]:port", text));
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
    if (host.empty())
      return usage_error(
          fmt::format("--listen {}: an empty IPv6 address (:PORT listens on every "
                      "interface, [::]:PORT on every IPv6 one)",
                      text));
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string::npos)
      return usage_error(
          fmt::format("--listen {}: expected host:port (e.g. 127.0.0.1:9835)", text));
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    // "127.0.0.1:19864:1" or "::1:80": never handed to the resolver as a name.
    if (host.find(':') != std::string::npos)
      return usage_error(fmt::format(
          "--listen {}: expected host:port with one colon; an IPv6 address goes in brackets "
          "([::1]:9835)",
          text));
  }
  const bool digits =
      !port.empty() && port.size() <= 5 &&
      std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; });
  const long p = digits ? std::strtol(port.c_str(), nullptr, 10) : -1;
  if (p < 0 || p > 65535)
    return usage_error(fmt::format("--listen {}: the port must be a number 0-65535", text));
  return std::make_pair(host, static_cast<uint16_t>(p));
}

}  // namespace gpudoctor
