// model/lines: probe counters -> per-line, per-CPU reads and writes (ProbeSpec::accesses
// and the kernel layout), the seed patches' what-if layouts, and the accumulated model.
#include <gtest/gtest.h>

#include "model/lines.h"
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
    b.probes[size_t(p)].words[word(m, p, cpu, field, idx)] = v;
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
