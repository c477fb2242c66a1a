// WindowedCursor (store/window.h): the one --from/--to window of report and export, over
// the recordings in tests/data (v1.1-basic: 70 samples at +0..+69 s, -i 1; v1.1-unclosed:
// 8 samples, then a truncated frame).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "store/recording.h"
#include "store/window.h"

using namespace schedhot;

namespace {

const std::string kData = SCHEDHOT_DATA;

/// Seconds since t0 of every sample the cursor returns.
std::vector<double> times(WindowedCursor& c) {
  std::vector<double> t;
  Sample s;
  while (c.next(s)) t.push_back(static_cast<double>(s.mono_ns - *c.t0()) / 1e9);
  return t;
}

}  // namespace

TEST(WindowedCursor, SeeksToFromAndStopsAfterTo) {
  auto r = RecordingReader::open(kData + "/v1.1-basic.shot");
  WindowedCursor c(*r, r.get(), SampleWindow{10, 20, r->meta().interval_ns});
  EXPECT_FALSE(c.read_t0());
  EXPECT_FALSE(c.seek_start());
  EXPECT_TRUE(c.bounded());
  const std::vector<double> t = times(c);
  ASSERT_EQ(t.size(), 13u);  // time zero, +10..+20, and +21 (the first past --to)
  EXPECT_NEAR(t[0], 0, 1e-6);
  EXPECT_NEAR(t[1], 10, 0.01);
  EXPECT_NEAR(t[11], 20, 0.01);
  EXPECT_NEAR(t[12], 21, 0.01);
}

TEST(WindowedCursor, NothingAfterFromIsAnErrorWithTheSpan) {
  auto r = RecordingReader::open(kData + "/v1.1-basic.shot");
  WindowedCursor c(*r, r.get(), SampleWindow{1000, -1, r->meta().interval_ns});
  const WindowProblem p = c.seek_start();  // reads time zero itself
  EXPECT_EQ(p.error, WindowError::none_after_from);
  ASSERT_TRUE(p.span_s.has_value());
  EXPECT_NEAR(*p.span_s, 69, 0.01);
  EXPECT_EQ(times(c).size(), 1u) << "only time zero is left";
}

TEST(WindowedCursor, ADamagedFileIsReadFromItsStart) {
  auto r = RecordingReader::open(kData + "/v1.1-unclosed.shot");
  WindowedCursor c(*r, r.get(), SampleWindow{3, 5, r->meta().interval_ns});
  EXPECT_FALSE(c.seek_start());
  EXPECT_FALSE(c.bounded()) << "the check found the bad frame: no seek";
  EXPECT_EQ(times(c).size(), 8u);
  EXPECT_TRUE(r->damage().has_value());
}

TEST(WindowedCursor, SeekCheckLeavesAToOnlyWindowUnchecked) {
  auto r = RecordingReader::open(kData + "/v1.1-basic.shot");
  WindowedCursor c(*r, r.get(), SampleWindow{-1, 5, r->meta().interval_ns}, WindowCheck::seek);
  EXPECT_FALSE(c.seek_start());
  EXPECT_FALSE(c.bounded());
  EXPECT_EQ(times(c).size(), 70u) << "unbounded: the consumer stops itself";
}

TEST(WindowedCursor, RepositionsAfterTheReaderMoved) {
  auto r = RecordingReader::open(kData + "/v1.1-basic.shot");
  WindowedCursor c(*r, r.get(), SampleWindow{}, WindowCheck::seek);
  EXPECT_FALSE(c.read_t0());
  (void)r->online_cpus();
  c.reader_moved();
  EXPECT_FALSE(c.seek_start());
  const std::vector<double> t = times(c);
  ASSERT_EQ(t.size(), 70u);
  EXPECT_NEAR(t[1], 1, 0.01) << "the first sample is not returned twice";
}

