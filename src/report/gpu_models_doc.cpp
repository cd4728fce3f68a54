#include "report/gpu_models_doc.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/gpu_model_table.hpp"

namespace gpudoctor {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// "450 W", or a laptop's "60-115 W (90)": the range its maker picks from, a typical value.
std::string limit_text(const GpuModel& m) {
  if (m.limit_range_max_w > 0)
    return fmt::format("{:g}-{:g} W ({:g})", m.limit_range_min_w, m.limit_range_max_w, m.tdp_w);
  return fmt::format("{:g} W", m.tdp_w);
}

// "89 C", or "87 C*" for a family default.
std::string slowdown_text(const GpuModel& m, std::string_view unit) {
  return fmt::format("{:g}{}{}", m.slowdown_temp_c, unit, m.slowdown_is_family_default ? "*" : "");
}

std::string memory_text(const GpuModel& m) {
  return fmt::format("{:g} MiB {}", m.mem_total_mib, m.memory_type);
}

std::vector<std::string_view> alias_list(const GpuModel& m) {
  std::vector<std::string_view> out;
  for (std::size_t pos = 0; pos <= m.aliases.size();) {
    const std::size_t semi = std::min(m.aliases.find(';', pos), m.aliases.size());
    if (semi > pos) out.push_back(m.aliases.substr(pos, semi - pos));
    pos = semi + 1;
  }
  return out;
}

std::string md_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

constexpr std::string_view kFamilyNote =
    "* slowdown unpublished: the default of the board's kind and architecture (docs/gpu-models.md)";

}  // namespace

std::vector<GpuModel> select_gpu_models(std::string_view text) {
  std::vector<GpuModel> out;
  const std::string want = lower(text);
  for (const auto& m : gpu_models()) {
    const bool hit = want.empty() || lower(m.nvml_name).find(want) != std::string::npos ||
                     lower(m.key).find(want) != std::string::npos ||
                     lower(m.aliases).find(want) != std::string::npos ||
                     gpu_kind_name(m.kind) == want || architecture_name(m.architecture) == want;
    if (hit) out.push_back(m);
  }
  if (out.empty())
    if (const auto m = gpu_model_by_name(text)) out.push_back(*m);
  return out;
}

std::string render_gpu_models_text(std::span<const GpuModel> models) {
  // Fits 100 columns for all but the longest keys: names shortened (vendor words, then the
  // middle), limits in W and memory in GiB without units in the cells.
  std::array<std::size_t, 7> w{4, 3, 4, 7, 6, 6, 7};
  const auto row = [](const GpuModel& m) {
    const std::string limit =
        m.limit_range_max_w > 0
            ? fmt::format("{:g} ({:g}-{:g})", m.tdp_w, m.limit_range_min_w, m.limit_range_max_w)
            : fmt::format("{:g}", m.tdp_w);
    return std::array<std::string, 7>{
        gpu_name_for_column(m.nvml_name, 26),         std::string(m.key),
        std::string(gpu_kind_name(m.kind)),           limit,
        fmt::format("{:g}", m.sm_clock_max_mhz),      slowdown_text(m, ""),
        fmt::format("{:.0f}", m.mem_total_mib / 1024)};
  };
  for (const auto& m : models) {
    const auto r = row(m);
    for (std::size_t i = 0; i < r.size(); ++i) w[i] = std::max(w[i], r[i].size());
  }
  const auto line = [&](const std::array<std::string, 7>& r) {
    return fmt::format("{:<{}}  {:<{}}  {:<{}}  {:>{}}  {:>{}}  {:>{}}  {:>{}}\n", r[0], w[0], r[1],
                       w[1], r[2], w[2], r[3], w[3], r[4], w[4], r[5], w[5], r[6], w[6]);
  };
  std::string out = line({"NAME", "KEY", "KIND", "LIMIT W", "SM MHZ", "SLOW C", "MEM GIB"});
  bool family = false;
  bool laptop = false;
  for (const auto& m : models) {
    out += line(row(m));
    family = family || m.slowdown_is_family_default;
    laptop = laptop || m.limit_range_max_w > 0;
  }
  out += fmt::format("{} model(s)", models.size());
  if (laptop) out += "; a laptop's limit: typical (the range its maker picks from)";
  if (family) out += fmt::format("\n{}", kFamilyNote);
  out += '\n';
  return out;
}

