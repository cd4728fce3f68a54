#include "analysis/data_quality.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "analysis/prepare.hpp"
#include "core/duration.hpp"

namespace gpudoctor {
namespace {

bool same(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || a == b;
}

// The samples the scan keeps: every one (no index kept) until a sample is left out.
struct Kept {
  size_t n = 0;
  std::vector<size_t> idx;  // empty while every sample is kept
  size_t operator[](size_t j) const { return idx.empty() ? j : idx[j]; }
  size_t size() const { return n; }
};

// Whether the median absolute difference between samples k apart (over the kept samples) is at
// least `least`, without finding it: the median (rank m / 2 of m differences) is at least that
// where no more than m / 2 of them are below it. False where lag_diff is NaN (fewer than 20).
bool lag_diff_at_least(ColumnView x, const Kept& kept, size_t k, double least) {
  size_t m = 0, below = 0;
  for (size_t j = k; j < kept.size(); ++j) {
    const double a = x[kept[j]], b = x[kept[j - k]];
    if (std::isnan(a) || std::isnan(b)) continue;
    ++m;
    below += std::abs(a - b) < least;
  }
  return m >= 20 && below <= m / 2;
}

// Median absolute difference between samples k apart (over the kept samples); d is scratch.
double lag_diff(ColumnView x, const Kept& kept, size_t k, std::vector<double>& d) {
  d.clear();
  for (size_t j = k; j < kept.size(); ++j) {
    const double a = x[kept[j]], b = x[kept[j - k]];
    if (!std::isnan(a) && !std::isnan(b)) d.push_back(std::abs(a - b));
  }
  if (d.size() < 20) return std::numeric_limits<double>::quiet_NaN();
  std::nth_element(d.begin(), d.begin() + static_cast<long>(d.size() / 2), d.end());
  return d[d.size() / 2];
}

}  // namespace

GpuQuality scan_gpu_quality(const GpuSeries& s, const DiagnosisConfig& cfg) {
  GpuQuality out;
  const unsigned idx = s.info.index;
  const size_t n = s.size();
  auto& drop = out.drop;
  drop.assign(n, 0);
  // Time that goes back or stands still: left out.
  {
    double last = -std::numeric_limits<double>::infinity();
    size_t count = 0;
    double first = 0;
    const ColumnView time = s.time_s;
    for (size_t i = 0; i < n; ++i) {
      const double t = time[i];
      if (!(t > last)) {
        if (count++ == 0) first = t;
        drop[i] = 1;
        continue;
      }
      last = t;
    }
    if (count)
      out.issues.push_back({"time_backwards", idx, first, first, count,
                            fmt::format("{} sample(s) whose time went back or stood still "
                                        "(left out)",
                                        count)});
  }
  Kept kept;
  if (std::find(drop.begin(), drop.end(), 1) == drop.end()) {
    kept.n = n;
  } else {
    for (size_t i = 0; i < n; ++i)
      if (!drop[i]) kept.idx.push_back(i);
    kept.n = kept.idx.size();
  }
  // Frozen rows: every value the same as the row before, while a live power reading (to the
  // 10 mW a sensor reports, never repeated exactly for long) says the values should move.
  const auto power = s.column(Field::kPower);
  // A column with one value throughout repeats on every row: the others tell.
  std::vector<ColumnView> moving;
  for (const auto& c : s.columns)
    if (c && !c.is_constant()) moving.push_back(c.view());
  auto row_same = [&](size_t a, size_t b) {
    // Power first: the reading that moves from row to row, so most rows differ there.
    if (power && !same((*power)[a], (*power)[b])) return false;
    for (const auto& c : moving)
      if (!same(c[a], c[b])) return false;
    return true;
  };
  for (size_t j = 1; j < kept.size();) {
    size_t k = j;
    while (k < kept.size() && row_same(kept[k], kept[k - 1])) ++k;
    const size_t repeats = k - j;
    const double span = s.time_s[kept[k - 1]] - s.time_s[kept[j - 1]];
    if (repeats >= static_cast<size_t>(cfg.frozen_rows) && span >= cfg.frozen_min_s && power) {
      const double p = (*power)[kept[j]];
      if (!std::isnan(p) && p != std::floor(p)) {
        for (size_t m = j; m < k; ++m) drop[kept[m]] = 1;
        const double t0 = s.time_s[kept[j]], t1 = s.time_s[kept[k - 1]];
        out.issues.push_back(
            {"frozen", idx, t0, t1, repeats,
             fmt::format("{} rows repeat the row before value for value for {} (a logger that "
                         "stopped reading the GPU): left out",
                         repeats, human_duration(t1 - t0))});
      }
    }
    j = std::max(k, j + 1);
  }
  // Gaps: a time step many intervals long.
  {
    const double interval =
        kept.size() < 2
            ? std::numeric_limits<double>::quiet_NaN()
            : diag::median_by(kept.size() - 1,
                              diag::TimeSteps(s.time_s.view(), [&](size_t j) { return kept[j]; }));
    if (!std::isnan(interval) && interval > 0) {
      const double gap = std::max(30.0, cfg.gap_intervals * interval);
      const ColumnView time = s.time_s;
      double t1 = kept.size() > 0 ? time[kept[0]] : 0;
      for (size_t j = 1; j < kept.size(); ++j) {
        const double t0 = t1;
        t1 = time[kept[j]];
        if (t1 - t0 >= gap)
          out.issues.push_back({"gap", idx, t0, t1, 0,
                                fmt::format("no sample for {} (the interval is {:.3g} s)",
                                            human_duration(t1 - t0), interval)});
      }
    }
  }
  // Interleaved GPUs: values that change far more from one row to the next than from one row
  // to the row k back (k = 2..8): k GPUs written on alternate rows with no index column. Read on
  // slow-moving fields only (memory in use, temperature), which no workload swings row by row.
  {
    struct Probe {
      Field f;
      double material;  // smallest row-to-row difference that matters
      const char* what;
    };
    const Probe probes[] = {{Field::kMemUsed, 256, "memory used"},
                            {Field::kTemp, 3, "temperature"},
                            {Field::kMemTotal, 256, "memory total"}};
    std::vector<double> scratch;
    for (const auto& p : probes) {
      const auto c = s.column(p.f);
      // (Most logs stop here: consecutive rows differ by less than matters.)
      if (!c || !lag_diff_at_least(*c, kept, 1, p.material)) continue;
      const double d1 = lag_diff(*c, kept, 1, scratch);
      if (!(d1 >= p.material)) continue;
      size_t found = 0;
      double dk = 0;
      for (size_t k = 2; k <= 8 && !found; ++k) {
        dk = lag_diff(*c, kept, k, scratch);
        if (dk <= d1 / 4) found = k;
      }
      if (!found) continue;
      out.issues.push_back(
          {"interleaved", idx, kept.size() == 0 ? 0 : s.time_s[kept[0]],
           kept.size() == 0 ? 0 : s.time_s[kept[kept.size() - 1]], kept.size(),
           fmt::format("{} jumps by {:.0f} from row to row but only {:.0f} between rows {} "
                       "apart: {} GPUs look interleaved on alternate rows without an index "
                       "column, read as one (give the index column, or --map it)",
                       p.what, d1, dk, found, found)});
      break;
    }
  }
  return out;
}

QualityScan combine_quality(std::vector<GpuQuality> gpus) {
  QualityScan q;
  for (auto& g : gpus) {
    q.issues.insert(q.issues.end(), g.issues.begin(), g.issues.end());
    const bool any = std::find(g.drop.begin(), g.drop.end(), 1) != g.drop.end();
    q.any_drop = q.any_drop || any;
    q.drop.push_back(any ? std::move(g.drop) : std::vector<uint8_t>{});
  }
  return q;
}

}  // namespace gpudoctor
