#include "export/web_config.hpp"

#include <crypt.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <array>
#include <fstream>
#include <memory>
#include <sstream>
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
constexpr std::string_view kTlsVersions[] = {"TLS10", "TLS11", "TLS12", "TLS13"};

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
      if (h.size() != 60 ||
          !(h.rfind("$2a$", 0) == 0 || h.rfind("$2b$", 0) == 0 || h.rfind("$2y$", 0) == 0))
        return err(fmt::format(
            "user {}: the password must be a bcrypt hash ($2a$, $2b$ or $2y$, 60 characters), "
            "e.g. from `htpasswd -nBC 10 \"\" | tr -d ':\\n'`",
            key));
      c.users[key] = h;
    } else if (section == "http_server_config") {
      if (key != "http2")
        return err(fmt::format("http_server_config: {} is not supported by gpudoctor", key));
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
      if (!one_of(kTlsVersions, *value))
        return err(fmt::format("{} {}: expected TLS10, TLS11, TLS12 or TLS13", key, *value));
      (key == "min_version" ? c.min_version : c.max_version) = *value;
    } else {
      return err(
          fmt::format("tls_server_config: {} is not supported by gpudoctor (it reads "
                      "cert_file, key_file, client_auth_type, client_ca_file, "
                      "min_version, max_version)",
                      key));
    }
  }
  line_no = 0;
  if (c.cert_file.empty() != c.key_file.empty())
    return usage_error(
        fmt::format("{}: tls_server_config needs both cert_file and key_file", origin));
  if (!c.tls() && seen_sections.count("tls_server_config") &&
      (c.client_auth_type != "NoClientCert" || !c.client_ca_file.empty()))
    return usage_error(fmt::format("{}: client certificates need cert_file and key_file", origin));
  if ((c.client_auth_type == "VerifyClientCertIfGiven" ||
       c.client_auth_type == "RequireAndVerifyClientCert") &&
      c.client_ca_file.empty())
    return usage_error(
        fmt::format("{}: client_auth_type {} needs client_ca_file", origin, c.client_auth_type));
  if (!c.max_version.empty() && c.max_version < c.min_version)
    return usage_error(fmt::format("{}: max_version is below min_version", origin));
  return c;
}

Result<WebConfig> load_web_config(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return usage_error(fmt::format("--web-config {}: cannot read the file", path));
  std::stringstream ss;
  ss << in.rdbuf();
  const size_t slash = path.rfind('/');
  return parse_web_config(ss.str(), path, slash == std::string::npos ? "" : path.substr(0, slash));
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
  auto data = std::make_unique<crypt_data>();
  const char* out = crypt_r(password.c_str(), hash.c_str(), data.get());
  if (!out || out[0] == '*' || std::string_view(out).size() != hash.size()) return false;
  return CRYPTO_memcmp(out, hash.data(), hash.size()) == 0;
}

std::string BasicAuth::key_of(const Credentials& c) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int len = 0;
  const std::string material = c.user + '\0' + c.password;
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

bool BasicAuth::check(std::string_view authorization) {
  const auto c = parse_basic_authorization(authorization);
  if (!c) return false;
  const auto it = users_.find(c->user);
  // An unknown user costs the same bcrypt as a known one: response times do not tell names.
  static const std::string kDummy = "$2b$10$" + std::string(53, 'a');
  const bool ok =
      bcrypt_matches(c->password, it == users_.end() ? kDummy : it->second) && it != users_.end();
  if (ok) {
    std::lock_guard lock(mu_);
    if (passed_.size() >= 1024) passed_.clear();  // bounded: a credential re-checks once
    passed_.insert(key_of(*c));
  }
  return ok;
}

}  // namespace gpudoctor
