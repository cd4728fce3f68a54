#include "formats/prom_text.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "formats/finish.hpp"
#include "formats/prom_series.hpp"
#include "text/text.hpp"

namespace gpudoctor {

namespace {

constexpr double kMaxUnixMs = 1e14;

bool name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}
bool name_char(char c) {
  return name_start(c) || (c >= '0' && c <= '9');
}

struct Sample {
  std::string_view key;  // the name and label set as written: the series' identity
  double value = 0;
  std::optional<double> timestamp;  // as written (ms or s)
};

std::optional<double> parse_value(std::string_view v) {
  if (v == "NaN") return std::nan("");
  if (v == "+Inf" || v == "Inf") return std::numeric_limits<double>::infinity();
  if (v == "-Inf") return -std::numeric_limits<double>::infinity();
  return text::parse_double(v);
}

// The labels of a key that parse_sample accepted: name="value" pairs with \\, \" and \n escapes.
std::map<std::string, std::string> parse_labels(std::string_view key) {
  std::map<std::string, std::string> labels;
  size_t i = 0;
  while (i < key.size() && name_char(key[i])) ++i;
  labels["__name__"] = std::string(key.substr(0, i));
  if (i >= key.size() || key[i] != '{') return labels;
  ++i;
  while (i < key.size()) {
    while (i < key.size() && (key[i] == ' ' || key[i] == ',')) ++i;
    if (i >= key.size() || key[i] == '}') break;
    const size_t k0 = i;
    while (i < key.size() && name_char(key[i])) ++i;
    const std::string name(key.substr(k0, i - k0));
    while (i < key.size() && key[i] != '"') ++i;
    ++i;
    std::string value;
    while (i < key.size() && key[i] != '"') {
      if (key[i] == '\\' && i + 1 < key.size()) {
        ++i;
        value.push_back(key[i] == 'n' ? '\n' : key[i]);
      } else {
        value.push_back(key[i]);
      }
      ++i;
    }
    ++i;
    labels[name] = std::move(value);
  }
  return labels;
}

// One sample line, or nullopt when the line is not one. `labels` counts the label pairs; `words`
// is scratch (the caller's, kept from line to line: no allocation per line).
std::optional<Sample> parse_sample(std::string_view line, std::vector<std::string_view>& words,
                                   size_t* labels = nullptr) {
  Sample s;
  size_t i = 0, pairs = 0;
  if (line.empty() || !name_start(line[0])) return std::nullopt;
  while (i < line.size() && name_char(line[i])) ++i;
  if (i < line.size() && line[i] == '{') {
    ++i;
    while (true) {
      while (i < line.size() && (line[i] == ' ' || line[i] == ',')) ++i;
      if (i >= line.size()) return std::nullopt;
      if (line[i] == '}') {
        ++i;
        break;
      }
      if (!name_start(line[i])) return std::nullopt;
      while (i < line.size() && name_char(line[i])) ++i;
      while (i < line.size() && line[i] == ' ') ++i;
      if (i + 1 >= line.size() || line[i] != '=' || line[i + 1] != '"') return std::nullopt;
      i += 2;
      bool closed = false;
      while (i < line.size()) {
        const char c = line[i++];
        if (c == '"') {
          closed = true;
          break;
        }
        if (c == '\\' && i < line.size()) ++i;
      }
      if (!closed) return std::nullopt;
      ++pairs;
    }
  }
  s.key = line.substr(0, i);
  text::split_ws(line.substr(i), words);
  if (words.empty() || words.size() > 2) return std::nullopt;
  const auto v = parse_value(words[0]);
  if (!v) return std::nullopt;
  s.value = *v;
  if (words.size() == 2) {
    const auto t = text::parse_double(words[1]);
    if (!t || !std::isfinite(*t)) return std::nullopt;
    s.timestamp = *t;
  }
  if (labels) *labels = pairs;
  return s;
}

bool is_exposition_comment(std::string_view line) {
  return text::istarts_with(line, "# HELP ") || text::istarts_with(line, "# TYPE ") ||
         text::istarts_with(line, "# UNIT ") || line == "# EOF";
}

constexpr std::array<std::string_view, 12> kMonths = {"jan", "feb", "mar", "apr", "may", "jun",
                                                      "jul", "aug", "sep", "oct", "nov", "dec"};

}  // namespace