std::string render_gpu_models_json(std::span<const GpuModel> models) {
  auto all = nlohmann::ordered_json::array();
  for (const auto& m : models) {
    nlohmann::ordered_json j;
    j["key"] = m.key;
    j["name"] = m.nvml_name;
    j["kind"] = gpu_kind_name(m.kind);
    j["architecture"] = architecture_name(m.architecture);
    j["power_limit_w"] = m.tdp_w;
    j["power_limit_range_w"] =
        m.limit_range_max_w > 0
            ? nlohmann::ordered_json::array({m.limit_range_min_w, m.limit_range_max_w})
            : nlohmann::ordered_json();
    j["sm_clock_max_mhz"] = m.sm_clock_max_mhz;
    j["sm_clock_base_mhz"] = m.sm_clock_base_mhz;
    j["slowdown_temp_c"] = m.slowdown_temp_c;
    j["slowdown_is_family_default"] = m.slowdown_is_family_default;
    j["memory_mib"] = m.mem_total_mib;
    j["memory_type"] = m.memory_type;
    j["memory_bandwidth_gb_s"] = m.dram_bandwidth_gb_s;
    j["aliases"] = alias_list(m);
    j["source"] = m.source;
    all.push_back(std::move(j));
  }
  return all.dump(2) + "\n";
}

std::string render_gpu_models_markdown(std::span<const GpuModel> models) {
  std::string out =
      "| name | key | kind | arch | power limit | max SM clock | slowdown | memory | also matched "
      "as | source |\n"
      "|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& m : models) {
    std::string aliases;
    for (const auto a : alias_list(m))
      aliases += fmt::format("{}{}", aliases.empty() ? "" : ", ", a);
    out += fmt::format("| {} | `{}` | {} | {} | {} | {:g} MHz | {} | {} | {} | {} |\n",
                       md_escape(m.nvml_name), m.key, gpu_kind_name(m.kind),
                       architecture_name(m.architecture), limit_text(m), m.sm_clock_max_mhz,
                       slowdown_text(m, " °C"), memory_text(m), md_escape(aliases),
                       md_escape(m.source));
  }
  return out;
}

