#include <gtest/gtest.h>

#include <numeric>
#include <random>

#include "model/interval.h"
#include "test_util.h"

using namespace schedhot;
using namespace schedhot::testing;

TEST(Interval, CountsRatesAndArrays) {
  Meta m = synthetic_meta(4, {"nohz_kick"});
  Sample a = make_sample(m), b = make_sample(m);
  a.mono_ns = 1'000'000'000;
  b.mono_ns = 3'000'000'000;  // 2 s later
  int p = m.probe_index("cpupri_set");
  a.probes[p].words.mut(word(m, p, 1, "calls")) = 100;
  b.probes[p].words.mut(word(m, p, 1, "calls")) = 700;
  b.probes[p].words.mut(word(m, p, 3, "calls")) = 200;
  b.probes[p].words.mut(word(m, p, 2, "trans", SH_CP_NORMAL * 4 + SH_CP_RT)) = 9;
  b.probes[p].words.mut(word(m, p, 0, "trans", SH_CP_RT * 4 + SH_CP_NORMAL)) = 5;
  Interval iv(m, a, b);
  EXPECT_DOUBLE_EQ(iv.seconds(), 2.0);
  EXPECT_EQ(iv.count(p, "calls"), 800u);
  EXPECT_EQ(iv.count(p, "calls", 1), 600u);
  EXPECT_DOUBLE_EQ(iv.rate(p, "calls", 1), 300.0);
  EXPECT_EQ(iv.count(p, "trans"), 14u);
  EXPECT_EQ(iv.count(p, "trans", -1, SH_CP_NORMAL * 4 + SH_CP_RT), 9u);
  EXPECT_EQ(iv.count(p, "trans", 2, SH_CP_NORMAL * 4 + SH_CP_RT), 9u);
  EXPECT_EQ(iv.count(p, "trans", 0, SH_CP_NORMAL * 4 + SH_CP_RT), 0u);
  EXPECT_EQ(iv.count(p, "no_such_field"), 0u);
  EXPECT_EQ(iv.count(p, "calls", 4), 0u) << "CPU out of range";
  int k = m.probe_index("nohz_kick");
  EXPECT_FALSE(iv.present(k));
  EXPECT_EQ(iv.count(k, "calls"), 0u);
}

TEST(Interval, HistogramDeltaAndMax) {
  Meta m = synthetic_meta(2);
  Sample a = make_sample(m), b = make_sample(m);
  b.mono_ns = 1'000'000'000;
  int p = m.probe_index("cpupri_find");
  for (int i = 0; i < 100; ++i) add_hist(m, a, p, 0, "lat", 1000);  // before the window
  b = a;
  b.mono_ns = 1'000'000'000;
  for (int i = 0; i < 90; ++i) add_hist(m, b, p, 0, "lat", 400);
  for (int i = 0; i < 10; ++i) add_hist(m, b, p, 1, "lat", 5000);
  Interval iv(m, a, b);
  HistSummary s = iv.hist(p, "lat");
  EXPECT_EQ(s.count, 100u);
  EXPECT_DOUBLE_EQ(s.mean_ns, (90 * 400 + 10 * 5000) / 100.0);
  EXPECT_NEAR(s.p50, 400, 400 / 32.0);
  EXPECT_NEAR(s.p99, 5000, 5000 / 32.0);
  EXPECT_EQ(s.max_ns, 5000u) << "max grew inside the window: exact";
  HistSummary s0 = iv.hist(p, "lat", 0);
  EXPECT_EQ(s0.count, 90u);
  // CPU 0's maximum (1000) predates the window: the bound is the top bucket's, capped
  // at the cumulative maximum.
  EXPECT_LE(s0.max_ns, 1000u);
  EXPECT_GE(s0.max_ns, 400u);
}

TEST(Interval, ResolvedFieldsGiveTheSameFigures) {
  Meta m = synthetic_meta(2);
  Sample a = make_sample(m), b = make_sample(m);
  b.mono_ns = 2'000'000'000;
  const int p = m.probe_index("cpupri_find");
  b.probes[p].words.mut(word(m, p, 1, "calls")) = 40;
  for (int i = 0; i < 10; ++i) add_hist(m, b, p, 0, "lat", 800);
  Interval iv(m, a, b);
  const FieldRef calls = field_ref(m, p, "calls"), lat = field_ref(m, p, "lat");
  ASSERT_TRUE(calls);
  EXPECT_EQ(calls.field, m.probes[p].slot.find("calls"));
  EXPECT_EQ(iv.count(calls), 40u);
  EXPECT_EQ(iv.count(calls, 1), 40u);
  EXPECT_EQ(iv.count(calls, 0), 0u);
  EXPECT_DOUBLE_EQ(iv.rate(calls), 20.0);
  const std::vector<int> cpus = {1};
  EXPECT_DOUBLE_EQ(iv.rate(calls, std::span<const int>(cpus)), 20.0);
  EXPECT_EQ(iv.hist(lat).count, 10u);
  EXPECT_EQ(iv.hist(lat, 0).p50, iv.hist(p, "lat", 0).p50);
  EXPECT_EQ(iv.hist(lat, std::span<const int>(cpus)).count, 0u);
  EXPECT_EQ(iv.count(lat), 0u) << "a histogram is not a counter";
  const FieldRef none = field_ref(m, p, "no_such_field"), bad_probe = field_ref(m, 99, "calls");
  EXPECT_FALSE(none);
  EXPECT_FALSE(bad_probe);
  EXPECT_EQ(iv.count(none), 0u);
  EXPECT_EQ(iv.hist(bad_probe).count, 0u);
}

