#include "analysis/trace_measures.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <unordered_map>
#include <utility>

namespace gpudoctor {

namespace {

using Span = std::pair<int64_t, int64_t>;  // [start, end) in ns
using Spans = std::vector<Span>;

// Sorted, merged, disjoint.
Spans merged(Spans v) {
  std::sort(v.begin(), v.end());
  Spans out;
  for (const auto& s : v) {
    if (s.second <= s.first) continue;
    if (!out.empty() && s.first <= out.back().second)
      out.back().second = std::max(out.back().second, s.second);
    else
      out.push_back(s);
  }
  return out;
}

int64_t length(const Spans& v) {
  int64_t n = 0;
  for (const auto& s : v) n += s.second - s.first;
  return n;
}

// Both merged.
Spans intersect(const Spans& a, const Spans& b) {
  Spans out;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const int64_t lo = std::max(a[i].first, b[j].first);
    const int64_t hi = std::min(a[i].second, b[j].second);
    if (lo < hi) out.emplace_back(lo, hi);
    (a[i].second < b[j].second ? i : j)++;
  }
  return out;
}

Spans unite(const Spans& a, const Spans& b) {
  Spans v = a;
  v.insert(v.end(), b.begin(), b.end());
  return merged(std::move(v));
}

Spans clip(const Spans& v, int64_t lo, int64_t hi) {
  return intersect(v, Spans{{lo, hi}});
}

// The four parts of [lo, hi), from the three kinds of busy time (each merged).
TimeSplit split_of(const Spans& compute, const Spans& nccl, const Spans& memory, int64_t lo,
                   int64_t hi) {
  TimeSplit t;
  t.span_ns = std::max<int64_t>(0, hi - lo);
  const Spans c = clip(compute, lo, hi), n = clip(nccl, lo, hi), m = clip(memory, lo, hi);
  const Spans cn = unite(c, n), all = unite(cn, m);
  t.compute_ns = length(c);
  t.comm_ns = length(cn) - t.compute_ns;
  t.memory_ns = length(all) - length(cn);
  t.idle_ns = t.span_ns - length(all);
  return t;
}

// A GPU event's (or a sync record's) device and stream as one key.
int64_t stream_key(const TraceEvent& e) {
  return (static_cast<int64_t>(e.device) << 32) | static_cast<uint32_t>(e.stream);
}

// Over spans sorted by start, asked in increasing order: the latest end of the spans begun by
// `a`.
class LatestEnd {
 public:
  explicit LatestEnd(const Spans& v) : v_(v) {}
  int64_t at(int64_t a) {
    while (next_ < v_.size() && v_[next_].first <= a) end_ = std::max(end_, v_[next_++].second);
    return end_;
  }

 private:
  const Spans& v_;
  size_t next_ = 0;
  int64_t end_ = INT64_MIN;
};

// What IdleSplit's rule reads besides the GPU events: the rank's launch calls by correlation id,
// its "Stream Wait Event" records by stream (times sorted), and the spans the CPU was blocked
// in a synchronisation, by call and by the trace's record (each sorted by start).
struct GapRule {
  const std::unordered_map<int64_t, const TraceEvent*>& launch_of;
  const std::unordered_map<int64_t, std::vector<int64_t>>& waits;
  const Spans& syncs;
  const Spans& synced;
};

// The idle gaps between GPU events, by what they waited for (IdleSplit).
struct IdleGaps {
  Spans host, sync, other, recorded;
  IdleSplit split() const { return {length(host), length(sync), length(other), length(recorded)}; }
};

// The gaps between `events` (sorted by start: the whole rank's, or one stream's) classed by
// IdleSplit's rule, each by the event that ends it and that event's launch call. The same rule
// makes the rank's split and each stream's.
IdleGaps idle_gaps(const std::vector<const TraceEvent*>& events, const GapRule& rule) {
  IdleGaps g;
  if (events.empty()) return g;
  int64_t busy_end = events.front()->start_ns;
  LatestEnd sync_end(rule.syncs), synced_end(rule.synced);  // the CPU blocked, by call or record
  std::unordered_map<int64_t, int64_t> last_launch;         // stream key -> its last event's launch
  for (const TraceEvent* e : events) {
    const auto it =
        e->correlation >= 0 ? rule.launch_of.find(e->correlation) : rule.launch_of.end();
    const TraceEvent* call = it != rule.launch_of.end() ? it->second : nullptr;
    const int64_t key = stream_key(*e), issued = call ? call->start_ns : e->start_ns;
    const auto last = last_launch.find(key);
    if (e->start_ns > busy_end) {
      const int64_t a = busy_end;
      const Span gap{a, e->start_ns};
      // A "Stream Wait Event" recorded on this stream after its previous event was launched
      // and by this one's launch: this event waited on another stream's event.
      bool waited = false;
      if (const auto w = rule.waits.find(key); w != rule.waits.end()) {
        const int64_t after = last != last_launch.end() ? last->second : INT64_MIN;
        const auto k = std::upper_bound(w->second.begin(), w->second.end(), after);
        waited = k != w->second.end() && *k <= issued;
      }
      if (synced_end.at(a) >= a) {
        g.sync.push_back(gap);  // the CPU blocked in a sync the trace recorded
        g.recorded.push_back(gap);
      } else if (sync_end.at(a) >= a) {
        g.sync.push_back(gap);  // the CPU blocked in a sync call as the GPU ran dry
      } else if (call && call->start_ns >= a) {
        g.host.push_back(gap);  // nothing queued
      } else if (waited) {
        g.sync.push_back(gap);  // queued, waiting on another stream's event: recorded
        g.recorded.push_back(gap);
      } else if (call && call->end_ns() <= a) {
        g.sync.push_back(gap);  // queued, held for a dependency
      } else {
        g.other.push_back(gap);
      }
    }
    last_launch[key] = issued;
    busy_end = std::max(busy_end, e->end_ns());
  }
  return g;
}

double percentile(std::vector<int64_t>& v, double q) {
  if (v.empty()) return 0;
  const auto k = static_cast<size_t>(std::floor(q * static_cast<double>(v.size() - 1)));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return static_cast<double>(v[k]);
}

}  // namespace

