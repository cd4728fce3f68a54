// Prometheus' answers read into series and the series into a Recording: the JSON of the HTTP API
// (query, query_range) read with nlohmann's SAX interface straight into PromSeries, so that an
// answer of millions of points (fleet's range queries over a week of 1,000 GPUs) costs the points
// and not a JSON tree several times their size; and the series grouped into GPUs under
// dcgm-exporter's or gpudoctor's names. The client (prometheus/) fetches the answers; saved answers
// (formats/json_samples) and expositions (formats/prom_text) come here without it.
#include "formats/prom_series.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <set>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace gpudoctor {
namespace {

// Series the reader understands beyond the catalogue's names.
enum class Extra { kNone, kFbFree, kFbReserved, kGpuInfo, kGpuLost, kOwnerInfo };

struct NameInfo {
  std::optional<Field> field;
  double scale = 1;   // catalogue value = metric value * scale
  bool dcgm = false;  // DCGM's name: preferred when both are there
  Extra extra = Extra::kNone;
};

const std::unordered_map<std::string, NameInfo>& name_table() {
  static const auto table = [] {
    std::unordered_map<std::string, NameInfo> t;
    for (const auto& fi : all_fields()) {
      if (!fi.dcgm_name.empty()) t[std::string(fi.dcgm_name)] = {fi.field, fi.dcgm_scale, true};
      t[std::string(fi.prom_name)] = {fi.field, prom_scale(fi)};
    }
    // The name DCGM used for field 112 before 3.3.
    t["DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"] = {Field::kClockEventReasons, 1, true};
    t["DCGM_FI_DEV_FB_FREE"] = {std::nullopt, 1, true, Extra::kFbFree};
    t["DCGM_FI_DEV_FB_RESERVED"] = {std::nullopt, 1, true, Extra::kFbReserved};
    t["gpudoctor_gpu_info"] = {std::nullopt, 1, false, Extra::kGpuInfo};
    t["gpudoctor_gpu_lost"] = {std::nullopt, 1, false, Extra::kGpuLost};
    t["gpudoctor_gpu_owner_info"] = {std::nullopt, 1, false, Extra::kOwnerInfo};
    return t;
  }();
  return table;
}

std::string label_of(const std::map<std::string, std::string>& labels, const char* a,
                     const char* b = nullptr) {
  if (auto it = labels.find(a); it != labels.end() && !it->second.empty()) return it->second;
  if (b)
    if (auto it = labels.find(b); it != labels.end()) return it->second;
  return "";
}

struct GpuKey {
  std::string host;
  long gpu = 0;
  std::string uuid;
};

bool looks_like_uid(const std::string& s) {
  return s.size() == 36 && s[8] == '-' && s[13] == '-' && s[18] == '-' && s[23] == '-';
}

// The owner a series names: gpudoctor_gpu_owner_info's labels, or the job and pod labels that
// dcgm-exporter adds to every series (its HPC job mapping: hpc_job; its Kubernetes mapping: pod,
// namespace, container). A scrape that does not honour the target's labels keeps its own job (the
// scrape job), and through the Prometheus operator its pod and namespace, and renames the
// exporter's to exported_job, exported_pod, ...: those come first.
std::optional<Owner> owner_of_series(const std::map<std::string, std::string>& all,
                                     bool owner_info) {
  std::map<std::string, std::string> labels = all;
  for (const char* name : {"job", "step", "pod", "namespace", "container", "user"})
    if (auto it = all.find(std::string("exported_") + name); it != all.end() && !it->second.empty())
      labels[name] = it->second;
  Owner o;
  if (owner_info) {
    const auto kind = owner_kind_from_code(label_of(labels, "owner_kind"));
    if (!kind) return std::nullopt;
    o.kind = *kind;
    o.source = "gpudoctor_gpu_owner_info";
    o.step = label_of(labels, "step");
    o.pod_namespace = label_of(labels, "namespace");
    o.container = label_of(labels, "container");
    o.user = label_of(labels, "user");
    switch (o.kind) {
      case OwnerKind::kSlurmJob:
      case OwnerKind::kSystemdUnit:
        o.id = label_of(labels, "job");
        break;
      case OwnerKind::kK8sPod:
        o.id = label_of(labels, "pod");
        if (!looks_like_uid(o.id)) o.pod = o.id;
        break;
      case OwnerKind::kContainer:
        o.id = o.container;
        break;
      case OwnerKind::kProcess:
        break;
    }
    if (o.id.empty() && o.kind != OwnerKind::kProcess) return std::nullopt;
    return o;
  }
  if (const std::string job = label_of(labels, "hpc_job"); !job.empty()) {
    o.kind = OwnerKind::kSlurmJob;
    o.id = job;
    o.source = "dcgm-exporter hpc_job label";
    return o;
  }
  if (const std::string pod = label_of(labels, "pod"); !pod.empty()) {
    o.kind = OwnerKind::kK8sPod;
    o.id = pod;
    o.pod = pod;
    o.pod_namespace = label_of(labels, "namespace");
    o.container = label_of(labels, "container");
    o.source = "dcgm-exporter pod label";
    return o;
  }
  return std::nullopt;
}

std::optional<double> parse_value(std::string_view s) {
  if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (s == "+Inf" || s == "Inf") return std::numeric_limits<double>::infinity();
  if (s == "-Inf") return -std::numeric_limits<double>::infinity();
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  double v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// The answer's shape: {"status": ..., "errorType": ..., "error": ..., "data": {"resultType": ...,
// "result": [{"metric": {...}, "value": [t, "v"]} or {"metric": {...}, "values": [[t, "v"], ...]},
// ...]}}. Anything else in it is skipped. Points are checked as they come: [number, string], a
// time within Unix seconds 0..1e11.
class AnswerReader : public nlohmann::json_sax<nlohmann::json> {
 public:
  std::vector<PromSeries> out;
  std::string status, error_type, error;
  bool status_string = false;
  bool has_result = false;  // data.result is an array
  bool data_object = false;
  bool bad_point = false;
  bool root_object = false;

  bool null() override { return scalar(); }
  bool boolean(bool) override { return scalar(); }
  bool number_integer(number_integer_t v) override { return number(static_cast<double>(v)); }
  bool number_unsigned(number_unsigned_t v) override { return number(static_cast<double>(v)); }
  bool number_float(number_float_t v, const string_t&) override { return number(v); }
  bool binary(binary_t&) override { return scalar(); }

  bool string(string_t& v) override {
    if (misplaced()) return false;
    if (stack_.size() == 1) {
      if (key_ == "status") {
        status = v;
        status_string = true;
      } else if (key_ == "errorType") {
        error_type = v;
      } else if (key_ == "error") {
        error = v;
      }
      return true;
    }
    if (in_metric()) {
      out.back().labels[key_] = v;
      return true;
    }
    if (Frame* p = point_frame()) {
      if (p->count == 1 && p->time_ok) {
        const auto value = parse_value(v);
        if (value) {
          p->value = *value;
          p->value_ok = true;
        }
      }
      ++p->count;
      return true;
    }
    return true;
  }

  bool start_object(std::size_t) override {
    if (misplaced()) return false;
    const size_t d = stack_.size();
    Frame f;
    f.object = true;
    if (d == 0) {
      root_object = true;
      f.role = Role::kRoot;
    } else if (d == 1 && top().role == Role::kRoot && key_ == "data") {
      f.role = Role::kData;
      data_object = true;
    } else if (d == 3 && top().role == Role::kResult) {
      f.role = Role::kSeries;
      out.emplace_back();
    } else if (d == 4 && top().role == Role::kSeries && key_ == "metric") {
      f.role = Role::kMetric;
    }
    if (Frame* p = point_frame()) ++p->count;  // an object inside a point: not a point
    push(f);
    return true;
  }
  bool key(string_t& k) override {
    key_ = k;
    return true;
  }
  bool end_object() override {
    pop();
    return true;
  }
  bool start_array(std::size_t) override {
    const size_t d = stack_.size();
    Frame f;
    if (d == 2 && top().role == Role::kData && key_ == "result") {
      f.role = Role::kResult;
      has_result = true;
      out.clear();
    } else if (d == 4 && top().role == Role::kSeries && key_ == "values") {
      f.role = Role::kValues;
    } else if ((d == 4 && top().role == Role::kSeries && key_ == "value") ||
               (d == 5 && top().role == Role::kValues)) {
      f.role = Role::kPoint;
    } else if (Frame* p = point_frame()) {
      ++p->count;  // an array inside a point: not a point
    }
    push(f);
    return true;
  }
  bool end_array() override {
    const Frame f = top();
    pop();
    if (f.role == Role::kPoint) {
      if (f.count != 2 || !f.time_ok || !f.value_ok) {
        bad_point = true;
        return false;  // stop: the answer is refused whole
      }
      out.back().points.emplace_back(static_cast<int64_t>(std::llround(f.time * 1000)), f.value);
    }
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  enum class Role { kOther, kRoot, kData, kResult, kSeries, kMetric, kValues, kPoint };
  struct Frame {
    bool object = false;
    Role role = Role::kOther;
    size_t count = 0;  // a point's elements so far
    double time = 0, value = 0;
    bool time_ok = false, value_ok = false;
  };
  std::vector<Frame> stack_;
  std::string key_;

  Frame& top() { return stack_.back(); }
  void push(const Frame& f) { stack_.push_back(f); }
  void pop() { stack_.pop_back(); }
  bool in_metric() const { return !stack_.empty() && stack_.back().role == Role::kMetric; }
  // The point being read, when the next value is one of its elements.
  Frame* point_frame() { return !stack_.empty() && top().role == Role::kPoint ? &top() : nullptr; }
  // A value where a point should be (an element of "values", or "value" itself) that is no array.
  bool misplaced() {
    if (stack_.empty()) return false;
    const Role r = top().role;
    if (r == Role::kValues || (r == Role::kSeries && key_ == "value")) bad_point = true;
    return bad_point;
  }
  bool scalar() {
    if (misplaced()) return false;
    if (Frame* p = point_frame()) ++p->count;
    return true;
  }
  bool number(double v) {
    if (misplaced()) return false;
    if (Frame* p = point_frame()) {
      // Unix seconds; outside 1970..5138 it is no Prometheus timestamp (and would overflow ms).
      if (p->count == 0 && v >= 0 && v < 1e11) {
        p->time = v;
        p->time_ok = true;
      }
      ++p->count;
    }
    return true;
  }
};
}  // namespace

Result<std::vector<PromSeries>> parse_prometheus_answer(std::string_view body) {
  AnswerReader reader;
  const bool ok = nlohmann::json::sax_parse(body.begin(), body.end(), &reader,
                                            nlohmann::json::input_format_t::json, true);
  if (reader.bad_point) return failure("a sample in the answer is not [unix time, \"value\"]");
  if (!ok || !reader.root_object)
    return failure("the answer is not the JSON of Prometheus' HTTP API");
  if (!reader.status_string || reader.status != "success")
    return failure(fmt::format("Prometheus answered {}: {}",
                               reader.error_type.empty() ? "error" : reader.error_type,
                               reader.error.empty() ? "(no message)" : reader.error));
  if (!reader.data_object || !reader.has_result) return failure("the answer has no data.result");
  return std::move(reader.out);
}

std::vector<std::string> prometheus_metric_names() {
  std::vector<std::string> dcgm, own;
  for (const auto& [name, info] : name_table()) (info.dcgm ? dcgm : own).push_back(name);
  std::sort(dcgm.begin(), dcgm.end());
  std::sort(own.begin(), own.end());
  dcgm.insert(dcgm.end(), own.begin(), own.end());
  return dcgm;
}

Recording series_by_gpu(const std::vector<PromSeries>& series, const std::string& source) {
  const auto& names = name_table();
  // GPUs by key (UUID, else host and gpu index), in first-seen order, then sorted.
  std::map<std::string, size_t> index_of_key;
  std::vector<GpuKey> keys;
  std::vector<std::vector<const PromSeries*>> per_gpu;
  for (const auto& s : series) {
    const auto name_it = names.find(label_of(s.labels, "__name__"));
    if (name_it == names.end() || s.points.empty()) continue;
    const std::string gpu = label_of(s.labels, "gpu");
    const std::string uuid = label_of(s.labels, "UUID", "uuid");
    if (gpu.empty() && uuid.empty()) continue;
    GpuKey k{label_of(s.labels, "Hostname", "hostname"), std::atol(gpu.c_str()), uuid};
    if (k.host.empty()) k.host = label_of(s.labels, "instance");
    const std::string key = !uuid.empty() ? uuid : k.host + "/" + gpu;
    auto [it, fresh] = index_of_key.emplace(key, keys.size());
    if (fresh) {
      keys.push_back(k);
      per_gpu.emplace_back();
    }
    per_gpu[it->second].push_back(&s);
  }
  std::vector<size_t> order(keys.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::tie(keys[a].host, keys[a].gpu, keys[a].uuid) <
           std::tie(keys[b].host, keys[b].gpu, keys[b].uuid);
  });
  std::set<std::string> hosts;
  for (const auto& k : keys) hosts.insert(k.host);

  Recording rec;
  rec.source = source;
  if (hosts.size() == 1) rec.system.hostname = *hosts.begin();
  int64_t start = std::numeric_limits<int64_t>::max();
  for (const auto& list : per_gpu)
    for (const auto* s : list) start = std::min(start, s->points.front().first);
  rec.start_unix_ms = keys.empty() ? 0 : start;

  for (size_t n = 0; n < order.size(); ++n) {
    const size_t gi = order[n];
    const GpuKey& k = keys[gi];
    GpuSeries g;
    g.info.index = static_cast<unsigned>(k.gpu);
    g.info.uuid = k.uuid;
    g.host = k.host;
    // The GPU's times: every series' times, in order, once each. The series of one exporter are
    // scraped together and nearly always share their times: then those are the GPU's.
    std::vector<int64_t> times;
    const auto& first = per_gpu[gi].front()->points;
    auto same_times = [&](const PromSeries* s) {
      return std::equal(s->points.begin(), s->points.end(), first.begin(), first.end(),
                        [](const auto& a, const auto& b) { return a.first == b.first; });
    };
    times.reserve(first.size());
    for (const auto& p : first) times.push_back(p.first);
    const bool increasing =
        std::adjacent_find(times.begin(), times.end(), std::greater_equal<>()) == times.end();
    if (!increasing || !std::all_of(per_gpu[gi].begin(), per_gpu[gi].end(), same_times)) {
      times.clear();
      for (const auto* s : per_gpu[gi])
        for (const auto& p : s->points) times.push_back(p.first);
      std::sort(times.begin(), times.end());
      times.erase(std::unique(times.begin(), times.end()), times.end());
    }
    for (int64_t t : times) g.time_s.push_back(static_cast<double>(t - rec.start_unix_ms) / 1000.0);
    std::vector<double> fb_free(times.size(), kMissing), fb_reserved(times.size(), kMissing);
    std::vector<bool> has_value(times.size(), false);
    // Owners: the times each was named at, by owner.
    std::vector<std::pair<Owner, std::vector<int64_t>>> owner_times;
    auto owner_seen = [&](Owner o, const PromSeries& s) {
      auto it = std::find_if(owner_times.begin(), owner_times.end(),
                             [&](const auto& e) { return e.first == o; });
      if (it == owner_times.end()) {
        owner_times.emplace_back(std::move(o), std::vector<int64_t>{});
        it = owner_times.end() - 1;
      }
      for (const auto& [t, v] : s.points)
        if (!std::isnan(v)) it->second.push_back(t);
    };
    // DCGM's names first: where both are present they agree, and DCGM's is what dcgm-exporter
    // users have.
    std::vector<const PromSeries*> sorted = per_gpu[gi];
    std::stable_sort(sorted.begin(), sorted.end(), [&](const PromSeries* a, const PromSeries* b) {
      return names.at(label_of(a->labels, "__name__")).dcgm >
             names.at(label_of(b->labels, "__name__")).dcgm;
    });
    for (const auto* s : sorted) {
      const NameInfo& ni = names.at(label_of(s->labels, "__name__"));
      if (g.info.name.empty()) g.info.name = label_of(s->labels, "modelName", "model_name");
      if (g.info.pci_bus_id.empty()) g.info.pci_bus_id = label_of(s->labels, "pci_bus_id");
      if (rec.system.driver_version.empty())
        rec.system.driver_version = label_of(s->labels, "DCGM_FI_DRIVER_VERSION", "driver_version");
      if (ni.extra == Extra::kOwnerInfo || ni.dcgm)
        if (auto o = owner_of_series(s->labels, ni.extra == Extra::kOwnerInfo))
          owner_seen(std::move(*o), *s);
      if (ni.extra == Extra::kGpuInfo) {
        const std::string arch = label_of(s->labels, "architecture");
        if (!arch.empty()) g.info.architecture = architecture_from_name(arch);
        continue;
      }
      if (ni.extra == Extra::kOwnerInfo) continue;
      std::vector<double>* col = ni.field ? &g.column_for_write(*ni.field) : nullptr;
      size_t next_row = 0;  // (points in time order: the row after the last point's, mostly)
      for (const auto& [t, v] : s->points) {
        const size_t row =
            next_row < times.size() && times[next_row] == t
                ? next_row
                : static_cast<size_t>(std::lower_bound(times.begin(), times.end(), t) -
                                      times.begin());
        next_row = row + 1;
        if (ni.extra == Extra::kGpuLost) {
          if (v == 1 && (!g.lost_at_s || g.time_s[row] < *g.lost_at_s)) g.lost_at_s = g.time_s[row];
          continue;
        }
        if (std::isnan(v)) continue;
        if (ni.extra == Extra::kFbFree) {
          fb_free[row] = v;
        } else if (ni.extra == Extra::kFbReserved) {
          fb_reserved[row] = v;
        } else if (col && is_missing((*col)[row])) {
          (*col)[row] = v * ni.scale;
          has_value[row] = true;
        }
      }
    }
    // Each owner's times become spans: a gap of more than a few samples ends one.
    if (!owner_times.empty()) {
      std::vector<int64_t> steps;
      for (size_t i = 1; i < times.size(); ++i) steps.push_back(times[i] - times[i - 1]);
      int64_t step = 0;
      if (!steps.empty()) {
        std::nth_element(steps.begin(), steps.begin() + static_cast<long>(steps.size() / 2),
                         steps.end());
        step = steps[steps.size() / 2];
      }
      const int64_t gap = std::max<int64_t>(3 * step, 1);
      for (auto& [o, ts] : owner_times) {
        std::sort(ts.begin(), ts.end());
        ts.erase(std::unique(ts.begin(), ts.end()), ts.end());
        for (size_t i = 0; i < ts.size();) {
          size_t j = i;
          while (j + 1 < ts.size() && ts[j + 1] - ts[j] <= gap) ++j;
          g.owners.push_back({o, static_cast<double>(ts[i] - rec.start_unix_ms) / 1000.0,
                              static_cast<double>(ts[j] - rec.start_unix_ms) / 1000.0});
          i = j + 1;
        }
      }
      std::sort(g.owners.begin(), g.owners.end(),
                [](const OwnerSpan& a, const OwnerSpan& b) { return a.first_s < b.first_s; });
    }
    // dcgm-exporter's defaults have used and free memory, not the total.
    if (!g.has(Field::kMemTotal) && g.has(Field::kMemUsed)) {
      const auto& used = *g.column(Field::kMemUsed);
      bool any = false;
      std::vector<double> total(times.size(), kMissing);
      for (size_t r = 0; r < times.size(); ++r)
        if (!is_missing(used[r]) && !is_missing(fb_free[r])) {
          total[r] = used[r] + fb_free[r] + (is_missing(fb_reserved[r]) ? 0 : fb_reserved[r]);
          any = true;
        }
      if (any) g.column_for_write(Field::kMemTotal) = std::move(total);
    }
    // Rows where only a static field or nothing had a value (a GPU gone from some scrapes).
    std::vector<size_t> kept;
    for (size_t r = 0; r < times.size(); ++r)
      if (has_value[r]) kept.push_back(r);
    if (kept.size() < times.size()) keep_rows(g, kept);
    if (!kept.empty()) rec.gpus.push_back(std::move(g));
  }
  return rec;
}

void number_across_hosts(Recording& rec) {
  std::set<std::string> hosts;
  for (const auto& g : rec.gpus) hosts.insert(g.host);
  rec.system.hostname = hosts.size() == 1 ? *hosts.begin() : "";
  if (hosts.size() < 2) return;
  for (size_t n = 0; n < rec.gpus.size(); ++n) {
    GpuSeries& g = rec.gpus[n];
    rec.notes.push_back(fmt::format("GPU {} is {} gpu {}{}", n, g.host, g.info.index,
                                    g.info.uuid.empty() ? "" : " (" + g.info.uuid + ")"));
    g.info.index = static_cast<unsigned>(n);
  }
}

Recording recording_from_series(const std::vector<PromSeries>& series, const std::string& source) {
  Recording rec = series_by_gpu(series, source);
  number_across_hosts(rec);
  return rec;
}

}  // namespace gpudoctor
