#include "sys/cpulist.h"

#include <algorithm>
#include <charconv>
#include <stdexcept>

#include <fmt/format.h>

namespace schedhot {

namespace {
constexpr int kMaxCpuId = 65536;

int parse_id(std::string_view s, std::string_view whole) {
  int v = -1;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty())
    throw std::invalid_argument(
        fmt::format("bad CPU list '{}': a range needs a CPU on each side of '-' (CPUs are 0, 1, ...; e.g. 0-3,8)", whole));
  if (ec != std::errc() || p != s.data() + s.size() || v < 0)
    throw std::invalid_argument(fmt::format("bad CPU list '{}': '{}' is not a CPU number", whole, s));
  // No kernel has more than 8192 CPUs (NR_CPUS); a bound far above it also keeps the range
  // loop of parse_cpulist() from overflowing at INT_MAX.
  if (v >= kMaxCpuId)
    throw std::invalid_argument(
        fmt::format("bad CPU list '{}': CPU {} is not a CPU number (ids are below {})", whole, s, kMaxCpuId));
  return v;
}
}  // namespace

std::vector<int> parse_cpulist(std::string_view text, int max_cpu) {
  std::vector<int> out;
  std::string_view rest = text;
  while (!rest.empty() && (rest.back() == '\n' || rest.back() == ' ')) rest.remove_suffix(1);
  if (rest.empty()) return out;
  bool first = true;
  while (true) {
    size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    if (item.empty())
      throw std::invalid_argument(fmt::format("bad CPU list '{}': {} (CPUs are 0, 1, ...; e.g. 0-3,8)", text,
                                              comma == std::string_view::npos ? "nothing after the last ','"
                                              : first ? "nothing before the first ','"
                                                      : "an empty item between two commas"));
    first = false;
    size_t dash = item.find('-');
    int lo, hi;
    if (dash == std::string_view::npos) {
      lo = hi = parse_id(item, text);
    } else {
      lo = parse_id(item.substr(0, dash), text);
      hi = parse_id(item.substr(dash + 1), text);
      if (hi < lo) throw std::invalid_argument(fmt::format("bad CPU list '{}': range {}-{} is reversed", text, lo, hi));
    }
    if (max_cpu > 0 && hi >= max_cpu)
      throw std::invalid_argument(fmt::format("bad CPU list '{}': CPU {} does not exist (CPUs are 0-{})", text, hi, max_cpu - 1));
    if (hi - lo > (1 << 20) || out.size() + size_t(hi - lo) > (1 << 20))
      throw std::invalid_argument(fmt::format("bad CPU list '{}': range too large", text));
    for (int c = lo; c <= hi; ++c) out.push_back(c);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string format_cpulist(std::vector<int> cpus) {
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += (j == i) ? fmt::format("{}", cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace schedhot
