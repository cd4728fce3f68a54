// fleet's first path: gpudoctor serve's ledger. The span is cut into n steps of S; the server
// gives each GPU's GPU seconds of each step (increase(...[S]) of every state and cause counter,
// range queries at step S: each sample read once, nothing joined on the server) and the owners
// each GPU had during each step (the owner info seen in the step); the join is done here: a
// step's held seconds (working, lost, idle but allocated) go to the owners the GPU had in that
// step, an equal share each (so rows add up to the fleet's total), to the `(no owner)` row where
// it had none; free seconds (nothing held the GPU) are always the `(no owner)` row's. One query
// per state, per cause the series have and for the owners, whatever the number of GPUs; they run
// a few at a time.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "core/duration.hpp"
#include "fleet/fleet.hpp"
#include "net/http_client.hpp"
#include "text/text.hpp"

namespace gpudoctor {
namespace {

constexpr std::array<std::string_view, 4> kStates = {"working", "lost", "idle_allocated", "free"};
constexpr int kFree = 3;  // kStates' free

using GpuId = FleetGpu;

std::string label(const PromSeries& s, const std::string& name) {
  const auto it = s.labels.find(name);
  return it == s.labels.end() ? std::string() : it->second;
}

GpuId gpu_of(const PromSeries& s) {
  return {label(s, "Hostname"), label(s, "UUID")};
}

double value_of(const PromSeries& s) {
  return s.points.empty() || !std::isfinite(s.points.back().second) ? 0 : s.points.back().second;
}

const std::vector<std::string>& identity_labels() {
  return fleet_group_labels(FleetBy::kJob);
}

// The steps: the k-th (0-based) ends at first_ms + k * step_ms and covers the step_ms before it.
struct Grid {
  int64_t first_ms = 0, step_ms = 1;
  size_t n = 0;
  std::optional<size_t> at(int64_t t_ms) const {
    const int64_t d = t_ms - first_ms + step_ms / 2;
    if (d < 0) return std::nullopt;
    const auto k = static_cast<size_t>(d / step_ms);
    return k < n ? std::optional<size_t>(k) : std::nullopt;
  }
};

// What an answer's values add to: a state's seconds or a cause's lost seconds.
struct Slot {
  int state = -1;  // index in kStates
  std::optional<Cause> cause;
};

void add(FleetTally& t, const Slot& s, double v) {
  switch (s.state) {
    case 0:
      t.working_s += v;
      return;
    case 1:
      t.lost_s += v;
      return;
    case 2:
      t.idle_allocated_s += v;
      return;
    case kFree:
      t.free_s += v;
      return;
    default:
      break;
  }
  if (s.cause) t.by_cause[static_cast<size_t>(*s.cause)] += v;
}

// Who held each GPU in each step (owner dimensions): owners as rows of --by (several of a GPU's
// owners can be one row: two jobs of one user), with the steps they held it in (an owner info
// sample in the step: an owner that left and one that came within a step both hold it).
struct OwnerTable {
  struct Held {
    FleetRowKey row;
    std::vector<bool> steps;
  };
  struct Gpu {
    std::vector<Held> owners;
    std::vector<uint16_t> count;  // owners at each step
  };
  std::map<GpuId, Gpu> gpus;
};

// What one answer adds up to; answers are folded on their own, then merged in the order asked.
struct Partial {
  FleetTally total;
  std::map<FleetRowKey, FleetTally> rows;
  std::map<FleetRowKey, std::set<GpuId>> row_gpus;  // rows whose GPUs the answer tells
  std::map<GpuId, std::vector<bool>> gpu_steps;     // the states: the steps each GPU has seconds in
};

struct Ctx {
  Ctx(const FleetOptions& options, std::string matchers) : o(options), sel(std::move(matchers)) {}
  const FleetOptions& o;
  std::string sel;  // ",matchers" or ""
  int64_t span_s = 0;
  Grid grid;
  std::atomic<size_t> queries{0};
  // Owner label name -> the name the server has it under (exported_job where a scrape renamed it).
  std::map<std::string, std::string> stored;

