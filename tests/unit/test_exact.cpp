// --exact (issue 11): records -> lines (event_lines agrees with line_accesses), the
// per-CPU time merge, the EXACT frame round trip, the driver's interval split, and the
// report's exact figures on a synthetic recording with hand-counted transfers.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include "model/interval.h"
#include "model/lines.h"
#include "probe/exact_reader.h"
#include "probe/records.h"
#include "store/driver.h"
#include "store/recording.h"
#include "test_util.h"
#include "command/report.h"
#include "output/report_text.h"

using namespace schedhot;
using namespace schedhot::testing;

namespace {

Meta exact_meta(uint32_t ncpus = 4) {
  Meta m = synthetic_meta(ncpus);
  m.host.cacheline_bytes = 64;
  // two cores of one package and LLC per pair: 0,1 SMT siblings; 2,3 another core
  for (uint32_t c = 0; c < ncpus; ++c) m.host.topology.push_back({int(c), 0, 0, int(c / 2), 0, 0});
  m.layout = assumed_layout("6.12.0", 64);
  m.start_mono_ns = 1'000'000'000;
  return m;
}

uint16_t word_of(const Meta& m, const char* probe, const char* field, uint32_t idx = 0) {
  const int p = m.probe_index(probe);
  return static_cast<uint16_t>(m.probes[size_t(p)].slot.find(field)->offset + idx);
}

/// line_accesses() of one interval in which cpu counted `counts` (field, element, delta) of
/// probe: its lines with the write flag (a write if the line has any write rate).
std::vector<std::pair<LineKey, bool>> model_lines(const Meta& m, const char* probe, int cpu,
                                                  const std::vector<std::tuple<const char*, uint32_t, uint64_t>>& counts) {
  Sample a = make_sample(m), b = make_sample(m);
  a.mono_ns = m.start_mono_ns;
  b.mono_ns = a.mono_ns + 1'000'000'000;
  const int p = m.probe_index(probe);
  for (auto [f, e, n] : counts) b.probes[size_t(p)].words.mut(word(m, p, cpu, f, e)) += n;
  Interval iv(m, a, b);
  std::vector<std::pair<LineKey, bool>> out;
  for (const LineAccesses& l : line_accesses(iv, *m.layout)) {
    bool w = false;
    for (const LineCpuRate& r : l.rates) w |= r.writes > 0;
    out.push_back({l.key, w});
  }
  return out;
}

/// event_lines of several records of one event, merged (a write if any record writes it).
std::vector<std::pair<LineKey, bool>> record_lines(const Meta& m, const char* probe, int cpu,
                                                   const std::vector<uint16_t>& words) {
  std::map<LineKey, bool> acc;
  for (uint16_t w : words)
    for (auto [k, wr] : event_lines(m, *m.layout, m.probe_index(probe), w, cpu)) acc[k] = acc[k] || wr;
  return {acc.begin(), acc.end()};
}

}  // namespace

TEST(ExactLines, NohzEnterFirstCallMatchesLineAccesses) {
  const Meta m = exact_meta();
  // a first call: calls and first both counted, two records
  auto model = model_lines(m, "nohz_enter", 1, {{"calls", 0, 1}, {"first", 0, 1}});
  auto rec = record_lines(m, "nohz_enter", 1, {word_of(m, "nohz_enter", "calls"), word_of(m, "nohz_enter", "first")});
  ASSERT_FALSE(model.empty());
  EXPECT_EQ(rec, model);
  // nohz line 0 (has_blocked, nr_cpus, needs_update) and the OFFSTACK mask, all written
  std::set<std::string> objs;
  for (auto& [k, w] : rec) {
    objs.insert(k.object);
    EXPECT_TRUE(w) << k.object;
  }
  EXPECT_EQ(objs, (std::set<std::string>{"nohz", "nohz.idle_cpus_mask"}));
}

TEST(ExactLines, CpupriSetMatchesLineAccesses) {
  const Meta m = exact_meta();
  // a call that moved CPU 2 from vector 0 to vector 3
  auto model = model_lines(m, "cpupri_set", 2, {{"calls", 0, 1}, {"vec_set", 3, 1}, {"vec_clear", 0, 1}});
  auto rec = record_lines(m, "cpupri_set", 2,
                          {word_of(m, "cpupri_set", "calls"), word_of(m, "cpupri_set", "vec_set", 3),
                           word_of(m, "cpupri_set", "vec_clear", 0)});
  ASSERT_FALSE(model.empty());
  EXPECT_EQ(rec, model);
}

