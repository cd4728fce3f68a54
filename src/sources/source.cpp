#include "sources/source.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>

#include <fmt/format.h>

#include "host/owners.hpp"
#include "sources/nvml/nvml_source.hpp"
#include "sources/sim/sim_source.hpp"

namespace gpudoctor {

namespace {

// A source whose frames carry their GPUs' owners (host/owners).
class OwnedSource final : public Source {
 public:
  OwnedSource(std::unique_ptr<Source> inner, host::OwnerResolver::Options o)
      : inner_(std::move(inner)), resolver_(with_mig_lookup(std::move(o), inner_.get())) {}
  const SystemInfo& system() const override { return inner_->system(); }
  const std::vector<DeviceInfo>& devices() const override { return inner_->devices(); }
  Frame sample() override {
    Frame f = inner_->sample();
    resolver_.annotate(f, inner_->devices());
    return f;
  }
  std::string description() const override { return inner_->description(); }
  std::vector<std::string> take_notes() override { return resolver_.take_notes(); }
  Source* wrapped() override { return inner_.get(); }
  std::optional<unsigned> parent_gpu(const std::string& mig_uuid) override {
    return inner_->parent_gpu(mig_uuid);
  }

 private:
  static host::OwnerResolver::Options with_mig_lookup(host::OwnerResolver::Options o,
                                                      Source* inner) {
    o.mig_parent = [inner](const std::string& uuid) { return inner->parent_gpu(uuid); };
    return o;
  }

  std::unique_ptr<Source> inner_;
  host::OwnerResolver resolver_;
};

// The kubelet socket to ask: the default for NVML, only a named one for the simulator.
std::string kubelet_socket(const SourceOptions& options, bool real) {
  if (!options.kubelet_socket) return real ? host::kDefaultKubeletSocket : "";
  if (*options.kubelet_socket == "none") return "";
  return *options.kubelet_socket;
}

host::OwnerResolver::Options resolver_options(const SourceOptions& options, bool processes) {
  host::OwnerResolver::Options o;
  if (const char* root = std::getenv("GPUDOCTOR_PROC_ROOT"); root && *root) o.proc_root = root;
  o.resolve_processes = processes;
  o.job_mapping_dir = options.job_mapping_dir;
  o.kubelet_socket = kubelet_socket(options, processes);
  return o;
}

}  // namespace

Result<std::unique_ptr<Source>> open_source(const std::string& spec, const SourceOptions& options) {
  if (spec.empty() || spec == "nvml") {
    auto src = NvmlSource::open(options);
    if (!src) return src.error();
    std::unique_ptr<Source> s(std::move(src.value()));
    if (!options.resolve_owners) return s;
    return std::unique_ptr<Source>(new OwnedSource(std::move(s), resolver_options(options, true)));
  }
  if (spec.rfind("sim:", 0) == 0) {
    // Simulated processes have no /proc: the scenario brings its owners; allocation files and a
    // kubelet socket named on the command line still apply.
    auto s = sim::open_sim_source(spec.substr(4), options.gpus);
    if (!s || (options.job_mapping_dir.empty() && kubelet_socket(options, false).empty())) return s;
    return std::unique_ptr<Source>(
        new OwnedSource(std::move(s.value()), resolver_options(options, false)));
  }
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
