#include "fleet_sim.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "analysis/diagnosis.hpp"
#include "analysis/ledger.hpp"
#include "core/gpu_models.hpp"
#include "sources/sim/sim_source.hpp"

namespace gpudoctor::fleet_bench {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

int64_t ceil_div(int64_t a, int64_t b) {  // b > 0
  return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

DcgmValues dcgm_values(const DeviceSample& d, double energy_offset_mj) {
  DcgmValues v;
  v.fill(kNaN);
  if (d.lost) return v;
  for (size_t i = 0; i < kDcgmFields.size(); ++i) {
    if (!kDcgmFields[i]) {
      const Reading& total = d[Field::kMemTotal];
      const Reading& used = d[Field::kMemUsed];
      if (total.has_value() && used.has_value()) v[i] = std::max(0.0, total.value() - used.value());
      continue;
    }
    const FieldInfo& fi = info(*kDcgmFields[i]);
    const Reading& r = d[fi.field];
    if (!r.has_value()) continue;
    v[i] = r.value() / fi.dcgm_scale;
    if (fi.dcgm_scale == 100) v[i] = std::round(v[i] * 1e6) / 1e6;  // ratios as DCGM writes them
    if (fi.field == Field::kEnergy) v[i] += energy_offset_mj;
  }
  return v;
}

}  // namespace

std::string dcgm_family_name(size_t i) {
  return kDcgmFields[i] ? std::string(info(*kDcgmFields[i]).dcgm_name) : "DCGM_FI_DEV_FB_FREE";
}

void add_ledger(GpuLedger& a, const GpuLedger& b) {
  for (size_t c = 0; c < kCauseCount; ++c) a.lost_s[c] += b.lost_s[c];
  a.working_s += b.working_s;
  a.lost_total_s += b.lost_total_s;
  a.idle_allocated_s += b.idle_allocated_s;
  a.free_s += b.free_s;
}

// An epoch simulated second by second: frames into a diagnosis window; at each window's end the
// window is diagnosed and the ledger counts what it judged (analysis/ledger, as serve does).
struct HostRun::Exact {
  Exact(const EpochPlan& e, const GpuModel& model, int window_s, bool restart)
      : src({e.scenario, 1.0}, model, {}),
        start_ms(e.start_ms),
        end_s(static_cast<double>(e.end_ms - e.start_ms) / 1000.0),
        window_s(window_s),
        first_dt_zero(restart),
        books(src.devices().size()) {
    src.set_start_unix_ms(e.start_ms);
  }

  bool done() const { return t_s >= end_s; }

  // Simulates the next window; counted[gpu] gets what the ledger counted, frame() each frame.
  void next_window(std::vector<std::vector<CountedSample>>& counted,
                   const std::function<void(const Frame&)>& frame) {
    Recording w;
    w.system = src.system();
    w.source = "live: sim";
    w.start_unix_ms = start_ms + static_cast<int64_t>(std::llround(t_s * 1000));
    for (const auto& d : src.devices()) {
      GpuSeries g;
      g.info = d;
      w.gpus.push_back(std::move(g));
    }
    const double until = std::min(end_s, t_s + window_s);
    int64_t last_ms = w.start_unix_ms;
    for (double t = t_s + 1; t <= until + 1e-9; t += 1) {
      const Frame f = src.sample_at(t);
      append_frame(w, f);
      for (size_t i = 0; i < f.devices.size() && i < books.size(); ++i) {
        const DeviceSample& ds = f.devices[i];
        if (ds.lost) continue;
        books[i].add_sample(f.time_unix_ms, first_dt_zero ? 0 : 1,
                            !ds.owners.empty() || !ds.processes.empty());
      }
      first_dt_zero = false;
      last_ms = f.time_unix_ms;
      if (frame) frame(f);
    }
    t_s = until;
    const Diagnosis d = diagnose(w, DiagnosisConfig{}, JudgedSamples::kEach);
    for (const auto& g : d.gpus)
      for (size_t i = 0; i < books.size(); ++i)
        if (src.devices()[i].index == g.index)
          books[i].judge(g.judged, d.start_unix_ms, last_ms, int64_t{window_s} * 1000, &counted[i]);
    if (done())
      for (size_t i = 0; i < books.size(); ++i) books[i].flush(&counted[i]);
  }

