// Renders `gpudoctor status`: one table row per GPU (util, SM activity, power against the default
// limit, efficiency, clocks, temperature, memory, clock event reasons, PCIe link, processes) and a
// verdict line per GPU; or the same as JSON, where every reading is a value or says why not.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/snapshot.hpp"
#include "core/device.hpp"

namespace gpudoctor {

struct StatusView {
  SystemInfo system;
  std::vector<DeviceInfo> devices;
  Frame frame;  // the later of the two samples
  double interval_s = 0;
  std::vector<GpuAssessment> assessments;  // parallel to devices
};

// Builds the view from two frames of the same source.
StatusView make_status_view(const SystemInfo& system, const std::vector<DeviceInfo>& devices,
                            const Frame& first, const Frame& second);

// Fits `width` columns: the least needed columns go first (--json has every reading).
std::string render_status_text(const StatusView& view, size_t width = 100);
nlohmann::json render_status_json(const StatusView& view);

// A reading as JSON: a number, or {"status": "not_supported"|"error"|"no_data", "code": "..."}.
nlohmann::json reading_json(const Reading& r);
// A whole sample: {field_id: reading_json, ...} (all catalogue fields).
nlohmann::json sample_readings_json(const DeviceSample& s);
nlohmann::json processes_json(const std::vector<ProcessInfo>& processes);
// An owner as JSON ({kind, id, label, step, pod, namespace, container, runtime, user, uid,
// source, note}; empty fields left out) and a GPU's owners as one cell ("job 41877.0 (alice) +1").
nlohmann::json owner_json(const Owner& o);
std::string owners_text(const std::vector<Owner>& owners);

}  // namespace gpudoctor
