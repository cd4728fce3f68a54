#include "fleet_write.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <memory>

#include <fmt/format.h>

namespace gpudoctor::fleet_bench {
namespace {

constexpr const char* kStates[] = {"working", "lost", "idle_allocated", "free"};

double state_value(const GpuLedger& l, size_t state) {
  switch (state) {
    case 0:
      return l.working_s;
    case 1:
      return l.lost_total_s;
    case 2:
      return l.idle_allocated_s;
    default:
      return l.free_s;
  }
}

std::string label(std::string_view name, std::string_view value) {
  return fmt::format("{}=\"{}\"", name, escape_label_value(value));
}

std::string escape_help(std::string_view v) {  // OpenMetrics: backslash, line feed, quote
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

// Buffered lines to a file.
class Out {
 public:
  explicit Out(std::FILE* f) : f_(f) { buf_.reserve(kFlush + 4096); }
  ~Out() { flush(); }
  Out(const Out&) = delete;
  Out& operator=(const Out&) = delete;

  // The family's HELP and TYPE lines, as serve's OpenMetrics writer names them: counters without
  // _total, info families without _info; a counter without _total is typed unknown.
  void family(std::string_view sample_name, std::string_view type, std::string_view help) {
    std::string_view name = sample_name, t = type;
    auto ends = [&](std::string_view s) {
      return name.size() > s.size() && name.substr(name.size() - s.size()) == s;
    };
    if (type == "counter") {
      if (ends("_total"))
        name.remove_suffix(6);
      else
        t = "unknown";
    } else if (ends("_info")) {
      name.remove_suffix(5);
      t = "info";
    }
    if (!help.empty())
      fmt::format_to(std::back_inserter(buf_), "# HELP {} {}\n", name, escape_help(help));
    fmt::format_to(std::back_inserter(buf_), "# TYPE {} {}\n", name, t);
  }
  void sample(std::string_view name, std::string_view labels, double value, int64_t t_s) {
    buf_ += name;
    buf_ += '{';
    buf_ += labels;
    buf_ += "} ";
    char num[64];
    if (std::isnan(value)) {
      buf_ += "NaN";
    } else {
      if (value == 0) value = 0;  // never -0
      const auto r = std::to_chars(num, num + sizeof num, value);
      buf_.append(num, r.ptr);
    }
    buf_ += ' ';
    const auto r = std::to_chars(num, num + sizeof num, t_s);
    buf_.append(num, r.ptr);
    buf_ += '\n';
    ++samples_;
    if (buf_.size() >= kFlush) flush();
  }
  void raw(std::string_view s) { buf_ += s; }
  bool flush() {
    if (!buf_.empty() && std::fwrite(buf_.data(), 1, buf_.size(), f_) != buf_.size()) ok_ = false;
    buf_.clear();
    return ok_;
  }
  size_t samples() const { return samples_; }
  bool ok() const { return ok_; }

 private:
  static constexpr size_t kFlush = 8 << 20;
  std::FILE* f_;
  std::string buf_;
  size_t samples_ = 0;
  bool ok_ = true;
};

double ms_rounded(double seconds) {  // counters to the millisecond: shorter lines, same sums
  return std::round(seconds * 1000) / 1000;
}

const MetricFamilyDoc& family_doc(std::string_view name) {
  static const std::vector<MetricFamilyDoc> docs = metric_families(ExportOptions{});
  for (const auto& d : docs)
    if (d.name == name) return d;
  static const MetricFamilyDoc none;
  return none;
}

// The owner's labels on gpudoctor_gpu_owner_info as Prometheus stores them after a default scrape.
std::string owner_info_labels(const std::string& head, const Owner& ow) {
  std::string s = head + "," + label("owner_kind", owner_kind_code(ow.kind));
  for (const auto& [name, v] : owner_label_values(ow, ExportOptions::default_owner_labels())) {
    if (v.empty()) continue;  // Prometheus keeps no empty label
    s += ',';
    s += label(name == "job" ? "exported_job" : name, v);
  }
  return s;
}

// dcgm-exporter's labels for a GPU held by `ow`: hpc_job (its job mapping) or pod, namespace and
// container (its Kubernetes pod mapping).
std::string dcgm_owner_labels(const Owner& ow) {
  if (ow.kind == OwnerKind::kSlurmJob) return "," + label("hpc_job", ow.id);
  if (ow.kind == OwnerKind::kK8sPod)
    return "," + label("pod", ow.pod) + "," + label("namespace", ow.pod_namespace) + "," +
           label("container", ow.container);
  return "";
}

std::string key_of(std::initializer_list<std::string_view> parts) {
  std::string k;
  bool first = true;
  for (auto p : parts) {
    if (!first) k += '\x1f';
    first = false;
    k += p;
  }
  return k;
}

nlohmann::ordered_json totals_json(const GpuLedger& l) {
  nlohmann::ordered_json j;
  nlohmann::ordered_json states, causes;
  for (size_t s = 0; s < 4; ++s) states[kStates[s]] = std::round(state_value(l, s) / 3.6) / 1000;
  for (size_t c = 0; c < kCauseCount; ++c)
    if (static_cast<Cause>(c) != Cause::kHealthy)
      causes[std::string(cause_code(static_cast<Cause>(c)))] = std::round(l.lost_s[c] / 3.6) / 1000;
  j["gpu_hours"] = states;
  j["lost_gpu_hours"] = causes;
  double lost = 0;
  for (size_t c = 0; c < kCauseCount; ++c) lost += l.lost_s[c];
  j["lost_gpu_hours_total"] = std::round(lost / 3.6) / 1000;
  return j;
}

}  // namespace

ChunkWriter::ChunkWriter(const std::vector<HostPlan>& plan,
                         const std::vector<std::vector<DeviceInfo>>& devices, const FleetOptions& o)
    : plan_(plan), devices_(devices), o_(o) {
  for (size_t h = 0; h < plan.size(); ++h) {
    const std::string& host = plan[h].hostname;
    const std::string serve_target =
        label("instance", host + ":9835") + "," + label("job", "gpudoctor");
    up_.push_back(serve_target);
    dcgm_up_.push_back(label("instance", host + ":9400") + "," + label("job", "dcgm-exporter"));
    own_.emplace_back();
    info_.emplace_back();
    dcgm_.emplace_back();
    for (const DeviceInfo& d : devices[h]) {
      const std::string head = label("gpu", fmt::format("{}", d.index)) + "," +
                               label("UUID", d.uuid) + "," + label("pci_bus_id", d.pci_bus_id) +
                               "," + label("device", fmt::format("nvidia{}", d.index));
      own_[h].push_back(head + "," + label("Hostname", host) + "," + serve_target);
      info_[h].push_back(own_[h].back() + "," + label("model_name", d.name) + "," +
                         label("architecture", architecture_name(d.architecture)) + "," +
                         label("driver_version", "550.54.15"));
      dcgm_[h].push_back(head + "," + label("modelName", d.name) + "," + label("Hostname", host) +
                         "," + label("DCGM_FI_DRIVER_VERSION", "550.54.15") + "," +
                         label("instance", host + ":9400") + "," + label("job", "dcgm-exporter"));
    }
  }
}

void ChunkWriter::account(int64_t, const std::vector<HostChunk>& chunks) {
  for (size_t h = 0; h < chunks.size(); ++h) {
    const HostChunk& c = chunks[h];
    for (size_t g = 0; g < c.gpus.size(); ++g)
      for (size_t s = 0; s < c.up.size(); ++s) {
        if (!c.up[s]) continue;
        const GpuLedger& d = c.gpus[g].delta[s];
        add_ledger(fleet_, d);
        add_ledger(by_host_[plan_[h].hostname], d);
        const auto& owners = plan_[h].epochs[static_cast<size_t>(c.epoch[s])].owners[g];
        GpuLedger share = d;  // split evenly among the owners
        const double f = owners.empty() ? 1.0 : 1.0 / static_cast<double>(owners.size());
        for (auto& v : share.lost_s) v *= f;
        share.working_s *= f, share.lost_total_s *= f, share.idle_allocated_s *= f,
            share.free_s *= f;
        if (owners.empty()) {
          add_ledger(by_job_[key_of({"none", "", ""})], share);
          add_ledger(by_user_[""], share);
          add_ledger(by_namespace_[""], share);
          add_ledger(by_pod_[key_of({"", ""})], share);
          continue;
        }
        for (const Owner& ow : owners) {
          const auto lv = owner_label_values(ow, {"job", "pod", "namespace", "user"});
          add_ledger(by_job_[key_of({owner_kind_code(ow.kind), lv[0].second, lv[3].second})],
                     share);
          add_ledger(by_user_[lv[3].second], share);
          add_ledger(by_namespace_[lv[2].second], share);
          add_ledger(by_pod_[key_of({lv[2].second, lv[1].second})], share);
        }
      }
  }
}

Result<size_t> ChunkWriter::write(const std::string& path, int64_t cs,
                                  const std::vector<HostChunk>& chunks) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!f) return failure(fmt::format("cannot write {}", path));
  Out out(f.get());
  const int64_t interval_ms = int64_t{o_.interval_s} * 1000;
  auto t_of = [&](size_t s) { return (cs + static_cast<int64_t>(s) * interval_ms) / 1000; };
  const size_t n = chunks.empty() ? 0 : chunks[0].up.size();

