// The gap model: see gaps.h for the derivation and the assumptions.
#include "model/gaps.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>

namespace schedhot {

namespace {

double lower_of(uint32_t b) {
  if (b == 0) return 0;
  const uint32_t m = SH_GAP_MIN_MSB + (b - 1) / 2, s = (b - 1) % 2;
  if (b >= kGapBuckets - 1) return std::ldexp(1.0, SH_GAP_MAX_MSB + 1);
  return std::ldexp(2.0 + s, int(m) - 1);
}

struct Bounds {
  std::array<double, kGapBuckets + 1> lo{};
  Bounds() {
    for (uint32_t b = 0; b < kGapBuckets; ++b) lo[b] = lower_of(b);
    lo[kGapBuckets] = std::numeric_limits<double>::infinity();
  }
};
const Bounds kBounds;

}  // namespace

double gap_lower(uint32_t b) { return kBounds.lo[std::min(b, kGapBuckets)]; }

double gap_upper(uint32_t b) { return kBounds.lo[std::min(b + 1, kGapBuckets)]; }

double CpuGaps::writes() const { return std::accumulate(ww.begin(), ww.end(), 0.0); }

double CpuGaps::reads() const { return std::accumulate(ra.begin(), ra.end(), 0.0); }

namespace {

constexpr uint32_t kFinite = kGapBuckets - 1;  // buckets with a finite range
constexpr int kPoints = 4;                     // evaluation points per finite bucket
constexpr uint32_t kEval = kFinite * kPoints;
// Below this a window's survival is taken as 0 (its log is not summed).
constexpr double kZero = 1e-300;

// The evaluation points: kPoints per finite bucket, at the middles of its quarters.
const std::array<double, kEval>& eval_points() {
  static const std::array<double, kEval> pts = [] {
    std::array<double, kEval> p{};
    for (uint32_t b = 0; b < kFinite; ++b) {
      const double lo = gap_lower(b), w = gap_upper(b) - lo;
      for (int k = 0; k < kPoints; ++k) p[b * kPoints + k] = lo + w * (k + 0.5) / kPoints;
    }
    return p;
  }();
  return pts;
}

// The gaps within a finite bucket are taken with a linear density (1 + beta (x - w/2)) / w
// on x in [0, w), its slope from the neighbouring buckets' densities (a uniform density
// biases exponential gaps upwards by up to a quarter of the bucket's width). beta is
// clamped to keep the density non-negative.
double slope(const double* h, uint32_t b) {
  const double w = gap_upper(b) - gap_lower(b);
  if (h[b] <= 0 || b + 1 >= kFinite) return 0;
  const auto mid = [](uint32_t i) { return (gap_lower(i) + gap_upper(i)) / 2; };
  const auto dens = [&](uint32_t i) { return h[i] / (gap_upper(i) - gap_lower(i)); };
  const uint32_t a = b > 0 ? b - 1 : b, c = b + 1;
  const double beta = (dens(c) - dens(a)) / ((mid(c) - mid(a)) * dens(b));
  return std::clamp(beta, -2 / w, 2 / w);
}

// Q(g) of one CPU's renewal process at every evaluation point: the probability that a
// window of length g placed at random holds none of its events. h: the gaps (last bucket:
// unbounded), n: their number, lambda: events per ns. out[i] = Q at point i (0 when
// below kZero).
void window_survival(const double* h, double lambda, const std::array<char, kFinite>& need, std::array<double, kEval>& out) {
  double n = 0;
  for (uint32_t b = 0; b < kGapBuckets; ++b) n += h[b];
  if (n <= 0 || lambda <= 0) {
    out.fill(1.0);
    return;
  }
  const auto& pts = eval_points();
  double cum = 0;    // integral of S from 0 to the bucket's lower bound
  double above = n;  // gaps above the bucket's lower bound
  for (uint32_t b = 0; b < kFinite; ++b) {
    const double lo = gap_lower(b), w = gap_upper(b) - lo, nb = h[b], beta = slope(h, b);
    above -= nb;  // gaps above the whole bucket
    // integral over [0, x) of the share of the bucket's gaps above lo + x
    const auto part = [&](double x) { return x - (x * x / 2 + beta * (x * x * x / 6 - w * x * x / 4)) / w; };
    for (int k = 0; k < kPoints && need[b]; ++k) {
      const double x = pts[b * kPoints + k] - lo;
      const double integ = cum + (above * x + nb * part(x)) / n;
      const double q = 1.0 - lambda * integ;
      out[b * kPoints + k] = q > kZero ? q : 0.0;
    }
    cum += (above * w + nb * part(w)) / n;
  }
}

struct Sums {
  std::array<double, kEval> log{};
  std::array<uint32_t, kEval> zeros{};
  // Only the points of the buckets some CPU's own gaps fall in are used (misses()).
  void add(const std::array<double, kEval>& q, const std::array<char, kFinite>& need, int sign) {
    for (uint32_t i = 0; i < kEval; ++i) {
      if (!need[i / kPoints]) continue;
      if (q[i] > 0)
        log[i] += sign * std::log(q[i]);
      else
        zeros[i] += sign;  // unsigned: add then remove the same CPU
    }
  }
};

// Expected misses of accesses with own-gap histogram h when the others' window survival
// is exp(S.log - own) at each point (0 where another CPU's survival is 0); others_any:
// some other CPU has events of this kind (then a gap in the last bucket misses).
double misses(const double* h, const Sums& all, const std::array<double, kEval>& own, bool others_any) {
  double m = 0;
  for (uint32_t b = 0; b < kFinite; ++b) {
    if (h[b] <= 0) continue;
    const auto& pts = eval_points();
    const double lo = gap_lower(b), w = gap_upper(b) - lo, beta = slope(h, b);
    double s = 0, wsum = 0;
    for (int k = 0; k < kPoints; ++k) {
      const uint32_t i = b * kPoints + k;
      const uint32_t z = all.zeros[i] - (own[i] > 0 ? 0u : 1u);
      const double surv = z > 0 ? 0.0 : std::exp(all.log[i] - (own[i] > 0 ? std::log(own[i]) : 0.0));
      const double wk = 1 + beta * (pts[i] - lo - w / 2);  // the density at the point
      s += wk * (1.0 - std::min(surv, 1.0));
      wsum += wk;
    }
    m += h[b] * s / wsum;
  }
  if (others_any) m += h[kFinite];
  return m;
}

}  // namespace

void gap_model(const TopologyIndex& topo, std::span<const CpuGaps> cpus, double seconds, LineTraffic& out) {
  if (!(seconds > 0) || !std::isfinite(seconds))
    throw std::invalid_argument(fmt::format("gap model: interval of {} s", seconds));
  for (size_t i = 0; i < cpus.size(); ++i) {
    if (i > 0 && cpus[i].cpu <= cpus[i - 1].cpu)
      throw std::invalid_argument("gap model: CPUs must be ascending, each once");
    for (const auto* h : {&cpus[i].ww, &cpus[i].wa, &cpus[i].ra})
      for (double x : *h)
        if (!(x >= 0) || !std::isfinite(x))
          throw std::invalid_argument(fmt::format("gap model: cpu {}: a gap count of {}", cpus[i].cpu, x));
  }
  const double ns = seconds * 1e9;
  // Every CPU's window survival for any access (A) and for writes (W), summed as logs.
  thread_local Sums A, W;
  A = {};
  W = {};
  thread_local std::array<double, kEval> qa, qw;
  thread_local std::array<double, kGapBuckets> all;
  thread_local std::array<char, kFinite> need;  // buckets where some CPU's own gaps fall
  need.fill(0);
  for (const CpuGaps& c : cpus)
    for (uint32_t b = 0; b < kFinite; ++b) need[b] |= c.ww[b] > 0 || c.ra[b] > 0;
  size_t accessors = 0, writers = 0;
  for (const CpuGaps& c : cpus) {
    for (uint32_t b = 0; b < kGapBuckets; ++b) all[b] = c.wa[b] + c.ra[b];
    const double na = c.writes() + c.reads(), nw = c.writes();
    accessors += na > 0;
    writers += nw > 0;
    if (na <= 0) continue;  // survival 1 everywhere: adds nothing
    window_survival(all.data(), na / ns, need, qa);
    A.add(qa, need, +1);
    if (nw <= 0) continue;
    window_survival(c.ww.data(), nw / ns, need, qw);
    W.add(qw, need, +1);
  }
  thread_local std::vector<CpuAccessRate> rates;
  thread_local std::vector<std::pair<double, double>> given;
  rates.clear();
  given.clear();
  for (const CpuGaps& c : cpus) {
    for (uint32_t b = 0; b < kGapBuckets; ++b) all[b] = c.wa[b] + c.ra[b];
    const double nw = c.writes(), nr = c.reads(), na = nw + nr;
    if (nw > 0) window_survival(all.data(), na / ns, need, qa);  // c's own terms, taken out of the sums
    if (nr > 0) window_survival(c.ww.data(), nw / ns, need, qw);
    const bool other_access = accessors > (na > 0 ? 1u : 0u);
    const bool other_write = writers > (nw > 0 ? 1u : 0u);
    const double wx = other_access && nw > 0 ? misses(c.ww.data(), A, qa, true) : 0.0;
    const double rx = other_write && nr > 0 ? misses(c.ra.data(), W, qw, true) : 0.0;
    rates.push_back({c.cpu, nr / seconds, nw / seconds});
    given.emplace_back(rx / seconds, wx / seconds);
  }
  coherence_split(topo, rates, given, out);
}

LineTraffic gap_model(const TopologyIndex& topo, std::span<const CpuGaps> cpus, double seconds) {
  LineTraffic out;
  gap_model(topo, cpus, seconds, out);
  return out;
}

void GapTracker::feed(const LineAccess& a) {
  State& s = lines_[a.line][a.cpu];
  s.h.cpu = a.cpu;
  s.pending = true;
  const uint32_t since_a = s.any ? sh_gap_index(a.ts_ns - s.last_a) : kGapBuckets - 1;
  if (a.write) {
    const uint32_t since_w = s.wrote ? sh_gap_index(a.ts_ns - s.last_w) : kGapBuckets - 1;
    s.h.ww[since_w] += 1;
    s.h.wa[since_a] += 1;
    s.last_w = a.ts_ns;
    s.wrote = true;
  } else {
    s.h.ra[since_a] += 1;
  }
  s.last_a = a.ts_ns;
  s.any = true;
}

std::vector<CpuGaps> GapTracker::take(uint32_t line) {
  std::vector<CpuGaps> out;
  auto it = lines_.find(line);
  if (it == lines_.end()) return out;
  for (auto& [cpu, s] : it->second) {
    if (!s.pending) continue;
    out.push_back(s.h);
    s.h = CpuGaps{};
    s.h.cpu = cpu;
    s.pending = false;
  }
  return out;
}

std::vector<uint32_t> GapTracker::lines() const {
  std::vector<uint32_t> out;
  for (const auto& [line, cpus] : lines_)
    for (const auto& [cpu, s] : cpus)
      if (s.pending) {
        out.push_back(line);
        break;
      }
  return out;
}

}  // namespace schedhot
