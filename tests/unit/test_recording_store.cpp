// Recording store: the END/INDEX trailer and seeking with and without it, a writer killed
// with SIGKILL, the writer's size limit, following a file being written, rotation, and a
// disk that fills up.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <chrono>
#include <thread>

#include "store/recording.h"
#include "store/rotate.h"
#include "sys/json_text.h"
#include "test_recording_util.h"

using namespace schedhot;
using namespace schedhot::testing;

namespace {

/// The samples of path, written with a NOTE frame after sample 30 (a status change).
std::vector<Sample> write_with_note(const std::string& path, const Meta& m, int n) {
  auto samples = make_samples(m, n);
  WriterOptions wo;
  wo.overwrite = true;
  RecordingWriter w(path, m, wo);
  for (int i = 0; i < n; ++i) {
    EXPECT_TRUE(w.write_sample(samples[i]));
    if (i == 30) {
      ProbeStatus st = m.probes[m.probe_index("idle")].status;
      st.notes.push_back("changed");
      EXPECT_TRUE(w.write_status(st));
    }
  }
  w.close();
  return samples;
}

/// A copy of path without its INDEX and END frames: a reader has to scan it.
std::string without_trailer(const std::string& path, const std::string& copy) {
  auto r = RecordingReader::open(path);
  EXPECT_TRUE(r->index().has_value());
  std::string d = slurp(path);
  spit(copy, d.substr(0, r->index()->index_offset));
  return copy;
}

uint64_t file_size(const std::string& p) {
  struct stat st {};
  return stat(p.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

bool exists(const std::string& p) { return file_size(p) > 0; }

}  // namespace

// ---- index -------------------------------------------------------------------------

TEST(RecordingIndex, ClosedFileHasAnIndexThatMatchesAScan) {
  Meta m = synthetic_meta(4, {"nohz_kick"});
  TempDir dir("index");
  auto written = write_with_note(dir / "a.shot", m, 200);
  auto r = RecordingReader::open(dir / "a.shot");
  EXPECT_EQ(r->minor(), kFormatMinor);
  ASSERT_TRUE(r->index().has_value()) << r->index_problem();
  EXPECT_EQ(r->index()->samples, 200u);
  EXPECT_EQ(r->index()->entries, 4u);  // keyframes at 0, 64, 128, 192
  EXPECT_EQ(r->index()->first_mono_ns, written.front().mono_ns);
  EXPECT_EQ(r->index()->last_mono_ns, written.back().mono_ns);
  EXPECT_EQ(r->index()->end_offset + kEndFrameBytes, r->file_bytes());
  EXPECT_EQ(r->sample_count(), 200u);

  auto s = RecordingReader::open(without_trailer(dir / "a.shot", dir / "cut.shot"));
  EXPECT_FALSE(s->index().has_value());
  EXPECT_EQ(s->index_problem(), "") << "no trailer is not a problem, just absent";
  const auto& pi = r->sample_positions();
  const auto& ps = s->sample_positions();
  ASSERT_EQ(pi.size(), 200u);
  ASSERT_EQ(ps.size(), 200u);
  EXPECT_TRUE(r->index().has_value()) << "the frame walk agreed with the index";
  for (size_t i = 0; i < pi.size(); ++i) {
    EXPECT_EQ(pi[i].seq, i);
    EXPECT_EQ(pi[i].seq, ps[i].seq);
    EXPECT_EQ(pi[i].mono_ns, written[i].mono_ns);
    EXPECT_EQ(pi[i].mono_ns, ps[i].mono_ns);
    EXPECT_EQ(pi[i].offset, ps[i].offset);
    EXPECT_EQ(pi[i].keyframe, i % kKeyframeEvery == 0) << i;
    EXPECT_EQ(pi[i].keyframe, ps[i].keyframe);
  }
}

TEST(RecordingIndex, SeeksGiveTheSameSamplesWithAndWithoutIndex) {
  Meta m = synthetic_meta(4);
  TempDir dir("seek");
  auto written = write_with_note(dir / "a.shot", m, 150);
  auto with = RecordingReader::open(dir / "a.shot");
  auto scan = RecordingReader::open(without_trailer(dir / "a.shot", dir / "cut.shot"));
  ASSERT_TRUE(with->index().has_value());
  ASSERT_FALSE(scan->index().has_value());
  Sample a, b;
  for (size_t i : {149, 0, 63, 64, 65, 127, 128, 129, 31, 32, 100, 1}) {
    ASSERT_TRUE(with->seek_sample(i)) << i;
    ASSERT_TRUE(with->next(a)) << i;
    expect_same(a, written[i]);
    ASSERT_TRUE(scan->seek_sample(i)) << i;
    ASSERT_TRUE(scan->next(b)) << i;
    expect_same(b, written[i]);
  }
  EXPECT_FALSE(with->seek_sample(150));
  EXPECT_FALSE(scan->seek_sample(150));
  for (size_t i : {0, 1, 63, 64, 65, 77, 149}) {
    for (uint64_t t : {written[i].mono_ns, written[i].mono_ns - 1, written[i].mono_ns - 500'000'000}) {
      ASSERT_TRUE(with->seek_time(t)) << i;
      ASSERT_TRUE(with->next(a));
      expect_same(a, written[i]);
      ASSERT_TRUE(scan->seek_time(t)) << i;
      ASSERT_TRUE(scan->next(b));
      expect_same(b, written[i]);
    }
  }
  ASSERT_TRUE(with->seek_time(0));
  ASSERT_TRUE(with->next(a));
  expect_same(a, written[0]);
  EXPECT_FALSE(with->seek_time(written.back().mono_ns + 1));
  EXPECT_FALSE(scan->seek_time(written.back().mono_ns + 1));
  // After a seek, reading runs on to the end.
  ASSERT_TRUE(with->seek_sample(140));
  auto rest = read_all(*with);
  ASSERT_EQ(rest.size(), 10u);
  expect_same(rest.back(), written.back());
  EXPECT_TRUE(with->saw_end());
}

TEST(RecordingIndex, DamagedIndexIsNotUsedAndNamed) {
  Meta m = synthetic_meta(2);
  TempDir dir("badindex");
  auto written = write_recording(dir / "a.shot", m, 70, true);
  uint64_t index_at;
  {
    auto r = RecordingReader::open(dir / "a.shot");
    ASSERT_TRUE(r->index().has_value());
    index_at = r->index()->index_offset;
  }
  std::string good = slurp(dir / "a.shot");

  // A flipped bit in the INDEX payload: its CRC fails.
  std::string d = good;
  d[index_at + kFrameHeaderBytes + 6] ^= 0x04;
  spit(dir / "flip.shot", d);
  auto r = RecordingReader::open(dir / "flip.shot");
  EXPECT_FALSE(r->index().has_value());
  EXPECT_NE(r->index_problem().find("INDEX"), std::string::npos) << r->index_problem();
  EXPECT_NE(r->index_problem().find("CRC32C"), std::string::npos) << r->index_problem();
  Sample s;
  ASSERT_TRUE(r->seek_sample(66));
  ASSERT_TRUE(r->next(s));
  expect_same(s, written[66]);
  ASSERT_TRUE(r->seek_sample(0));
  EXPECT_EQ(read_all(*r).size(), 70u) << "every sample is before the damaged INDEX";
  ASSERT_TRUE(r->damage().has_value());
  EXPECT_EQ(r->damage()->offset, index_at);

  // An END (with a valid CRC) that points outside the file's frames.
  d = good;
  const size_t end_at = d.size() - kEndFrameBytes;
  uint64_t bogus = d.size() + 1000;
  std::memcpy(d.data() + end_at + kFrameHeaderBytes + 8, &bogus, 8);
  fix_frame_crc(d, end_at);
  spit(dir / "bogus.shot", d);
  r = RecordingReader::open(dir / "bogus.shot");
  EXPECT_FALSE(r->index().has_value());
  EXPECT_NE(r->index_problem().find("outside the frames"), std::string::npos) << r->index_problem();
  EXPECT_EQ(r->sample_count(), 70u);
  EXPECT_EQ(read_all(*r).size(), 70u);
  EXPECT_FALSE(r->damage().has_value());

  // An END (CRC-valid) that claims more samples than its frames could hold: not trusted
  // for an allocation (4 G samples made export and replay --follow fail with bad_alloc).
  d = good;
  uint64_t many = 0xffffffffu;
  std::memcpy(d.data() + end_at + kFrameHeaderBytes, &many, 8);
  fix_frame_crc(d, end_at);
  spit(dir / "many.shot", d);
  r = RecordingReader::open(dir / "many.shot");
  EXPECT_FALSE(r->index().has_value());
  EXPECT_NE(r->index_problem().find("samples in"), std::string::npos) << r->index_problem();
  EXPECT_EQ(r->sample_positions().size(), 70u);
  EXPECT_EQ(read_all(*r).size(), 70u);

  // An index whose entries disagree with the frames (CRC-valid): each entry is checked
  // against the frame it names when the file is opened, before a seek could land inside a
  // frame (export and windowed reads used to fail on such a file).
  d = good;
  uint64_t off;
  std::memcpy(&off, d.data() + index_at + kFrameHeaderBytes + 4 + kIndexEntryBytes + 16, 8);  // entry 1's offset
  off += 1;
  std::memcpy(d.data() + index_at + kFrameHeaderBytes + 4 + kIndexEntryBytes + 16, &off, 8);
  fix_frame_crc(d, index_at);
  spit(dir / "lies.shot", d);
  r = RecordingReader::open(dir / "lies.shot");
  EXPECT_FALSE(r->index().has_value()) << "bounds and order are fine, but entry 1 names no keyframe";
  EXPECT_NE(r->index_problem().find("INDEX entry 1 names no keyframe"), std::string::npos) << r->index_problem();
  EXPECT_EQ(r->sample_positions().size(), 70u);
  ASSERT_TRUE(r->seek_time(written[40].mono_ns));
  ASSERT_TRUE(r->next(s));
  expect_same(s, written[40]);
  ASSERT_TRUE(r->seek_sample(65));
  ASSERT_TRUE(r->next(s));
  expect_same(s, written[65]);
}

TEST(RecordingIndex, SeekingBeforeADamagedTailStillWorks) {
  Meta m = synthetic_meta(2);
  TempDir dir("tail");
  auto written = write_recording(dir / "a.shot", m, 20, true);
  const uint64_t last = copy_cut_inside(dir / "a.shot", dir / "cut.shot", 19, 30);  // killed inside sample 19
  auto r = RecordingReader::open(dir / "cut.shot");
  EXPECT_FALSE(r->index().has_value());
  EXPECT_EQ(r->sample_positions().size(), 19u);
  ASSERT_TRUE(r->damage().has_value()) << "the scan found the cut";
  EXPECT_EQ(r->damage()->offset, last);
  Sample s;
  ASSERT_TRUE(r->seek_sample(3));
  ASSERT_TRUE(r->next(s));
  expect_same(s, written[3]);
  ASSERT_TRUE(r->seek_sample(18));
  ASSERT_TRUE(r->next(s));
  expect_same(s, written[18]);
  EXPECT_FALSE(r->next(s));
  EXPECT_FALSE(r->seek_sample(19));
}

TEST(RecordingIndex, UnknownFrameTypesOfLaterMinorsAreSkipped) {
  Meta m = synthetic_meta(2);
  TempDir dir("unknown");
  auto written = write_recording(dir / "a.shot", m, 5, false);
  std::string d = slurp(dir / "a.shot");
  d.insert(sample_offset(dir / "a.shot", 3), make_frame(static_cast<FrameType>(42), 0, 0, "a frame type from the future"));
  spit(dir / "b.shot", d);
  auto r = RecordingReader::open(dir / "b.shot");
  auto got = read_all(*r);
  ASSERT_EQ(got.size(), 5u);
  for (size_t i = 0; i < got.size(); ++i) expect_same(got[i], written[i]);
  EXPECT_FALSE(r->damage().has_value());
  EXPECT_EQ(r->stats().unknown_frames, 1u);
}

TEST(RecordingIndex, MetadataWithAHugeCpuListIsRefused) {
  TempDir dir("cpulist");
  Meta m = synthetic_meta(2);
  nlohmann::json j = m;
  std::string online;
  for (int i = 0; i < 64; ++i) online += (i ? "," : "") + std::string("0-1000000");
  j["host"]["online"] = online;  // 64 ranges of a million CPUs
  write_recording(dir / "a.shot", m, 1, false);
  std::string file = slurp(dir / "a.shot").substr(0, kFileHeaderBytes) + make_frame(FrameType::meta, 0, 0, j.dump());
  spit(dir / "b.shot", file);
  try {
    RecordingReader::open(dir / "b.shot");
    FAIL() << "opened";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("bad metadata"), std::string::npos) << e.what();
  }
}

TEST(RecordingKill, SigkilledWriterLeavesEveryCompleteFrame) {
  Meta m = synthetic_meta(4);
  TempDir dir("kill");
  const std::string path = dir / "k.shot";
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // the recorder: make_samples(m, n, 9, 0.5) one by one until it is killed
    RecordingWriter w(path, m, WriterOptions{});
    std::mt19937_64 rng(9);
    Sample s = make_samples(m, 1)[0];
    for (int i = 0; i < 100'000; ++i) {
      if (i) advance(m, s, rng, 0.5);
      w.write_sample(s);
      usleep(1000);
    }
    _exit(3);
  }
  usleep(300'000);
  ASSERT_EQ(kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the writer finished before it was killed";
  auto r = RecordingReader::open(path);
  auto got = read_all(*r);
  ASSERT_GT(got.size(), 10u);
  auto samples = make_samples(m, static_cast<int>(got.size()), 9, 0.5);
  for (size_t i = 0; i < got.size(); ++i) expect_same(got[i], samples[i]);
  EXPECT_FALSE(r->saw_end());
  EXPECT_FALSE(r->index().has_value());
  if (r->damage()) EXPECT_NE(r->damage()->reason.find("truncated"), std::string::npos) << r->damage()->reason;
  EXPECT_EQ(r->sample_count(), got.size());
}

// ---- writer size limit ---------------------------------------------------------------

TEST(RecordingWriterLimit, FileNeverGrowsPastMaxBytes) {
  Meta m = synthetic_meta(4);
  TempDir dir("limit");
  auto samples = make_samples(m, 500);
  WriterOptions wo;
  wo.max_bytes = 40'000;
  size_t n = 0;
  {
    RecordingWriter w(dir / "a.shot", m, wo);
    while (n < samples.size() && w.write_sample(samples[n])) ++n;
    EXPECT_LT(n, samples.size()) << "the limit was reached";
    EXPECT_GT(n, 10u);
    EXPECT_FALSE(w.write_sample(samples[n])) << "still full";
    w.close();
    EXPECT_EQ(w.bytes(), file_size(dir / "a.shot"));
  }
  EXPECT_LE(file_size(dir / "a.shot"), 40'000u);
  auto r = RecordingReader::open(dir / "a.shot");
  auto got = read_all(*r);
  ASSERT_EQ(got.size(), n);
  for (size_t i = 0; i < n; ++i) expect_same(got[i], samples[i]);
  EXPECT_TRUE(r->saw_end());
  EXPECT_TRUE(r->index().has_value());
}

// ---- following ----------------------------------------------------------------------

TEST(RecordingFollow, FollowsAWriterThreadToItsEnd) {
  Meta m = synthetic_meta(4);
  TempDir dir("follow");
  const std::string path = dir / "live.shot";
  auto samples = make_samples(m, 100);
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));  // the reader starts first
    RecordingWriter w(path, m, WriterOptions{});
    for (auto& s : samples) {
      w.write_sample(s);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    w.close();
  });
  FollowOptions f;
  f.enabled = true;
  f.poll_ns = 5'000'000;
  f.idle_timeout_ns = 10'000'000'000;  // a safety net for a broken test
  auto r = RecordingReader::open(path, f);  // waits for the file, its header and META
  auto got = read_all(*r);
  writer.join();
  ASSERT_EQ(got.size(), samples.size());
  for (size_t i = 0; i < got.size(); ++i) expect_same(got[i], samples[i]);
  EXPECT_TRUE(r->saw_end());
  EXPECT_FALSE(r->damage().has_value());
}

