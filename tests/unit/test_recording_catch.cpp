// CATCH frames (format 1.5, issue 31): Sample::caught (--catch events with their symbolized
// kernel stacks) written and read back like EXACT frames (raw or zstd), hostile payloads
// refused with one line of damage, the first sample after a seek without them, rotation
// keeping every event in one file, and a 1.4 reader's view of a 1.5 file (skipped). STEAL
// frames (1.6): the events' steal times, and a 1.5 reader's view of them (skipped).
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <zstd.h>

#include "analysis/info.h"
#include "output/info_text.h"
#include "store/crc32c.h"
#include "store/recording.h"
#include "store/rotate.h"
#include "store/sample_codec.h"
#include "test_recording_util.h"

using namespace schedhot;
using namespace schedhot::testing;

namespace {

Meta catch_meta(uint32_t ncpus = 4) {
  Meta m = synthetic_meta(ncpus);
  CatchRule r;
  r.text = "cpupri_set>20us";
  r.probe = "cpupri_set";
  r.asked_ns = 20'000;
  r.threshold_ns = 19'968;
  apply_catch_rules(m, {r});
  return m;
}

const std::vector<StackFrame> kStackA = {{"cpupri_set", 0x4c}, {"enqueue_task_rt", 0x1a2}, {"", 0},
                                         {"ttwu_do_activate", 0x8e}};
const std::vector<StackFrame> kStackB = {{"cpupri_set", 0x61}, {"dequeue_rt_stack", 0x30},
                                         {"__schedule", 0x7fffffff}};

/// Five events over (since, since + 1 s] on CPUs 0..3 sharing two stacks (the last
/// without one); salt varies the values.
CatchBatch batch(uint64_t since, uint32_t salt = 0, uint64_t lost = 0) {
  CatchBatch b;
  b.stacks = {kStackA, kStackB};
  b.lost = lost;
  for (uint32_t k = 0; k < 5; ++k) {
    CaughtEvent e;
    e.ts_ns = since + 1000 + (k == 2 ? 1 : k) * 100'000'000ull + salt;  // event 2 at event 1's time
    e.dur_ns = 20'000 + k * 7 + salt;
    e.cpu = k % 4;
    e.probe = uint16_t(k % 2 ? SH_P_CPUPRI_FIND : SH_P_CPUPRI_SET);
    e.flags = uint16_t(SH_CATCH_F_IRQ | (k % 2 ? 0 : SH_CATCH_F_DETAIL));
    e.pid = 4000 + k;
    e.tgid = k == 3 ? 0xffffffffu : 4000;
    e.comm = k == 0 ? "stress-ng-cpu:1" : "kworker/u8:3";  // 15 bytes: the most
    e.detail = k % 2 ? 0 : (uint64_t(3) << 16 | 7);
    e.irq_ns = k * 1500;
    e.softirq_ns = k == 4 ? ~uint64_t(0) : 250;
    e.nmi_ns = k == 1 ? 999 : 0;
    e.stack = k == 4 ? 0 : 1 + k % 2;
    b.events.push_back(e);
  }
  return b;
}

/// n samples (make_samples) where sample i > 0 carries a batch over its interval when
/// with(i) says so.
template <typename F>
std::vector<Sample> catch_samples(const Meta& m, int n, F with) {
  std::vector<Sample> v = make_samples(m, n);
  for (int i = 1; i < n; ++i)
    if (with(i)) v[size_t(i)].caught = batch(v[size_t(i) - 1].mono_ns, uint32_t(i), uint64_t(i % 3));
  return v;
}

/// The type of every frame after META in a recording's bytes.
std::vector<FrameType> frame_types(const std::string& path) {
  const std::string d = slurp(path);
  std::vector<FrameType> out;
  for (uint64_t at = RecordingReader::open(path)->data_start(); at + kFrameHeaderBytes <= d.size();) {
    uint32_t len;
    std::memcpy(&len, d.data() + at + 4, 4);
    out.push_back(static_cast<FrameType>(d[at + 8]));
    at += kFrameHeaderBytes + len;
  }
  return out;
}

/// A CATCH payload by hand.
struct Payload {
  std::string b;
  Payload& var(uint64_t v) {
    while (v >= 0x80) {
      b.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    b.push_back(static_cast<char>(v));
    return *this;
  }
  Payload& text(const std::string& s) {
    var(s.size());
    b += s;
    return *this;
  }
  /// An event: ts gap, dur, cpu, probe, flags, pid, tgid, comm, detail, irq, softirq, nmi, stack.
  Payload& event(uint64_t gap, uint64_t cpu = 0, uint64_t probe = SH_P_CPUPRI_SET, uint64_t stack = 0,
                 const std::string& comm = "a", uint64_t flags = 0, uint64_t pid = 1, uint64_t tgid = 1) {
    return var(gap).var(20'000).var(cpu).var(probe).var(flags).var(pid).var(tgid).text(comm).var(0).var(0).var(0).var(0).var(
        stack);
  }
};

/// lost 0 and the symbol table syms (the stack count is next).
Payload symtab(const std::vector<std::string>& syms) {
  Payload p;
  p.var(0).var(syms.size());
  for (auto& s : syms) p.text(s);
  return p;
}

/// lost 0, symbols syms, one stack of the given symbol indices (none when frames is empty).
Payload head(const std::vector<std::string>& syms = {"cpupri_set"}, const std::vector<uint64_t>& frames = {0}) {
  Payload p = symtab(syms);
  if (frames.empty()) return p.var(0);
  p.var(1).var(frames.size());
  for (uint64_t f : frames) p.var(f).var(0x10);
  return p;
}

/// Sets a recording's header to format 1.minor (its CRC fixed).
void set_minor(std::string& d, uint16_t minor) {
  std::memcpy(d.data() + 10, &minor, 2);
  const uint32_t crc = crc32c(d.data(), 28);
  std::memcpy(d.data() + 28, &crc, 4);
}

constexpr uint64_t kSince = 5'000'000'000ull, kMono = 6'000'000'000ull;
constexpr uint32_t kCpus = 4;

bool decodes(const std::string& raw, CatchBatch& out, std::string& why, uint64_t since = kSince) {
  return decode_caught(raw, since, kMono, kCpus, SH_NPROBES, out, why);
}

}  // namespace

TEST(CatchFrame, CodecRoundTripTwoStacksSharedByFiveEventsAcrossCpus) {
  const CatchBatch b = batch(kSince, 3, 17);
  const std::string raw = encode_caught(b, kSince);
  CatchBatch got;
  std::string why;
  ASSERT_TRUE(decodes(raw, got, why)) << why;
  EXPECT_EQ(got, b);
  ASSERT_EQ(got.stacks.size(), 2u);
  EXPECT_EQ(got.stacks[0][0].sym, "cpupri_set");
  EXPECT_EQ(got.stacks[0][0].off, 0x4cu);
  EXPECT_EQ(got.stacks[0][2].sym, "");
  EXPECT_EQ(got.stacks[1][2].off, 0x7fffffffu);
  ASSERT_EQ(got.events.size(), 5u);
  EXPECT_EQ(got.events[1].ts_ns, got.events[2].ts_ns) << "equal times are in order";
  EXPECT_EQ(got.events[0].comm, "stress-ng-cpu:1");
  EXPECT_EQ(got.events[3].tgid, 0xffffffffu);
  EXPECT_EQ(got.events[4].softirq_ns, ~uint64_t(0));
  EXPECT_EQ(got.events[4].stack, 0u);
  EXPECT_EQ(got.events[2].cpu, 2u);
  EXPECT_EQ(got.lost, 17u);
  // a symbol used by both stacks is in the frame's table once; symbols are text, no address
  size_t n = 0;
  for (size_t at = raw.find("cpupri_set"); at != std::string::npos; at = raw.find("cpupri_set", at + 1)) ++n;
  EXPECT_EQ(n, 1u);
  // the same batch absolute (no previous sample), and an empty one
  ASSERT_TRUE(decodes(encode_caught(b, 0), got, why, 0)) << why;
  EXPECT_EQ(got, b);
  ASSERT_TRUE(decodes(encode_caught(CatchBatch{}, kSince), got, why)) << why;
  EXPECT_EQ(got, CatchBatch{});
  EXPECT_EQ(encode_caught(CatchBatch{}, kSince), std::string("\0\0\0\0", 4));
}

TEST(CatchFrame, RoundTripInAFileRawAndCompressed) {
  const Meta m = catch_meta();
  for (bool compress : {false, true}) {
    SCOPED_TRACE(compress);
    TempDir dir("catch_rt");
    std::vector<Sample> w = make_samples(m, 6);
    w[1].caught = batch(w[0].mono_ns, 1, 2);
    w[2].caught = CatchBatch{{}, {}, 9};  // nothing caught, 9 records lost
    // w[3]: none, between two samples with them
    w[4].caught = batch(w[3].mono_ns, 4);
    CatchBatch big;  // large and repetitive: zstd shrinks it
    big.stacks = {kStackA, kStackB};
    for (uint32_t k = 0; k < 2000; ++k) {
      CaughtEvent e = batch(w[4].mono_ns).events[k % 4];
      e.ts_ns = w[4].mono_ns + 1 + k * 1000;
      big.events.push_back(e);
    }
    w[5].caught = big;
    write_samples(dir / "a.shot", m, w, compress);

    auto r = RecordingReader::open(dir / "a.shot");
    EXPECT_EQ(r->minor(), kFormatMinor);
    EXPECT_EQ(r->meta().catch_rules, m.catch_rules);
    auto got = read_all(*r);
    ASSERT_EQ(got.size(), w.size());
    for (size_t i = 0; i < w.size(); ++i) {
      expect_same(got[i], w[i]);
      EXPECT_EQ(got[i].caught, w[i].caught) << i;
    }
    EXPECT_FALSE(r->damage().has_value());
    EXPECT_EQ(r->stats().caught_frames, 4u);
    EXPECT_EQ(r->stats().caught_events, 5u + 0 + 5 + 2000);
    EXPECT_EQ(r->stats().caught_lost, 2u + 9);
    EXPECT_EQ(r->stats().unknown_frames, 0u);
    // info says so
    auto again = RecordingReader::open(dir / "a.shot");
    const nlohmann::json info = recording_info(*again, dir / "a.shot");
    const auto& c = info.at("integrity").at("caught");
    EXPECT_EQ(c.at("rules"), 1);
    EXPECT_EQ(c.at("frames"), 4);
    EXPECT_EQ(c.at("events"), 2010);
    EXPECT_EQ(c.at("lost"), 11);
    EXPECT_NE(render_info_text(info).find("2010 --catch events in 4 frames (1 rule), 11 lost"), std::string::npos)
        << render_info_text(info);
  }
  // compressed: the big frame is stored with zstd
  TempDir dir("catch_rt_z");
  std::vector<Sample> w = make_samples(m, 2);
  CatchBatch big;
  big.stacks = {kStackA};
  for (uint32_t k = 0; k < 500; ++k) {
    CaughtEvent e = batch(w[0].mono_ns).events[0];
    e.ts_ns = w[0].mono_ns + 1 + k;
    big.events.push_back(e);
  }
  w[1].caught = big;
  write_samples(dir / "a.shot", m, w, true);
  const std::string d = slurp(dir / "a.shot");
  bool zstd = false;
  for (uint64_t at = RecordingReader::open(dir / "a.shot")->data_start(); at + kFrameHeaderBytes <= d.size();) {
    uint32_t len;
    std::memcpy(&len, d.data() + at + 4, 4);
    if (static_cast<FrameType>(d[at + 8]) == FrameType::caught) zstd = d[at + 9] & 1;
    at += kFrameHeaderBytes + len;
  }
  EXPECT_TRUE(zstd);
}

TEST(CatchFrame, WrittenAfterGapsAndBeforeOnline) {
  Meta m = catch_meta();
  m.host.online = {0, 1, 2, 3};
  m.gap_lines = {{"nohz", 0}, {"nohz", 1}};
  TempDir dir("catch_order");
  std::vector<Sample> w = make_samples(m, 3);
  for (auto& s : w) s.online = {0, 1, 2, 3};
  w[2].online = {0, 1, 2};  // an ONLINE frame before sample 2
  w[2].exact = ExactBatch{{{w[2].mono_ns - 5, 1, 0, 0}}, 0};
  GapCounts g;
  g.cpu = 1;
  g.line = 1;
  g.ww[3] = 4;
  w[2].gaps = GapBatch{w[1].mono_ns, {g}, 0};
  w[2].caught = batch(w[1].mono_ns);
  write_samples(dir / "a.shot", m, w);
  const std::vector<FrameType> want = {FrameType::online, FrameType::sample, FrameType::sample,
                                       FrameType::exact,  FrameType::gaps,   FrameType::caught,
                                       FrameType::online, FrameType::sample, FrameType::index,
                                       FrameType::end};
  EXPECT_EQ(frame_types(dir / "a.shot"), want);
  auto r = RecordingReader::open(dir / "a.shot");
  auto got = read_all(*r);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[2].caught, w[2].caught);
  EXPECT_EQ(got[2].gaps, w[2].gaps);
  EXPECT_EQ(got[2].exact, w[2].exact);
  EXPECT_EQ(got[2].online, w[2].online);
}

