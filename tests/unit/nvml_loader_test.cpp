#include <gtest/gtest.h>

#include <map>
#include <string>

#include "sources/nvml/nvml_api.hpp"

namespace gpudoctor {
namespace {

int dummy_symbol = 0;  // any non-null address stands for a resolved symbol

SymbolResolver resolver_of(std::map<std::string, void*>& symbols) {
  return [&symbols](const char* name) -> void* {
    auto it = symbols.find(name);
    return it == symbols.end() ? nullptr : it->second;
  };
}

std::map<std::string, void*> core_symbols(bool newest) {
  std::map<std::string, void*> m;
  for (const char* n : {"nvmlShutdown", "nvmlErrorString"}) m[n] = &dummy_symbol;
  if (newest) {
    for (const char* n : {"nvmlInit_v2", "nvmlDeviceGetCount_v2", "nvmlDeviceGetHandleByIndex_v2"})
      m[n] = &dummy_symbol;
  } else {
    for (const char* n : {"nvmlInit", "nvmlDeviceGetCount", "nvmlDeviceGetHandleByIndex"})
      m[n] = &dummy_symbol;
  }
  return m;
}

size_t index_of_member(const char* member) {
  const auto& t = nvml_entry_points();
  for (size_t i = 0; i < t.size(); ++i)
    if (std::string(t[i].member) == member) return i;
  ADD_FAILURE() << member;
  return 0;
}

TEST(NvmlLoader, TableListsCoreEntryPointsAndVersionsNewestFirst) {
  size_t core = 0;
  for (const auto& e : nvml_entry_points()) {
    ASSERT_FALSE(e.names.empty()) << e.member;
    if (e.need == NvmlNeed::kCore) ++core;
  }
  EXPECT_EQ(core, 5u);
  const auto& init = nvml_entry_points()[index_of_member("init")];
  EXPECT_STREQ(init.names[0], "nvmlInit_v2");
  EXPECT_STREQ(init.names[1], "nvmlInit");
}

TEST(NvmlLoader, PrefersNewestVersion) {
  auto symbols = core_symbols(true);
  symbols["nvmlInit"] = &dummy_symbol;
  symbols["nvmlDeviceGetCurrentClocksEventReasons"] = &dummy_symbol;
  symbols["nvmlDeviceGetCurrentClocksThrottleReasons"] = &dummy_symbol;
  NvmlApi api;
  auto res = resolve_nvml_api(resolver_of(symbols), api);
  ASSERT_TRUE(res.ok()) << res.error().message;
  EXPECT_EQ(res->resolved[index_of_member("init")], "nvmlInit_v2");
  EXPECT_EQ(res->resolved[index_of_member("clock_event_reasons")],
            "nvmlDeviceGetCurrentClocksEventReasons");
  EXPECT_NE(api.clock_event_reasons, nullptr);
}

TEST(NvmlLoader, FallsBackToOlderVersions) {
  auto symbols = core_symbols(false);
  symbols["nvmlDeviceGetCurrentClocksThrottleReasons"] = &dummy_symbol;
  NvmlApi api;
  auto res = resolve_nvml_api(resolver_of(symbols), api);
  ASSERT_TRUE(res.ok());
  EXPECT_EQ(res->resolved[index_of_member("init")], "nvmlInit");
  EXPECT_EQ(res->resolved[index_of_member("clock_event_reasons")],
            "nvmlDeviceGetCurrentClocksThrottleReasons");
}

TEST(NvmlLoader, MissingOptionalEntryPointIsNullNotFatal) {
  auto symbols = core_symbols(true);
  NvmlApi api;
  auto res = resolve_nvml_api(resolver_of(symbols), api);
  ASSERT_TRUE(res.ok());
  EXPECT_EQ(api.gpm_metrics_get, nullptr);
  EXPECT_EQ(api.field_values, nullptr);
  EXPECT_EQ(res->resolved[index_of_member("gpm_metrics_get")], "");
}

TEST(NvmlLoader, MissingCoreEntryPointIsFatalAndNamed) {
  auto symbols = core_symbols(true);
  symbols.erase("nvmlDeviceGetCount_v2");
  NvmlApi api;
  auto res = resolve_nvml_api(resolver_of(symbols), api);
  ASSERT_FALSE(res.ok());
  EXPECT_NE(res.error().message.find("nvmlDeviceGetCount_v2"), std::string::npos);
}

TEST(NvmlLoader, MissingLibraryGivesTheDocumentedMessage) {
  auto lib = NvmlLibrary::open("/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(lib.ok());
  EXPECT_EQ(lib.error().kind, Error::Kind::kUsage);
  EXPECT_NE(lib.error().message.find("could not be loaded"), std::string::npos);
}

}  // namespace
}  // namespace gpudoctor
