// model/compare.h: the bootstrap over intervals. A/A pairs of synthetic workloads (same
// parameters, different seeds) give a measured per-row false-positive rate at or below
// kRowFalsePositiveBound; known shifts (2x latency, +10 % rate, one CPU of four) are found
// with the right ratios.
#include <cmath>
#include <cstdio>
#include <random>

#include <gtest/gtest.h>

#include "model/compare.h"
#include "schedhot/abi.h"

using namespace schedhot;

namespace {

/// One side of a synthetic workload: n intervals of 1 s on ncpus CPUs; per CPU and
/// interval Poisson(rate) calls (CPU hot_cpu at rate * hot_factor), each with a lognormal
/// latency of median median_ns (sigma 0.6), and an interval-to-interval load factor
/// (lognormal, sigma 0.05) as a real machine has.
struct Workload {
  int intervals = 30, ncpus = 4;
  double rate = 2000, median_ns = 800, hot_factor = 1;
  int hot_cpu = -1;
};

void make_side(const Workload& w, uint64_t seed, HistSeries& h, RateSeries& r) {
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> lat(std::log(w.median_ns), 0.6), load(0, 0.05);
  h = HistSeries{};
  r = RateSeries{};
  for (int i = 0; i < w.intervals; ++i) {
    std::vector<uint64_t> b(SH_HIST_BUCKETS, 0);
    const double f = load(rng);
    double calls = 0;
    for (int c = 0; c < w.ncpus; ++c) {
      std::poisson_distribution<int> n(w.rate / w.ncpus * f * (c == w.hot_cpu ? w.hot_factor : 1));
      const int k = n(rng);
      calls += k;
      for (int j = 0; j < k; ++j) b[sh_hist_index(static_cast<uint64_t>(lat(rng)))]++;
    }
    h.add(b);
    r.add(calls, 1.0);
  }
}

struct Row {
  std::array<FigureDiff, 5> pct;
  FigureDiff rate;
  bool significant() const {
    bool any = rate.significant;
    for (auto& p : pct) any |= p.significant;
    return any;
  }
};

Row compare(const Workload& wa, const Workload& wb, uint64_t seed_a, uint64_t seed_b, int resamples = kResamples) {
  HistSeries ha, hb;
  RateSeries ra, rb;
  make_side(wa, seed_a, ha, ra);
  make_side(wb, seed_b, hb, rb);
  return Row{compare_percentiles(ha, hb, 1, resamples), compare_rates(ra, rb, 1, resamples)};
}

}  // namespace

TEST(Compare, AASameWorkloadDifferentSeedsStaysUnderTheBound) {
  const int pairs = std::getenv("CI") ? 60 : 150;
  int flagged = 0, figures_flagged = 0;
  for (int i = 0; i < pairs; ++i) {
    Row r = compare(Workload{}, Workload{}, 1000 + 2 * i, 1001 + 2 * i, 500);
    flagged += r.significant();
    figures_flagged += r.rate.significant;
    for (auto& p : r.pct) figures_flagged += p.significant;
  }
  const double rate = double(flagged) / pairs;
  std::printf("A/A: %d of %d rows significant (%.1f %%; bound %.1f %%), %d of %d figures\n", flagged, pairs,
              rate * 100, kRowFalsePositiveBound * 100, figures_flagged, pairs * 6);
  EXPECT_LE(rate, kRowFalsePositiveBound);
}

TEST(Compare, TwiceTheLatencyIsFoundWithRatioTwo) {
  Workload b;
  b.median_ns = 1600;
  Row r = compare(Workload{}, b, 7, 8);
  for (size_t k = 0; k < 5; ++k) {
    SCOPED_TRACE(kDiffPercentiles[k]);
    ASSERT_TRUE(r.pct[k].ratio);
    EXPECT_NEAR(*r.pct[k].ratio, 2.0, 2.0 * 0.1);
    EXPECT_TRUE(r.pct[k].significant);
    EXPECT_GT(r.pct[k].log_lo, 0);
  }
  EXPECT_FALSE(r.rate.significant) << r.rate.b / r.rate.a;
}

