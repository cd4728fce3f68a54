#include "exporter/web_config.hpp"

#include <crypt.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "net/http_client.hpp"

namespace gpudoctor {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// One scalar of the YAML subset: "double quoted" (with \" \\ \n \t escapes), 'single quoted'
// ('' is a quote) or plain (a trailing " # comment" removed). `rest` gets what follows a quoted
// scalar, which must be blank or a comment.
std::optional<std::string> scalar(std::string_view s, std::string& error) {
  s = trim(s);
  if (s.empty()) return std::string();
  if (s.front() == '"' || s.front() == '\'') {
    const char q = s.front();
    std::string out;
    size_t i = 1;
    for (; i < s.size(); ++i) {
      const char c = s[i];
      if (q == '\'' && c == '\'') {
        if (i + 1 < s.size() && s[i + 1] == '\'') {
          out += '\'';
          ++i;
          continue;
        }
        break;
      }
      if (q == '"' && c == '"') break;
      if (q == '"' && c == '\\' && i + 1 < s.size()) {
        const char e = s[++i];
        out += e == 'n' ? '\n' : e == 't' ? '\t' : e;
        continue;
      }
      out += c;
    }
    if (i >= s.size()) {
      error = "unterminated quoted string";
      return std::nullopt;
    }
    const std::string_view rest = trim(s.substr(i + 1));
    if (!rest.empty() && rest.front() != '#') {
      error = fmt::format("unexpected text after the quoted string: {}", rest);
      return std::nullopt;
    }
    return out;
  }
  if (const size_t hash = s.find(" #"); hash != std::string_view::npos) s = trim(s.substr(0, hash));
  if (s == "~" || s == "null") return std::string();
  if (s.front() == '[' || s.front() == '{' || s.front() == '&' || s.front() == '*' ||
      s.front() == '|' || s.front() == '>') {
    error = fmt::format("only plain or quoted values are supported here, not {}", s);
    return std::nullopt;
  }
  return std::string(s);
}

// "key: value" -> key and the raw value text; the key may be quoted.
bool split_key(std::string_view line, std::string& key, std::string_view& value,
               std::string& error) {
  size_t colon = std::string_view::npos;
  if (!line.empty() && (line.front() == '"' || line.front() == '\'')) {
    const size_t close = line.find(line.front(), 1);
    if (close == std::string_view::npos) {
      error = "unterminated quoted key";
      return false;
    }
    colon = line.find(':', close);
  } else {
    for (size_t i = 0; i < line.size(); ++i)
      if (line[i] == ':' && (i + 1 == line.size() || line[i + 1] == ' ' || line[i + 1] == '\t')) {
        colon = i;
        break;
      }
  }
  if (colon == std::string_view::npos) {
    error = "expected \"key: value\"";
    return false;
  }
  auto k = scalar(line.substr(0, colon), error);
  if (!k) return false;
  key = *k;
  value = line.substr(colon + 1);
  return true;
}

bool is_comment_or_blank(std::string_view line) {
  const std::string_view t = trim(line);
  return t.empty() || t.front() == '#';
}

constexpr std::string_view kAuthTypes[] = {"NoClientCert", "RequestClientCert",
                                           "RequireAnyClientCert", "VerifyClientCertIfGiven",
                                           "RequireAndVerifyClientCert"};
constexpr std::string_view kTlsVersions[] = {"TLS12", "TLS13"};

constexpr std::string_view kBcryptAlphabet =
    "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

// Why a bcrypt hash is not one ("" when it is): the shape, the cost (4-31, what bcrypt and
// exporter-toolkit accept), the alphabet, and libxcrypt's own reading of the salt (at cost 4,
// so the check is cheap).
std::string bcrypt_problem(const std::string& h) {
  if (h.size() != 60 || h[0] != '$' || h[1] != '2' || (h[2] != 'a' && h[2] != 'b' && h[2] != 'y') ||
      h[3] != '$' || h[6] != '$')
    return "is not a bcrypt hash ($2a$, $2b$ or $2y$, a two-digit cost, 60 characters)";
  if (!std::isdigit(static_cast<unsigned char>(h[4])) ||
      !std::isdigit(static_cast<unsigned char>(h[5])))
    return "is not a bcrypt hash (the cost after $2b$ must be two digits)";
  const int cost = (h[4] - '0') * 10 + (h[5] - '0');
  if (cost < 4 || cost > 31)
    return fmt::format("has bcrypt cost {}; bcrypt's cost is 4 to 31 (10 is usual)", cost);
  for (size_t i = 7; i < h.size(); ++i)
    if (kBcryptAlphabet.find(h[i]) == std::string_view::npos)
      return fmt::format(
          "has byte {:#04x} at character {}, outside bcrypt's alphabet "
          "(./A-Za-z0-9)",
          static_cast<unsigned char>(h[i]), i + 1);
  const std::string cheap = h.substr(0, 4) + "04" + h.substr(6);
  auto data = std::make_unique<crypt_data>();
  const char* out = crypt_r("", cheap.c_str(), data.get());
  if (!out || out[0] == '*') return "has a salt that libxcrypt's bcrypt refuses";
  return "";
}

// What keeps a file named by the configuration from being read ("" when it can be).
std::string unreadable(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::strerror(errno);
  if (S_ISDIR(st.st_mode)) return "is a directory";
  if (!S_ISREG(st.st_mode)) return "is not a regular file";
  if (::access(path.c_str(), R_OK) != 0) return std::strerror(errno);
  return "";
}

template <class Range>
bool one_of(const Range& r, std::string_view v) {
  for (auto x : r)
    if (x == v) return true;
  return false;
}

std::string resolve(const std::string& base_dir, const std::string& file) {
  if (file.empty() || file.front() == '/' || base_dir.empty()) return file;
  return base_dir + "/" + file;
}

}  // namespace

