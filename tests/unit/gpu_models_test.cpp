#include "core/gpu_models.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <string_view>

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
    EXPECT_GT(m.mem_total_mib, 10000);
    EXPECT_LT(m.slowdown_temp_c, m.shutdown_temp_c);
    EXPECT_GE(m.slowdown_temp_c, 80);
    EXPECT_LE(m.shutdown_temp_c, 105);
    EXPECT_GE(m.pcie_gen_max, 3);
    EXPECT_LE(m.pcie_gen_max, 5);
    EXPECT_EQ(m.pcie_width_max, 16);
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

TEST(GpuModels, UnknownOrAmbiguousNamesGiveNothing) {
  for (const char* name : {
           "",
           "   ",
           "NVIDIA",
           "Tesla",
           "NVIDIA GeForce RTX 3090 Ti",
           "NVIDIA GeForce RTX 4090 D",
           "NVIDIA GeForce RTX 4090 Laptop GPU",
           "NVIDIA H200 NVL",
           "NVIDIA H800",
           "NVIDIA H100 SXM5 94GB",
           "NVIDIA GH200 480GB",
           "Tesla V100S-PCIE-32GB",
           "Tesla V100-SXM3-32GB",
           "Quadro RTX 6000",
           "NVIDIA A100",
           "NVIDIA A40",
           "AMD Instinct MI300X",
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