std::optional<int64_t> parse_stamp_line_ms(std::string_view line) {
  line = text::trim(line);
  if (line.empty()) return std::nullopt;
  if (auto t = text::parse_timestamp_ms(line)) return t;
  // Epoch seconds (10 digits, a fraction allowed) or ms (13 digits), as `date +%s` writes.
  if (const auto n = text::parse_double(line)) {
    if (*n >= 1e9 && *n < 1e10) return static_cast<int64_t>(std::llround(*n * 1000));
    if (*n >= 1e12 && *n < 1e13) return static_cast<int64_t>(std::llround(*n));
    return std::nullopt;
  }
  // date(1): "Tue Dec  1 10:00:00 UTC 2026" (the zone is taken as UTC; any is accepted).
  std::vector<std::string_view> w;
  text::split_ws(line, w);
  if (w.size() < 5 || w.size() > 6) return std::nullopt;
  const std::string mon = text::lower(w[1]);
  const auto m = std::find(kMonths.begin(), kMonths.end(), mon);
  if (m == kMonths.end()) return std::nullopt;
  const auto day = text::parse_int(w[2]);
  const auto year = text::parse_int(w.back());
  if (!day || !year || *day < 1 || *day > 31 || *year < 1970 || *year > 9999) return std::nullopt;
  const std::string_view hms = w[3];
  if (hms.size() != 8 || hms[2] != ':' || hms[5] != ':') return std::nullopt;
  const auto h = text::parse_int(hms.substr(0, 2)), mi = text::parse_int(hms.substr(3, 2)),
             se = text::parse_int(hms.substr(6, 2));
  if (!h || !mi || !se || *h > 23 || *mi > 59 || *se > 60) return std::nullopt;
  const int64_t days = text::days_from_civil(*year, static_cast<unsigned>(m - kMonths.begin() + 1),
                                             static_cast<unsigned>(*day));
  return ((days * 24 + *h) * 60 + *mi) * 60000 + *se * 1000;
}

bool looks_like_prom_text(std::string_view head) {
  size_t pos = 0, samples = 0;
  std::vector<std::string_view> words;
  head = text::strip_bom(head);
  while (pos < head.size()) {
    size_t end = head.find('\n', pos);
    if (end == std::string_view::npos) break;  // the last line may be cut short in the head
    const std::string_view line = text::trim(head.substr(pos, end - pos));
    pos = end + 1;
    if (line.empty()) continue;
    if (is_exposition_comment(line)) return true;
    if (line.front() == '#' || parse_stamp_line_ms(line)) continue;
    size_t labels = 0;
    const auto s = parse_sample(line, words, &labels);
    if (!s || labels == 0) return false;  // a label set, not just "name value"
    if (++samples >= 2) return true;
  }
  return samples > 0;
}

