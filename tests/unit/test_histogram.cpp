// Histogram geometry (include/schedhot/abi.h) and percentiles (src/model/histogram.h)
// against exact nearest-rank values of known distributions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "model/histogram.h"
#include "schedhot/abi.h"

using namespace schedhot;

namespace {

std::vector<uint64_t> bucketize(const std::vector<uint64_t>& values) {
  std::vector<uint64_t> b(SH_HIST_BUCKETS, 0);
  for (uint64_t v : values) ++b[sh_hist_index(v)];
  return b;
}

double exact_percentile(std::vector<uint64_t> v, double p) {
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * v.size()));
  if (rank < 1) rank = 1;
  return static_cast<double>(v[rank - 1]);
}

void expect_within_bound(const std::vector<uint64_t>& values, const char* what) {
  auto b = bucketize(values);
  uint64_t mx = *std::max_element(values.begin(), values.end());
  for (double p : {10.0, 50.0, 90.0, 98.0, 99.0, 99.9, 100.0}) {
    double exact = exact_percentile(values, p);
    double got = hist_percentile(b, p, mx);
    EXPECT_LE(std::fabs(got - exact), exact * kPercentileRelError + 1e-9)
        << what << " p" << p << ": exact " << exact << " got " << got;
  }
}

}  // namespace

TEST(HistGeometry, SmallValuesAreExact) {
  for (uint64_t v = 0; v < 16; ++v) {
    EXPECT_EQ(sh_hist_index(v), v);
    EXPECT_EQ(sh_hist_lower(static_cast<uint32_t>(v)), v);
    EXPECT_EQ(sh_hist_width(static_cast<uint32_t>(v)), 1u);
  }
}

TEST(HistGeometry, EveryValueFallsInItsBucket) {
  std::mt19937_64 rng(1);
  std::vector<uint64_t> vs;
  for (uint64_t v = 0; v < 70000; ++v) vs.push_back(v);
  for (int i = 0; i < 200000; ++i) vs.push_back(rng() >> (29 + rng() % 35));  // spread over all magnitudes
  uint32_t prev_idx = 0;
  uint64_t prev_v = 0;
  for (uint64_t v : vs) {
    if (v >= (1ull << 35)) continue;
    uint32_t i = sh_hist_index(v);
    ASSERT_LT(i, SH_HIST_BUCKETS);
    uint64_t lo = sh_hist_lower(i), w = sh_hist_width(i);
    ASSERT_LE(lo, v) << v;
    ASSERT_LT(v, lo + w) << v;
    if (i >= SH_HIST_SUB) ASSERT_LE(w * 16, lo) << "bucket " << i << " wider than 1/16 of its lower bound";
    if (v > prev_v) ASSERT_GE(i, prev_idx);
    prev_v = v;
    prev_idx = i;
  }
}

TEST(HistGeometry, BucketsTileTheRange) {
  for (uint32_t i = 0; i + 1 < SH_HIST_BUCKETS; ++i)
    EXPECT_EQ(sh_hist_lower(i) + sh_hist_width(i), sh_hist_lower(i + 1)) << i;
  EXPECT_EQ(sh_hist_lower(SH_HIST_BUCKETS - 1) + sh_hist_width(SH_HIST_BUCKETS - 1), 1ull << 35);
}

