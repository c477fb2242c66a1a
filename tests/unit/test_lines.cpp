// model/lines: probe counters -> per-line, per-CPU reads and writes (ProbeSpec::accesses
// and the kernel layout), the seed patches' what-if layouts, and the accumulated model.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>

#include "model/lines.h"
#include "probe/attacher.h"
#include "analysis/cachelines.h"
#include "output/metrics.h"
#include "test_util.h"

using namespace schedhot;
using namespace schedhot::testing;

namespace {

/// The 6.18 development VM's layout (probe/layout.h live test): inline 256-bit masks.
CoherenceLayout layout_618() {
  CoherenceLayout L;
  L.line_bytes = 64;
  NohzLayout n;
  n.size = 64;
  n.idle_cpus_mask = {"idle_cpus_mask", 0, 32};
  n.mask_bytes = 32;
  n.nr_cpus = MemberLayout{"nr_cpus", 32, 4};
  n.has_blocked = {"has_blocked", 36, 4};
  n.needs_update = MemberLayout{"needs_update", 40, 4};
  n.next_balance = {"next_balance", 48, 8};
  n.next_blocked = {"next_blocked", 56, 8};
  L.nohz = n;
  CpupriLayout cp;
  cp.root_domain_size = 4360;
  cp.cpupri_offset = 304;
  cp.nr_prios = 101;
  cp.vec_size = 40;
  cp.count_offset = 0;
  cp.count_size = 4;
  cp.mask_offset = 8;
  cp.mask_bytes = 32;
  cp.cpu_to_pri_offset = 4040;
  L.cpupri = cp;
  return L;
}

struct Fixture {
  Meta m;
  Sample a, b;
  explicit Fixture(uint32_t ncpus) : m(synthetic_meta(ncpus)), a(make_sample(m)), b(make_sample(m)) {
    b.mono_ns = 2'000'000'000;  // a 2 s interval
  }
  void set(const char* probe, int cpu, const char* field, uint64_t v, uint32_t idx = 0) {
    const int p = m.probe_index(probe);
    b.probes[size_t(p)].words.mut(word(m, p, cpu, field, idx)) = v;
  }
  std::vector<LineAccesses> lines(const CoherenceLayout& L) const { return line_accesses(Interval(m, a, b), L); }
};

const LineAccesses* find(const std::vector<LineAccesses>& v, const std::string& object, int64_t line = 0) {
  for (auto& l : v)
    if (l.key.object == object && l.key.line == line) return &l;
  return nullptr;
}

/// Summed reads and writes/s of a line from one CPU.
std::pair<double, double> rw(const LineAccesses& l, int cpu) {
  double r = 0, w = 0;
  for (auto& x : l.rates)
    if (x.cpu == cpu) r += x.reads, w += x.writes;
  return {r, w};
}

}  // namespace

TEST(Lines, InlineNohzLineHoldsTheMaskAndTheScalars) {
  Fixture f(4);
  f.set("nohz_exit", 0, "worked", 20);  // 10/s: mask bit and nr_cpus, one line: one write each
  f.set("nohz_exit", 0, "calls", 500);
  f.set("nohz_kick", 1, "calls", 200);
  f.set("nohz_kick", 1, "idle_ticks", 80);  // 60 busy ticks/s read nr_cpus, has_blocked, next_balance
  auto v = f.lines(layout_618());
  ASSERT_EQ(v.size(), 1u) << "OFFSTACK=n, 256 CPUs: one 64-byte line";
  const LineAccesses& l = v[0];
  EXPECT_EQ(l.key.object, "nohz");
  EXPECT_EQ(l.name, "nohz");
  EXPECT_EQ(l.family, "nohz");
  EXPECT_EQ(rw(l, 0), std::make_pair(0.0, 10.0));
  EXPECT_EQ(rw(l, 1), std::make_pair(60.0, 0.0));
  for (const char* fld : {"nohz.idle_cpus_mask[cpu]", "nohz.nr_cpus", "nohz.has_blocked", "nohz.next_balance"})
    EXPECT_NE(std::find(l.fields.begin(), l.fields.end(), fld), l.fields.end()) << fld;
}

TEST(Lines, OffstackMaskIsItsOwnLineAndSevenZeroHasNoNrCpus) {
  Fixture f(4);
  f.set("nohz_exit", 2, "calls", 100);
  f.set("nohz_exit", 2, "worked", 20);
  auto v61 = f.lines(assumed_layout("6.1.0-57-cloud-amd64", 64));
  ASSERT_EQ(v61.size(), 2u);
  EXPECT_EQ(rw(*find(v61, "nohz"), 2).second, 10.0) << "atomic_dec(&nohz.nr_cpus)";
  EXPECT_EQ(rw(*find(v61, "nohz.idle_cpus_mask"), 2).second, 10.0) << "cpumask_clear_cpu in the separate bitmap";
  EXPECT_FALSE(find(v61, "nohz.idle_cpus_mask")->assumptions.empty()) << "its placement is assumed";
  auto v73 = f.lines(assumed_layout("7.3.4+deb13-cloud-amd64", 64));
  ASSERT_EQ(v73.size(), 1u) << "7.0 removed nr_cpus: exit no longer writes the nohz line";
  EXPECT_EQ(v73[0].key.object, "nohz.idle_cpus_mask");
}

