// GAPS frames (format 1.4, issue 29): Sample::gaps written and read back like EXACT frames
// (raw or zstd), a bad frame is one line of damage that keeps the samples before it, a
// 1.3 reader's view of a 1.4 file (the frames skipped), and no source hands a sample gap
// counts whose interval did not start at the sample it returned before (seeks, windows,
// rotation).
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <zstd.h>

#include "store/crc32c.h"
#include "store/recording.h"
#include "store/rotate.h"
#include "store/window.h"
#include "test_recording_util.h"

using namespace schedhot;
using namespace schedhot::testing;

namespace {

constexpr uint32_t kLines = 70;  // more than kMaxGapEntriesPerCpu: the per-CPU bound is reachable

Meta gaps_meta(uint32_t ncpus = 4) {
  Meta m = synthetic_meta(ncpus);
  for (uint32_t l = 0; l < kLines; ++l) m.gap_lines.push_back({l % 2 ? "nohz" : "root_domain", int64_t(l)});
  m.gap_samples_per_s = 4000;
  return m;
}

/// A batch over (from_ns, ...]: every CPU and line of `pairs`, with a few buckets each
/// (salt varies them; the first pair's ww holds the extremes 1 and UINT32_MAX).
GapBatch batch(uint64_t from_ns, const std::vector<std::pair<uint32_t, uint32_t>>& pairs, uint32_t salt,
               uint64_t full = 0) {
  GapBatch b;
  b.from_ns = from_ns;
  b.full = full;
  for (size_t i = 0; i < pairs.size(); ++i) {
    GapCounts c;
    c.cpu = pairs[i].first;
    c.line = pairs[i].second;
    c.ww[(salt + i) % SH_GAP_BUCKETS] = 1 + salt;
    c.wa[(3 * salt + i) % SH_GAP_BUCKETS] = 1000 * (salt + 1);
    c.ra[SH_GAP_BUCKETS - 1] = uint32_t(i + 1);
    c.ra[0] = salt % 3;  // sometimes zero: not written
    if (i == 0) {
      c.ww[0] = std::numeric_limits<uint32_t>::max();
      c.ww[SH_GAP_BUCKETS - 1] = 1;
    }
    b.counts.push_back(c);
  }
  return b;
}

/// Every (CPU, line) of ncpus CPUs and the first nlines lines, ascending.
std::vector<std::pair<uint32_t, uint32_t>> all_pairs(uint32_t ncpus, uint32_t nlines) {
  std::vector<std::pair<uint32_t, uint32_t>> v;
  for (uint32_t c = 0; c < ncpus; ++c)
    for (uint32_t l = 0; l < nlines; ++l) v.push_back({c, l});
  return v;
}

/// n samples (make_samples) where sample i > 0 carries gaps from sample i - 1 when
/// with(i) says so.
template <typename F>
std::vector<Sample> gap_samples(const Meta& m, int n, F with) {
  std::vector<Sample> v = make_samples(m, n);
  for (int i = 1; i < n; ++i)
    if (with(i)) v[size_t(i)].gaps = batch(v[size_t(i) - 1].mono_ns, {{0, 1}, {0, 7}, {2, 0}, {3, 69}}, uint32_t(i));
  return v;
}

/// The type and flags of every frame after META in a recording's bytes.
std::vector<std::pair<FrameType, uint8_t>> frames_of(const std::string& path) {
  const std::string d = slurp(path);
  std::vector<std::pair<FrameType, uint8_t>> out;
  for (uint64_t at = RecordingReader::open(path)->data_start(); at + kFrameHeaderBytes <= d.size();) {
    uint32_t len;
    std::memcpy(&len, d.data() + at + 4, 4);
    out.push_back({static_cast<FrameType>(d[at + 8]), static_cast<uint8_t>(d[at + 9])});
    at += kFrameHeaderBytes + len;
  }
  return out;
}

/// A GAPS payload by hand.
struct Payload {
  std::string b;
  template <typename T>
  Payload& put(T v) {
    b.append(reinterpret_cast<const char*>(&v), sizeof v);
    return *this;
  }
  Payload& var(uint64_t v) {
    while (v >= 0x80) {
      b.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    b.push_back(static_cast<char>(v));
    return *this;
  }
  /// An entry with empty histograms (5 bytes).
  Payload& entry(uint64_t cpu_gap, uint64_t line) { return var(cpu_gap).var(line).var(0).var(0).var(0); }
};

Payload header(uint64_t from, uint32_t n, uint64_t full = 0) {
  Payload p;
  p.put<uint64_t>(from).put<uint64_t>(full).put<uint32_t>(n);
  return p;
}

/// Sets a recording's header to format 1.minor (its CRC fixed).
void set_minor(std::string& d, uint16_t minor) {
  std::memcpy(d.data() + 10, &minor, 2);
  const uint32_t crc = crc32c(d.data(), 28);
  std::memcpy(d.data() + 28, &crc, 4);
}

}  // namespace

TEST(GapsFrame, MetaSamplesPerSecondIsAWholeNumberInRange) {
  const Meta m = gaps_meta();
  nlohmann::json j = m;
  EXPECT_EQ(j.at("gap_samples_per_s"), 4000);
  EXPECT_EQ(j.get<Meta>().gap_samples_per_s, 4000u);
  j["gap_samples_per_s"] = nullptr;
  EXPECT_EQ(j.get<Meta>().gap_samples_per_s, 0u) << "null: not sampled, as gap_lines' null";
  for (const nlohmann::json bad : {nlohmann::json(-1), nlohmann::json(1.5), nlohmann::json("4000"), nlohmann::json(5'000'000'000LL)}) {
    j["gap_samples_per_s"] = bad;
    EXPECT_THROW(j.get<Meta>(), std::runtime_error) << bad.dump();
  }
  j.erase("gap_samples_per_s");
  EXPECT_EQ(j.get<Meta>().gap_samples_per_s, 0u) << "a recording before it: every gap";
}

TEST(GapsFrame, RoundTripRawAndCompressed) {
  const Meta m = gaps_meta();
  for (bool compress : {false, true}) {
    SCOPED_TRACE(compress);
    TempDir dir("gaps_rt");
    std::vector<Sample> w = make_samples(m, 7);
    w[1].gaps = batch(w[0].mono_ns, {{0, 0}, {0, 3}, {1, 0}, {3, 69}}, 1, 5);
    w[2].gaps = GapBatch{w[1].mono_ns, {}, 7};  // nothing moved, 7 accesses had no room
    // w[3]: no gap counts, between two samples with them
    w[4].gaps = batch(w[3].mono_ns, {{2, 5}}, 4, std::numeric_limits<uint64_t>::max());
    w[5].gaps = batch(w[4].mono_ns, all_pairs(4, kMaxGapEntriesPerCpu), 5);  // large: zstd shrinks it
    w[6].gaps = batch(w[5].mono_ns, {{1, 1}, {1, 2}}, 6);
    write_samples(dir / "a.shot", m, w, compress);

    auto r = RecordingReader::open(dir / "a.shot");
    EXPECT_EQ(r->minor(), kFormatMinor);  // written by this version (GAPS since 1.4)
    EXPECT_EQ(r->meta().gap_lines, m.gap_lines);
    EXPECT_EQ(r->meta().gap_samples_per_s, m.gap_samples_per_s);
    auto got = read_all(*r);
    ASSERT_EQ(got.size(), w.size());
    for (size_t i = 0; i < w.size(); ++i) {
      expect_same(got[i], w[i]);
      EXPECT_EQ(got[i].gaps, w[i].gaps) << i;
    }
    EXPECT_FALSE(r->damage().has_value());
    EXPECT_EQ(r->stats().gap_frames, 5u);
    EXPECT_EQ(r->stats().gap_entries, 4u + 0 + 1 + 4 * kMaxGapEntriesPerCpu + 2);
    EXPECT_EQ(r->stats().unknown_frames, 0u);

    // Each GAPS frame right before its sample; zstd only when asked and smaller.
    size_t ngaps = 0, zstd = 0;
    const auto fr = frames_of(dir / "a.shot");
    for (size_t k = 0; k < fr.size(); ++k)
      if (fr[k].first == FrameType::gaps) {
        ++ngaps;
        zstd += fr[k].second & 1;
        ASSERT_LT(k + 1, fr.size());
        EXPECT_EQ(fr[k + 1].first, FrameType::sample);
      }
    EXPECT_EQ(ngaps, 5u);
    EXPECT_EQ(zstd, compress ? 1u : 0u);  // only w[5]'s frame is large enough
  }
}

TEST(GapsFrame, WrittenAfterExactAndBeforeOnline) {
  Meta m = gaps_meta();
  m.host.online = {0, 1, 2, 3};
  TempDir dir("gaps_order");
  std::vector<Sample> w = make_samples(m, 3);
  for (auto& s : w) s.online = {0, 1, 2, 3};
  w[2].online = {0, 1, 2};  // an ONLINE frame before sample 2
  w[2].exact = ExactBatch{{{w[2].mono_ns - 5, 1, 0, 0}}, 0};
  w[2].gaps = batch(w[1].mono_ns, {{1, 1}}, 2);
  write_samples(dir / "a.shot", m, w);
  const auto fr = frames_of(dir / "a.shot");
  std::vector<FrameType> types;
  for (auto& f : fr) types.push_back(f.first);
  // sample 0 (keyframe: ONLINE first), sample 1, then EXACT, GAPS, ONLINE, SAMPLE, INDEX, END
  const std::vector<FrameType> want = {FrameType::online, FrameType::sample, FrameType::sample, FrameType::exact,
                                       FrameType::gaps,   FrameType::online, FrameType::sample, FrameType::index,
                                       FrameType::end};
  EXPECT_EQ(types, want);
  auto r = RecordingReader::open(dir / "a.shot");
  auto got = read_all(*r);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[2].gaps, w[2].gaps);
  EXPECT_EQ(got[2].exact, w[2].exact);
  EXPECT_EQ(got[2].online, w[2].online);
}

TEST(GapsFrame, ASeekOrTheFirstSampleOfAFileHasNone) {
  const Meta m = gaps_meta();
  TempDir dir("gaps_seek");
  // 70 samples: keyframes at 0 and 64; every sample after the first with gap counts
  const std::vector<Sample> w = gap_samples(m, 70, [](int) { return true; });
  write_samples(dir / "a.shot", m, w);
  auto r = RecordingReader::open(dir / "a.shot");
  Sample s;
  ASSERT_TRUE(r->next(s));
  EXPECT_FALSE(s.gaps.has_value());
  ASSERT_TRUE(r->next(s));
  EXPECT_EQ(s.gaps, w[1].gaps);
  for (size_t i : {5u, 64u, 65u, 2u, 69u}) {  // inside a keyframe's run, at a keyframe, just after one, backwards
    SCOPED_TRACE(i);
    ASSERT_TRUE(r->seek_sample(i));
    ASSERT_TRUE(r->next(s));
    EXPECT_EQ(s.mono_ns, w[i].mono_ns);
    EXPECT_FALSE(s.gaps.has_value()) << "its interval started at a sample the caller did not get";
    if (i + 1 < w.size()) {
      ASSERT_TRUE(r->next(s));
      EXPECT_EQ(s.gaps, w[i + 1].gaps);
    }
  }
  // seek_sample(i + 1) right after next() returned i: still a seek, still none
  ASSERT_TRUE(r->seek_sample(10));
  ASSERT_TRUE(r->next(s));
  ASSERT_TRUE(r->seek_sample(11));
  ASSERT_TRUE(r->next(s));
  EXPECT_FALSE(s.gaps.has_value());
  // skip() hands a sample out too: the next one keeps its counts
  ASSERT_TRUE(r->skip());
  ASSERT_TRUE(r->next(s));
  EXPECT_EQ(s.gaps, w[13].gaps);
  ASSERT_TRUE(r->seek_time(w[30].mono_ns - 1));
  ASSERT_TRUE(r->next(s));
  EXPECT_EQ(s.mono_ns, w[30].mono_ns);
  EXPECT_FALSE(s.gaps.has_value());
  ASSERT_TRUE(r->next(s));
  EXPECT_EQ(s.gaps, w[31].gaps);
}

TEST(GapsFrame, CountsFromAnotherSampleAreNotGiven) {
  // A GAPS frame whose from_ns is not the sample before it (a writer given such a batch
  // writes it as it is): the reader does not hand it to the sample.
  const Meta m = gaps_meta();
  TempDir dir("gaps_from");
  std::vector<Sample> w = gap_samples(m, 4, [](int) { return true; });
  w[2].gaps->from_ns = w[0].mono_ns;  // over two intervals
  w[3].gaps->from_ns = w[2].mono_ns - 1;
  write_samples(dir / "a.shot", m, w);
  auto r = RecordingReader::open(dir / "a.shot");
  auto got = read_all(*r);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[1].gaps, w[1].gaps);
  EXPECT_FALSE(got[2].gaps.has_value());
  EXPECT_FALSE(got[3].gaps.has_value());
  EXPECT_FALSE(r->damage().has_value());
  EXPECT_EQ(r->stats().gap_frames, 3u);  // read, checked and counted all the same
}

TEST(GapsFrame, WindowedCursorKeepsOnlyCountsFromTheSampleItReturned) {
  Meta m = gaps_meta();
  m.interval_ns = 1'000'000'000;
  TempDir dir("gaps_window");
  const std::vector<Sample> w = gap_samples(m, 12, [](int) { return true; });
  write_samples(dir / "a.shot", m, w);
  {
    // --from 5: time zero, then the samples from 5 s on. Sample 5's counts are over (4, 5],
    // and the consumer's interval is (0, 5]: none.
    auto r = RecordingReader::open(dir / "a.shot");
    SampleWindow win;
    win.from_s = 5;
    win.interval_ns = m.interval_ns;
    WindowedCursor cur(*r, r.get(), win);
    Sample s;
    ASSERT_TRUE(cur.next(s));
    EXPECT_EQ(s.mono_ns, w[0].mono_ns);
    EXPECT_FALSE(s.gaps.has_value());
    ASSERT_TRUE(cur.next(s));
    EXPECT_EQ(s.mono_ns, w[5].mono_ns);
    EXPECT_FALSE(s.gaps.has_value());
    ASSERT_TRUE(cur.next(s));
    EXPECT_EQ(s.gaps, w[6].gaps);
  }
  {
    // --from 1: the seek lands on sample 1, right after time zero, which the cursor did
    // return; a seek drops the counts of the sample it lands on all the same.
    auto r = RecordingReader::open(dir / "a.shot");
    SampleWindow win;
    win.from_s = 1;
    win.interval_ns = m.interval_ns;
    WindowedCursor cur(*r, r.get(), win);
    Sample s;
    ASSERT_TRUE(cur.next(s));
    ASSERT_TRUE(cur.next(s));
    EXPECT_EQ(s.mono_ns, w[1].mono_ns);
    EXPECT_FALSE(s.gaps.has_value()) << "the reader's seek drops them; the cursor fabricates nothing";
  }
  {
    // replay's seek: seek_index(k - 1), then two samples: the second keeps its counts.
    auto r = RecordingReader::open(dir / "a.shot");
    WindowedCursor cur(*r, r.get(), SampleWindow{});
    Sample a, b;
    ASSERT_TRUE(cur.seek_index(7));
    ASSERT_TRUE(cur.next(a));
    ASSERT_TRUE(cur.next(b));
    EXPECT_FALSE(a.gaps.has_value());
    EXPECT_EQ(b.gaps, w[8].gaps);
  }
}

TEST(GapsFrame, RotationRepeatsTheSampleWithoutItsCounts) {
  // Every interval's counts are in exactly one file, and each file reads back what was
  // written for the samples after its first.
  const Meta m = gaps_meta();
  TempDir dir("gaps_rot");
  const std::vector<Sample> w = gap_samples(m, 40, [](int) { return true; });
  write_samples(dir / "one.shot", m, w, false);
  uint64_t limit = 0;
  {
    auto r = RecordingReader::open(dir / "one.shot");
    const auto& pos = r->sample_positions();  // a keyframe, then about 8 samples a file
    limit = pos[9].offset + 1024;
  }
  {
    WriterOptions wo;
    wo.compress = false;
    RotatingWriter rw(dir / "r.shot", m, wo, RotateOptions{limit, 20});
    for (const Sample& s : w) rw.write_sample(s);
    rw.close();
  }
  std::map<uint64_t, size_t> by_time;
  for (size_t i = 0; i < w.size(); ++i) by_time[w[i].mono_ns] = i;
  std::vector<std::string> files;
  for (unsigned k = 20; k >= 1; --k)
    if (std::filesystem::exists(RotatingWriter::rotated_name(dir / "r.shot", k)))
      files.push_back(RotatingWriter::rotated_name(dir / "r.shot", k));
  files.push_back(dir / "r.shot");
  EXPECT_GE(files.size(), 3u) << "the limit makes it rotate";
  size_t counted = 0, intervals = 0;
  for (const std::string& p : files) {
    SCOPED_TRACE(p);
    auto r = RecordingReader::open(p);
    auto got = read_all(*r);
    EXPECT_FALSE(r->damage().has_value());
    ASSERT_FALSE(got.empty());
    EXPECT_FALSE(got[0].gaps.has_value());
    counted += r->stats().gap_frames;
    intervals += got.size() - 1;
    for (size_t i = 1; i < got.size(); ++i) EXPECT_EQ(got[i].gaps, w[by_time.at(got[i].mono_ns)].gaps) << i;
  }
  EXPECT_EQ(intervals, w.size() - 1);
  EXPECT_EQ(counted, w.size() - 1) << "every interval's counts in exactly one file";
}

TEST(GapsFrame, AWriterRefusesABatchItsReaderWouldRefuse) {
  const Meta m = gaps_meta();
  TempDir dir("gaps_wbad");
  std::vector<Sample> w = make_samples(m, 2);
  RecordingWriter wr(dir / "a.shot", m);
  wr.write_sample(w[0]);
  const uint64_t bytes = wr.bytes();
  auto refuses = [&](const GapBatch& b, const std::string& says) {
    SCOPED_TRACE(says);
    Sample s = w[1];
    s.gaps = b;
    try {
      wr.write_sample(s);
      ADD_FAILURE() << "written";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
    EXPECT_EQ(wr.bytes(), bytes);
  };
  refuses(batch(w[0].mono_ns, {{1, 2}, {1, 1}}, 1), "gap entry 1 (CPU 1, line 1) is not after the one before it");
  refuses(batch(w[0].mono_ns, {{1, 2}, {1, 2}}, 1), "gap entry 1 (CPU 1, line 2) is not after");
  refuses(batch(w[0].mono_ns, {{2, 0}, {1, 5}}, 1), "gap entry 1 (CPU 1, line 5) is not after");
  refuses(batch(w[0].mono_ns, {{4, 0}}, 1), "gap entry 0 (CPU 4, line 0) is out of range (4 CPUs, 70 gap lines)");
  refuses(batch(w[0].mono_ns, {{0, kLines}}, 1), "gap entry 0 (CPU 0, line 70) is out of range");
  refuses(batch(w[1].mono_ns + 1, {}, 1), "after the sample's time");
  std::vector<std::pair<uint32_t, uint32_t>> many;
  for (uint32_t l = 0; l <= kMaxGapEntriesPerCpu; ++l) many.push_back({0, l});
  refuses(batch(w[0].mono_ns, many, 1), "more than " + std::to_string(kMaxGapEntriesPerCpu) + " gap entries of CPU 0");
  many.pop_back();
  Sample s = w[1];
  s.gaps = batch(w[0].mono_ns, many, 1);  // kMaxGapEntriesPerCpu of one CPU: the most there may be
  EXPECT_TRUE(wr.write_sample(s));
  wr.close();
  auto r = RecordingReader::open(dir / "a.shot");
  auto got = read_all(*r);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].gaps, s.gaps);
}

