// Recording format (src/store/recording.h): round trip, truncation at every byte,
// bit flips, version checks.
#include <gtest/gtest.h>

#include <unistd.h>

#include "store/recording.h"
#include "test_recording_util.h"

using namespace schedhot;
using namespace schedhot::testing;

class RoundTrip : public ::testing::TestWithParam<bool> {};

TEST_P(RoundTrip, SamplesComeBackIdentical) {
  Meta m = synthetic_meta(16, {"nohz_kick", "bcast_lock"});
  std::string path = tmp_path(GetParam() ? "rt_z" : "rt_raw");
  auto written = write_recording(path, m, 150, GetParam());  // > 2 keyframe periods
  auto r = RecordingReader::open(path);
  EXPECT_EQ(r->meta().ncpus, 16u);
  EXPECT_EQ(r->meta().probes.size(), m.probes.size());
  EXPECT_FALSE(r->meta().probes[m.probe_index("nohz_kick")].status.attached);
  EXPECT_EQ(r->meta().probes[m.probe_index("nohz_kick")].status.reason, "fentry refused: EPERM (test)");
  Sample s;
  size_t i = 0;
  while (r->next(s)) {
    ASSERT_LT(i, written.size());
    expect_same(s, written[i]);
    ++i;
  }
  EXPECT_EQ(i, written.size());
  EXPECT_FALSE(r->damage().has_value());
  EXPECT_TRUE(r->saw_end());
  unlink(path.c_str());
}

INSTANTIATE_TEST_SUITE_P(Compression, RoundTrip, ::testing::Values(true, false));

TEST(Recording, CompressionShrinksIdleMachines) {
  Meta m = synthetic_meta(64);
  std::string pz = tmp_path("z"), pr = tmp_path("raw");
  write_recording(pz, m, 20, true);
  write_recording(pr, m, 20, false);
  EXPECT_LT(slurp(pz).size(), slurp(pr).size());
  unlink(pz.c_str());
  unlink(pr.c_str());
}

TEST(Recording, TruncationAtEveryByteKeepsCompleteFrames) {
  Meta m = synthetic_meta(2, {"idle"});
  std::string path = tmp_path("trunc_src");
  auto written = write_recording(path, m, 4, true);
  std::string data = slurp(path);
  // Each prefix goes into one in-memory file (memfd) that the reader opens by path.
  MemFile mem;
  const std::string cut = mem.path();
  size_t meta_end = 0;
  {
    // Find the smallest prefix that opens: that is where the META frame ends.
    for (size_t n = 0; n <= data.size(); ++n) {
      mem.set(data.substr(0, n));
      try {
        RecordingReader::open(cut);
        meta_end = n;
        break;
      } catch (const std::exception&) {
      }
    }
  }
  ASSERT_GT(meta_end, 32u);
  size_t last_count = 0;
  for (size_t n = 0; n <= data.size(); ++n) {
    mem.set(data.substr(0, n));
    std::unique_ptr<RecordingReader> r;
    try {
      r = RecordingReader::open(cut);
    } catch (const std::exception& e) {
      ASSERT_LT(n, meta_end) << "a prefix with complete metadata must open: " << e.what();
      continue;
    }
    Sample s;
    size_t count = 0;
    while (r->next(s)) {
      ASSERT_LT(count, written.size());
      expect_same(s, written[count]);
      ++count;
    }
    EXPECT_GE(count, last_count) << "a longer prefix never yields fewer samples";
    last_count = count;
    if (n < data.size()) {
      bool at_frame_boundary = !r->damage().has_value();
      if (!at_frame_boundary) EXPECT_NE(r->damage()->reason.find("truncated"), std::string::npos) << r->damage()->reason;
    }
  }
  EXPECT_EQ(last_count, written.size());
  unlink(path.c_str());
}

TEST(Recording, BitFlipIsCaughtAndNamed) {
  Meta m = synthetic_meta(4);
  std::string path = tmp_path("flip_src");
  auto written = write_recording(path, m, 6, false);
  std::string data = slurp(path);
  std::string bad = tmp_path("flip");
  // Flip one bit 200 bytes before the end: inside the last sample frame (the INDEX and
  // END frames after it are 52 + 56 bytes here).
  size_t at = data.size() - 200;
  std::string d = data;
  d[at] ^= 0x10;
  spit(bad, d);
  auto r = RecordingReader::open(bad);
  Sample s;
  size_t n = 0;
  while (r->next(s)) expect_same(s, written[n++]);
  ASSERT_TRUE(r->damage().has_value());
  EXPECT_EQ(n, written.size() - 1) << "every sample before the damaged one is read";
  EXPECT_LE(r->damage()->offset, at);
  EXPECT_NE(r->damage()->reason.find("CRC32C"), std::string::npos) << r->damage()->reason;
  unlink(path.c_str());
  unlink(bad.c_str());
}