TEST(Lines, OneEventWritesALineOnceWithinItsBound) {
  Fixture f(4);
  // 25 calls/s, 10/s of them first: has_blocked every call, and mask, nr_cpus, needs_update
  // on the first ones, all in the inline line: 25 writes/s, not 55.
  f.set("nohz_enter", 3, "calls", 50);
  f.set("nohz_enter", 3, "first", 20);
  auto v = f.lines(layout_618());
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(rw(v[0], 3), std::make_pair(0.0, 25.0));
}

TEST(Lines, CpupriSetWritesItsVectorsAndCpuToPri) {
  Fixture f(20);
  const int cpu = 17;
  f.set("cpupri_set", cpu, "calls", 60);    // 30/s
  f.set("cpupri_set", cpu, "noop", 20);     // 10/s change nothing
  f.set("cpupri_set", cpu, "vec_set", 20, 0);
  f.set("cpupri_set", cpu, "vec_clear", 20, 0);
  f.set("cpupri_set", cpu, "vec_set", 20, 50);
  f.set("cpupri_set", cpu, "vec_clear", 20, 50);
  auto v = f.lines(assumed_layout("6.1.0-57-cloud-amd64", 64));  // cpupri at rd+184, 16 B vectors
  // vec 0's count at rd+184: line 2; vec 50's at 184 + 800 = 984: line 15
  const LineAccesses* l2 = find(v, "root_domain", 2);
  const LineAccesses* l15 = find(v, "root_domain", 15);
  ASSERT_TRUE(l2 && l15);
  EXPECT_EQ(l2->name, "root_domain line 2 (cpupri vec 0)");
  EXPECT_EQ(l15->name, "root_domain line 15 (cpupri vecs 48-52)");
  EXPECT_EQ(rw(*l2, cpu), std::make_pair(0.0, 20.0)) << "inc on set, dec on clear: 20 writes/s";
  EXPECT_EQ(rw(*l15, cpu), std::make_pair(0.0, 20.0));
  ASSERT_TRUE(find(v, "cpupri.pri_to_cpu[0].mask") && find(v, "cpupri.pri_to_cpu[50].mask"));
  EXPECT_EQ(rw(*find(v, "cpupri.pri_to_cpu[50].mask"), cpu).second, 20.0);
  // cpu_to_pri[17] is byte 68: line 1 of the array; 20 changes/s write it, the 10 noops read it
  const LineAccesses* c2p = find(v, "cpupri.cpu_to_pri", 1);
  ASSERT_TRUE(c2p);
  EXPECT_EQ(rw(*c2p, cpu), std::make_pair(10.0, 20.0));
  EXPECT_EQ(find(v, "cpupri.cpu_to_pri", 0), nullptr);
}

TEST(Lines, WhatIfLayoutsMoveTheLaterMembersDown) {
  const CoherenceLayout L = layout_618();
  const CoherenceLayout a = apply_what_if(L, what_ifs()[0]);
  ASSERT_TRUE(a.nohz);
  EXPECT_FALSE(a.nohz->nr_cpus);
  EXPECT_EQ(a.nohz->has_blocked.offset, 32);
  EXPECT_EQ(a.nohz->needs_update->offset, 36);
  EXPECT_EQ(a.nohz->next_balance.offset, 40);
  EXPECT_EQ(a.nohz->next_blocked.offset, 48);
  EXPECT_EQ(a.cpupri->vec_size, 40) << "the nohz patch leaves cpupri alone";
  const CoherenceLayout c = apply_what_if(L, what_ifs()[1]);
  EXPECT_FALSE(c.cpupri->count_offset);
  EXPECT_EQ(c.cpupri->vec_size, 32);
  EXPECT_EQ(c.cpupri->mask_offset, 0);
  EXPECT_EQ(c.cpupri->cpu_to_pri_offset, 4040 - 8 * 101);
  const CoherenceLayout again = apply_what_if(a, what_ifs()[0]);
  EXPECT_EQ(again.nohz->has_blocked.offset, 32) << "already applied: unchanged";
}

