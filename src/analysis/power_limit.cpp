#include "analysis/power_limit.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/clock_reasons.hpp"
#include "core/gpu_models.hpp"

namespace gpudoctor {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
bool known(double v) {
  return !std::isnan(v);
}

double median(std::vector<double> v) {
  if (v.empty()) return kNaN;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// The column's known values; a column of one value gives it once (every use below is of the set of
// values or of their median, which one copy keeps).
std::vector<double> known_values(ColumnView c) {
  std::vector<double> out;
  if (!c) return out;
  if (c.constant()) {
    if (!c.empty() && known(c.front())) out.push_back(c.front());
    return out;
  }
  out.reserve(c->size());
  for (double x : *c)
    if (known(x)) out.push_back(x);
  return out;
}

bool cap_reason(double r) {
  return known(r) && r >= 0 && r < 1e15 &&
         (static_cast<uint64_t>(r) & static_cast<uint64_t>(0x4));  // SW power cap
}

}  // namespace

double power_plateau_w(std::vector<double> v) {
  if (v.size() < 20) return 0;
  const size_t n = v.size();
  // The 95th percentile (the order of the rest does not matter: the median below is by rank).
  std::nth_element(v.begin(), v.begin() + static_cast<long>((n - 1) * 95 / 100), v.end());
  const double top = v[(n - 1) * 95 / 100];
  if (!(top > 0)) return 0;
  const double band = std::max(1.5, 0.02 * top);
  size_t in = 0, above = 0, below = 0;
  for (double x : v) {
    if (x > top + band)
      ++above;
    else if (x >= top - band)
      ++in;
    else if (x < top - 3 * band)
      ++below;
  }
  const double nd = static_cast<double>(n);
  // A ceiling, not a steady draw: many samples at the top, almost none above it, and the work
  // drawing visibly less at other times (a steady load's noise spreads both ways instead).
  if (in < 0.3 * nd || above > 0.02 * nd || below < 0.1 * nd) return 0;
  // The median of the samples at the top, found among them where they are (no copy of them).
  const auto at_end = std::partition(
      v.begin(), v.end(), [&](double x) { return !(x > top + band) && x >= top - band; });
  const auto mid = v.begin() + static_cast<long>(in / 2);
  std::nth_element(v.begin(), mid, at_end);
  return *mid;
}

std::vector<double> power_levels_w(std::vector<double> v, double min_share) {
  std::vector<double> levels;
  if (v.size() < 10) return levels;
  std::sort(v.begin(), v.end());
  // A histogram in bins of 1 % of the top, smoothed over three bins: its peaks, each held by at
  // least min_share of the samples and parted from the next by a valley, are the levels.
  const double top = v[(v.size() - 1) * 95 / 100];
  const double width = std::max(1.0, 0.01 * top);
  const double lo = v.front();
  const double span = (v.back() - lo) / width;
  if (!(span < 1e5)) return levels;
  const size_t bins = static_cast<size_t>(span) + 1;
  std::vector<double> count(bins, 0), smooth(bins, 0);
  for (double x : v) count[static_cast<size_t>((x - lo) / width)] += 1;
  for (size_t i = 0; i < bins; ++i)
    smooth[i] = count[i] + (i > 0 ? count[i - 1] : 0) + (i + 1 < bins ? count[i + 1] : 0);
  const double need = min_share * static_cast<double>(v.size());
  std::vector<size_t> peaks;
  for (size_t i = 0; i < bins; ++i) {
    const double left = i > 0 ? smooth[i - 1] : -1, right = i + 1 < bins ? smooth[i + 1] : -1;
    if (smooth[i] < need || smooth[i] < left || smooth[i] <= right) continue;
    if (!peaks.empty()) {
      const size_t p = peaks.back();
      double valley = smooth[p];
      for (size_t k = p; k <= i; ++k) valley = std::min(valley, smooth[k]);
      if (valley > 0.6 * std::min(smooth[p], smooth[i])) {
        if (smooth[i] > smooth[p]) peaks.back() = i;  // one broad peak: keep its top
        continue;
      }
    }
    peaks.push_back(i);
  }
  // Each level: the median of the samples within 1.5 bins of its peak, a run of the sorted
  // samples (x - c grows with x), read where it lies.
  for (size_t p : peaks) {
    const double c = lo + (static_cast<double>(p) + 0.5) * width;
    auto near = [&](double x) { return std::abs(x - c) <= 1.5 * width; };
    const auto b =
        std::partition_point(v.begin(), v.end(), [&](double x) { return x < c && !near(x); });
    const auto e = std::partition_point(b, v.end(), near);
    if (e > b) levels.push_back(b[(e - b) / 2]);  // (the median as median() takes it: the upper)
  }
  return levels;
}

ColumnView power_draw(const GpuSeries& s) {
  return s.has(Field::kPower) ? s.column(Field::kPower) : s.column(Field::kPowerInstant);
}

PowerLimitEvidence resolve_power_limit(const GpuSeries& s, const DiagnosisConfig& cfg) {
  PowerLimitEvidence e;
  const size_t n = s.size();
  const auto power = power_draw(s);
  const auto percent = s.column(Field::kPowerPercent);
  auto util = s.column(Field::kUtilGpu);
  if (!util) util = s.column(Field::kGpmGraphicsUtil);
  const auto reasons = s.column(Field::kClockEventReasons);
  auto enforced_col = s.column(Field::kPowerLimitEnforced);
  if (!enforced_col) enforced_col = s.column(Field::kPowerLimit);
  double model_tdp_w = 0;  // 0: the name is not in the model table
  if (!s.info.name.empty())
    if (const auto model = gpu_model_by_name(s.info.name)) model_tdp_w = model->tdp_w;

  auto take = [&](double w, bool is_default, std::string source, double confidence) {
    if (!(w > 0)) return;  // a zero or negative "limit" (an N/A read as 0) is none
    e.default_w = w, e.is_default = is_default, e.source = std::move(source);
    e.confidence = confidence;
  };
  const double col_default = median(known_values(s.column(Field::kPowerLimitDefault)));
  std::vector<double> enforced = known_values(enforced_col);
  std::erase_if(enforced, [](double w) { return !(w > 0); });

  // Power while the SW power cap held the GPU, and the distinct levels it held it at.
  std::vector<double> capped;
  if (reasons && power)
    for (size_t i = 0; i < n; ++i)
      if (cap_reason((*reasons)[i]) && known((*power)[i])) capped.push_back((*power)[i]);
  if (capped.size() >= static_cast<size_t>(cfg.min_samples))
    e.cap_levels_w = power_levels_w(std::move(capped), 0.1);
  // Busy samples' power, for a plateau.
  if (power) {
    std::vector<double> busy;
    busy.reserve(n);
    double top = 0;
    for (size_t i = 0; i < n; ++i)
      if (known((*power)[i])) top = std::max(top, (*power)[i]);
    for (size_t i = 0; i < n; ++i) {
      const double p = (*power)[i];
      if (!known(p)) continue;
      const bool is_busy =
          util && known((*util)[i]) ? (*util)[i] >= cfg.busy_util_pct : p >= 0.5 * top;
      if (is_busy) busy.push_back(p);
    }
    e.plateau_w = power_plateau_w(std::move(busy));
  }

  if (known(col_default) && col_default > 0) {
    const std::string src = s.power_limit_source.empty() ? "log" : s.power_limit_source;
    take(col_default, true, src, src == "log" ? 0.95 : 0.9);
  } else if (model_tdp_w > 0) {
    take(model_tdp_w, true, "model-table", 0.9);
  }
  // A percent-of-limit column beside the watts says the board's own limit: power / percent. It
  // comes before the model table's figure (a laptop's or a board's own limit may differ from it).
  // Where the log has an enforced limit too, the percent may be of that one (W&B's is): the
  // columns stand as they are and the model table keeps its place.
  if ((e.source.empty() || e.source == "model-table") && power && percent && enforced.empty()) {
    e.source.clear();
    std::vector<double> lim;
    for (size_t i = 0; i < n; ++i) {
      const double p = (*power)[i], q = (*percent)[i];
      if (known(p) && known(q) && q >= 20 && p > 0) lim.push_back(p * 100 / q);
    }
    if (lim.size() >= static_cast<size_t>(cfg.min_samples))
      take(std::round(median(std::move(lim))), true, "percent-of-limit column", 0.85);
    else if (known(col_default) && col_default > 0)
      take(col_default, true, "model-table", 0.9);
    else if (model_tdp_w > 0)
      take(model_tdp_w, true, "model-table", 0.9);
  }
  // A cap column that moves: the highest cap is the board's, those below it lowered.
  if (e.source.empty() && !enforced.empty()) {
    const auto [lo, hi] = std::minmax_element(enforced.begin(), enforced.end());
    if (*hi > 0 && *hi - *lo > 0.05 * *hi) {
      take(*hi, true, "highest cap in the log", 0.6);
      std::vector<double> caps;
      for (double w : enforced) caps.push_back(std::round(w));
      std::sort(caps.begin(), caps.end());
      caps.erase(std::unique(caps.begin(), caps.end()), caps.end());
      e.cap_levels_w = caps;
    } else if (*hi > 0) {
      take(median(enforced), false, s.power_limit_source.empty() ? "log" : s.power_limit_source,
           0.7);
    }
  }
  // The power the SW power cap held the GPU at: one level stands in for the limit (a lowered cap
  // cannot be told from the default); at several, the highest is the nearest to the board's.
  if (e.source.empty() && !e.cap_levels_w.empty()) {
    if (e.cap_levels_w.size() > 1)
      take(e.cap_levels_w.back(), true, "highest power-cap plateau", 0.55);
    else
      take(e.cap_levels_w.back(), false, "power-cap plateau", 0.6);
  }
  // A ceiling the power sits at while busy: the GPU at its limit.
  if (e.source.empty() && e.plateau_w > 0) take(e.plateau_w, false, "power plateau", 0.5);

  if (power && e.default_w > 0) {
    e.power_ratio = RatioColumn(power, e.default_w);
  } else if (percent) {
    // No watts (or no limit for them): the percent column is the ratio itself. A limit the log
    // states stays (a cap against it can still be seen); else there is no limit in watts, and a
    // lowered cap cannot be told from the percent alone.
    e.power_ratio = RatioColumn(percent, 100);
    e.ratio_from_percent = true;
    if (e.source.empty() || e.source == "model-table" ||
        e.source.find("plateau") != std::string::npos) {
      e.default_w = 0, e.is_default = false;
      e.source = "percent-of-limit column", e.confidence = 0.8;
    }
  }
  return e;
}

}  // namespace gpudoctor
