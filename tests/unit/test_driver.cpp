// RecordingDriver (src/store/driver.h) on a fake live cursor: what record and top --record
// write, without BPF or clocks.
#include <gtest/gtest.h>

#include <deque>
#include <filesystem>
#include <stdexcept>

#include "store/driver.h"
#include "test_recording_util.h"

using namespace schedhot;
using namespace schedhot::testing;

namespace {

/// A LiveCursor over prepared samples: poll() returns one only while `due` is set (next()
/// always does), finish() returns `final` once (after the baseline), and a status change
/// queued with change() comes with the next sample, as LiveSource's do.
class FakeCursor : public LiveCursor {
 public:
  FakeCursor(Meta meta, std::vector<Sample> samples, Sample final)
      : meta_(std::move(meta)), left_(samples.begin(), samples.end()), final_(std::move(final)) {}
  const Meta& meta() const override { return meta_; }
  bool next(Sample& out) override {
    if (left_.empty() || finished_) return false;
    out = left_.front();
    left_.pop_front();
    ++taken;
    return true;
  }
  bool poll(Sample& out) override { return due && next(out); }
  bool finish(Sample& out) override {
    if (!taken || finished_) return false;
    finished_ = true;
    out = final_;
    return true;
  }
  std::vector<int> take_status_changes() override {
    std::vector<int> v;
    v.swap(changed_);
    return v;
  }
  /// Probe p's status gets a note (a learned lock address, say), seen with the next sample.
  void change(int p, const std::string& note) {
    meta_.probes[size_t(p)].status.notes.push_back(note);
    changed_.push_back(p);
  }
  bool due = true;
  int taken = 0;

 private:
  Meta meta_;
  std::deque<Sample> left_;
  Sample final_;
  bool finished_ = false;
  std::vector<int> changed_;
};

std::vector<Sample> read_file(const std::string& f, std::vector<ProbeStatus>* notes = nullptr) {
  auto r = RecordingReader::open(f);
  auto v = read_all(*r);
  EXPECT_TRUE(r->saw_end()) << f;
  EXPECT_FALSE(r->damage().has_value()) << f;
  if (notes) *notes = r->status_notes();
  return v;
}

}  // namespace

TEST(RecordingDriver, RotatesWhileRecordingAndTakesTheFinalSampleOnStop) {
  Meta m = synthetic_meta(4, {"nohz_kick"});
  TempDir dir("driver_rotate");
  const std::string path = dir / "r.shot";
  auto samples = make_samples(m, 301);
  Sample final = samples.back();
  samples.pop_back();
  FakeCursor src(m, samples, final);
  RecordingDriver d(src, RecordingTarget{path, WriterOptions{}, RotateOptions{40'000, 2}});
  Sample s;
  int n = 0;
  while (d.next(s)) {
    EXPECT_EQ(s.seq, samples[size_t(n)].seq);
    ++n;
  }
  EXPECT_EQ(n, 300);
  ASSERT_TRUE(d.stop(true)) << d.error().value_or("");
  EXPECT_FALSE(d.error().has_value());
  EXPECT_GE(d.rotations(), 2u);
  EXPECT_EQ(d.samples(), 301u) << "every sample and the final one, each counted once";
  EXPECT_TRUE(std::filesystem::exists(path + ".2"));
  EXPECT_FALSE(std::filesystem::exists(path + ".3"));
  auto last = read_file(path);
  ASSERT_FALSE(last.empty());
  expect_same(last.back(), final);
  for (const std::string& f : {path + ".1", path + ".2"}) {
    EXPECT_LE(std::filesystem::file_size(f), 40'000u) << f;
    EXPECT_GT(read_file(f).size(), 1u) << f;
  }
  EXPECT_EQ(d.summary(), fmt::format("wrote 301 samples, {} bytes to {} ({} rotations)", d.bytes(), path, d.rotations()));
  EXPECT_TRUE(d.stop(true)) << "idempotent";
  EXPECT_EQ(d.samples(), 301u);
}

TEST(RecordingDriver, PollRecordsOnlyWhatIsDueAndAStatusChangeIsANote) {
  Meta m = synthetic_meta(4, {"nohz_kick"});
  TempDir dir("driver_poll");
  const std::string path = dir / "r.shot";
  auto samples = make_samples(m, 4);
  FakeCursor src(m, samples, samples.back());
  RecordingDriver d(src, RecordingTarget{path, WriterOptions{}, RotateOptions{}});
  Sample s;
  ASSERT_TRUE(d.poll(s));
  src.due = false;
  EXPECT_FALSE(d.poll(s)) << "nothing due: nothing returned";
  EXPECT_EQ(d.samples(), 1u);
  const int idle = m.probe_index("idle");
  src.change(idle, "lock address learned");
  src.due = true;
  ASSERT_TRUE(d.poll(s));
  EXPECT_EQ(d.take_status_changes(), std::vector<int>{idle});
  EXPECT_TRUE(d.take_status_changes().empty());
  ASSERT_TRUE(d.stop(false)) << "-n's last table: no final sample";
  EXPECT_EQ(src.taken, 2);
  std::vector<ProbeStatus> notes;
  auto got = read_file(path, &notes);
  ASSERT_EQ(got.size(), 2u);
  expect_same(got[1], samples[1]);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].probe, "idle");
  ASSERT_FALSE(notes[0].notes.empty());
  EXPECT_EQ(notes[0].notes.back(), "lock address learned");
}

TEST(RecordingDriver, WithoutAPathItOnlyPassesSamplesOn) {
  Meta m = synthetic_meta(2);
  auto samples = make_samples(m, 3);
  FakeCursor src(m, samples, samples.back());
  RecordingDriver d(src, RecordingTarget{});
  Sample s;
  EXPECT_FALSE(d.recording());
  EXPECT_TRUE(d.next(s));
  EXPECT_TRUE(d.poll(s));
  EXPECT_TRUE(d.stop(true));
  EXPECT_EQ(d.samples(), 0u);
  EXPECT_FALSE(d.error().has_value());
}

// A file that is not a recording appears at FILE.1 mid-run: the rotation refuses to move
// it (RotatingWriter), and the driver reports that with the samples written before it,
// which stay readable; no sample is returned after it.
TEST(RecordingDriver, AWriteErrorIsReportedWithTheSamplesWrittenBeforeIt) {
  Meta m = synthetic_meta(4, {"nohz_kick"});
  TempDir dir("driver_error");
  const std::string path = dir / "r.shot";
  auto samples = make_samples(m, 400);
  FakeCursor src(m, samples, samples.back());
  RecordingDriver d(src, RecordingTarget{path, WriterOptions{}, RotateOptions{40'000, 1}});
  Sample s;
  ASSERT_TRUE(d.next(s));
  spit(path + ".1", "precious\n");
  int n = 1;
  while (d.next(s)) ++n;
  ASSERT_TRUE(d.error().has_value());
  EXPECT_LT(n, 400) << "stopped at the failed rotation";
  EXPECT_EQ(d.samples(), uint32_t(n));
  EXPECT_NE(d.error()->find(path + ".1"), std::string::npos) << *d.error();
  EXPECT_NE(d.error()->find(fmt::format("; {} samples written before it are readable", n)), std::string::npos)
      << *d.error();
  EXPECT_EQ(d.error()->find('\n'), std::string::npos);
  EXPECT_FALSE(d.next(s));
  EXPECT_FALSE(d.poll(s));
  EXPECT_FALSE(d.stop(true)) << "the error stays";
  EXPECT_EQ(slurp(path + ".1"), "precious\n");
  EXPECT_EQ(read_file(path).size(), size_t(n));
}