TEST(Lines, AccumulatorGivesTheClosedFormOfSymmetricCpus) {
  // n CPUs, each reading the inline nohz line r/s (busy ticks) and writing it w/s
  // (exits that worked): L = n(r+w), Wt = nw; per CPU write misses w(L-r-w)/(L-r), read
  // misses r(Wt-w)/(r+Wt) (model/coherence.h).
  const int n = 8;
  const double r = 100, w = 40;
  Fixture f(n);
  for (int c = 0; c < n; ++c) {
    f.set("nohz_kick", c, "calls", uint64_t(2 * r));
    f.set("nohz_exit", c, "worked", uint64_t(2 * w));
    f.set("nohz_exit", c, "calls", uint64_t(2 * r));
  }
  f.m.layout = layout_618();
  CoherenceAccumulator acc(f.m);
  acc.add(Interval(f.m, f.a, f.b));
  const CoherenceSummary s = acc.summary();
  ASSERT_EQ(s.lines.size(), 1u);
  const double L = n * (r + w), Wt = n * w;
  const double per_cpu = w * (L - r - w) / (L - r) + r * (Wt - w) / (r + Wt);
  EXPECT_NEAR(s.lines[0].traffic.total(), n * per_cpu, 1e-6);
  EXPECT_NEAR(s.cpu_xfers_per_s(3), per_cpu, 1e-9);
  EXPECT_DOUBLE_EQ(s.lines[0].reads_per_s, n * r);
  EXPECT_DOUBLE_EQ(s.lines[0].writes_per_s, n * w);
  // the probes share the CPU's misses by their accesses: kick's reads, exit's writes
  double kick = 0, exit = 0;
  for (auto [p, x] : s.lines[0].by_probe) (f.m.probes[size_t(p)].name == "nohz_kick" ? kick : exit) += x;
  EXPECT_NEAR(kick, n * r * (Wt - w) / (r + Wt), 1e-6);
  EXPECT_NEAR(exit, n * w * (L - r - w) / (L - r), 1e-6);
  // what-if nr_cpus: the mask stays in the line, so the inline layout saves nothing
  ASSERT_EQ(s.what_if.size(), 4u) << "every seed patch has a line";
  EXPECT_TRUE(s.what_if[0].applies);
  EXPECT_TRUE(s.what_if[1].applies) << "6.18 still has cpupri_vec.count";
  EXPECT_EQ(s.what_if[2].what.id, "bcast_lock_line");
  EXPECT_FALSE(s.what_if[2].applies);
  EXPECT_NE(s.what_if[2].reason.find("unknown"), std::string::npos) << s.what_if[2].reason;
  EXPECT_EQ(s.what_if[3].what.id, "ilb_mc_capable");
  EXPECT_FALSE(s.what_if[3].applies);
  EXPECT_FALSE(s.what_if[3].reason.empty());
  EXPECT_NEAR(s.what_if[0].after_xfers_per_s, s.what_if[0].before_xfers_per_s, 1e-6);
}

TEST(Lines, NrCpusWhatIfOnOffstackLeavesOnlyTheMaskWrites) {
  // Same symmetric load on Debian's OFFSTACK layout: the nohz line is read r and written w
  // (nr_cpus) by every CPU; the bitmap is written w. Without nr_cpus the nohz line has
  // readers only (no transfers) and the bitmap is unchanged.
  const int n = 8;
  const double r = 100, w = 40;
  Fixture f(n);
  for (int c = 0; c < n; ++c) {
    f.set("nohz_kick", c, "calls", uint64_t(2 * r));
    f.set("nohz_exit", c, "worked", uint64_t(2 * w));
    f.set("nohz_exit", c, "calls", uint64_t(2 * r));
  }
  CoherenceAccumulator acc(f.m);  // no layout recorded: Debian 6.x assumed (6.12.0-test)
  acc.add(Interval(f.m, f.a, f.b));
  const CoherenceSummary s = acc.summary();
  const double L = n * (r + w), Wt = n * w;
  const double line = n * (w * (L - r - w) / (L - r) + r * (Wt - w) / (r + Wt));
  const double mask = n * w * (n - 1) / n;  // writes only: w (nw - w) / (nw)
  const WhatIfResult& wi = s.what_if[0];
  ASSERT_TRUE(wi.applies);
  EXPECT_NEAR(wi.before_xfers_per_s, line + mask, 1e-6);
  EXPECT_NEAR(wi.after_xfers_per_s, mask, 1e-6);
  EXPECT_FALSE(s.notes.empty()) << "the assumed layout is said";
}

TEST(Lines, ProbesTheReportDoesNotCountAreNotModeled) {
  // A probe the report shows as unavailable (or blind) adds nothing to any line, even
  // when its slots hold counts (a status changed by a NOTE, a hand-made file).
  Fixture f(4);
  f.set("cpupri_set", 1, "calls", 60);
  f.set("cpupri_set", 1, "vec_set", 20, 0);
  ASSERT_FALSE(f.lines(layout_618()).empty());
  f.m.probes[size_t(f.m.probe_index("cpupri_set"))].status.attached = false;
  EXPECT_TRUE(f.lines(layout_618()).empty());
}

TEST(Lines, CpuTotalsEqualTheSumOverLines) {
  Fixture f(4);
  f.set("nohz_kick", 1, "calls", 200);
  f.set("nohz_exit", 2, "calls", 100);
  f.set("nohz_exit", 2, "worked", 20);
  f.m.layout = assumed_layout("6.1.0-57-cloud-amd64", 64);
  CoherenceAccumulator acc(f.m);
  acc.add(Interval(f.m, f.a, f.b));
  CoherenceSummary s = acc.summary();
  for (int c = 0; c < 4; ++c) {
    const double fast = s.cpu_xfers_per_s(c);
    CoherenceSummary slow = s;
    slow.cpu_totals.clear();
    EXPECT_DOUBLE_EQ(fast, slow.cpu_xfers_per_s(c)) << "cpu " << c;
  }
  EXPECT_GT(s.cpu_xfers_per_s(1), 0.0);
}