TEST(CatchFrame, TheFirstSampleAfterASeekHasNone) {
  const Meta m = catch_meta();
  TempDir dir("catch_seek");
  // 70 samples: keyframes at 0 and 64; every sample after the first with caught events
  const std::vector<Sample> w = catch_samples(m, 70, [](int) { return true; });
  write_samples(dir / "a.shot", m, w);
  auto r = RecordingReader::open(dir / "a.shot");
  Sample s;
  ASSERT_TRUE(r->next(s));
  EXPECT_FALSE(s.caught.has_value());
  ASSERT_TRUE(r->next(s));
  EXPECT_EQ(s.caught, w[1].caught);
  for (size_t i : {5u, 64u, 65u, 2u, 69u, 0u}) {  // inside a keyframe's run, at a keyframe, just after one, backwards
    SCOPED_TRACE(i);
    ASSERT_TRUE(r->seek_sample(i));
    ASSERT_TRUE(r->next(s));
    EXPECT_EQ(s.mono_ns, w[i].mono_ns);
    EXPECT_FALSE(s.caught.has_value()) << "the first sample after a seek has none";
    if (i + 1 < w.size()) {
      ASSERT_TRUE(r->next(s));
      EXPECT_EQ(s.caught, w[i + 1].caught);
      ASSERT_TRUE(r->skip());  // skip() hands a sample out too
      ASSERT_TRUE(r->next(s));
      EXPECT_EQ(s.caught, w[i + 3].caught);
    }
  }
  ASSERT_TRUE(r->seek_time(w[30].mono_ns - 1));
  ASSERT_TRUE(r->next(s));
  EXPECT_EQ(s.mono_ns, w[30].mono_ns);
  EXPECT_FALSE(s.caught.has_value());
  ASSERT_TRUE(r->next(s));
  EXPECT_EQ(s.caught, w[31].caught);
  EXPECT_FALSE(r->damage().has_value());
}

