#include "formats/kineto_trace.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>

#include "core/utf8.hpp"
#include "text/text.hpp"

namespace gpudoctor {

namespace {

// A cursor over JSON text that reads only what the trace needs: strings (unescaped where they
// hold an escape), numbers as text, and skips any other value whole.
class Cursor {
 public:
  explicit Cursor(std::string_view s) : s_(s) {}
  size_t pos() const { return i_; }
  bool at_end() {
    space();
    return i_ == s_.size();
  }
  void space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t'))
      ++i_;
  }
  bool eat(char c) {
    space();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  char peek() {
    space();
    return i_ < s_.size() ? s_[i_] : '\0';
  }
  // A string's content; `owned` holds it where it had escapes.
  bool string(std::string_view& out, std::string& owned) {
    if (!eat('"')) return false;
    const size_t start = i_;
    bool escaped = false;
    // A plain loop: names and keys are short, where memchr's call costs more than it saves.
    for (;;) {
      while (i_ < s_.size() && s_[i_] != '"' && s_[i_] != '\\') ++i_;
      if (i_ >= s_.size()) return false;
      if (s_[i_] == '"') break;
      escaped = true;
      i_ += 2;  // the backslash and the byte it escapes
    }
    out = s_.substr(start, i_ - start);
    ++i_;
    if (escaped) {
      owned = unescape(out);
      out = owned;
    }
    return true;
  }
  bool number(std::string_view& out) {
    space();
    const size_t start = i_;
    while (i_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[i_])) || s_[i_] == '-' ||
                              s_[i_] == '+' || s_[i_] == '.' || s_[i_] == 'e' || s_[i_] == 'E'))
      ++i_;
    out = s_.substr(start, i_ - start);
    return i_ > start;
  }
  // Any value, not kept.
  bool skip(int depth = 0) {
    if (depth > 64) return false;
    const char c = peek();
    if (c == '"') {
      std::string_view v;
      std::string o;
      return string(v, o);
    }
    if (c == '{' || c == '[') {
      ++i_;
      const char close = c == '{' ? '}' : ']';
      if (eat(close)) return true;
      do {
        if (c == '{') {
          std::string_view k;
          std::string o;
          if (!string(k, o) || !eat(':')) return false;
        }
        if (!skip(depth + 1)) return false;
      } while (eat(','));
      return eat(close);
    }
    if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) {
      std::string_view v;
      return number(v);
    }
    for (std::string_view w : {"true", "false", "null"})
      if (s_.substr(i_, w.size()) == w) {
        i_ += w.size();
        return true;
      }
    return false;
  }

 private:
  static void utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  static std::string unescape(std::string_view in) {
    std::string out;
    out.reserve(in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      if (in[i] != '\\' || i + 1 >= in.size()) {
        out += in[i];
        continue;
      }
      const char e = in[++i];
      switch (e) {
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'u': {
          unsigned cp = 0;
          if (i + 4 < in.size() &&
              std::from_chars(in.data() + i + 1, in.data() + i + 5, cp, 16).ec == std::errc())
            i += 4;
          // Surrogates and controls become '?': names are for people, not for round trips.
          utf8(out, (cp >= 0xD800 && cp < 0xE000) || cp < 0x20 ? '?' : cp);
          break;
        }
        default:
          out += e;  // \" \\ \/
      }
    }
    return out;
  }

  std::string_view s_;
  size_t i_ = 0;
};

constexpr int64_t kMaxMicros = 3'000'000'000'000'000;