TEST(Lines, NaturalOrderComparesDigitRunsAsNumbers) {
  EXPECT_TRUE(natural_less("cpupri.pri_to_cpu[2].mask", "cpupri.pri_to_cpu[10].mask"));
  EXPECT_FALSE(natural_less("cpupri.pri_to_cpu[10].mask", "cpupri.pri_to_cpu[2].mask"));
  EXPECT_TRUE(natural_less("cpupri.pri_to_cpu[99].mask", "cpupri.pri_to_cpu[100].mask"));
  EXPECT_TRUE(natural_less("a", "ab"));
  EXPECT_FALSE(natural_less("x7", "x7"));
  EXPECT_TRUE(natural_less("x07", "x8"));
  EXPECT_TRUE(natural_less("nohz", "nohz.idle_cpus_mask"));
  // possible_lines() of an OFFSTACK layout lists the 101 masks in priority order.
  const Meta m = synthetic_meta(4);
  std::vector<int> prios;
  for (const PossibleLine& l : possible_lines(m, assumed_layout("6.1.0-57-cloud-amd64", 64))) {
    int p = -1;
    if (std::sscanf(l.key.object.c_str(), "cpupri.pri_to_cpu[%d].mask", &p) == 1) prios.push_back(p);
  }
  ASSERT_FALSE(prios.empty());
  EXPECT_TRUE(std::is_sorted(prios.begin(), prios.end()));
}

// ---- the gap model from the probes' gap state (Sample::gaps, Meta::gap_lines) ----------