TEST(CatchFrame, RotationKeepsEveryEventInExactlyOneFile) {
  const Meta m = catch_meta();
  TempDir dir("catch_rot");
  const std::vector<Sample> w = catch_samples(m, 40, [](int) { return true; });
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
  uint64_t events = 0, frames = 0;
  for (const std::string& p : files) {
    SCOPED_TRACE(p);
    auto r = RecordingReader::open(p);
    EXPECT_EQ(r->meta().catch_rules, m.catch_rules) << "every file's META has the rules";
    auto got = read_all(*r);
    EXPECT_FALSE(r->damage().has_value());
    ASSERT_FALSE(got.empty());
    EXPECT_FALSE(got[0].caught.has_value()) << "the repeated sample is written without them";
    for (size_t i = 1; i < got.size(); ++i) EXPECT_EQ(got[i].caught, w[by_time.at(got[i].mono_ns)].caught) << i;
    events += r->stats().caught_events;
    frames += r->stats().caught_frames;
  }
  EXPECT_EQ(frames, w.size() - 1) << "every interval's events in exactly one file";
  EXPECT_EQ(events, 5 * (w.size() - 1));
}

TEST(CatchFrame, AWriterRefusesABatchItsReaderWouldRefuse) {
  const Meta m = catch_meta();
  TempDir dir("catch_wbad");
  std::vector<Sample> w = make_samples(m, 2);
  RecordingWriter wr(dir / "a.shot", m);
  wr.write_sample(w[0]);
  const uint64_t bytes = wr.bytes();
  const uint64_t since = w[0].mono_ns;
  auto refuses = [&](const std::function<void(CatchBatch&)>& edit, const std::string& says) {
    SCOPED_TRACE(says);
    Sample s = w[1];
    CatchBatch b = batch(since);
    edit(b);
    s.caught = b;
    try {
      wr.write_sample(s);
      ADD_FAILURE() << "written";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
    EXPECT_EQ(wr.bytes(), bytes) << "nothing written";
  };
  refuses([&](CatchBatch& b) { b.events[0].ts_ns = since; }, "caught event 0 at");
  refuses([&](CatchBatch& b) { b.events[3].ts_ns = b.events[2].ts_ns - 1; }, "caught event 3 at");
  refuses([&](CatchBatch& b) { b.events[4].ts_ns = w[1].mono_ns + 1; }, "caught event 4 at");
  refuses([&](CatchBatch& b) { b.events[1].cpu = 4; }, "on CPU 4 probe");
  refuses([&](CatchBatch& b) { b.events[1].probe = SH_NPROBES; }, "probe 9 is after");
  refuses([&](CatchBatch& b) { b.events[2].stack = 3; }, "caught event 2 names stack 3 of 2");
  refuses([&](CatchBatch& b) { b.events[0].comm = "sixteen-bytes-xx"; }, "caught event 0: a comm of 16 bytes");
  refuses([&](CatchBatch& b) { b.events[0].comm = "tab\there"; }, "not printable");
  refuses([&](CatchBatch& b) { b.stacks[1].resize(SH_CATCH_FRAMES + 1); }, "caught stack 1 has 25 frames, more than 24");
  refuses([&](CatchBatch& b) { b.stacks[0][1].sym = std::string(513, 'x'); }, "a symbol of 513 bytes");
  refuses([&](CatchBatch& b) { b.stacks[0][1].sym = "bad\x7fsym"; }, "not printable");
  // the most there may be: 24 frames, a 512-byte symbol, a 15-byte comm
  Sample s = w[1];
  CatchBatch b = batch(since);
  b.stacks[1].resize(SH_CATCH_FRAMES, StackFrame{std::string(kMaxCatchSymbolBytes, 'r'), 1});
  s.caught = b;
  EXPECT_TRUE(wr.write_sample(s));
  wr.close();
  auto r = RecordingReader::open(dir / "a.shot");
  auto got = read_all(*r);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].caught, s.caught);
}

