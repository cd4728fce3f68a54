#include "analysis/ledger.hpp"

#include <algorithm>
#include <climits>
#include <cmath>

namespace gpudoctor {

void LedgerBook::add_sample(int64_t unix_ms, double dt_s, bool allocated) {
  pending_.push_back({unix_ms, dt_s, allocated, false});
}

void LedgerBook::add(int64_t ms, const GpuLedger& delta, std::vector<CountedSample>* counted) {
  for (size_t c = 0; c < kCauseCount; ++c) totals_.lost_s[c] += delta.lost_s[c];
  totals_.working_s += delta.working_s;
  totals_.lost_total_s += delta.lost_total_s;
  totals_.idle_allocated_s += delta.idle_allocated_s;
  totals_.free_s += delta.free_s;
  if (counted) counted->push_back({ms, delta});
}

void LedgerBook::count_unjudged(const Pending& p, std::vector<CountedSample>* counted) {
  GpuLedger d;
  (p.allocated ? d.working_s : d.free_s) = p.dt_s;
  add(p.ms, d, counted);
}

void LedgerBook::judge(const std::vector<GpuDiagnosis::JudgedSample>& judged, int64_t start_unix_ms,
                       int64_t now_ms, int64_t keep_ms, std::vector<CountedSample>* counted) {
  int64_t last_judged = INT64_MIN;
  for (const auto& js : judged) {
    const int64_t ms = start_unix_ms + std::llround(js.t_s * 1000);
    last_judged = std::max(last_judged, ms);
    // The pending sample at this time (±1 ms of rounding); none: already counted and gone.
    auto it = std::lower_bound(pending_.begin(), pending_.end(), ms - 1,
                               [](const Pending& p, int64_t t) { return p.ms < t; });
    if (it == pending_.end() || it->ms > ms + 1 || it->counted) continue;
    it->counted = true;
    GpuLedger d;
    if (js.cause == Cause::kIdle) {
      if (it->allocated) {
        d.idle_allocated_s = js.dt_s;
        d.lost_s[static_cast<size_t>(Cause::kIdle)] = js.lost_s;
      } else {
        d.free_s = js.dt_s;
      }
    } else {
      d.lost_s[static_cast<size_t>(js.cause)] = js.lost_s;
      d.lost_total_s = js.lost_s;
      d.working_s = js.dt_s - js.lost_s;
    }
    add(it->ms, d, counted);
  }
  while (!pending_.empty() &&
         (pending_.front().ms <= last_judged || pending_.front().ms < now_ms - keep_ms)) {
    if (!pending_.front().counted) count_unjudged(pending_.front(), counted);
    pending_.pop_front();
  }
}

void LedgerBook::flush(std::vector<CountedSample>* counted) {
  for (const Pending& p : pending_)
    if (!p.counted) count_unjudged(p, counted);
  pending_.clear();
}

}  // namespace gpudoctor