TEST(HistGeometry, HugeValuesClampToTheLastBucket) {
  EXPECT_EQ(sh_hist_index(1ull << 35), SH_HIST_BUCKETS - 1);
  EXPECT_EQ(sh_hist_index(~0ull), SH_HIST_BUCKETS - 1);
  EXPECT_EQ(sh_hist_index((1ull << 35) - 1), SH_HIST_BUCKETS - 1);
  EXPECT_EQ(sh_hist_index(10'000'000'000ull), sh_hist_index(10'000'000'001ull));  // 10 s is in range
  EXPECT_LT(sh_hist_index(10'000'000'000ull), SH_HIST_BUCKETS - 1);
}

TEST(HistPercentile, EmptyIsZero) {
  std::vector<uint64_t> b(SH_HIST_BUCKETS, 0);
  EXPECT_EQ(hist_percentile(b, 50), 0);
  EXPECT_EQ(summarize(b, 0, 0).count, 0u);
}

TEST(HistPercentile, ConstantValue) {
  std::vector<uint64_t> vals(1000, 425);
  auto b = bucketize(vals);
  auto s = summarize(b, 425 * 1000, 425);
  EXPECT_EQ(s.count, 1000u);
  EXPECT_DOUBLE_EQ(s.mean_ns, 425);
  EXPECT_NEAR(s.p50, 425, 425 / 32.0);
  EXPECT_EQ(s.max_ns, 425u);
  // exact below 16 ns
  std::vector<uint64_t> small(10, 7);
  EXPECT_EQ(hist_percentile(bucketize(small), 99), 7);
}

TEST(HistPercentile, UniformWithinBound) {
  std::mt19937_64 rng(2);
  std::uniform_int_distribution<uint64_t> d(1, 1'000'000);
  std::vector<uint64_t> v(200000);
  for (auto& x : v) x = d(rng);
  expect_within_bound(v, "uniform");
}

TEST(HistPercentile, BimodalWithinBound) {
  std::mt19937_64 rng(3);
  std::normal_distribution<double> fast(500, 50), slow(10000, 1500);
  std::vector<uint64_t> v;
  for (int i = 0; i < 90000; ++i) v.push_back(static_cast<uint64_t>(std::max(1.0, fast(rng))));
  for (int i = 0; i < 10000; ++i) v.push_back(static_cast<uint64_t>(std::max(1.0, slow(rng))));
  expect_within_bound(v, "bimodal");
  auto b = bucketize(v);
  // The modes are where they should be: p50 near 500, p99 in the slow mode.
  EXPECT_NEAR(hist_percentile(b, 50), 500, 60);
  EXPECT_GT(hist_percentile(b, 99), 8000);
}

TEST(HistPercentile, SeedShapeCpupriSetWithCount) {
  // The second seed's cpupri_set() distribution "with count": p10 700, p50 1915,
  // p90 6619, p98 11150, p99 13200 ns. Build values by inverting a piecewise-linear
  // CDF through those points, then check the histogram reproduces them within bound.
  const double q[] = {0, 10, 50, 90, 98, 99, 100};
  const double x[] = {300, 700, 1915, 6619, 11150, 13200, 20000};
  std::vector<uint64_t> v;
  const int n = 100000;
  for (int i = 1; i <= n; ++i) {
    double p = 100.0 * i / n;
    int k = 0;
    while (k < 5 && p > q[k + 1]) ++k;
    double t = (p - q[k]) / (q[k + 1] - q[k]);
    v.push_back(static_cast<uint64_t>(x[k] + t * (x[k + 1] - x[k])));
  }
  expect_within_bound(v, "seed");
  auto b = bucketize(v);
  auto s = summarize(b, 0, *std::max_element(v.begin(), v.end()));
  EXPECT_NEAR(s.p10, 700, 700 / 32.0);
  EXPECT_NEAR(s.p50, 1915, 1915 / 32.0);
  EXPECT_NEAR(s.p90, 6619, 6619 / 32.0);
  EXPECT_NEAR(s.p98, 11150, 11150 / 32.0);
  EXPECT_NEAR(s.p99, 13200, 13200 / 32.0);
}

TEST(HistPercentile, MaxCapsTheTopBucket) {
  // 983041 is 1 ns into its bucket [983040, 1015808): the midpoint lies above it.
  std::vector<uint64_t> v = {100, 200, 983041};
  auto b = bucketize(v);
  EXPECT_EQ(hist_percentile(b, 100, 983041), 983041);
  double uncapped = hist_percentile(b, 100, 0);
  EXPECT_GT(uncapped, 983041);  // midpoint of a wide bucket
  EXPECT_LE(std::fabs(uncapped - 983041), 983041 * kPercentileRelError);
}

TEST(HistSummarize, OnePassGivesWhatEachPercentileGivesAlone) {
  // summarize() finds the five percentiles in one cumulative pass; each must be what
  // hist_percentile() finds for it alone, on sparse and dense, small and huge histograms,
  // with and without a known maximum.
  std::mt19937_64 rng(42);
  for (int t = 0; t < 2000; ++t) {
    std::vector<uint64_t> b(SH_HIST_BUCKETS, 0);
    const int filled = 1 + int(rng() % (t % 3 == 0 ? 3 : 60));
    for (int i = 0; i < filled; ++i) b[rng() % (t % 2 ? 64 : SH_HIST_BUCKETS)] += 1 + rng() % (t % 5 == 0 ? 1000000 : 7);
    const int top = hist_top_bucket(b);
    const uint64_t max_ns = t % 4 == 0 ? 0 : sh_hist_lower(uint32_t(top)) + rng() % sh_hist_width(uint32_t(top));
    const HistSummary s = summarize(b, 12345, max_ns);
    const uint64_t m = s.max_ns;
    EXPECT_EQ(s.p10, hist_percentile(b, 10, m)) << t;
    EXPECT_EQ(s.p50, hist_percentile(b, 50, m)) << t;
    EXPECT_EQ(s.p90, hist_percentile(b, 90, m)) << t;
    EXPECT_EQ(s.p98, hist_percentile(b, 98, m)) << t;
    EXPECT_EQ(s.p99, hist_percentile(b, 99, m)) << t;
  }
  const HistSummary empty = summarize(std::vector<uint64_t>(SH_HIST_BUCKETS, 0), 0, 0);
  EXPECT_EQ(empty.count, 0u);
  EXPECT_EQ(empty.p99, 0.0);
}