Result<WebConfig> parse_web_config(std::string_view yaml, const std::string& origin,
                                   const std::string& base_dir) {
  WebConfig c;
  std::string section;
  int child_indent = -1;
  size_t line_no = 0;
  auto err = [&](const std::string& what) {
    return usage_error(fmt::format("{}:{}: {}", origin, line_no, what));
  };
  std::set<std::string> seen_sections;
  size_t pos = 0;
  while (pos < yaml.size()) {
    const size_t eol = std::min(yaml.find('\n', pos), yaml.size());
    std::string_view line = yaml.substr(pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    if (line_no == 1 && line.substr(0, 3) == "\xEF\xBB\xBF") line.remove_prefix(3);
    if (is_comment_or_blank(line)) continue;
    if (trim(line) == "---") continue;
    size_t indent = 0;
    while (indent < line.size() && line[indent] == ' ') ++indent;
    if (indent < line.size() && line[indent] == '\t')
      return err("tabs are not allowed for indentation in YAML");
    const std::string_view body = trim(line.substr(indent));
    std::string key, error;
    std::string_view raw;
    if (body.front() == '-') return err("lists are not supported in the web configuration");
    if (!split_key(body, key, raw, error)) return err(error);
    if (indent == 0) {
      section.clear();
      child_indent = -1;
      if (!seen_sections.insert(key).second) return err(fmt::format("{} given twice", key));
      auto v = scalar(raw, error);
      if (!v && trim(raw) != "{}") return err(error);
      if (key != "tls_server_config" && key != "basic_auth_users" && key != "http_server_config")
        return err(
            fmt::format("unknown key {} (gpudoctor reads tls_server_config, basic_auth_users and "
                        "http_server_config)",
                        key));
      if (!trim(raw).empty() && trim(raw) != "{}" && trim(raw) != "~" && trim(raw) != "null")
        return err(fmt::format("{} must be a mapping", key));
      section = key;
      c.lines[key] = line_no;
      continue;
    }
    if (section.empty()) return err("indented line outside a section");
    if (child_indent < 0) child_indent = static_cast<int>(indent);
    if (static_cast<int>(indent) != child_indent)
      return err("unexpected indentation (only two levels are read)");
    auto value = scalar(raw, error);
    if (!value) return err(error);
    if (section == "basic_auth_users") {
      if (key.empty()) return err("empty user name");
      if (c.users.count(key)) return err(fmt::format("user {} given twice", key));
      const std::string& h = *value;
      if (const std::string problem = bcrypt_problem(h); !problem.empty())
        return err(
            fmt::format("user {}: the password must be a bcrypt hash (e.g. from `htpasswd -nBC 10 "
                        "\"\" | tr -d ':\\n'`); this one {}",
                        key, problem));
      c.users[key] = h;
      c.lines["basic_auth_users." + key] = line_no;
    } else if (section == "http_server_config") {
      if (key != "http2")
        return err(fmt::format("http_server_config: {} is not supported by gpudoctor", key));
    } else if (!c.lines.emplace("tls_server_config." + key, line_no).second) {
      return err(fmt::format("{} given twice", key));
    } else if (key == "cert_file") {
      c.cert_file = resolve(base_dir, *value);
    } else if (key == "key_file") {
      c.key_file = resolve(base_dir, *value);
    } else if (key == "client_ca_file") {
      c.client_ca_file = resolve(base_dir, *value);
    } else if (key == "client_auth_type") {
      if (!one_of(kAuthTypes, *value))
        return err(
            fmt::format("client_auth_type {}: expected one of NoClientCert, "
                        "RequestClientCert, RequireAnyClientCert, VerifyClientCertIfGiven, "
                        "RequireAndVerifyClientCert",
                        *value));
      c.client_auth_type = *value;
    } else if (key == "min_version" || key == "max_version") {
      if (*value == "TLS10" || *value == "TLS11")
        return err(fmt::format(
            "{} {}: TLS 1.0 and 1.1 are not served (they have none of the forward-secret AEAD "
            "suites serve offers, and OpenSSL 3 refuses them at its default security level); "
            "use TLS12 or TLS13",
            key, *value));
      if (!one_of(kTlsVersions, *value))
        return err(fmt::format("{} {}: expected TLS12 or TLS13", key, *value));
      (key == "min_version" ? c.min_version : c.max_version) = *value;
    } else {
      return err(
          fmt::format("tls_server_config: {} is not supported by gpudoctor (it reads "
                      "cert_file, key_file, client_auth_type, client_ca_file, "
                      "min_version, max_version)",
                      key));
    }
  }
  c.origin = origin;
  auto at = [&](const std::string& key, const std::string& what) {
    return usage_error(fmt::format("{}: {}", c.where(key), what));
  };
  if (seen_sections.empty())
    return usage_error(fmt::format(
        "{}: no tls_server_config or basic_auth_users: the file turns nothing on (leave "
        "--web-config out to serve plain HTTP without authentication)",
        origin));
  if (c.cert_file.empty() != c.key_file.empty())
    return at(c.cert_file.empty() ? "tls_server_config.key_file" : "tls_server_config.cert_file",
              "tls_server_config needs both cert_file and key_file");
  if (!c.tls() && seen_sections.count("tls_server_config") &&
      (c.client_auth_type != "NoClientCert" || !c.client_ca_file.empty()))
    return at("tls_server_config", "client certificates need cert_file and key_file");
  if ((c.client_auth_type == "VerifyClientCertIfGiven" ||
       c.client_auth_type == "RequireAndVerifyClientCert") &&
      c.client_ca_file.empty())
    return at("tls_server_config.client_auth_type",
              fmt::format("client_auth_type {} needs client_ca_file", c.client_auth_type));
  if (!c.max_version.empty() && c.max_version < c.min_version)
    return at("tls_server_config.max_version", "max_version is below min_version");
  return c;
}

std::string WebConfig::where(const std::string& key) const {
  const std::string file = origin.empty() ? "web config" : origin;
  const auto it = lines.find(key);
  return it == lines.end() ? file : fmt::format("{}:{}", file, it->second);
}

Result<WebConfig> load_web_config(const std::string& path) {
  if (const std::string why = unreadable(path); !why.empty())
    return usage_error(fmt::format("--web-config {}: {}", path, why));
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return usage_error(fmt::format("--web-config {}: {}", path, std::strerror(errno)));
  std::string text;
  char buf[8192];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      ::close(fd);
      return usage_error(fmt::format("--web-config {}: {}", path, std::strerror(e)));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > (size_t{1} << 20)) {
      ::close(fd);
      return usage_error(fmt::format("--web-config {}: larger than 1 MiB", path));
    }
  }
  ::close(fd);
  const size_t slash = path.rfind('/');
  auto c = parse_web_config(text, path, slash == std::string::npos ? "" : path.substr(0, slash));
  if (!c) return c;
  // The TLS files are read when serve starts listening; a missing one is named here, at its line.
  for (const auto& [key, file] : {std::pair<std::string, std::string>{"cert_file", c->cert_file},
                                  {"key_file", c->key_file},
                                  {"client_ca_file", c->client_ca_file}})
    if (!file.empty())
      if (const std::string why = unreadable(file); !why.empty())
        return usage_error(
            fmt::format("{}: {} {}: {}", c->where("tls_server_config." + key), key, file, why));
  return c;
}

