// WindowedCursor (store/window.h): the one --from/--to window of report and export, over
// the recordings in tests/data (v1.1-basic: 70 samples at +0..+69 s, -i 1; v1.1-unclosed:
// 8 samples, then a truncated frame).
#include <gtest/gtest.h>

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
