#include "sources/health.hpp"

#include "sources/nvml/nvml_source.hpp"

namespace gpudoctor {

std::vector<DeviceHealth> read_device_health(Source& source) {
  if (auto* nvml = dynamic_cast<NvmlSource*>(&source)) return nvml->read_health();
  return std::vector<DeviceHealth>(source.devices().size());
}

}  // namespace gpudoctor