bool is_nccl_kernel(std::string_view name) {
  for (size_t i = 0; i + 4 <= name.size(); ++i)
    if ((name[i] | 0x20) == 'n' && (name[i + 1] | 0x20) == 'c' && (name[i + 2] | 0x20) == 'c' &&
        (name[i + 3] | 0x20) == 'l')
      return true;
  return false;
}

bool is_stream_wait(std::string_view name) {
  return name.find("Wait") != std::string_view::npos;
}

bool is_sync_call(std::string_view name) {
  return name == "cudaStreamSynchronize" || name == "cudaEventSynchronize" ||
         name == "cudaDeviceSynchronize" || name == "cuStreamSynchronize" ||
         name == "cuEventSynchronize" || name == "cuCtxSynchronize";
}

TraceMeasures measure_trace(const TraceRank& t) {
  TraceMeasures m;
  m.rank = t.rank;
  m.origin = t.origin;
  std::vector<uint8_t> nccl_name(t.names.size()), sync_name(t.names.size());
  for (size_t i = 0; i < t.names.size(); ++i) {
    nccl_name[i] = is_nccl_kernel(t.names[i]);
    sync_name[i] = is_sync_call(t.names[i]);
  }
  Spans syncs;   // the CPU blocked in a synchronisation call
  Spans synced;  // the same, from the trace's cuda_sync records
  std::unordered_map<int64_t, std::vector<int64_t>> waits;  // stream key -> "Stream Wait Event"s
  std::unordered_map<int64_t, Spans> by_stream;             // stream key -> its GPU events

  Spans compute, nccl, memory, steps_cpu;
  std::vector<const TraceEvent*> gpu;
  std::unordered_map<int64_t, const TraceEvent*> launch_of;  // correlation -> runtime call
  std::unordered_map<uint32_t, TopKernel> by_name;
  std::vector<int32_t> devices;
  m.bands = {
      {10'000, 0, 0}, {100'000, 0, 0}, {1'000'000, 0, 0}, {10'000'000, 0, 0}, {INT64_MAX, 0, 0}};
  Spans dataloader;
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (const auto& e : t.events) {
    switch (e.kind) {
      case TraceKind::kRuntime:
        m.runtime_ns += e.dur_ns;
        if (e.correlation >= 0) launch_of.emplace(e.correlation, &e);
        if (sync_name[e.name]) syncs.emplace_back(e.start_ns, e.end_ns());
        continue;
      case TraceKind::kSync:
        ++m.sync_records;
        if (e.stream < 0) ++m.device_syncs;
        if (e.stream >= 0 && is_stream_wait(t.names[e.name])) {
          if (e.wait_stream != e.stream) {
            ++m.stream_waits;
            waits[stream_key(e)].push_back(e.start_ns);
          }
        } else {
          synced.emplace_back(e.start_ns, e.end_ns());
        }
        continue;
      case TraceKind::kStep:
        m.steps.push_back({e.step, e.start_ns, e.dur_ns, {}, {}, 0, 0});
        continue;
      case TraceKind::kDataLoader:
        dataloader.emplace_back(e.start_ns, e.end_ns());
        continue;
      default:
        break;
    }
    gpu.push_back(&e);
    by_stream[stream_key(e)].emplace_back(e.start_ns, e.end_ns());
    lo = std::min(lo, e.start_ns);
    hi = std::max(hi, e.end_ns());
    if (e.device >= 0 && std::find(devices.begin(), devices.end(), e.device) == devices.end())
      devices.push_back(e.device);
    if (e.kind != TraceKind::kKernel) {
      ++m.memory_ops;
      memory.emplace_back(e.start_ns, e.end_ns());
      continue;
    }
    ++m.kernels;
    m.kernel_ns += e.dur_ns;
    for (auto& b : m.bands)
      if (e.dur_ns < b.below_ns) {
        ++b.count;
        b.total_ns += e.dur_ns;
        break;
      }
    auto& top = by_name[e.name];
    ++top.count;
    top.total_ns += e.dur_ns;
    if (nccl_name[e.name]) {
      ++m.nccl_kernels;
      nccl.emplace_back(e.start_ns, e.end_ns());
    } else {
      compute.emplace_back(e.start_ns, e.end_ns());
    }
  }
  if (gpu.empty()) return m;
  m.devices = devices.size();
  m.device_ids = devices;
  if (!devices.empty() && static_cast<size_t>(devices.front()) < t.device_names.size())
    m.device = t.device_names[static_cast<size_t>(devices.front())];
  m.first_ns = lo;
  compute = merged(std::move(compute));
  nccl = merged(std::move(nccl));
  memory = merged(std::move(memory));
  dataloader = merged(std::move(dataloader));
  m.split = split_of(compute, nccl, memory, lo, hi);
  m.nccl_ns = length(nccl);
  m.nccl_overlap_ns = length(intersect(nccl, compute));
  m.dataloader_ns = length(dataloader);

  for (auto& [key, v] : waits) std::sort(v.begin(), v.end());
  std::sort(syncs.begin(), syncs.end());
  std::sort(synced.begin(), synced.end());
  const GapRule rule{launch_of, waits, syncs, synced};

  // Launch delay, and the idle gaps by what the GPU waited for (IdleSplit).
  std::sort(gpu.begin(), gpu.end(),
            [](const TraceEvent* a, const TraceEvent* b) { return a->start_ns < b->start_ns; });
  std::vector<int64_t> delays, launched_at;
  std::unordered_map<int64_t, std::vector<const TraceEvent*>> on_stream;  // each sorted by start
  for (const TraceEvent* e : gpu) {
    on_stream[stream_key(*e)].push_back(e);
    const auto it = e->correlation >= 0 ? launch_of.find(e->correlation) : launch_of.end();
    if (it == launch_of.end()) continue;
    if (e->kind == TraceKind::kKernel) delays.push_back(e->start_ns - it->second->start_ns);
    launched_at.push_back(it->second->start_ns);
  }
  const IdleGaps idle = idle_gaps(gpu, rule);
  m.idle = idle.split();
  m.idle_host_wait_ns = m.idle.host_ns;

  for (auto& [key, spans] : by_stream) {
    StreamMeasure s;
    s.device = static_cast<int32_t>(key >> 32);
    s.stream = static_cast<int32_t>(static_cast<uint32_t>(key));
    s.events = spans.size();
    spans = merged(std::move(spans));
    s.busy_ns = length(spans);
    s.span_ns = spans.back().second - spans.front().first;
    s.idle = idle_gaps(on_stream[key], rule).split();
    m.streams.push_back(s);
  }
  std::sort(m.streams.begin(), m.streams.end(), [](const StreamMeasure& a, const StreamMeasure& b) {
    return std::pair(a.device, a.stream) < std::pair(b.device, b.stream);
  });
  m.launches = delays.size();
  m.launch_delay_median_us = percentile(delays, 0.5) / 1000;
  m.launch_delay_p90_us = percentile(delays, 0.9) / 1000;

  for (auto& [name, top] : by_name) {
    top.name = t.names[name];
    m.top.push_back(std::move(top));
  }
  std::sort(m.top.begin(), m.top.end(), [](const TopKernel& a, const TopKernel& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
  });
  if (m.top.size() > 10) m.top.resize(10);

  std::sort(m.steps.begin(), m.steps.end(),
            [](const StepMeasure& a, const StepMeasure& b) { return a.start_ns < b.start_ns; });
  for (auto& s : m.steps) {
    const int64_t end = s.start_ns + s.dur_ns;
    s.split = split_of(compute, nccl, memory, s.start_ns, end);
    // Idle time of the step outside the rank's GPU events' span (before the first, after the
    // last) follows no gap: other.
    s.idle.host_ns = length(clip(idle.host, s.start_ns, end));
    s.idle.sync_ns = length(clip(idle.sync, s.start_ns, end));
    s.idle.other_ns = std::max<int64_t>(0, s.split.idle_ns - s.idle.host_ns - s.idle.sync_ns);
    s.idle.sync_recorded_ns = length(clip(idle.recorded, s.start_ns, end));
    s.dataloader_ns = length(clip(dataloader, s.start_ns, s.start_ns + s.dur_ns));
  }
  // Each GPU event to the step its launch call began in (steps do not overlap).
  std::sort(launched_at.begin(), launched_at.end());
  for (auto& s : m.steps) {
    const auto lo_it = std::lower_bound(launched_at.begin(), launched_at.end(), s.start_ns);
    const auto hi_it = std::lower_bound(lo_it, launched_at.end(), s.start_ns + s.dur_ns);
    s.launched = static_cast<size_t>(hi_it - lo_it);
  }
  return m;
}

}  // namespace gpudoctor
