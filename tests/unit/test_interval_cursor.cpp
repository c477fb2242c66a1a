// IntervalCursor (model/interval_cursor.h): the window's samples and the intervals between
// them, over a source or fed by hand, without copying a sample.
#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "model/interval_cursor.h"
#include "test_util.h"

using namespace schedhot;
using namespace schedhot::testing;

namespace {

/// A recording in memory: the samples in order, then the end.
class ListSource : public SampleSource {
 public:
  ListSource(const Meta& m, std::vector<Sample> v) : m_(m), v_(std::move(v)) {}
  const Meta& meta() const override { return m_; }
  bool next(Sample& out) override {
    if (i_ >= v_.size()) return false;
    out = v_[i_++];
    return true;
  }
  size_t read() const { return i_; }

 private:
  const Meta& m_;
  std::vector<Sample> v_;
  size_t i_ = 0;
};

/// Samples at +0..+8 s after 10 s (CLOCK_MONOTONIC), every 0.9 ms late but the first, with
/// cpupri_set calls on CPU 1 growing by 10 * k each second.
std::vector<Sample> seconds(const Meta& m, int count = 9) {
  std::vector<Sample> v;
  uint64_t calls = 0;
  for (int k = 0; k < count; ++k) {
    Sample s = make_sample(m);
    s.mono_ns = 10'000'000'000 + uint64_t(k) * 1'000'000'000 + (k ? 900'000 : 0);
    s.seq = uint32_t(k);
    calls += 10 * uint64_t(k);
    s.probes[size_t(m.probe_index("cpupri_set"))].words.mut(word(m, m.probe_index("cpupri_set"), 1, "calls")) = calls;
    v.push_back(std::move(s));
  }
  return v;
}

Meta meta_1s() {
  Meta m = synthetic_meta(2);
  m.interval_ns = 1'000'000'000;
  return m;
}

}  // namespace

TEST(IntervalCursor, HandsOutTheWindowsSamplesAndTheIntervalsBetweenThem) {
  const Meta m = meta_1s();
  ListSource src(m, seconds(m));
  IntervalCursor c(m, {SampleWindow{2, 5, m.interval_ns}});
  const int p = m.probe_index("cpupri_set");
  std::vector<uint32_t> seqs;
  std::vector<uint64_t> calls;
  while (c.next(src)) {
    seqs.push_back(c.cur().seq);
    if (seqs.size() == 1) {
      EXPECT_EQ(c.prev(), nullptr);
      EXPECT_EQ(c.interval(), nullptr);
      EXPECT_NEAR(c.t(), 2.0009, 1e-9);
      continue;
    }
    ASSERT_NE(c.prev(), nullptr);
    ASSERT_NE(c.interval(), nullptr);
    EXPECT_EQ(c.prev()->seq + 1, c.cur().seq);
    EXPECT_DOUBLE_EQ(c.interval()->seconds(), 1.0);
    calls.push_back(c.interval()->count(p, "calls", 1));
  }
  EXPECT_EQ(seqs, (std::vector<uint32_t>{2, 3, 4, 5}));
  EXPECT_EQ(calls, (std::vector<uint64_t>{30, 40, 50}));
  EXPECT_EQ(c.samples(), 4u);
  EXPECT_EQ(c.seen(), 7u) << "+0 and +1 before, +2..+5, +6 past --to: the end";
  EXPECT_NEAR(c.seen_t(), 6.0009, 1e-9);
  EXPECT_TRUE(c.past_window());
  EXPECT_FALSE(c.stopped());
  EXPECT_EQ(src.read(), 7u);
  ASSERT_NE(c.last(), nullptr);
  EXPECT_EQ(c.last()->seq, 5u) << "the last sample handed out stays";
  EXPECT_EQ(c.prev(), nullptr);
  EXPECT_FALSE(c.next(src)) << "ended for good";
  EXPECT_EQ(src.read(), 7u);
  EXPECT_EQ(c.t0(), 10'000'000'000u);
}

TEST(IntervalCursor, ReadsOnPastTheWindowWhenAsked) {
  const Meta m = meta_1s();
  ListSource src(m, seconds(m));
  IntervalCursor c(m, {SampleWindow{2, 5, m.interval_ns}, std::nullopt, PastWindow::read_on, /*keep_first=*/true});
  while (c.next(src)) {
  }
  EXPECT_EQ(c.samples(), 4u);
  EXPECT_EQ(c.seen(), 9u);
  EXPECT_NEAR(c.seen_t(), 8.0009, 1e-9);
  EXPECT_TRUE(c.past_window());
  ASSERT_NE(c.first(), nullptr);
  EXPECT_EQ(c.first()->seq, 2u);
  EXPECT_EQ(c.last()->seq, 5u);
}

TEST(IntervalCursor, ASampleAtTheSameInstantHasNoInterval) {
  const Meta m = meta_1s();
  std::vector<Sample> v = seconds(m, 3);
  v.insert(v.begin() + 2, v[1]);  // +1 s twice (a rotation's first sample is the last one again)
  v[2].seq = 7;
  ListSource src(m, v);
  IntervalCursor c(m);
  std::vector<bool> with;
  while (c.next(src)) with.push_back(c.interval() != nullptr);
  EXPECT_EQ(with, (std::vector<bool>{false, true, false, true}));
  EXPECT_EQ(c.samples(), 4u);
  EXPECT_EQ(c.last()->seq, 2u);
}

TEST(IntervalCursor, GivenTimeZeroPlacesTheWindow) {
  const Meta m = meta_1s();
  ListSource src(m, seconds(m));
  // Time zero 3 s before the first sample: --to 4 ends after the source's +1 s.
  IntervalCursor c(m, {SampleWindow{-1, 4, m.interval_ns}, uint64_t{7'000'000'000}});
  std::vector<double> t;
  while (c.next(src)) t.push_back(c.t());
  ASSERT_EQ(t.size(), 2u);
  EXPECT_DOUBLE_EQ(t[0], 3.0);
  EXPECT_NEAR(t[1], 4.0009, 1e-9);
}

TEST(IntervalCursor, AStopEndsItWithoutHandingOutTheSample) {
  const Meta m = meta_1s();
  ListSource src(m, seconds(m));
  IntervalCursor c(m);
  std::atomic<bool> stop{false};
  ASSERT_TRUE(c.next(src, &stop));
  ASSERT_TRUE(c.next(src, &stop));
  stop = true;
  EXPECT_FALSE(c.next(src, &stop));
  EXPECT_TRUE(c.stopped());
  EXPECT_EQ(c.samples(), 2u);
  EXPECT_EQ(c.seen(), 2u) << "the sample read when stop was set is not counted";
  EXPECT_EQ(src.read(), 3u);
  EXPECT_EQ(c.last()->seq, 1u);
  EXPECT_FALSE(c.next(src, &stop));
  EXPECT_EQ(src.read(), 3u) << "ended for good";
}

TEST(IntervalCursor, ReusesItsTwoBuffers) {
  const Meta m = meta_1s();
  ListSource src(m, seconds(m));
  IntervalCursor c(m);
  const int p = m.probe_index("cpupri_set");
  ASSERT_TRUE(c.next(src));
  const Sample* a = &c.cur();
  ASSERT_TRUE(c.next(src));
  const Sample* b = &c.cur();
  EXPECT_NE(a, b);
  EXPECT_EQ(c.prev(), a);
  for (int k = 2; k < 9; ++k) {
    ASSERT_TRUE(c.next(src));
    EXPECT_EQ(&c.cur(), k % 2 ? b : a) << "sample " << k << " read into the spare buffer";
  }
}

TEST(IntervalCursor, TakeSwapsTheSampleIn) {
  const Meta m = meta_1s();
  std::vector<Sample> v = seconds(m, 4);
  IntervalCursor c(m, {SampleWindow{1, -1, m.interval_ns}});
  const int p = m.probe_index("cpupri_set");
  Sample s = v[0];
  EXPECT_FALSE(c.take(s)) << "+0 s is before --from 1";
  s = v[1];
  const uint64_t* words = s.probes[size_t(p)].words.block(0);
  EXPECT_TRUE(c.take(s));
  EXPECT_EQ(c.cur().probes[size_t(p)].words.block(0), words) << "taken, not copied";
  s = v[2];
  EXPECT_TRUE(c.take(s));
  ASSERT_NE(c.interval(), nullptr);
  EXPECT_EQ(c.interval()->count(p, "calls", 1), 20u);
  EXPECT_EQ(c.samples(), 2u);
  EXPECT_EQ(c.seen(), 3u);
}

TEST(IntervalCursor, RestartForgetsThePreviousSample) {
  const Meta m = meta_1s();
  ListSource src(m, seconds(m, 4));
  IntervalCursor c(m);
  ASSERT_TRUE(c.next(src));
  ASSERT_TRUE(c.next(src));
  c.restart();
  EXPECT_EQ(c.last(), nullptr);
  ASSERT_TRUE(c.next(src));
  EXPECT_EQ(c.prev(), nullptr);
  EXPECT_EQ(c.interval(), nullptr);
  EXPECT_NEAR(c.t(), 2.0009, 1e-9) << "time zero stays";
  ASSERT_TRUE(c.next(src));
  ASSERT_NE(c.interval(), nullptr);
  EXPECT_EQ(c.interval()->count(m.probe_index("cpupri_set"), "calls", 1), 30u);
}
