#include <gtest/gtest.h>

#include <set>
#include <string>

#include "core/fields.hpp"

namespace gpudoctor {
namespace {

TEST(Fields, TableIsIndexedByEnum) {
  ASSERT_EQ(all_fields().size(), kFieldCount);
  for (size_t i = 0; i < kFieldCount; ++i) EXPECT_EQ(index_of(all_fields()[i].field), i);
}

TEST(Fields, IdsAndNamesAreUnique) {
  std::set<std::string_view> ids, proms, smi, dcgm;
  std::set<uint16_t> dcgm_ids;
  for (const auto& f : all_fields()) {
    EXPECT_TRUE(ids.insert(f.id).second) << f.id;
    EXPECT_TRUE(proms.insert(f.prom_name).second) << f.prom_name;
    if (!f.dcgm_name.empty()) {
      EXPECT_TRUE(dcgm.insert(f.dcgm_name).second) << f.dcgm_name;
      EXPECT_TRUE(dcgm_ids.insert(f.dcgm_id).second) << f.dcgm_id;
    }
    std::string_view rest = f.smi_names;
    while (!rest.empty()) {
      const auto bar = rest.find('|');
      EXPECT_TRUE(smi.insert(rest.substr(0, bar)).second) << f.id << ": " << rest.substr(0, bar);
      rest = bar == std::string_view::npos ? "" : rest.substr(bar + 1);
    }
  }
}

TEST(Fields, EveryEntryIsDocumented) {
  for (const auto& f : all_fields()) {
    EXPECT_FALSE(f.meaning.empty()) << f.id;
    EXPECT_FALSE(f.nvml_source.empty()) << f.id;
    EXPECT_FALSE(f.prom_help.empty()) << f.id;
    EXPECT_EQ(f.prom_name.substr(0, 10), "gpudoctor_") << f.id;
    EXPECT_GT(f.dcgm_scale, 0) << f.id;
  }
}

// A field that only grows (energy, counted events) is a Prometheus counter under either name:
// gpudoctor's own name then ends in _total, and no gauge's does.
TEST(Fields, CountersAndTheirNames) {
  for (const auto& f : all_fields())
    EXPECT_EQ(is_counter(f), f.prom_name.ends_with("_total")) << f.id;
  EXPECT_TRUE(is_counter(info(Field::kEnergy)));
  EXPECT_TRUE(is_counter(info(Field::kPcieReplays)));
  EXPECT_TRUE(is_counter(info(Field::kRemappedRowsUncorrected)));
  EXPECT_FALSE(is_counter(info(Field::kXid)));     // the last XID, a gauge as dcgm-exporter has it
  EXPECT_FALSE(is_counter(info(Field::kNvlink)));  // a rate
  EXPECT_EQ(cadence_name(info(Field::kPcieReplays).cadence), "slow");
}

TEST(Fields, LookupsByEveryName) {
  EXPECT_EQ(field_by_id("power_w"), Field::kPower);
  EXPECT_EQ(field_by_id("nope"), std::nullopt);
  EXPECT_EQ(field_by_smi_name("clocks.sm"), Field::kClockSm);
  EXPECT_EQ(field_by_smi_name("clocks.current.sm"), Field::kClockSm);
  EXPECT_EQ(field_by_smi_name("CLOCKS_THROTTLE_REASONS.ACTIVE"), Field::kClockEventReasons);
  EXPECT_EQ(field_by_smi_name("power.draw.average"), Field::kPower);
  EXPECT_EQ(field_by_smi_name("utilization"), std::nullopt);
  EXPECT_EQ(field_by_dcgm_name("DCGM_FI_PROF_SM_ACTIVE"), Field::kGpmSmUtil);
  EXPECT_EQ(field_by_dcgm_id(155), Field::kPower);
  EXPECT_EQ(field_by_dcgm_id(0), std::nullopt);
  EXPECT_EQ(canonical_smi_name(Field::kClockSm), "clocks.sm");
  EXPECT_EQ(canonical_smi_name(Field::kEnergy), "");
}

TEST(Fields, IssueMinimumSetIsPresent) {
  for (const char* id : {"util_gpu_pct",
                         "util_mem_pct",
                         "power_w",
                         "power_instant_w",
                         "energy_mj",
                         "power_limit_enforced_w",
                         "power_limit_w",
                         "power_limit_default_w",
                         "power_limit_min_w",
                         "power_limit_max_w",
                         "temp_c",
                         "temp_slowdown_c",
                         "clock_sm_mhz",
                         "clock_mem_mhz",
                         "clock_sm_max_mhz",
                         "clock_mem_max_mhz",
                         "clock_app_sm_mhz",
                         "clock_app_mem_mhz",
                         "pstate",
                         "clock_event_reasons",
                         "mem_used_mib",
                         "mem_total_mib",
                         "pcie_tx_mibs",
                         "pcie_rx_mibs",
                         "pcie_link_gen",
                         "pcie_link_gen_max",
                         "pcie_link_width",
                         "pcie_link_width_max",
                         "fan_pct",
                         "gpm_sm_util_pct",
                         "gpm_sm_occupancy_pct",
                         "gpm_tensor_util_pct",
                         "gpm_dram_bw_util_pct",
                         "gpm_fp16_util_pct",
                         "gpm_fp32_util_pct",
                         "gpm_fp64_util_pct",
                         "gpm_pcie_tx_mibs",
                         "gpm_pcie_rx_mibs",
                         "gpm_nvlink_rx_mibs",
                         "gpm_nvlink_tx_mibs"})
    EXPECT_TRUE(field_by_id(id).has_value()) << id;
}

}  // namespace
}  // namespace gpudoctor
