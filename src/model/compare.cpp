// Bootstrap over intervals (method in compare.h).
#include "model/compare.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <tuple>

#include "model/histogram.h"

namespace schedhot {

void HistSeries::add(std::span<const uint64_t> buckets) {
  if (buckets.size() > nbuckets) nbuckets = buckets.size();
  std::vector<std::pair<uint32_t, uint64_t>> v;
  for (size_t i = 0; i < buckets.size(); ++i)
    if (buckets[i]) v.emplace_back(static_cast<uint32_t>(i), buckets[i]);
  intervals.push_back(std::move(v));
}

uint64_t HistSeries::total() const {
  uint64_t t = 0;
  for (auto& iv : intervals)
    for (auto& [b, c] : iv) t += c;
  return t;
}

double RateSeries::total_events() const {
  double t = 0;
  for (double e : events) t += e;
  return t;
}
double RateSeries::total_seconds() const {
  double t = 0;
  for (double s : seconds) t += s;
  return t;
}
double RateSeries::rate() const {
  const double s = total_seconds();
  return s > 0 ? total_events() / s : 0;
}

namespace {

uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// An index in [0, n): rng() % n, the same on every standard library (unlike
/// uniform_int_distribution); the bias is below n / 2^64.
size_t draw(std::mt19937_64& rng, size_t n) { return static_cast<size_t>(rng() % n); }

/// The percentiles of the merged histogram of the chosen intervals (all when idx empty).
std::array<double, 5> percentiles(const HistSeries& h, const std::vector<size_t>* idx, std::vector<uint64_t>& dense) {
  dense.assign(h.nbuckets, 0);
  auto merge = [&](size_t i) {
    for (auto& [b, c] : h.intervals[i]) dense[b] += c;
  };
  if (idx)
    for (size_t i : *idx) merge(i);
  else
    for (size_t i = 0; i < h.intervals.size(); ++i) merge(i);
  std::array<double, 5> out{};
  for (size_t k = 0; k < kDiffPercentiles.size(); ++k) out[k] = hist_percentile(dense, kDiffPercentiles[k], h.max_ns);
  return out;
}

/// The error bound of a percentile reported at v (histogram.h): exact below 16 ns.
double rel_error(double v) { return v < 16 ? 0 : kPercentileRelError; }

/// The kConfidence interval of sorted log ratios.
std::pair<double, double> interval_of(std::vector<double>& logs) {
  std::sort(logs.begin(), logs.end());
  const double tail = (1 - kConfidence) / 2;
  const size_t n = logs.size();
  auto at = [&](double q) {
    const size_t i = static_cast<size_t>(std::floor(q * static_cast<double>(n - 1) + 0.5));
    return logs[std::min(i, n - 1)];
  };
  return {at(tail), at(1 - tail)};
}

void verdict(FigureDiff& d) {
  d.ratio = d.a > 0 ? std::optional<double>(d.b / d.a) : std::nullopt;
  const bool excludes0 = d.log_lo > 0 || d.log_hi < 0;
  const double effect = d.ratio ? std::abs(*d.ratio - 1) : (d.b > 0 ? INFINITY : 0);
  d.significant = excludes0 && effect > d.min_effect;
}

}  // namespace

std::array<FigureDiff, 5> compare_percentiles(const HistSeries& a, const HistSeries& b, uint64_t stream,
                                              int resamples) {
  std::array<FigureDiff, 5> out{};
  std::vector<uint64_t> dense;
  const auto pa = percentiles(a, nullptr, dense), pb = percentiles(b, nullptr, dense);
  for (size_t k = 0; k < out.size(); ++k) {
    out[k].a = pa[k];
    out[k].b = pb[k];
  }
  // A side with no latency event (0 calls in the window, or a proxy that cannot time the
  // function) has no percentiles: nothing to test, whatever the other side shows.
  if (a.total() == 0 || b.total() == 0 || (pa[1] == 0 && pb[1] == 0)) return out;
  std::mt19937_64 rng(splitmix(kDiffSeed ^ splitmix(stream)));
  std::array<std::vector<double>, 5> logs;
  std::vector<size_t> ia(a.intervals.size()), ib(b.intervals.size());
  for (int r = 0; r < resamples; ++r) {
    for (auto& i : ia) i = draw(rng, a.intervals.size());
    for (auto& i : ib) i = draw(rng, b.intervals.size());
    const auto ra = percentiles(a, &ia, dense), rb = percentiles(b, &ib, dense);
    for (size_t k = 0; k < 5; ++k) logs[k].push_back(std::log(std::max(rb[k], 1.0) / std::max(ra[k], 1.0)));
  }
  for (size_t k = 0; k < 5; ++k) {
    std::tie(out[k].log_lo, out[k].log_hi) = interval_of(logs[k]);
    out[k].min_effect = rel_error(out[k].a) + rel_error(out[k].b);
    verdict(out[k]);
  }
  return out;
}

FigureDiff compare_rates(const RateSeries& a, const RateSeries& b, uint64_t stream, int resamples) {
  FigureDiff d;
  d.a = a.rate();
  d.b = b.rate();
  d.min_effect = kRateMinEffect;
  if (a.events.empty() || b.events.empty() || (d.a == 0 && d.b == 0)) {
    d.ratio = d.a > 0 ? std::optional<double>(d.b / d.a) : std::nullopt;
    return d;
  }
  std::mt19937_64 rng(splitmix(kDiffSeed ^ splitmix(stream ^ 0x7a7e)));
  std::vector<double> logs;
  logs.reserve(static_cast<size_t>(resamples));
  // One resample of a side: its events and seconds.
  auto one = [&](const RateSeries& s) {
    double ev = 0, sec = 0;
    for (size_t k = 0; k < s.events.size(); ++k) {
      const size_t i = draw(rng, s.events.size());
      ev += s.events[i];
      sec += s.seconds[i];
    }
    return std::pair<double, double>{ev, sec};
  };
  for (int r = 0; r < resamples; ++r) {
    const auto [ea, sa] = one(a);
    const auto [eb, sb] = one(b);
    // Both resamples empty: no difference (not the ratio of two floors over unequal spans,
    // which read "0 -> 3 events in one of 15 intervals" as significant). One side empty:
    // half an event over its seconds, so the log ratio stays finite.
    if ((ea <= 0 && eb <= 0) || sa <= 0 || sb <= 0) {
      logs.push_back(0);
      continue;
    }
    logs.push_back(std::log((std::max(eb, 0.5) / sb) / (std::max(ea, 0.5) / sa)));
  }
  std::tie(d.log_lo, d.log_hi) = interval_of(logs);
  verdict(d);
  return d;
}

}  // namespace schedhot