std::optional<Credentials> parse_basic_authorization(std::string_view header) {
  header = trim(header);
  if (header.size() < 6) return std::nullopt;
  std::string scheme(header.substr(0, 6));
  for (auto& ch : scheme) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (scheme != "basic ") return std::nullopt;
  auto decoded = net::base64_decode(trim(header.substr(6)));
  if (!decoded) return std::nullopt;
  const size_t colon = decoded->find(':');
  if (colon == std::string::npos) return std::nullopt;
  return Credentials{decoded->substr(0, colon), decoded->substr(colon + 1)};
}

bool bcrypt_matches(const std::string& password, const std::string& hash) {
  // crypt_r reads a C string, and bcrypt at most 72 bytes: what it cannot read would not count.
  const bool whole = password.size() <= 72 && password.find('\0') == std::string::npos;
  auto data = std::make_unique<crypt_data>();
  const char* out = crypt_r(password.c_str(), hash.c_str(), data.get());
  if (!out || out[0] == '*' || std::string_view(out).size() != hash.size()) return false;
  return (CRYPTO_memcmp(out, hash.data(), hash.size()) == 0) & whole;
}

int bcrypt_cost(std::string_view h) {
  if (h.size() < 7 || h[0] != '$' || h[1] != '2' || h[3] != '$' || h[6] != '$') return 0;
  if (!std::isdigit(static_cast<unsigned char>(h[4])) ||
      !std::isdigit(static_cast<unsigned char>(h[5])))
    return 0;
  return (h[4] - '0') * 10 + (h[5] - '0');
}