  sim::SimSource src;
  int64_t start_ms;
  double end_s, t_s = 0;
  int window_s;
  bool first_dt_zero;
  std::vector<LedgerBook> books;
};

namespace {

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

// The scrape (every interval_ms from from_ms) that first reports a sample taken at ms: a scrape
// at T reports every sample taken at or before T.
int64_t slot_of(int64_t ms, int64_t from_ms, int64_t interval_ms) {
  return std::max<int64_t>(0, ceil_div(ms - from_ms, interval_ms));
}

int64_t floor_div(int64_t a, int64_t b) {  // b > 0
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

std::shared_ptr<const Profile> simulate_profile(const EpochPlan& e, const FleetOptions& o) {
  EpochPlan p = e;
  p.start_ms = 0;
  p.end_ms = int64_t{o.profile_s} * 1000;
  p.scenario.duration_s = o.profile_s;
  p.scenario.seed = (fnv1a(e.profile_key) ^ o.seed) | 1;  // the same whichever epoch asks first
  const auto model = gpu_model_by_key(p.scenario.model);
  auto prof = std::make_shared<Profile>();
  const int64_t interval_ms = int64_t{o.interval_s} * 1000;
  // Scrape j (0 ... profile_s / interval) at j * interval; scrape 0 reports nothing yet.
  const auto slots = static_cast<size_t>(o.profile_s / o.interval_s) + 1;
  HostRun::simulate_exact(p, *model, o.window_s, false, [&](size_t gpu, const CountedSample& c) {
    if (prof->slots.size() <= gpu) prof->slots.resize(gpu + 1, std::vector<GpuLedger>(slots));
    const auto j =
        std::min<int64_t>(static_cast<int64_t>(slots) - 1, slot_of(c.unix_ms, 0, interval_ms));
    add_ledger(prof->slots[gpu][static_cast<size_t>(j)], c.delta);
  });
  prof->slots.resize(static_cast<size_t>(p.scenario.gpus), std::vector<GpuLedger>(slots));
  return prof;
}

}  // namespace

std::shared_ptr<const Profile> ProfileCache::get(const EpochPlan& e, const FleetOptions& o) {
  std::promise<std::shared_ptr<const Profile>> mine;
  std::shared_future<std::shared_ptr<const Profile>> f;
  bool compute = false;
  {
    std::lock_guard lock(mu_);
    auto it = profiles_.find(e.profile_key);
    if (it != profiles_.end()) {
      f = it->second;
    } else {
      f = mine.get_future().share();
      profiles_.emplace(e.profile_key, f);
      compute = true;
    }
  }
  if (compute) mine.set_value(simulate_profile(e, o));
  return f.get();
}

size_t ProfileCache::simulated() const {
  std::lock_guard lock(mu_);
  return profiles_.size();
}

void HostRun::simulate_exact(const EpochPlan& e, const GpuModel& model, int window_s, bool restart,
                             const std::function<void(size_t, const CountedSample&)>& counted) {
  Exact x(e, model, window_s, restart);
  std::vector<std::vector<CountedSample>> c(x.books.size());
  while (!x.done()) {
    for (auto& v : c) v.clear();
    x.next_window(c, {});
    for (size_t g = 0; g < c.size(); ++g)
      for (const auto& s : c[g]) counted(g, s);
  }
}

HostRun::HostRun(const HostPlan& plan, const FleetOptions& o, ProfileCache& cache)
    : plan_(plan),
      o_(o),
      cache_(cache),
      cumulative_(static_cast<size_t>(o.gpus)),
      carry_(static_cast<size_t>(o.gpus)),
      energy_offset_mj_(static_cast<size_t>(o.gpus), 0),
      last_energy_mj_(static_cast<size_t>(o.gpus), kNaN) {
  // The host's GPUs as the simulator names them (UUIDs from the host name).
  for (const auto& e : plan.epochs) {
    if (e.down) continue;
    sim::SimSource src({e.scenario, 1.0}, *gpu_model_by_key(e.scenario.model), {});
    devices_ = src.devices();
    break;
  }
}

HostRun::~HostRun() = default;

void HostRun::run_chunk(int64_t cs, HostChunk& out) {
  // Scrape s at cs + s * interval reports the samples taken in (T - interval, T]; it belongs to
  // the epoch those samples belong to (start < T <= end; the span's first scrape to the first).
  const int64_t interval_ms = int64_t{o_.interval_s} * 1000;
  const int64_t ce = cs + int64_t{o_.chunk_s} * 1000;
  const auto n = static_cast<size_t>(o_.chunk_s / o_.interval_s);
  const size_t g_count = static_cast<size_t>(o_.gpus);
  out.epoch.assign(n, -1);
  out.up.assign(n, 0);
  out.dcgm.assign(n, 0);
  out.gpus.resize(g_count);
  std::vector<std::vector<GpuLedger>> delta(g_count, std::vector<GpuLedger>(n));
  for (auto& g : out.gpus) {
    g.ledger.assign(n, GpuLedger{});
    g.delta.assign(n, GpuLedger{});
    g.dcgm.assign(plan_.dcgm ? n : 0, DcgmValues{});
  }
  std::vector<uint8_t> reset(n, 0);
  for (size_t g = 0; g < g_count; ++g) add_ledger(delta[g][0], carry_[g]), carry_[g] = {};
  if (carry_dcgm_) {
    out.dcgm[0] = 1;
    for (size_t g = 0; g < g_count; ++g) out.gpus[g].dcgm[0] = (*carry_dcgm_)[g];
    carry_dcgm_.reset();
  }

  for (size_t ei = 0; ei < plan_.epochs.size(); ++ei) {
    const EpochPlan& e = plan_.epochs[ei];
    if (e.end_ms < cs || e.start_ms >= ce) continue;
    const bool first = ei == 0;
    const int64_t lo = first && e.start_ms == cs ? 0 : floor_div(e.start_ms - cs, interval_ms) + 1;
    const int64_t hi =
        std::min<int64_t>(static_cast<int64_t>(n) - 1, floor_div(e.end_ms - cs, interval_ms));
    const auto s0 = static_cast<size_t>(std::max<int64_t>(0, lo));
    const auto s1 = static_cast<size_t>(std::max<int64_t>(0, hi + 1));  // [s0, s1)
    for (size_t s = s0; s < s1; ++s) {
      out.epoch[s] = static_cast<int>(ei);
      out.up[s] = e.down ? 0 : 1;
    }
    if (e.down) continue;
    if (e.restart && lo >= 0 && s0 < n && s0 < s1) reset[s0] = 1;
    if (!e.exact) {
      const auto prof = cache_.get(e, o_);
      const auto p_last = static_cast<int64_t>(o_.profile_s / o_.interval_s);
      const int64_t steady = o_.window_s / o_.interval_s, cycle = p_last - steady;
      for (size_t s = s0; s < s1; ++s) {
        const int64_t j = (cs + static_cast<int64_t>(s) * interval_ms - e.start_ms) / interval_ms;
        if (j <= 0) continue;
        // After the profile, its windows after the first (start-up) over and over.
        const int64_t k = j <= p_last ? j : steady + 1 + (j - p_last - 1) % cycle;
        for (size_t g = 0; g < g_count && g < prof->slots.size(); ++g)
          add_ledger(delta[g][s], prof->slots[g][static_cast<size_t>(k)]);
      }
      continue;
    }
    if (e.end_ms == cs) continue;  // its last scrape was this chunk's first: nothing to simulate
    if (exact_epoch_ != static_cast<int>(ei)) {
      exact_ =
          std::make_unique<Exact>(e, *gpu_model_by_key(e.scenario.model), o_.window_s, e.restart);
      exact_epoch_ = static_cast<int>(ei);
    }
    std::vector<std::vector<CountedSample>> counted(g_count);
    const auto on_frame = [&](const Frame& f) {
      if (!plan_.dcgm || (f.time_unix_ms - cs) % interval_ms != 0) return;
      const int64_t s = (f.time_unix_ms - cs) / interval_ms;
      if (s < 0 || s > static_cast<int64_t>(n)) return;
      std::vector<DcgmValues> values(g_count);
      for (size_t g = 0; g < g_count && g < f.devices.size(); ++g) {
        const DeviceSample& d = f.devices[g];
        const Reading& en = d[Field::kEnergy];
        if (en.has_value()) {  // one energy counter per GPU, across the epochs' simulations
          if (std::isnan(last_energy_mj_[g])) last_energy_mj_[g] = en.value();
          if (en.value() + energy_offset_mj_[g] < last_energy_mj_[g])
            energy_offset_mj_[g] = last_energy_mj_[g] - en.value();
          last_energy_mj_[g] = en.value() + energy_offset_mj_[g];
        }
        values[g] = dcgm_values(d, energy_offset_mj_[g]);
      }
      if (s == static_cast<int64_t>(n)) {  // the next chunk's first scrape
        carry_dcgm_ = std::move(values);
        return;
      }
      out.dcgm[static_cast<size_t>(s)] = 1;
      for (size_t g = 0; g < g_count; ++g) out.gpus[g].dcgm[static_cast<size_t>(s)] = values[g];
    };
    const int64_t to = std::min(e.end_ms, ce);
    while (!exact_->done() && exact_->start_ms + std::llround(exact_->t_s * 1000) < to) {
      for (auto& c : counted) c.clear();
      exact_->next_window(counted, on_frame);
      simulated_gpu_s_ += static_cast<double>(o_.window_s * o_.gpus);
      for (size_t g = 0; g < g_count; ++g)
        for (const auto& c : counted[g]) {
          const int64_t s = slot_of(c.unix_ms, cs, interval_ms);
          if (s >= static_cast<int64_t>(n))
            add_ledger(carry_[g], c.delta);
          else
            add_ledger(delta[g][static_cast<size_t>(s)], c.delta);
        }
    }
    if (exact_->done()) exact_.reset(), exact_epoch_ = -1;
  }

  for (size_t s = 0; s < n; ++s)
    for (size_t g = 0; g < g_count; ++g) {
      if (reset[s]) cumulative_[g] = {};
      add_ledger(cumulative_[g], delta[g][s]);
      out.gpus[g].ledger[s] = cumulative_[g];
      out.gpus[g].delta[s] = delta[g][s];
    }
}

}  // namespace gpudoctor::fleet_bench