TEST(GapsFrame, ABadFrameIsOneLineOfDamageAfterTheSamplesBeforeIt) {
  const Meta m = gaps_meta();
  TempDir dir("gaps_bad");
  const std::vector<Sample> w = make_samples(m, 5);
  write_samples(dir / "a.shot", m, w, false);
  const uint64_t t = w[3].mono_ns, from = w[2].mono_ns;

  std::string big(4u << 20, '\0');  // a bomb: 4 MiB of zeros in a few hundred bytes
  std::memcpy(big.data(), &from, 8);
  std::string bomb(ZSTD_compressBound(big.size()), '\0');
  bomb.resize(ZSTD_compress(bomb.data(), bomb.size(), big.data(), big.size(), 3));
  std::string undecompressable = "\x28\xb5\x2f\xfd";
  undecompressable += std::string(20, '\x11');

  Payload per_cpu = header(from, kMaxGapEntriesPerCpu + 1);
  for (uint32_t l = 0; l <= kMaxGapEntriesPerCpu; ++l) per_cpu.entry(0, l);

  struct Case {
    const char* name;
    std::string payload;
    uint8_t flags;
    const char* says;
  };
  const std::vector<Case> cases = {
      {"truncated header", header(from, 0).b.substr(0, 15), 0, "bad gaps frame: truncated header"},
      {"from after its sample", header(t + 1, 0).b, 0, "bad gaps frame: counts from"},
      {"n larger than the payload", header(from, 3).entry(0, 0).entry(0, 1).b, 0, "bad gaps frame: 3 entries, more than"},
      {"n larger than CPUs x lines", [&] {
         Payload p = header(from, 4 * kMaxGapEntriesPerCpu + 1);
         p.b += std::string(5 * (4 * kMaxGapEntriesPerCpu + 1), '\0');
         return p.b;
       }(), 0, "bad gaps frame: 65 entries, more than its payload or 4 CPUs x 16 lines hold"},
      {"line out of range", header(from, 1).entry(0, kLines).b, 0, "bad gaps frame: entry 0 names CPU 0 line 70"},
      {"CPU out of range", header(from, 2).entry(1, 0).entry(3, 0).b, 0, "bad gaps frame: entry 1 names CPU 4 line 0"},
      {"first CPU out of range", header(from, 1).entry(9, 0).b, 0, "entry 0 names CPU 9 line 0"},
      {"out of order", header(from, 2).entry(1, 5).entry(0, 4).b, 0, "entry 1 (CPU 1 line 4) is not after the one before it"},
      {"repeated", header(from, 2).entry(2, 5).entry(0, 5).b, 0, "entry 1 (CPU 2 line 5) is not after the one before it"},
      {"too many of one CPU", per_cpu.b, 0, "bad gaps frame: more than 16 entries of CPU 0"},
      {"too many buckets", header(from, 1).var(0).var(0).var(SH_GAP_BUCKETS + 1).var(0).var(0).b, 0, "ww: 59 buckets of 58"},
      {"bucket out of range", header(from, 1).var(0).var(0).var(0).var(2).var(56).var(1).var(1).var(1).var(0).b, 0,
       "entry 0 (CPU 0 line 0) wa: bucket 58 of 58 with value 1"},
      {"bucket gap out of range", header(from, 1).var(0).var(0).var(0).var(0).var(1).var(99).var(1).b, 0,
       "ra: bucket 99 of 58"},
      {"value 0", header(from, 1).var(0).var(0).var(1).var(3).var(0).var(0).var(0).b, 0, "ww: bucket 3 of 58 with value 0"},
      {"value above 2^32-1", header(from, 1).var(0).var(0).var(1).var(3).var(1ull << 32).var(0).var(0).b, 0,
       "with value 4294967296"},
      {"truncated entry", header(from, 1).var(0).var(0).var(2).var(3).var(1).b, 0, "bad gaps frame: truncated or trailing bytes"},
      {"bad varint", header(from, 1).b + std::string(11, '\xff'), 0, "truncated or trailing bytes"},
      {"trailing bytes", header(from, 1).entry(0, 0).b + "x", 0, "bad gaps frame: truncated or trailing bytes"},
      {"decompression bomb", bomb, 1, "compressed gaps frame with a bad or oversized content size"},
      {"not zstd", undecompressable, 1, "compressed gaps frame"},
  };
  MemFile mf;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    mf.set(with_frame_before_sample(dir / "a.shot", 3, make_frame(FrameType::gaps, c.flags, t, c.payload)));
    auto r = RecordingReader::open(mf.path());
    auto got = read_all(*r);
    ASSERT_EQ(got.size(), 3u) << "the samples before it are kept";
    for (size_t i = 0; i < got.size(); ++i) expect_same(got[i], w[i]);
    ASSERT_TRUE(r->damage().has_value());
    const std::string& why = r->damage()->reason;
    EXPECT_NE(why.find(c.says), std::string::npos) << why;
    EXPECT_EQ(why.find('\n'), std::string::npos) << why;
  }
  // The same frames in a 1.3 file: an unknown frame type, skipped.
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::string d = with_frame_before_sample(dir / "a.shot", 3, make_frame(FrameType::gaps, c.flags, t, c.payload));
    set_minor(d, 3);
    mf.set(d);
    auto r = RecordingReader::open(mf.path());
    EXPECT_EQ(read_all(*r).size(), 5u);
    EXPECT_FALSE(r->damage().has_value());
    EXPECT_EQ(r->stats().unknown_frames, 1u);
  }
}

