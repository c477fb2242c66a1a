// Speed of the coherence model and the exact machine (src/model/coherence.h): figures
// printed (thread CPU time), nothing asserted. Run by hand: build/tests/schedhot_bench_coherence
//   - model: us per line with 8192 active CPUs (8 packages x 8 LLCs x 64 cores x 2 threads)
//   - gap model: us per line with 64 and 8192 active CPUs
//   - exact: accesses/s fed, seeded random streams over 64 and 8192 CPUs and 8 lines
#include <time.h>

#include <cstdio>
#include <random>
#include <vector>

#include "model/coherence.h"
#include "model/gaps.h"

using namespace schedhot;

namespace {

std::vector<CpuTopology> make_topo(int pkgs, int llcs, int cores, int smt) {
  std::vector<CpuTopology> t;
  int cpu = 0;
  for (int p = 0; p < pkgs; ++p)
    for (int l = 0; l < llcs; ++l)
      for (int c = 0; c < cores; ++c)
        for (int s = 0; s < smt; ++s)
          t.push_back(CpuTopology{.cpu = cpu++, .package = p, .die = 0, .core = l * cores + c,
                                  .llc = p * llcs + l, .node = p});
  return t;
}

// CPU time of this thread (the machine may be shared: wall time would count waiting).
double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

void bench_exact(const TopologyIndex& idx, uint32_t ncpus, double write_share) {
  const uint32_t lines = 8;
  const size_t n = 4'000'000;
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<uint32_t> cpu(0, ncpus - 1), line(0, lines - 1);
  std::bernoulli_distribution w(write_share);
  std::vector<LineAccess> s(n);
  for (size_t i = 0; i < n; ++i) s[i] = {i * 100, cpu(rng), line(rng), w(rng)};
  ExactCoherence ex(idx, lines, ncpus);
  const double t0 = cpu_seconds();
  for (const auto& a : s) ex.feed(a);
  const double sec = cpu_seconds() - t0;
  uint64_t xfers = 0;
  for (uint32_t l = 0; l < lines; ++l)
    for (const auto& k : ex.counts(l)) xfers += k.read_xfers + k.write_xfers;
  std::printf("exact: %5u CPUs, %u lines, %2.0f%% writes: %.1f M accesses/s (%.1f ns each; %.0f%% transfers)\n",
              ncpus, lines, 100 * write_share, double(n) / sec / 1e6, sec / double(n) * 1e9,
              100.0 * double(xfers) / double(n));
}

}  // namespace

int main() {
  const auto topo = make_topo(8, 8, 64, 2);
  const TopologyIndex idx(topo);
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> u(0, 1e4);
  std::vector<CpuAccessRate> in;
  for (const auto& t : topo) in.push_back({uint32_t(t.cpu), u(rng), u(rng) * 0.2});
  double sink = 0;
  const int iters = 300;
  double t0 = cpu_seconds();
  for (int i = 0; i < iters; ++i) sink += coherence_model(idx, in).total();
  const double sec = cpu_seconds() - t0;
  std::printf("model: %zu active CPUs: %.1f us per line (%.1f ns per CPU)  [checksum %.3g]\n", in.size(),
              sec / iters * 1e6, sec / iters / double(in.size()) * 1e9, sink / iters);
  std::vector<CpuAccessRate> few(in.begin(), in.begin() + 64);
  t0 = cpu_seconds();
  for (int i = 0; i < iters * 100; ++i) sink += coherence_model(idx, few).total();
  const double sec2 = cpu_seconds() - t0;
  std::printf("model: %zu active CPUs of 8192: %.2f us per line\n", few.size(), sec2 / (iters * 100) * 1e6);

  {
    // The gap model (model/gaps.h) of one line: every CPU's gaps spread over 12 buckets.
    std::vector<CpuGaps> g(in.size());
    for (size_t c = 0; c < in.size(); ++c) {
      g[c].cpu = in[c].cpu;
      for (uint32_t b = 10; b < 22; ++b) {
        g[c].ww[b] = g[c].wa[b] = in[c].writes_per_s / 12;
        g[c].ra[b + 2] = in[c].reads_per_s / 12;
      }
    }
    for (size_t n : {size_t(64), g.size()}) {
      const int it = n == 64 ? iters * 10 : 10;
      t0 = cpu_seconds();
      for (int i = 0; i < it; ++i) sink += gap_model(idx, std::span(g).first(n), 1.0).total();
      const double s3 = cpu_seconds() - t0;
      std::printf("gap model: %zu active CPUs: %.1f us per line (%.1f ns per CPU)\n", n, s3 / it * 1e6,
                  s3 / it / double(n) * 1e9);
    }
  }

  const auto small = make_topo(2, 2, 8, 2);
  const TopologyIndex sidx(small);
  bench_exact(sidx, 64, 0.2);
  bench_exact(idx, 8192, 0.2);
  bench_exact(idx, 8192, 0.01);  // long holder lists: writes clear up to ~100 readers
  return 0;
}