// Microseconds as Kineto writes them ("1712195495505582.988", "41.0", "3e2") in nanoseconds,
// exactly where the text has at most three decimals.
bool micros_to_ns(std::string_view t, int64_t& ns, bool& sub_us) {
  if (t.find_first_of("eE") != std::string_view::npos) {
    const double v = std::strtod(std::string(t).c_str(), nullptr);
    if (!std::isfinite(v) || std::fabs(v) > static_cast<double>(kMaxMicros)) return false;
    ns = static_cast<int64_t>(std::llround(v * 1000));
    return true;
  }
  const bool neg = !t.empty() && t.front() == '-';
  if (neg) t.remove_prefix(1);
  const size_t dot = t.find('.');
  const std::string_view whole = t.substr(0, dot);
  int64_t us = 0;
  // Up to 3e15 us (the year 2065) either way: a start, a base and a duration added stay within
  // an int64 of nanoseconds.
  if (whole.empty() || whole.size() > 16 ||
      std::from_chars(whole.data(), whole.data() + whole.size(), us).ec != std::errc() ||
      us > kMaxMicros)
    return false;
  int64_t frac = 0;
  if (dot != std::string_view::npos) {
    const std::string_view f = t.substr(dot + 1);
    for (size_t k = 0; k < 3; ++k) {
      const char c = k < f.size() ? f[k] : '0';
      if (c < '0' || c > '9') return false;
      frac = frac * 10 + (c - '0');
    }
    sub_us = sub_us || frac != 0;
  }
  ns = us * 1000 + frac;
  if (neg) ns = -ns;
  return true;
}

bool to_int(std::string_view t, int64_t& v) {
  const size_t dot = t.find('.');
  if (dot != std::string_view::npos) t = t.substr(0, dot);
  return !t.empty() && std::from_chars(t.data(), t.data() + t.size(), v).ec == std::errc();
}

bool starts_with(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}

// Which kind of kept event a category and name make, or false.
bool kind_of(std::string_view cat, std::string_view name, TraceKind& kind) {
  if (starts_with(name, "ProfilerStep#")) {
    kind = TraceKind::kStep;
    return cat == "user_annotation" || cat == "cpu_op" || cat == "Operator";
  }
  if (starts_with(name, "enumerate(DataLoader)") && name.find("__next__") != name.npos) {
    kind = TraceKind::kDataLoader;
    return cat == "user_annotation" || cat == "cpu_op" || cat == "Operator";
  }
  if (cat == "kernel" || cat == "Kernel")
    kind = TraceKind::kKernel;
  else if (cat == "gpu_memcpy" || cat == "Memcpy")
    kind = TraceKind::kMemcpy;
  else if (cat == "gpu_memset" || cat == "Memset")
    kind = TraceKind::kMemset;
  else if (cat == "cuda_runtime" || cat == "cuda_driver" || cat == "Runtime")
    kind = TraceKind::kRuntime;
  else
    return false;
  return true;
}

// The input a window at a time. The parser asks for one whole JSON value at a time (an event, a
// member's value): the window holds it whole while a Cursor reads it, then moves on, so memory
// holds the largest single value plus a chunk, never the file. Values are framed by their
// brackets and quotes only; the Cursor then reads (and checks) the JSON inside.
class Feed {
 public:
  explicit Feed(ByteStream& in) : in_(in) {}
  std::optional<Error> error;                  // a read that failed (a corrupt archive ...)
  uint64_t pos() const { return base_ + i_; }  // bytes before the cursor