TEST(ExactLines, MinusRecordsTakeTheOtherCase) {
  const Meta m = exact_meta();
  // cpupri_set noop: the load of cpu_to_pri[cpu] only, as line_accesses has for calls - noop = 0
  auto noop = event_lines(m, *m.layout, m.probe_index("cpupri_set"), word_of(m, "cpupri_set", "noop"), 2);
  ASSERT_EQ(noop.size(), 1u);
  EXPECT_EQ(noop[0].first.object, "cpupri.cpu_to_pri");
  EXPECT_FALSE(noop[0].second);
  EXPECT_EQ(noop, model_lines(m, "cpupri_set", 2, {{"calls", 0, 1}, {"noop", 0, 1}}));
  // a changing call writes it
  auto calls = event_lines(m, *m.layout, m.probe_index("cpupri_set"), word_of(m, "cpupri_set", "calls"), 2);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_TRUE(calls[0].second);
  // nohz_kick: an idle tick touches nothing; a busy one reads the nohz line
  EXPECT_TRUE(event_lines(m, *m.layout, m.probe_index("nohz_kick"), word_of(m, "nohz_kick", "idle_ticks"), 0).empty());
  auto busy = event_lines(m, *m.layout, m.probe_index("nohz_kick"), word_of(m, "nohz_kick", "calls"), 0);
  EXPECT_EQ(busy, model_lines(m, "nohz_kick", 0, {{"calls", 0, 1}}));
  ASSERT_EQ(busy.size(), 1u);
  EXPECT_EQ(busy[0].first, (LineKey{"nohz", 0}));
  EXPECT_FALSE(busy[0].second);
}

TEST(ExactLines, IlbFlagsElementBitsAndUnusedWords) {
  const Meta m = exact_meta();
  const int p = m.probe_index("ilb_kick");
  // BALANCE (bit 0) kicks write nohz.next_balance; a STATS-only kick (2) is not modeled
  auto bal = event_lines(m, *m.layout, p, word_of(m, "ilb_kick", "flags", 3), 0);
  EXPECT_EQ(bal, model_lines(m, "ilb_kick", 0, {{"sent", 0, 1}, {"flags", 3, 1}}));
  ASSERT_EQ(bal.size(), 1u);
  EXPECT_TRUE(bal[0].second);
  EXPECT_TRUE(event_lines(m, *m.layout, p, word_of(m, "ilb_kick", "flags", 2), 0).empty());
  EXPECT_TRUE(event_lines(m, *m.layout, p, word_of(m, "ilb_kick", "sent"), 0).empty());
  EXPECT_TRUE(event_lines(m, *m.layout, p, 9999, 0).empty());
  EXPECT_TRUE(event_lines(m, *m.layout, 99, 0, 0).empty());
}

TEST(ExactMerge, KWayMergeInTimeOrderStable) {
  std::vector<std::vector<ExactRecord>> s(3);
  s[0] = {{10, 0, 1, 1}, {30, 0, 1, 2}, {50, 0, 1, 3}};
  s[1] = {{20, 1, 1, 1}, {30, 1, 1, 2}};
  s[2] = {{45, 2, 1, 2}, {5, 2, 1, 1}};  // out of order (an interrupt's record first): sorted
  auto m = merge_by_time(s);
  std::vector<std::pair<uint64_t, uint32_t>> got;
  for (auto& r : m) got.push_back({r.ts_ns, r.cpu});
  EXPECT_EQ(got, (std::vector<std::pair<uint64_t, uint32_t>>{{5, 2}, {10, 0}, {20, 1}, {30, 0}, {30, 1}, {45, 2}, {50, 0}}));
  for (auto& x : s) EXPECT_TRUE(x.empty());
}

