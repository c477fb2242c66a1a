// Percentiles from schedhot's log-linear latency histograms (geometry in
// include/schedhot/abi.h: 16 sub-buckets per power of two, 1 ns .. 2^35 ns).
//
// Error bound: a percentile is the nearest-rank value (the smallest recorded value v
// with at least ceil(p/100 * N) values <= v), reported as the midpoint of v's bucket,
// and never above the exact maximum. Bucket widths are at most 1/16 of their lower
// bound, so |reported - exact| <= exact / 32 (3.125 %); below 16 ns it is exact.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace schedhot {

/// Relative error bound of hist_percentile (see the header comment).
inline constexpr double kPercentileRelError = 1.0 / 32.0;

/// The percentiles kernel engineers quote, ns.
struct HistSummary {
  uint64_t count = 0;
  double mean_ns = 0;
  uint64_t max_ns = 0;  ///< exact (cumulative) maximum when known, else the top bucket's upper bound
  double p10 = 0, p50 = 0, p90 = 0, p98 = 0, p99 = 0;
};

/// Nearest-rank percentile p (0 < p <= 100) of bucket counts, ns, as the midpoint of
/// the bucket that holds it, capped at max_ns when max_ns > 0. 0 when empty.
double hist_percentile(std::span<const uint64_t> buckets, double p, uint64_t max_ns = 0);

/// Count, mean, max and p10/p50/p90/p98/p99 of buckets. sum_ns gives the mean;
/// max_ns (0 = unknown) caps the percentiles and is reported as max.
HistSummary summarize(std::span<const uint64_t> buckets, uint64_t sum_ns, uint64_t max_ns);

/// summarize() of a histogram given by its non-empty buckets: counts[j] in bucket
/// index[j], index ascending (zero counts allowed, skipped). Equal to summarize() of the
/// dense buckets, to the bit.
HistSummary summarize_sparse(std::span<const uint32_t> index, std::span<const uint64_t> counts, uint64_t sum_ns,
                             uint64_t max_ns);

/// Index of the highest non-empty bucket, or -1.
int hist_top_bucket(std::span<const uint64_t> buckets);

}  // namespace schedhot
