#include "probe/catch_rules.h"

#include <cctype>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "probe/catalog.h"
#include "schedhot/abi.h"
#include "sys/units.h"

namespace schedhot {

uint64_t round_threshold(uint64_t ns) {
  if (ns == 0) return 0;
  const uint32_t i = sh_hist_index(ns);
  if (sh_hist_lower(i) == ns || i == SH_HIST_BUCKETS - 1) return sh_hist_lower(i);
  return sh_hist_lower(i + 1);
}

std::vector<CatchRule> parse_catch_rules(const std::string& text, uint32_t per_sec) {
  std::vector<CatchRule> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = text.find(',', pos);
    std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());  // "a>1us, b>2us"
    while (!item.empty() && item.back() == ' ') item.pop_back();
    pos = comma == std::string::npos ? text.size() + 1 : comma + 1;
    if (item.empty()) continue;
    const size_t gt = item.find('>');
    if (gt == std::string::npos || gt == 0 || gt + 1 == item.size())
      throw std::invalid_argument(fmt::format("--catch '{}': a rule is PROBE>DURATION or PROBE>pNN (cpupri_set>20us, idle>p99)", item));
    CatchRule r;
    r.text = item;
    r.probe = item.substr(0, gt);
    r.per_sec = per_sec;
    const ProbeSpec* p = find_probe(r.probe);
    if (!p) {
      std::string timed;
      for (const ProbeSpec& q : probe_catalog())
        if (!q.hist.empty()) timed += (timed.empty() ? "" : ", ") + q.name;
      throw std::invalid_argument(fmt::format("--catch '{}': no probe named '{}' (probes with durations: {})", item, r.probe, timed));
    }
    if (p->hist.empty())
      throw std::invalid_argument(fmt::format("--catch '{}': {} counts events but does not time them: nothing to catch", item, r.probe));
    for (const CatchRule& o : out)
      if (o.probe == r.probe) throw std::invalid_argument(fmt::format("--catch: {} has two rules ('{}', '{}')", r.probe, o.text, item));
    const std::string v = item.substr(gt + 1);
    if (v[0] == 'p') {
      // digits with an optional fraction (strtod alone takes " 99", "0x10", "1e-320")
      const std::string num = v.substr(1);
      const size_t dot = num.find('.');
      const bool shape = !num.empty() && num.find_first_not_of("0123456789.") == std::string::npos &&
                         std::isdigit(static_cast<unsigned char>(num[0])) && dot == num.rfind('.') && num.back() != '.';
      const double pc = shape ? std::strtod(num.c_str(), nullptr) : 0;
      if (!shape || !(pc >= 0.001 && pc < 100))
        throw std::invalid_argument(fmt::format("--catch '{}': a percentile is p followed by a number above 0 and below 100 (p99, p99.9)", item));
      r.percentile = pc;
    } else {
      const bool ns = v.size() > 2 && v.compare(v.size() - 2, 2, "ns") == 0 &&
                      v.find_first_not_of("0123456789") == v.size() - 2;  // whole ns: "800ns"
      try {
        r.asked_ns = ns ? std::stoull(v.substr(0, v.size() - 2)) : parse_duration_ns(v, "a threshold");
      } catch (const std::out_of_range&) {
        throw std::invalid_argument(fmt::format("--catch '{}': the threshold does not fit in 64 bits of ns", item));
      } catch (const std::exception& e) {
        throw std::invalid_argument(fmt::format("--catch '{}': {}", item, e.what()));
      }
      if (r.asked_ns == 0) throw std::invalid_argument(fmt::format("--catch '{}': the threshold must be above 0", item));
      r.threshold_ns = round_threshold(r.asked_ns);
    }
    out.push_back(std::move(r));
  }
  if (out.empty()) throw std::invalid_argument("--catch: no rule given (cpupri_set>20us, idle>p99)");
  return out;
}

std::string catch_unusable(const CatchRule& r, const ProbeStatus& st) {
  if (!st.attached) return fmt::format("--catch {}: {} is not attached{}", r.text, r.probe, st.reason.empty() ? "" : ": " + st.reason);
  if (st.proxy)
    return fmt::format("--catch {}: {} runs as a proxy here ({}), which has no duration", r.text, r.probe, to_string(st.backend));
  return "";
}

uint64_t percentile_threshold(const std::vector<uint64_t>& buckets, double percentile) {
  uint64_t n = 0;
  for (uint64_t c : buckets) n += c;
  // Too few events for the percentile to mean anything: a p99 of a handful is their
  // largest, and one interval's few events would arm a threshold most later ones pass.
  if (double(n) * (100.0 - percentile) / 100.0 < double(kPercentileMinAbove)) return 0;
  const uint64_t rank = std::max<uint64_t>(1, uint64_t(std::ceil(percentile / 100.0 * double(n))));
  uint64_t cum = 0;
  for (size_t i = 0; i < buckets.size() && i < SH_HIST_BUCKETS; ++i) {
    cum += buckets[i];
    if (cum >= rank) return std::max<uint64_t>(1, sh_hist_lower(uint32_t(i)));
  }
  return sh_hist_lower(SH_HIST_BUCKETS - 1);
}

}  // namespace schedhot
