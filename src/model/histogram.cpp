#include "model/histogram.h"

#include <algorithm>
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

namespace {

/// summarize()'s body over the non-empty buckets, given as each(fn): fn(index, count) for
/// every non-empty bucket in ascending index order, until fn returns false. count: their
/// total; top: the highest non-empty index.
template <class Each>
HistSummary summarize_nonempty(uint64_t count, int top, const Each& each, uint64_t sum_ns, uint64_t max_ns) {
  HistSummary s;
  s.count = count;
  if (s.count == 0) return s;
  s.mean_ns = static_cast<double>(sum_ns) / static_cast<double>(s.count);
  if (max_ns == 0) max_ns = sh_hist_lower(top) + sh_hist_width(top) - 1;
  s.max_ns = max_ns;
  // The five percentiles in one cumulative pass (as hist_percentile finds each: the
  // nearest rank ceil(p/100 * n), at least 1; the bucket's middle, at most max_ns), not
  // five passes that each count the buckets again: a p99 column summarizes every CPU's
  // histogram, every interval (issue 32's profile of export: 36 % of its time).
  static constexpr double kP[5] = {10, 50, 90, 98, 99};
  double* const out[5] = {&s.p10, &s.p50, &s.p90, &s.p98, &s.p99};
  uint64_t rank[5];
  for (int k = 0; k < 5; ++k)
    rank[k] = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(kP[k] / 100.0 * static_cast<double>(s.count))));
  uint64_t seen = 0;
  int k = 0;
  each([&](uint32_t i, uint64_t c) {
    seen += c;
    if (seen < rank[k]) return true;
    const double lo = static_cast<double>(sh_hist_lower(i));
    const double w = static_cast<double>(sh_hist_width(i));
    const double mid = std::min(lo + (w - 1) / 2.0, static_cast<double>(max_ns));
    while (k < 5 && seen >= rank[k]) *out[k++] = mid;
    return k < 5;
  });
  return s;
}

}  // namespace

HistSummary summarize(std::span<const uint64_t> buckets, uint64_t sum_ns, uint64_t max_ns) {
  uint64_t count = 0;
  for (uint64_t c : buckets) count += c;
  if (count == 0) return {};
  auto each = [&](const auto& fn) {
    for (size_t i = 0; i < buckets.size(); ++i)
      if (buckets[i] && !fn(static_cast<uint32_t>(i), buckets[i])) return;
  };
  return summarize_nonempty(count, hist_top_bucket(buckets), each, sum_ns, max_ns);
}

HistSummary summarize_sparse(std::span<const uint32_t> index, std::span<const uint64_t> counts, uint64_t sum_ns,
                             uint64_t max_ns) {
  uint64_t count = 0;
  int top = -1;
  for (size_t j = 0; j < counts.size(); ++j)
    if (counts[j]) {
      count += counts[j];
      top = static_cast<int>(index[j]);
    }
  if (count == 0) return {};
  auto each = [&](const auto& fn) {
    for (size_t j = 0; j < counts.size(); ++j)
      if (counts[j] && !fn(index[j], counts[j])) return;
  };
  return summarize_nonempty(count, top, each, sum_ns, max_ns);
}

}  // namespace schedhot