// A record after its sample's time (the writer takes records up to it) and a frame that
// decompresses to far more than records of changing times and ids do are damage, not
// input: one record at 2^64 ns hid every later record behind "out of time order", and a
// 34 KB frame that claimed 67 M records took 2 GB (an attacker's findings).
TEST(ExactFrame, ARecordAfterItsSampleOrABombIsDamage) {
  const Meta m = exact_meta();
  for (int kind : {0, 1}) {
    SCOPED_TRACE(kind);
    const std::string path = ::testing::TempDir() + "exact_bad.shot";
    std::remove(path.c_str());
    {
      WriterOptions wo;
      wo.compress = kind == 1;
      RecordingWriter w(path, m, wo);
      Sample s = make_sample(m);
      s.mono_ns = m.start_mono_ns;
      w.write_sample(s);
      s.mono_ns += 1'000'000'000;
      ExactBatch b;
      if (kind == 0) {
        b.records = {{s.mono_ns - 10, 0, 1, 0}, {s.mono_ns + 1, 1, 1, 0}};
      } else {  // identical records: zstd shrinks them far past any real frame
        b.records.assign(400'000, ExactRecord{s.mono_ns - 1'000'000, 0, 1, 0});
      }
      s.exact = b;
      w.write_sample(s);
      w.close();
    }
    auto r = RecordingReader::open(path);
    Sample got;
    ASSERT_TRUE(r->next(got));  // the baseline is kept
    if (kind == 1) {  // the writer keeps a frame raw when zstd would shrink it past the reader's bound
      ASSERT_TRUE(r->next(got)) << (r->damage() ? r->damage()->reason : "");
      ASSERT_TRUE(got.exact.has_value());
      EXPECT_EQ(got.exact->records.size(), 400'000u);
      EXPECT_FALSE(r->damage().has_value());
      continue;
    }
    EXPECT_FALSE(r->next(got));
    ASSERT_TRUE(r->damage().has_value());
    EXPECT_NE(r->damage()->reason.find(kind == 0 ? "record 1 at" : "oversized content size"), std::string::npos)
        << r->damage()->reason;
  }
}

TEST(ExactFrame, RoundTripWithLostAndCompression) {
  for (bool compress : {false, true}) {
    SCOPED_TRACE(compress);
    const Meta m = exact_meta();
    const std::string path = ::testing::TempDir() + "exact_rt.shot";
    std::remove(path.c_str());
    std::vector<Sample> written;
    {
      WriterOptions wo;
      wo.compress = compress;
      RecordingWriter w(path, m, wo);
      Sample s = make_sample(m);
      s.mono_ns = m.start_mono_ns;
      w.write_sample(s);
      written.push_back(s);
      for (int i = 1; i <= 3; ++i) {
        s.mono_ns += 1'000'000'000;
        ExactBatch b;
        for (int k = 0; k < 200 * i; ++k)
          b.records.push_back({s.mono_ns - 999'000'000 + uint64_t(k) * 1000, uint32_t(k % 4), uint16_t(k % 9), uint16_t(k % 40)});
        b.lost = uint64_t(i - 1);
        s.exact = b;
        w.write_sample(s);
        written.push_back(s);
      }
      s.mono_ns += 1'000'000'000;
      s.exact = ExactBatch{};  // an empty interval: a frame with no records
      w.write_sample(s);
      written.push_back(s);
      w.close();
    }
    auto r = RecordingReader::open(path);
    EXPECT_EQ(r->minor(), kFormatMinor);
    Sample got;
    size_t n = 0;
    while (r->next(got)) {
      ASSERT_LT(n, written.size());
      EXPECT_EQ(got.exact, written[n].exact) << n;
      ++n;
    }
    EXPECT_EQ(n, written.size());
    EXPECT_EQ(r->stats().exact_frames, 4u);
    EXPECT_EQ(r->stats().exact_records, 200u + 400 + 600);
    EXPECT_EQ(r->stats().exact_lost, 0u + 1 + 2);
    EXPECT_EQ(r->stats().unknown_frames, 0u);
    EXPECT_FALSE(r->damage().has_value());
    // a seek lands after the EXACT frame of its sample: that sample has none, the next has its own
    ASSERT_TRUE(r->seek_sample(2));
    ASSERT_TRUE(r->next(got));
    EXPECT_EQ(got.mono_ns, written[2].mono_ns);
    ASSERT_TRUE(r->next(got));
    EXPECT_EQ(got.exact, written[3].exact);
    std::remove(path.c_str());
  }
}

namespace {

/// A LiveCursor of given samples and an ExactSource of given records (the driver's input).
struct FakeCursor : LiveCursor {
  Meta m;
  std::vector<Sample> samples;
  size_t i = 0;
  const Meta& meta() const override { return m; }
  bool next(Sample& out) override {
    if (i >= samples.size()) return false;
    out = samples[i++];
    return true;
  }
  bool poll(Sample& out) override { return next(out); }
  bool finish(Sample&) override { return false; }
  std::vector<int> take_status_changes() override { return {}; }
};
struct FakeExact : ExactSource {
  std::vector<ExactRecord> recs;  // in time order
  uint64_t lost = 0;
  ExactBatch take(uint64_t upto) override {
    ExactBatch b;
    while (!recs.empty() && recs.front().ts_ns <= upto) {
      b.records.push_back(recs.front());
      recs.erase(recs.begin());
    }
    b.lost = lost;
    lost = 0;
    return b;
  }
};

}  // namespace

TEST(ExactDriver, EachSampleGetsItsIntervalsRecordsBaselineDropsEarlierOnes) {
  FakeCursor src;
  src.m = exact_meta();
  for (int k = 0; k < 3; ++k) {
    Sample s = make_sample(src.m);
    s.seq = uint32_t(k);
    s.mono_ns = 1000 + uint64_t(k) * 1000;
    src.samples.push_back(s);
  }
  FakeExact ex;
  ex.recs = {{500, 0, 1, 0}, {1500, 1, 1, 0}, {2000, 2, 1, 0}, {2500, 3, 1, 0}, {3500, 0, 1, 0}};
  ex.lost = 4;  // reported with the baseline's take: before the recording, dropped
  const std::string path = ::testing::TempDir() + "exact_drv.shot";
  std::remove(path.c_str());
  RecordingTarget t;
  t.path = path;
  t.exact = &ex;
  {
    RecordingDriver d(src, t);
    Sample s;
    ASSERT_TRUE(d.next(s));
    EXPECT_FALSE(s.exact.has_value());
    ASSERT_TRUE(d.next(s));
    ASSERT_TRUE(s.exact.has_value());
    EXPECT_EQ(s.exact->records.size(), 2u);  // 1500, 2000
    EXPECT_EQ(s.exact->lost, 0u);
    ex.lost = 2;
    ASSERT_TRUE(d.next(s));
    ASSERT_EQ(s.exact->records.size(), 1u);  // 2500; 3500 waits for a later sample
    EXPECT_EQ(s.exact->records[0].ts_ns, 2500u);
    EXPECT_EQ(s.exact->lost, 2u);
    EXPECT_TRUE(d.stop(false));
  }
  auto r = RecordingReader::open(path);
  Sample got;
  std::vector<size_t> sizes;
  while (r->next(got)) sizes.push_back(got.exact ? got.exact->records.size() : 99);
  EXPECT_EQ(sizes, (std::vector<size_t>{99, 2, 1}));
  EXPECT_EQ(r->stats().exact_lost, 2u);
  std::remove(path.c_str());
}

namespace {

/// Report of a synthetic two-sample recording with nohz_enter calls on CPUs 0 and 2 and
/// the given records in its interval.
nlohmann::json exact_report(const ExactBatch& b) {
  const Meta m = exact_meta();
  const int p = m.probe_index("nohz_enter");
  Sample a = make_sample(m), s = make_sample(m);
  a.mono_ns = m.start_mono_ns;
  s.seq = 1;
  s.mono_ns = a.mono_ns + 2'000'000'000;  // a 2 s interval
  s.probes[size_t(p)].words.mut(word(m, p, 0, "calls")) = 3;
  s.probes[size_t(p)].words.mut(word(m, p, 2, "calls")) = 1;
  s.exact = b;
  ReportBuilder rb(m, ReportOptions{});
  rb.add(a);
  rb.add(s);
  return rb.build(m, SourceInfo{});
}

}  // namespace

TEST(ExactReport, HandCountedTransfersOnTheNohzLine) {
  const Meta m = exact_meta();
  const uint16_t calls = word_of(m, "nohz_enter", "calls");
  const uint16_t pr = static_cast<uint16_t>(m.probe_index("nohz_enter"));
  const uint64_t t0 = m.start_mono_ns;
  // each call writes nohz.has_blocked (nohz line 0):
  //   t+1 CPU 0: cold;  t+2 CPU 2: write miss from CPU 0 (another core, same LLC);
  //   t+3 CPU 0: write miss from CPU 2 (llc);  t+4 CPU 0: hit.  2 transfers in 2 s = 1/s, all llc.
  ExactBatch b;
  b.records = {{t0 + 1, 0, pr, calls}, {t0 + 2, 2, pr, calls}, {t0 + 3, 0, pr, calls}, {t0 + 4, 0, pr, calls}};
  nlohmann::json r = exact_report(b);
  const auto& c = r["cachelines"];
  ASSERT_TRUE(c.contains("exact")) << c.dump();
  EXPECT_EQ(c["exact"]["records"].get<uint64_t>(), 4u);
  EXPECT_EQ(c["exact"]["lost"].get<uint64_t>(), 0u);
  EXPECT_EQ(c["exact"]["by_probe"]["nohz_enter"]["calls"].get<uint64_t>(), 4u);
  bool found = false;
  for (const auto& l : c["lines"]) {
    ASSERT_TRUE(l.contains("exact")) << l["name"];
    if (l["object"] != "nohz" || l["line"] != 0) continue;
    found = true;
    const auto& e = l["exact"];
    EXPECT_DOUBLE_EQ(e["xfers_per_s"].get<double>(), 1.0);
    EXPECT_DOUBLE_EQ(e["write_xfers_per_s"].get<double>(), 1.0);
    EXPECT_DOUBLE_EQ(e["by_distance"]["llc"].get<double>(), 1.0);
    EXPECT_DOUBLE_EQ(e["by_distance"]["smt"].get<double>(), 0.0);
    EXPECT_FALSE(e["lower_bound"].get<bool>());
    // model: w0 = 1.5/s, w2 = 0.5/s: writes miss at w_c (L - w_c) / L = 0.375 + 0.375 per s
    EXPECT_NEAR(l["xfers_per_s"].get<double>(), 0.75, 1e-9);
    EXPECT_NEAR(e["ratio"].get<double>(), 0.75, 1e-9);
  }
  EXPECT_TRUE(found);
  const std::string text = render_report_text(r);
  EXPECT_NE(text.find("exact: 1.0 xfer/s (model 0.8, model/exact x0.75)"), std::string::npos) << text;
  EXPECT_NE(text.find("exact (--exact): 4 records over 2.0 s, 0 lost"), std::string::npos) << text;

  b.lost = 3;
  nlohmann::json r2 = exact_report(b);
  for (const auto& l : r2["cachelines"]["lines"]) {
    EXPECT_TRUE(l["exact"]["lower_bound"].get<bool>());
    EXPECT_EQ(l["exact"]["lost"].get<uint64_t>(), 3u);
  }
  EXPECT_NE(render_report_text(r2).find("lower bound: 3 records lost"), std::string::npos);
}

TEST(ExactReport, NoExactFramesNoExactKeys) {
  const Meta m = exact_meta();
  const int p = m.probe_index("nohz_enter");
  Sample a = make_sample(m), s = make_sample(m);
  a.mono_ns = m.start_mono_ns;
  s.mono_ns = a.mono_ns + 1'000'000'000;
  s.probes[size_t(p)].words.mut(word(m, p, 0, "calls")) = 3;
  ReportBuilder rb(m, ReportOptions{});
  rb.add(a);
  rb.add(s);
  nlohmann::json r = rb.build(m, SourceInfo{});
  EXPECT_FALSE(r["cachelines"].contains("exact"));
  ASSERT_FALSE(r["cachelines"]["lines"].empty());
  for (const auto& l : r["cachelines"]["lines"]) {
    EXPECT_FALSE(l.contains("exact"));
    EXPECT_FALSE(l.contains("gap"));
  }
  for (const auto& w : r["cachelines"]["what_if"]) EXPECT_FALSE(w.contains("exact") || w.contains("gap")) << w.dump();
}

TEST(ExactReport, GapModelAndWhatIfsOfTheRecords) {
  // CPU 0 calls nohz_balance_enter_idle 4 times 1 ns apart, CPU 2 once a second later: each
  // writes nohz.has_blocked. Exact: CPU 0's first write is cold, its next three hit, CPU 2's
  // misses: 1 transfer in 2 s. Gap model: CPU 2's write and CPU 0's first (no earlier access
  // known: taken as a long gap) miss, CPU 0's next three (1 ns after its own) almost never
  // (CPU 2's one access in 2 s falls in a 1 ns window with p = 5e-10): 2 in 2 s.
  const Meta m = exact_meta();
  const uint16_t calls = word_of(m, "nohz_enter", "calls");
  const uint16_t pr = static_cast<uint16_t>(m.probe_index("nohz_enter"));
  const uint64_t t0 = m.start_mono_ns;
  ExactBatch b;
  b.records = {{t0 + 1, 0, pr, calls}, {t0 + 2, 0, pr, calls}, {t0 + 3, 0, pr, calls}, {t0 + 4, 0, pr, calls},
               {t0 + 1'000'000'000, 2, pr, calls}};
  nlohmann::json r = exact_report(b);
  const auto& c = r["cachelines"];
  EXPECT_EQ(c["estimate"], "independent arrivals");
  bool found = false;
  for (const auto& l : c["lines"]) {
    ASSERT_TRUE(l.contains("gap")) << l["name"];
    if (l["object"] != "nohz" || l["line"] != 0) continue;
    found = true;
    EXPECT_DOUBLE_EQ(l["exact"]["xfers_per_s"].get<double>(), 0.5);
    EXPECT_NEAR(l["gap"]["xfers_per_s"].get<double>(), 1.0, 1e-6);
    EXPECT_NEAR(l["gap"]["write_xfers_per_s"].get<double>(), 1.0, 1e-6);
    EXPECT_NEAR(l["gap"]["ratio"].get<double>(), 2.0, 1e-5);
  }
  EXPECT_TRUE(found);
  // The what-if replays the records on the layout without nohz.nr_cpus: has_blocked stays
  // in line 0, so the family's figures do not move; both are given.
  bool wi = false;
  for (const auto& w : c["what_if"]) {
    if (w["id"] != "nohz_nr_cpus") continue;
    wi = true;
    ASSERT_TRUE(w["applies"].get<bool>());
    ASSERT_TRUE(w.contains("exact") && w.contains("gap")) << w.dump();
    EXPECT_DOUBLE_EQ(w["exact"]["before_xfers_per_s"].get<double>(), 0.5);
    EXPECT_DOUBLE_EQ(w["exact"]["after_xfers_per_s"].get<double>(), 0.5);
    EXPECT_NEAR(w["gap"]["before_xfers_per_s"].get<double>(), 1.0, 1e-6);
    EXPECT_NEAR(w["gap"]["after_xfers_per_s"].get<double>(), 1.0, 1e-6);
  }
  EXPECT_TRUE(wi);
  const std::string text = render_report_text(r);
  EXPECT_NE(text.find("gap model of the records' per-CPU gaps: 1.0 xfer/s (gap/exact x2.00)"), std::string::npos) << text;
  EXPECT_NE(text.find("the records replayed: exact 0.5 -> 0.5 xfer/s (x1.00); gap model 1.0 -> 1.0 xfer/s (x1.00)"),
            std::string::npos)
      << text;
}

// The reader's thread on a real (empty) perf event array: started by the constructor,
// take() answers while it runs, and the destructor stops it at once (its eventfd, not
// the drain period). Root: the map and the perf events need it.
TEST(ExactReader, ThreadStartsAndStopsPromptly) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (BPF map, perf events)";
  const int ncpus = libbpf_num_possible_cpus();
  ASSERT_GT(ncpus, 0);
  const int fd = bpf_map_create(BPF_MAP_TYPE_PERF_EVENT_ARRAY, "sh_exact_test", 4, 4, uint32_t(ncpus), nullptr);
  if (fd < 0) GTEST_SKIP() << "cannot create a perf event array";
  {
    auto r = std::make_unique<ExactReader>(fd, uint32_t(ncpus), 8);
    EXPECT_EQ(r->pages(), 8u);
    ExactBatch b = r->take(UINT64_MAX);
    EXPECT_TRUE(b.records.empty());
    EXPECT_EQ(b.lost, 0u);
    const auto t0 = std::chrono::steady_clock::now();
    r.reset();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(ExactReader::kDrainMs / 2 + 20));
  }
  EXPECT_GE(ExactReader::default_pages(1) * size_t(sysconf(_SC_PAGESIZE)), size_t(1) << 20);
  EXPECT_LE(ExactReader::default_pages(4096) * size_t(sysconf(_SC_PAGESIZE)), size_t(1) << 20);
  close(fd);
}
