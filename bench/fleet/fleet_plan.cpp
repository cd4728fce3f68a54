#include "fleet_plan.hpp"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "core/gpu_models.hpp"
#include "sources/sim/engine.hpp"

namespace gpudoctor::fleet_bench {
namespace {

// What a job on a host runs: one of the simulator's built-in scenarios, its workload on the job's
// GPUs. Weights: mostly healthy work, then the usual ways of wasting it (DOMAIN.md §2).
struct Choice {
  const char* scenario;
  int weight;
};
constexpr std::array<Choice, 13> kWorkloads{{
    {"healthy", 8},
    {"data_starvation", 3},
    {"data_starvation_disk", 1},
    {"launch_overhead", 2},
    {"straggler", 2},
    {"seesaw", 1},
    {"memory_bound", 2},
    {"power_capped", 1},
    {"clocks_locked", 1},
    {"hw_slowdown", 1},
    {"contention", 1},
    {"degrading", 1},
    {"idle", 2},  // the job holds its GPUs and runs nothing
}};
constexpr std::array<const char*, 24> kUsers{
    "alice", "bob",    "carol",   "dave", "erin",   "frank", "grace",   "heidi",
    "ivan",  "judy",   "mallory", "niaj", "olivia", "peggy", "rupert",  "sybil",
    "trent", "victor", "walter",  "xena", "yara",   "zoe",   "quentin", "uma"};
constexpr std::array<const char*, 6> kNamespaces{"research", "vision", "nlp",
                                                 "speech",   "recsys", "platform"};

template <class T, size_t N>
const T& pick(sim::Rng& rng, const std::array<T, N>& a) {
  return a[static_cast<size_t>(rng.next() % N)];
}

int uniform_int(sim::Rng& rng, int lo, int hi) {  // [lo, hi]
  return lo + static_cast<int>(rng.next() % static_cast<uint64_t>(hi - lo + 1));
}

sim::Rank idle_rank(bool held) {
  sim::Rank r;
  r.idle = true;
  r.held = held;
  return r;
}

std::string pod_uid(sim::Rng& rng) {
  const uint64_t a = rng.next(), b = rng.next();
  return fmt::format("{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}", a >> 32, (a >> 16) & 0xffff, a & 0xfff,
                     0x8000 | (b >> 48 & 0x3fff), b & 0xffffffffffffULL);
}

// Cluster-wide counters, so job ids and pod names never repeat across hosts.
struct Names {
  uint64_t next_job = 612000;
  uint64_t next_pod = 1;
};

Owner job_owner(sim::Rng& rng, Names& names) {
  Owner o;
  o.source = "sim";
  o.user = pick(rng, kUsers);
  const uint64_t r = rng.next() % 20;
  if (r < 13) {  // a Slurm job
    o.kind = OwnerKind::kSlurmJob;
    o.id = fmt::format("{}", names.next_job++);
    o.step = "0";
  } else if (r < 19) {  // a training pod
    o.kind = OwnerKind::kK8sPod;
    o.id = pod_uid(rng);
    o.pod_namespace = pick(rng, kNamespaces);
    o.pod = fmt::format("train-{}-{}", o.user, names.next_pod++);
    o.container = "trainer";
  } else {  // somebody's process outside any scheduler
    o.kind = OwnerKind::kProcess;
    o.id = fmt::format("{}", 10000 + rng.next() % 50000);
  }
  return o;
}

Owner notebook_owner(sim::Rng& rng, Names& names) {
  Owner o;
  o.source = "sim";
  o.kind = OwnerKind::kK8sPod;
  o.user = pick(rng, kUsers);
  o.id = pod_uid(rng);
  o.pod_namespace = pick(rng, kNamespaces);
  o.pod = fmt::format("notebook-{}-{}", o.user, names.next_pod++);
  o.container = "notebook";
  return o;
}

// One epoch's scenario: `workload` on GPUs [0, k), `held` GPUs idle but held by a notebook, the
// rest free. Returns the owners per GPU as serve would see them.
Result<EpochPlan> make_epoch(const HostPlan& host, const FleetOptions& o, sim::Rng& rng,
                             Names& names, int64_t start_ms, int64_t end_ms) {
  EpochPlan e;
  e.start_ms = start_ms;
  e.end_ms = end_ms;
  const int g = o.gpus;
  if (rng.next() % 14 == 0) {  // drained: nothing allocated
    auto sc = sim::load_scenario("idle");
    if (!sc) return sc.error();
    e.scenario = std::move(sc.value());
    e.scenario.owner.reset();
    e.scenario.gpus = g;
    e.scenario.ranks.assign(static_cast<size_t>(g), idle_rank(false));
    e.label = fmt::format("{} free", g);
    e.profile_key = fmt::format("free/{}/{}", host.model_key, g);
  } else {
    int total = 0;
    for (const auto& c : kWorkloads) total += c.weight;
    int r = static_cast<int>(rng.next() % static_cast<uint64_t>(total));
    const Choice* choice = kWorkloads.data();
    while (r >= choice->weight) r -= choice++->weight;
    auto sc = sim::load_scenario(choice->scenario);
    if (!sc) return sc.error();
    e.scenario = std::move(sc.value());
    // The job's GPUs: the whole host, half, a quarter or one.
    static constexpr std::array<int, 10> kShare{8, 8, 8, 8, 4, 4, 4, 2, 1, 1};
    const int k = std::clamp(g * pick(rng, kShare) / 8, 1, g);
    const int rest = g - k;
    const int held = rest == 0 ? 0 : std::array<int, 3>{0, rest / 2, rest}[rng.next() % 3];
    std::vector<sim::Rank> ranks(static_cast<size_t>(g));
    const bool all_idle = e.scenario.name == "idle";
    for (int i = 0; i < k; ++i) {
      if (i < static_cast<int>(e.scenario.ranks.size()))
        ranks[static_cast<size_t>(i)] = e.scenario.ranks[static_cast<size_t>(i)];
      ranks[static_cast<size_t>(i)].owner.reset();
      if (all_idle) ranks[static_cast<size_t>(i)] = idle_rank(true);
    }
    const Owner notebook = notebook_owner(rng, names);
    for (int i = k; i < g; ++i) {
      sim::Rank& rk = ranks[static_cast<size_t>(i)];
      rk = idle_rank(i < k + held);
      if (rk.held) rk.owner = notebook;
    }
    e.scenario.ranks = std::move(ranks);
    e.scenario.gpus = g;
    e.scenario.owner = job_owner(rng, names);
    e.label =
        fmt::format("{} x{}{}{}", e.scenario.name, k, held ? fmt::format(" + {} held", held) : "",
                    rest - held ? fmt::format(" + {} free", rest - held) : "");
    e.profile_key = fmt::format("{}/{}/{}/{}/{}", e.scenario.name, host.model_key, g, k, held);
  }
  e.scenario.model = host.model_key;
  e.scenario.host = host.hostname;
  e.scenario.interval_s = 1;
  e.scenario.duration_s = static_cast<double>(end_ms - start_ms) / 1000.0;
  e.scenario.seed = rng.next() | 1;
  if (auto v = sim::validate_scenario(e.scenario, e.label); !v) return v.error();
  // Owners per GPU as the simulator gives them: the rank's own, else the scenario's for a GPU
  // held or working; free GPUs none. Two processes on one GPU (contention) belong to two jobs.
  e.owners.resize(static_cast<size_t>(g));
  for (int i = 0; i < g; ++i) {
    const sim::Rank& rk = e.scenario.ranks[static_cast<size_t>(i)];
    if (rk.owner)
      e.owners[static_cast<size_t>(i)].push_back(*rk.owner);
    else if ((!rk.idle || rk.held) && e.scenario.owner)
      e.owners[static_cast<size_t>(i)].push_back(*e.scenario.owner);
    if (!rk.idle && rk.processes > 1) {  // the second process is another user's job
      Owner other;
      other.kind = OwnerKind::kSlurmJob;
      other.source = "sim";
      other.id = fmt::format("{}", names.next_job++);
      other.step = "0";
      other.user = pick(rng, kUsers);
      e.owners[static_cast<size_t>(i)].push_back(other);
    }
  }
  return e;
}

}  // namespace

Result<std::vector<HostPlan>> plan_fleet(const FleetOptions& o) {
  if (o.hosts < 1 || o.hosts > 100000) return usage_error("--hosts: 1 to 100000");
  if (o.gpus < 1 || o.gpus > 64) return usage_error("--gpus: 1 to 64 (the simulator's limit)");
  if (o.interval_s < 1 || o.window_s % o.interval_s || o.chunk_s % o.window_s)
    return usage_error("--interval must divide --window, and --window the chunk (2 h)");
  if (o.profile_s < 2 * o.window_s || o.profile_s % o.window_s)
    return usage_error("--profile must be a whole number of windows, at least two");
  if (o.end_ms <= o.start_ms || (o.end_ms - o.start_ms) % (int64_t{o.chunk_s} * 1000))
    return usage_error("the span must be a positive whole number of chunks (2 h)");
  const int64_t w_ms = int64_t{o.window_s} * 1000;
  std::vector<HostPlan> plan;
  Names names;
  sim::Rng models(o.seed ^ 0x6D6F64656CULL);
  for (int h = 0; h < o.hosts; ++h) {
    HostPlan host;
    host.hostname = fmt::format("{}{:0{}}", o.host_prefix, h + 1, o.hosts >= 1000 ? 4 : 3);
    host.model_key = models.next() % 4 == 0 ? "a100-sxm4-80gb" : "h100-sxm";
    host.dcgm = h < o.dcgm_hosts;
    sim::Rng rng(o.seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(h) * 7919 + 1);
    // Boundaries: epochs of 2-30 h; a quick serve restart on some hosts, an outage of 1-4 h on a
    // few; for dcgm hosts one more at the start of their dcgm-exporter span.
    int64_t restart_at = -1, down_from = -1, down_to = -1;
    const int64_t windows = (o.end_ms - o.start_ms) / w_ms;
    if (rng.next() % 8 == 0)
      restart_at = o.start_ms + w_ms * (1 + int64_t(rng.next() % uint64_t(windows)));
    if (rng.next() % 30 == 0 && !host.dcgm) {  // the dcgm hosts (path 2's bench) stay up
      down_from = o.start_ms + w_ms * int64_t(rng.next() % uint64_t(windows));
      down_to = std::min(o.end_ms, down_from + w_ms * uniform_int(rng, 6, 24));
    }
    const int64_t dcgm_from = host.dcgm ? std::max(o.dcgm_from_ms, o.start_ms) : o.end_ms;
    int64_t t = o.start_ms;
    bool restart_next = true;          // serve starts with the span
    std::optional<EpochPlan> carried;  // an epoch cut by a boundary goes on with the same job
    while (t < o.end_ms) {
      int64_t end = std::min(o.end_ms, t + w_ms * uniform_int(rng, 12, 180));
      if (down_from >= 0 && t == down_from) {
        EpochPlan e;
        e.start_ms = t;
        e.end_ms = down_to;
        e.down = true;
        e.label = "not reporting";
        e.owners.resize(static_cast<size_t>(o.gpus));
        host.epochs.push_back(std::move(e));
        t = down_to;
        restart_next = true;
        carried.reset();
        continue;
      }
      for (int64_t cut : {restart_at, down_from, dcgm_from})
        if (cut > t && cut < end) end = cut;
      EpochPlan e;
      if (carried) {
        e = std::move(*carried);
        e.start_ms = t;
        e.end_ms = end;
        e.scenario.duration_s = static_cast<double>(end - t) / 1000.0;
        carried.reset();
      } else {
        auto made = make_epoch(host, o, rng, names, t, end);
        if (!made) return made.error();
        e = std::move(made.value());
      }
      e.restart = restart_next || t == restart_at;
      restart_next = false;
      e.exact = o.exact || t >= dcgm_from;
      if (end == restart_at || end == dcgm_from) carried = e;  // the same job goes on
      host.epochs.push_back(std::move(e));
      t = end;
    }
    plan.push_back(std::move(host));
  }
  return plan;
}

}  // namespace gpudoctor::fleet_bench