TEST(RecordingFollow, WaitsThroughIncompleteFrames) {
  // The bytes of a recording arrive 97 at a time, so the reader keeps meeting half a
  // frame header, half a payload, half the META.
  Meta m = synthetic_meta(4);
  TempDir dir("dribble");
  auto written = write_recording(dir / "src.shot", m, 80, true);
  const std::string data = slurp(dir / "src.shot");
  const std::string path = dir / "dst.shot";
  spit(path, data.substr(0, 5));  // not even the magic yet
  std::thread feeder([&] {
    std::ofstream out(path, std::ios::binary | std::ios::app);
    for (size_t at = 5; at < data.size(); at += 97) {
      out << data.substr(at, 97);
      out.flush();
      std::this_thread::sleep_for(std::chrono::microseconds(300));
    }
  });
  FollowOptions f;
  f.enabled = true;
  f.poll_ns = 1'000'000;
  f.idle_timeout_ns = 10'000'000'000;
  auto r = RecordingReader::open(path, f);
  auto got = read_all(*r);
  feeder.join();
  ASSERT_EQ(got.size(), written.size());
  for (size_t i = 0; i < got.size(); ++i) expect_same(got[i], written[i]);
  EXPECT_FALSE(r->damage().has_value());
  EXPECT_TRUE(r->saw_end());
}