TEST(WindowedCursor, AnEmptySourceHasNoSamples) {
  struct Empty : SampleSource {
    Meta m;
    const Meta& meta() const override { return m; }
    bool next(Sample&) override { return false; }
  } e;
  WindowedCursor c(e, nullptr, SampleWindow{1, 2, 1'000'000'000});
  EXPECT_EQ(c.read_t0().error, WindowError::no_samples);
  EXPECT_FALSE(c.seek_start());
  Sample s;
  EXPECT_FALSE(c.next(s));
}

TEST(WindowedCursor, StatusChangesArriveThroughTheSource) {
  auto r = RecordingReader::open(kData + "/v1.1-basic.shot");
  WindowedCursor c(*r, r.get(), SampleWindow{});
  std::vector<int> changed;
  Sample s;
  while (c.next(s))
    for (int i : c.take_status_changes()) changed.push_back(i);
  const int idle = c.meta().probe_index("idle");
  ASSERT_GE(idle, 0);
  EXPECT_EQ(changed, std::vector<int>{idle}) << "one NOTE frame, reported once";
  EXPECT_EQ(c.meta().probes[size_t(idle)].status.summary(), "attached (fentry)");
  EXPECT_TRUE(c.take_status_changes().empty());
}

TEST(WindowedCursor, SeeksByIndexAndByTime) {
  auto r = RecordingReader::open(kData + "/v1.1-basic.shot");
  (void)r->online_cpus();  // the reader is left anywhere: time zero is still sample 0
  WindowedCursor c(*r, r.get(), SampleWindow{});
  Sample s;
  ASSERT_TRUE(c.seek_index(10));
  ASSERT_TRUE(c.t0().has_value());
  ASSERT_TRUE(c.next(s));
  EXPECT_NEAR(static_cast<double>(s.mono_ns - *c.t0()) / 1e9, 10, 0.01) << "no time zero first after a seek";
  ASSERT_TRUE(c.next(s));
  EXPECT_NEAR(static_cast<double>(s.mono_ns - *c.t0()) / 1e9, 11, 0.01);
  ASSERT_TRUE(c.seek_time(*c.t0() + 20'500'000'000));
  ASSERT_TRUE(c.next(s));
  EXPECT_NEAR(static_cast<double>(s.mono_ns - *c.t0()) / 1e9, 21, 0.01) << "the first sample at or after the time";
  EXPECT_FALSE(c.seek_index(70)) << "70 samples: 0..69";
  EXPECT_FALSE(c.next(s)) << "nothing after a failed seek";
  EXPECT_FALSE(c.seek_time(*c.t0() + 70'000'000'000));
  ASSERT_TRUE(c.seek_index(0));
  ASSERT_TRUE(c.next(s));
  EXPECT_EQ(s.mono_ns, *c.t0());
}

TEST(WindowedCursor, PositionsAndTheIndexAtATime) {
  auto r = RecordingReader::open(kData + "/v1.1-basic.shot");
  WindowedCursor c(*r, r.get(), SampleWindow{});
  ASSERT_EQ(c.positions().size(), 70u);
  const uint64_t t0 = c.positions().front().mono_ns;
  EXPECT_EQ(c.index_at(0), 0u);
  EXPECT_EQ(c.index_at(t0 + 30'000'000'000), 30u);
  EXPECT_EQ(c.index_at(t0 + 29'500'000'000), 30u);
  EXPECT_EQ(c.index_at(c.positions().back().mono_ns), 69u);
  EXPECT_FALSE(c.index_at(c.positions().back().mono_ns + 1).has_value());
}

TEST(WindowedCursor, TheWorstIntervalIsTheFirstWithTheHighestScore) {
  auto r = RecordingReader::open(kData + "/v1.1-basic.shot");
  WindowedCursor c(*r, r.get(), SampleWindow{});
  const uint64_t t0 = c.positions().front().mono_ns;
  // Scores: the interval's end in whole seconds, capped at 40: the first to reach 40 is sample 40.
  auto capped = [t0](const Interval& iv) {
    return std::min(40.0, std::round(static_cast<double>(iv.last().mono_ns - t0) / 1e9));
  };
  EXPECT_EQ(c.worst(70, capped), 40u);
  EXPECT_EQ(c.worst(30, capped), 29u) << "only samples 0..29 are scored";
  EXPECT_EQ(c.worst(70, [](const Interval&) { return -1.0; }), 0u) << "no interval has a score";
  Sample s;
  ASSERT_TRUE(c.seek_index(5));
  ASSERT_TRUE(c.next(s)) << "seeks work after worst()";
  EXPECT_NEAR(static_cast<double>(s.mono_ns - t0) / 1e9, 5, 0.01);
}

TEST(WindowedCursor, CheckFramesStopsThePositionsAtTheBadFrame) {
  auto r = RecordingReader::open(kData + "/v1.1-unclosed.shot");
  WindowedCursor c(*r, r.get(), SampleWindow{});
  c.check_frames();
  EXPECT_FALSE(c.bounded());
  EXPECT_TRUE(r->damage().has_value());
  EXPECT_EQ(c.positions().size(), 8u);
  auto clean = RecordingReader::open(kData + "/v1.1-basic.shot");
  WindowedCursor d(*clean, clean.get(), SampleWindow{});
  d.check_frames();
  EXPECT_TRUE(d.bounded());
}

TEST(WindowedCursor, OnlineCpusOfTheWindowAndBackToTheStart) {
  auto r = RecordingReader::open(kData + "/v1.1-basic.shot");
  WindowedCursor c(*r, r.get(), SampleWindow{-1, 5, r->meta().interval_ns}, WindowCheck::seek);
  EXPECT_TRUE(c.online_cpus().empty()) << "time zero not read yet";
  ASSERT_FALSE(c.read_t0());
  const std::vector<int> online = c.online_cpus();
  EXPECT_EQ(online, r->online_cpus(*c.t0(), *c.t0() + 5'100'000'000)) << "--to with its slack (0.1 s at -i 1)";
  EXPECT_EQ(online, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_FALSE(c.seek_start());
  const std::vector<double> t = times(c);
  ASSERT_EQ(t.size(), 70u);
  EXPECT_NEAR(t[1], 1, 0.01) << "put back right after the first sample";
}

TEST(WindowedCursor, AnotherSourceCannotSeek) {
  struct One : SampleSource {
    Meta m;
    bool given = false;
    const Meta& meta() const override { return m; }
    bool next(Sample& s) override {
      if (given) return false;
      given = true;
      s.mono_ns = 5;
      return true;
    }
  } one;
  WindowedCursor c(one, nullptr, SampleWindow{});
  EXPECT_FALSE(c.seek_index(0));
  EXPECT_FALSE(c.seek_time(0));
  EXPECT_TRUE(c.positions().empty());
  EXPECT_FALSE(c.index_at(0).has_value());
  EXPECT_FALSE(c.worst(10, [](const Interval&) { return 1.0; }).has_value());
  c.check_frames();
  EXPECT_FALSE(c.bounded());
}
