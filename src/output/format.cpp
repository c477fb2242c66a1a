#include "output/format.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "output/diff_text.h"
#include "output/fleet_text.h"
#include "output/info_text.h"
#include "output/probes_text.h"
#include "output/report_text.h"
#include "sys/json_text.h"

namespace schedhot {

namespace {

std::string json_document(const nlohmann::json& d) { return json_text(d, 2) + "\n"; }

/// The registry: the formats of analysis/schema.h's documents, then json; RegisterOutputFormat
/// adds to it (first use builds it, so registrations from other files' static objects are safe).
std::vector<OutputFormat>& registry() {
  static std::vector<OutputFormat> formats = {
      {"text", schema::report, "text", render_report_text},
      {"text", schema::info, "text", render_info_text},
      {"text", schema::probes, "text", render_probes_text},
      {"text", schema::diff, "text", render_diff_text},
      {"markdown", schema::diff, "a Markdown table", render_diff_markdown},
      {"patch", schema::diff, "the seeds' commit-message layout", render_diff_patch},
      {"text", schema::fleet, "text", render_fleet_text},
      {"csv", schema::fleet, "CSV, one row per host", render_fleet_csv},
      {"json", nullptr, "JSON", json_document},
  };
  return formats;
}

}  // namespace

const std::vector<OutputFormat>& output_formats() { return registry(); }

RegisterOutputFormat::RegisterOutputFormat(const OutputFormat& f) {
  std::vector<OutputFormat>& r = registry();
  r.insert(f.schema ? std::find_if(r.begin(), r.end(), [](const OutputFormat& g) { return !g.schema; }) : r.end(), f);
}

namespace {

bool renders(const OutputFormat& f, std::string_view schema) { return !f.schema || schema == f.schema; }

}  // namespace

std::vector<std::string> format_names(std::string_view schema) {
  std::vector<std::string> out;
  for (const OutputFormat& f : output_formats())
    if (renders(f, schema)) out.push_back(f.name);
  return out;
}

std::string format_choices_text(std::string_view schema) {
  const std::vector<std::string> n = format_names(schema);
  std::string out;
  for (size_t i = 0; i < n.size(); ++i)
    out += fmt::format("{}{}{}", i == 0 ? "" : i + 1 == n.size() ? " or " : ", ", n[i], i == 0 ? " (default)" : "");
  return out;
}

std::string render_document(const nlohmann::json& doc, std::string_view format) {
  const std::string schema = doc.is_object() ? doc.value("schema", "") : "";
  for (const OutputFormat& f : output_formats())
    if (format == f.name && renders(f, schema)) return f.render(doc);
  std::string names;
  for (const std::string& n : format_names(schema)) names += (names.empty() ? "" : ", ") + n;
  throw std::invalid_argument(fmt::format("--format '{}': one of {}", format, names));
}

}  // namespace schedhot
