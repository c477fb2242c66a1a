#include "sys/units.h"

#include <time.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <stdexcept>

#include <fmt/format.h>

namespace schedhot {

namespace {

double parse_number(const std::string& s, size_t& used, const char* what) {
  try {
    // a plain decimal: no leading space or sign, no hex ("0x10" would be 16), inf or nan
    if (s.empty() || !(std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '.') ||
        (s.size() > 1 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')))
      throw std::invalid_argument("");
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
  else throw std::invalid_argument(fmt::format("{} '{}': unknown unit '{}' (use us, ms, s, m or h)", what, s, unit));
  double ns = v * mult;
  if (ns > 1e18) throw std::invalid_argument(fmt::format("{} '{}' is too long (at most 1e18 ns, 31 years)", what, s));
  return static_cast<uint64_t>(ns);
}

uint64_t parse_interval_ns(const std::string& s) {
  uint64_t iv = parse_duration_ns(s, "-i/--interval");
  if (iv < 10'000'000) throw std::invalid_argument("-i/--interval must be at least 10ms");
  if (iv > kMaxIntervalNs) throw std::invalid_argument("-i/--interval must be at most 24h");
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

uint64_t parse_start_at_ns(const std::string& s, uint64_t now_wall_ns) {
  constexpr uint64_t kWeek = 7ull * 24 * 3600 * 1'000'000'000ull;
  uint64_t at;
  if (!s.empty() && s[0] == '@') {
    const uint64_t align = parse_duration_ns(s.substr(1), "--start-at @ALIGN");
    if (align < 1'000'000)
      throw std::invalid_argument(fmt::format("--start-at '{}': the alignment must be at least 1ms", s));
    at = (now_wall_ns / align + 1) * align;
  } else {
    size_t used = 0;
    const double v = parse_number(s, used, "--start-at");
    if (used != s.size())
      throw std::invalid_argument(
          fmt::format("--start-at '{}': want seconds since the epoch (e.g. 1764650000) or @ALIGN (e.g. @60)", s));
    if (v * 1e9 > 1.8e19) throw std::invalid_argument(fmt::format("--start-at '{}' is too far ahead", s));
    at = static_cast<uint64_t>(v * 1e9);
    if (at <= now_wall_ns)
      throw std::invalid_argument(fmt::format("--start-at {} is {:.3f} s in the past (clock: CLOCK_REALTIME)", s,
                                              (now_wall_ns - at) / 1e9));
  }
  if (at - now_wall_ns > kWeek)
    throw std::invalid_argument(fmt::format("--start-at '{}' is more than 7 days ahead ({:.0f} s)", s,
                                            (at - now_wall_ns) / 1e9));
  return at;
}

void check_covers_an_interval(uint64_t dur_ns, uint64_t iv_ns, const std::string& d, const std::string& i,
                              bool until_stopped) {
  if (dur_ns >= iv_ns) return;
  if (!dur_ns && until_stopped && std::strtod(d.c_str(), nullptr) == 0) return;
  throw std::invalid_argument(
      fmt::format("-d {} is shorter than one interval (-i {}): rates need two samples", d, i));
}

std::string format_utc_time(uint64_t wall_ns) {
  time_t t = static_cast<time_t>(wall_ns / 1000000000ull);
  struct tm tm {};
  gmtime_r(&t, &tm);
  char buf[64];
  strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

std::string format_bytes(uint64_t bytes) {
  static const char* const kUnit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  double v = double(bytes);
  while (v >= 1024 && u < 6) {
    v /= 1024;
    ++u;
  }
  if (u == 0) return fmt::format("{} B", bytes);
  const double r = std::round(v * 10) / 10;
  return r == std::floor(r) ? fmt::format("{:.0f} {}", r, kUnit[u]) : fmt::format("{:.1f} {}", r, kUnit[u]);
}

std::string format_rate(double r) {
  if (r >= 1e6) return fmt::format("{:.2f}M", r / 1e6);
  if (r >= 1e4) return fmt::format("{:.1f}k", r / 1e3);
  if (r >= 100) return fmt::format("{:.0f}", r);
  if (r >= 1) return fmt::format("{:.1f}", r);
  if (r > 0) return fmt::format("{:.2f}", r);
  return "0";
}

std::string format_ns(double x) {
  if (x >= 1e9) return fmt::format("{:.2f}s", x / 1e9);
  if (x >= 1e6) return fmt::format("{:.1f}ms", x / 1e6);
  if (x >= 1e4) return fmt::format("{:.1f}us", x / 1e3);
  return fmt::format("{:.0f}", x);
}

std::string format_ns_unit(double x) { return x < 1e4 ? format_ns(x) + " ns" : format_ns(x); }

std::string format_share_pct(double share) {
  if (share > 0 && share < 0.005) return "<1 %";
  if (share < 1 && share >= 0.995) return ">99 %";
  return fmt::format("{:.0f} %", share * 100);
}

namespace {

/// append_fixed's digits into buf (its end: the text is [return, end)); nullptr when v
/// needs fmt's exact path.
const char* fixed_digits(char* end, double v, int decimals) {
  static constexpr double kScale[] = {1, 10, 100, 1e3, 1e4, 1e5, 1e6};
  static constexpr uint64_t kScaleInt[] = {1, 10, 100, 1000, 10000, 100000, 1000000};
  const double a = std::fabs(v);
  if (decimals < 0 || decimals > 6 || !std::isfinite(v) || a * kScale[decimals] >= 0x1p50) {
    return nullptr;
  }
  // a x scale exactly is p + err (an FMA's residual is exact); p < 2^50, so p - floor(p)
  // and that minus 0.5 are exact, multiples of p's ulp, which |err| is at most half of.
  const double p = a * kScale[decimals], err = std::fma(a, kScale[decimals], -p), fl = std::floor(p);
  const double t = (p - fl) - 0.5;
  uint64_t q = static_cast<uint64_t>(fl);
  if (t > 0 || (t == 0 && (err > 0 || (err == 0 && (q & 1))))) ++q;
  char* s = end;
  const uint64_t ip = q / kScaleInt[decimals];
  uint64_t fp = q % kScaleInt[decimals];
  for (int d = 0; d < decimals; ++d, fp /= 10) *--s = char('0' + fp % 10);
  if (decimals) *--s = '.';
  uint64_t x = ip;
  do {
    *--s = char('0' + x % 10);
    x /= 10;
  } while (x);
  if (std::signbit(v)) *--s = '-';
  return s;
}

template <class Out>
void append_fixed_to(Out& out, double v, int decimals) {
  char buf[32];
  const char* const end = buf + sizeof buf;
  if (const char* s = fixed_digits(buf + sizeof buf, v, decimals))
    out.append(s, end);
  else
    fmt::format_to(std::back_inserter(out), "{:.{}f}", v, decimals);
}

}  // namespace

void append_fixed(std::string& out, double v, int decimals) { append_fixed_to(out, v, decimals); }
void append_fixed(fmt::memory_buffer& out, double v, int decimals) { append_fixed_to(out, v, decimals); }

}  // namespace schedhot