  void space() {
    for (;;) {
      while (i_ < len_ && is_space(buf_[i_])) ++i_;
      if (i_ < len_ || !more(i_)) return;
    }
  }
  // A UTF-8 byte order mark at the start.
  void skip_bom() {
    while (len_ - i_ < 3 && more(i_)) {
    }
    if (std::string_view(buf_.data() + i_, len_ - i_).starts_with("\xEF\xBB\xBF")) i_ += 3;
  }
  bool eat(char c) {
    space();
    if (i_ < len_ && buf_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  char peek() {
    space();
    return i_ < len_ ? buf_[i_] : '\0';
  }
  // The next whole value, from its first byte to its last (a scalar runs to the next ',', '}',
  // ']', ':' or blank); valid until the next call. False at the end of the input or of a read.
  bool value(std::string_view& out) {
    space();
    if (i_ >= len_) return false;
    const char first = buf_[i_];
    size_t k = 0;  // bytes of the value framed so far, from i_
    if (first == '{' || first == '[' || first == '"') {
      int64_t depth = 0;
      bool in_string = false;
      for (;;) {
        const char* p = buf_.data() + i_;
        const size_t n = len_ - i_;
        bool done = false;
        while (k < n) {
          if (in_string) {
            // To the closing quote or a backslash: most of a trace is short strings, where a
            // plain loop beats memchr's call.
            while (k < n && p[k] != '"' && p[k] != '\\') ++k;
            if (k == n) break;
            if (p[k] == '\\') {
              if (k + 1 >= n) break;  // the escaped byte is in the next chunk
              k += 2;
              continue;
            }
            in_string = false;
            ++k;
            if (depth == 0) {
              done = true;
              break;
            }
            continue;
          }
          const char c = p[k];
          if (c == '"') {
            in_string = true;
          } else if (c == '{' || c == '[') {
            ++depth;
          } else if ((c == '}' || c == ']') && --depth <= 0) {
            ++k;
            done = true;
            break;
          }
          ++k;
        }
        if (done) break;
        if (!more(i_)) return false;  // the value is cut short
      }
    } else {
      for (;;) {
        while (i_ + k < len_ && !ends_scalar(buf_[i_ + k])) ++k;
        if (i_ + k < len_ || !more(i_)) break;
      }
      if (k == 0) return false;
    }
    out = std::string_view(buf_.data() + i_, k);
    i_ += k;
    return true;
  }

 private:
  static bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
  static bool ends_scalar(char c) {
    return c == ',' || c == '}' || c == ']' || c == ':' || is_space(c);
  }
  // Reads the next chunk, keeping the bytes from `keep` on (moved to the front): false at the end
  // or on an error.
  bool more(size_t keep) {
    if (eof_) return false;
    if (keep > 0) {
      std::memmove(buf_.data(), buf_.data() + keep, len_ - keep);
      len_ -= keep;
      i_ -= keep;
      base_ += keep;
    }
    // Chunks from 64 KiB up to kChunk: a small trace costs a small window.
    chunk_ = std::min(kChunk, chunk_ * 2);
    if (buf_.size() - len_ < chunk_) buf_.resize(std::max(buf_.size() * 2, len_ + chunk_));
    auto r = in_.read(buf_.data() + len_, buf_.size() - len_);
    if (!r) {
      error = r.error();
      eof_ = true;
      return false;
    }
    if (r.value() == 0) eof_ = true;
    len_ += r.value();
    return r.value() > 0;
  }

  static constexpr size_t kChunk = size_t{1} << 20;
  size_t chunk_ = size_t{32} << 10;
  ByteStream& in_;
  std::string buf_;
  size_t i_ = 0, len_ = 0;
  uint64_t base_ = 0;  // the input's bytes before buf_[0]
  bool eof_ = false;
};

class TraceParser {
 public:
  TraceParser(ByteStream& in, const std::string& origin) : f_(in), origin_(origin) {}

  Result<TraceRank> run() {
    out_.origin = origin_;
    // A UTF-8 byte order mark is allowed before the object.
    f_.skip_bom();
    if (!f_.eat('{')) return broken("a JSON object");
    bool any_events = false;
    if (!f_.eat('}')) {
      do {
        std::string key;
        {
          std::string_view v, k;
          std::string owned;
          if (f_.peek() != '"' || !f_.value(v) || !Cursor(v).string(k, owned))
            return broken("a member name");
          key = std::string(k);
        }
        if (!f_.eat(':')) return broken("':'");
        bool ok = true;
        if (key == "traceEvents") {
          any_events = true;
          ok = events();
        } else {
          ok = member(key);
        }
        if (!ok) return broken(fmt::format("the value of \"{}\"", key));
      } while (f_.eat(','));
      if (!f_.eat('}')) return broken("',' or '}'");
    }
    if (f_.error) return *f_.error;
    if (!any_events)
      return usage_error(fmt::format(
          "{}: JSON without traceEvents: not a PyTorch profiler (Kineto) trace", origin_));
    if (base_ns_ != 0)
      for (auto& e : out_.events) e.start_ns += base_ns_;
    return std::move(out_);
  }

 private:
  Error broken(std::string_view what) {
    if (f_.error) return *f_.error;
    return usage_error(fmt::format("{}: byte {}: expected {} (a PyTorch profiler trace is JSON)",
                                   origin_, fail_at_ ? *fail_at_ : f_.pos() + 1, what));
  }

  // The next value read whole by `read` (a Cursor over it); where it fails, the byte it
  // stopped at is the one the error names.
  template <class F>
  bool framed(F&& read) {
    std::string_view v;
    if (!f_.value(v)) return false;
    Cursor c(v);
    if (read(c) && c.at_end()) return true;
    fail_at_ = f_.pos() - v.size() + c.pos() + 1;
    return false;
  }

  // A member other than traceEvents.
  bool member(const std::string& key) {
    if (key == "deviceProperties") return framed([&](Cursor& c) { return devices(c); });
    if (key == "distributedInfo") return framed([&](Cursor& c) { return distributed(c); });
    if (key == "baseTimeNanoseconds")
      return framed([&](Cursor& c) {
        std::string_view n;
        const bool ok = c.number(n) && to_int(n, base_ns_);
        if (base_ns_ < 0 || base_ns_ > kMaxMicros * 1000) base_ns_ = 0;  // not a time: ignored
        return ok;
      });
    return framed([](Cursor& c) { return c.skip(); });
  }

  bool events() {
    if (!f_.eat('[')) return false;
    if (f_.eat(']')) return true;
    do {
      if (!framed([&](Cursor& c) { return event(c); })) return false;
    } while (f_.eat(','));
    return f_.eat(']');
  }

  uint32_t intern(std::string_view name) {
    auto it = names_.find(name);
    if (it != names_.end()) return it->second;
    const auto id = static_cast<uint32_t>(out_.names.size());
    out_.names.emplace_back(name);
    names_.emplace(std::string(name), id);
    return id;
  }

  // One event: its members read in any order; kept where its category and phase say so.
  bool event(Cursor& c_) {
    ++out_.events_read;
    if (c_.peek() != '{') return c_.skip();
    c_.eat('{');
    std::string_view ph, cat, name, ts, dur;
    std::string ph_o, cat_o, name_o;
    int64_t correlation = -1, stream = -1, device = -1;
    if (!c_.eat('}')) {
      do {
        std::string_view key;
        std::string key_o;
        if (!c_.string(key, key_o) || !c_.eat(':')) return false;
        bool ok = true;
        if (key == "ph" && c_.peek() == '"')
          ok = c_.string(ph, ph_o);
        else if (key == "cat" && c_.peek() == '"')
          ok = c_.string(cat, cat_o);
        else if (key == "name" && c_.peek() == '"')
          ok = c_.string(name, name_o);
        else if (key == "ts" && c_.peek() != '"')
          ok = c_.number(ts);
        else if (key == "dur" && c_.peek() != '"')
          ok = c_.number(dur);
        else if (key == "args" && c_.peek() == '{')
          ok = args(c_, correlation, stream, device);
        else
          ok = c_.skip();
        if (!ok) return false;
      } while (c_.eat(','));
      if (!c_.eat('}')) return false;
    }
    TraceKind kind{};
    int64_t start = 0, length = 0;
    if (ph != "X" || !kind_of(cat, name, kind) || !micros_to_ns(ts, start, out_.ns_resolution) ||
        !micros_to_ns(dur, length, out_.ns_resolution) || length < 0) {
      ++out_.skipped[std::string(!cat.empty() ? cat : ph.empty() ? "(no category)" : ph)];
      return true;
    }
    TraceEvent e;
    e.start_ns = start;
    e.dur_ns = length;
    e.kind = kind;
    e.correlation = correlation;
    e.stream = static_cast<int32_t>(stream);
    e.device = static_cast<int32_t>(device);
    if (kind == TraceKind::kStep) {
      int64_t n = -1;
      to_int(name.substr(13), n);
      e.step = static_cast<int32_t>(n);
    }
    e.name = intern(name);
    out_.events.push_back(e);
    return true;
  }

  static bool args(Cursor& c_, int64_t& correlation, int64_t& stream, int64_t& device) {
    c_.eat('{');
    if (c_.eat('}')) return true;
    do {
      std::string_view key, n;
      std::string key_o;
      if (!c_.string(key, key_o) || !c_.eat(':')) return false;
      int64_t* into = key == "correlation" ? &correlation
                      : key == "stream"    ? &stream
                      : key == "device"    ? &device
                                           : nullptr;
      const char p = c_.peek();
      if (into && (p == '-' || std::isdigit(static_cast<unsigned char>(p)))) {
        if (!c_.number(n)) return false;
        to_int(n, *into);
      } else if (!c_.skip()) {
        return false;
      }
    } while (c_.eat(','));
    return c_.eat('}');
  }

  bool devices(Cursor& c_) {
    if (!c_.eat('[')) return false;
    if (c_.eat(']')) return true;
    do {
      if (!c_.eat('{')) return false;
      int64_t id = -1;
      std::string name;
      if (!c_.eat('}')) {
        do {
          std::string_view key, v;
          std::string key_o, v_o;
          if (!c_.string(key, key_o) || !c_.eat(':')) return false;
          if (key == "id" && c_.peek() != '"') {
            if (!c_.number(v)) return false;
            to_int(v, id);
          } else if (key == "name" && c_.peek() == '"') {
            if (!c_.string(v, v_o)) return false;
            name = std::string(v);
          } else if (!c_.skip()) {
            return false;
          }
        } while (c_.eat(','));
        if (!c_.eat('}')) return false;
      }
      if (id >= 0 && id < 1024) {
        if (out_.device_names.size() <= static_cast<size_t>(id))
          out_.device_names.resize(static_cast<size_t>(id) + 1);
        out_.device_names[static_cast<size_t>(id)] = name;
      }
    } while (c_.eat(','));
    return c_.eat(']');
  }

  bool distributed(Cursor& c_) {
    if (!c_.eat('{')) return c_.skip();
    if (c_.eat('}')) return true;
    do {
      std::string_view key, v;
      std::string key_o;
      if (!c_.string(key, key_o) || !c_.eat(':')) return false;
      if (key == "rank" && c_.peek() != '"') {
        int64_t r = -1;
        if (!c_.number(v)) return false;
        if (to_int(v, r) && r >= 0 && r < (1 << 24)) out_.rank = static_cast<int>(r);
      } else if (!c_.skip()) {
        return false;
      }
    } while (c_.eat(','));
    return c_.eat('}');
  }

  // Names looked up by view, without building a string per event.
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  Feed f_;
  const std::string& origin_;
  TraceRank out_;
  std::unordered_map<std::string, uint32_t, NameHash, std::equal_to<>> names_;
  std::optional<uint64_t> fail_at_;
  int64_t base_ns_ = 0;
};

size_t count_kind(const TraceRank& t, TraceKind k) {
  return static_cast<size_t>(std::count_if(t.events.begin(), t.events.end(),
                                           [k](const TraceEvent& e) { return e.kind == k; }));
}

}  // namespace

bool looks_like_kineto_trace(std::string_view head) {
  const size_t first = head.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || head[first] != '{') return false;
  for (std::string_view key : {"\"traceEvents\"", "\"deviceProperties\"", "\"distributedInfo\""})
    if (head.find(key) != std::string_view::npos) return true;
  return head.find("\"schemaVersion\"") != std::string_view::npos &&
         head.find("\"displayTimeUnit\"") != std::string_view::npos;
}