TEST(CatchFrame, HostilePayloadsAreRefusedWithOneLine) {
  // every event here is at kSince + 1 unless said: inside (kSince, kMono]
  const std::string sym512(kMaxCatchSymbolBytes, 's');
  Payload frames25 = symtab({"f"});
  frames25.var(1).var(SH_CATCH_FRAMES + 1);
  for (uint32_t k = 0; k <= SH_CATCH_FRAMES; ++k) frames25.var(0).var(0);
  frames25.var(0);
  // a few bytes naming a 512-byte symbol from a huge number of frames: bounded
  Payload amplify = symtab({sym512});
  const uint64_t nstacks = 30'000;  // 30000 x 24 frames x 512 bytes: 368 MB
  amplify.var(nstacks);
  for (uint64_t k = 0; k < nstacks; ++k) {
    amplify.var(SH_CATCH_FRAMES);
    for (uint32_t j = 0; j < SH_CATCH_FRAMES; ++j) amplify.var(0).var(0);
  }
  amplify.var(0);
  // a bcast_wait event whose holder detail (abi.h SH_HOLD_D_*) is d
  const auto holder = [&](uint64_t d) {
    return head().var(1).var(1).var(20'000).var(0).var(SH_P_BCAST_WAIT).var(SH_CATCH_F_DETAIL).var(1).var(1).text("a")
        .var(d).var(0).var(0).var(0).var(0).b;
  };
  struct Case {
    const char* name;
    std::string raw;
    const char* says;
  };
  const std::vector<Case> cases = {
      {"empty", "", "bad catch frame: truncated or trailing bytes"},
      {"holder CPU out of range", holder(kCpus + 1), "bad catch frame: event 0 names holder CPU 4 site 0 of 0 candidates (4 CPUs, 8 sites)"},
      {"holder site out of range", holder(1 | (15ull << 16)), "names holder CPU 0 site 15"},
      {"holder candidates out of range", holder(1 | (9ull << 20)), "of 9 candidates"},
      {"symbol count over the payload", Payload().var(0).var(1000).b, "bad catch frame: 1000 symbols, more than its payload holds"},
      {"huge symbol count", Payload().var(0).var(~uint64_t(0)).b, "symbols, more than its payload holds"},
      {"symbol too long", Payload().var(0).var(1).text(sym512 + "x").b, "bad catch frame: symbol 0 is longer than 512 bytes"},
      {"symbol with a control byte", Payload().var(0).var(1).text("cpupri\nset").var(0).var(0).b,
       "bad catch frame: symbol 0 is not printable"},
      {"symbol with a high byte", Payload().var(0).var(1).text("cpupri\xc3\xa9").var(0).var(0).b, "symbol 0 is not printable"},
      {"symbol past the end", Payload().var(0).var(1).var(10).b + "abc", "truncated or trailing bytes"},
      {"stack count over the payload", symtab({"a"}).var(50).b, "50 stacks, more than its payload holds"},
      {"stack of 25 frames", frames25.b, "bad catch frame: stack 0 has 25 frames, more than 24"},
      {"frame names a missing symbol", head({"a", "b"}, {0, 2}).var(0).b, "bad catch frame: stack 0 frame 1 names symbol 2 of 2"},
      {"frames past the end", symtab({"a"}).var(1).var(3).var(0).var(0).b, "truncated or trailing bytes"},
      {"event count over the payload", head().var(2).event(1).b, "bad catch frame: 2 events, more than its payload holds"},
      {"huge event count", head().var(uint64_t(1) << 62).b, "events, more than its payload holds"},
      {"event at the previous sample", head().var(1).event(0).b, "bad catch frame: event 0 at 5000000000 ns, not after the previous sample's time"},
      {"event after its sample", head().var(1).event(kMono - kSince + 1).b, "bad catch frame: event 0 after its sample's time 6000000000 ns"},
      {"time wraps", head().var(2).event(1).event(~uint64_t(0)).b, "bad catch frame: event 1 after its sample's time"},
      {"CPU out of range", head().var(1).event(1, kCpus).b, "bad catch frame: event 0 names CPU 4 probe 4 (4 CPUs, 9 probes)"},
      {"probe out of range", head().var(1).event(1, 0, SH_NPROBES).b, "event 0 names CPU 0 probe 9"},
      {"huge probe", head().var(1).event(1, 0, 1ull << 40).b, "event 0 names CPU 0 probe 1099511627776"},
      {"stack out of range", head().var(2).event(1, 0, 4, 1).event(1, 0, 4, 2).b, "bad catch frame: event 1 names stack 2 of 1"},
      {"comm too long", head().var(1).event(1, 0, 4, 0, "sixteen-bytes-xx").b, "bad catch frame: event 0 has a comm longer than 15 bytes"},
      {"comm with a control byte", head().var(1).event(1, 0, 4, 0, std::string("a\0b", 3)).b, "event 0 has a comm that is not printable"},
      {"comm with DEL", head().var(1).event(1, 0, 4, 0, "a\x7f").b, "event 0 has a comm that is not printable"},
      {"flags over 16 bits", head().var(1).event(1, 0, 4, 0, "a", 0x10000).b, "event 0 has flags 65536 pid 1 tgid 1"},
      {"pid over 32 bits", head().var(1).event(1, 0, 4, 0, "a", 0, 1ull << 32).b, "pid 4294967296"},
      {"tgid over 32 bits", head().var(1).event(1, 0, 4, 0, "a", 0, 1, 1ull << 32).b, "tgid 4294967296"},
      {"bad varint", head().b + std::string(11, '\xff'), "truncated or trailing bytes"},
      {"trailing bytes", head().var(1).event(1).b + "x", "bad catch frame: truncated or trailing bytes"},
      {"decodes to too much", amplify.b, "bad catch frame: its stacks decode to more than 268435456 bytes"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    CatchBatch out;
    out.lost = 12345;  // left alone on failure
    std::string why;
    EXPECT_FALSE(decodes(c.raw, out, why));
    EXPECT_NE(why.find(c.says), std::string::npos) << why;
    EXPECT_EQ(why.find('\n'), std::string::npos) << why;
    EXPECT_EQ(out.lost, 12345u);
  }
  // the edges that are allowed
  CatchBatch out;
  std::string why;
  EXPECT_TRUE(decodes(head().var(2).event(kMono - kSince).event(0, kCpus - 1, SH_NPROBES - 1, 1, "fifteen-bytes-x").b,
                      out, why))
      << why;
  ASSERT_EQ(out.events.size(), 2u);
  EXPECT_EQ(out.events[1].ts_ns, kMono);
  EXPECT_EQ(out.events[1].comm, "fifteen-bytes-x");
  EXPECT_EQ(out.stacks.at(0).at(0).sym, "cpupri_set");
  // no previous sample (since 0): an event at 0 is still not after it
  EXPECT_FALSE(decode_caught(head().var(1).event(0).b, 0, kMono, kCpus, SH_NPROBES, out, why));
  EXPECT_NE(why.find("not after the previous sample"), std::string::npos) << why;
  // a frame whose sample is before the one it follows: every event refused, no wrap
  EXPECT_FALSE(decode_caught(head().var(1).event(1).b, kMono + 10, kMono, kCpus, SH_NPROBES, out, why));
  EXPECT_NE(why.find("after its sample's time"), std::string::npos) << why;
}

TEST(CatchFrame, TruncationAtEveryByteOfThePayloadIsRefused) {
  const CatchBatch b = batch(kSince, 5, 3);
  const std::string raw = encode_caught(b, kSince);
  for (size_t n = 0; n < raw.size(); ++n) {
    CatchBatch out;
    std::string why;
    ASSERT_FALSE(decodes(raw.substr(0, n), out, why)) << "prefix of " << n << " bytes decoded";
    EXPECT_FALSE(why.empty());
    EXPECT_EQ(why.find('\n'), std::string::npos);
  }
  CatchBatch out;
  std::string why;
  ASSERT_TRUE(decodes(raw, out, why)) << why;
  EXPECT_EQ(out, b);
}

TEST(CatchFrame, TruncationAtEveryByteOfTheFileKeepsCompleteFrames) {
  const Meta m = catch_meta(2);
  TempDir dir("catch_trunc");
  std::vector<Sample> w = make_samples(m, 3);
  for (size_t i = 1; i < w.size(); ++i) {
    CatchBatch b = batch(w[i - 1].mono_ns, uint32_t(i));
    for (auto& e : b.events) e.cpu %= 2;
    w[i].caught = b;
  }
  write_samples(dir / "a.shot", m, w, false);
  const std::string data = slurp(dir / "a.shot");
  auto full = RecordingReader::open(dir / "a.shot");
  const uint64_t start = full->data_start();
  MemFile mem;
  size_t last = 0;
  for (size_t n = start; n <= data.size(); ++n) {
    mem.set(data.substr(0, n));
    auto r = RecordingReader::open(mem.path());
    auto got = read_all(*r);
    ASSERT_LE(got.size(), w.size());
    for (size_t i = 0; i < got.size(); ++i) {
      expect_same(got[i], w[i]);
      EXPECT_EQ(got[i].caught, w[i].caught) << n << " " << i;
    }
    EXPECT_GE(got.size(), last);
    last = got.size();
    if (r->damage()) EXPECT_NE(r->damage()->reason.find("truncated"), std::string::npos) << r->damage()->reason;
  }
  EXPECT_EQ(last, w.size());
}

TEST(CatchFrame, ABadFrameIsOneLineOfDamageAfterTheSamplesBeforeIt) {
  const Meta m = catch_meta();
  TempDir dir("catch_bad");
  const std::vector<Sample> w = make_samples(m, 5);
  write_samples(dir / "a.shot", m, w, false);
  const uint64_t t = w[3].mono_ns;
  // a zstd frame claiming a huge content size, and one that is not zstd at all
  std::string bomb(1 << 20, '\0');
  std::string bomb_z(ZSTD_compressBound(bomb.size()), '\0');
  bomb_z.resize(ZSTD_compress(bomb_z.data(), bomb_z.size(), bomb.data(), bomb.size(), 19));
  struct Case {
    const char* name;
    std::string payload;
    uint8_t flags;
    const char* says;
  };
  const std::vector<Case> cases = {
      {"CPU out of range", head().var(1).event(1, 4).b, 0, "bad catch frame: event 0 names CPU 4"},
      {"event before the sample before", head().var(1).event(0).b, 0, "not after the previous sample's time"},
      {"an event count with no events", head().var(1).b, 0, "bad catch frame: 1 events, more than its payload holds"},
      {"truncated", head().var(1).event(1, 0, 4, 0, "abcdefghijklmno").b.substr(0, head().b.size() + 21), 0,
       "bad catch frame: truncated or trailing bytes"},
      {"not zstd", "definitely not zstd", 1, "compressed catch frame with a bad or oversized content size"},
      {"a megabyte of zeros", bomb_z, 1, "bad catch frame: truncated or trailing bytes"},
  };
  MemFile mf;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    mf.set(with_frame_before_sample(dir / "a.shot", 3, make_frame(FrameType::caught, c.flags, t, c.payload)));
    auto r = RecordingReader::open(mf.path());
    auto got = read_all(*r);
    ASSERT_EQ(got.size(), 3u) << "the samples before it are kept";
    for (size_t i = 0; i < got.size(); ++i) expect_same(got[i], w[i]);
    ASSERT_TRUE(r->damage().has_value());
    EXPECT_NE(r->damage()->reason.find(c.says), std::string::npos) << r->damage()->reason;
    EXPECT_EQ(r->damage()->reason.find('\n'), std::string::npos);
  }
  // The same frames in a 1.4 file: an unknown frame type, skipped.
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::string d = with_frame_before_sample(dir / "a.shot", 3, make_frame(FrameType::caught, c.flags, t, c.payload));
    set_minor(d, 4);
    mf.set(d);
    auto r = RecordingReader::open(mf.path());
    EXPECT_EQ(read_all(*r).size(), 5u);
    EXPECT_FALSE(r->damage().has_value());
    EXPECT_EQ(r->stats().unknown_frames, 1u);
    EXPECT_EQ(r->stats().caught_frames, 0u);
  }
}

