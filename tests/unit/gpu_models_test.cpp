#include "core/gpu_models.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "core/gpu_model_table.hpp"
#include "report/gpu_models_doc.hpp"

namespace gpudoctor {
namespace {

std::string key_of(std::string_view name) {
  const auto m = gpu_model_by_name(name);
  return m ? std::string(m->key) : std::string("<none>");
}

TEST(GpuModels, TableCoversTheCommonBoards) {
  for (const char* key : {"a100-sxm4-40gb",
                          "a100-sxm4-80gb",
                          "a100-pcie-40gb",
                          "a100-pcie-80gb",
                          "h100-sxm",
                          "h100-pcie",
                          "h100-nvl",
                          "h200",
                          "v100-sxm2-16gb",
                          "v100-sxm2-32gb",
                          "v100-pcie-16gb",
                          "v100-pcie-32gb",
                          "l4",
                          "l40s",
                          "l40",
                          "t4",
                          "a10",
                          "a10g",
                          "a30",
                          "rtx-a6000",
                          "rtx-6000-ada",
                          "rtx-3090",
                          "rtx-4090"}) {
    EXPECT_TRUE(gpu_model_by_key(key).has_value()) << key;
  }
}

TEST(GpuModels, KeysAndNamesAreUnique) {
  std::set<std::string_view> keys;
  std::set<std::string_view> names;
  for (const auto& m : gpu_models()) {
    EXPECT_FALSE(m.key.empty());
    EXPECT_FALSE(m.nvml_name.empty()) << m.key;
    EXPECT_TRUE(keys.insert(m.key).second) << "duplicate key " << m.key;
    EXPECT_TRUE(names.insert(m.nvml_name).second) << "duplicate NVML name " << m.nvml_name;
  }
}

TEST(GpuModels, LimitsAreOrderedAndPlausible) {
  for (const auto& m : gpu_models()) {
    SCOPED_TRACE(std::string(m.key));
    EXPECT_NE(m.architecture, Architecture::kUnknown);
    EXPECT_GT(m.power_limit_min_w, 0);
    EXPECT_LE(m.power_limit_min_w, m.tdp_w);
    EXPECT_LE(m.tdp_w, m.power_limit_max_w);
    EXPECT_GT(m.idle_w, 0);
    EXPECT_LT(m.idle_w, m.power_limit_min_w);
    EXPECT_GT(m.sm_clock_min_mhz, 0);
    EXPECT_LE(m.sm_clock_min_mhz, m.sm_clock_base_mhz);
    EXPECT_LE(m.sm_clock_base_mhz, m.sm_clock_max_mhz);
    EXPECT_GT(m.mem_clock_mhz, 0);
    EXPECT_GT(m.mem_total_mib, 1000);
    EXPECT_LT(m.slowdown_temp_c, m.shutdown_temp_c);
    EXPECT_GE(m.slowdown_temp_c, 80);
    EXPECT_LE(m.shutdown_temp_c, 105);
    EXPECT_GE(m.pcie_gen_max, 3);
    EXPECT_LE(m.pcie_gen_max, 5);
    EXPECT_TRUE(m.pcie_width_max == 4 || m.pcie_width_max == 8 || m.pcie_width_max == 16);
    EXPECT_GE(m.nvlink_gb_s, 0);
    EXPECT_GT(m.dram_bandwidth_gb_s, 0);
    EXPECT_GE(m.thermal_time_constant_s, 20);
    EXPECT_LE(m.thermal_time_constant_s, 60);
    // At TDP with a 30 C inlet the board settles warm but below its slowdown threshold.
    const double steady_c = 30 + m.thermal_resistance_c_per_w * m.tdp_w;
    EXPECT_GE(steady_c, 60);
    EXPECT_LE(steady_c, 85);
    EXPECT_LT(steady_c, m.slowdown_temp_c);
  }
}

TEST(GpuModels, SpotFiguresMatchPublishedOnes) {
  const auto h100 = gpu_model_by_key("h100-sxm");
  ASSERT_TRUE(h100.has_value());
  EXPECT_EQ(h100->tdp_w, 700);
  EXPECT_EQ(h100->mem_total_mib, 81559);
  EXPECT_EQ(h100->architecture, Architecture::kHopper);
  EXPECT_TRUE(h100->passive_cooling);
  const auto a100 = gpu_model_by_key("a100-sxm4-40gb");
  ASSERT_TRUE(a100.has_value());
  EXPECT_EQ(a100->tdp_w, 400);
  EXPECT_EQ(a100->power_limit_min_w, 100);
  EXPECT_EQ(a100->sm_clock_max_mhz, 1410);
  EXPECT_EQ(a100->mem_total_mib, 40960);
  const auto t4 = gpu_model_by_key("t4");
  ASSERT_TRUE(t4.has_value());
  EXPECT_EQ(t4->tdp_w, 70);
  EXPECT_EQ(t4->slowdown_temp_c, 93);
  EXPECT_EQ(t4->shutdown_temp_c, 96);
  const auto h200 = gpu_model_by_key("h200");
  ASSERT_TRUE(h200.has_value());
  EXPECT_EQ(h200->mem_total_mib, 143771);
  const auto rtx4090 = gpu_model_by_key("rtx-4090");
  ASSERT_TRUE(rtx4090.has_value());
  EXPECT_FALSE(rtx4090->passive_cooling);
}

TEST(GpuModels, ByKeyIsExact) {
  EXPECT_FALSE(gpu_model_by_key("").has_value());
  EXPECT_FALSE(gpu_model_by_key("H100-SXM").has_value());
  EXPECT_FALSE(gpu_model_by_key("h100").has_value());
  EXPECT_FALSE(gpu_model_by_key("NVIDIA H100 80GB HBM3").has_value());
  for (const auto& m : gpu_models()) {
    const auto found = gpu_model_by_key(m.key);
    ASSERT_TRUE(found.has_value()) << m.key;
    EXPECT_EQ(found->nvml_name, m.nvml_name);
  }
}

TEST(GpuModels, EveryNvmlNameFindsItsOwnModel) {
  for (const auto& m : gpu_models()) EXPECT_EQ(key_of(m.nvml_name), m.key) << m.nvml_name;
}

TEST(GpuModels, ByNameMatchesWhatNvmlAndNvidiaSmiPrint) {
  // Exactly as NVML / nvidia-smi --query-gpu=name print them.
  EXPECT_EQ(key_of("NVIDIA A100-SXM4-40GB"), "a100-sxm4-40gb");
  EXPECT_EQ(key_of("NVIDIA A100-SXM4-80GB"), "a100-sxm4-80gb");
  EXPECT_EQ(key_of("NVIDIA A100-PCIE-40GB"), "a100-pcie-40gb");
  EXPECT_EQ(key_of("NVIDIA A100 80GB PCIe"), "a100-pcie-80gb");
  EXPECT_EQ(key_of("NVIDIA H100 80GB HBM3"), "h100-sxm");
  EXPECT_EQ(key_of("NVIDIA H100 PCIe"), "h100-pcie");
  EXPECT_EQ(key_of("NVIDIA H100 NVL"), "h100-nvl");
  EXPECT_EQ(key_of("NVIDIA H200"), "h200");
  EXPECT_EQ(key_of("Tesla V100-SXM2-16GB"), "v100-sxm2-16gb");
  EXPECT_EQ(key_of("Tesla V100-SXM2-32GB"), "v100-sxm2-32gb");
  EXPECT_EQ(key_of("Tesla V100-PCIE-16GB"), "v100-pcie-16gb");
  EXPECT_EQ(key_of("Tesla V100-PCIE-32GB"), "v100-pcie-32gb");
  EXPECT_EQ(key_of("Tesla T4"), "t4");
  EXPECT_EQ(key_of("NVIDIA L4"), "l4");
  EXPECT_EQ(key_of("NVIDIA L40S"), "l40s");
  EXPECT_EQ(key_of("NVIDIA L40"), "l40");
  EXPECT_EQ(key_of("NVIDIA A10"), "a10");
  EXPECT_EQ(key_of("NVIDIA A10G"), "a10g");
  EXPECT_EQ(key_of("NVIDIA A30"), "a30");
  EXPECT_EQ(key_of("NVIDIA RTX A6000"), "rtx-a6000");
  EXPECT_EQ(key_of("NVIDIA RTX 6000 Ada Generation"), "rtx-6000-ada");
  EXPECT_EQ(key_of("NVIDIA GeForce RTX 3090"), "rtx-3090");
  EXPECT_EQ(key_of("NVIDIA GeForce RTX 4090"), "rtx-4090");
}

TEST(GpuModels, ByNameToleratesCaseSpacingAndVendorPrefixes) {
  EXPECT_EQ(key_of("A100-SXM4-40GB"), "a100-sxm4-40gb");
  EXPECT_EQ(key_of("nvidia a100-sxm4-80gb"), "a100-sxm4-80gb");
  EXPECT_EQ(key_of("A100 80GB PCIe"), "a100-pcie-80gb");
  EXPECT_EQ(key_of("A100 80 GB SXM4"), "a100-sxm4-80gb");
  EXPECT_EQ(key_of("H100 SXM5 80GB"), "h100-sxm");
  EXPECT_EQ(key_of("H100-SXM5-80GB"), "h100-sxm");
  EXPECT_EQ(key_of("H100 SXM"), "h100-sxm");
  EXPECT_EQ(key_of("H100 80GB HBM3"), "h100-sxm");
  EXPECT_EQ(key_of("  NVIDIA   H100   PCIe "), "h100-pcie");
  EXPECT_EQ(key_of("H100 PCIe 80GB"), "h100-pcie");
  EXPECT_EQ(key_of("H200 SXM 141GB"), "h200");
  EXPECT_EQ(key_of("NVIDIA T4"), "t4");
  EXPECT_EQ(key_of("tesla v100-sxm2-32gb"), "v100-sxm2-32gb");
  EXPECT_EQ(key_of("GeForce RTX 4090"), "rtx-4090");
  EXPECT_EQ(key_of("RTX 3090"), "rtx-3090");
  EXPECT_EQ(key_of("RTX 6000 Ada"), "rtx-6000-ada");
  // A MIG device is named after its parent board.
  EXPECT_EQ(key_of("NVIDIA A100-SXM4-80GB MIG 3g.40gb"), "a100-sxm4-80gb");
}

TEST(GpuModels, ByNameKeepsSizesAndFormFactorsApart) {
  EXPECT_EQ(key_of("NVIDIA A100-SXM4-80GB"), "a100-sxm4-80gb");
  EXPECT_NE(key_of("NVIDIA A100-SXM4-80GB"), "a100-sxm4-40gb");
  EXPECT_EQ(key_of("NVIDIA A100-PCIE-40GB"), "a100-pcie-40gb");
  EXPECT_EQ(key_of("A100 PCIe 80GB"), "a100-pcie-80gb");
  EXPECT_EQ(key_of("NVIDIA H100 PCIe"), "h100-pcie");
  EXPECT_NE(key_of("NVIDIA H100 PCIe"), "h100-sxm");
  EXPECT_EQ(key_of("NVIDIA H100 NVL"), "h100-nvl");
  EXPECT_EQ(key_of("Tesla V100-PCIE-16GB"), "v100-pcie-16gb");
  EXPECT_EQ(key_of("Tesla V100-SXM2-16GB"), "v100-sxm2-16gb");
  EXPECT_EQ(key_of("NVIDIA L40"), "l40");
  EXPECT_EQ(key_of("NVIDIA L40S"), "l40s");
  EXPECT_EQ(key_of("NVIDIA A10"), "a10");
  EXPECT_EQ(key_of("NVIDIA A10G"), "a10g");
}

// The last name asked is remembered per thread: asking in turns, again and from other threads
// gives each name its own answer.
TEST(GpuModels, ByNameAnswersEachNameAskedInTurnAndOnEveryThread) {
  const std::vector<std::pair<std::string, std::string>> asked = {
      {"NVIDIA H100 80GB HBM3", "h100-sxm"},
      {"NVIDIA H100 80GB HBM3", "h100-sxm"},
      {"NVIDIA A100", "<none>"},
      {"NVIDIA A100", "<none>"},
      {"NVIDIA L40S", "l40s"},
      {"NVIDIA L40", "l40"},
      {"", "<none>"},
      {"NVIDIA H100 80GB HBM3", "h100-sxm"}};
  for (const auto& [name, key] : asked) EXPECT_EQ(key_of(name), key) << name;
  // Each thread asks its name and the first in turns.
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (size_t k = 0; k < asked.size(); ++k)
    threads.emplace_back([&, k] {
      for (size_t r = 0; r < 50; ++r) {
        const auto& [name, key] = asked[r % 2 == 0 ? k : 0];
        if (key_of(name) != key) ++wrong;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(GpuModels, UnknownOrAmbiguousNamesGiveNothing) {
  for (const char* name : {
           "",
           "   ",
           "NVIDIA",
           "Tesla",
           "NVIDIA H100 SXM5 94GB",
           "NVIDIA A100",  // 40 or 80 GB, SXM4 or PCIe: 250 to 400 W
           "A100 PCIe",
           "Tesla V100",
           "NVIDIA GeForce RTX",
           "NVIDIA GeForce RTX 3060...",
           "AMD Instinct MI300X",
           "Intel(R) UHD Graphics 630",
       }) {
    EXPECT_FALSE(gpu_model_by_name(name).has_value()) << '"' << name << "\" -> " << key_of(name);
  }
}

// What people type for `model=`: any case, a unique prefix; otherwise the close keys.
TEST(GpuModels, FindByKeyOrUniquePrefix) {
  EXPECT_EQ(find_gpu_model("h100-sxm")->key, "h100-sxm");
  EXPECT_EQ(find_gpu_model("H200")->key, "h200");  // a key, though h200 is no prefix of others
  EXPECT_EQ(find_gpu_model("A100-SXM4-80")->key, "a100-sxm4-80gb");
  EXPECT_EQ(find_gpu_model("H100-P")->key, "h100-pcie");
  const auto ambiguous = find_gpu_model("H100");
  ASSERT_FALSE(ambiguous.ok());
  EXPECT_EQ(ambiguous.error().kind, Error::Kind::kUsage);
  EXPECT_NE(ambiguous.error().message.find("'H100' is ambiguous: "), std::string::npos);
  for (const char* key : {"h100-sxm", "h100-pcie", "h100-nvl"})
    EXPECT_NE(ambiguous.error().message.find(key), std::string::npos) << key;
  EXPECT_EQ(ambiguous.error().message.find("h200"), std::string::npos);
  const auto typo = find_gpu_model("h100-sxn");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.error().message.find("unknown GPU model 'h100-sxn'; close: h100-sxm"),
            std::string::npos)
      << typo.error().message;
  EXPECT_FALSE(find_gpu_model("").ok());
  EXPECT_NE(find_gpu_model("mi300x").error().message.find("sim --list"), std::string::npos);
}

}  // namespace
}  // namespace gpudoctor

namespace gpudoctor {
namespace {

std::string key_for(std::string_view name) {
  const auto m = gpu_model_by_name(name);
  return m ? std::string(m->key) : std::string("<none>");
}

TEST(GpuModelTable, EmbeddedTableReadsWithoutProblems) {
  for (const auto& p : gpu_model_table_problems()) ADD_FAILURE() << p;
  EXPECT_GE(gpu_models().size(), 150u);
}

TEST(GpuModelTable, CoversEveryKind) {
  std::map<GpuKind, int> by_kind;
  for (const auto& m : gpu_models()) ++by_kind[m.kind];
  EXPECT_GE(by_kind[GpuKind::kDatacenter], 35);
  EXPECT_GE(by_kind[GpuKind::kWorkstation], 25);
  EXPECT_GE(by_kind[GpuKind::kConsumer], 50);
  EXPECT_GE(by_kind[GpuKind::kLaptop], 30);
}

// The figures the diagnosis reads, on every row: plausible, and a laptop's range kept.
TEST(GpuModelTable, EveryRowHasPlausibleDiagnosisFigures) {
  for (const auto& m : gpu_models()) {
    SCOPED_TRACE(std::string(m.key));
    EXPECT_GE(m.tdp_w, 25);
    EXPECT_LE(m.tdp_w, 1200);
    EXPECT_GE(m.sm_clock_max_mhz, 800);
    EXPECT_LE(m.sm_clock_max_mhz, 3000);
    EXPECT_GE(m.sm_clock_base_mhz, 400);
    EXPECT_GE(m.slowdown_temp_c, 80);
    EXPECT_LE(m.slowdown_temp_c, 100);
    EXPECT_GE(m.mem_total_mib, 2000);
    EXPECT_LE(m.mem_total_mib, 200000);
    EXPECT_FALSE(m.source.empty());
    EXPECT_FALSE(m.memory_type.empty());
    if (m.kind == GpuKind::kLaptop) {
      EXPECT_GT(m.limit_range_min_w, 0);
      EXPECT_LE(m.limit_range_min_w, m.tdp_w);
      EXPECT_LE(m.tdp_w, m.limit_range_max_w);
      EXPECT_LE(m.limit_range_max_w, 200);
      EXPECT_TRUE(m.nvml_name.find("Laptop GPU") != std::string_view::npos ||
                  m.nvml_name.find("Mobile") != std::string_view::npos ||
                  m.nvml_name.find("Max-Q") != std::string_view::npos)
          << "a laptop row's name must say so: " << m.nvml_name;
    } else {
      EXPECT_EQ(m.limit_range_min_w, 0);
      EXPECT_EQ(m.limit_range_max_w, 0);
    }
    // Every name and alias of a row finds that row.
    EXPECT_EQ(key_for(m.nvml_name), m.key) << m.nvml_name;
    std::string_view aliases = m.aliases;
    while (!aliases.empty()) {
      const auto semi = aliases.find(';');
      const std::string alias(aliases.substr(0, semi));
      EXPECT_EQ(key_for(alias), m.key) << "alias " << alias;
      aliases = semi == std::string_view::npos ? std::string_view() : aliases.substr(semi + 1);
    }
  }
}

// The simulator's scenarios name these keys; their figures did not change when the table became
// a file (the values the C++ table held).
TEST(GpuModelTable, SimulatorKeysKeepTheirFigures) {
  const auto a10g = gpu_model_by_key("a10g");
  ASSERT_TRUE(a10g);
  EXPECT_EQ(a10g->tdp_w, 300);
  EXPECT_EQ(a10g->idle_w, 35);
  EXPECT_EQ(a10g->sm_clock_min_mhz, 840);
  EXPECT_EQ(a10g->thermal_resistance_c_per_w, 0.160);
  EXPECT_EQ(a10g->mem_clock_mhz, 6251);
  EXPECT_TRUE(a10g->passive_cooling);
  EXPECT_FALSE(a10g->hbm);
  const auto h100 = gpu_model_by_key("h100-sxm");
  ASSERT_TRUE(h100);
  EXPECT_EQ(h100->power_limit_min_w, 200);
  EXPECT_EQ(h100->sm_clock_base_mhz, 1590);
  EXPECT_EQ(h100->sm_clock_min_mhz, 900);
  EXPECT_EQ(h100->thermal_resistance_c_per_w, 0.057);
  EXPECT_EQ(h100->thermal_time_constant_s, 45);
  EXPECT_EQ(h100->nvlink_gb_s, 900);
  EXPECT_EQ(h100->dram_bandwidth_gb_s, 3350);
  EXPECT_TRUE(h100->hbm);
  const auto rtx3090 = gpu_model_by_key("rtx-3090");
  ASSERT_TRUE(rtx3090);
  EXPECT_EQ(rtx3090->power_limit_max_w, 400);
  EXPECT_EQ(rtx3090->idle_w, 90);
  EXPECT_EQ(rtx3090->nvlink_gb_s, 112.5);
  EXPECT_FALSE(rtx3090->passive_cooling);
  EXPECT_FALSE(rtx3090->slowdown_is_family_default);
}

// The GPUs of the shared real logs (LABELS.tsv and the names inside the logs).
TEST(GpuModelTable, RealLogNamesResolve) {
  const std::pair<const char*, const char*> cases[] = {
      {"NVIDIA GeForce RTX 3070", "rtx-3070"},
      {"RTX 3070", "rtx-3070"},
      {"RTX 3060 Ti", "rtx-3060-ti"},
      {"NVIDIA GeForce RTX 2070 SUPER", "rtx-2070-super"},
      {"RTX 2070 SUPER", "rtx-2070-super"},
      {"TITAN X", "titan-x-pascal"},
      {"NVIDIA A40", "a40"},
      {"A40", "a40"},
      {"NVIDIA RTX A6000", "rtx-a6000"},
      {"RTX A6000", "rtx-a6000"},
      {"NVIDIA H20", "h20"},
      {"H20", "h20"},
      {"NVIDIA L40S", "l40s"},
      {"RTX 4090", "rtx-4090"},
      {"GeForce RTX 4090", "rtx-4090"},
      {"V100S", "v100s-pcie-32gb"},
      {"Tesla V100S-PCIE-32GB", "v100s-pcie-32gb"},
      {"Quadro RTX 8000", "quadro-rtx-8000"},
      {"RTX 6000 Ada", "rtx-6000-ada"},
      {"NVIDIA RTX 6000 Ada Generation", "rtx-6000-ada"},
      {"RTX 4000 Ada", "rtx-4000-ada"},
      {"NVIDIA H100 80GB HBM3", "h100-sxm"},
      {"H100 SXM", "h100-sxm"},
      {"H100 PCIe", "h100-pcie"},
      {"H100 NVL", "h100-nvl"},
      {"H200", "h200"},
      {"NVIDIA A100-SXM4-80GB", "a100-sxm4-80gb"},
      {"A100-SXM4-80GB", "a100-sxm4-80gb"},
      {"GTX 1080 Ti", "gtx-1080-ti"},
      {"RTX 3080", "rtx-3080"},
      {"RTX 3060 Laptop", "rtx-3060-laptop"},
      {"NVIDIA GeForce RTX 3060 Laptop GPU", "rtx-3060-laptop"},
      {"GTX 1650 laptop", "gtx-1650-mobile"},
      {"NVIDIA GeForce GTX 1650", "gtx-1650"},
      {"RTX 4080 Laptop GPU", "rtx-4080-laptop"},
      {"NVIDIA GeForce RTX 5080 Laptop GPU", "rtx-5080-laptop"},
      {"RTX 5090", "rtx-5090"},
  };
  for (const auto& [name, key] : cases) EXPECT_EQ(key_for(name), key) << name;
}

// nvidia-smi / NVML, W&B metadata, GPU-Z, HWiNFO's sensor groups, Afterburner's header, typed.
TEST(GpuModelTable, NamesAsEachToolWritesThem) {
  EXPECT_EQ(key_for("Tesla V100-SXM2-32GB"), "v100-sxm2-32gb");
  EXPECT_EQ(key_for("NVIDIA H100 NVL"), "h100-nvl");
  EXPECT_EQ(key_for("GPU [#0]: NVIDIA GeForce RTX 3060 Ti:"), "rtx-3060-ti");
  EXPECT_EQ(key_for("GPU [#1]: NVIDIA GeForce RTX 3060 Laptop GPU:"), "rtx-3060-laptop");
  EXPECT_EQ(key_for("01, 05-12-2023 18:34:35, NVIDIA GeForce GTX 1650"), "gtx-1650");
  EXPECT_EQ(key_for("nvidia geforce rtx 3070"), "rtx-3070");
  EXPECT_EQ(key_for("3070 Ti"), "rtx-3070-ti");
  EXPECT_EQ(key_for("3070"), "rtx-3070");
  EXPECT_EQ(key_for("A100 80GB"), "a100-sxm4-80gb");
  EXPECT_EQ(key_for("A100 80GB PCIe"), "a100-pcie-80gb");
  EXPECT_EQ(key_for("RTX 8000"), "quadro-rtx-8000");
  EXPECT_EQ(key_for("P4000"), "quadro-p4000");
  EXPECT_EQ(key_for("NVIDIA GeForce GTX 1060 6GB"), "gtx-1060-6gb");
  EXPECT_EQ(key_for("NVIDIA GeForce GTX 1060 3GB"), "gtx-1060-3gb");
  EXPECT_EQ(key_for("NVIDIA GeForce RTX 3080 12GB"), "rtx-3080-12gb");
  EXPECT_EQ(key_for("NVIDIA GeForce GTX TITAN X"), "gtx-titan-x");
  EXPECT_EQ(key_for("NVIDIA TITAN X (Pascal)"), "titan-x-pascal");
  EXPECT_EQ(key_for("NVIDIA TITAN Xp"), "titan-xp");
  EXPECT_EQ(key_for("NVIDIA TITAN RTX"), "titan-rtx");
  EXPECT_EQ(key_for("Quadro RTX 6000"), "quadro-rtx-6000");
  EXPECT_EQ(key_for("NVIDIA RTX 4000 SFF Ada Generation"), "rtx-4000-sff-ada");
  EXPECT_EQ(key_for("NVIDIA GeForce RTX 3090 Ti"), "rtx-3090-ti");
  EXPECT_EQ(key_for("NVIDIA GeForce RTX 4090 D"), "rtx-4090-d");
  EXPECT_EQ(key_for("NVIDIA H200 NVL"), "h200-nvl");
  EXPECT_EQ(key_for("NVIDIA H800"), "h800");
  EXPECT_EQ(key_for("Tesla V100-SXM3-32GB"), "v100-sxm3-32gb");
  EXPECT_EQ(key_for("NVIDIA B200"), "b200");
  EXPECT_EQ(key_for("NVIDIA GB200"), "gb200");
  EXPECT_EQ(key_for("NVIDIA L20"), "l20");
  EXPECT_EQ(key_for("NVIDIA A2"), "a2");
  EXPECT_EQ(key_for("NVIDIA RTX PRO 6000 Blackwell Workstation Edition"), "rtx-pro-6000-blackwell");
  EXPECT_EQ(key_for("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition"),
            "rtx-pro-6000-blackwell-max-q");
  EXPECT_EQ(key_for("NVIDIA RTX PRO 6000 Blackwell Server Edition"),
            "rtx-pro-6000-blackwell-server");
}

// A laptop is never its desktop namesake, nor the other way round.
TEST(GpuModelTable, LaptopAndDesktopNeverMerge) {
  const std::pair<const char*, const char*> pairs[] = {
      {"NVIDIA GeForce RTX 3060", "NVIDIA GeForce RTX 3060 Laptop GPU"},
      {"NVIDIA GeForce RTX 3070", "NVIDIA GeForce RTX 3070 Laptop GPU"},
      {"NVIDIA GeForce RTX 4080", "NVIDIA GeForce RTX 4080 Laptop GPU"},
      {"NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 4090 Laptop GPU"},
      {"NVIDIA GeForce RTX 5080", "NVIDIA GeForce RTX 5080 Laptop GPU"},
      {"NVIDIA GeForce GTX 1650", "NVIDIA GeForce GTX 1650 with Max-Q Design"},
      {"NVIDIA GeForce GTX 1650", "NVIDIA GeForce GTX 1650 Mobile"},
      {"NVIDIA GeForce RTX 2070", "NVIDIA GeForce RTX 2070 with Max-Q Design"},
  };
  for (const auto& [desktop, laptop] : pairs) {
    const auto d = gpu_model_by_name(desktop);
    const auto l = gpu_model_by_name(laptop);
    ASSERT_TRUE(d) << desktop;
    ASSERT_TRUE(l) << laptop;
    EXPECT_NE(d->key, l->key) << laptop;
    EXPECT_NE(d->kind, GpuKind::kLaptop) << desktop;
    EXPECT_EQ(l->kind, GpuKind::kLaptop) << laptop;
  }
  // A laptop name with no laptop row is unknown, not the desktop card.
  EXPECT_FALSE(gpu_model_by_name("NVIDIA GeForce RTX 3090 Laptop GPU"));
  EXPECT_EQ(key_for("GTX 1650 Max-Q"), "gtx-1650-max-q");
  EXPECT_EQ(key_for("RTX 2060 with Max-Q Design"), "rtx-2060-max-q");
  const auto l = gpu_model_by_key("rtx-3060-laptop");
  ASSERT_TRUE(l);
  EXPECT_EQ(l->limit_range_min_w, 60);
  EXPECT_EQ(l->limit_range_max_w, 115);
}

TEST(GpuModelTable, DidYouMeanOnANearMiss) {
  const auto typo = nearest_gpu_model_names("NVIDIA GeForce RTX 3007");
  ASSERT_FALSE(typo.empty());
  EXPECT_EQ(typo.front(), "NVIDIA GeForce RTX 3070");
  const auto a100 = nearest_gpu_model_names("NVIDIA A100", 4);  // the four A100 boards first
  ASSERT_EQ(a100.size(), 4u);
  for (const auto n : a100) EXPECT_NE(n.find("A100"), std::string_view::npos) << n;
  const auto laptop = nearest_gpu_model_names("RTX 4009 Laptop GPU");
  ASSERT_FALSE(laptop.empty());
  EXPECT_EQ(laptop.front(), "NVIDIA GeForce RTX 4090 Laptop GPU");
  EXPECT_TRUE(gpu_name_suggestion("RTX 4009 Laptop GPU")
                  .starts_with("did you mean NVIDIA GeForce RTX 4090 Laptop GPU, "))
      << gpu_name_suggestion("RTX 4009 Laptop GPU");
  EXPECT_EQ(gpu_name_suggestion("AMD Instinct MI300X"), "");
  EXPECT_NE(gpu_name_not_found("H100 PCIE 94GB").find("did you mean NVIDIA H100 PCIe"),
            std::string::npos)
      << gpu_name_not_found("H100 PCIE 94GB");
  EXPECT_NE(gpu_name_not_found("xyz").find("`gpudoctor models`"), std::string::npos);
}

TEST(GpuModelTable, ReaderNamesBadRows) {
  const std::string tsv =
      "# comment\n"
      "key\tname\tkind\tarch\tlimit_w\tlimit_range_w\tboost_mhz\tbase_mhz\tmem_mib\tmem_type\t"
      "mem_gb_s\tslowdown_c\taliases\tsource\n"
      "ok\tNVIDIA OK 1\tconsumer\tampere\t200\t\t1700\t1400\t8192\tGDDR6\t448\t\t\tsheet\n"
      "lap\tNVIDIA OK 1 Laptop GPU\tlaptop\tampere\t90\t\t1700\t1400\t8192\tGDDR6\t448\t\t\tsheet\n"
      "bad\tNVIDIA Bad\tconsumer\tampere\tlots\t\t1700\t1400\t8192\tGDDR6\t448\t\t\tsheet\n"
      "arch\tNVIDIA Arch\tconsumer\tfermi\t100\t\t1700\t1400\t8192\tGDDR6\t448\t\t\tsheet\n"
      "ok\tNVIDIA Again\tconsumer\tampere\t200\t\t1700\t1400\t8192\tGDDR6\t448\t\t\tsheet\n";
  const auto t = detail::read_gpu_model_table(tsv);
  ASSERT_EQ(t.models.size(), 1u);
  EXPECT_EQ(t.models[0].key, "ok");
  EXPECT_TRUE(t.models[0].slowdown_is_family_default);
  EXPECT_EQ(t.models[0].slowdown_temp_c, 95);  // Ampere consumer
  EXPECT_EQ(t.models[0].power_limit_min_w, 80);
  EXPECT_EQ(t.models[0].idle_w, 24);
  ASSERT_EQ(t.problems.size(), 4u);
  EXPECT_NE(t.problems[0].find("line 4 (lap): a laptop row without limit_range_w"),
            std::string::npos)
      << t.problems[0];
  EXPECT_NE(t.problems[1].find("limit_w \"lots\""), std::string::npos) << t.problems[1];
  EXPECT_NE(t.problems[2].find("arch \"fermi\""), std::string::npos) << t.problems[2];
  EXPECT_NE(t.problems[3].find("already in the table"), std::string::npos) << t.problems[3];
}

TEST(GpuModelTable, DocsAreTheTable) {
  std::ifstream in(std::string(GPUDOCTOR_SOURCE_DIR) + "/docs/gpu-models.md");
  ASSERT_TRUE(in) << "docs/gpu-models.md missing";
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), render_gpu_models_doc())
      << "docs/gpu-models.md is stale: run `gpudoctor models --markdown > docs/gpu-models.md`";
}

TEST(GpuModelTable, SelectByTextOrName) {
  const auto laptops = select_gpu_models("laptop");
  ASSERT_FALSE(laptops.empty());
  for (const auto& m : laptops) EXPECT_EQ(m.kind, GpuKind::kLaptop) << m.key;
  const auto s3070 = select_gpu_models("3070");
  EXPECT_EQ(s3070.size(), 4u);  // desktop, Ti, laptop, Ti laptop
  const auto hwinfo = select_gpu_models("GPU [#0]: NVIDIA GeForce RTX 3060 Ti:");
  ASSERT_EQ(hwinfo.size(), 1u);
  EXPECT_EQ(hwinfo[0].key, "rtx-3060-ti");
  EXPECT_TRUE(select_gpu_models("no such board").empty());
  const std::string json = render_gpu_models_json(select_gpu_models("rtx-3060-laptop"));
  EXPECT_NE(json.find("\"power_limit_range_w\": [\n      60.0,\n      115.0\n    ]"),
            std::string::npos)
      << json;
  const std::string text = render_gpu_models_text(select_gpu_models("rtx-3060-laptop"));
  EXPECT_NE(text.find("90 (60-115)"), std::string::npos) << text;
  EXPECT_NE(text.find("RTX 3060 Laptop GPU"), std::string::npos) << text;
  EXPECT_NE(text.find("87*"), std::string::npos) << text;
}

}  // namespace
}  // namespace gpudoctor

namespace gpudoctor {
namespace {

// diagnose's per-GPU line: a name that does not fit loses its vendor words, then its middle,
// never its end ("... Laptop GPU" once read as the desktop card's name).
TEST(GpuModelTable, NameForAColumnKeepsTheEnd) {
  EXPECT_EQ(gpu_name_for_column("NVIDIA H100 80GB HBM3", 24), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(gpu_name_for_column("NVIDIA GeForce RTX 3060 Laptop GPU", 24), "RTX 3060 Laptop GPU");
  const std::string cut =
      gpu_name_for_column("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", 24);
  EXPECT_EQ(cut.size(), 24u);
  EXPECT_EQ(cut, "RTX PRO 600...on Edition");
}

}  // namespace
}  // namespace gpudoctor
