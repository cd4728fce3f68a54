// The parsing half of the HTTP server (exporter/http_server.hpp): one request head from the bytes
// a connection has received, and the status lines the server answers with. Pure functions, no
// sockets, so the rules (sizes, header names, Host, bodies) are tested without a server.
// Thread-safety: stateless.
#pragma once

#include <cstddef>
#include <string_view>

#include "exporter/http_server.hpp"

namespace gpudoctor::http {

enum class ParseResult { kIncomplete, kOk, kBad, kHost, kTooLarge, kVersion, kBody };

// Parses one request head at the start of `in`; `used` gets its length. kHost: an HTTP/1.1
// request without a Host header, or any request with more than one (RFC 9112 section 3.2).
ParseResult parse_request(std::string_view in, size_t max_bytes, HttpRequest& req, size_t& used);

std::string_view reason_phrase(int status);

}  // namespace gpudoctor::http