bool file_is_kineto_trace(const std::string& path) {
  auto in = ByteStream::open_file(path);
  if (!in) return false;
  std::string head(4096, '\0');
  size_t got = 0;
  while (got < head.size()) {
    auto r = in.value()->read(head.data() + got, head.size() - got);
    if (!r || r.value() == 0) break;
    got += r.value();
  }
  head.resize(got);
  return looks_like_kineto_trace(text::strip_bom(head));
}

Result<TraceRank> parse_kineto_trace(ByteStream& in, const std::string& origin) {
  auto r = TraceParser(in, origin).run();
  if (!r) return r;
  // Names go into JSON and HTML as they are: every invalid byte (a cut kernel name, a lone
  // surrogate's escape) made U+FFFD.
  TraceRank& t = r.value();
  for (auto& n : t.names) n = valid_utf8(n);
  for (auto& n : t.device_names) n = valid_utf8(n);
  std::map<std::string, size_t> skipped;
  for (const auto& [k, v] : t.skipped) skipped[valid_utf8(k)] += v;
  t.skipped = std::move(skipped);
  t.events.shrink_to_fit();
  return r;
}

Result<TraceRank> parse_kineto_trace(std::string_view text, const std::string& origin) {
  const auto in = ByteStream::of_text(text);
  return parse_kineto_trace(*in, origin);
}