TEST(RecordingFollow, StopFlagEndsFollowingWithoutDamage) {
  Meta m = synthetic_meta(2);
  TempDir dir("stop");
  write_recording(dir / "src.shot", m, 6, false);
  copy_cut_inside(dir / "src.shot", dir / "a.shot", 5, 40);  // the writer is inside sample 5's frame
  std::atomic<bool> stop{false};
  FollowOptions f;
  f.enabled = true;
  f.poll_ns = 5'000'000;
  f.stop = &stop;
  auto r = RecordingReader::open(dir / "a.shot", f);
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    stop = true;
  });
  auto t0 = std::chrono::steady_clock::now();
  auto got = read_all(*r);
  auto waited = std::chrono::steady_clock::now() - t0;
  stopper.join();
  EXPECT_EQ(got.size(), 5u);
  EXPECT_GE(waited, std::chrono::milliseconds(140)) << "it waited for the writer";
  EXPECT_LT(waited, std::chrono::seconds(5));
  EXPECT_FALSE(r->damage().has_value()) << "stopping is not damage";
  EXPECT_FALSE(r->saw_end());
}

TEST(RecordingFollow, IdleTimeoutReportsTheIncompleteFrame) {
  Meta m = synthetic_meta(2);
  TempDir dir("idle");
  write_recording(dir / "src.shot", m, 6, false);
  const uint64_t cut = copy_cut_inside(dir / "src.shot", dir / "a.shot", 5, 40) + 40;
  FollowOptions f;
  f.enabled = true;
  f.poll_ns = 5'000'000;
  f.idle_timeout_ns = 60'000'000;
  auto r = RecordingReader::open(dir / "a.shot", f);
  EXPECT_EQ(read_all(*r).size(), 5u);
  ASSERT_TRUE(r->damage().has_value());
  EXPECT_EQ(r->damage()->offset, cut - 40);
  EXPECT_NE(r->damage()->reason.find("truncated"), std::string::npos) << r->damage()->reason;
}

TEST(RecordingFollow, PositionsGrowWithTheFile) {
  Meta m = synthetic_meta(2);
  TempDir dir("grow");
  auto samples = make_samples(m, 30);
  RecordingWriter w(dir / "a.shot", m, WriterOptions{});
  for (int i = 0; i < 10; ++i) w.write_sample(samples[i]);
  FollowOptions f;
  f.enabled = true;
  auto r = RecordingReader::open(dir / "a.shot", f);
  EXPECT_FALSE(r->index().has_value());
  EXPECT_EQ(r->sample_positions().size(), 10u);
  for (int i = 10; i < 30; ++i) w.write_sample(samples[i]);
  EXPECT_EQ(r->sample_positions().size(), 30u);
  EXPECT_FALSE(r->damage().has_value());
  Sample s;
  ASSERT_TRUE(r->seek_time(samples[25].mono_ns));
  ASSERT_TRUE(r->next(s));
  expect_same(s, samples[25]);
  w.close();
  r->set_follow(false);
  EXPECT_EQ(read_all(*r).size(), 4u);
  EXPECT_TRUE(r->saw_end());
}

// ---- rotation ------------------------------------------------------------------------

