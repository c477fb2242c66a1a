// The report document (analysis/report.h) as text for a terminal.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace schedhot {

/// Renders a report document as text for a terminal.
std::string render_report_text(const nlohmann::json& report);


}  // namespace schedhot