std::string render_gpu_models_doc() {
  std::map<std::string_view, int> by_kind;
  for (const auto& m : gpu_models()) ++by_kind[gpu_kind_name(m.kind)];
  std::string out = fmt::format(
      "# GPU models\n\n"
      "<!-- Generated from src/core/gpu_models.tsv by `gpudoctor models --markdown`; a test "
      "fails when\n"
      "     this file and the table differ. Edit the table, then regenerate. -->\n\n"
      "What gpudoctor knows of each NVIDIA GPU: {} models ({} data-centre, {} workstation, {} "
      "consumer,\n{} laptop). Where a log has no power limit, max clock, slowdown temperature or "
      "memory size, the\ndiagnosis takes them from the row of the GPU's name (`diagnose` says so "
      "in its notes: \"power limit\n... from the model table\"); `--gpu-name` names the GPU of a "
      "log that does not. `gpudoctor models`\nlists the table (`gpudoctor models 3070`, "
      "`gpudoctor models laptop`, `--format json`).\n\n",
      gpu_models().size(), by_kind["datacenter"], by_kind["workstation"], by_kind["consumer"],
      by_kind["laptop"]);
  out +=
      "## Names\n\n"
      "A name is matched as nvidia-smi and NVML print it (`NVIDIA GeForce RTX 3070`, `Tesla "
      "V100-SXM2-32GB`,\n`NVIDIA H100 80GB HBM3`), as W&B, GPU-Z, HWiNFO (`GPU [#0]: NVIDIA "
      "GeForce RTX 3060 Ti:`) and\nAfterburner write it, or as people type it (`RTX 3070`, `3070 "
      "Ti`, `A100 80GB`, `H100 PCIe`): any case,\nvendor words (NVIDIA, GeForce, Tesla) and "
      "punctuation ignored, the family word (RTX, GTX, Quadro)\noptional before a model number. "
      "The longest name of the table found in it wins, never one followed\nby a word that makes "
      "it another board (`Ti`, `SUPER`, `D`, `Laptop`, `Max-Q`, `PCIe`, `NVL`, a\nmemory size). A "
      "name that says laptop (`Laptop GPU`, `Mobile`, `Max-Q`) is matched to laptop rows\nonly: "
      "`NVIDIA GeForce RTX 3060 Laptop GPU` is never the desktop RTX 3060. Older laptops "
      "(Pascal,\nTuring) may report the desktop card's name to NVML (`GeForce GTX 1060`): such "
      "a name is read as the\ndesktop card (`--power-limit W` sets the laptop's own). A name cut "
      "short by nvidia-smi's table "
      "(`NVIDIA GeForce RTX 3060 L...`)\nis matched to the rows it can be. An unknown name gets "
      "a \"did you mean\" with the nearest names.\n\n";
  out +=
      "## The table file\n\n"
      "`src/core/gpu_models.tsv`, tab-separated, one row per board, `#` lines are comments; the "
      "build\nembeds it (`cmake/embed_text.cmake`), nothing is read at run time, and a unit test "
      "fails on a row\nthe program cannot read. Columns every row gives:\n\n"
      "| column | meaning |\n|---|---|\n"
      "| `key` | the model's key (simulator scenarios: `model=h100-sxm`) |\n"
      "| `name` | the name NVML reports (TechPowerUp's where NVML's is the desktop card's) |\n"
      "| `kind` | `datacenter`, `workstation`, `consumer` or `laptop` |\n"
      "| `arch` | architecture, `kepler` to `blackwell` |\n"
      "| `limit_w` | default power limit (TDP, or TGP; a laptop: a typical value in its range) |\n"
      "| `limit_range_w` | laptops only: the TGP range `MIN-MAX` the laptop's maker chooses "
      "from |\n"
      "| `boost_mhz`, `base_mhz` | max boost and base SM clock (a laptop: the top of its range) "
      "|\n"
      "| `mem_mib`, `mem_type`, `mem_gb_s` | memory as NVML reports it where observed, else the "
      "marketing size x 1024; type; bandwidth |\n"
      "| `slowdown_c` | the temperature at which the GPU slows itself; empty where unpublished "
      "(below) |\n"
      "| `aliases` | other names people use, `;`-separated |\n"
      "| `source` | where the row's figures come from (a data sheet, NVIDIA's spec page, "
      "TechPowerUp's GPU database, an observed `nvidia-smi -q`); \"est\" marks an estimate |"
      "\n\n"
      "The simulator's columns (`limit_min_w`, `limit_max_w`, `idle_w`, `clock_min_mhz`, "
      "`mem_clock_mhz`,\n`shutdown_c`, `pcie`, `nvlink_gb_s`, `cooling`, `c_per_w`, "
      "`time_constant_s`) may be empty: the\ndefaults at the top of `src/core/gpu_model_table.cpp` "
      "fill them from the row's other figures.\n\n";
  out +=
      "Slowdown temperatures where a row gives none (marked `*` below and in `gpudoctor "
      "models`): one per kind\nand architecture, from the boards of that family whose "
      "threshold is known (an observed `nvidia-smi -q`\nor a data sheet); for laptops the 87 °C "
      "maximum GPU temperature of NVIDIA's laptop spec pages. They\nare estimates: a log's own "
      "slowdown temperature (NVML's slowdown threshold, DCGM field 158) wins.\n\n"
      "| kind | kepler | maxwell | pascal | volta | turing | ampere | ada | hopper | blackwell "
      "|\n|---|---|---|---|---|---|---|---|---|---|\n";
  for (auto kind :
       {GpuKind::kDatacenter, GpuKind::kWorkstation, GpuKind::kConsumer, GpuKind::kLaptop}) {
    out += fmt::format("| {} |", gpu_kind_name(kind));
    for (auto a : {Architecture::kKepler, Architecture::kMaxwell, Architecture::kPascal,
                   Architecture::kVolta, Architecture::kTuring, Architecture::kAmpere,
                   Architecture::kAda, Architecture::kHopper, Architecture::kBlackwell})
      out += fmt::format(" {:g} °C |", detail::family_slowdown_temp_c(kind, a));
    out += '\n';
  }
  out += "\n## The models\n\n";
  out += render_gpu_models_markdown(gpu_models());
  return out;
}

}  // namespace gpudoctor