namespace {

// A hash setting of cost `cost` that matches no password: what an unknown user is checked
// against, and what tops up a cheaper user's check.
std::string decoy_hash(int cost) {
  return fmt::format("$2b${:02}${}", cost, std::string(53, '.'));
}

}  // namespace

BasicAuth::BasicAuth(std::map<std::string, std::string> users) : users_(std::move(users)) {
  for (const auto& [name, hash] : users_)
    max_cost_ = std::max(max_cost_, std::clamp(bcrypt_cost(hash), 4, 31));
}

std::string BasicAuth::key_of(const Credentials& c) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int len = 0;
  // Length-prefixed: no user name and password pair reads as another.
  const std::string material = fmt::format("{}:{}{}", c.user.size(), c.user, c.password);
  EVP_Digest(material.data(), material.size(), md.data(), &len, EVP_sha256(), nullptr);
  return std::string(reinterpret_cast<const char*>(md.data()), len);
}

BasicAuth::Verdict BasicAuth::quick(std::string_view authorization) const {
  const auto c = parse_basic_authorization(authorization);
  if (!c) return Verdict::kDenied;
  const std::string key = key_of(*c);
  std::lock_guard lock(mu_);
  return passed_.count(key) ? Verdict::kAllowed : Verdict::kNeedsCheck;
}

bool BasicAuth::check(std::string_view authorization, uint64_t* work) {
  const auto c = parse_basic_authorization(authorization);
  if (work) *work = 0;
  if (!c) return false;
  const auto it = users_.find(c->user);
  const bool known = it != users_.end();
  // An unknown user costs the same bcrypt work as the dearest known one, and a cheaper known
  // user is topped up to it: response times do not tell names (nor costs).
  const std::string& hash = known ? it->second : decoy_hash(max_cost_);
  const bool ok = bcrypt_matches(c->password, hash) & known;
  int cost = std::clamp(bcrypt_cost(hash), 4, 31);
  uint64_t spent = uint64_t{1} << cost;
  for (; cost < max_cost_; ++cost) {
    bcrypt_matches(c->password, decoy_hash(cost));
    spent += uint64_t{1} << cost;
  }
  if (work) *work = spent;
  if (ok) {
    std::lock_guard lock(mu_);
    if (passed_.size() >= 1024) passed_.clear();  // bounded: a credential re-checks once
    passed_.insert(key_of(*c));
  }
  return ok;
}

}  // namespace gpudoctor