namespace {

/// A recording with gap state: n CPUs reading the nohz line r/s and writing it w/s (the
/// counters as in AccumulatorGivesTheClosedFormOfSymmetricCpus) over a 2 s interval, the
/// line's per-CPU gap counts made by GapTracker from a synthetic stream with exactly the
/// counters' reads and writes in the interval (after a warm-up of the same length).
struct GapFixture : Fixture {
  std::vector<CpuAccessRate> rates;  ///< the plan's rates of the nohz line, per CPU
  std::map<uint32_t, CpuGaps> gaps;  ///< per CPU: the interval's histograms of the line
  GapFixture(int n, double r, double w, const CoherenceLayout& L) : Fixture(uint32_t(n)) {
    for (int c = 0; c < n; ++c) {
      set("nohz_kick", c, "calls", uint64_t(2 * r));
      set("nohz_exit", c, "worked", uint64_t(2 * w));
      set("nohz_exit", c, "calls", uint64_t(2 * r));
    }
    m.layout = L;
    m.gap_lines = {{"bogus", 3}, {"nohz", 0}, {"tick_broadcast_lock", 0}};
    a.mono_ns = 0;
    b.mono_ns = 2'000'000'000;
    const std::vector<LineAccesses> all = lines(L);
    const LineAccesses* l = find(all, "nohz");
    for (const LineCpuRate& x : l->rates) {
      if (rates.empty() || rates.back().cpu != uint32_t(x.cpu)) rates.push_back({uint32_t(x.cpu), 0, 0});
      rates.back().reads_per_s += x.reads;
      rates.back().writes_per_s += x.writes;
    }
  }
  /// Each CPU's accesses: reads and writes of the rates x 2 s in each of [-2, 0) s and
  /// [0, 2) s, in bursts of `burst` accesses 1 us apart at uniform random times (burst 1:
  /// a Poisson stream), marks shuffled; the histograms of [0, 2) s kept.
  void stream(int burst, uint64_t seed) {
    std::mt19937_64 rng(seed);
    GapTracker t;
    for (int half = 0; half < 2; ++half) {
      std::vector<LineAccess> all;
      for (const CpuAccessRate& c : rates) {
        const int nr = int(std::lround(c.reads_per_s * 2)), nw = int(std::lround(c.writes_per_s * 2));
        std::vector<bool> marks(size_t(nr), false);
        marks.insert(marks.end(), size_t(nw), true);
        std::shuffle(marks.begin(), marks.end(), rng);
        std::uniform_int_distribution<uint64_t> at(0, 2'000'000'000 - 1 - uint64_t(burst) * 1000);
        std::vector<uint64_t> ts;
        for (size_t i = 0; i < marks.size(); i += size_t(burst)) {
          const uint64_t t0 = uint64_t(half) * 2'000'000'000 + at(rng);
          for (size_t k = 0; k < size_t(burst) && i + k < marks.size(); ++k) ts.push_back(t0 + k * 1000);
        }
        std::sort(ts.begin(), ts.end());
        for (size_t i = 0; i < marks.size(); ++i) all.push_back({ts[i], c.cpu, 0, marks[i]});
      }
      std::sort(all.begin(), all.end(), [](const LineAccess& x, const LineAccess& y) { return x.ts_ns < y.ts_ns; });
      for (const LineAccess& x : all) t.feed(x);
      const std::vector<CpuGaps> g = t.take(0);
      if (half == 1)
        for (const CpuGaps& c : g) gaps[c.cpu] = c;
    }
  }
  /// b's gap batch over (from_ns, b]: the counts of the CPUs in `with` (all when empty),
  /// as the probes send them (index 1: nohz line 0), plus counts the model must ignore (a
  /// line of no plan, an index beyond gap_lines).
  void batch(uint64_t from_ns, const std::vector<uint32_t>& with = {}) {
    GapBatch gb;
    gb.from_ns = from_ns;
    for (const auto& [cpu, g] : gaps) {
      if (!with.empty() && std::find(with.begin(), with.end(), cpu) == with.end()) continue;
      GapCounts c;
      c.cpu = cpu;
      c.line = 1;
      for (uint32_t k = 0; k < kGapBuckets; ++k) {
        c.ww[k] = uint32_t(std::lround(g.ww[k]));
        c.wa[k] = uint32_t(std::lround(g.wa[k]));
        c.ra[k] = uint32_t(std::lround(g.ra[k]));
      }
      GapCounts bogus = c, beyond = c;
      bogus.line = 0;
      beyond.line = 7;
      gb.counts.push_back(bogus);
      gb.counts.push_back(c);
      gb.counts.push_back(beyond);
    }
    b.gaps = gb;
  }
  /// The CPUs' histograms of `with` (all when empty) as the accumulator models them.
  std::vector<CpuGaps> modeled(const std::vector<uint32_t>& with = {}) const {
    std::vector<CpuGaps> out;
    for (const CpuAccessRate& c : rates) {
      if (with.empty() || std::find(with.begin(), with.end(), c.cpu) != with.end()) out.push_back(gaps.at(c.cpu));
      else out.push_back(poisson_gaps(c.cpu, c.reads_per_s, c.writes_per_s, 2.0));
    }
    return out;
  }
  const LineSummary* nohz(CoherenceSummary&&) const = delete;  // would point into a temporary
  const LineSummary* nohz(const CoherenceSummary& s) const {
    for (const LineSummary& l : s.lines)
      if (l.key.object == "nohz" && l.key.line == 0) return &l;
    return nullptr;
  }
};

}  // namespace

TEST(GapLines, BurstsOfFourTakeTheGapModelOfTheProbesCounts) {
  GapFixture f(8, 100, 40, layout_618());
  f.stream(4, 1);
  f.batch(f.a.mono_ns);
  CoherenceAccumulator acc(f.m);
  acc.add(Interval(f.m, f.a, f.b));
  const CoherenceSummary s = acc.summary();
  const LineSummary* l = f.nohz(s);
  ASSERT_NE(l, nullptr);
  const TopologyIndex topo(f.m.host.topology);
  const LineTraffic gap = gap_model(topo, f.modeled(), 2.0);
  const LineTraffic ia = coherence_model(topo, f.rates);
  EXPECT_NEAR(l->traffic.total(), gap.total(), 1e-9 * gap.total());
  EXPECT_LT(l->traffic.total(), 0.9 * ia.total()) << "gap " << l->traffic.total() << " independent " << ia.total();
  std::printf("  bursts of 4, 8 CPUs: gap model %.1f xfer/s, independent arrivals %.1f (x%.2f)\n", l->traffic.total(),
              ia.total(), l->traffic.total() / ia.total());
  EXPECT_EQ(l->estimate, "gap model");
  EXPECT_EQ(s.estimate, "gap model");
  // per CPU and per probe from the line's per-CPU gap traffic
  double cpus = 0, probes = 0;
  for (const CpuXfers& c : l->traffic.cpus) cpus += c.total();
  for (auto [p, x] : l->by_probe) probes += x;
  EXPECT_NEAR(cpus, gap.total(), 1e-6);
  EXPECT_NEAR(probes, gap.total(), 1e-6);
  EXPECT_NEAR(s.cpu_xfers_per_s(3), gap.cpus[3].total(), 1e-9);
}

TEST(GapLines, ABatchThatDoesNotCoverTheIntervalIsIgnored) {
  GapFixture f(8, 100, 40, layout_618());
  f.stream(4, 2);
  f.batch(f.a.mono_ns + 1);  // from a sample the interval does not start at
  CoherenceAccumulator acc(f.m);
  acc.add(Interval(f.m, f.a, f.b));
  const CoherenceSummary s = acc.summary();
  const LineSummary* l = f.nohz(s);
  ASSERT_NE(l, nullptr);
  const LineTraffic ia = coherence_model(TopologyIndex(f.m.host.topology), f.rates);
  EXPECT_NEAR(l->traffic.total(), ia.total(), 1e-9 * ia.total());
  EXPECT_EQ(l->estimate, "independent arrivals");
  EXPECT_EQ(s.estimate, "independent arrivals");
}

TEST(GapLines, CpusWithoutCountsAreSynthesizedFromTheirRates) {
  // A Poisson stream: half the CPUs have the probes' counts, the others (their tables
  // full) are given a Poisson stream's histograms of their rates; the mix is the
  // independent-arrivals figure.
  GapFixture f(8, 1000, 400, layout_618());
  f.stream(1, 3);
  const std::vector<uint32_t> half = {0, 2, 4, 6};
  f.batch(f.a.mono_ns, half);
  CoherenceAccumulator acc(f.m);
  acc.add(Interval(f.m, f.a, f.b));
  const CoherenceSummary s = acc.summary();
  const LineSummary* l = f.nohz(s);
  ASSERT_NE(l, nullptr);
  const TopologyIndex topo(f.m.host.topology);
  const LineTraffic ia = coherence_model(topo, f.rates);
  EXPECT_NEAR(l->traffic.total(), ia.total(), 0.02 * ia.total()) << "gap " << l->traffic.total();
  EXPECT_NEAR(l->traffic.total(), gap_model(topo, f.modeled(half), 2.0).total(), 1e-9 * ia.total());
  EXPECT_EQ(l->estimate, "gap model");
  std::printf("  Poisson, 4 of 8 CPUs synthesized: gap model %.1f xfer/s, independent arrivals %.1f (%+.2f %%)\n",
              l->traffic.total(), ia.total(), 100 * (l->traffic.total() / ia.total() - 1));
  // every CPU synthesized: the Poisson histograms alone give the same figure
  const LineTraffic all = gap_model(topo, f.modeled({99}), 2.0);
  EXPECT_NEAR(all.total(), ia.total(), 0.02 * ia.total());
}

TEST(GapLines, AccessesNoTableKeptAreCountedInTheSummary) {
  // GapBatch::full: the CPUs whose 16-line table was full; their accesses to the lines left
  // out are the Poisson mix above, and the summary says how many there were.
  GapFixture f(8, 1000, 400, layout_618());
  f.stream(1, 3);
  f.batch(f.a.mono_ns, {0, 2, 4, 6});
  f.b.gaps->full = 1234;
  CoherenceAccumulator acc(f.m);
  acc.add(Interval(f.m, f.a, f.b));
  const CoherenceSummary s = acc.summary();
  EXPECT_EQ(s.gap_full, 1234u);
  acc.add(Interval(f.m, f.a, f.b));  // summed over the intervals
  EXPECT_EQ(acc.summary().gap_full, 2468u);
  // a batch without counts (every table full, or the CPUs' lines idle) still counts its full
  f.b.gaps->counts.clear();
  f.b.gaps->full = 10;
  CoherenceAccumulator empty(f.m);
  empty.add(Interval(f.m, f.a, f.b));
  EXPECT_EQ(empty.summary().gap_full, 10u);
  EXPECT_EQ(empty.summary().estimate, "independent arrivals");
  // a file's count near 2^64 saturates rather than wrapping
  f.b.gaps->full = UINT64_MAX - 1;
  acc.add(Interval(f.m, f.a, f.b));
  EXPECT_EQ(acc.summary().gap_full, UINT64_MAX);
  // a batch that does not cover the interval is not used, nor counted
  f.b.gaps->from_ns = f.a.mono_ns + 1;
  CoherenceAccumulator other(f.m);
  other.add(Interval(f.m, f.a, f.b));
  EXPECT_EQ(other.summary().gap_full, 0u);
}

TEST(GapLines, PoissonGapsSpreadTheCountsByTheExponentialCdf) {
  const CpuGaps g = poisson_gaps(5, 1000, 250, 2.0);
  EXPECT_EQ(g.cpu, 5u);
  EXPECT_NEAR(g.reads(), 2000, 1e-6);
  EXPECT_NEAR(g.writes(), 500, 1e-6);
  double wa = 0;
  for (double x : g.wa) wa += x;
  EXPECT_NEAR(wa, 500, 1e-6);
  // the median gap since the last access (rate 1250/s) is ln 2 / 1250 s = 554.5 us
  double below = 0;
  for (uint32_t b = 0; b < kGapBuckets && gap_upper(b) <= 554.5e3; ++b) below += g.ra[b];
  EXPECT_LT(below, 1000);
  EXPECT_GT(below, 600);
  const CpuGaps z = poisson_gaps(1, 100, 0, 2.0);
  EXPECT_EQ(z.writes(), 0);
  const CpuGaps none = poisson_gaps(1, 0, 0, 2.0);
  EXPECT_EQ(none.reads() + none.writes(), 0);
  const CpuGaps reads_only = poisson_gaps(1, 100, 0, 2.0);  // no writes: their rate 0
  EXPECT_NEAR(reads_only.ra[kGapBuckets - 1], 0, 1e-6);
}

TEST(GapLines, SampledCountsScaleWithoutBias) {
  GapCounts g;
  g.ww[4] = 1;
  g.wa[7] = 3;
  g.ra[10] = 1000;
  uint64_t rng = 29;
  GapCounts same = g;
  scale_gap_counts(same, 1.0, rng);
  EXPECT_EQ(same, g) << "scale 1: every event was noted";
  double sum = 0;
  for (int i = 0; i < 4000; ++i) {
    GapCounts x = g;
    scale_gap_counts(x, 2.5, rng);
    EXPECT_TRUE(x.ww[4] == 2 || x.ww[4] == 3) << x.ww[4];
    EXPECT_TRUE(x.wa[7] == 7 || x.wa[7] == 8) << x.wa[7];
    EXPECT_EQ(x.ra[10], 2500u);
    EXPECT_EQ(x.ra[11], 0u);
    sum += x.ww[4];
  }
  EXPECT_NEAR(sum / 4000, 2.5, 0.05) << "rounded up half the time";
  GapCounts big;
  big.ww[0] = 4'000'000'000u;
  scale_gap_counts(big, 3.0, rng);
  EXPECT_EQ(big.ww[0], 4294967295u) << "at most 2^32-1";
}

// A sampled recording's counts are estimates of every gap (the probes' samples scaled by
// events / samples, scale_gap_counts): one gap in 4 kept at random, scaled by 4, gives the
// figure of every gap within 5 %.
TEST(GapLines, ScaledSamplesGiveTheFigureOfEveryGap) {
  GapFixture f(8, 100, 40, layout_618());
  f.stream(4, 7);
  const TopologyIndex topo(f.m.host.topology);
  const double want = gap_model(topo, f.modeled(), 2.0).total();
  std::mt19937_64 rng(11);
  uint64_t round = 5;
  for (auto& [cpu, g] : f.gaps) {
    GapCounts c;
    for (uint32_t b = 0; b < kGapBuckets; ++b) {
      c.ww[b] = uint32_t(std::binomial_distribution<int>(int(std::lround(g.ww[b])), 0.25)(rng));
      c.wa[b] = uint32_t(std::binomial_distribution<int>(int(std::lround(g.wa[b])), 0.25)(rng));
      c.ra[b] = uint32_t(std::binomial_distribution<int>(int(std::lround(g.ra[b])), 0.25)(rng));
    }
    scale_gap_counts(c, 4.0, round);
    for (uint32_t b = 0; b < kGapBuckets; ++b) {
      g.ww[b] = c.ww[b];
      g.wa[b] = c.wa[b];
      g.ra[b] = c.ra[b];
    }
  }
  f.batch(f.a.mono_ns);
  f.m.gap_samples_per_s = 4000;
  CoherenceAccumulator acc(f.m);
  acc.add(Interval(f.m, f.a, f.b));
  const auto lines = acc.summary();  // f.nohz points into it
  const LineSummary* l = f.nohz(lines);
  ASSERT_NE(l, nullptr);
  EXPECT_NEAR(l->traffic.total() / want, 1.0, 0.05) << l->traffic.total() << " against " << want;
}

TEST(GapLines, ThePeriodAimsAtTheSampleRate) {
  EXPECT_EQ(gap_period(1000, 4000), 1u);
  EXPECT_EQ(gap_period(4000, 4000), 1u);
  EXPECT_EQ(gap_period(4001, 4000), 2u);
  EXPECT_EQ(gap_period(5e6, 4000), 1250u);
  EXPECT_EQ(gap_period(1e15, 4000), 1u << 20) << "bpf/gaps.bpf.c's bound";
  EXPECT_EQ(gap_period(5e6, 0), 1u) << "0: every event";
  EXPECT_EQ(gap_period(std::nan(""), 4000), 1u);
  EXPECT_EQ(gap_period(-5, 4000), 1u);
  EXPECT_EQ(gap_period(0, 4000), 1u);
}

TEST(GapLines, EstimatesAreLabelledPerLineAndOverTheSpan) {
  EXPECT_EQ(estimate_name(0, 0), "independent arrivals");
  EXPECT_EQ(estimate_name(0, 2), "independent arrivals");
  EXPECT_EQ(estimate_name(2, 2), "gap model");
  EXPECT_EQ(estimate_name(1, 4), "gap model, 25% of the time");
  EXPECT_EQ(estimate_name(0.001, 4), "gap model, 1% of the time");
  EXPECT_EQ(estimate_name(3.999, 4), "gap model, 99% of the time");

  GapFixture f(4, 100, 40, layout_618());
  f.set("bcast_lock", 1, "calls", 300);  // tick_broadcast_lock: counters, no gap counts
  f.stream(4, 4);
  f.batch(f.a.mono_ns);
  CoherenceAccumulator acc(f.m);
  acc.add(Interval(f.m, f.a, f.b));
  // a second interval of the same length without gap counts (b -> c: the counters move on)
  Sample c = f.b;
  c.mono_ns = f.b.mono_ns + 2'000'000'000;
  c.gaps.reset();
  for (size_t p = 0; p < c.probes.size(); ++p)
    for (size_t i = 0; i < c.probes[p].words.size(); ++i) c.probes[p].words.mut(i) += f.b.probes[p].words[i] - f.a.probes[p].words[i];
  CoherenceSummary one = acc.summary();
  const LineSummary* lock = nullptr;
  for (const LineSummary& l : one.lines)
    if (l.key.object == "tick_broadcast_lock") lock = &l;
  ASSERT_NE(lock, nullptr) << "the lock's line is modeled";
  EXPECT_EQ(lock->estimate, "independent arrivals") << "no CPU has counts for it";
  EXPECT_EQ(f.nohz(one)->estimate, "gap model");
  EXPECT_EQ(one.estimate, "gap model");
  acc.add(Interval(f.m, f.b, c));
  const CoherenceSummary two = acc.summary();
  EXPECT_EQ(f.nohz(two)->estimate, "gap model, 50% of the time");
  EXPECT_EQ(two.estimate, "gap model, 50% of the time");
  // of(): one interval alone
  EXPECT_EQ(acc.of(Interval(f.m, f.b, c)).estimate, "independent arrivals");
  EXPECT_EQ(acc.of(Interval(f.m, f.a, f.b)).estimate, "gap model");
}

TEST(GapLines, WhatIfsScaleTheAfterFigureByTheBeforeGapRatio) {
  // Debian's OFFSTACK layout: nr_cpus removed leaves the nohz line read only; the gap
  // counts cover the nohz line (not the mask), so the after figure is the independent-
  // arrivals one times before's gap/independent-arrivals ratio.
  const CoherenceLayout L = assumed_layout("6.1.0-test", 64);
  GapFixture f(8, 100, 40, L);
  f.stream(4, 5);
  f.batch(f.a.mono_ns);
  CoherenceAccumulator gap(f.m);
  const CoherenceSummary g = gap.of(Interval(f.m, f.a, f.b));
  Sample plain = f.b;
  plain.gaps.reset();
  CoherenceAccumulator ia(f.m);
  const CoherenceSummary i = ia.of(Interval(f.m, f.a, plain));
  const WhatIfResult& wg = g.what_if[0];
  const WhatIfResult& wi = i.what_if[0];
  ASSERT_TRUE(wg.applies);
  ASSERT_EQ(wg.what.id, "nohz_nr_cpus");
  double fam = 0;
  for (const LineSummary& l : g.lines)
    if (l.family == "nohz") fam += l.traffic.total();
  EXPECT_NEAR(wg.before_xfers_per_s, fam, 1e-6) << "before: the lines' figures";
  EXPECT_LT(wg.before_xfers_per_s, wi.before_xfers_per_s);
  EXPECT_NEAR(wg.after_xfers_per_s, wi.after_xfers_per_s * wg.before_xfers_per_s / wi.before_xfers_per_s, 1e-6);
  EXPECT_NEAR(wg.after_stall_ns_per_s,
              wi.after_stall_ns_per_s * wg.before_stall_ns_per_s / wi.before_stall_ns_per_s, 1e-3);
  EXPECT_EQ(wi.estimate, "independent arrivals");
  EXPECT_EQ(wg.estimate.rfind("gap model; after: independent arrivals x", 0), 0u) << wg.estimate;
  EXPECT_NE(wg.estimate.find("gap/independent-arrivals ratio"), std::string::npos) << wg.estimate;
  EXPECT_EQ(g.what_if[1].estimate, "independent arrivals") << "cpupri: no gap counts";
  std::printf("  what-if nohz_nr_cpus: independent arrivals %.1f -> %.1f, gap model %.1f -> %.1f xfer/s\n",
              wi.before_xfers_per_s, wi.after_xfers_per_s, wg.before_xfers_per_s, wg.after_xfers_per_s);
}

TEST(GapLines, ReportJsonAndMetricsCarryTheEstimate) {
  GapFixture f(4, 100, 40, layout_618());
  f.set("bcast_lock", 1, "calls", 300);
  f.stream(4, 6);
  f.batch(f.a.mono_ns);
  CoherenceAccumulator acc(f.m);
  const CoherenceSummary s = acc.of(Interval(f.m, f.a, f.b));
  const nlohmann::json c = cachelines_json(f.m, s, XferCost{}, 3, nullptr);
  EXPECT_EQ(c["estimate"], "gap model");
  for (const auto& l : c["lines"])
    EXPECT_EQ(l["estimate"], l["object"] == "nohz" ? "gap model" : "independent arrivals") << l["name"];
  EXPECT_NE(cachelines_text(c).find("Cachelines (model: gap model;"), std::string::npos);
  LineTransferTotals totals(f.m);
  bool gap = false, ia = false;
  for (const LineTotal& t : totals.add(s)) {
    if (t.name == "nohz" && t.estimate == "gap_model") gap = t.xfers > 0;
    if (t.name == "tick_broadcast_lock" && t.estimate == "independent_arrivals") ia = true;
    EXPECT_FALSE(t.name == "nohz" && t.estimate == "independent_arrivals") << "one counter, gap_model";
  }
  EXPECT_TRUE(gap);
  EXPECT_TRUE(ia);
}
