#include "model/histogram.h"

#include <cmath>

#include "schedhot/abi.h"

namespace schedhot {

double hist_percentile(std::span<const uint64_t> buckets, double p, uint64_t max_ns) {
  uint64_t n = 0;
  for (uint64_t c : buckets) n += c;
  if (n == 0) return 0;
  if (p <= 0) p = 1e-9;
  if (p > 100) p = 100;
  uint64_t rank = static_cast<uint64_t>(std::ceil(p / 100.0 * static_cast<double>(n)));
  if (rank < 1) rank = 1;
  uint64_t seen = 0;
  for (size_t i = 0; i < buckets.size(); ++i) {
    seen += buckets[i];
    if (seen >= rank) {
      double lo = static_cast<double>(sh_hist_lower(static_cast<uint32_t>(i)));
      double w = static_cast<double>(sh_hist_width(static_cast<uint32_t>(i)));
      double mid = lo + (w - 1) / 2.0;
      if (max_ns > 0 && mid > static_cast<double>(max_ns)) mid = static_cast<double>(max_ns);
      return mid;
    }
  }
  return 0;
}

int hist_top_bucket(std::span<const uint64_t> buckets) {
  for (int i = static_cast<int>(buckets.size()) - 1; i >= 0; --i)
    if (buckets[i]) return i;
  return -1;
}

HistSummary summarize(std::span<const uint64_t> buckets, uint64_t sum_ns, uint64_t max_ns) {
  HistSummary s;
  for (uint64_t c : buckets) s.count += c;
  if (s.count == 0) return s;
  s.mean_ns = static_cast<double>(sum_ns) / static_cast<double>(s.count);
  if (max_ns == 0) {
    int top = hist_top_bucket(buckets);
    max_ns = sh_hist_lower(top) + sh_hist_width(top) - 1;
  }
  s.max_ns = max_ns;
  s.p10 = hist_percentile(buckets, 10, max_ns);
  s.p50 = hist_percentile(buckets, 50, max_ns);
  s.p90 = hist_percentile(buckets, 90, max_ns);
  s.p98 = hist_percentile(buckets, 98, max_ns);
  s.p99 = hist_percentile(buckets, 99, max_ns);
  return s;
}

}  // namespace schedhot