TEST(CatchFrame, ASecondFrameForOneSampleIsDamage) {
  const Meta m = catch_meta();
  TempDir dir("catch_twice");
  const std::vector<Sample> w = make_samples(m, 5);
  write_samples(dir / "a.shot", m, w, false);
  const std::string frame = make_frame(FrameType::caught, 0, w[3].mono_ns, encode_caught(batch(w[2].mono_ns), w[2].mono_ns));
  MemFile once, twice;
  once.set(with_frame_before_sample(dir / "a.shot", 3, frame));
  {
    auto r = RecordingReader::open(once.path());
    auto got = read_all(*r);
    ASSERT_EQ(got.size(), 5u);
    EXPECT_EQ(got[3].caught, batch(w[2].mono_ns));
    EXPECT_FALSE(r->damage().has_value());
  }
  twice.set(with_frame_before_sample(once.path(), 3, frame));
  auto r = RecordingReader::open(twice.path());
  EXPECT_EQ(read_all(*r).size(), 3u) << "the samples before it are kept";
  ASSERT_TRUE(r->damage().has_value());
  EXPECT_NE(r->damage()->reason.find("bad catch frame: a second one for the sample at"), std::string::npos)
      << r->damage()->reason;
  EXPECT_EQ(r->stats().caught_frames, 1u);
}