  out.family("up", "gauge", "");
  for (size_t h = 0; h < chunks.size(); ++h)
    for (size_t s = 0; s < n; ++s) out.sample("up", up_[h], chunks[h].up[s], t_of(s));
  for (size_t h = 0; h < chunks.size(); ++h)  // dcgm-exporter's target, while it has series
    for (size_t s = 0; s < n; ++s)
      if (chunks[h].dcgm[s]) out.sample("up", dcgm_up_[h], 1, t_of(s));

  auto per_gpu = [&](const char* name, auto&& each) {
    const MetricFamilyDoc& doc = family_doc(name);
    out.family(name, doc.type, doc.help);
    for (size_t h = 0; h < chunks.size(); ++h)
      for (size_t g = 0; g < chunks[h].gpus.size(); ++g) each(h, g);
  };
  per_gpu("gpudoctor_gpu_info", [&](size_t h, size_t g) {
    for (size_t s = 0; s < n; ++s)
      if (chunks[h].up[s]) out.sample("gpudoctor_gpu_info", info_[h][g], 1, t_of(s));
  });
  per_gpu("gpudoctor_gpu_owner_info", [&](size_t h, size_t g) {
    const DeviceInfo& d = devices_[h][g];
    const std::string head = label("gpu", fmt::format("{}", d.index)) + "," +
                             label("UUID", d.uuid) + "," + label("Hostname", plan_[h].hostname) +
                             "," + up_[h];
    for (size_t s0 = 0; s0 < n;) {  // runs of one epoch
      size_t s1 = s0;
      while (s1 < n && chunks[h].epoch[s1] == chunks[h].epoch[s0]) ++s1;
      const int ei = chunks[h].epoch[s0];
      if (ei >= 0)
        for (const Owner& ow : plan_[h].epochs[static_cast<size_t>(ei)].owners[g]) {
          const std::string l = owner_info_labels(head, ow);
          for (size_t s = s0; s < s1; ++s)
            if (chunks[h].up[s]) out.sample("gpudoctor_gpu_owner_info", l, 1, t_of(s));
        }
      s0 = s1;
    }
  });
  per_gpu("gpudoctor_lost_gpu_seconds_total", [&](size_t h, size_t g) {
    for (size_t c = 0; c < kCauseCount; ++c) {
      if (static_cast<Cause>(c) == Cause::kHealthy) continue;
      const std::string l = own_[h][g] + "," + label("cause", cause_code(static_cast<Cause>(c)));
      for (size_t s = 0; s < n; ++s)
        if (chunks[h].up[s])
          out.sample("gpudoctor_lost_gpu_seconds_total", l,
                     ms_rounded(chunks[h].gpus[g].ledger[s].lost_s[c]), t_of(s));
    }
  });
  per_gpu("gpudoctor_gpu_seconds_total", [&](size_t h, size_t g) {
    for (size_t st = 0; st < 4; ++st) {
      const std::string l = own_[h][g] + "," + label("state", kStates[st]);
      for (size_t s = 0; s < n; ++s)
        if (chunks[h].up[s])
          out.sample("gpudoctor_gpu_seconds_total", l,
                     ms_rounded(state_value(chunks[h].gpus[g].ledger[s], st)), t_of(s));
    }
  });

