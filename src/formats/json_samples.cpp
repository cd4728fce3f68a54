#include "formats/json_samples.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "formats/finish.hpp"
#include "formats/flat_table.hpp"
#include "formats/generic_csv.hpp"
#include "formats/prometheus.hpp"
#include "formats/text.hpp"

namespace gpudoctor {

namespace {

using nlohmann::json;

bool is_numeric_array(const json& v) {
  if (!v.is_array() || v.empty()) return false;
  for (const auto& e : v)
    if (!e.is_number() && !e.is_null()) return false;
  return true;
}

bool is_object_array(const json& v) {
  if (!v.is_array() || v.empty()) return false;
  for (const auto& e : v)
    if (!e.is_object()) return false;
  return true;
}

// A scalar as a cell: numbers as JSON writes them, strings as they are, booleans as 1/0, null as
// no value (nullopt).
std::optional<std::string> cell_of(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return std::string(v.get<bool>() ? "1" : "0");
  // fmt writes the shortest text that reads back as the same double, as JSON's own dump does,
  // without its serializer's set-up per value.
  if (v.is_number_integer())
    return v.is_number_unsigned() ? fmt::format("{}", v.get<uint64_t>())
                                  : fmt::format("{}", v.get<int64_t>());
  if (v.is_number()) return fmt::format("{}", v.get<double>());
  return std::nullopt;
}

std::string joined(const std::string& prefix, const std::string& key) {
  return prefix.empty() ? key : prefix + "." + key;
}

// Deeper than this, objects are not followed (a sample is a few levels at most).
constexpr int kMaxDepth = 8;

class Flattener {
 public:
  log_reader::FlatTable table;
  size_t ignored_lists = 0;  // lists of objects left out (processes inside a GPU, ...)

  // One sample object: one row, or one row per element of its list of GPUs.
  void sample(const json& obj) {
    const json* list = nullptr;
    for (const auto& [k, v] : obj.items())
      if (is_object_array(v) && !list) list = &v;
    if (!list) {
      table.begin_row();
      scalars(obj, "", 0, nullptr);
      table.drop_empty_row();
      return;
    }
    for (const auto& element : *list) {
      table.begin_row();
      scalars(obj, "", 0, list);
      scalars(element, "", 0, nullptr);
      table.drop_empty_row();
    }
  }

  // A single object of equal-length number lists (at the top or one level down) with no number
  // of its own: one row per position.
  bool columnar(const json& obj) {
    std::vector<std::pair<std::string, const json*>> cols;
    size_t length = 0;
    auto take = [&](const std::string& name, const json& v) {
      if (!is_numeric_array(v)) return true;
      if (length != 0 && v.size() != length) return false;
      length = v.size();
      cols.emplace_back(name, &v);
      return true;
    };
    for (const auto& [k, v] : obj.items()) {
      if (v.is_number()) return false;
      if (v.is_object()) {
        for (const auto& [k2, v2] : v.items())
          if (!take(joined(k, k2), v2)) return false;
      } else if (!take(k, v)) {
        return false;
      }
    }
    if (cols.size() < 2 || length < 2) return false;
    for (size_t i = 0; i < length; ++i) {
      table.begin_row();
      for (const auto& [name, v] : cols)
        if (auto c = cell_of((*v)[i])) table.set(name, *c);
      table.drop_empty_row();
    }
    return true;
  }

