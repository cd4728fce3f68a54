// The once-per-command health readings (core/health.hpp: ECC, retired pages, row remapping,
// default application clocks) of a source's GPUs. Only NVML has them; other sources (the
// simulator) answer with DeviceHealth::read = false for every GPU.
#pragma once

#include <vector>

#include "core/health.hpp"
#include "sources/source.hpp"

namespace gpudoctor {

// One DeviceHealth per GPU of source.devices(), same order, read now.
std::vector<DeviceHealth> read_device_health(Source& source);

}  // namespace gpudoctor
