// The fleet document (analysis/fleet.h) as a text table or CSV.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace schedhot {

/// Renders the document as text (terminal), or CSV (one row per host, header first).
std::string render_fleet_text(const nlohmann::json& d);
std::string render_fleet_csv(const nlohmann::json& d);

}  // namespace schedhot
