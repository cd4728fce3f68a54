// The scale bench's data (issue 16, docs/fleet.md "Scaling bench"): a simulated fleet's series in
// OpenMetrics text, one file per 2 h chunk, for `promtool tsdb create-blocks-from openmetrics`.
// bench/fleet/backfill.py runs it, imports each file as it is finished and starts a Prometheus
// on the result.
//
//   gpudoctor_fleet_backfill OUT_DIR [--hosts 125] [--gpus 8] [--span 7d] [--end UNIX_SECONDS]
//       [--interval 30s] [--dcgm-hosts 8] [--dcgm-span 1d] [--seed 1] [--jobs 2]
//       [--window 10m] [--profile 30m] [--exact] [--max-pending 0]
//
// Writes OUT_DIR/chunk-NNNNNN.om (each complete before it appears), one line per finished file on
// stdout ("chunk PATH SAMPLES BYTES"), and at the end OUT_DIR/fleet.json: the options, the plan
// (every host's epochs and owners) and the truth (ChunkWriter::truth()). --max-pending K waits
// while K chunk files are still there (the driver deletes each once imported), so the disk holds
// at most K + 1. The span ends at --end (default: now, down to a chunk boundary).
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/duration.hpp"
#include "fleet_plan.hpp"
#include "fleet_sim.hpp"
#include "fleet_write.hpp"

using namespace gpudoctor;
using namespace gpudoctor::fleet_bench;
namespace fs = std::filesystem;

