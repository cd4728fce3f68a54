// fleet's first path: gpudoctor serve's ledger, joined with the owner info and summed by the
// server. Every sum is a subquery over the span at a step S of increase(...[S]), so that each
// step's GPU seconds go to the owners the GPU had at that step; a GPU with several owners at a
// step gives each an equal share (so rows add up to the fleet's total); GPU time no owner held is
// its own row. The number of queries depends on the causes found, not on the number of GPUs.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "core/duration.hpp"
#include "fleet/fleet.hpp"
#include "formats/text.hpp"
#include "net/http_client.hpp"

namespace gpudoctor {
namespace {

constexpr std::array<std::string_view, 4> kStates = {"working", "lost", "idle_allocated", "free"};

struct Ctx {
  Ctx(const FleetOptions& options, std::string matchers) : o(options), sel(std::move(matchers)) {}
  const FleetOptions& o;
  std::string sel;     // ",matchers" or ""
  int64_t span_s = 0;  // the span, whole seconds
  int64_t step_s = 0;  // S
  size_t queries = 0;
  // Owner label name -> the name the server has it under (exported_job where a scrape renamed it).
  std::map<std::string, std::string> stored;

  Result<std::vector<PromSeries>> instant(const std::string& expr) {
    ++queries;
    return prometheus_api(
        o.prom, "query",
        "query=" + net::url_encode(expr) + "&time=" + prom_time_param(o.prom.end_unix_ms));
  }
  std::string metric(std::string_view name, const std::string& extra = "") const {
    std::string m = extra;
    if (!sel.empty()) m += (m.empty() ? "" : ",") + sel.substr(1);
    return fmt::format("{}{{{}}}", name, m);
  }
  std::string labels(const std::vector<std::string>& names) const {
    std::string out;
    for (const auto& n : names) {
      const auto it = stored.find(n);
      out += (out.empty() ? "" : ", ") + (it == stored.end() ? n : it->second);
    }
    return out;
  }
};

double value_of(const PromSeries& s) {
  return s.points.empty() || !std::isfinite(s.points.back().second) ? 0 : s.points.back().second;
}

std::string label(const PromSeries& s, const std::string& name) {
  const auto it = s.labels.find(name);
  return it == s.labels.end() ? std::string() : it->second;
}

bool owner_dimension(FleetBy by) {
  return by == FleetBy::kJob || by == FleetBy::kUser || by == FleetBy::kNamespace ||
         by == FleetBy::kPod;
}

const std::vector<std::string>& identity_labels() {
  return fleet_group_labels(FleetBy::kJob);
}

// The per-GPU GPU seconds of one step: `series` is the counter with its matchers.
std::string per_gpu_increase(const Ctx& c, const std::string& series) {
  return fmt::format("max by (Hostname, UUID) (increase({}[{}s]))", series, c.step_s);
}

// One step's GPU seconds of `series` by the owners (each its share of its GPU), summed over the
// span. The GPUs no owner holds are left out: their time is the total's rest.
std::string rows_expr(const Ctx& c, FleetBy by, const std::string& series) {
  const std::string oi =
      fmt::format("max by (Hostname, UUID, {}) ({})", c.labels(identity_labels()),
                  c.metric("gpudoctor_gpu_owner_info"));
  const std::string share =
      fmt::format("({0} / on (Hostname, UUID) group_left() count by (Hostname, UUID) ({0}))", oi);
  return fmt::format(
      "sum_over_time((sum by ({}) ({} * on (Hostname, UUID) group_right() {}))[{}s:{}s])",
      c.labels(fleet_group_labels(by)), per_gpu_increase(c, series), share, c.span_s, c.step_s);
}

// The row a result series belongs to, under the canonical label names.
struct RowKey {
  std::map<std::string, std::string> labels;
  bool unowned = false;
  bool operator<(const RowKey& o) const {
    return std::tie(unowned, labels) < std::tie(o.unowned, o.labels);
  }
};

RowKey key_of(const Ctx& c, FleetBy by, const PromSeries& s) {
  RowKey k;
  k.unowned = label(s, "gpudoctor_unowned") == "1";
  if (k.unowned) return k;
  for (const auto& n : fleet_group_labels(by)) {
    const auto it = c.stored.find(n);
    const std::string v = label(s, it == c.stored.end() ? n : it->second);
    if (!v.empty()) k.labels[n] = v;
  }
  return k;
}

}  // namespace

Result<size_t> ledger_gpu_count(const FleetOptions& options) {
  auto m = selector_matchers(options.prom.selector);
  if (!m) return m.error();
  Ctx c(options, m->empty() ? "" : "," + m.value());
  c.span_s = std::max<int64_t>(1, (options.prom.end_unix_ms - options.prom.start_unix_ms) / 1000);
  auto r = c.instant(fmt::format("count(max by (Hostname, UUID) (max_over_time({}[{}s])))",
                                 c.metric("gpudoctor_gpu_seconds_total", "state=\"working\""),
                                 c.span_s));
  if (!r) return r.error();
  return r->empty() ? size_t{0} : static_cast<size_t>(value_of(r->front()));
}

Result<FleetReport> fleet_from_ledger(const FleetOptions& options) {
  auto m = selector_matchers(options.prom.selector);
  if (!m) return m.error();
  Ctx c(options, m->empty() ? "" : "," + m.value());
  const int64_t span_ms = options.prom.end_unix_ms - options.prom.start_unix_ms;
  c.span_s = std::max<int64_t>(1, span_ms / 1000);
  FleetReport r;
  r.source = options.prom.url;
  r.selector = options.prom.selector;
  r.path = "ledger";
  r.by = options.by;
  r.end_unix_ms = options.prom.end_unix_ms;
  r.start_unix_ms = r.end_unix_ms - c.span_s * 1000;

  // The GPUs, their hosts and the scrape interval: samples per GPU over the span.
  auto gpus = c.instant(fmt::format("max by (Hostname, UUID) (count_over_time({}[{}s]))",
                                    c.metric("gpudoctor_gpu_seconds_total", "state=\"working\""),
                                    c.span_s));
  if (!gpus) return gpus.error();
  if (gpus->empty())
    return failure(fmt::format(
        "{}: no gpudoctor_gpu_seconds_total series{} between {} and {}: gpudoctor serve's ledger "
        "is not there (fleets with plain dcgm-exporter: --path diagnosis)",
        options.prom.url, options.prom.selector.empty() ? "" : " matching " + options.prom.selector,
        text::format_timestamp_ms(r.start_unix_ms, '-'),
        text::format_timestamp_ms(r.end_unix_ms, '-')));
  double most = 0;
  std::map<std::string, double> host_samples;
  std::map<std::string, size_t> host_gpus;
  const PromSeries* best = nullptr;
  for (const auto& s : gpus.value()) {
    if (!best || value_of(s) > value_of(*best)) best = &s;
    most = std::max(most, value_of(s));
    r.hosts.insert(label(s, "Hostname"));
    host_samples[label(s, "Hostname")] += value_of(s);
    ++host_gpus[label(s, "Hostname")];
  }
  r.gpus = gpus->size();
  // The scrape interval: the median gap between the raw samples of the best-covered GPU lately.
  double interval_s = 0;
  {
    auto raw =
        c.instant(fmt::format("{}[{}s]",
                              c.metric("gpudoctor_gpu_seconds_total",
                                       fmt::format("state=\"working\",Hostname=\"{}\",UUID=\"{}\"",
                                                   promql_string(label(*best, "Hostname")),
                                                   promql_string(label(*best, "UUID")))),
                              std::min<int64_t>(c.span_s, 600)));
    if (!raw) return raw.error();
    std::vector<double> gaps;
    for (const auto& s : raw.value())
      for (size_t i = 1; i < s.points.size(); ++i)
        gaps.push_back(static_cast<double>(s.points[i].first - s.points[i - 1].first) / 1000.0);
    if (!gaps.empty()) {
      std::nth_element(gaps.begin(), gaps.begin() + static_cast<long>(gaps.size() / 2), gaps.end());
      interval_s = gaps[gaps.size() / 2];
    } else {
      interval_s = most > 1 ? static_cast<double>(c.span_s) / most : 15;
    }
  }
  // S: four samples at least; at most 400 steps over the span (each step is a join on the server:
  // 7 days at 25 min 12 s; owner changes are placed to the step).
  c.step_s = std::max<int64_t>(
      {1, static_cast<int64_t>(std::ceil(4 * interval_s)), (c.span_s + 399) / 400});
  r.notes.push_back(fmt::format(
      "gpudoctor serve's ledger, summed by the server at a step of {} s (about {:.3g} s between "
      "samples): {} GPU{} on {} host{}",
      c.step_s, interval_s, r.gpus, r.gpus == 1 ? "" : "s", r.hosts.size(),
      r.hosts.size() == 1 ? "" : "s"));

  // Where the owner labels are (a scrape that does not honour labels renames job to
  // exported_job, and so on).
  // The label names come from the index (/api/v1/labels, no samples read); a server without that
  // endpoint is asked by a query over the span instead.
  if (owner_dimension(options.by)) {
    std::set<std::string> names;
    if (auto l = prometheus_label_names(options.prom, c.metric("gpudoctor_gpu_owner_info"))) {
      names.insert(l->begin(), l->end());
      ++c.queries;
    } else {
      std::string both;
      for (const auto& n : identity_labels())
        both += (both.empty() ? "" : ", ") + n + ", exported_" + n;
      auto probe = c.instant(fmt::format("max by ({}) (max_over_time({}[{}s]))", both,
                                         c.metric("gpudoctor_gpu_owner_info"), c.span_s));
      if (!probe) return probe.error();
      for (const auto& s : probe.value())
        for (const auto& [k, v] : s.labels)
          if (!v.empty()) names.insert(k);
      if (!probe->empty()) names.insert("__name__");
    }
    for (const auto& n : identity_labels())
      if (names.count("exported_" + n)) c.stored[n] = "exported_" + n;
    if (names.empty())
      r.notes.push_back("no gpudoctor_gpu_owner_info series in the span: no GPU time has an owner");
  }

  std::map<RowKey, FleetRow> rows;
  auto row = [&](const RowKey& k) -> FleetRow& {
    FleetRow& fr = rows[k];
    fr.labels = k.labels;
    fr.unowned = k.unowned;
    return fr;
  };

  // Every sum is one query; they run a few at a time (each waits on the server). Owner rows need
  // one query per state and per cause (the join has several series per GPU on both sides), the
  // causes only those the fleet's totals have; the others take all states, then all causes, in
  // one query each.
  struct Ask {
    std::string expr;
    std::function<void(const std::vector<PromSeries>&)> use;
  };
  std::vector<Ask> asks;
  // The answers, a few queries in flight; each answer is used in the order asked.
  auto run_asks = [&](std::vector<Ask>& batch) -> std::optional<Error> {
    std::vector<std::optional<Result<std::vector<PromSeries>>>> answers(batch.size());
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t i; (i = next.fetch_add(1)) < batch.size();) {
        answers[i] = prometheus_api(options.prom, "query",
                                    "query=" + net::url_encode(batch[i].expr) +
                                        "&time=" + prom_time_param(options.prom.end_unix_ms));
      }
    };
    const unsigned n = std::clamp<unsigned>(options.workers, 1, 8);
    std::vector<std::thread> threads;
    for (unsigned w = 1; w < n && w < batch.size(); ++w) threads.emplace_back(work);
    work();
    for (auto& t : threads) t.join();
    c.queries += batch.size();
    for (size_t i = 0; i < batch.size(); ++i) {
      if (!*answers[i]) return answers[i]->error();
      batch[i].use(answers[i]->value());
    }
    batch.clear();
    return std::nullopt;
  };
  auto add_state = [](FleetTally& t, const std::string& state, double v) {
    if (state == "working") t.working_s += v;
    if (state == "lost") t.lost_s += v;
    if (state == "idle_allocated") t.idle_allocated_s += v;
    if (state == "free") t.free_s += v;
  };
  auto add_cause = [](FleetTally& t, const std::string& code, double v) {
    if (auto cause = cause_from_code(code); cause && *cause != Cause::kHealthy)
      t.by_cause[static_cast<size_t>(*cause)] += v;
  };
  const std::string states = c.metric("gpudoctor_gpu_seconds_total");
  const std::string lost = c.metric("gpudoctor_lost_gpu_seconds_total");
  auto summed = [&](const std::string& step) {
    return fmt::format("sum_over_time(({})[{}s:{}s])", step, c.span_s, c.step_s);
  };
  auto per_gpu = [&](const std::string& series, const char* label) {
    return fmt::format("max by (Hostname, UUID, {}) (increase({}[{}s]))", label, series, c.step_s);
  };
  if (owner_dimension(options.by)) {
    // The fleet's totals, by state and by cause (no join): what the owners' rows leave is the
    // time of GPUs no owner held.
    asks.push_back({summed(fmt::format("sum by (state) ({})", per_gpu(states, "state"))),
                    [&](const std::vector<PromSeries>& res) {
                      for (const auto& s : res) add_state(r.total, label(s, "state"), value_of(s));
                    }});
    asks.push_back({summed(fmt::format("sum by (cause) ({})", per_gpu(lost, "cause"))),
                    [&](const std::vector<PromSeries>& res) {
                      for (const auto& s : res) add_cause(r.total, label(s, "cause"), value_of(s));
                    }});
    for (std::string_view state : kStates)
      if (state != "free")
        asks.push_back(
            {rows_expr(c, options.by,
                       c.metric("gpudoctor_gpu_seconds_total", fmt::format("state=\"{}\"", state))),
             [&, st = std::string(state)](const std::vector<PromSeries>& res) {
               for (const auto& s : res)
                 add_state(row(key_of(c, options.by, s)).t, st, value_of(s));
             }});
    asks.push_back(
        {fmt::format(
             "count by ({0}, Hostname) (max by (Hostname, UUID, {1}) (max_over_time({2}[{3}s])))",
             c.labels(fleet_group_labels(options.by)), c.labels(identity_labels()),
             c.metric("gpudoctor_gpu_owner_info"), c.span_s),
         [&](const std::vector<PromSeries>& res) {
           for (const auto& s : res) {
             FleetRow& fr = row(key_of(c, options.by, s));
             fr.hosts.insert(label(s, "Hostname"));
             fr.gpus += static_cast<size_t>(value_of(s));
           }
         }});
    if (auto e = run_asks(asks)) return *e;
    // Then the owners' share of each cause the fleet's totals have.
    for (const auto& info : causes()) {
      if (info.cause == Cause::kHealthy || !(r.total.by_cause[static_cast<size_t>(info.cause)] > 0))
        continue;
      asks.push_back({rows_expr(c, options.by,
                                c.metric("gpudoctor_lost_gpu_seconds_total",
                                         fmt::format("cause=\"{}\"", info.code))),
                      [&, code = std::string(info.code)](const std::vector<PromSeries>& res) {
                        for (const auto& s : res)
                          add_cause(row(key_of(c, options.by, s)).t, code, value_of(s));
                      }});
    }
  } else {
    // Rows by host or model; cause rows come from the causes by host. (The answers are used after
    // this block: its locals are captured by value.)
    const bool model = options.by == FleetBy::kModel;
    const std::string key = model ? "model_name" : "Hostname";
    auto join = [&](const std::string& gpu) {
      return model ? fmt::format(
                         "{} * on (Hostname, UUID) group_left(model_name) max by (Hostname, UUID, "
                         "model_name) ({})",
                         gpu, c.metric("gpudoctor_gpu_info"))
                   : gpu;
    };
    asks.push_back(
        {summed(fmt::format("sum by ({}, state) ({})", key, join(per_gpu(states, "state")))),
         [&, key](const std::vector<PromSeries>& res) {
           for (const auto& s : res) {
             const std::string st = label(s, "state");
             if (options.by == FleetBy::kCause)
               add_state(r.total, st, value_of(s));
             else
               add_state(row({{{key, label(s, key)}}, false}).t, st, value_of(s));
           }
         }});
    asks.push_back(
        {summed(fmt::format("sum by ({}, cause) ({})", key, join(per_gpu(lost, "cause")))),
         [&, key](const std::vector<PromSeries>& res) {
           for (const auto& s : res) {
             const std::string code = label(s, "cause");
             const double v = value_of(s);
             if (options.by != FleetBy::kCause) {
               add_cause(row({{{key, label(s, key)}}, false}).t, code, v);
               continue;
             }
             add_cause(r.total, code, v);
             const auto cause = cause_from_code(code);
             if (!cause || *cause == Cause::kHealthy || v <= 0) continue;
             FleetRow& fr = row({{{"cause", code}}, false});
             add_cause(fr.t, code, v);
             (*cause == Cause::kIdle ? fr.t.idle_allocated_s : fr.t.lost_s) += v;
           }
         }});
    if (options.by == FleetBy::kCause)
      asks.push_back({fmt::format("count by (cause, Hostname) (max by (Hostname, UUID, cause) "
                                  "(increase({}[{}s]) > 0))",
                                  lost, c.span_s),
                      [&](const std::vector<PromSeries>& res) {
                        for (const auto& s : res) {
                          auto it = rows.find({{{"cause", label(s, "cause")}}, false});
                          if (it == rows.end()) continue;
                          it->second.hosts.insert(label(s, "Hostname"));
                          it->second.gpus += static_cast<size_t>(value_of(s));
                        }
                      }});
    else if (model)
      asks.push_back({fmt::format("count by (model_name, Hostname) (max by (Hostname, UUID, "
                                  "model_name) (max_over_time({}[{}s])))",
                                  c.metric("gpudoctor_gpu_info"), c.span_s),
                      [&](const std::vector<PromSeries>& res) {
                        for (const auto& s : res) {
                          auto it = rows.find({{{"model_name", label(s, "model_name")}}, false});
                          if (it == rows.end()) continue;
                          it->second.hosts.insert(label(s, "Hostname"));
                          it->second.gpus += static_cast<size_t>(value_of(s));
                        }
                      }});
  }
  if (auto e = run_asks(asks)) return *e;
  if (options.by == FleetBy::kHost)
    for (auto& [k, fr] : rows)
      if (const auto h = k.labels.find("Hostname"); h != k.labels.end()) {
        fr.hosts.insert(h->second);
        fr.gpus = host_gpus[h->second];
      }
  if (owner_dimension(options.by)) {
    // GPU time no owner held: the totals less the owners' shares.
    FleetTally owned;
    for (const auto& [k, fr] : rows)
      if (!k.unowned) owned.add(fr.t);
    FleetTally& rest = row({{}, true}).t;
    auto left = [](double all, double part) { return std::max(0.0, all - part); };
    rest.working_s = left(r.total.working_s, owned.working_s);
    rest.lost_s = left(r.total.lost_s, owned.lost_s);
    rest.idle_allocated_s = left(r.total.idle_allocated_s, owned.idle_allocated_s);
    rest.free_s = left(r.total.free_s, owned.free_s);
    for (size_t ci = 0; ci < kCauseCount; ++ci)
      rest.by_cause[ci] = left(r.total.by_cause[ci], owned.by_cause[ci]);
  } else if (options.by != FleetBy::kCause) {
    for (const auto& [k, fr] : rows) r.total.add(fr.t);  // hosts, models: the rows add up
  }

  // Hosts with GPU series but no ledger (dcgm-exporter alone there): not in these figures.
  auto bare = c.instant(fmt::format(
      "count by (Hostname) (max by (Hostname, UUID) (max_over_time({0}[{2}s]))) unless on "
      "(Hostname) count by (Hostname) (max by (Hostname, UUID) (max_over_time({1}[{2}s])))",
      c.metric("DCGM_FI_DEV_POWER_USAGE"),
      c.metric("gpudoctor_gpu_seconds_total", "state=\"working\""), c.span_s));
  if (!bare) return bare.error();
  if (!bare->empty()) {
    std::vector<std::string> names;
    for (const auto& s : bare.value()) names.push_back(label(s, "Hostname"));
    std::string list;
    for (size_t i = 0; i < names.size() && i < 10; ++i) list += (i ? ", " : "") + names[i];
    if (names.size() > 10) list += fmt::format(" and {} more", names.size() - 10);
    r.notes.push_back(fmt::format(
        "{} host{} {} GPU series but no gpudoctor ledger (dcgm-exporter alone): not in these "
        "figures; `--path diagnosis --selector '{{Hostname=~\"...\"}}'` reads them: {}",
        names.size(), names.size() == 1 ? "" : "s", names.size() == 1 ? "has" : "have", list));
  }

  // Gaps: a host whose GPUs have far fewer samples than the span holds, or none lately.
  auto recent =
      c.instant(fmt::format("max by (Hostname) (count_over_time({}[{}s]))",
                            c.metric("gpudoctor_gpu_seconds_total", "state=\"working\""),
                            std::max<int64_t>(5 * c.step_s, std::min<int64_t>(c.span_s, 300))));
  if (!recent) return recent.error();
  std::set<std::string> reporting;
  for (const auto& s : recent.value()) reporting.insert(label(s, "Hostname"));
  if (const double covered = most * interval_s; covered < 0.9 * static_cast<double>(c.span_s))
    r.notes.push_back(fmt::format(
        "the best-covered GPU has samples for about {} of the span's {}: the series start later "
        "(or stop earlier, or have gaps), so the GPU-hours cover less than the span",
        human_duration(covered), human_duration(static_cast<double>(c.span_s))));
  std::vector<std::string> stopped, sparse;
  for (const auto& h : r.hosts) {
    if (!reporting.count(h)) stopped.push_back(h);
    const double expected = most * static_cast<double>(host_gpus[h]);
    if (expected > 0 && host_samples[h] < 0.9 * expected) sparse.push_back(h);
  }
  auto list = [](const std::vector<std::string>& v) {
    std::string out;
    for (size_t i = 0; i < v.size() && i < 10; ++i) out += (i ? ", " : "") + v[i];
    if (v.size() > 10) out += fmt::format(" and {} more", v.size() - 10);
    return out;
  };
  if (!stopped.empty())
    r.notes.push_back(fmt::format("{} host{} stopped reporting before the end of the span: {}",
                                  stopped.size(), stopped.size() == 1 ? "" : "s", list(stopped)));
  if (!sparse.empty())
    r.notes.push_back(fmt::format(
        "{} host{} have less than 90 % of the samples the best-covered GPU has (gaps, late start "
        "or an early stop; their GPU-hours count only the time sampled): {}",
        sparse.size(), sparse.size() == 1 ? "" : "s", list(sparse)));

  std::vector<FleetRow> list_rows;
  for (auto& [k, fr] : rows)
    if (fr.t.allocated_s() > 0 || (!fr.unowned && fr.t.total_s() > 0))
      list_rows.push_back(std::move(fr));
  r.queries = c.queries;
  finish_fleet_rows(r, std::move(list_rows), options);
  return r;
}

}  // namespace gpudoctor