TEST(GapsFrame, ASecondFrameForOneSampleIsDamage) {
  // The writer writes one per sample: a second would be counted by info but not used by
  // report, so the reader refuses it like any bad frame.
  const Meta m = gaps_meta();
  TempDir dir("gaps_twice");
  const std::vector<Sample> w = make_samples(m, 5);
  write_samples(dir / "a.shot", m, w, false);
  const uint64_t t = w[3].mono_ns, from = w[2].mono_ns;
  const std::string frame = make_frame(FrameType::gaps, 0, t, header(from, 1).entry(0, 0).b);
  MemFile once, twice;
  once.set(with_frame_before_sample(dir / "a.shot", 3, frame));
  {
    auto r = RecordingReader::open(once.path());
    EXPECT_EQ(read_all(*r).size(), 5u);
    EXPECT_FALSE(r->damage().has_value());
  }
  twice.set(with_frame_before_sample(once.path(), 3, frame));
  auto r = RecordingReader::open(twice.path());
  EXPECT_EQ(read_all(*r).size(), 3u) << "the samples before it are kept";
  ASSERT_TRUE(r->damage().has_value());
  EXPECT_NE(r->damage()->reason.find("bad gaps frame: a second one for the sample at"), std::string::npos)
      << r->damage()->reason;
  EXPECT_EQ(r->stats().gap_frames, 1u);
}

