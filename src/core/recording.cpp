#include "core/recording.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>

namespace gpudoctor {

std::vector<double>& GpuSeries::column_for_write(Field f) {
  auto& c = columns[index_of(f)];
  if (!c) {
    std::vector<double> values;
    assign_fresh(values, time_s.size(), kMissing);
    c = Column(std::move(values));
  }
  return c.values();
}

void advise_huge_pages(void* p, size_t bytes) noexcept {
#ifdef MADV_HUGEPAGE
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  if (p == nullptr || bytes < 2 * kHuge) return;
  const auto b = (reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1);
  const auto e = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(kHuge - 1);
  if (e > b) ::madvise(reinterpret_cast<void*>(b), e - b, MADV_HUGEPAGE);  // advice: may be refused
#else
  (void)p, (void)bytes;
#endif
}

size_t GpuSeries::append_row(double t_s) {
  time_s.push_back(t_s);
  for (auto& c : columns)
    if (c) c.push_back(kMissing);
  return time_s.size() - 1;
}

void GpuSeries::compact() {
  for (auto& c : columns) c.compact();
}

Recording without_gpus(const Recording& rec) {
  return Recording{rec.system,  rec.start_unix_ms, rec.source,  {},        rec.notes,
                   rec.command, rec.host,          rec.markers, rec.audit, rec.traces};
}

void rebase_times(Recording& rec, bool start_known) {
  double min_t = 0;
  for (const auto& g : rec.gpus)
    if (!g.time_s.empty()) min_t = std::min(min_t, g.time_s.front());
  if (min_t >= 0) return;
  const auto shift_ms = static_cast<int64_t>(std::llround(min_t * 1000));
  const double shift_s = static_cast<double>(shift_ms) / 1000.0;
  if (start_known) rec.start_unix_ms += shift_ms;
  for (auto& g : rec.gpus) {
    g.time_s.shift(-shift_s);
    for (auto& p : g.processes) p.first_s -= shift_s, p.last_s -= shift_s;
    for (auto& o : g.owners) o.first_s -= shift_s, o.last_s -= shift_s;
    if (g.lost_at_s) *g.lost_at_s -= shift_s;
  }
}

void append_frame(Recording& rec, const Frame& frame) {
  const double t = static_cast<double>(frame.time_unix_ms - rec.start_unix_ms) / 1000.0;
  for (size_t i = 0; i < frame.devices.size() && i < rec.gpus.size(); ++i) {
    const DeviceSample& s = frame.devices[i];
    GpuSeries& g = rec.gpus[i];
    if (s.lost) {
      if (!g.lost_at_s) g.lost_at_s = t;
      continue;
    }
    const double prev_t = g.size() ? g.time_s.back() : -1;
    // (A live window's times stay doubles, as its columns do: read again and again, not kept.)
    if (g.time_s.empty()) g.time_s = TimeColumn(std::vector<double>{});
    const size_t row = g.append_row(t);
    for (const auto& fi : all_fields()) {
      const Reading& r = s[fi.field];
      if (r.has_value())
        g.column_for_write(fi.field)[row] = r.value();
      else if (r.state() == Reading::State::kUnsupported && !g.has(fi.field))
        g.unsupported[fi.field] = r.code();
    }
    if (g.power_limit_source.empty() &&
        (s[Field::kPowerLimitDefault].has_value() || s[Field::kPowerLimitEnforced].has_value() ||
         s[Field::kPowerLimit].has_value()))
      g.power_limit_source = "log";  // the source itself (NVML, the simulator) gave the limit
    if (s.processes_supported) g.processes_recorded = true;
    for (const auto& p : s.processes) {
      ProcessSpan* open = nullptr;
      for (auto& span : g.processes)
        if (span.pid == p.pid && span.last_s == prev_t) open = &span;
      if (!open) {
        g.processes.push_back({p.pid, p.name, t, t, std::nullopt});
        open = &g.processes.back();
      }
      open->last_s = t;
      if (p.used_memory_mib)
        open->max_memory_mib = std::max(open->max_memory_mib.value_or(0), *p.used_memory_mib);
    }
    for (const auto& o : s.owners) {
      OwnerSpan* open = nullptr;
      for (auto& span : g.owners)
        if (span.last_s == prev_t && span.owner == o) open = &span;
      if (!open) {
        g.owners.push_back({o, t, t});
        open = &g.owners.back();
      }
      open->last_s = t;
    }
  }
}

void keep_rows(GpuSeries& g, const std::vector<size_t>& rows) {
  g.time_s.keep_rows(rows);
  for (auto& c : g.columns) c.keep_rows(rows);
}

GpuSeries slice_series(const GpuSeries& g, const std::vector<std::pair<double, double>>& ranges) {
  std::vector<size_t> rows;
  for (const auto& [a, b] : ranges) {
    const auto from = std::lower_bound(g.time_s.begin(), g.time_s.end(), a) - g.time_s.begin();
    const auto to = std::upper_bound(g.time_s.begin(), g.time_s.end(), b) - g.time_s.begin();
    for (auto r = from; r < to; ++r) rows.push_back(static_cast<size_t>(r));
  }
  // The whole series, then its rows, spans and loss cut to the ranges: whatever else it has (info,
  // host, limits, unsupported fields, ...) comes along as it is.
  GpuSeries out = g;
  keep_rows(out, rows);
  out.processes.clear();
  out.owners.clear();
  out.lost_at_s.reset();
  auto clip = [&](auto span, auto& into) {
    for (const auto& [a, b] : ranges) {
      if (span.last_s < a || span.first_s > b) continue;
      auto part = span;
      part.first_s = std::max(span.first_s, a);
      part.last_s = std::min(span.last_s, b);
      into.push_back(std::move(part));
    }
  };
  for (const auto& p : g.processes) clip(p, out.processes);
  for (const auto& o : g.owners) clip(o, out.owners);
  if (g.lost_at_s)
    for (const auto& [a, b] : ranges)
      if (*g.lost_at_s >= a && *g.lost_at_s <= b) out.lost_at_s = g.lost_at_s;
  return out;
}

void trim_recording(Recording& rec, double since_s, double until_s) {
  for (auto& g : rec.gpus) {
    const auto b = std::lower_bound(g.time_s.begin(), g.time_s.end(), since_s) - g.time_s.begin();
    const auto e = std::lower_bound(g.time_s.begin(), g.time_s.end(), until_s) - g.time_s.begin();
    g.time_s.keep_range(static_cast<size_t>(b), static_cast<size_t>(e));
    for (auto& c : g.columns) c.keep_range(static_cast<size_t>(b), static_cast<size_t>(e));
    std::vector<ProcessSpan> kept;
    for (auto& p : g.processes) {
      if (p.last_s < since_s || p.first_s >= until_s) continue;
      p.first_s = std::max(p.first_s, since_s);
      p.last_s = std::min(p.last_s, until_s);
      kept.push_back(std::move(p));
    }
    g.processes = std::move(kept);
    std::vector<OwnerSpan> kept_owners;
    for (auto& o : g.owners) {
      if (o.last_s < since_s || o.first_s >= until_s) continue;
      o.first_s = std::max(o.first_s, since_s);
      o.last_s = std::min(o.last_s, until_s);
      kept_owners.push_back(std::move(o));
    }
    g.owners = std::move(kept_owners);
    if (g.lost_at_s && *g.lost_at_s >= until_s) g.lost_at_s.reset();
  }
}

}  // namespace gpudoctor
