// Before/after comparison of two sets of intervals (schedhot diff): a bootstrap over
// intervals for latency percentiles and for rates, with a fixed-seeded RNG so the same
// inputs always give the same verdict.
//
// Method (README "diff"): each side is a list of intervals (two consecutive samples).
// One resample draws as many intervals as the side has, with replacement, from that side
// alone; percentiles are taken on the merged delta histogram of the drawn intervals
// (model/histogram.h hist_percentile), a rate is the drawn events over the drawn seconds.
// kResamples resamples per side give the distribution of log(B/A); its 0.5 % and 99.5 %
// quantiles are the 99 % interval. A figure is significant only when that interval
// excludes 0 AND |B/A - 1| exceeds the histogram's error bound at those values (for
// percentiles: kPercentileRelError on each side that is >= 16 ns, added; rates have no
// bucket error, only kRateMinEffect). Values of 0 are floored (1 ns, half an event over
// the drawn seconds) so the logarithm is defined.
//
// Many comparisons: a probe row has 6 tested figures (p10 p50 p90 p98 p99, rate), each
// at 99 %; no Holm-Bonferroni (1000 resamples cannot resolve p < 0.01/48). Instead the
// per-row false-positive rate is measured by the A/A test (tests/unit/test_diff.cpp)
// against the documented bound kRowFalsePositiveBound.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace schedhot {

/// Resamples per figure and the interval's level.
inline constexpr int kResamples = 1000;
inline constexpr double kConfidence = 0.99;
/// A rate change smaller than this (relative) is never significant (0.5 %).
inline constexpr double kRateMinEffect = 0.005;
/// The documented per-row false-positive bound of an A/A comparison (a row: a probe's
/// six tested figures, or a line): the A/A test asserts the rate it measures is below it.
inline constexpr double kRowFalsePositiveBound = 0.05;

/// One side's delta histograms, one per interval, stored sparse: (bucket, count) pairs in
/// bucket order. nbuckets: the dense size (the recording's histogram geometry).
struct HistSeries {
  size_t nbuckets = 0;
  uint64_t max_ns = 0;  ///< caps every percentile (0: unknown)
  std::vector<std::vector<std::pair<uint32_t, uint64_t>>> intervals;
  /// Appends one interval's dense buckets.
  void add(std::span<const uint64_t> buckets);
  /// Events over every interval (0: no latency was measured on this side).
  uint64_t total() const;
};

/// One side's per-interval events and lengths (seconds > 0).
struct RateSeries {
  std::vector<double> events;
  std::vector<double> seconds;
  void add(double ev, double s) {
    events.push_back(ev);
    seconds.push_back(s);
  }
  double total_events() const;
  double total_seconds() const;
  /// total_events() / total_seconds(); 0 without seconds.
  double rate() const;
};

/// The comparison of one figure.
struct FigureDiff {
  double a = 0, b = 0;              ///< point estimates (all intervals of each side)
  std::optional<double> ratio;      ///< b / a; nullopt when a is 0
  double log_lo = 0, log_hi = 0;    ///< the kConfidence interval of log(B/A)
  double min_effect = 0;            ///< |ratio - 1| must exceed this (the error bound)
  bool significant = false;
};

/// The bootstrap's RNG seed: fixed, so output is reproducible; stream picks a
/// sub-sequence per figure (mixed into the seed), so figures do not share draws.
inline constexpr uint64_t kDiffSeed = 0x5c4ed407d1ffULL;

/// p10 p50 p90 p98 p99 of a and b compared. Point estimates over every interval; a side
/// with no event (no interval, or total() == 0) gives 0 and no verdict (significant false).
std::array<FigureDiff, 5> compare_percentiles(const HistSeries& a, const HistSeries& b, uint64_t stream,
                                              int resamples = kResamples);
/// The rate (events/s) of a and b compared. An empty side gives no verdict.
FigureDiff compare_rates(const RateSeries& a, const RateSeries& b, uint64_t stream, int resamples = kResamples);

/// The percentiles compare_percentiles() reports, in its order.
inline constexpr std::array<double, 5> kDiffPercentiles = {10, 50, 90, 98, 99};

}  // namespace schedhot
