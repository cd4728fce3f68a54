// NvmlApi: the NVML entry points of entry_points.def, resolved at run time from the driver's
// libnvidia-ml.so.1 (or the path in GPUDOCTOR_NVML_LIB). A missing core entry point is fatal; a
// missing optional one is a null pointer that callers treat as NOT_SUPPORTED. Resolution goes
// through a SymbolResolver so tests can load the table from a map instead of a real library.
// Thread-safety: immutable after load(); the functions it points to are NVML's (thread-safe).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "core/result.hpp"
#include "sources/nvml/nvml_types.hpp"

namespace gpudoctor {

enum class NvmlNeed { kCore, kOptional };

struct NvmlApi {
#define GPUDOCTOR_NVML(member, need_, type, ...) std::add_pointer_t<type> member = nullptr;
#include "sources/nvml/entry_points.def"
#undef GPUDOCTOR_NVML
};

struct NvmlEntryPoint {
  const char* member;
  NvmlNeed need;
  std::vector<const char*> names;  // newest version first
};
// The table as data, for the loader, tests and `gpudoctor --version`-style diagnostics.
const std::vector<NvmlEntryPoint>& nvml_entry_points();

// What the loader found: for each entry point, the symbol name that resolved ("" when none).
struct NvmlResolution {
  std::vector<std::string> resolved;  // parallel to nvml_entry_points()
};

using SymbolResolver = std::function<void*(const char* name)>;

// Fills api from resolve(). Fails, naming the entry point, when a core one is missing.
Result<NvmlResolution> resolve_nvml_api(const SymbolResolver& resolve, NvmlApi& api);

// An opened NVML library. Closing (destruction) dlcloses the library.
class NvmlLibrary {
 public:
  ~NvmlLibrary();
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  // Opens path (default: $GPUDOCTOR_NVML_LIB, else "libnvidia-ml.so.1") and resolves the table.
  static Result<std::unique_ptr<NvmlLibrary>> open(const std::string& path = "");

  const NvmlApi& api() const { return api_; }
  const NvmlResolution& resolution() const { return resolution_; }
  const std::string& path() const { return path_; }
  // Keep the library mapped at exit (a thread may still be inside a slow NVML call).
  void leak_on_close() { leak_ = true; }

 private:
  NvmlLibrary() = default;
  void* handle_ = nullptr;
  bool leak_ = false;
  std::string path_;
  NvmlApi api_;
  NvmlResolution resolution_;
};

// "NOT_SUPPORTED: Not Supported" style text for an NVML return code.
std::string nvml_error_text(const NvmlApi& api, nvmlReturn_t code);

}  // namespace gpudoctor