namespace {

int usage(const std::string& why) {
  std::fprintf(stderr,
               "gpudoctor_fleet_backfill: %s\n"
               "usage: gpudoctor_fleet_backfill OUT_DIR [--hosts 125] [--gpus 8] [--span 7d]\n"
               "       [--end UNIX_SECONDS] [--interval 30s] [--dcgm-hosts 8] [--dcgm-span 1d]\n"
               "       [--seed 1] [--jobs 2] [--window 10m] [--profile 30m] [--exact]\n"
               "       [--max-pending 0]\n",
               why.c_str());
  return 2;
}

double cpu_seconds(int who) {
  rusage ru{};
  getrusage(who, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

size_t pending_chunks(const fs::path& dir) {
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with("chunk-") && name.ends_with(".om")) ++n;
  }
  return n;
}

nlohmann::ordered_json plan_json(const std::vector<HostPlan>& plan) {
  nlohmann::ordered_json hosts = nlohmann::ordered_json::array();
  for (const auto& h : plan) {
    nlohmann::ordered_json jh;
    jh["hostname"] = h.hostname;
    jh["model"] = h.model_key;
    jh["dcgm"] = h.dcgm;
    nlohmann::ordered_json epochs = nlohmann::ordered_json::array();
    for (const auto& e : h.epochs) {
      nlohmann::ordered_json je;
      je["from"] = iso8601_utc(e.start_ms);
      je["to"] = iso8601_utc(e.end_ms);
      je["runs"] = e.label;
      if (e.restart) je["serve_restarted"] = true;
      if (e.exact) je["simulated_every_second"] = true;
      nlohmann::ordered_json owners = nlohmann::ordered_json::array();
      for (size_t g = 0; g < e.owners.size(); ++g)
        for (const auto& o : e.owners[g]) {
          auto jo = nlohmann::ordered_json::parse(owner_to_json(o).dump());
          jo["gpu"] = g;
          owners.push_back(std::move(jo));
        }
      je["owners"] = std::move(owners);
      epochs.push_back(std::move(je));
    }
    jh["epochs"] = std::move(epochs);
    hosts.push_back(std::move(jh));
  }
  return hosts;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return usage("name the output folder first");
  const fs::path out_dir = argv[1];
  FleetOptions o;
  int64_t span_ms = 7 * 86400000LL, dcgm_span_ms = 86400000LL, end_s = -1;
  unsigned jobs = std::max(1u, std::min(2u, std::thread::hardware_concurrency()));
  size_t max_pending = 0;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--exact") {
      o.exact = true;
      continue;
    }
    if (i + 1 >= argc) return usage(a + " needs a value");
    const std::string v = argv[++i];
    auto duration_s = [&](int64_t& ms) {
      auto d = parse_duration(v);
      if (!d || d->count() <= 0) return false;
      ms = d->count();
      return true;
    };
    auto whole = [&](auto& x) {
      try {
        size_t used = 0;
        const long long n = std::stoll(v, &used);
        if (used != v.size() || n < 0) return false;
        x = static_cast<std::remove_reference_t<decltype(x)>>(n);
        return true;
      } catch (...) {
        return false;
      }
    };
    auto whole_seconds = [&](int& out) {
      int64_t ms = 0;
      if (!duration_s(ms) || ms % 1000 != 0) return false;
      out = static_cast<int>(ms / 1000);
      return true;
    };
    bool ok = true;
    if (a == "--hosts")
      ok = whole(o.hosts);
    else if (a == "--gpus")
      ok = whole(o.gpus);
    else if (a == "--span")
      ok = duration_s(span_ms);
    else if (a == "--dcgm-span")
      ok = duration_s(dcgm_span_ms);
    else if (a == "--end")
      ok = whole(end_s);
    else if (a == "--interval")
      ok = whole_seconds(o.interval_s);
    else if (a == "--window")
      ok = whole_seconds(o.window_s);
    else if (a == "--profile")
      ok = whole_seconds(o.profile_s);
    else if (a == "--dcgm-hosts")
      ok = whole(o.dcgm_hosts);
    else if (a == "--seed")
      ok = whole(o.seed);
    else if (a == "--jobs")
      ok = whole(jobs) && jobs >= 1 && jobs <= 256;
    else if (a == "--max-pending")
      ok = whole(max_pending);
    else
      return usage("unknown option " + a);
    if (!ok) return usage(fmt::format("{} {}: not a valid value", a, v));
  }
  const int64_t chunk_ms = int64_t{o.chunk_s} * 1000;
  if (end_s < 0)
    end_s = std::chrono::duration_cast<std::chrono::seconds>(
                std::chrono::system_clock::now().time_since_epoch())
                .count();
  o.end_ms = end_s * 1000 / chunk_ms * chunk_ms;
  o.start_ms = o.end_ms - span_ms;
  o.dcgm_from_ms = o.end_ms - std::min(dcgm_span_ms, span_ms);
  if (o.dcgm_from_ms % (int64_t{o.window_s} * 1000))
    return usage("--dcgm-span must be a whole number of windows");
  auto plan = plan_fleet(o);
  if (!plan) return usage(plan.error().message);
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) return usage(fmt::format("cannot create {}: {}", out_dir.string(), ec.message()));

  const auto t0 = std::chrono::steady_clock::now();
  ProfileCache cache;
  std::vector<std::unique_ptr<HostRun>> runs;
  std::vector<std::vector<DeviceInfo>> devices;
  for (const auto& h : *plan) {
    runs.push_back(std::make_unique<HostRun>(h, o, cache));
    devices.push_back(runs.back()->devices());
  }
  ChunkWriter writer(*plan, devices, o);
  std::vector<HostChunk> chunks(plan->size());
  double waited_s = 0;
  size_t total_samples = 0;
  uintmax_t total_bytes = 0;
  const int64_t n_chunks = span_ms / chunk_ms;
  for (int64_t k = 0; k < n_chunks; ++k) {
    const int64_t cs = o.start_ms + k * chunk_ms;
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t h; (h = next.fetch_add(1)) < runs.size();) runs[h]->run_chunk(cs, chunks[h]);
    };
    std::vector<std::thread> pool;
    for (unsigned j = 1; j < jobs; ++j) pool.emplace_back(work);
    work();
    for (auto& t : pool) t.join();
    if (max_pending > 0) {
      const auto w0 = std::chrono::steady_clock::now();
      while (pending_chunks(out_dir) >= max_pending)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      waited_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
    }
    const fs::path file = out_dir / fmt::format("chunk-{:06}.om", k);
    const fs::path tmp = out_dir / fmt::format(".chunk-{:06}.om.part", k);
    auto wrote = writer.write(tmp.string(), cs, chunks);
    if (!wrote) {
      std::fprintf(stderr, "gpudoctor_fleet_backfill: %s\n", wrote.error().message.c_str());
      return 1;
    }
    const uintmax_t bytes = fs::file_size(tmp);
    fs::rename(tmp, file);
    total_samples += *wrote;
    total_bytes += bytes;
    std::printf("chunk %s %zu %ju\n", file.c_str(), *wrote, bytes);
    std::fflush(stdout);
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  size_t gpus = 0, epochs = 0;
  for (const auto& h : *plan) {
    gpus += static_cast<size_t>(o.gpus);
    epochs += h.epochs.size();
  }
  double simulated_s = 0;
  for (const auto& r : runs) simulated_s += r->simulated_gpu_seconds();
  nlohmann::ordered_json j;
  j["generator"] = "bench/fleet/fleet_backfill.cpp";
  j["span"] = {{"from", iso8601_utc(o.start_ms)},
               {"to", iso8601_utc(o.end_ms)},
               {"from_unix", o.start_ms / 1000},
               {"to_unix", o.end_ms / 1000},
               {"interval_s", o.interval_s}};
  j["hosts"] = o.hosts;
  j["gpus_per_host"] = o.gpus;
  j["dcgm_exporter"] = {{"hosts", std::min(o.dcgm_hosts, o.hosts)},
                        {"from", iso8601_utc(o.dcgm_from_ms)},
                        {"to", iso8601_utc(o.end_ms)},
                        {"selector", "{job=\"dcgm-exporter\"}"}};
  j["ledger"] = {{"window_s", o.window_s},
                 {"profile_s", o.profile_s},
                 {"every_second", o.exact},
                 {"profiles_simulated", cache.simulated()}};
  j["seed"] = o.seed;
  j["generation"] = {{"wall_s", std::round(wall * 10) / 10},
                     {"cpu_s", std::round(cpu_seconds(RUSAGE_SELF) * 10) / 10},
                     {"waited_for_import_s", std::round(waited_s * 10) / 10},
                     {"samples", total_samples},
                     {"bytes", total_bytes},
                     {"chunks", n_chunks}};
  j["truth"] = writer.truth();
  j["plan"] = plan_json(*plan);
  std::ofstream(out_dir / "fleet.json") << j.dump(1) << "\n";
  std::fprintf(stderr,
               "gpudoctor_fleet_backfill: %d hosts x %d GPUs (%zu GPUs, %zu epochs, %zu profiles "
               "simulated, %.0f GPU-hours simulated second by second), %s to %s every %d s: "
               "%zu samples, %.1f MB in %lld files; %.1f s (%.1f s CPU, %.1f s waiting for the "
               "import)\n",
               o.hosts, o.gpus, gpus, epochs, cache.simulated(), simulated_s / 3600,
               iso8601_utc(o.start_ms).c_str(), iso8601_utc(o.end_ms).c_str(), o.interval_s,
               total_samples, static_cast<double>(total_bytes) / 1e6,
               static_cast<long long>(n_chunks), wall, cpu_seconds(RUSAGE_SELF), waited_s);
  return 0;
}
