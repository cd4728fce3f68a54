#include "formats/json_samples.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "formats/column_catalogue.hpp"
#include "formats/finish.hpp"
#include "formats/flat_table.hpp"
#include "formats/generic_csv.hpp"
#include "formats/json_scan.hpp"
#include "formats/prom_series.hpp"
#include "text/text.hpp"

namespace gpudoctor {

namespace {

using json_scan::Node;
using json_scan::Type;
using nlohmann::json;

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

std::string joined(std::string_view prefix, std::string_view key) {
  std::string out(prefix);
  if (!out.empty()) out += '.';
  out += key;
  return out;
}

// Deeper than this, objects are not followed (a sample is a few levels at most).
constexpr int kMaxDepth = 8;

// How the flattening sees a JSON value: nlohmann's DOM (anything JSON), or a json_scan tree of
// views into the text (what loggers write, read in place: json_scan.hpp). Both give an object's
// members in key order, a repeated key once (the DOM's objects are sorted maps).
struct Dom {
  using Value = json;
  static bool object(const json& v) { return v.is_object(); }
  static bool array(const json& v) { return v.is_array(); }
  static bool number(const json& v) { return v.is_number(); }
  static bool null(const json& v) { return v.is_null(); }
  static size_t size(const json& v) { return v.size(); }
  static const json& element(const json& v, size_t i) { return v[i]; }
  template <class F>
  void members(const json& v, int, F&& f) const {
    for (const auto& [k, x] : v.items()) f(std::string_view(k), x);
  }
  // The cell of a scalar into the table (copied: the DOM's values are temporaries).
  static void put(log_reader::FlatTable& t, std::string_view name, const json& v) {
    if (auto c = cell_of(v)) t.set(name, *c);
  }
};

struct View {
  using Value = Node;
  const json_scan::Scan& scan;
  mutable std::vector<std::vector<uint32_t>> order;  // per depth: an object's members in key order
  static bool object(const Node& v) { return v.type == Type::kObject; }
  static bool array(const Node& v) { return v.type == Type::kArray; }
  static bool number(const Node& v) { return v.type == Type::kNumber; }
  static bool null(const Node& v) { return v.type == Type::kNull; }
  static size_t size(const Node& v) { return v.count; }
  const Node& element(const Node& v, size_t i) const { return scan.child(v, i); }
  template <class F>
  void members(const Node& v, int depth, F&& f) const {
    if (order.size() <= static_cast<size_t>(depth)) order.resize(static_cast<size_t>(depth) + 1);
    const auto d = static_cast<size_t>(depth);
    scan.members(v, order[d]);
    for (size_t i = 0; i < order[d].size(); ++i) {  // (by index: a deeper call may grow `order`)
      const Node& x = scan.child(v, order[d][i]);
      f(x.key, x);
    }
  }
  // The cell of a scalar into the table: a view of the text, which outlives the table.
  static void put(log_reader::FlatTable& t, std::string_view name, const Node& v) {
    if (v.type != Type::kNull && v.type != Type::kArray && v.type != Type::kObject)
      t.set_view(name, v.cell);
  }
};

template <class A, class V>
bool is_numeric_array(const A& a, const V& v) {
  if (!A::array(v) || A::size(v) == 0) return false;
  for (size_t i = 0; i < A::size(v); ++i)
    if (!A::number(a.element(v, i)) && !A::null(a.element(v, i))) return false;
  return true;
}

template <class A, class V>
bool is_object_array(const A& a, const V& v) {
  if (!A::array(v) || A::size(v) == 0) return false;
  for (size_t i = 0; i < A::size(v); ++i)
    if (!A::object(a.element(v, i))) return false;
  return true;
}

class Flattener {
 public:
  log_reader::FlatTable table;
  size_t ignored_lists = 0;  // lists of objects left out (processes inside a GPU, ...)

