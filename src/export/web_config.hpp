// The web configuration file of `serve --web-config FILE`: the same YAML format Prometheus'
// exporters read (exporter-toolkit): tls_server_config (cert_file, key_file, client_auth_type,
// client_ca_file, min_version, max_version) and basic_auth_users (name: bcrypt hash). Only that
// subset of YAML is read (block mappings, plain and quoted scalars, comments); anything else is
// an error naming the line, so a typo never silently turns security off.
// BasicAuth checks "Authorization: Basic ..." headers against the bcrypt hashes (libxcrypt's
// crypt_r, which knows $2a$, $2b$ and $2y$) and remembers credentials that passed, so only the
// first request of a scraper pays for bcrypt. Thread-safety: BasicAuth may be used from any
// thread.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace gpudoctor {

struct WebConfig {
  std::string cert_file, key_file;  // both, or neither (plain HTTP)
  std::string client_auth_type = "NoClientCert";
  std::string client_ca_file;
  std::string min_version = "TLS12", max_version;  // TLS10 ... TLS13; "" no maximum
  std::map<std::string, std::string> users;        // user name -> bcrypt hash

  bool tls() const { return !cert_file.empty(); }
};

// origin names the file in messages; relative file names are taken from base_dir.
Result<WebConfig> parse_web_config(std::string_view yaml, const std::string& origin,
                                   const std::string& base_dir = "");
Result<WebConfig> load_web_config(const std::string& path);

// "Basic dXNlcjpwYXNz" -> user and password; nullopt when the header is anything else.
struct Credentials {
  std::string user, password;
};
std::optional<Credentials> parse_basic_authorization(std::string_view header);

// True when password matches the bcrypt hash (constant-time comparison of the result).
bool bcrypt_matches(const std::string& password, const std::string& hash);

class BasicAuth {
 public:
  explicit BasicAuth(std::map<std::string, std::string> users) : users_(std::move(users)) {}
  bool enabled() const { return !users_.empty(); }

  enum class Verdict { kAllowed, kDenied, kNeedsCheck };
  // Fast: allowed when these credentials passed before; denied when the header is not Basic
  // credentials at all; otherwise the slow check() must decide.
  Verdict quick(std::string_view authorization) const;
  // Slow (bcrypt, tens of milliseconds): run it off the event loop.
  bool check(std::string_view authorization);

 private:
  static std::string key_of(const Credentials& c);
  std::map<std::string, std::string> users_;
  mutable std::mutex mu_;
  std::set<std::string> passed_;  // SHA-256 of user and password that passed
};

}  // namespace gpudoctor
