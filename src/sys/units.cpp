#include "sys/units.h"

#include <cmath>
#include <cstdlib>
#include <stdexcept>

#include <fmt/format.h>

namespace schedhot {

namespace {

double parse_number(const std::string& s, size_t& used, const char* what) {
  try {
    double v = std::stod(s, &used);
    if (!std::isfinite(v) || v < 0) throw std::invalid_argument("");
    return v;
  } catch (...) {
    throw std::invalid_argument(fmt::format("{} '{}' is not a non-negative number", what, s));
  }
}

}  // namespace

uint64_t parse_duration_ns(const std::string& s, const char* what) {
  size_t used = 0;
  double v = parse_number(s, used, what);
  std::string unit = s.substr(used);
  double mult = 1e9;
  if (unit.empty() || unit == "s") mult = 1e9;
  else if (unit == "ms") mult = 1e6;
  else if (unit == "us") mult = 1e3;
  else if (unit == "m" || unit == "min") mult = 60e9;
  else if (unit == "h") mult = 3600e9;
  else throw std::invalid_argument(fmt::format("{} '{}': unknown unit '{}' (use ms, s, m or h)", what, s, unit));
  double ns = v * mult;
  if (ns > 1e18) throw std::invalid_argument(fmt::format("{} '{}' is too long", what, s));
  return static_cast<uint64_t>(ns);
}

uint64_t parse_interval_ns(const std::string& s) {
  uint64_t iv = parse_duration_ns(s, "-i/--interval");
  if (iv < 10'000'000) throw std::invalid_argument("-i/--interval must be at least 10ms");
  return iv;
}

uint64_t parse_size_bytes(const std::string& s, const char* what) {
  size_t used = 0;
  double v = parse_number(s, used, what);
  std::string unit = s.substr(used);
  double mult = 1;
  if (unit.empty() || unit == "B") mult = 1;
  else if (unit == "K" || unit == "k" || unit == "KiB") mult = 1024;
  else if (unit == "M" || unit == "MiB") mult = 1024.0 * 1024;
  else if (unit == "G" || unit == "GiB") mult = 1024.0 * 1024 * 1024;
  else throw std::invalid_argument(fmt::format("{} '{}': unknown unit '{}' (use K, M or G)", what, s, unit));
  if (v * mult >= 0x1p62)  // far beyond any disk, and a uint64_t cast would overflow
    throw std::invalid_argument(fmt::format("{} '{}': too large (at most 4E bytes)", what, s));
  return static_cast<uint64_t>(v * mult);
}

void check_covers_an_interval(uint64_t dur_ns, uint64_t iv_ns, const std::string& d, const std::string& i,
                              bool until_stopped) {
  if (dur_ns >= iv_ns) return;
  if (!dur_ns && until_stopped && std::strtod(d.c_str(), nullptr) == 0) return;
  throw std::invalid_argument(
      fmt::format("-d {} is shorter than one interval (-i {}): rates need two samples", d, i));
}

}  // namespace schedhot