namespace {

Result<Recording> read_prom_text_unguarded(std::string_view text, const std::string& origin,
                                           const LoadOptions& options) {
  const std::string_view body = text::strip_bom(text);
  // OpenMetrics ends with "# EOF" (a loop of its scrapes: each one's, the last at the end): looked
  // for at the end only, so that the text is read once, front to back, its pages handed back as
  // they are read (a search of the whole text first held all of it in memory).
  const std::string_view tail = body.substr(0, body.find_last_not_of(" \t\r\n") + 1);
  const bool openmetrics =
      tail.ends_with("# EOF") && (tail.size() == 5 || tail[tail.size() - 6] == '\n');
  // Per series (keyed by its text, which outlives the read): its points and the snapshot it was
  // last seen in.
  struct Entry {
    std::string_view key;
    PromSeries series;
    size_t last_snapshot = SIZE_MAX;
    size_t next = SIZE_MAX;  // the series that came after this one last time
  };
  std::unordered_map<std::string_view, size_t> index;
  std::vector<Entry> entries;
  size_t snapshot = 0, samples = 0, stamped_snapshots = 0, previous = SIZE_MAX;
  std::optional<int64_t> stamp, pending_stamp;
  bool any_sample_time = false, any_unstamped = false, sample_in_snapshot = false;
  log_reader::Problem skipped;
  std::vector<std::string_view> words;  // parse_sample's scratch
  size_t pos = 0, line_no = 0;
  while (pos < body.size()) {
    size_t end = body.find('\n', pos);
    if (end == std::string_view::npos) end = body.size();
    std::string_view line = text::trim(body.substr(pos, end - pos));
    text::passed(line.data());
    pos = end + 1;
    ++line_no;
    if (line.empty() || is_exposition_comment(line)) continue;
    // A sample line first where one can start (a letter): a line that reads as a sample is one
    // (a date(1) line has five or six words, a sample's name and labels one or two more; the
    // other stamp lines start with a digit or '#'). (A label value with spaces and a date in it
    // once read as a stamp line.)
    std::optional<Sample> s;
    if (name_start(line.front())) s = parse_sample(line, words);
    if (!s) {
      std::string_view stamp_text = line;
      if (line.front() == '#') stamp_text = line.substr(1);
      if (auto t = parse_stamp_line_ms(stamp_text)) {
        pending_stamp = t;
        continue;
      }
      if (line.front() == '#') continue;
      log_reader::count_problem(skipped, origin, line_no, "not a sample line: {}", line);
      continue;
    }
    // The series: a snapshot lists them in the order the last one did, so the one that followed
    // the previous series last time is tried before the index.
    size_t e = SIZE_MAX;
    if (const size_t guess = previous < entries.size() ? entries[previous].next : SIZE_MAX;
        guess < entries.size() && entries[guess].key == s->key) {
      e = guess;
    } else {
      auto [it, fresh] = index.emplace(s->key, entries.size());
      if (fresh) {
        entries.emplace_back();
        entries.back().key = s->key;
        entries.back().series.labels = parse_labels(s->key);
      }
      e = it->second;
      if (previous < entries.size()) entries[previous].next = e;
    }
    previous = e;
    // A new snapshot: a stamp line after samples, or a series seen again. Its time is the
    // stamp line before its first sample, if any.
    if (sample_in_snapshot && (pending_stamp || entries[e].last_snapshot == snapshot)) {
      ++snapshot;
      sample_in_snapshot = false;
    }
    if (!sample_in_snapshot) {
      stamp = pending_stamp;
      if (pending_stamp) ++stamped_snapshots;
      pending_stamp.reset();
    }
    Entry& entry = entries[e];
    entry.last_snapshot = snapshot;
    sample_in_snapshot = true;
    int64_t t_ms = 0;
    if (s->timestamp) {
      const double ms = openmetrics || *s->timestamp < 1e11 ? *s->timestamp * 1000 : *s->timestamp;
      // Outside 1970..5138 it is no exporter's timestamp (and would overflow later sums).
      if (!(ms >= 0 && ms < kMaxUnixMs)) {
        log_reader::count_problem(skipped, origin, line_no, "a sample time out of range: {}", line);
        continue;
      }
      any_sample_time = true;
      t_ms = static_cast<int64_t>(std::llround(ms));
    } else if (stamp) {
      t_ms = *stamp;
    } else {
      any_unstamped = true;
      t_ms = static_cast<int64_t>(snapshot) * 1000;
    }
    entry.series.points.emplace_back(t_ms, s->value);
    ++samples;
  }
  std::vector<PromSeries> list;
  list.reserve(entries.size());
  for (auto& e : entries) {
    PromSeries& s = e.series;
    // Points in time order, one per time (a later snapshot of the same time wins). Snapshots
    // come in time order nearly always: then there is nothing to do.
    auto& points = s.points;
    auto not_after = [](const auto& a, const auto& b) { return !(a.first < b.first); };
    if (std::adjacent_find(points.begin(), points.end(), not_after) != points.end()) {
      std::stable_sort(points.begin(), points.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      size_t kept = 0;
      for (const auto& p : points) {
        if (kept > 0 && points[kept - 1].first == p.first)
          points[kept - 1] = p;
        else
          points[kept++] = p;
      }
      points.resize(kept);
    }
    list.push_back(std::move(s));
  }
  Recording rec = recording_from_series(list, origin);
  if (rec.gpus.empty())
    return usage_error(fmt::format(
        "{}: Prometheus exposition with no GPU series ({} sample(s); looked for dcgm-exporter's "
        "and gpudoctor's metric names with a gpu or UUID label)",
        origin, samples));
  if (any_unstamped && !any_sample_time && stamped_snapshots == 0) rec.start_unix_ms = 0;
  rec.notes.insert(rec.notes.begin(),
                   fmt::format("read as Prometheus exposition text: {} snapshot(s), {} series",
                               snapshot + 1, list.size()));
  if (any_unstamped)
    log_reader::add_note(rec,
                         "snapshots without a time (no sample timestamp, no date line before "
                         "them) are placed 1 s apart: durations are in snapshots, not seconds");
  log_reader::note_skipped(rec, skipped, "that are not samples");
  log_reader::finish_series_gpus(rec, options.power_limit_w);
  return rec;
}

}  // namespace

Result<Recording> read_prom_text(std::string_view text, const std::string& origin,
                                 const LoadOptions& options) {
  return log_reader::guarded_read(origin, "Prometheus text",
                                  [&] { return read_prom_text_unguarded(text, origin, options); });
}

}  // namespace gpudoctor