TEST(GapsFrame, AFormat13ReaderSkipsThemAnd13FilesRead) {
  const Meta m = gaps_meta();
  TempDir dir("gaps_13");
  const std::vector<Sample> w = gap_samples(m, 6, [](int i) { return i != 3; });
  write_samples(dir / "a.shot", m, w);
  std::string d = slurp(dir / "a.shot");
  set_minor(d, 3);  // what a 1.3 reader makes of it
  spit(dir / "b.shot", d);
  auto r = RecordingReader::open(dir / "b.shot");
  EXPECT_EQ(r->minor(), 3);
  auto got = read_all(*r);
  ASSERT_EQ(got.size(), w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    expect_same(got[i], w[i]);
    EXPECT_FALSE(got[i].gaps.has_value());
  }
  EXPECT_EQ(r->stats().unknown_frames, 4u);
  EXPECT_EQ(r->stats().gap_frames, 0u);
  EXPECT_FALSE(r->damage().has_value());
  // The 1.3 fixtures (no GAPS frames) read, without gap counts.
  for (const char* f : {"v1.3-basic.shot", "v1.3-exact.shot", "v1.3-hotplug.shot"}) {
    SCOPED_TRACE(f);
    auto r13 = RecordingReader::open(std::string(SCHEDHOT_DATA) + "/" + f);
    EXPECT_EQ(r13->minor(), 3);
    auto all = read_all(*r13);
    EXPECT_EQ(all.size(), 70u);
    for (auto& s : all) EXPECT_FALSE(s.gaps.has_value());
    EXPECT_FALSE(r13->damage().has_value());
    EXPECT_EQ(r13->stats().unknown_frames, 0u);
  }
}

TEST(GapsFrame, A14WriterWithoutGapsWritesWhat13Wrote) {
  // The fixtures of 1.3 and 1.4 were written from the same samples: apart from the
  // header's minor version (bytes 10..11) and its CRC (28..31), the files are the same.
  for (const char* name : {"basic", "raw", "unclosed", "hotplug", "exact"}) {
    SCOPED_TRACE(name);
    const std::string a = slurp(fmt::format("{}/v1.3-{}.shot", SCHEDHOT_DATA, name));
    const std::string b = slurp(fmt::format("{}/v1.4-{}.shot", SCHEDHOT_DATA, name));
    ASSERT_EQ(a.size(), b.size());
    ASSERT_GT(a.size(), kFileHeaderBytes);
    EXPECT_EQ(a.substr(0, 10), b.substr(0, 10));
    EXPECT_EQ(a.substr(12, 16), b.substr(12, 16));
    EXPECT_TRUE(a.substr(kFileHeaderBytes) == b.substr(kFileHeaderBytes)) << "frames differ";
    EXPECT_EQ(b[10], 4);
  }
}