  // One sample object: one row, or one row per element of its list of GPUs.
  template <class A>
  void sample(const A& a, const typename A::Value& obj) {
    const typename A::Value* list = nullptr;
    a.members(obj, 0, [&](std::string_view, const auto& v) {
      if (is_object_array(a, v) && !list) list = &v;
    });
    if (!list) {
      table.begin_row();
      scalars(a, obj, "", 0, nullptr);
      table.drop_empty_row();
      return;
    }
    for (size_t i = 0; i < A::size(*list); ++i) {
      table.begin_row();
      scalars(a, obj, "", 0, list);
      scalars(a, a.element(*list, i), "", 0, nullptr);
      table.drop_empty_row();
    }
  }

  // A sample read in place (json_scan): as sample() makes it of the same object's DOM.
  void sample(const View& view, const Node& obj) {
    if (!known_flat_sample(view.scan, obj)) sample<View>(view, obj);
  }

  // A single object of equal-length number lists (at the top or one level down) with no number
  // of its own: one row per position.
  template <class A>
  bool columnar(const A& a, const typename A::Value& obj) {
    std::vector<std::pair<std::string, const typename A::Value*>> cols;
    size_t length = 0;
    bool ok = true;
    auto take = [&](std::string name, const auto& v) {
      if (!is_numeric_array(a, v)) return;
      if (length != 0 && A::size(v) != length) {
        ok = false;
        return;
      }
      length = A::size(v);
      cols.emplace_back(std::move(name), &v);
    };
    a.members(obj, 0, [&](std::string_view k, const auto& v) {
      if (!ok) return;
      if (A::number(v)) {
        ok = false;
      } else if (A::object(v)) {
        a.members(v, 1, [&](std::string_view k2, const auto& v2) {
          if (ok) take(joined(k, k2), v2);
        });
      } else {
        take(std::string(k), v);
      }
    });
    if (!ok || cols.size() < 2 || length < 2) return false;
    for (size_t i = 0; i < length; ++i) {
      table.begin_row();
      for (const auto& [name, v] : cols) A::put(table, name, a.element(*v, i));
      table.drop_empty_row();
    }
    return true;
  }

 private:
  template <class A>
  void scalars(const A& a, const typename A::Value& obj, const std::string& prefix, int depth,
               const typename A::Value* skip) {
    if (depth > kMaxDepth) return;
    a.members(obj, depth, [&](std::string_view k, const auto& v) {
      if (&v == skip) return;
      const std::string name = joined(prefix, k);
      if (A::object(v)) {
        scalars(a, v, name, depth + 1, nullptr);
      } else if (is_numeric_array(a, v)) {
        for (size_t i = 0; i < A::size(v); ++i)
          A::put(table, joined(name, std::to_string(i)), a.element(v, i));
      } else if (A::array(v)) {
        if (is_object_array(a, v)) ++ignored_lists;
      } else {
        A::put(table, name, v);
      }
    });
  }

  // An object of scalars whose keys are all columns already (W&B's lines after the first): its
  // cells set in the order given, no sorting, no name built. false (and no row) for anything
  // else, and where a key repeats beside a null (only the key order tells which value counts).
  bool known_flat_sample(const json_scan::Scan& scan, const Node& obj) {
    table.begin_row();
    ++sample_id_;
    bool any_null = false, repeated = false;
    columns_.resize(obj.count);
    for (uint32_t i = 0; i < obj.count; ++i) {
      const Node& e = scan.child(obj, i);
      if (e.type == Type::kArray || e.type == Type::kObject) return undo_row();
      any_null = any_null || e.type == Type::kNull;
      const size_t c = table.find(e.key, i);
      if (c == std::string_view::npos) return undo_row();
      columns_[i] = c;
      if (c >= stamp_.size()) stamp_.resize(c + 1, 0);
      repeated = repeated || stamp_[c] == sample_id_;
      stamp_[c] = sample_id_;
    }
    if (repeated && any_null) return undo_row();
    for (uint32_t i = 0; i < obj.count; ++i) {
      const Node& e = scan.child(obj, i);
      if (e.type != Type::kNull) table.set_at(columns_[i], e.cell);
    }
    table.drop_empty_row();
    return true;
  }