// word_deltas (the coherence model's per-CPU read of many words) against count() of each
// word, on random counters with resets (a word that went down reads as 0 in both).
TEST(Interval, WordDeltasEqualCountsOnRandomSamples) {
  Meta m = synthetic_meta(6);
  std::mt19937_64 rng(42);
  for (int round = 0; round < 20; ++round) {
    Sample a = make_sample(m), b = make_sample(m);
    a.mono_ns = 1'000'000'000;
    b.mono_ns = 2'000'000'000;
    for (size_t p = 0; p < m.probes.size(); ++p)
      for (size_t w = 0; w < a.probes[p].words.size(); ++w) {
        a.probes[p].words.mut(w) = rng() % 1000;
        b.probes[p].words.mut(w) = rng() % 4 ? a.probes[p].words[w] + rng() % 1000 : rng() % 1000;
      }
    Interval iv(m, a, b);
    for (int p = 0; p < static_cast<int>(m.probes.size()); ++p) {
      ASSERT_TRUE(iv.present(p));
      std::vector<uint32_t> words;
      for (const Field& f : m.probes[size_t(p)].slot.fields)
        if (f.kind == FieldKind::counter || f.kind == FieldKind::counter_array)
          for (uint32_t w = f.offset; w < f.offset + f.nwords; ++w) words.push_back(w);
      std::vector<uint64_t> d(m.probes[size_t(p)].slot.slot_words, 7);
      for (int cpu = 0; cpu < static_cast<int>(m.ncpus); ++cpu) {
        iv.word_deltas(p, cpu, words, d.data());
        for (const Field& f : m.probes[size_t(p)].slot.fields) {
          if (f.kind != FieldKind::counter && f.kind != FieldKind::counter_array) continue;
          const FieldRef ref{p, &f};
          for (uint32_t e = 0; e < f.nwords; ++e)
            ASSERT_EQ(d[f.offset + e], iv.count(ref, cpu, f.kind == FieldKind::counter_array ? int(e) : -1))
                << m.probes[size_t(p)].name << "." << f.name << "[" << e << "] cpu " << cpu;
        }
      }
    }
  }
}

// buckets()/hist() skip a CPU whose sum_ns and bucket 0 did not move; on random histograms
// with idle CPUs, CPUs that only added 0 ns values (bucket 0, sum unchanged) and busy ones,
// the sums equal the naive per-bucket deltas, and the one-pass hist(.., buckets) agrees.
TEST(Interval, HistogramSumsSkipOnlyCpusThatAddedNothing) {
  Meta m = synthetic_meta(64);
  const int p = m.probe_index("cpupri_set");
  const Field* f = m.probes[size_t(p)].slot.find("lat");
  ASSERT_NE(f, nullptr);
  const uint32_t sw = m.probes[size_t(p)].slot.slot_words;
  std::mt19937_64 rng(7);
  for (int round = 0; round < 10; ++round) {
    Sample a = make_sample(m), b = make_sample(m);
    b.mono_ns = 1'000'000'000;
    std::vector<uint64_t> naive(SH_HIST_BUCKETS, 0);
    for (uint32_t c = 0; c < m.ncpus; ++c) {
      uint64_t* wa = a.probes[size_t(p)].words.mut_cpu(c) + f->offset;
      uint64_t* wb = b.probes[size_t(p)].words.mut_cpu(c) + f->offset;
      for (uint32_t k = 0; k < 2 + SH_HIST_BUCKETS; ++k) wa[k] = wb[k] = rng() % 50;
      switch (rng() % 3) {
        case 0: break;  // idle
        case 1: wb[2] += 3; naive[0] += 3; break;  // three 0 ns values: only bucket 0 moves
        default:
          for (int v = 0; v < 5; ++v) {
            const uint32_t k = 1 + uint32_t(rng() % (SH_HIST_BUCKETS - 1));
            wb[2 + k] += 1;
            naive[k] += 1;
            wb[0] += 1000;
          }
      }
    }
    Interval iv(m, a, b);
    EXPECT_EQ(iv.buckets(p, "lat"), naive);
    std::vector<int> all(m.ncpus);
    std::iota(all.begin(), all.end(), 0);
    std::vector<uint64_t> one_pass;
    const HistSummary h1 = iv.hist(p, "lat", all, one_pass), h2 = iv.hist(p, "lat");
    EXPECT_EQ(one_pass, naive);
    EXPECT_EQ(h1.count, h2.count);
    EXPECT_EQ(h1.p99, h2.p99);
    EXPECT_EQ(h1.count, std::accumulate(naive.begin(), naive.end(), uint64_t(0)));
  }
}
