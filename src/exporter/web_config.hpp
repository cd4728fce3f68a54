// The web configuration file of `serve --web-config FILE`: the same YAML format Prometheus'
// exporters read (exporter-toolkit): tls_server_config (cert_file, key_file, client_auth_type,
// client_ca_file, min_version, max_version) and basic_auth_users (name: bcrypt hash). Only that
// subset of YAML is read (block mappings, plain and quoted scalars, comments); anything else is
// an error naming the line, so a typo never silently turns security off. It fails closed: a file
// that cannot be read (a directory, no permission), says nothing, names an unknown key, holds a
// hash that is not a valid bcrypt hash, names TLS files that cannot be read, or asks for a TLS
// version that serve does not offer (TLS 1.0, 1.1) is an error naming the file and line.
// BasicAuth checks "Authorization: Basic ..." headers against the bcrypt hashes (libxcrypt's
// crypt_r, which knows $2a$, $2b$ and $2y$) and remembers credentials that passed, so only the
// first request of a scraper pays for bcrypt. Every check costs the same bcrypt work whoever
// the user is (the dearest configured hash's), so answer times do not tell which names exist.
// Thread-safety: BasicAuth may be used from any thread.
#pragma once

#include <cstdint>
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
  std::string origin;                              // the file, for messages
  std::map<std::string, size_t> lines;             // key (or user name) -> its line

  bool tls() const { return !cert_file.empty(); }
  // "web.yml:4" for a key read from line 4, else "web.yml" (or "web config" with no file).
  std::string where(const std::string& key) const;
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

// True when password matches the bcrypt hash (constant-time comparison of the result). bcrypt
// reads at most 72 bytes and stops at a NUL: a longer password, or one with a NUL, never
// matches (it would be compared only in part).
bool bcrypt_matches(const std::string& password, const std::string& hash);
// The cost of a well-formed bcrypt hash ($2b$10$... -> 10); 0 when it is not one.
int bcrypt_cost(std::string_view hash);

class BasicAuth {
 public:
  explicit BasicAuth(std::map<std::string, std::string> users);
  bool enabled() const { return !users_.empty(); }

  enum class Verdict { kAllowed, kDenied, kNeedsCheck };
  // Fast: allowed when these credentials passed before; denied when the header is not Basic
  // credentials at all; otherwise the slow check() must decide.
  Verdict quick(std::string_view authorization) const;
  // Slow (bcrypt, tens of milliseconds): run it off the event loop. Each call does the bcrypt
  // work of one hash at the dearest configured cost, known user or not: a cheaper user's hash
  // is topped up with decoy hashes of cost c, c+1, ... (2^c + 2^c + 2^(c+1) + ... = 2^max).
  // `work`, when given, gets the bcrypt rounds spent (the sum of 2^cost), for tests.
  bool check(std::string_view authorization, uint64_t* work = nullptr);
  int max_cost() const { return max_cost_; }

 private:
  static std::string key_of(const Credentials& c);
  std::map<std::string, std::string> users_;
  int max_cost_ = 4;
  mutable std::mutex mu_;
  std::set<std::string> passed_;  // SHA-256 of user and password that passed
};

}  // namespace gpudoctor
