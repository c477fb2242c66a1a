// The diff document (analysis/diff.h) as text, markdown and the seeds' commit-message table.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace schedhot {

/// Renderings of a diff document.
std::string render_diff_text(const nlohmann::json& d);
std::string render_diff_markdown(const nlohmann::json& d);
/// The seeds' commit-message layout: per probe with a latency histogram, one row per side
/// "  A:  p10:  700  p50: 1915  p90: 6619  p98: 11150  p99: 13200" (ns), then the rate line
/// "  rate: 3353.94/s -> 3469.31/s (+3.4 %)".
std::string render_diff_patch(const nlohmann::json& d);

}  // namespace schedhot
