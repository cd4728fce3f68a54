#include "analysis/trace_findings.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "analysis/workload.hpp"
#include "core/trace.hpp"

namespace gpudoctor {

namespace {

using Json = nlohmann::ordered_json;

double ms(int64_t ns) {
  return std::round(static_cast<double>(ns) / 1e3) / 1e3;
}

double frac(int64_t part, int64_t whole) {
  return whole > 0 ? std::round(10000.0 * static_cast<double>(part) / static_cast<double>(whole)) /
                         10000.0
                   : 0.0;
}

double round2(double v) {
  return std::round(v * 100) / 100;
}

Json split_json(const TimeSplit& s) {
  return {{"compute", frac(s.compute_ns, s.span_ns)},
          {"communication", frac(s.comm_ns, s.span_ns)},
          {"memory", frac(s.memory_ns, s.span_ns)},
          {"idle", frac(s.idle_ns, s.span_ns)}};
}

// The idle time by what the GPU waited for (trace_measures.hpp, IdleSplit), as fractions of the
// span like the breakdown: the three sum to its idle.
Json idle_json(const IdleSplit& i, int64_t span_ns) {
  return {{"host_wait", frac(i.host_ns, span_ns)},
          {"stream_event_wait", frac(i.sync_ns, span_ns)},
          {"other", frac(i.other_ns, span_ns)}};
}

std::string rank_name(const TraceMeasures& m) {
  return m.rank >= 0 ? fmt::format("rank {}", m.rank) : m.origin;
}

double small_share(const TraceMeasures& m) {
  return m.kernels ? static_cast<double>(m.bands.front().count) / static_cast<double>(m.kernels)
                   : 0.0;
}

// The steps' DataLoader time over the steps' time; nullopt with no step.
std::optional<double> dataloader_share(const TraceMeasures& m) {
  int64_t in = 0, total = 0;
  for (const auto& s : m.steps) in += s.dataloader_ns, total += s.dur_ns;
  if (total <= 0) return std::nullopt;
  return static_cast<double>(in) / static_cast<double>(total);
}

std::optional<double> median_step_ms(const TraceMeasures& m) {
  if (m.steps.empty()) return std::nullopt;
  std::vector<int64_t> d;
  for (const auto& s : m.steps) d.push_back(s.dur_ns);
  std::sort(d.begin(), d.end());
  return ms(d[(d.size() - 1) / 2]);
}

Json opt(std::optional<double> v) {
  return v ? Json(*v) : Json(nullptr);
}

Severity severity_of(double share, double confidence) {
  if (share >= 0.3 && confidence >= 0.7) return Severity::kCritical;
  return share >= 0.1 ? Severity::kWarning : Severity::kInfo;
}

struct Hit {
  const TraceMeasures* m;
  double share;  // of the rank's span (steps' time for the DataLoader)
  Json figures;
};

Finding finding_of(Cause cause, const std::vector<Hit>& hits, double confidence,
                   std::string summary, const Recording& rec, const Workload& workload) {
  Finding f;
  f.cause = cause;
  f.confidence = round2(confidence);
  double share = 0;
  int64_t first = INT64_MAX, last = INT64_MIN;
  Json per_rank = Json::array(), ranks = Json::array();
  for (const auto& h : hits) {
    share = std::max(share, h.share);
    first = std::min(first, h.m->first_ns);
    last = std::max(last, h.m->first_ns + h.m->split.span_ns);
    ranks.push_back(h.m->rank);
    per_rank.push_back(h.figures);
    for (const int32_t d : h.m->device_ids)
      if (d >= 0) f.gpus.push_back(static_cast<unsigned>(d));
  }
  std::sort(f.gpus.begin(), f.gpus.end());
  f.gpus.erase(std::unique(f.gpus.begin(), f.gpus.end()), f.gpus.end());
  f.share = round2(share);
  f.severity = severity_of(share, f.confidence);
  // On the recording's clock; may be negative here (a trace before the telemetry): clamped by
  // the caller once it has checked the overlap. Without a wall-clock start (a trace cut before
  // the base time Kineto writes after its events), from the traces' first event.
  double start_ns = static_cast<double>(rec.start_unix_ms) * 1e6;
  if (rec.start_unix_ms <= 0) {
    int64_t origin = INT64_MAX;
    for (const TraceRank& t : rec.traces)
      for (const TraceEvent& e : t.events) origin = std::min(origin, e.start_ns);
    if (origin != INT64_MAX) start_ns = static_cast<double>(origin);
  }
  f.start_s = (static_cast<double>(first) - start_ns) / 1e9;
  f.end_s = std::max(f.start_s, (static_cast<double>(last) - start_ns) / 1e9);
  f.summary = std::move(summary);
  f.evidence["duration_s"] = std::round((f.end_s - f.start_s) * 1000) / 1000;
  f.evidence["trace"] = {{"ranks", ranks}, {"per_rank", per_rank}};
  f.fixes = fixes_for(cause, workload);
  return f;
}

// Most kernels tiny, and the GPU idle with nothing queued: the CPU cannot launch fast enough.
std::optional<Finding> launch_overhead(const std::vector<TraceMeasures>& ms_,
                                       const TraceThresholds& th, const Recording& rec,
                                       const Workload& w) {
  std::vector<Hit> hits;
  double conf = 0;
  std::string line;
  for (const auto& m : ms_) {
    const double small = small_share(m);
    const double idle = frac(m.split.idle_ns, m.split.span_ns);
    const double wait = frac(m.idle_host_wait_ns, m.split.idle_ns);
    const double host = frac(m.idle_host_wait_ns, m.split.span_ns);
    // Tiny kernels and a GPU that runs dry between them; or, whatever the kernels' size, a GPU
    // that waits for the host most of the trace (a CPU-bound loop: the same fixes).
    const bool tiny =
        small >= th.small_kernel_share && idle >= th.idle_share && wait >= th.host_wait_share;
    if (!tiny && host < th.host_bound_share) continue;
    hits.push_back({&m,
                    host,
                    {{"rank", m.rank},
                     {"kernels", m.kernels},
                     {"small_kernel_share", round2(small)},
                     {"idle_share", idle},
                     {"host_wait_share", host},
                     {"launch_delay_median_us", round2(m.launch_delay_median_us)},
                     {"runtime_share", frac(m.runtime_ns, m.split.span_ns)}}});
    conf = std::max(conf, 0.5 + 0.4 * std::min(1.0, wait) * std::min(1.0, small / 0.8));
    if (line.empty())
      line = fmt::format(
          "{}: {:.0f} % of {} kernels under 10 us; the GPU idle {:.0f} % of the trace, {:.0f} % "
          "of it with nothing queued (waiting for the CPU to launch); launch delay median {:.1f} "
          "us",
          rank_name(m), 100 * small, m.kernels, 100 * idle, 100 * wait, m.launch_delay_median_us);
  }
  if (hits.empty()) return std::nullopt;
  if (hits.size() > 1) line += fmt::format(" (and {} more ranks alike)", hits.size() - 1);
  return finding_of(Cause::kLaunchOverhead, hits, conf, line, rec, w);
}

std::optional<Finding> data_starvation(const std::vector<TraceMeasures>& ms_,
                                       const TraceThresholds& th, const Recording& rec,
                                       const Workload& w) {
  std::vector<Hit> hits;
  double conf = 0;
  std::string line;
  for (const auto& m : ms_) {
    const auto share = dataloader_share(m);
    if (!share || *share < th.dataloader_share) continue;
    Json steps = Json::array();
    for (const auto& s : m.steps) steps.push_back(ms(s.dataloader_ns));
    hits.push_back({&m,
                    *share,
                    {{"rank", m.rank},
                     {"steps", m.steps.size()},
                     {"dataloader_share", round2(*share)},
                     {"dataloader_ms_per_step", steps},
                     {"step_median_ms", opt(median_step_ms(m))}}});
    conf = std::max(conf, 0.6 + 0.3 * std::min(1.0, *share / 0.3));
    if (line.empty())
      line = fmt::format(
          "{}: the training loop waits in the DataLoader {:.0f} % of its {} steps' time "
          "(median step {:.1f} ms)",
          rank_name(m), 100 * *share, m.steps.size(), median_step_ms(m).value_or(0));
  }
  if (hits.empty()) return std::nullopt;
  if (hits.size() > 1) line += fmt::format(" (and {} more ranks alike)", hits.size() - 1);
  return finding_of(Cause::kDataStarvation, hits, conf, line, rec, w);
}

// NCCL time compute does not hide. With several ranks the straggler is the one that spends the
// least time in NCCL kernels: the others sit in the collectives until it arrives.
std::optional<Finding> communication_wait(const std::vector<TraceMeasures>& ms_,
                                          const TraceThresholds& th, const Recording& rec,
                                          const Workload& w) {
  std::vector<Hit> hits;
  double conf = 0;
  std::string line;
  for (const auto& m : ms_) {
    const double exposed = frac(m.split.comm_ns, m.split.span_ns);
    if (exposed < th.exposed_comm_share) continue;
    hits.push_back({&m,
                    exposed,
                    {{"rank", m.rank},
                     {"nccl_kernels", m.nccl_kernels},
                     {"nccl_ms", ms(m.nccl_ns)},
                     {"exposed_comm_share", exposed},
                     {"nccl_overlap", frac(m.nccl_overlap_ns, m.nccl_ns)},
                     {"step_median_ms", opt(median_step_ms(m))}}});
    conf = std::max(conf, 0.6 + 0.3 * std::min(1.0, exposed / 0.4));
    if (line.empty())
      line = fmt::format(
          "{}: NCCL kernels run {:.0f} % of the trace with no compute beside them ({:.0f} % of "
          "the NCCL time overlaps compute)",
          rank_name(m), 100 * exposed, 100 * frac(m.nccl_overlap_ns, m.nccl_ns));
  }
  if (hits.empty()) return std::nullopt;
  if (hits.size() > 1) line += fmt::format(" (and {} more ranks alike)", hits.size() - 1);
  std::optional<Finding> f = finding_of(Cause::kCommunicationWait, hits, conf, line, rec, w);
  if (ms_.size() >= 2) {
    const auto least = std::min_element(
        ms_.begin(), ms_.end(),
        [](const TraceMeasures& a, const TraceMeasures& b) { return a.nccl_ns < b.nccl_ns; });
    const auto most = std::max_element(
        ms_.begin(), ms_.end(),
        [](const TraceMeasures& a, const TraceMeasures& b) { return a.nccl_ns < b.nccl_ns; });
    if (most->nccl_ns > 0 && least->nccl_ns < 0.9 * static_cast<double>(most->nccl_ns)) {
      f->evidence["straggler_rank"] = least->rank;
      f->summary += fmt::format(
          "; {} spends the least time in NCCL ({:.1f} ms against {:.1f} ms on {}): the others "
          "wait for it, the straggler",
          rank_name(*least), ms(least->nccl_ns), ms(most->nccl_ns), rank_name(*most));
    }
  }
  return f;
}

// With telemetry beside the trace, a trace finding cites its GPUs' steady-state figures, so that
// one line holds both ("GPU-Util 99 %, SM activity 12 %" beside "78 % of kernels under 10 us").
void cite_telemetry(Finding& f, const Diagnosis& out) {
  double util = 0, sm = 0, power = 0;
  int n_util = 0, n_sm = 0, n_power = 0;
  std::vector<unsigned> cited;
  for (const unsigned g : f.gpus)
    for (const auto& gd : out.gpus) {
      if (gd.index != g) continue;
      cited.push_back(g);
      auto add = [&](const char* key, double& sum, int& n) {
        const auto it = gd.metrics.find(key);
        if (it != gd.metrics.end() && it->is_number()) sum += it->get<double>(), ++n;
      };
      add("mean_util_pct", util, n_util);
      add("mean_sm_pct", sm, n_sm);
      add("mean_power_ratio", power, n_power);
    }
  if (n_util + n_sm + n_power == 0) return;
  std::vector<std::string> parts;
  if (n_util) {
    f.evidence["telemetry_util_pct"] = std::round(util / n_util * 10) / 10;
    parts.push_back(fmt::format("GPU-Util {:.0f} %", util / n_util));
  }
  if (n_sm) {
    f.evidence["telemetry_sm_pct"] = std::round(sm / n_sm * 10) / 10;
    parts.push_back(fmt::format("SM activity {:.0f} %", sm / n_sm));
  }
  if (n_power) {
    f.evidence["telemetry_power_ratio"] = std::round(power / n_power * 1000) / 1000;
    parts.push_back(fmt::format("power {:.0f} % of the limit", 100 * power / n_power));
  }
  f.summary += fmt::format("; telemetry of GPU{} {} over the run: {}", cited.size() == 1 ? "" : "s",
                           fmt::join(cited, ", "), fmt::join(parts, ", "));
}

}  // namespace

TraceThresholds trace_thresholds(const DiagnosisConfig& c) {
  return {c.trace_small_kernel_share, c.trace_idle_share,       c.trace_host_wait_share,
          c.trace_host_bound_share,   c.trace_dataloader_share, c.trace_exposed_comm_share};
}

Json trace_measures_json(const TraceMeasures& m) {
  Json j;
  j["rank"] = m.rank >= 0 ? Json(m.rank) : Json(nullptr);
  j["origin"] = m.origin;
  j["device"] = m.device.empty() ? Json(nullptr) : Json(m.device);
  j["devices"] = m.devices;
  j["span_ms"] = ms(m.split.span_ns);
  j["breakdown"] = split_json(m.split);
  j["idle_host_wait"] = frac(m.idle_host_wait_ns, m.split.span_ns);
  j["idle_breakdown"] = idle_json(m.idle, m.split.span_ns);
  j["idle_sync_recorded"] = frac(m.idle.sync_recorded_ns, m.split.span_ns);
  j["sync_records"] = m.sync_records;
  j["device_syncs"] = m.device_syncs;
  j["stream_waits"] = m.stream_waits;
  j["streams"] = Json::array();
  for (const auto& s : m.streams)
    j["streams"].push_back({{"device", s.device},
                            {"stream", s.stream},
                            {"events", s.events},
                            {"busy_ms", ms(s.busy_ns)},
                            {"span_ms", ms(s.span_ns)},
                            {"busy", frac(s.busy_ns, s.span_ns)},
                            {"idle_host_wait", frac(s.idle.host_ns, s.span_ns)},
                            {"idle_kernel_wait", frac(s.idle.sync_ns, s.span_ns)},
                            {"idle_other", frac(s.idle.other_ns, s.span_ns)}});
  j["kernels"] = m.kernels;
  j["kernel_ms"] = ms(m.kernel_ns);
  j["nccl_kernels"] = m.nccl_kernels;
  j["memory_ops"] = m.memory_ops;
  j["small_kernel_share"] = frac(m.bands.empty() ? 0 : static_cast<int64_t>(m.bands[0].count),
                                 static_cast<int64_t>(m.kernels));
  j["bands"] = Json::array();
  for (const auto& b : m.bands)
    j["bands"].push_back(
        {{"below_us", b.below_ns == INT64_MAX ? Json(nullptr) : Json(b.below_ns / 1000)},
         {"count", b.count},
         {"ms", ms(b.total_ns)}});
  j["top_kernels"] = Json::array();
  for (const auto& k : m.top)
    j["top_kernels"].push_back({{"name", k.name},
                                {"count", k.count},
                                {"ms", ms(k.total_ns)},
                                {"share", frac(k.total_ns, m.kernel_ns)}});
  j["launches"] = m.launches;
  j["launch_delay_median_us"] = round2(m.launch_delay_median_us);
  j["launch_delay_p90_us"] = round2(m.launch_delay_p90_us);
  j["runtime_share"] = frac(m.runtime_ns, m.split.span_ns);
  j["nccl_ms"] = ms(m.nccl_ns);
  j["nccl_overlap"] = m.nccl_ns > 0 ? Json(frac(m.nccl_overlap_ns, m.nccl_ns)) : Json(nullptr);
  j["dataloader_ms"] = ms(m.dataloader_ns);
  const auto share = dataloader_share(m);
  j["dataloader_share"] = share ? Json(std::round(*share * 10000) / 10000) : Json(nullptr);
  j["step_median_ms"] = opt(median_step_ms(m));
  j["steps"] = Json::array();
  for (const auto& s : m.steps)
    j["steps"].push_back({{"step", s.step},
                          {"start_ms", ms(s.start_ns - m.first_ns)},
                          {"dur_ms", ms(s.dur_ns)},
                          {"breakdown", split_json(s.split)},
                          {"idle_breakdown", idle_json(s.idle, s.split.span_ns)},
                          {"dataloader_ms", ms(s.dataloader_ns)},
                          {"launched", s.launched}});
  return j;
}

void add_trace_findings(Diagnosis& out, const Recording& rec, const TraceThresholds& th) {
  if (rec.traces.empty()) return;
  std::vector<TraceMeasures> measures;
  for (const auto& t : rec.traces) measures.push_back(measure_trace(t));
  std::sort(measures.begin(), measures.end(),
            [](const TraceMeasures& a, const TraceMeasures& b) { return a.rank < b.rank; });
  out.trace = {{"ranks", Json::array()}};
  for (const auto& m : measures) out.trace["ranks"].push_back(trace_measures_json(m));

  const bool trace_only = rec.gpus.empty();
  Workload w = out.workload;
  const bool steps = std::any_of(measures.begin(), measures.end(),
                                 [](const TraceMeasures& m) { return !m.steps.empty(); });
  if (w.kind == "unknown" && steps) w = {"training", "ProfilerStep#N marks in the trace"};
  std::vector<Finding> found;
  for (auto f : {launch_overhead(measures, th, rec, w), data_starvation(measures, th, rec, w),
                 communication_wait(measures, th, rec, w)})
    if (f) found.push_back(std::move(*f));
  std::sort(found.begin(), found.end(),
            [](const Finding& a, const Finding& b) { return a.share > b.share; });
  for (auto& f : found) {
    // Telemetry is cited only where the trace lies within the recording.
    if (!trace_only && f.end_s > 0 && f.start_s < out.duration_s) cite_telemetry(f, out);
    f.start_s = std::max(0.0, f.start_s);
    f.end_s = std::max(f.start_s, f.end_s);
  }
  if (!trace_only) {
    out.findings.insert(out.findings.end(), found.begin(), found.end());
    return;
  }
  out.findings.insert(out.findings.end(), found.begin(), found.end());

  out.workload = w;
  out.limitations.clear();
  out.limitations.push_back(
      "a profiler trace without telemetry: no power, clocks or temperatures, so efficiency, "
      "power_capped, thermal_throttle, clocks_limited and memory_bound cannot be judged; read "
      "the same run's telemetry beside it");
  int64_t longest = 0;
  for (const auto& m : measures) {
    longest = std::max(longest, m.split.span_ns);
    if (m.devices > 1)
      out.limitations.push_back(fmt::format(
          "{}: events of {} devices in one file, measured together", rank_name(m), m.devices));
  }
  out.duration_s = static_cast<double>(longest) / 1e9;
  out.limitations.push_back(fmt::format(
      "the trace covers {:.1f} ms of GPU time per rank at most: the profiler's window, not the "
      "whole run",
      ms(longest)));
  if (std::all_of(measures.begin(), measures.end(),
                  [](const TraceMeasures& m) { return m.dataloader_ns == 0; }))
    out.limitations.push_back(
        "no DataLoader spans (enumerate(DataLoader)...__next__) in the trace: waits for input "
        "cannot be seen");
  if (!found.empty()) {
    out.verdict = found.front().cause;
    out.headline = found.front().summary;
    return;
  }
  int64_t idle = 0, span = 0;
  for (const auto& m : measures) idle += m.split.idle_ns, span += m.split.span_ns;
  if (frac(idle, span) < th.idle_share) {
    out.verdict = Cause::kHealthy;
    out.headline =
        fmt::format("the GPU is busy {:.0f} % of the trace", 100 * (1 - frac(idle, span)));
  } else {
    out.verdict.reset();
    out.headline =
        fmt::format("the GPU is idle {:.0f} % of the trace, for no cause the trace can name",
                    100 * frac(idle, span));
  }
}

}  // namespace gpudoctor