TEST(Compare, TenPercentMoreCallsIsFoundWithRatioOnePointOne) {
  Workload b;
  b.rate = 2200;
  Row r = compare(Workload{}, b, 9, 10);
  ASSERT_TRUE(r.rate.ratio);
  EXPECT_NEAR(*r.rate.ratio, 1.10, 0.03);
  EXPECT_TRUE(r.rate.significant);
  EXPECT_LT(std::exp(r.rate.log_lo), 1.10);
  EXPECT_GT(std::exp(r.rate.log_hi), 1.10);
}

TEST(Compare, OneCpuOfFourAtTwiceTheRateIsOneQuarterMore) {
  Workload b;
  b.hot_cpu = 2;
  b.hot_factor = 2;
  Row r = compare(Workload{}, b, 11, 12);
  ASSERT_TRUE(r.rate.ratio);
  EXPECT_NEAR(*r.rate.ratio, 1.25, 0.04);
  EXPECT_TRUE(r.rate.significant);
}

TEST(Compare, OutputIsReproducibleAndEmptySidesHaveNoVerdict) {
  Workload b;
  b.median_ns = 900;
  Row r1 = compare(Workload{}, b, 3, 4), r2 = compare(Workload{}, b, 3, 4);
  for (size_t k = 0; k < 5; ++k) {
    EXPECT_EQ(r1.pct[k].log_lo, r2.pct[k].log_lo);
    EXPECT_EQ(r1.pct[k].log_hi, r2.pct[k].log_hi);
  }
  HistSeries e, h;
  RateSeries re, rr;
  make_side(Workload{}, 5, h, rr);
  auto p = compare_percentiles(e, h, 1);
  EXPECT_FALSE(p[1].significant);
  EXPECT_FALSE(p[1].ratio);  // A is 0: no ratio
  EXPECT_FALSE(compare_rates(re, rr, 1).significant);
}

TEST(Compare, AShiftWithinTheBucketErrorIsNotSignificant) {
  // 3 % slower: the interval may exclude 0, but 3 % is within the buckets' 2 x 3.125 %.
  Workload a, b;
  a.rate = b.rate = 20000;
  b.median_ns = 800 * 1.03;
  Row r = compare(a, b, 13, 14);
  for (auto& p : r.pct) EXPECT_FALSE(p.significant) << *p.ratio;
}

TEST(Compare, ZeroAgainstAFewEventsInOneIntervalIsNotSignificant) {
  // The fresh user's case: A has 0 events in 20 intervals of 1 s, B 3 events all in one of
  // 15 intervals of 2 s. A resample of B misses that interval (14/15)^15 = 35 % of the time,
  // so the 99 % interval cannot exclude "no change".
  RateSeries a, b;
  for (int i = 0; i < 20; ++i) a.add(0, 1.0);
  for (int i = 0; i < 15; ++i) b.add(i == 7 ? 3 : 0, 2.0);
  const FigureDiff d = compare_rates(a, b, 1);
  EXPECT_FALSE(d.ratio);
  EXPECT_FALSE(d.significant) << "log interval " << d.log_lo << ".." << d.log_hi;
  // The same 0 against events spread over every interval is a real change.
  RateSeries c;
  for (int i = 0; i < 15; ++i) c.add(3, 2.0);
  EXPECT_TRUE(compare_rates(a, c, 1).significant);
  // And 6 -> 0 over the halves of one quiet file (events in two intervals): not significant.
  RateSeries e, z;
  for (int i = 0; i < 7; ++i) e.add(i == 2 || i == 5 ? 3 : 0, 1.0);
  for (int i = 0; i < 8; ++i) z.add(0, 1.0);
  EXPECT_FALSE(compare_rates(e, z, 2).significant);
}