  Result<std::vector<PromSeries>> instant(const std::string& expr, int64_t at_ms) {
    ++queries;
    return prometheus_api(o.prom, "query",
                          "query=" + net::url_encode(expr) + "&time=" + prom_time_param(at_ms));
  }
  Result<std::vector<PromSeries>> range(const std::string& expr) {
    ++queries;
    const int64_t end = grid.first_ms + static_cast<int64_t>(grid.n - 1) * grid.step_ms;
    return prometheus_api(
        o.prom, "query_range",
        "query=" + net::url_encode(expr) + "&start=" + prom_time_param(grid.first_ms) +
            "&end=" + prom_time_param(end) + "&step=" + prom_time_param(grid.step_ms));
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
  // The labels of `names` a series has, under their canonical names.
  std::map<std::string, std::string> canonical(const PromSeries& s,
                                               const std::vector<std::string>& names) const {
    std::map<std::string, std::string> out;
    for (const auto& n : names) {
      const auto it = stored.find(n);
      const std::string v = label(s, it == stored.end() ? n : it->second);
      if (!v.empty()) out[n] = v;
    }
    return out;
  }
};

// The per-GPU seconds of each step of one counter (zeros left out by the server).
std::string per_step(const Ctx& c, const std::string& series) {
  return fmt::format("max by (Hostname, UUID) (increase({}[{}ms])) > 0", series, c.grid.step_ms);
}

OwnerTable owner_table(const Ctx& c, FleetBy by, const std::vector<PromSeries>& res) {
  OwnerTable t;
  for (const auto& s : res) {
    OwnerTable::Gpu& g = t.gpus[gpu_of(s)];
    if (g.count.empty()) g.count.assign(c.grid.n, 0);
    OwnerTable::Held held;
    held.row.labels = c.canonical(s, fleet_group_labels(by));
    held.steps.assign(c.grid.n, false);
    bool any = false;
    for (const auto& [t_ms, v] : s.points) {
      const auto k = c.grid.at(t_ms);
      if (!k || held.steps[*k] || !std::isfinite(v)) continue;
      held.steps[*k] = true;
      ++g.count[*k];
      any = true;
    }
    if (any) g.owners.push_back(std::move(held));
  }
  return t;
}

// A GPU's row by model (no model label: the row of GPUs whose model is not known).
FleetRowKey model_row(const std::map<GpuId, std::string>& models, const GpuId& gpu) {
  const auto m = models.find(gpu);
  if (m == models.end()) return FleetRowKey{};
  return FleetRowKey{{{"model_name", m->second}}, false};
}

// One answer (a state's or a cause's per-GPU seconds by step) summed into rows of --by.
Partial fold(const Ctx& c, FleetBy by, const Slot& slot, const std::vector<PromSeries>& res,
             const OwnerTable& owners, const std::map<GpuId, std::string>& models) {
  Partial p;
  static const OwnerTable::Gpu kNobody;
  const bool by_owner = fleet_by_owner(by);
  for (const auto& s : res) {
    const GpuId gpu = gpu_of(s);
    // The rows this GPU's seconds go to, found once per series.
    FleetTally* row = nullptr;  // host, model, cause: one row for every step
    const OwnerTable::Gpu* held = &kNobody;
    std::vector<FleetTally*> owner_rows;
    FleetTally* nobody = nullptr;
    if (by_owner) {
      if (auto it = owners.gpus.find(gpu); it != owners.gpus.end()) held = &it->second;
      for (const auto& h : held->owners) owner_rows.push_back(&p.rows[h.row]);
      nobody = &p.rows[FleetRowKey{{}, true}];
    } else if (by == FleetBy::kHost) {
      row = &p.rows[FleetRowKey{{{"Hostname", gpu.host}}, false}];
    } else if (by == FleetBy::kModel) {
      row = &p.rows[model_row(models, gpu)];
    } else if (slot.cause && *slot.cause != Cause::kHealthy) {  // by cause: the cause's row
      const FleetRowKey key{{{"cause", std::string(cause_code(*slot.cause))}}, false};
      row = &p.rows[key];
      p.row_gpus[key].insert(gpu);
    }
    double unowned = 0;
    std::vector<bool>* steps = slot.state >= 0 ? &p.gpu_steps[gpu] : nullptr;
    if (steps && steps->empty()) steps->assign(c.grid.n, false);
    for (const auto& [t_ms, v] : s.points) {
      const auto k = c.grid.at(t_ms);
      if (!k || !std::isfinite(v) || v <= 0) continue;
      add(p.total, slot, v);
      if (steps) (*steps)[*k] = true;
      if (row) {
        add(*row, slot, v);
        if (by == FleetBy::kCause)
          (*slot.cause == Cause::kIdle ? row->idle_allocated_s : row->lost_s) += v;
      }
      if (!by_owner) continue;
      // Free seconds are nobody's (the ledger counts a second free only when nothing held the GPU).
      const uint16_t n = held->count.empty() || slot.state == kFree ? 0 : held->count[*k];
      if (n == 0) {
        add(*nobody, slot, v);
        unowned += v;
        continue;
      }
      for (size_t i = 0; i < held->owners.size(); ++i)
        if (held->owners[i].steps[*k]) add(*owner_rows[i], slot, v / n);
    }
    if (unowned > 0) p.row_gpus[FleetRowKey{{}, true}].insert(gpu);
  }
  return p;
}

std::string name_list(const std::vector<std::string>& v) {
  std::string out;
  for (size_t i = 0; i < v.size() && i < 10; ++i) out += (i ? ", " : "") + v[i];
  if (v.size() > 10) out += fmt::format(" and {} more", v.size() - 10);
  return out;
}

// The scrape interval: the median gap between one GPU's samples in the last 10 minutes (the GPU
// from the index); where it has none lately, the most samples a GPU has in that window (or the
// span) tells it. 0: no GPU of the ledger has two samples.
Result<double> scrape_interval(Ctx& c, const std::string& working) {
  double interval_s = 0;
  const int64_t recent_s = std::min<int64_t>(c.span_s, 600);
  if (auto listed = prometheus_series_labels(c.o.prom, working); listed && !listed->empty()) {
    ++c.queries;
    const auto& l = listed->front();
    const auto h = l.find("Hostname"), u = l.find("UUID");
    auto raw =
        c.instant(fmt::format("{}[{}s]",
                              c.metric("gpudoctor_gpu_seconds_total",
                                       fmt::format("state=\"working\",Hostname=\"{}\",UUID=\"{}\"",
                                                   promql_string(h == l.end() ? "" : h->second),
                                                   promql_string(u == l.end() ? "" : u->second))),
                              recent_s),
                  c.o.prom.end_unix_ms);
    if (!raw) return raw.error();
    std::vector<double> gaps;
    for (const auto& s : raw.value())
      for (size_t i = 1; i < s.points.size(); ++i)
        gaps.push_back(static_cast<double>(s.points[i].first - s.points[i - 1].first) / 1000.0);
    if (!gaps.empty()) {
      std::nth_element(gaps.begin(), gaps.begin() + static_cast<long>(gaps.size() / 2), gaps.end());
      interval_s = gaps[gaps.size() / 2];
    }
  }
  for (const int64_t window_s : {recent_s, c.span_s}) {
    if (interval_s > 0) break;
    auto counted = c.instant(fmt::format("max(count_over_time({}[{}s]))", working, window_s),
                             c.o.prom.end_unix_ms);
    if (!counted) return counted.error();
    const double most = counted->empty() ? 0 : value_of(counted->front());
    if (most >= 2) interval_s = static_cast<double>(window_s) / most;
  }
  return interval_s;
}

// The steps over the span ending at end_ms: S four samples at least, at most 400 steps; the steps
// tile the span exactly (to the ms).
void lay_grid(Ctx& c, double interval_s, int64_t span_ms, int64_t end_ms) {
  const double wanted_s = std::max(4 * interval_s, static_cast<double>(c.span_s) / 400.0);
  c.grid.n = std::max<size_t>(
      1, static_cast<size_t>(std::ceil(static_cast<double>(span_ms) / (wanted_s * 1000) - 1e-9)));
  c.grid.step_ms = (span_ms + static_cast<int64_t>(c.grid.n) - 1) / static_cast<int64_t>(c.grid.n);
  c.grid.first_ms = end_ms - static_cast<int64_t>(c.grid.n - 1) * c.grid.step_ms;
}

// Index look-ups (no samples read), by owner: where the owner labels are (a scrape that does not
// honour labels renames job to exported_job, and so on), into c.stored.
Result<Nothing> find_owner_labels(Ctx& c, std::vector<std::string>& notes) {
  std::set<std::string> names;
  if (auto l = prometheus_label_names(c.o.prom, c.metric("gpudoctor_gpu_owner_info"))) {
    names.insert(l->begin(), l->end());
    ++c.queries;
  } else {
    std::string both;
    for (const auto& n : identity_labels())
      both += (both.empty() ? "" : ", ") + n + ", exported_" + n;
    auto probe = c.instant(fmt::format("max by ({}) (last_over_time({}[{}s]))", both,
                                       c.metric("gpudoctor_gpu_owner_info"), c.span_s),
                           c.o.prom.end_unix_ms);
    if (!probe) return probe.error();
    for (const auto& s : probe.value())
      for (const auto& [k, v] : s.labels)
        if (!v.empty()) names.insert(k);
    if (!probe->empty()) names.insert("__name__");
  }
  for (const auto& n : identity_labels())
    if (names.count("exported_" + n)) c.stored[n] = "exported_" + n;
  if (names.empty())
    notes.push_back("no gpudoctor_gpu_owner_info series in the span: no GPU time has an owner");
  return kOk;
}

// The causes the lost-seconds counters have (all but healthy where the index cannot say).
std::vector<Cause> lost_causes_of(Ctx& c) {
  std::set<Cause> found;
  if (auto codes = prometheus_label_values(c.o.prom, "cause",
                                           c.metric("gpudoctor_lost_gpu_seconds_total"))) {
    ++c.queries;
    for (const auto& code : codes.value())
      if (auto cause = cause_from_code(code); cause && *cause != Cause::kHealthy)
        found.insert(*cause);
  } else {
    for (const auto& info : causes())
      if (info.cause != Cause::kHealthy) found.insert(info.cause);
  }
  return {found.begin(), found.end()};
}

// The GPUs' models (by model only: else none asked).
Result<std::map<GpuId, std::string>> models_of(Ctx& c) {
  std::map<GpuId, std::string> models;
  if (c.o.by == FleetBy::kModel) {
    auto info = prometheus_series_labels(c.o.prom, c.metric("gpudoctor_gpu_info"));
    if (!info) return info.error();
    ++c.queries;
    for (const auto& l : info.value()) {
      const auto h = l.find("Hostname"), u = l.find("UUID"), mn = l.find("model_name");
      if (h != l.end() && u != l.end() && mn != l.end() && !mn->second.empty())
        models[GpuId{h->second, u->second}] = mn->second;
    }
  }
  return models;
}

// The range queries: the owners first (every fold needs them), then each state and cause.
// They run a few at a time; each answer is folded as it comes, the folds merged in order.
struct Ask {
  std::string expr;
  Slot slot;
  bool owners = false;
};
std::vector<Ask> asks_of(const Ctx& c, const std::vector<Cause>& lost_causes) {
  std::vector<Ask> asks;
  if (fleet_by_owner(c.o.by))
    asks.push_back({fmt::format("max by (Hostname, UUID, {}) (max_over_time({}[{}ms]))",
                                c.labels(identity_labels()), c.metric("gpudoctor_gpu_owner_info"),
                                c.grid.step_ms),
                    {},
                    true});
  for (size_t i = 0; i < kStates.size(); ++i)
    asks.push_back({per_step(c, c.metric("gpudoctor_gpu_seconds_total",
                                         fmt::format("state=\"{}\"", kStates[i]))),
                    Slot{static_cast<int>(i), std::nullopt}});
  for (Cause cause : lost_causes)
    asks.push_back({per_step(c, c.metric("gpudoctor_lost_gpu_seconds_total",
                                         fmt::format("cause=\"{}\"", cause_code(cause)))),
                    Slot{-1, cause}});
  return asks;
}

// What the range queries gave: the owners, and each other answer folded (in the order asked).
struct Answers {
  OwnerTable owners;
  std::vector<std::optional<Partial>> partials;
};

// Every ask, a few at a time (--workers, at most 8); each answer folded as it comes, the folds
// waiting for the owner table. One failed: the rest are not asked, and its error is the answer.
Result<Answers> ask_all(Ctx& c, const std::vector<Ask>& asks,
                        const std::map<GpuId, std::string>& models, const FleetProgress& progress) {
  Answers a;
  std::promise<void> owners_set;
  std::shared_future<void> owners_ready = owners_set.get_future().share();
  if (!fleet_by_owner(c.o.by)) owners_set.set_value();
  a.partials.resize(asks.size());
  std::optional<Error> failed;
  std::mutex mu;
  size_t done = 0;
  run_workers(std::clamp<unsigned>(c.o.workers, 1, 8), asks.size(), [&](size_t i) {
    {
      std::lock_guard lock(mu);
      if (failed && !asks[i].owners) return;  // one failed: the rest are not asked
    }
    auto answer = c.range(asks[i].expr);
    if (asks[i].owners) {
      if (answer) a.owners = owner_table(c, c.o.by, answer.value());
      owners_set.set_value();
    } else {
      owners_ready.wait();
      if (answer) a.partials[i] = fold(c, c.o.by, asks[i].slot, answer.value(), a.owners, models);
    }
    std::lock_guard lock(mu);
    if (!answer && !failed) failed = answer.error();
    if (progress) progress(++done, asks.size(), "queries answered");
  });
  if (failed) return *failed;
  return a;
}

// The answers' rows and the steps each GPU has seconds in, merged in the order asked (the same
// sums whatever the order answers came in); the fleet's total into `total`.
struct Merged {
  std::map<FleetRowKey, FleetRow> rows;
  std::map<GpuId, std::vector<bool>> gpu_steps;
};
Merged merge_answers(const Ctx& c, const Answers& a, FleetTally& total) {
  Merged m;
  for (const auto& p : a.partials) {
    if (!p) continue;
    total.add(p->total);
    for (const auto& [k, t] : p->rows) m.rows[k].t.add(t);
    for (const auto& [g, steps] : p->gpu_steps) {
      auto& all = m.gpu_steps[g];
      if (all.empty()) all.assign(c.grid.n, false);
      for (size_t k = 0; k < steps.size(); ++k) all[k] = all[k] || steps[k];
    }
  }
  return m;
}

// The GPUs: those with seconds in a step (into r.gpus and r.hosts); a host's coverage is its
// GPUs' steps with seconds.
struct Coverage {
  std::map<std::string, size_t> host_gpus, host_steps, host_last;
  size_t most = 0;  // steps of the best-covered GPU
};
Coverage coverage_of(const std::map<GpuId, std::vector<bool>>& gpu_steps, FleetReport& r) {
  Coverage cov;
  for (const auto& [g, steps] : gpu_steps) {
    const auto n = static_cast<size_t>(std::count(steps.begin(), steps.end(), true));
    if (n == 0) continue;
    r.hosts.insert(g.host);
    ++cov.host_gpus[g.host];
    cov.host_steps[g.host] += n;
    for (size_t k = steps.size(); k > 0; --k)
      if (steps[k - 1]) {
        cov.host_last[g.host] = std::max(cov.host_last[g.host], k);
        break;
      }
    cov.most = std::max(cov.most, n);
    ++r.gpus;
  }
  return cov;
}

// The rows' GPUs and hosts: owners from the owner table, hosts and models from the GPUs seen,
// causes and the unowned row from the GPUs that had such seconds.
void fill_row_gpus(Merged& m, const Answers& a, const std::map<GpuId, std::string>& models,
                   FleetBy by) {
  std::map<FleetRowKey, std::set<GpuId>> row_gpus;
  for (const auto& p : a.partials)
    if (p)
      for (const auto& [k, g] : p->row_gpus) row_gpus[k].insert(g.begin(), g.end());
  for (const auto& [g, held] : a.owners.gpus)
    for (const auto& h : held.owners) row_gpus[h.row].insert(g);
  for (const auto& [g, steps] : m.gpu_steps) {
    if (by == FleetBy::kHost) row_gpus[FleetRowKey{{{"Hostname", g.host}}, false}].insert(g);
    if (by == FleetBy::kModel) row_gpus[model_row(models, g)].insert(g);
  }
  for (auto& [k, fr] : m.rows) {
    fr.labels = k.labels;
    fr.unowned = k.unowned;
    fr.hosts.clear();
    if (auto it = row_gpus.find(k); it != row_gpus.end()) {
      fr.gpus = it->second.size();
      for (const auto& g : it->second) fr.hosts.insert(g.host);
    }
  }
}

// Hosts with GPU series but no ledger (dcgm-exporter alone there): not in these figures.
void note_bare_hosts(Ctx& c, FleetReport& r) {
  if (auto dcgm =
          prometheus_label_values(c.o.prom, "Hostname", c.metric("DCGM_FI_DEV_POWER_USAGE"))) {
    ++c.queries;
    std::vector<std::string> bare;
    for (const auto& h : dcgm.value())
      if (!r.hosts.count(h)) bare.push_back(h);
    if (!bare.empty())
      r.notes.push_back(fmt::format(
          "{} host{} {} GPU series but no gpudoctor ledger (dcgm-exporter alone): not in these "
          "figures; `--path diagnosis --selector '{{Hostname=~\"...\"}}'` reads them: {}",
          bare.size(), bare.size() == 1 ? "" : "s", bare.size() == 1 ? "has" : "have",
          name_list(bare)));
  }
}

// Gaps: a host whose GPUs have seconds in far fewer steps than the best-covered GPU, or in none
// lately (the last steps covering 5 minutes, at least the last).
void note_gaps(const Ctx& c, const Coverage& cov, FleetReport& r) {
  const double step_s = static_cast<double>(c.grid.step_ms) / 1000.0;
  if (static_cast<double>(cov.most) < 0.9 * static_cast<double>(c.grid.n))
    r.notes.push_back(fmt::format(
        "the best-covered GPU has samples for about {} of the span's {}: the series start later "
        "(or stop earlier, or have gaps), so the GPU-hours cover less than the span",
        human_duration(static_cast<double>(cov.most) * step_s),
        human_duration(static_cast<double>(c.span_s))));
  const size_t recent_steps = std::max<size_t>(
      1, static_cast<size_t>(std::ceil(300'000.0 / static_cast<double>(c.grid.step_ms))));
  std::vector<std::string> stopped, sparse;
  for (const auto& h : r.hosts) {
    if (cov.host_last.at(h) + recent_steps <= c.grid.n) stopped.push_back(h);
    const double expected = static_cast<double>(cov.most * cov.host_gpus.at(h));
    if (static_cast<double>(cov.host_steps.at(h)) < 0.9 * expected) sparse.push_back(h);
  }
  if (!stopped.empty())
    r.notes.push_back(fmt::format("{} host{} stopped reporting before the end of the span: {}",
                                  stopped.size(), stopped.size() == 1 ? "" : "s",
                                  name_list(stopped)));
  if (!sparse.empty())
    r.notes.push_back(fmt::format(
        "{} host{} {} samples in less than 90 % of the steps the best-covered GPU has them in "
        "(gaps, a late start or an early stop; their GPU-hours count only the time sampled): {}",
        sparse.size(), sparse.size() == 1 ? "" : "s", sparse.size() == 1 ? "has" : "have",
        name_list(sparse)));
}

}  // namespace

Result<size_t> ledger_gpu_count(const FleetOptions& options) {
  auto m = selector_matchers(options.prom.selector);
  if (!m) return m.error();
  Ctx c(options, m->empty() ? "" : "," + m.value());
  // The series from the index (no samples read); a store without /api/v1/series is asked a query.
  const std::string working = c.metric("gpudoctor_gpu_seconds_total", "state=\"working\"");
  std::set<GpuId> gpus;
  if (auto s = prometheus_series_labels(options.prom, working)) {
    for (const auto& l : s.value()) {
      const auto h = l.find("Hostname");
      const auto u = l.find("UUID");
      gpus.insert(GpuId{h == l.end() ? "" : h->second, u == l.end() ? "" : u->second});
    }
    return gpus.size();
  }
  const int64_t span_s =
      std::max<int64_t>(1, (options.prom.end_unix_ms - options.prom.start_unix_ms) / 1000);
  auto r = c.instant(
      fmt::format("count(max by (Hostname, UUID) (last_over_time({}[{}s])))", working, span_s),
      options.prom.end_unix_ms);
  if (!r) return r.error();
  return r->empty() ? size_t{0} : static_cast<size_t>(value_of(r->front()));
}

Result<FleetReport> fleet_from_ledger(const FleetOptions& options, const FleetProgress& progress) {
  auto m = selector_matchers(options.prom.selector);
  if (!m) return m.error();
  Ctx c(options, m->empty() ? "" : "," + m.value());
  const int64_t span_ms =
      std::max<int64_t>(1000, options.prom.end_unix_ms - options.prom.start_unix_ms);
  c.span_s = span_ms / 1000;
  FleetReport r = empty_fleet_report(options, "ledger");
  r.start_unix_ms = r.end_unix_ms - span_ms;
  const std::string working = c.metric("gpudoctor_gpu_seconds_total", "state=\"working\"");
  auto no_ledger = [&] {
    return failure(fmt::format(
        "{}: no gpudoctor_gpu_seconds_total series{} between {} and {}: gpudoctor serve's ledger "
        "is not there (fleets with plain dcgm-exporter: --path diagnosis)",
        options.prom.url, options.prom.selector.empty() ? "" : " matching " + options.prom.selector,
        text::format_timestamp_ms(r.start_unix_ms, '-'),
        text::format_timestamp_ms(r.end_unix_ms, '-')));
  };

  const auto interval_s = scrape_interval(c, working);
  if (!interval_s) return interval_s.error();
  if (interval_s.value() <= 0) return no_ledger();
  lay_grid(c, interval_s.value(), span_ms, r.end_unix_ms);
  if (fleet_by_owner(options.by))
    if (auto found = find_owner_labels(c, r.notes); !found) return found.error();
  const std::vector<Cause> lost_causes = lost_causes_of(c);
  const auto models = models_of(c);
  if (!models) return models.error();

  auto answers = ask_all(c, asks_of(c, lost_causes), models.value(), progress);
  if (!answers) return answers.error();
  Merged merged = merge_answers(c, answers.value(), r.total);
  const Coverage cov = coverage_of(merged.gpu_steps, r);
  if (r.gpus == 0) return no_ledger();
  fill_row_gpus(merged, answers.value(), models.value(), options.by);

  const double step_s = static_cast<double>(c.grid.step_ms) / 1000.0;
  r.notes.push_back(fmt::format(
      "gpudoctor serve's ledger at a step of {:.4g} s ({} steps; about {:.3g} s between samples), "
      "joined with the owners here: {} GPU{} on {} host{}",
      step_s, c.grid.n, interval_s.value(), r.gpus, r.gpus == 1 ? "" : "s", r.hosts.size(),
      r.hosts.size() == 1 ? "" : "s"));

  note_bare_hosts(c, r);
  note_gaps(c, cov, r);

  std::vector<FleetRow> list_rows;
  for (auto& [k, fr] : merged.rows)
    if (fr.t.allocated_s() > 0 || (!fr.unowned && fr.t.total_s() > 0))
      list_rows.push_back(std::move(fr));
  r.queries = c.queries;
  finish_fleet_rows(r, std::move(list_rows), options);
  return r;
}

}  // namespace gpudoctor
