// One CSV cell from text a file or a directory named (a recording's probe and line names, a
// fleet host's name and kernel): export's and report --fleet's CSV.
#pragma once
#include <string>

#include "sys/json_text.h"

namespace schedhot {

/// raw as one CSV cell: controls scrubbed (scrub_controls); a cell that starts with = + - @,
/// tab or CR, which a spreadsheet would run as a formula, is prefixed with ' to stay text;
/// quoted (RFC 4180) when it holds a comma, a quote or a line break.
inline std::string csv_cell(const std::string& raw) {
  std::string s = scrub_controls(raw);
  // (a new string, not s.insert(0, ...): GCC 12 warns a false -Wrestrict on that insert)
  if (!s.empty() && std::string_view("=+-@\t\r").find(s[0]) != std::string_view::npos) s = "'" + s;
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
  return o + "\"";
}

}  // namespace schedhot