  bool undo_row() {
    table.drop_empty_row();  // (nothing was set in it)
    return false;
  }

  // known_flat_sample's scratch: each member's column, the sample that last set each column.
  std::vector<size_t> columns_;
  std::vector<size_t> stamp_;
  size_t sample_id_ = 0;
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

// A JSON object opening at the start of a line inside s: where value_end() would have cut a
// value (the one before it cut short).
bool breaks_at_a_line_start(std::string_view s) {
  for (size_t nl = s.find('\n'); nl != std::string_view::npos && nl + 1 < s.size();
       nl = s.find('\n', nl + 1))
    if (s[nl + 1] == '{') return true;
  return false;
}

// is_prometheus_answer, of a tree read in place.
bool is_prometheus_answer(const json_scan::Scan& scan) {
  const Node& doc = scan.root();
  if (doc.type != Type::kObject) return false;
  const Node *status = nullptr, *data = nullptr;
  for (uint32_t i = 0; i < doc.count; ++i) {  // (a key twice: its last)
    const Node& m = scan.child(doc, i);
    if (m.key == "status") status = &m;
    if (m.key == "data") data = &m;
  }
  if (!status || !data || data->type != Type::kObject) return false;
  for (uint32_t i = 0; i < data->count; ++i)
    if (scan.child(*data, i).key == "result") return true;
  return false;
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
  if (options.map.empty()) flat.table.unread_columns(csv::never_read);
  log_reader::Problem bad;
  std::string framing;
  // One document (an array, an object) or, failing that, one object per line. Read in place
  // where json_scan takes the text, else by nlohmann's DOM, the same way.
  json_scan::Scan scan;
  size_t doc_end = 0;
  const bool in_place = scan.value(body, 0, doc_end) &&
                        body.find_first_not_of(" \t\r\n", doc_end) == std::string_view::npos;
  json doc;
  if (!in_place) doc = json::parse(body.begin(), body.end(), nullptr, false);
  if (in_place) {
    if (is_prometheus_answer(scan)) return read_prometheus_answer(body, origin, options);
    const Node& root = scan.root();
    const View view{scan, {}};
    if (root.type == Type::kArray) {
      framing = "a JSON array of samples";
      for (uint32_t i = 0; i < root.count; ++i) {
        const Node& e = scan.child(root, i);
        if (e.type == Type::kObject) flat.sample(view, e);  // (known_flat_sample first)
      }
    } else if (root.type == Type::kObject) {
      if (flat.columnar(view, root)) {
        framing = "a JSON object of equal-length columns";
      } else {
        framing = "a JSON sample";
        flat.sample(view, root);
      }
    }
  } else if (!doc.is_discarded()) {
    if (is_prometheus_answer(doc)) return read_prometheus_answer(body, origin, options);
    if (doc.is_array()) {
      framing = "a JSON array of samples";
      for (const auto& e : doc)
        if (e.is_object()) flat.sample(Dom{}, e);
    } else if (doc.is_object()) {
      if (flat.columnar(Dom{}, doc)) {
        framing = "a JSON object of equal-length columns";
      } else {
        framing = "a JSON sample";
        flat.sample(Dom{}, doc);
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
      size_t end = 0;
      const bool read_in_place = body[start] == '{' && scan.value(body, start, end) &&
                                 !breaks_at_a_line_start(body.substr(start, end - start));
      if (!read_in_place) end = value_end(body, start);
      const std::string_view chunk = body.substr(start, end - start);
      text::passed(chunk.data());
      flat.table.at_line(line_no);
      if (read_in_place) {
        flat.sample(View{scan, {}}, scan.root());
      } else {
        json v = json::parse(chunk.begin(), chunk.end(), nullptr, false);
        if (v.is_discarded() || !v.is_object())
          log_reader::count_problem(bad, origin, line_no, "not a JSON object: {}", chunk);
        else
          flat.sample(Dom{}, v);
      }
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
  auto rec = read_generic_csv(flat.table, origin, o);
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
