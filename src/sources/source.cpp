#include "sources/source.hpp"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "sources/nvml/nvml_source.hpp"
#include "sources/sim/sim_source.hpp"

namespace gpudoctor {

Result<std::unique_ptr<Source>> open_source(const std::string& spec, const SourceOptions& options) {
  if (spec.empty() || spec == "nvml") {
    auto src = NvmlSource::open(options);
    if (!src) return src.error();
    return std::unique_ptr<Source>(std::move(src.value()));
  }
  if (spec.rfind("sim:", 0) == 0) return sim::open_sim_source(spec.substr(4), options.gpus);
  return usage_error(fmt::format(
      "unknown source '{}' (available: nvml, sim:SCENARIO[,gpus=N,model=M,seed=S,speed=X])", spec));
}

Result<std::vector<unsigned>> parse_gpu_list(const std::string& text) {
  std::vector<unsigned> out;
  if (text.empty() || text == "all") return out;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string_view item(text.data() + pos, comma - pos);
    unsigned v = 0;
    const auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc{} || p != item.data() + item.size())
      return usage_error(fmt::format("invalid GPU list '{}': expected indices like 0,2,3", text));
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
    pos = comma + 1;
  }
  return out;
}

}  // namespace gpudoctor