TEST(CatchFrame, AFormat14ReaderSkipsThemAnd14FilesRead) {
  const Meta m = catch_meta();
  TempDir dir("catch_14");
  const std::vector<Sample> w = catch_samples(m, 6, [](int i) { return i != 3; });
  write_samples(dir / "a.shot", m, w);
  std::string d = slurp(dir / "a.shot");
  set_minor(d, 4);  // what a 1.4 reader makes of it
  spit(dir / "b.shot", d);
  auto r = RecordingReader::open(dir / "b.shot");
  EXPECT_EQ(r->minor(), 4);
  auto got = read_all(*r);
  ASSERT_EQ(got.size(), w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    expect_same(got[i], w[i]);
    EXPECT_FALSE(got[i].caught.has_value());
  }
  EXPECT_EQ(r->stats().unknown_frames, 4u);
  EXPECT_EQ(r->stats().caught_frames, 0u);
  EXPECT_FALSE(r->damage().has_value());
  // The 1.4 fixtures (no CATCH frames) read as they did.
  for (const char* f : {"v1.4-basic.shot", "v1.4-exact.shot", "v1.4-gaps.shot", "v1.4-hotplug.shot"}) {
    SCOPED_TRACE(f);
    auto r14 = RecordingReader::open(std::string(SCHEDHOT_DATA) + "/" + f);
    EXPECT_EQ(r14->minor(), 4);
    auto all = read_all(*r14);
    EXPECT_EQ(all.size(), 70u);
    for (auto& s : all) EXPECT_FALSE(s.caught.has_value());
    EXPECT_FALSE(r14->damage().has_value());
    EXPECT_EQ(r14->stats().unknown_frames, 0u);
    EXPECT_EQ(r14->stats().caught_frames, 0u);
  }
}

TEST(CatchFrame, EveryByteChangedDecodesOrIsOneLine) {
  // A cheap cousin of the fuzz target (tests/fuzz, seed v1.5-catch): each byte of a real
  // payload set to values that change varint lengths and text; the decoder either accepts
  // the result within its rules or says why in one line, and never throws.
  const std::string raw = encode_caught(batch(kSince, 7, 1), kSince);
  size_t refused = 0;
  for (size_t i = 0; i < raw.size(); ++i)
    for (uint8_t v : {0x00, 0x01, 0x0a, 0x7f, 0x80, 0xff}) {
      std::string bad = raw;
      bad[i] = static_cast<char>(v);
      CatchBatch out;
      std::string why;
      bool ok = false;
      EXPECT_NO_THROW(ok = decodes(bad, out, why));
      if (ok) {
        for (const CaughtEvent& e : out.events) {
          EXPECT_GT(e.ts_ns, kSince);
          EXPECT_LE(e.ts_ns, kMono);
          EXPECT_LT(e.cpu, kCpus);
          EXPECT_LT(e.probe, SH_NPROBES);
          EXPECT_LE(e.stack, out.stacks.size());
          EXPECT_LE(e.comm.size(), kMaxCatchCommBytes);
        }
        for (const auto& st : out.stacks) EXPECT_LE(st.size(), size_t(SH_CATCH_FRAMES));
      } else {
        ++refused;
        EXPECT_FALSE(why.empty());
        EXPECT_EQ(why.find('\n'), std::string::npos) << why;
      }
    }
  EXPECT_GT(refused, raw.size()) << "most changes break a rule";
}