  bool any_dcgm = false;
  for (const auto& c : chunks)
    for (uint8_t d : c.dcgm) any_dcgm = any_dcgm || d;
  if (any_dcgm)
    for (size_t fi = 0; fi < kDcgmFields.size(); ++fi) {
      const std::string name = dcgm_family_name(fi);
      const bool counter = kDcgmFields[fi] && *kDcgmFields[fi] == Field::kEnergy;
      out.family(
          name, counter ? "counter" : "gauge",
          kDcgmFields[fi] ? info(*kDcgmFields[fi]).meaning : "Framebuffer memory free (in MiB).");
      for (size_t h = 0; h < chunks.size(); ++h)
        for (size_t g = 0; g < chunks[h].gpus.size() && plan_[h].dcgm; ++g)
          for (size_t s0 = 0; s0 < n;) {
            size_t s1 = s0;
            while (s1 < n && chunks[h].epoch[s1] == chunks[h].epoch[s0]) ++s1;
            const int ei = chunks[h].epoch[s0];
            std::vector<std::string> variants;
            if (ei >= 0)
              for (const Owner& ow : plan_[h].epochs[static_cast<size_t>(ei)].owners[g])
                variants.push_back(dcgm_[h][g] + dcgm_owner_labels(ow));
            if (variants.empty()) variants.push_back(dcgm_[h][g]);
            for (const auto& l : variants)
              for (size_t s = s0; s < s1; ++s) {
                const double v = chunks[h].gpus[g].dcgm[s][fi];
                if (chunks[h].dcgm[s] && !std::isnan(v)) out.sample(name, l, v, t_of(s));
              }
            s0 = s1;
          }
    }
  out.raw("# EOF\n");
  if (!out.flush()) return failure(fmt::format("writing {} failed (disk full?)", path));
  account(cs, chunks);
  return out.samples();
}

