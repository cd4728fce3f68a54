// The labelled corpus: many simulated runs per cause with a random GPU model, GPU count, sampling
// interval (100 ms to 5 s), duration, noise, start-up idle phase and output format, each with its
// known cause in labels.jsonl. The diagnosis measures its accuracy on it.
//
//   gpudoctor_corpus OUT_DIR [RUNS_PER_SCENARIO=5] [SEED=1]
//
// Output formats: gpudoctor recording (.db), nvidia-smi --query-gpu CSV with and without units
// (.csv, .nounits.csv), nvidia-smi dmon -s pucmt -o DT (.dmon), and a generic CSV with one column
// per field id (.gd.csv, read by the generic CSV reader).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/gpu_models.hpp"
#include "formats/dmon.hpp"
#include "formats/export.hpp"
#include "formats/smi_csv.hpp"
#include "sources/sim/builtin_scenarios.hpp"
#include "sources/sim/sim_source.hpp"
#include "store/sqlite_store.hpp"

using namespace gpudoctor;

namespace {

// Scenarios whose story needs a particular board or GPU count keep it.
bool keeps_model(const std::string& name) {
  return name == "thermal_throttle" || name == "slow_interconnect" || name == "power_capped" ||
         name == "clocks_locked";
}
int min_gpus(const std::string& name) {
  if (name == "straggler") return 3;
  if (name == "seesaw") return 2;
  if (name == "mixed") return 8;
  if (name == "slow_interconnect") return 2;
  return 1;
}

// A run needs long enough to show its story: the degrading run turns bad at 300 s.
double min_duration_s(const std::string& name) {
  return name == "degrading" ? 600 : 120;
}

// Formats that can carry the signal a cause is seen by: contention is several processes on one
// GPU, and only gpudoctor's recordings list processes (nvidia-smi --query-gpu, dmon and the
// generic CSV cannot), so a contention run in those formats would carry a label no tool could see.
bool format_shows(const std::string& name, const std::string& format) {
  return name != "contention" || format == "recording";
}

bool write_text(const std::filesystem::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR [RUNS_PER_SCENARIO=5] [SEED=1]\n", argv[0]);
    return 2;
  }
  const std::filesystem::path out = argv[1];
  const int runs = argc > 2 ? std::atoi(argv[2]) : 5;
  sim::Rng rng(argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1);
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec) {
    std::fprintf(stderr, "corpus: cannot create %s: %s\n", out.c_str(), ec.message().c_str());
    return 1;
  }
  const std::vector<std::string> models = {
      "a100-sxm4-40gb", "a100-sxm4-80gb", "h100-sxm", "h100-pcie", "h200",
      "v100-sxm2-32gb", "l40s",           "a10",      "rtx-4090"};
  const double intervals[] = {0.1, 0.2, 0.5, 1, 2, 5};
  const char* formats[] = {"recording", "smi-csv", "smi-csv-nounits", "dmon", "gd-csv"};
  std::ofstream labels(out / "labels.jsonl", std::ios::trunc);
  int written = 0;
  for (const auto& b : sim::builtin_scenarios()) {
    for (int r = 0; r < runs; ++r) {
      auto spec = sim::parse_sim_spec(std::string(b.name));
      if (!spec) {
        std::fprintf(stderr, "corpus: %s\n", spec.error().message.c_str());
        return 1;
      }
      sim::Scenario& s = spec->scenario;
      const std::string name(b.name);
      if (!keeps_model(name)) s.model = models[rng.next() % models.size()];
      if (s.gpus > 1 && name != "mixed" && name != "seesaw") {
        const int lo = min_gpus(name);
        s.gpus = lo + static_cast<int>(rng.next() % static_cast<uint64_t>(9 - lo));
        s.ranks.resize(static_cast<size_t>(s.gpus));
      }
      s.interval_s = intervals[rng.next() % std::size(intervals)];
      s.duration_s = std::max(min_duration_s(name), std::round(120 + rng.uniform() * 780));
      s.startup_s = std::round(rng.uniform() * 60);
      s.workload.jitter = 0.01 + rng.uniform() * 0.07;
      s.seed = rng.next();
      if (auto v = sim::validate_scenario(s, name); !v) {
        std::fprintf(stderr, "corpus: %s\n", v.error().message.c_str());
        return 1;
      }
      const auto model = gpu_model_by_key(s.model);
      std::string format = formats[rng.next() % std::size(formats)];
      if (!format_shows(name, format)) format = "recording";
      // nvidia-smi dmon samples once a second at most (-d takes whole seconds).
      if (format == "dmon" && s.interval_s < 1) format = "smi-csv";
      const std::string cause = s.cause;
      nlohmann::json label = {{"scenario", name},
                              {"cause", cause},
                              {"model", s.model},
                              {"gpus", s.gpus},
                              {"interval_s", s.interval_s},
                              {"duration_s", s.duration_s},
                              {"startup_s", s.startup_s},
                              {"seed", s.seed},
                              {"format", format}};
      // What each GPU is: an idle rank is idle; the working ranks of a run whose story is idle
      // GPUs are healthy; every other rank shares the run's cause (a straggler is part of the
      // communication wait it causes).
      nlohmann::json gpu_causes = nlohmann::json::array();
      for (int g = 0; g < s.gpus; ++g) {
        const bool idle =
            static_cast<size_t>(g) < s.ranks.size() && s.ranks[static_cast<size_t>(g)].idle;
        gpu_causes.push_back(idle ? "idle" : (cause == "idle" ? "healthy" : cause));
      }
      label["gpu_causes"] = gpu_causes;
      const Recording rec = sim::simulate_recording(std::move(spec.value()), *model);
      const std::string stem = fmt::format("{}-{:03}", name, r);
      std::filesystem::path file;
      bool ok = true;
      if (format == "recording") {
        file = out / (stem + ".db");
        std::vector<DeviceInfo> devices;
        for (const auto& g : rec.gpus) devices.push_back(g.info);
        auto w = RecordingWriter::create(file.string(), rec.system, devices, rec.source,
                                         rec.start_unix_ms);
        ok = w && w.value()->add_recording(rec) && w.value()->close();
      } else if (format == "dmon") {
        file = out / (stem + ".dmon");
        ok = write_text(file, write_dmon(rec));
      } else if (format == "gd-csv") {
        file = out / (stem + ".gd.csv");
        ok = write_text(file, write_csv(rec));
      } else {
        file = out / (stem + (format == "smi-csv" ? ".csv" : ".nounits.csv"));
        ok = write_text(file, write_smi_csv(rec, format == "smi-csv"));
        if (format != "smi-csv") label["columns_units"] = false;
      }
      if (!ok) {
        std::fprintf(stderr, "corpus: cannot write %s\n", file.c_str());
        return 1;
      }
      label["file"] = file.filename().string();
      labels << label.dump() << "\n";
      ++written;
    }
  }
  std::fprintf(stderr, "corpus: %d runs in %s (labels.jsonl)\n", written, out.c_str());
  return labels ? 0 : 1;
}