 private:
  void scalars(const json& obj, const std::string& prefix, int depth, const json* skip) {
    if (depth > kMaxDepth) return;
    for (const auto& [k, v] : obj.items()) {
      if (&v == skip) continue;
      const std::string name = joined(prefix, k);
      if (v.is_object()) {
        scalars(v, name, depth + 1, nullptr);
      } else if (is_numeric_array(v)) {
        for (size_t i = 0; i < v.size(); ++i)
          if (auto c = cell_of(v[i])) table.set(joined(name, std::to_string(i)), *c);
      } else if (v.is_array()) {
        if (is_object_array(v)) ++ignored_lists;
      } else if (auto c = cell_of(v)) {
        table.set(name, *c);
      }
    }
  }
};

// Where the JSON value starting at `start` ends: after its closing bracket (strings and escapes
// followed), or at the end of the line for anything that is not an object or array. Inner lines
// of an indented object are indented: a '{' at the start of a line opens the next value.
size_t value_end(std::string_view s, size_t start) {
  if (s[start] != '{' && s[start] != '[') {
    const size_t nl = s.find('\n', start);
    return nl == std::string_view::npos ? s.size() : nl + 1;
  }
  int depth = 0;
  bool in_string = false;
  for (size_t i = start; i < s.size(); ++i) {
    const char c = s[i];
    // JSON strings hold no raw newline: an object opening at the start of a line starts the
    // next value, and the one before was cut short.
    if (c == '\n' && i + 1 < s.size() && s[i + 1] == '{') return i;
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return s.size();
}

bool is_prometheus_answer(const json& doc) {
  return doc.is_object() && doc.contains("status") && doc.contains("data") &&
         doc["data"].is_object() && doc["data"].contains("result");
}

Result<Recording> read_prometheus_answer(std::string_view text, const std::string& origin,
                                         const LoadOptions& options) {
  auto series = parse_prometheus_answer(text);
  if (!series) return usage_error(fmt::format("{}: {}", origin, series.error().message));
  Recording rec = recording_from_series(series.value(), origin);
  if (rec.gpus.empty())
    return usage_error(
        fmt::format("{}: a Prometheus answer with no GPU series (looked for dcgm-exporter's and "
                    "gpudoctor's metric names, with a gpu or UUID label)",
                    origin));
  rec.notes.insert(
      rec.notes.begin(),
      fmt::format("read as a saved Prometheus API answer: {} series", series.value().size()));
  log_reader::finish_series_gpus(rec, options.power_limit_w);
  return rec;
}

}  // namespace

bool looks_like_json_samples(std::string_view head) {
  head = text::trim_left(text::strip_bom(head));
  return !head.empty() && (head.front() == '{' || head.front() == '[');
}

namespace {

Result<Recording> read_json_samples_unguarded(std::string_view text, const std::string& origin,
                                              const LoadOptions& options) {
  const std::string_view body = text::strip_bom(text);
  Flattener flat;
  log_reader::Problem bad;
  std::string framing;
  // One document (an array, an object) or, failing that, one object per line.
  json doc = json::parse(body.begin(), body.end(), nullptr, false);
  if (!doc.is_discarded()) {
    if (is_prometheus_answer(doc)) return read_prometheus_answer(body, origin, options);
    if (doc.is_array()) {
      framing = "a JSON array of samples";
      for (const auto& e : doc)
        if (e.is_object()) flat.sample(e);
    } else if (doc.is_object()) {
      if (flat.columnar(doc)) {
        framing = "a JSON object of equal-length columns";
      } else {
        framing = "a JSON sample";
        flat.sample(doc);
      }
    }
  } else {
    // JSON lines, or whole objects one after another (`gpustat --json` in a loop writes one
    // indented object per call).
    framing = "a sequence of JSON objects";
    size_t pos = 0, line_no = 1;
    while (pos < body.size()) {
      const size_t start = body.find_first_not_of(" \t\r\n", pos);
      if (start == std::string_view::npos) break;
      line_no += static_cast<size_t>(std::count(body.begin() + static_cast<long>(pos),
                                                body.begin() + static_cast<long>(start), '\n'));
      const size_t end = value_end(body, start);
      const std::string_view chunk = body.substr(start, end - start);
      json v = json::parse(chunk.begin(), chunk.end(), nullptr, false);
      if (v.is_discarded() || !v.is_object())
        log_reader::count_problem(bad, origin, line_no, "not a JSON object: {}", chunk);
      else
        flat.sample(v);
      line_no += static_cast<size_t>(std::count(chunk.begin(), chunk.end(), '\n'));
      pos = end;
    }
  }
  if (flat.table.rows() == 0)
    return usage_error(fmt::format(
        "{}: JSON without samples ({}; a sample is an object of metric names and values)", origin,
        bad.count ? bad.first : "no object with a value found"));

  GenericCsvOptions o;
  o.map = options.map;
  o.power_limit_w = options.power_limit_w;
  auto rec = read_generic_csv(flat.table.csv(), origin, o);
  if (!rec) return rec;
  rec.value().source = "json: " + origin;
  auto& notes = rec.value().notes;
  notes.insert(notes.begin(),
               fmt::format("read as {}: {} row(s), nested keys joined with '.' into {} column(s)",
                           framing, flat.table.rows(), flat.table.columns()));
  if (flat.ignored_lists)
    log_reader::add_note(rec.value(), fmt::format("{} list(s) of objects inside a sample left out "
                                                  "(per-process lists and the like)",
                                                  flat.ignored_lists));
  log_reader::note_skipped(rec.value(), bad, "that are not JSON objects");
  return rec;
}

}  // namespace

Result<Recording> read_json_samples(std::string_view text, const std::string& origin,
                                    const LoadOptions& options) {
  return log_reader::guarded_read(
      origin, "JSON log", [&] { return read_json_samples_unguarded(text, origin, options); });
}

}  // namespace gpudoctor