// ---- STEAL (1.6) ------------------------------------------------------------------

namespace {

/// batch() with steal times on events 0, 1 and 3 (event 0's measured as none), none kept
/// on 2 and 4.
CatchBatch steal_batch(uint64_t since, uint32_t salt = 0) {
  CatchBatch b = batch(since, salt);
  for (size_t k : {0, 1, 3}) {
    b.events[k].flags |= SH_CATCH_F_STEAL;
    b.events[k].steal_ns = k == 0 ? 0 : k == 3 ? b.events[k].dur_ns : 1234 + salt;
  }
  return b;
}

}  // namespace

TEST(StealFrame, CodecRoundTripAndTheCatchFrameStays15) {
  const CatchBatch b = steal_batch(kSince, 3);
  const std::string raw = encode_caught(b, kSince);
  // The CATCH payload is what a 1.5 writer wrote for the same events without steal times.
  CatchBatch plain = b;
  for (CaughtEvent& e : plain.events) e.flags &= uint16_t(~SH_CATCH_F_STEAL), e.steal_ns = 0;
  EXPECT_EQ(raw, encode_caught(plain, kSince));
  CatchBatch got;
  std::string why;
  ASSERT_TRUE(decodes(raw, got, why)) << why;
  EXPECT_EQ(got, plain) << "a CATCH frame alone: no steal time (not kept)";
  const std::string st = encode_steal(b);
  ASSERT_FALSE(st.empty());
  ASSERT_TRUE(decode_steal(st, got, why)) << why;
  EXPECT_EQ(got, b);
  EXPECT_EQ(got.events[0].steal_ns, 0u);
  EXPECT_TRUE(got.events[0].flags & SH_CATCH_F_STEAL) << "measured, none: not the same as not kept";
  EXPECT_FALSE(got.events[2].flags & SH_CATCH_F_STEAL);
  EXPECT_EQ(got.events[3].steal_ns, got.events[3].dur_ns);
  // No event with a steal time: no STEAL frame.
  EXPECT_EQ(encode_steal(plain), "");
  EXPECT_EQ(encode_steal(CatchBatch{}), "");
  // A steal time over its event's duration is refused by the writer.
  CatchBatch over = b;
  over.events[1].steal_ns = over.events[1].dur_ns + 1;
  EXPECT_THROW(encode_steal(over), std::runtime_error);
}

TEST(StealFrame, HostilePayloadsAreRefusedWithOneLine) {
  const CatchBatch b = steal_batch(kSince);
  std::string why;
  auto refused = [&](const std::string& raw, const char* what) {
    CatchBatch got;
    ASSERT_TRUE(decodes(encode_caught(b, kSince), got, why)) << why;
    const CatchBatch before = got;
    why.clear();
    EXPECT_FALSE(decode_steal(raw, got, why)) << what;
    EXPECT_NE(why.find("bad steal frame"), std::string::npos) << what << ": " << why;
    EXPECT_EQ(why.find('\n'), std::string::npos);
    EXPECT_EQ(got, before) << what << ": unchanged";
  };
  const std::string good = encode_steal(b);
  refused(Payload().var(4).var(0).var(0).var(0).var(0).b, "one event short");
  refused(Payload().var(6).var(0).var(0).var(0).var(0).var(0).var(0).b, "one event more");
  refused(Payload().var(5).var(0).var(b.events[1].dur_ns + 2).var(0).var(0).var(0).b, "over its duration");
  refused(good + std::string(1, '\0'), "trailing byte");
  for (size_t n = 0; n < good.size(); ++n) refused(good.substr(0, n), "truncated");
}

TEST(StealFrame, InAFileAfterItsCatchFrameAndA15ReaderSkipsIt) {
  const Meta m = catch_meta();
  for (bool compress : {false, true}) {
    SCOPED_TRACE(compress);
    TempDir dir("steal_rt");
    std::vector<Sample> w = make_samples(m, 5);
    w[1].caught = steal_batch(w[0].mono_ns, 1);
    w[2].caught = batch(w[1].mono_ns, 2);  // no steal time kept: no STEAL frame
    w[4].caught = steal_batch(w[3].mono_ns, 4);
    write_samples(dir / "a.shot", m, w, compress);
    const std::vector<FrameType> types = frame_types(dir / "a.shot");
    size_t steals = 0;
    for (size_t i = 0; i < types.size(); ++i)
      if (types[i] == FrameType::steal) {
        ++steals;
        ASSERT_GT(i, 0u);
        EXPECT_EQ(types[i - 1], FrameType::caught) << "right after its CATCH frame";
      }
    EXPECT_EQ(steals, 2u);
    {
      auto r = RecordingReader::open(dir / "a.shot");
      EXPECT_EQ(r->minor(), 6);
      auto got = read_all(*r);
      ASSERT_EQ(got.size(), w.size());
      for (size_t i = 0; i < w.size(); ++i) EXPECT_EQ(got[i].caught, w[i].caught) << i;
      EXPECT_EQ(r->stats().steal_frames, 2u);
      EXPECT_EQ(r->stats().unknown_frames, 0u);
      EXPECT_FALSE(r->damage().has_value());
    }
    // What a 1.5 reader makes of it: the STEAL frames skipped, the events without steal times.
    std::string d = slurp(dir / "a.shot");
    set_minor(d, 5);
    spit(dir / "b.shot", d);
    auto r = RecordingReader::open(dir / "b.shot");
    auto got = read_all(*r);
    ASSERT_EQ(got.size(), w.size());
    for (size_t i = 0; i < w.size(); ++i) {
      expect_same(got[i], w[i]);
      ASSERT_EQ(got[i].caught.has_value(), w[i].caught.has_value()) << i;
      if (!got[i].caught) continue;
      ASSERT_EQ(got[i].caught->events.size(), w[i].caught->events.size());
      for (const CaughtEvent& e : got[i].caught->events) {
        EXPECT_FALSE(e.flags & SH_CATCH_F_STEAL);
        EXPECT_EQ(e.steal_ns, 0u);
      }
    }
    EXPECT_EQ(r->stats().unknown_frames, 2u);
    EXPECT_EQ(r->stats().steal_frames, 0u);
    EXPECT_FALSE(r->damage().has_value());
  }
  // The 1.5 catch fixture (no STEAL frames) reads as before: no event has a steal time.
  auto r15 = RecordingReader::open(std::string(SCHEDHOT_DATA) + "/v1.5-catch.shot");
  EXPECT_EQ(r15->minor(), 5);
  uint64_t events = 0;
  for (auto& s : read_all(*r15))
    if (s.caught)
      for (const CaughtEvent& e : s.caught->events) {
        ++events;
        EXPECT_FALSE(e.flags & SH_CATCH_F_STEAL);
        EXPECT_EQ(e.steal_ns, 0u);
      }
  EXPECT_GT(events, 0u);
  EXPECT_FALSE(r15->damage().has_value());
}

