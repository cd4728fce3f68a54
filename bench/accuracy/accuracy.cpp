// Diagnosis accuracy on the simulator's labelled corpus (bench/corpus): every run is read back
// through content detection, diagnosed, and compared with its label, run by run and GPU by GPU.
// Prints a confusion matrix and the figures the issue asks for; exit status 1 when a minimum given
// on the command line is not met (ctest uses that on a small corpus).
//
//   gpudoctor_accuracy CORPUS_DIR [--min-run 0.95] [--min-gpu 0.95] [--markdown FILE]
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analysis/diagnosis.hpp"
#include "core/gpu_models.hpp"
#include "formats/load.hpp"

using namespace gpudoctor;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: %s CORPUS_DIR [--min-run R] [--min-gpu R] [--markdown FILE] [--verbose]\n",
                 argv[0]);
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  double min_run = 0, min_gpu = 0;
  std::string markdown;
  bool verbose = false;
  for (int i = 2; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--min-run") && i + 1 < argc)
      min_run = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--min-gpu") && i + 1 < argc)
      min_gpu = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--markdown") && i + 1 < argc)
      markdown = argv[++i];
    else if (!std::strcmp(argv[i], "--verbose"))
      verbose = true;
  }
  std::ifstream labels(dir / "labels.jsonl");
  if (!labels) {
    std::fprintf(stderr, "accuracy: no %s (run gpudoctor_corpus first)\n",
                 (dir / "labels.jsonl").c_str());
    return 2;
  }
  std::vector<std::string> codes;
  for (const auto& c : causes()) codes.emplace_back(c.code);
  codes.emplace_back("(none)");
  std::map<std::string, std::map<std::string, int>> confusion;        // truth -> predicted
  std::map<std::string, std::pair<int, int>> by_format, by_scenario;  // right, total
  int runs = 0, runs_right = 0, gpus = 0, gpus_right = 0, healthy_runs = 0, healthy_flagged = 0,
      healthy_gpus_flagged = 0, errors = 0;
  std::string line;
  while (std::getline(labels, line)) {
    if (line.empty()) continue;
    const auto label = nlohmann::json::parse(line);
    const std::string file = (dir / label["file"].get<std::string>()).string();
    const std::string truth = label["cause"];
    // nvidia-smi dmon names no GPU: gpudoctor says so and asks for --gpu-name, given here as the
    // user would, from the model the run used.
    LoadOptions opt;
    if (label["format"] == "dmon")
      if (const auto m = gpu_model_by_key(label["model"].get<std::string>()))
        opt.gpu_name = std::string(m->nvml_name);
    auto rec = load_telemetry(file, opt);
    if (!rec) {
      std::fprintf(stderr, "accuracy: %s: %s\n", file.c_str(), rec.error().message.c_str());
      ++errors;
      continue;
    }
    const Diagnosis d = diagnose(rec.value());
    const std::string got = d.verdict ? std::string(cause_code(*d.verdict)) : "(none)";
    ++runs;
    confusion[truth][got]++;
    const bool right = got == truth;
    runs_right += right;
    auto& f = by_format[label["format"].get<std::string>()];
    f.first += right, f.second++;
    auto& sc = by_scenario[label["scenario"].get<std::string>()];
    sc.first += right, sc.second++;
    if (truth == "healthy") {
      ++healthy_runs;
      healthy_flagged += got != "healthy";
    }
    const auto& gc = label["gpu_causes"];
    for (size_t g = 0; g < gc.size(); ++g) {
      const std::string want = gc[g];
      std::string have = "(missing)";
      if (g < d.gpus.size() && d.gpus[g].verdict) have = cause_code(*d.gpus[g].verdict);
      ++gpus;
      gpus_right += have == want;
      if (want == "healthy" && have != "healthy") ++healthy_gpus_flagged;
      if (verbose && have != want)
        std::fprintf(stderr, "  %s gpu %zu: want %s got %s\n", file.c_str(), g, want.c_str(),
                     have.c_str());
    }
    if (verbose && !right)
      std::fprintf(stderr, "MISS %s (%s, %s, interval %.1f s): want %s got %s\n", file.c_str(),
                   label["model"].get<std::string>().c_str(),
                   label["format"].get<std::string>().c_str(), label["interval_s"].get<double>(),
                   truth.c_str(), got.c_str());
  }
  const double run_acc = runs ? static_cast<double>(runs_right) / runs : 0;
  const double gpu_acc = gpus ? static_cast<double>(gpus_right) / gpus : 0;
  std::string out;
  out += fmt::format("Runs: {}, verdict accuracy {:.1f} % ({} right)\n", runs, run_acc * 100,
                     runs_right);
  out += fmt::format("GPUs: {}, per-GPU accuracy {:.1f} % ({} right)\n", gpus, gpu_acc * 100,
                     gpus_right);
  out += fmt::format("Healthy runs called unhealthy: {} of {}; healthy GPUs called unhealthy: {}\n",
                     healthy_flagged, healthy_runs, healthy_gpus_flagged);
  if (errors) out += fmt::format("Unreadable runs: {}\n", errors);
  out += "\nConfusion matrix (rows: label, columns: verdict)\n\n| label \\ verdict |";
  std::vector<std::string> cols;
  for (const auto& c : codes) {
    bool used = false;
    for (const auto& [t, row] : confusion) used = used || row.count(c);
    if (used || confusion.count(c)) cols.push_back(c);
  }
  for (const auto& c : cols) out += " " + c + " |";
  out += "\n|---|";
  for (size_t i = 0; i < cols.size(); ++i) out += "---:|";
  out += "\n";
  for (const auto& t : cols) {
    if (!confusion.count(t)) continue;
    out += "| " + t + " |";
    for (const auto& c : cols) {
      const auto it = confusion[t].find(c);
      out += fmt::format(" {} |", it == confusion[t].end() ? 0 : it->second);
    }
    out += "\n";
  }
  out += "\nBy input format\n\n| format | right | runs |\n|---|---:|---:|\n";
  for (const auto& [k, v] : by_format)
    out += fmt::format("| {} | {} | {} |\n", k, v.first, v.second);
  out += "\nBy scenario\n\n| scenario | right | runs |\n|---|---:|---:|\n";
  for (const auto& [k, v] : by_scenario)
    out += fmt::format("| {} | {} | {} |\n", k, v.first, v.second);
  std::fputs(out.c_str(), stdout);
  if (!markdown.empty()) std::ofstream(markdown) << out;
  const bool ok = run_acc >= min_run && gpu_acc >= min_gpu && errors == 0 &&
                  (min_run == 0 || healthy_flagged == 0);
  if (!ok) std::fprintf(stderr, "accuracy: below the minimum asked for\n");
  return ok ? 0 : 1;
}