nlohmann::ordered_json ChunkWriter::truth() const {
  nlohmann::ordered_json j;
  j["note"] =
      "GPU-hours as the ledger counted them (every scrape's increase, restarts included), a "
      "GPU's hours split evenly among the owners it had at that scrape; 'none': no owner";
  j["fleet"] = totals_json(fleet_);
  auto table = [&](const std::map<std::string, GpuLedger>& m,
                   std::initializer_list<const char*> fields) {
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const auto& [k, l] : m) {
      nlohmann::ordered_json row;
      size_t pos = 0;
      for (const char* field : fields) {
        const size_t end = std::min(k.find('\x1f', pos), k.size());
        row[field] = pos <= k.size() ? k.substr(pos, end - pos) : std::string();
        pos = end + 1;
      }
      const nlohmann::ordered_json totals = totals_json(l);
      for (const auto& [kk, v] : totals.items()) row[kk] = v;
      rows.push_back(std::move(row));
    }
    std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
      return a["lost_gpu_hours_total"].template get<double>() >
             b["lost_gpu_hours_total"].template get<double>();
    });
    return rows;
  };
  j["by_job"] = table(by_job_, {"owner_kind", "job", "user"});
  j["by_user"] = table(by_user_, {"user"});
  j["by_namespace"] = table(by_namespace_, {"namespace"});
  j["by_pod"] = table(by_pod_, {"namespace", "pod"});
  j["by_host"] = table(by_host_, {"Hostname"});
  return j;
}

}  // namespace gpudoctor::fleet_bench