TEST(Recording, CheckAllFramesFindsDamageTheIndexWouldSkip) {
  Meta m = synthetic_meta(4);
  std::string path = tmp_path("checkall_src");
  auto written = write_recording(path, m, 140, true);
  std::string d = slurp(path);
  std::string bad = tmp_path("checkall");
  auto clean = RecordingReader::open(path);
  ASSERT_TRUE(clean->index().has_value());
  const size_t at = clean->sample_positions()[70].offset + 30;  // inside sample 70's frame
  d[at] ^= 0x10;
  spit(bad, d);
  auto r = RecordingReader::open(bad);
  ASSERT_TRUE(r->index().has_value()) << "the trailer is intact";
  Sample s;
  ASSERT_TRUE(r->seek_time(written[130].mono_ns));  // the index jumps over the damage (keyframe 128)
  EXPECT_FALSE(r->damage().has_value());
  ASSERT_TRUE(r->seek_sample(0));
  r->check_all_frames();
  ASSERT_TRUE(r->damage().has_value());
  EXPECT_EQ(r->damage()->offset, clean->sample_positions()[70].offset);
  EXPECT_FALSE(r->saw_end()) << "the scan stops at the damage";
  ASSERT_TRUE(r->next(s)) << "next() still starts where it was";
  expect_same(s, written[0]);
  // An undamaged closed file: the scan reads to END.
  clean->check_all_frames();
  EXPECT_FALSE(clean->damage().has_value());
  EXPECT_TRUE(clean->saw_end());
  EXPECT_EQ(clean->sample_positions().size(), written.size());
  unlink(path.c_str());
  unlink(bad.c_str());
}

TEST(Recording, RejectsForeignAndFutureFiles) {
  std::string p = tmp_path("foreign");
  spit(p, "hello, this is not a recording at all, no no no");
  try {
    RecordingReader::open(p);
    FAIL() << "opened a foreign file";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("not a schedhot recording"), std::string::npos) << e.what();
  }
  Meta m = synthetic_meta(2);
  write_recording(p, m, 1, true);
  std::string d = slurp(p);
  d[8] = 9;  // major 9
  spit(p, d);
  try {
    RecordingReader::open(p);
    FAIL() << "opened a future major version";
  } catch (const std::runtime_error& e) {
    // The header CRC catches the edit first unless we fix it; either way a clear refusal.
    std::string w = e.what();
    EXPECT_TRUE(w.find("newer than this schedhot") != std::string::npos || w.find("CRC32C") != std::string::npos) << w;
  }
  unlink(p.c_str());
}

TEST(Recording, WriterRefusesToOverwrite) {
  Meta m = synthetic_meta(2);
  std::string p = tmp_path("exists");
  write_recording(p, m, 1, true);
  EXPECT_THROW(RecordingWriter(p, m, WriterOptions{}), std::runtime_error);
  unlink(p.c_str());
}

TEST(Recording, SeekBySampleAndTime) {
  Meta m = synthetic_meta(8);
  std::string path = tmp_path("seek");
  auto written = write_recording(path, m, 140, true);
  auto r = RecordingReader::open(path);
  ASSERT_EQ(r->sample_positions().size(), written.size());
  Sample s;
  for (size_t i : {size_t(0), size_t(63), size_t(64), size_t(65), size_t(139), size_t(100), size_t(3)}) {
    ASSERT_TRUE(r->seek_sample(i)) << i;
    ASSERT_TRUE(r->next(s)) << i;
    expect_same(s, written[i]);
  }
  EXPECT_FALSE(r->seek_sample(140));
  ASSERT_TRUE(r->seek_time(written[77].mono_ns - 1));
  ASSERT_TRUE(r->next(s));
  expect_same(s, written[77]);
  ASSERT_TRUE(r->next(s));
  expect_same(s, written[78]);
  EXPECT_FALSE(r->seek_time(written.back().mono_ns + 1));
  unlink(path.c_str());
}
