#include "sources/health.hpp"

#include "sources/nvml/nvml_source.hpp"

namespace gpudoctor {

std::vector<DeviceHealth> read_device_health(Source& source) {
  Source* s = &source;
  while (Source* inner = s->wrapped()) s = inner;
  if (auto* nvml = dynamic_cast<NvmlSource*>(s)) return nvml->read_health();
  return std::vector<DeviceHealth>(source.devices().size());
}

}  // namespace gpudoctor