TEST(RecordingRotation, RotatesKeepsNAndEveryFileStandsAlone) {
  Meta m = synthetic_meta(4, {"nohz_kick"});
  TempDir dir("rotate");
  const std::string path = dir / "r.shot";
  auto samples = make_samples(m, 400);
  RotateOptions ro{40'000, 2};
  {
    RotatingWriter w(path, m, WriterOptions{}, ro);
    for (size_t i = 0; i < samples.size(); ++i) {
      w.write_sample(samples[i]);
      if (i == 150) {
        ProbeStatus st = m.probes[m.probe_index("idle")].status;
        st.notes.push_back("rotation test note");
        w.write_status(st);
      }
    }
    w.close();
    EXPECT_GE(w.rotations(), 3u) << "four files made, the oldest dropped";
    EXPECT_EQ(w.samples(), 400u);
  }
  EXPECT_TRUE(exists(path));
  EXPECT_TRUE(exists(RotatingWriter::rotated_name(path, 1)));
  EXPECT_TRUE(exists(RotatingWriter::rotated_name(path, 2)));
  EXPECT_FALSE(exists(RotatingWriter::rotated_name(path, 3))) << "the oldest are dropped";
  EXPECT_EQ(RotatingWriter::rotated_name(path, 2), path + ".2");
  // Oldest to newest, the files hold a contiguous run of samples ending with the last.
  std::vector<Sample> got;
  for (const std::string& f : {path + ".2", path + ".1", path}) {
    EXPECT_LE(file_size(f), ro.max_bytes) << f;
    auto r = RecordingReader::open(f);
    ASSERT_TRUE(r->index().has_value()) << f << ": " << r->index_problem();
    ASSERT_FALSE(r->sample_positions().empty());
    EXPECT_TRUE(r->sample_positions().front().keyframe) << f;
    auto part = read_all(*r);
    ASSERT_FALSE(part.empty());
    EXPECT_EQ(r->meta().start_mono_ns, part.front().mono_ns) << "each file starts at its own first sample";
    EXPECT_EQ(r->meta().start_wall_ns, part.front().wall_ns);
    EXPECT_TRUE(r->saw_end());
    EXPECT_FALSE(r->damage().has_value());
    // The note was written before these files began: their META carries it.
    const auto& notes = r->meta().probes[m.probe_index("idle")].status.notes;
    EXPECT_NE(std::find(notes.begin(), notes.end(), "rotation test note"), notes.end()) << f;
    if (!got.empty()) {
      // A newer file begins with the sample that ended the older one, written again.
      expect_same(part.front(), got.back());
      part.erase(part.begin());
    }
    got.insert(got.end(), part.begin(), part.end());
  }
  ASSERT_LT(got.size(), samples.size());
  const size_t first = samples.size() - got.size();
  for (size_t i = 0; i < got.size(); ++i) expect_same(got[i], samples[first + i]);
}

namespace {

/// The files of a rotation at path, oldest (path.keep) to newest (path), those that exist.
std::vector<std::string> rotated_files(const std::string& path, unsigned keep) {
  std::vector<std::string> out;
  for (unsigned k = keep; k >= 1; --k)
    if (exists(RotatingWriter::rotated_name(path, k))) out.push_back(RotatingWriter::rotated_name(path, k));
  if (exists(path)) out.push_back(path);
  return out;
}

}  // namespace

TEST(RecordingRotation, NoIntervalIsLostBetweenFiles) {
  // Every file kept (keep 20): the files' intervals together are the whole run. Large
  // NOTEs that do not fit also start new files (before the next sample).
  Meta m = synthetic_meta(4, {"nohz_kick"});
  TempDir dir("rotate_gapless");
  const std::string path = dir / "r.shot";
  auto samples = make_samples(m, 400);
  RotateOptions ro{40'000, 20};
  unsigned rotations = 0;
  {
    RotatingWriter w(path, m, WriterOptions{}, ro);
    for (size_t i = 0; i < samples.size(); ++i) {
      w.write_sample(samples[i]);
      if (i % 97 == 96) {
        ProbeStatus st = m.probes[m.probe_index("idle")].status;
        st.notes.push_back(std::string(6000, 'n'));
        w.write_status(st);
      }
    }
    w.close();
    rotations = w.rotations();
    EXPECT_EQ(w.samples(), samples.size()) << "the repeated samples count once";
  }
  ASSERT_GE(rotations, 4u);
  auto files = rotated_files(path, ro.keep);
  ASSERT_EQ(files.size(), rotations + 1) << "every file kept";
  uint64_t covered_ns = 0;
  size_t intervals = 0;
  std::vector<Sample> prev;
  for (const std::string& f : files) {
    EXPECT_LE(file_size(f), ro.max_bytes) << f;
    auto r = RecordingReader::open(f);
    auto part = read_all(*r);
    ASSERT_GE(part.size(), 2u) << f << ": at least one interval";
    EXPECT_TRUE(r->saw_end()) << f;
    EXPECT_TRUE(r->sample_positions().front().keyframe) << f;
    if (!prev.empty()) {
      EXPECT_EQ(r->meta().start_mono_ns, part.front().mono_ns) << f << ": starts at its first sample";
      // Same seq, times and counters: the sample that ended the previous file.
      EXPECT_EQ(part.front().mono_ns, prev.back().mono_ns) << f;
      expect_same(part.front(), prev.back());
    }
    covered_ns += part.back().mono_ns - part.front().mono_ns;
    intervals += part.size() - 1;
    prev = part;
  }
  EXPECT_EQ(covered_ns, samples.back().mono_ns - samples.front().mono_ns) << "no gap between files";
  EXPECT_EQ(intervals, samples.size() - 1) << "every interval in exactly one file";
}

TEST(RecordingRotation, NonRecordingsAtRotatedNamesAreRefusedAtStart) {
  Meta m = synthetic_meta(2);
  TempDir dir("rotate_foreign_start");
  const std::string path = dir / "r.shot";
  auto samples = make_samples(m, 300);
  write_recording(path, m, 3, true);  // rotated at start: fine
  // path.2 is deleted (keep 2) or replaced (path.1 with keep 1) at the first rotation.
  for (auto [k, keep] : {std::pair{2u, 2u}, std::pair{1u, 1u}, std::pair{1u, 3u}}) {
    const std::string foreign = RotatingWriter::rotated_name(path, k);
    spit(foreign, "precious\n");
    try {
      RotatingWriter w(path, m, WriterOptions{}, RotateOptions{30'000, keep});
      FAIL() << foreign << " with --rotate " << keep << " was accepted";
    } catch (const std::runtime_error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(foreign + " exists and is not a schedhot recording"), std::string::npos) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << "one line";
    }
    EXPECT_EQ(slurp(foreign), "precious\n");
    EXPECT_NO_THROW(RecordingReader::open(path)) << "the existing recording stays in place";
    EXPECT_FALSE(exists(RotatingWriter::rotated_name(path, k == 1 ? 2 : 1)));
    std::filesystem::remove(foreign);
  }
  // A directory is not ours either; a file beyond keep is never touched.
  std::filesystem::create_directory(path + ".1");
  EXPECT_THROW(RotatingWriter(path, m, WriterOptions{}, RotateOptions{30'000, 1}), std::runtime_error);
  std::filesystem::remove(path + ".1");
  spit(path + ".3", "precious\n");
  {
    RotatingWriter w(path, m, WriterOptions{}, RotateOptions{30'000, 2});
    for (auto& s : samples) w.write_sample(s);
    EXPECT_GE(w.rotations(), 2u);
  }
  EXPECT_EQ(slurp(path + ".3"), "precious\n");
}

// Found by an attacker's pass (2026-12-05): rotation moved and deleted files through a
// directory link another user planted in a shared directory, and moved or deleted another
// user's recording there, before any path check ran. Now nothing is touched: the output-file
// policy (unsafe_output_path) is checked on FILE and every FILE.N first.
TEST(RecordingRotation, NothingIsMovedThroughAnotherUsersLinkOrOfAnotherUsersFile) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (the files of another user)";
  Meta m = synthetic_meta(2);
  TempDir dir("rotate_planted");
  const std::string shared = dir / "shared", victim = dir / "victim";
  ASSERT_EQ(::mkdir(shared.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(shared.c_str(), 01777), 0);  // /tmp-like
  ASSERT_EQ(::mkdir(victim.c_str(), 0700), 0);   // root's own
  write_recording(victim + "/x.shot", m, 3, true);
  write_recording(victim + "/x.shot.1", m, 4, true);
  const std::string before0 = slurp(victim + "/x.shot"), before1 = slurp(victim + "/x.shot.1");
  const std::string link = shared + "/d";
  ASSERT_EQ(::symlink(victim.c_str(), link.c_str()), 0);
  ASSERT_EQ(::lchown(link.c_str(), 65534, 65534), 0);  // nobody's link
  try {
    RotatingWriter w(link + "/x.shot", m, WriterOptions{}, RotateOptions{30'000, 2});
    FAIL() << "rotated through nobody's link";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("symlink owned by uid 65534"), std::string::npos) << e.what();
  }
  EXPECT_EQ(slurp(victim + "/x.shot"), before0);
  EXPECT_EQ(slurp(victim + "/x.shot.1"), before1);
  EXPECT_FALSE(exists(victim + "/x.shot.2"));
  // nobody's recording in the shared directory: not deleted (--rotate 0 --force), not moved.
  const std::string theirs = shared + "/r.shot";
  write_recording(theirs, m, 3, true);
  ASSERT_EQ(::chown(theirs.c_str(), 65534, 65534), 0);
  const std::string their_bytes = slurp(theirs);
  WriterOptions force;
  force.overwrite = true;
  for (unsigned keep : {0u, 1u}) {
    try {
      RotatingWriter w(theirs, m, force, RotateOptions{30'000, keep});
      FAIL() << "rotated nobody's file with --rotate " << keep;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("belongs to uid 65534"), std::string::npos) << e.what();
    }
    EXPECT_EQ(slurp(theirs), their_bytes);
    EXPECT_FALSE(exists(theirs + ".1"));
  }
}

namespace {

/// Writes samples until the writer's first rotation; returns how many were written.
size_t write_until_rotation(RotatingWriter& w, const std::vector<Sample>& samples) {
  size_t i = 0;
  while (i < samples.size() && w.rotations() == 0) w.write_sample(samples[i++]);
  return i;
}

/// Writes samples[i..] until one throws; returns its message ("" if none did), i at it.
std::string write_until_error(RotatingWriter& w, const std::vector<Sample>& samples, size_t& i) {
  try {
    for (; i < samples.size(); ++i) w.write_sample(samples[i]);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(RecordingRotation, NonRecordingThatAppearsLaterStopsTheRotation) {
  Meta m = synthetic_meta(2);
  TempDir dir("rotate_foreign_later");
  const std::string path = dir / "r.shot";
  auto samples = make_samples(m, 600);
  RotatingWriter w(path, m, WriterOptions{}, RotateOptions{30'000, 3});
  size_t i = write_until_rotation(w, samples);
  ASSERT_EQ(w.rotations(), 1u);
  const std::string before1 = slurp(path + ".1");
  spit(path + ".2", "precious\n");  // appears while recording: deleted/replaced by the old shift
  std::string error = write_until_error(w, samples, i);
  EXPECT_NE(error.find(path + ".2 exists and is not a schedhot recording"), std::string::npos) << error;
  EXPECT_NE(error.find("rotation stopped"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << "one line";
  EXPECT_LT(i, samples.size()) << "stopped at the next rotation";
  EXPECT_EQ(w.rotations(), 1u);
  EXPECT_EQ(slurp(path + ".2"), "precious\n");
  EXPECT_EQ(slurp(path + ".1"), before1) << "nothing moved";
  EXPECT_FALSE(exists(path + ".3"));
  // path is closed complete and, with path.1, holds every sample accepted.
  auto r0 = RecordingReader::open(path);
  auto newest = read_all(*r0);
  EXPECT_TRUE(r0->saw_end());
  EXPECT_TRUE(r0->index().has_value());
  auto r1 = RecordingReader::open(path + ".1");
  auto older = read_all(*r1);
  ASSERT_FALSE(newest.empty());
  expect_same(newest.front(), older.back());
  EXPECT_EQ(older.size() + newest.size() - 1, w.samples());
  EXPECT_EQ(w.samples(), i);
  expect_same(newest.back(), samples[i - 1]);
}

TEST(RecordingRotation, ExistingFileIsRotatedNotOverwritten) {
  Meta m = synthetic_meta(2);
  TempDir dir("existing");
  const std::string path = dir / "r.shot";
  auto old = write_recording(path, m, 3, true, 99);
  auto samples = make_samples(m, 5);
  {
    RotatingWriter w(path, m, WriterOptions{}, RotateOptions{1 << 20, 3});
    for (auto& s : samples) w.write_sample(s);
  }
  auto r1 = RecordingReader::open(path + ".1");
  auto got1 = read_all(*r1);
  ASSERT_EQ(got1.size(), 3u);
  expect_same(got1[2], old[2]);
  auto r0 = RecordingReader::open(path);
  EXPECT_EQ(read_all(*r0).size(), 5u);
  EXPECT_TRUE(r0->saw_end()) << "the destructor closes";
}

TEST(RecordingRotation, KeepZeroKeepsOnlyTheCurrentFile) {
  Meta m = synthetic_meta(2);
  TempDir dir("keep0");
  const std::string path = dir / "r.shot";
  auto samples = make_samples(m, 300);
  RotatingWriter w(path, m, WriterOptions{}, RotateOptions{30'000, 0});
  for (auto& s : samples) w.write_sample(s);
  w.close();
  EXPECT_GE(w.rotations(), 1u);
  EXPECT_FALSE(exists(path + ".1"));
  auto r = RecordingReader::open(path);
  auto got = read_all(*r);
  ASSERT_FALSE(got.empty());
  expect_same(got.back(), samples.back());
}

TEST(RecordingRotation, LimitsTooSmallForOneSampleAreErrors) {
  Meta m = synthetic_meta(8);
  TempDir dir("small");
  try {
    RotatingWriter w(dir / "a.shot", m, WriterOptions{}, RotateOptions{1000, 1});
    FAIL() << "a limit below the metadata was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot hold the header and metadata"), std::string::npos) << e.what();
  }
  // Room for the META but not for one keyframe of 8 busy CPUs.
  uint64_t meta_bytes;
  {
    RecordingWriter w(dir / "m.shot", m, WriterOptions{});
    meta_bytes = w.bytes();
  }
  RotatingWriter w(dir / "b.shot", m, WriterOptions{}, RotateOptions{meta_bytes + 200, 1});
  auto samples = make_samples(m, 2, 7, 1.0);
  EXPECT_THROW(w.write_sample(samples[1]), std::runtime_error);
  EXPECT_THROW(RotatingWriter(std::string("-"), m, WriterOptions{}, RotateOptions{1 << 20, 1}), std::runtime_error);
}

// ---- disk full ----------------------------------------------------------------------

namespace {

/// A 64 KiB tmpfs mounted for the test's lifetime (needs CAP_SYS_ADMIN).
struct SmallTmpfs {
  TempDir dir;
  bool mounted = false;
  SmallTmpfs() : dir("tmpfs") { mounted = ::mount("tmpfs", dir.path.c_str(), "tmpfs", 0, "size=64k") == 0; }
  ~SmallTmpfs() {
    if (mounted) ::umount2(dir.path.c_str(), MNT_DETACH);
  }
};

}  // namespace

TEST(RecordingDiskFull, EveryCompleteFrameStaysReadable) {
  SmallTmpfs fs;
  if (!fs.mounted) GTEST_SKIP() << "cannot mount a tmpfs here (needs root): " << strerror(errno);
  Meta m = synthetic_meta(16);
  auto samples = make_samples(m, 400, 3, 0.5);
  const std::string path = fs.dir / "full.shot";
  WriterOptions wo;
  wo.compress = false;
  RecordingWriter w(path, m, wo);
  std::string error;
  size_t n = 0;
  try {
    for (; n < samples.size(); ++n) w.write_sample(samples[n]);
  } catch (const std::runtime_error& e) {
    error = e.what();
  }
  ASSERT_NE(error, "") << "64 KiB filled up";
  EXPECT_NE(error.find("disk full (ENOSPC)"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << "one line";
  EXPECT_EQ(w.samples(), n);
  EXPECT_GT(n, 2u);
  EXPECT_NO_THROW(w.close()) << "closing a failed writer is a no-op";
  auto r = RecordingReader::open(path);
  auto got = read_all(*r);
  ASSERT_EQ(got.size(), n);
  for (size_t i = 0; i < n; ++i) expect_same(got[i], samples[i]);
  EXPECT_FALSE(r->damage().has_value()) << "the partial frame was cut off: " << r->damage()->reason;
  EXPECT_FALSE(r->saw_end());

  // Not even room for a header and META: the writer throws and leaves no file behind.
  {
    std::ofstream filler(fs.dir / "filler", std::ios::binary);
    std::string block(4096, '\0');
    while (filler.write(block.data(), block.size()) && filler.flush()) {
    }
  }
  try {
    RecordingWriter w2(fs.dir / "second.shot", m, wo);
    FAIL() << "wrote a header and META on a full disk";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("ENOSPC"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(fs.dir / "second.shot"));
}

TEST(RecordingDiskFull, RotatingWriterStopsWithEveryFileReadable) {
  SmallTmpfs fs;
  if (!fs.mounted) GTEST_SKIP() << "cannot mount a tmpfs here (needs root): " << strerror(errno);
  Meta m = synthetic_meta(4);
  auto samples = make_samples(m, 2000, 5, 0.8);
  const std::string path = fs.dir / "rot.shot";
  RotatingWriter w(path, m, WriterOptions{}, RotateOptions{24 << 10, 8});
  std::string error;
  try {
    for (auto& s : samples) w.write_sample(s);
  } catch (const std::runtime_error& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("ENOSPC"), std::string::npos) << error;
  // Oldest to newest; a file's first sample repeats the previous file's last: counted once.
  size_t total = 0;
  uint64_t last_mono = 0;
  for (unsigned k = 8; k + 1 > 0; --k) {
    std::string f = k ? RotatingWriter::rotated_name(path, k) : path;
    if (!exists(f)) continue;
    auto r = RecordingReader::open(f);
    for (const Sample& s : read_all(*r))
      if (s.mono_ns > last_mono) {
        ++total;
        last_mono = s.mono_ns;
      }
    EXPECT_FALSE(r->damage().has_value()) << f;
  }
  EXPECT_EQ(total, w.samples()) << "every sample the writer accepted is in a file";
}

// ---- hostile files ------------------------------------------------------------------

TEST(RecordingHostile, TerminalControlsInMetadataAreScrubbed) {
  Meta m = synthetic_meta(2);
  m.host.hostname = "evil\x1b]0;pwned\x07\x1b[2J\nsecond\xc2\x9b" "1m";
  m.command = "schedhot record \x1b[31m";
  TempDir dir("hostile_meta");
  const std::string path = dir / "esc.shot";
  {
    RecordingWriter w(path, m, WriterOptions{});
    for (auto& s : make_samples(m, 3)) w.write_sample(s);
    w.close();
  }
  auto r = RecordingReader::open(path);
  EXPECT_EQ(r->meta().host.hostname, "evil?]0;pwned??[2J?second?1m");
  EXPECT_EQ(r->meta().command, "schedhot record ?[31m");
  EXPECT_EQ(read_all(*r).size(), 3u);
  EXPECT_EQ(scrub_controls(std::string("tab\there\x7f")), "tab?here?");
  EXPECT_EQ(scrub_controls(std::string("caf\xc3\xa9 \xe2\x82\xac")), "caf\xc3\xa9 \xe2\x82\xac") << "UTF-8 text stays";
  EXPECT_EQ(scrub_controls(std::string("a" "\xe2\x80\xae" "b" "\xe2\x81\xa6" "c" "\xe2\x80\x8f")), "a?b?c?") << "bidi overrides, isolates, marks";
  EXPECT_EQ(scrub_controls(std::string("\xe2\x80\x94")), "\xe2\x80\x94") << "an em dash (U+2014) stays";
  EXPECT_EQ(scrub_controls(std::string("\xf0\x9f\x98\x80")), "\xf0\x9f\x98\x80") << "4-byte UTF-8 stays";
  EXPECT_EQ(scrub_controls(std::string("a" "\xff" "b" "\xc3" "\xe2\x82")), "a?b???") << "invalid or cut UTF-8: one ? a byte";
  EXPECT_EQ(scrub_controls(std::string("\xc0\xaf" "\xed\xa0\x80")), "??" "???") << "overlong form, surrogate";
  EXPECT_EQ(scrub_controls(std::string("\xc2\x85" "x")), "?x") << "C1 NEL";
}

TEST(RecordingHostile, CpuCountBeyondAnyKernelIsRefused) {
  Meta m = synthetic_meta(2);
  m.ncpus = kMaxCpus + 1;
  TempDir dir("hostile_ncpus");
  const std::string path = dir / "n.shot";
  { RecordingWriter w(path, m, WriterOptions{}); }
  try {
    RecordingReader::open(path);
    ADD_FAILURE() << "a META with " << m.ncpus << " CPUs was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("bad metadata: 8193 CPUs (a kernel has 1 to 8192)"), std::string::npos) << e.what();
  }
}

TEST(RecordingHostile, NonRegularFilesAreRefusedWithoutBlocking) {
  TempDir dir("hostile_fifo");
  const std::string fifo = dir / "f.shot";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& p : {fifo, dir.path}) {
    try {
      RecordingReader::open(p);  // a FIFO without a writer would block a plain open()
      ADD_FAILURE() << p << " was accepted";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(p == fifo ? "is a FIFO" : "is a directory"), std::string::npos) << e.what();
    }
  }
}

// ---- the writer's output path ---------------------------------------------------------

namespace {

/// While alive, this process cannot write a byte to any regular file (RLIMIT_FSIZE 0: write()
/// fails with EFBIG, SIGXFSZ ignored): a first write that fails, without root.
struct NoFileWrites {
  struct rlimit old {};
  struct sigaction old_sa {};
  NoFileWrites() {
    struct sigaction ign {};
    ign.sa_handler = SIG_IGN;
    sigaction(SIGXFSZ, &ign, &old_sa);
    getrlimit(RLIMIT_FSIZE, &old);
    struct rlimit zero = old;
    zero.rlim_cur = 0;
    EXPECT_EQ(setrlimit(RLIMIT_FSIZE, &zero), 0);
  }
  ~NoFileWrites() {
    setrlimit(RLIMIT_FSIZE, &old);
    sigaction(SIGXFSZ, &old_sa, nullptr);
  }
};

/// The message RecordingWriter(path) throws, "" when it does not.
std::string writer_error(const std::string& path, const Meta& m, bool overwrite) {
  WriterOptions wo;
  wo.overwrite = overwrite;
  try {
    RecordingWriter w(path, m, wo);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

bool is_regular(const std::string& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

TEST(RecordingOutput, AFailedFirstWriteRemovesOnlyAFileTheWriterCreated) {
  Meta m = synthetic_meta(2);
  TempDir dir("output_first_write");
  const std::string theirs = dir / "theirs.shot", mine = dir / "mine.shot", link = dir / "link.shot",
                    dangling = dir / "dangling.shot";
  spit(theirs, "precious");
  ASSERT_EQ(::symlink("theirs.shot", link.c_str()), 0);
  ASSERT_EQ(::symlink("made-through-link.shot", dangling.c_str()), 0);
  std::string e_theirs, e_mine, e_link, e_dangling;
  {
    NoFileWrites no_writes;
    e_theirs = writer_error(theirs, m, true);  // -f over an existing regular file
    e_mine = writer_error(mine, m, false);     // a new file
    e_link = writer_error(link, m, true);      // -f through a symlink to an existing file
    e_dangling = writer_error(dangling, m, true);
  }
  const std::string why = "cannot write the header and metadata: write failed: File too large; nothing recorded";
  EXPECT_EQ(e_theirs, theirs + ": " + why + ", the existing file is as it was") << "one line, and no file removed";
  EXPECT_TRUE(is_regular(theirs)) << "an existing file is not the writer's to remove";
  EXPECT_EQ(slurp(theirs), "precious") << "-f replaces a file only once the new one holds its META";
  EXPECT_EQ(e_mine, mine + ": " + why + ", the new file removed");
  EXPECT_FALSE(std::filesystem::exists(mine)) << "the file it created itself holds nothing: removed";
  EXPECT_EQ(e_link, link + ": " + why + ", the existing file is as it was");
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  EXPECT_TRUE(is_regular(theirs));
  EXPECT_EQ(slurp(theirs), "precious");
  // Nothing left beside them (the new file that was to replace theirs.shot is gone).
  size_t entries = 0;
  for (auto& e : std::filesystem::directory_iterator(dir.path)) entries += e.path().filename() != "" ? 1 : 0;
  EXPECT_EQ(entries, 3u) << "theirs.shot, link.shot, dangling.shot";
  // Without the limit, -f over theirs.shot writes a recording there and the link stays a link.
  EXPECT_EQ(writer_error(link, m, true), "");
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  EXPECT_EQ(RecordingReader::open(theirs)->meta().ncpus, 2u);
  // Through a dangling symlink the writer creates (and so may remove) the target, never the link.
  EXPECT_EQ(e_dangling, dangling + ": " + why + ", the new file removed");
  EXPECT_TRUE(std::filesystem::is_symlink(dangling)) << "the link stays";
  EXPECT_FALSE(std::filesystem::exists(dir / "made-through-link.shot"));
  // Without the limit, the same dangling link gets its target written, the link kept.
  EXPECT_EQ(writer_error(dangling, m, true), "");
  EXPECT_TRUE(std::filesystem::is_symlink(dangling));
  EXPECT_EQ(RecordingReader::open(dir / "made-through-link.shot")->meta().ncpus, 2u);
}

TEST(RecordingOutput, ADeviceThatFailsIsNeverRemoved) {
  if (geteuid() != 0) GTEST_SKIP() << "mknod needs root";
  Meta m = synthetic_meta(2);
  TempDir dir("output_device");
  const std::string full = dir / "full";  // a copy of /dev/full: every write() is ENOSPC
  ASSERT_EQ(::mknod(full.c_str(), S_IFCHR | 0666, makedev(1, 7)), 0) << strerror(errno);
  EXPECT_EQ(writer_error(full, m, false), full + " exists; choose another name or pass --force");
  EXPECT_EQ(writer_error(full, m, true), full + ": cannot write the header and metadata: disk full (ENOSPC); nothing recorded");
  struct stat st {};
  ASSERT_EQ(::lstat(full.c_str(), &st), 0) << "the device was deleted";
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_EQ(st.st_rdev, makedev(1, 7));
  // A device that takes the bytes (a copy of /dev/null) is written in place.
  const std::string null = dir / "null";
  ASSERT_EQ(::mknod(null.c_str(), S_IFCHR | 0666, makedev(1, 3)), 0) << strerror(errno);
  EXPECT_EQ(writer_error(null, m, true), "");
  ASSERT_EQ(::lstat(null.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

TEST(RecordingOutput, AFifoIsWrittenInPlaceOnlyWithAReader) {
  Meta m = synthetic_meta(2);
  TempDir dir("output_fifo");
  const std::string fifo = dir / "f.shot";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // No reader: refused at once (a plain open() would wait for one forever).
  EXPECT_EQ(writer_error(fifo, m, true), fifo + " is a FIFO with no reader; start the reader first");
  int rd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(rd, 0) << strerror(errno);
  {
    WriterOptions wo;
    wo.overwrite = true;
    RecordingWriter w(fifo, m, wo);
    w.close();
  }
  char magic[8] = {};
  EXPECT_EQ(::read(rd, magic, sizeof magic), 8);
  EXPECT_EQ(std::string(magic, 8), "SCHEDHOT");
  ::close(rd);
  struct stat st {};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode)) << "the FIFO stays a FIFO";
}

// ---- JSON nested too deep -----------------------------------------------------------

TEST(RecordingHostile, JsonDepthIsBoundedWhereItIsParsed) {
  EXPECT_EQ(parse_file_json(nested_json(kMaxJsonDepth)).dump().size(), 2u * kMaxJsonDepth);
  EXPECT_THROW(parse_file_json(nested_json(kMaxJsonDepth + 1)), JsonTooDeep);
  EXPECT_THROW(parse_file_json(nested_json(40000)), JsonTooDeep);
  std::string objects;
  for (int i = 0; i < 40000; ++i) objects += "{\"a\":";
  objects += "1" + std::string(40000, '}');
  EXPECT_THROW(parse_file_json(objects), JsonTooDeep);
  // Deep but unparsable (never closed): still the depth error, found before the end.
  EXPECT_THROW(parse_file_json(std::string(40000, '[')), JsonTooDeep);
  nlohmann::json deep = nlohmann::json::array();
  for (int i = 0; i < kMaxJsonDepth; ++i) deep = nlohmann::json::array({deep});
  EXPECT_THROW(scrub_controls(deep), JsonTooDeep) << "the walker bounds itself too";
}

TEST(RecordingHostile, DeeplyNestedMetadataIsOneLineNotACrash) {
  Meta m = synthetic_meta(2);
  TempDir dir("hostile_deep_meta");
  const std::string good = dir / "good.shot", bad = dir / "bad.shot";
  write_recording(good, m, 3, true);
  const std::string header = slurp(good).substr(0, kFileHeaderBytes);
  for (const std::string& payload : {nested_json(40000), "{\"host\":" + nested_json(40000) + "}"}) {
    spit(bad, header + make_frame(FrameType::meta, 0, 0, payload));
    try {
      RecordingReader::open(bad);
      ADD_FAILURE() << "deep META accepted";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()), bad + ": not readable metadata: JSON nested deeper than 64 levels");
    }
  }
}

TEST(RecordingHostile, DeeplyNestedNoteIsDamageAfterTheSamplesBeforeIt) {
  Meta m = synthetic_meta(2);
  TempDir dir("hostile_deep_note");
  const std::string good = dir / "good.shot", bad = dir / "bad.shot";
  auto samples = write_recording(good, m, 10, true);
  const uint64_t at = sample_offset(good, 5);
  spit(bad, with_frame_before_sample(good, 5, make_frame(FrameType::note, 0, 0, nested_json(40000))));
  auto r = RecordingReader::open(bad);
  auto got = read_all(*r);
  ASSERT_EQ(got.size(), 5u) << "the samples before the NOTE";
  for (size_t i = 0; i < got.size(); ++i) expect_same(got[i], samples[i]);
  ASSERT_TRUE(r->damage().has_value());
  EXPECT_EQ(r->damage()->offset, at);
  EXPECT_EQ(r->damage()->reason, "bad note frame: JSON nested deeper than 64 levels");
  EXPECT_TRUE(r->status_notes().empty());
  // Scanning the frames for positions (replay, seeks without an index) stops there too.
  auto scan = RecordingReader::open(bad);
  EXPECT_EQ(scan->sample_positions().size(), 5u);
  ASSERT_TRUE(scan->damage().has_value());
  EXPECT_EQ(scan->damage()->offset, at);
  EXPECT_EQ(scan->damage()->reason, "bad note frame: JSON nested deeper than 64 levels");
}

TEST(RecordingRotation, AFileMovedOverTheOneBeingWrittenIsNotRotated) {
  // mv mine.txt r.shot while recording: at the next rotation r.shot is the user's file, not
  // the recording; it must not become r.shot.1.
  Meta m = synthetic_meta(2);
  TempDir dir("rotate_replaced");
  const std::string path = dir / "r.shot";
  auto samples = make_samples(m, 600);
  RotatingWriter w(path, m, WriterOptions{}, RotateOptions{30'000, 3});
  size_t i = write_until_rotation(w, samples);
  ASSERT_EQ(w.rotations(), 1u);
  const std::string before1 = slurp(path + ".1");
  const uint32_t in_rotated = uint32_t(read_all(*RecordingReader::open(path + ".1")).size());
  spit(dir / "mine.txt", "mine\n");
  ASSERT_EQ(std::rename((dir / "mine.txt").c_str(), path.c_str()), 0);
  std::string error = write_until_error(w, samples, i);
  EXPECT_NE(error.find(path + " is no longer the file being written"), std::string::npos) << error;
  EXPECT_EQ(slurp(path), "mine\n") << "the user's file stays where it was put";
  EXPECT_EQ(slurp(path + ".1"), before1) << "nothing moved";
  EXPECT_FALSE(exists(path + ".2"));
  EXPECT_EQ(w.samples(), in_rotated) << "only the samples still readable are counted";
}

// A META missing a key used to be refused as "bad metadata: bad metadata: [json...]".
TEST(RecordingHostile, BadMetadataIsSaidOnce) {
  TempDir dir("meta_once");
  Meta m = synthetic_meta(2);
  write_recording(dir / "a.shot", m, 1, false);
  nlohmann::json j = m;
  j.erase("hist");
  spit(dir / "b.shot", slurp(dir / "a.shot").substr(0, kFileHeaderBytes) + make_frame(FrameType::meta, 0, 0, j.dump()));
  try {
    RecordingReader::open(dir / "b.shot");
    FAIL() << "opened";
  } catch (const std::runtime_error& e) {
    const std::string w = e.what();
    EXPECT_EQ(w, (dir / "b.shot") + ": bad metadata: missing hist");
  }
}

// A META key of the wrong type, or missing, was said in nlohmann's words:
// "bad metadata: [json.exception.type_error.302] type must be string, but is number",
// naming neither the key nor what it should be. Now: the key's path, what was expected,
// what was found; one line; no "[json.exception"; a syntax error by byte, the bytes unquoted.
TEST(RecordingHostile, BadMetadataNamesTheKeyInPlainWords) {
  TempDir dir("meta_words");
  Meta m = synthetic_meta(2);
  write_recording(dir / "a.shot", m, 1, false);
  const std::string head = slurp(dir / "a.shot").substr(0, kFileHeaderBytes);
  const auto said = [&](const std::string& payload) {
    const std::string path = dir / "b.shot";
    spit(path, head + make_frame(FrameType::meta, 0, 0, payload));
    try {
      RecordingReader::open(path);
      return std::string("opened");
    } catch (const std::runtime_error& e) {
      const std::string w = e.what();
      EXPECT_EQ(w.find("[json.exception"), std::string::npos) << w;
      EXPECT_EQ(w.find('\n'), std::string::npos) << w;
      EXPECT_EQ(w.rfind(path + ": ", 0), 0u) << w;
      return w.substr(path.size() + 2);
    }
  };
  const nlohmann::json good = m;
  ASSERT_GE(good["probes"].size(), 1u);
  ASSERT_GE(good["probes"][0]["fields"].size(), 2u);
  const auto with = [&](const nlohmann::json::json_pointer& at, const nlohmann::json& v) {
    nlohmann::json j = good;
    j[at] = v;
    return said(j.dump());
  };
  const auto without = [&](const nlohmann::json::json_pointer& parent, const std::string& key) {
    nlohmann::json j = good;
    j[parent].erase(key);
    return said(j.dump());
  };
  using P = nlohmann::json::json_pointer;
  EXPECT_EQ(with(P("/host/hostname"), 5), "bad metadata: host.hostname: expected a string, found a number");
  EXPECT_EQ(with(P("/host/arat"), "yes"), "bad metadata: host.arat: expected a boolean, found a string");
  EXPECT_EQ(with(P("/host/topology"), nlohmann::json::array({{{"cpu", 0}}, {{"cpu", "one"}}})),
            "bad metadata: host.topology[1].cpu: expected a number, found a string");
  EXPECT_EQ(with(P("/host"), "h"), "bad metadata: host: expected an object, found a string");
  EXPECT_EQ(with(P("/tool_version"), nullptr), "bad metadata: tool_version: expected a string, found null");
  EXPECT_EQ(with(P("/ncpus"), "2"), "bad metadata: ncpus: expected a number, found a string");
  EXPECT_EQ(with(P("/interval_ns"), nlohmann::json::array()), "bad metadata: interval_ns: expected a number, found an array");
  EXPECT_EQ(without(P("/hist"), "sub_bits"), "bad metadata: missing hist.sub_bits");
  EXPECT_EQ(without(P(""), "ncpus"), "bad metadata: missing ncpus");
  EXPECT_EQ(with(P("/probes"), 3), "bad metadata: probes: expected an array, found a number");
  EXPECT_EQ(with(P("/probes/0"), true), "bad metadata: probes[0]: expected an object, found a boolean");
  EXPECT_EQ(without(P("/probes/0"), "slot_words"), "bad metadata: missing probes[0].slot_words");
  EXPECT_EQ(with(P("/probes/0/fields"), nlohmann::json::object()),
            "bad metadata: probes[0].fields: expected an array, found an object");
  EXPECT_EQ(with(P("/probes/0/fields/1/kind"), 7), "bad metadata: probes[0].fields[1].kind: expected a string, found a number");
  EXPECT_EQ(with(P("/probes/0/fields/1/offset"), "8"),
            "bad metadata: probes[0].fields[1].offset: expected a number, found a string");
  EXPECT_EQ(without(P("/probes/0/fields/1"), "name"), "bad metadata: missing probes[0].fields[1].name");
  EXPECT_EQ(with(P("/probes/0/status/attached"), "yes"),
            "bad metadata: probes[0].status.attached: expected a boolean, found a string");
  EXPECT_EQ(with(P("/probes/0/status/tried"), nlohmann::json::array({{{"backend", 5}}})),
            "bad metadata: probes[0].status.tried[0].backend: expected a string, found a number");
  // Numbers are taken only whole and in range: never wrapped (4294967300 as 4), truncated
  // (4.9 as 4) or read as 2^64 - 1 (-1).
  EXPECT_EQ(with(P("/ncpus"), 4294967300ull),
            "bad metadata: ncpus: expected a whole number from 0 to 4294967295, found 4294967300");
  EXPECT_EQ(with(P("/ncpus"), 4.9), "bad metadata: ncpus: expected a whole number from 0 to 4294967295, found 4.9");
  EXPECT_EQ(with(P("/interval_ns"), -1),
            "bad metadata: interval_ns: expected a whole number from 0 to 18446744073709551615, found -1");
  EXPECT_EQ(with(P("/probes/0/fields/1/offset"), 4294967296ull),
            "bad metadata: probes[0].fields[1].offset: expected a whole number from 0 to 4294967295, found 4294967296");
  // nlohmann's "number overflow parsing '1e999'" quotes the bytes: said in words.
  EXPECT_EQ(said(R"({"ncpus": 1e999})"), "bad metadata: a number too large for a double");
  // A META far past any real one (an 8192-CPU host's is under 2 MiB) is not parsed.
  EXPECT_EQ(said(std::string(17u << 20, ' ')),
            "bad metadata: 17825792 bytes, more than the 16777216 bytes a META may hold");
  EXPECT_EQ(with(P("/probes/0/labels"), nlohmann::json::array({1})),
            "bad metadata: probes[0].labels: expected a string, found a number");
  EXPECT_EQ(with(P("/layout"), nlohmann::json{{"line_bytes", 64}}), "bad metadata: coherence layout: missing nohz");
  EXPECT_EQ(said("[1, 2]"), "bad metadata: expected an object, found an array");
  // Not JSON: said by byte; the file's bytes (an escape sequence here) never quoted.
  EXPECT_EQ(said("{\"host\": \x1b[31mred"), "bad metadata: not JSON (a syntax error at byte 10)");
}

// The same for a NOTE frame whose status is of the wrong shape: damage said in words.
TEST(RecordingHostile, BadNoteIsSaidInPlainWords) {
  Meta m = synthetic_meta(2);
  TempDir dir("note_words");
  const std::string good = dir / "good.shot", bad = dir / "bad.shot";
  write_recording(good, m, 10, true);
  const auto reason = [&](const std::string& payload) {
    spit(bad, with_frame_before_sample(good, 5, make_frame(FrameType::note, 0, 0, payload)));
    auto r = RecordingReader::open(bad);
    read_all(*r);
    return r->damage() ? r->damage()->reason : std::string("no damage");
  };
  EXPECT_EQ(reason(R"({"status": {"attached": 3}})"), "bad note frame: status.attached: expected a boolean, found a number");
  const std::string p0 = m.probes[0].name;
  EXPECT_EQ(reason(R"({"status": {"probe": "nosuch"}})"), "bad note frame: a probe the metadata does not list");
  EXPECT_EQ(reason(R"({"probe": 5, "status": {"probe": ")" + p0 + R"("}})"),
            "bad note frame: probe is not its status's probe");
  EXPECT_EQ(reason(R"({"probe": "other", "status": {"probe": ")" + p0 + R"("}})"),
            "bad note frame: probe is not its status's probe");
  EXPECT_EQ(reason(R"({"probe": ")" + p0 + R"(", "status": {"probe": ")" + p0 + R"("}})"), "no damage");
  EXPECT_EQ(reason(R"({"probe": "x"})"), "bad note frame: missing status");
  EXPECT_EQ(reason(R"({"status": [1]})"), "bad note frame: status: expected an object, found an array");
  EXPECT_EQ(reason("{\"status\": \x1b]0;pwned\x07"), "bad note frame: not JSON (a syntax error at byte 12)");
}

// A sample earlier than the one before it made `info` print a span of 18446744068 s (an
// unsigned last - first). A recording's samples are in time order by construction: the
// reader stops there as at any damage, for every view alike.
TEST(RecordingHostile, SampleTimeGoingBackwardsIsDamage) {
  TempDir dir("backwards");
  Meta m = synthetic_meta(2);
  std::vector<Sample> s = make_samples(m, 6);  // 5 s, 6 s, ... 1 s apart
  auto write = [&](const std::string& path, const std::vector<Sample>& v) {
    WriterOptions wo;
    wo.compress = false;
    RecordingWriter w(path, m, wo);
    for (auto& x : v) w.write_sample(x);
    w.close();
  };
  write(dir / "clean.shot", s);
  const uint64_t at = sample_offset(dir / "clean.shot", 3);  // the same layout: raw frames, same sizes
  s[3].mono_ns = s[2].mono_ns - 500'000'000;                  // 0.5 s before sample 2
  write(dir / "back.shot", s);
  const std::string why = "sample time goes backwards (0.500 s before the previous sample's)";
  {
    auto r = RecordingReader::open(dir / "back.shot");
    auto got = read_all(*r);
    ASSERT_EQ(got.size(), 3u);
    for (size_t i = 0; i < got.size(); ++i) expect_same(got[i], s[i]);
    ASSERT_TRUE(r->damage().has_value());
    EXPECT_EQ(r->damage()->offset, at);
    EXPECT_EQ(r->damage()->reason, why);
    EXPECT_EQ(r->stats().last_mono_ns - r->stats().first_mono_ns, 2'000'000'000u);
  }
  {  // scans and seeks (replay, report/export windows) stop at the same frame
    auto r = RecordingReader::open(dir / "back.shot");
    EXPECT_EQ(r->sample_positions().size(), 3u);
    EXPECT_FALSE(r->index().has_value()) << "the index covers samples past the damage";
    ASSERT_TRUE(r->damage().has_value());
    EXPECT_EQ(r->damage()->offset, at);
    EXPECT_EQ(r->damage()->reason, why);
    EXPECT_FALSE(r->seek_sample(4));
    EXPECT_TRUE(r->seek_sample(2));
  }
  {
    auto r = RecordingReader::open(dir / "back.shot");
    r->check_all_frames();
    ASSERT_TRUE(r->damage().has_value());
    EXPECT_EQ(r->damage()->offset, at);
  }
  // Equal times are damage too (a writer's samples are ns apart): an interval of 0 s made
  // every rate 0 next to non-zero totals, and export drop its events.
  s[3].mono_ns = s[2].mono_ns;
  write(dir / "same.shot", s);
  auto r = RecordingReader::open(dir / "same.shot");
  EXPECT_EQ(read_all(*r).size(), 3u);
  ASSERT_TRUE(r->damage().has_value());
  EXPECT_EQ(r->damage()->reason, "sample time does not advance (the same as the previous sample's)");
  auto r2 = RecordingReader::open(dir / "same.shot");
  EXPECT_EQ(r2->sample_positions().size(), 3u) << "replay's positions stop there too";
}

// The frame header's time (scans, seeks) and the sample's own (views) must agree.
TEST(RecordingHostile, SampleTimeUnlikeItsFrameHeaderIsDamage) {
  TempDir dir("header_time");
  Meta m = synthetic_meta(2);
  write_recording(dir / "a.shot", m, 4, false);
  std::string d = slurp(dir / "a.shot");
  const uint64_t at = sample_offset(dir / "a.shot", 2);
  uint64_t t = 1;
  std::memcpy(d.data() + at + 16, &t, 8);
  fix_frame_crc(d, at);
  spit(dir / "b.shot", d);
  auto r = RecordingReader::open(dir / "b.shot");
  EXPECT_EQ(read_all(*r).size(), 2u);
  ASSERT_TRUE(r->damage().has_value());
  EXPECT_EQ(r->damage()->offset, at);
  EXPECT_EQ(r->damage()->reason, "sample time 7000000000 ns differs from its frame header's 1 ns");
}
