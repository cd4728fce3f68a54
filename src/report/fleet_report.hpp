// The renderings of a FleetReport (`gpudoctor fleet --format text|json|csv|markdown|html`): the
// headline (GPU-hours of the span, working, lost by cause, idle but allocated, free), then the
// ranked rows with the command that drills into each. JSON is a contract
// (docs/fleet.schema.json, schema_version 1); HTML is one self-contained page in the report's
// style.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "fleet/fleet.hpp"

namespace gpudoctor {

std::string fleet_text(const FleetReport& r);
nlohmann::ordered_json fleet_json(const FleetReport& r);
std::string fleet_csv(const FleetReport& r);
std::string fleet_markdown(const FleetReport& r);
std::string fleet_html(const FleetReport& r);

}  // namespace gpudoctor
