#include "sources/nvml/nvml_api.hpp"

#include <dlfcn.h>

#include <cstdlib>

#include <fmt/format.h>

#include "core/reading.hpp"

namespace gpudoctor {

const std::vector<NvmlEntryPoint>& nvml_entry_points() {
  static const std::vector<NvmlEntryPoint> table = {
#define GPUDOCTOR_NVML(member, need_, type, ...) {#member, NvmlNeed::need_, {__VA_ARGS__}},
#include "sources/nvml/entry_points.def"
#undef GPUDOCTOR_NVML
  };
  return table;
}

Result<NvmlResolution> resolve_nvml_api(const SymbolResolver& resolve, NvmlApi& api) {
  NvmlResolution res;
  const auto& table = nvml_entry_points();
  res.resolved.resize(table.size());
  size_t i = 0;
  std::vector<std::string> missing_core;
  // The X-macro walks the same order as the table, so index i matches.
#define GPUDOCTOR_NVML(member, need_, type, ...)                    \
  {                                                                 \
    api.member = nullptr;                                           \
    for (const char* name : table[i].names) {                       \
      if (void* p = resolve(name)) {                                \
        api.member = reinterpret_cast<std::add_pointer_t<type>>(p); \
        res.resolved[i] = name;                                     \
        break;                                                      \
      }                                                             \
    }                                                               \
    if (!api.member && table[i].need == NvmlNeed::kCore)            \
      missing_core.emplace_back(table[i].names.front());            \
    ++i;                                                            \
  }
#include "sources/nvml/entry_points.def"
#undef GPUDOCTOR_NVML
  if (!missing_core.empty())
    return failure(
        fmt::format("the NVML library lacks required function(s) {}; is it really "
                    "NVIDIA's libnvidia-ml.so.1?",
                    fmt::join(missing_core, ", ")));
  return res;
}

NvmlLibrary::~NvmlLibrary() {
  if (handle_ && !leak_) dlclose(handle_);
}

Result<std::unique_ptr<NvmlLibrary>> NvmlLibrary::open(const std::string& path) {
  std::string lib = path;
  if (lib.empty()) {
    const char* env = std::getenv("GPUDOCTOR_NVML_LIB");
    lib = (env && *env) ? env : "libnvidia-ml.so.1";
  }
  void* handle = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* err = dlerror();
    const std::string why = err ? err : "unknown dlopen error";
    if (lib == "libnvidia-ml.so.1")
      return usage_error(
          "NVIDIA driver library libnvidia-ml.so.1 not found (is the NVIDIA driver installed?)");
    return usage_error(fmt::format(
        "NVIDIA driver library {} could not be loaded (from GPUDOCTOR_NVML_LIB): {}", lib, why));
  }
  std::unique_ptr<NvmlLibrary> out(new NvmlLibrary());
  out->handle_ = handle;
  out->path_ = lib;
  auto res =
      resolve_nvml_api([handle](const char* name) { return dlsym(handle, name); }, out->api_);
  if (!res) return failure(fmt::format("{}: {}", lib, res.error().message));
  out->resolution_ = std::move(res.value());
  return out;
}

std::string nvml_error_text(const NvmlApi& api, nvmlReturn_t code) {
  const char* text = api.error_string ? api.error_string(code) : nullptr;
  return fmt::format("{} ({})", text ? text : "unknown error", nvml_code_name(code));
}

}  // namespace gpudoctor