Result<Recording> read_kineto_trace(std::string_view text, const std::string& origin,
                                    const LoadOptions& options) {
  const auto in = ByteStream::of_text(text);
  return read_kineto_trace(*in, origin, options);
}

Result<Recording> read_kineto_trace(ByteStream& in, const std::string& origin, const LoadOptions&) {
  auto parsed = parse_kineto_trace(in, origin);
  if (!parsed) return parsed.error();
  TraceRank& t = parsed.value();
  const size_t kernels = count_kind(t, TraceKind::kKernel);
  const size_t copies = count_kind(t, TraceKind::kMemcpy) + count_kind(t, TraceKind::kMemset);
  if (kernels + copies == 0)
    return no_data_error(fmt::format(
        "{}: a profiler trace with no GPU kernels or memory copies ({} events{}): a CPU-only "
        "rank, or recorded without ProfilerActivity.CUDA; nothing here says how the GPU was used",
        origin, t.events_read, t.rank >= 0 ? fmt::format(", rank {}", t.rank) : ""));
  Recording rec;
  rec.source = "PyTorch profiler trace: " + origin;
  int64_t first = INT64_MAX;
  for (const auto& e : t.events) first = std::min(first, e.start_ns);
  rec.start_unix_ms = first / 1000000;
  std::vector<std::string> skipped;
  size_t skipped_n = 0;
  for (const auto& [cat, n] : t.skipped) {
    skipped.push_back(fmt::format("{} {}", cat, n));
    skipped_n += n;
  }
  rec.notes.push_back(fmt::format(
      "profiler trace{}: {} events read: {} kernels, {} memory copies and sets, {} CUDA runtime "
      "calls, {} steps, {} DataLoader spans kept; {} skipped ({})",
      t.rank >= 0 ? fmt::format(" of rank {}", t.rank) : "", t.events_read, kernels, copies,
      count_kind(t, TraceKind::kRuntime), count_kind(t, TraceKind::kStep),
      count_kind(t, TraceKind::kDataLoader), skipped_n, fmt::join(skipped, ", ")));
  if (t.ns_resolution) rec.notes.push_back("profiler trace: nanosecond-resolution timestamps");
  rec.traces.push_back(std::move(t));
  return rec;
}

}  // namespace gpudoctor
