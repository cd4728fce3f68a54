#include "formats/kineto_trace.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>

#include "core/utf8.hpp"
#include "formats/kineto_scan.hpp"
#include "text/text.hpp"

namespace gpudoctor {

namespace {

using kineto_scan::Cursor;
using kineto_scan::Feed;
using kineto_scan::kMaxMicros;
using kineto_scan::micros_to_ns;
using kineto_scan::to_int;

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
  else if (cat == "cuda_sync")
    kind = TraceKind::kSync;
  else
    return false;
  return true;
}

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
          if (f_.peek() != '"' || !f_.value(v) || !Cursor(v).string(k, owned)) {
            if (ended_after(any_events)) break;
            return broken("a member name");
          }
          key = std::string(k);
        }
        if (!f_.eat(':')) {
          if (ended_after(any_events)) break;
          return broken("':'");
        }
        bool ok = true;
        if (key == "traceEvents") {
          ok = events();
          any_events = ok;
        } else {
          const int64_t base = base_ns_;
          ok = member(key);
          // A member after the events cut short (a number perhaps cut too): not read.
          if (f_.ended_in_value() && ended_after(any_events)) {
            base_ns_ = base;
            break;
          }
        }
        if (!ok) return broken(fmt::format("the value of \"{}\"", key));
        if (out_.cut_at_byte > 0) break;  // the input ended inside traceEvents
      } while (f_.eat(','));
      if (out_.cut_at_byte == 0 && !f_.eat('}') && !ended_after(any_events))
        return broken("',' or '}'");
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

  // Whether the input ended (rather than broke) after the event list was read whole: what
  // follows it (deviceProperties, baseTimeNanoseconds in some traces) is then missing, not wrong.
  bool ended_after(bool events_read) {
    if (!events_read || out_.cut_at_byte > 0) return false;
    if (f_.ended_in_value() ? !clean_cut() : !f_.at_end()) return false;
    out_.cut_at_byte = f_.size_read();
    return true;
  }

  // Whether the value the input ended inside is JSON as far as it goes; where it is not, the
  // byte it breaks at is the one the error names.
  bool clean_cut() {
    const auto at = kineto_scan::breaks_at(f_.last_value());
    if (at) fail_at_ = f_.last_start() + *at + 1;
    return !at;
  }

  // traceEvents' array. Where the input ends inside it (a profiler stopped mid-write, a pipe cut
  // by Ctrl-C: an end, not a syntax error) the whole events read so far are kept and the one cut
  // short dropped; with no whole event before the end it stays an error.
  bool events() {
    if (!f_.eat('[')) return false;
    if (f_.eat(']')) return true;
    do {
      const size_t before = out_.events_read;
      const bool ok = framed([&](Cursor& c) { return event(c); });
      // A scalar running to the end may have been cut: never taken for a whole event.
      if (!ok || f_.ended_in_value()) {
        if (!f_.ended_in_value() || !clean_cut() || before == 0) return false;
        out_.events_read = before;
        out_.cut_in_events = true;
        out_.cut_event_dropped = !f_.last_value().empty();  // not where it ends after a ','
        out_.cut_at_byte = f_.size_read();
        return true;
      }
    } while (f_.eat(','));
    if (f_.eat(']')) return true;
    if (!f_.at_end() || out_.events_read == 0) return false;
    out_.cut_in_events = true;  // between two whole events
    out_.cut_at_byte = f_.size_read();
    return true;
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
    Args a;
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
          ok = args(c_, a);
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
    e.correlation = a.correlation;
    e.stream = stream_id(a.stream);
    e.device = static_cast<int32_t>(a.device);
    e.wait_stream = stream_id(a.wait_stream);
    if (kind == TraceKind::kStep) {
      int64_t n = -1;
      to_int(name.substr(13), n);
      e.step = static_cast<int32_t>(n);
    }
    e.name = intern(name);
    out_.events.push_back(e);
    return true;
  }

  // The args an event's analysis needs.
  struct Args {
    int64_t correlation = -1, stream = -1, device = -1, wait_stream = -1;
  };

  // A stream id as kept: -1 for none or the whole device (Kineto writes a device-wide sync's
  // stream as -1 or as 4294967295, -1 read unsigned), and for anything out of an int32's range.
  static int32_t stream_id(int64_t s) {
    return s >= 0 && s < INT32_MAX ? static_cast<int32_t>(s) : -1;
  }

  static bool args(Cursor& c_, Args& a) {
    c_.eat('{');
    if (c_.eat('}')) return true;
    do {
      std::string_view key, n;
      std::string key_o;
      if (!c_.string(key, key_o) || !c_.eat(':')) return false;
      int64_t* into = key == "correlation"      ? &a.correlation
                      : key == "stream"         ? &a.stream
                      : key == "device"         ? &a.device
                      : key == "wait_on_stream" ? &a.wait_stream
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

constexpr int64_t kWallClockFloorNs = 978'307'200'000'000'000;  // 2001-01-01 UTC

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
  if (kernels + copies == 0 && t.cut_in_events)
    return no_data_error(fmt::format(
        "{}: a profiler trace cut short before its first GPU kernel or memory copy ({} events "
        "read{}; the input ends inside its event list at byte {}, and Kineto writes the GPU's "
        "events after the CPU's): nothing here says how the GPU was used",
        origin, t.events_read, t.rank >= 0 ? fmt::format(", rank {}", t.rank) : "", t.cut_at_byte));
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
      "calls, {} synchronisation records, {} steps, {} DataLoader spans kept; {} skipped ({})",
      t.rank >= 0 ? fmt::format(" of rank {}", t.rank) : "", t.events_read, kernels, copies,
      count_kind(t, TraceKind::kRuntime), count_kind(t, TraceKind::kSync),
      count_kind(t, TraceKind::kStep), count_kind(t, TraceKind::kDataLoader), skipped_n,
      fmt::join(skipped, ", ")));
  if (t.ns_resolution) rec.notes.push_back("profiler trace: nanosecond-resolution timestamps");
  if (t.cut_at_byte > 0) {
    rec.notes.push_back(
        t.cut_in_events
            ? fmt::format(
                  "profiler trace cut short: the input ends inside its event list (traceEvents) "
                  "at byte {} (a profiler stopped mid-write, or a pipe cut): the {} whole events "
                  "before it are read{}; what followed the list is missing",
                  t.cut_at_byte, t.events_read,
                  t.cut_event_dropped ? ", the one cut short dropped" : "")
            : fmt::format(
                  "profiler trace cut short: the input ends at byte {}, after its event list "
                  "(all {} events read whole); what followed the list is missing",
                  t.cut_at_byte, t.events_read));
    // Times before 2001 are the profiler's own clock: the baseTimeNanoseconds that newer traces
    // write after the events, which puts them on the wall clock, was cut off.
    if (first < kWallClockFloorNs) {
      rec.start_unix_ms = 0;
      rec.notes.push_back(
          "profiler trace cut short: its times are the profiler's own clock, not the wall clock "
          "(the baseTimeNanoseconds written after the events is missing): no start date");
    }
  }
  rec.traces.push_back(std::move(t));
  return rec;
}

}  // namespace gpudoctor