TEST(StealFrame, WithoutItsCatchFrameOrTwiceIsDamage) {
  const Meta m = catch_meta();
  TempDir dir("steal_alone");
  std::vector<Sample> w = make_samples(m, 5);
  w[2].caught = steal_batch(w[1].mono_ns);
  write_samples(dir / "a.shot", m, w, false);
  const std::string frame = make_frame(FrameType::steal, 0, w[3].mono_ns, encode_steal(steal_batch(w[2].mono_ns)));
  {
    MemFile alone;
    alone.set(with_frame_before_sample(dir / "a.shot", 3, frame));  // sample 3 has no CATCH frame
    auto r = RecordingReader::open(alone.path());
    EXPECT_EQ(read_all(*r).size(), 3u) << "the samples before it are kept";
    ASSERT_TRUE(r->damage().has_value());
    EXPECT_NE(r->damage()->reason.find("bad steal frame: no catch frame"), std::string::npos) << r->damage()->reason;
  }
  {
    const std::string again = make_frame(FrameType::steal, 0, w[2].mono_ns, encode_steal(steal_batch(w[1].mono_ns)));
    MemFile twice;
    twice.set(with_frame_before_sample(dir / "a.shot", 2, again));  // after sample 2's own STEAL frame
    auto r = RecordingReader::open(twice.path());
    EXPECT_EQ(read_all(*r).size(), 2u);
    ASSERT_TRUE(r->damage().has_value());
    EXPECT_NE(r->damage()->reason.find("bad steal frame: a second one"), std::string::npos) << r->damage()->reason;
  }
}

TEST(StealFrame, TheFrameScanFindsAMisplacedOneAndTheEarliestDamageWins) {
  const Meta m = catch_meta();
  TempDir dir("steal_scan");
  std::vector<Sample> w = make_samples(m, 6);
  w[2].caught = steal_batch(w[1].mono_ns);
  write_samples(dir / "a.shot", m, w, false);
  const uint64_t at = sample_offset(dir / "a.shot", 3);
  std::string d = with_frame_before_sample(dir / "a.shot", 3,
                                           make_frame(FrameType::steal, 0, w[3].mono_ns, encode_steal(steal_batch(w[2].mono_ns))));
  const std::string want = fmt::format("bad steal frame: no catch frame for the sample at {} ns before it", w[3].mono_ns);
  spit(dir / "b.shot", d);
  {
    // The scan alone (no payload decoded) stops at it, and the positions with it.
    auto r = RecordingReader::open(dir / "b.shot");
    r->check_all_frames();
    ASSERT_TRUE(r->damage().has_value());
    EXPECT_EQ(r->damage()->offset, at);
    EXPECT_EQ(r->damage()->reason, want);
    EXPECT_EQ(r->sample_positions().size(), 3u);
  }
  // A STEAL frame in its place whose count is wrong (only decoding finds it) and a CRC
  // failure later: the scan names the CRC failure, next() meets the STEAL frame before it,
  // and damage() becomes that earlier frame.
  std::string e = slurp(dir / "a.shot");
  uint64_t steal_at = 0;
  for (uint64_t f = RecordingReader::open(dir / "a.shot")->data_start(); f + kFrameHeaderBytes <= e.size();) {
    uint32_t len;
    std::memcpy(&len, e.data() + f + 4, 4);
    if (static_cast<FrameType>(e[f + 8]) == FrameType::steal) {
      steal_at = f;
      break;
    }
    f += kFrameHeaderBytes + len;
  }
  ASSERT_GT(steal_at, 0u);
  e[steal_at + kFrameHeaderBytes] ^= 0x01;  // n: 5 events becomes 4
  fix_frame_crc(e, steal_at);
  e[sample_offset(dir / "a.shot", 4) + kFrameHeaderBytes + 2] ^= 0x10;
  spit(dir / "c.shot", e);
  auto r = RecordingReader::open(dir / "c.shot");
  r->check_all_frames();
  ASSERT_TRUE(r->damage().has_value());
  EXPECT_GT(r->damage()->offset, steal_at) << "the scan decodes no STEAL payload: " << r->damage()->reason;
  EXPECT_EQ(read_all(*r).size(), 2u);
  ASSERT_TRUE(r->damage().has_value());
  EXPECT_EQ(r->damage()->offset, steal_at);
  EXPECT_EQ(r->damage()->reason, "bad steal frame: 4 events, its catch frame has 5");
  EXPECT_EQ(r->sample_positions().size(), 2u) << "the positions stop there too";
}
