// The info document (analysis/info.h) as text for a terminal.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace schedhot {

/// Renders an info document as text for a terminal.
std::string render_info_text(const nlohmann::json& info);

}  // namespace schedhot
