// --catch with --exact (issue 31): each caught event's coherence transfers and the other
// CPUs' accesses to its lines inside its window, from the report's own --exact replay
// (analysis/tails_exact.h), on hand-made samples whose figures are counted by hand.
#include <gtest/gtest.h>

#include "analysis/report.h"
#include "analysis/tails_exact.h"
#include "model/lines.h"
#include "output/report_text.h"
#include "test_util.h"

using namespace schedhot;
using namespace schedhot::testing;

namespace {

constexpr uint64_t kSec = 1'000'000'000;

/// 4 CPUs (0,1 SMT siblings of one core, 2,3 of another; one LLC), the 6.12 layout, a
/// cpupri_set rule at 10 us.
Meta tails_exact_meta() {
  Meta m = synthetic_meta(4);
  m.host.cacheline_bytes = 64;
  for (uint32_t c = 0; c < 4; ++c) m.host.topology.push_back({int(c), 0, 0, int(c / 2), 0, 0});
  m.layout = assumed_layout("6.12.0", 64);
  m.start_mono_ns = 10 * kSec;
  apply_catch_rules(m, {fixed_catch_rule("cpupri_set", 10'000)});
  return m;
}

uint16_t word_of(const Meta& m, const char* probe, const char* field) {
  const int p = m.probe_index(probe);
  return static_cast<uint16_t>(m.probes[size_t(p)].slot.find(field)->offset);
}

CaughtEvent caught(uint32_t cpu, uint64_t end_ns, uint64_t dur_ns) {
  CaughtEvent e;
  e.probe = SH_P_CPUPRI_SET;
  e.cpu = cpu;
  e.ts_ns = end_ns;
  e.dur_ns = dur_ns;
  e.comm = "rtapp";
  e.pid = e.tgid = 100;
  return e;
}

/// Samples 1 s apart from m.start_mono_ns; sample k (k >= 1) carries exact[k - 1] (when
/// set; its counters count its records, as the probes' do) and caught[k - 1] (when set).
std::vector<Sample> samples(const Meta& m, const std::vector<std::optional<ExactBatch>>& exact,
                            const std::vector<std::optional<CatchBatch>>& caught) {
  std::vector<Sample> v;
  Sample s = make_sample(m);
  s.mono_ns = m.start_mono_ns;
  v.push_back(s);
  for (size_t k = 0; k < std::max(exact.size(), caught.size()); ++k) {
    s.seq = uint32_t(k + 1);
    s.mono_ns += kSec;
    s.exact = k < exact.size() ? exact[k] : std::nullopt;
    if (s.exact)
      for (const ExactRecord& r : s.exact->records)
        ++s.probes[r.probe].words.mut(size_t(r.cpu) * m.probes[r.probe].slot.slot_words + r.word);
    s.caught = k < caught.size() ? caught[k] : std::nullopt;
    v.push_back(s);
  }
  return v;
}

nlohmann::json report(const Meta& m, const std::vector<Sample>& v) {
  ReportBuilder rb(m, ReportOptions{});
  for (const Sample& s : v) rb.add(s);
  return rb.build(m, SourceInfo{});
}

/// The one interval of the hand count: T = its start + 0.5 s; CPU 1 caught over [T, T + 10 us].
struct HandCase {
  Meta m = tails_exact_meta();
  uint64_t T = m.start_mono_ns + kSec / 2;
  ExactBatch exact;
  CatchBatch caught;
};

HandCase hand_case() {
  HandCase h;
  const Meta& m = h.m;
  const uint16_t p = uint16_t(m.probe_index("cpupri_set")), calls = word_of(m, "cpupri_set", "calls"),
                 noop = word_of(m, "cpupri_set", "noop");
  const uint16_t pn = uint16_t(m.probe_index("nohz_enter")), ncalls = word_of(m, "nohz_enter", "calls");
  const uint64_t T = h.T;
  // cpupri_set's calls record writes cpu_to_pri[cpu], its noop record reads it: CPUs 0-3's
  // ints share line 0 of cpupri.cpu_to_pri. The ownership machine on that line:
  h.exact.records = {
      {T - 5'000, 2, p, calls},    // CPU 2 writes: cold (the line's first access)
      {T, 1, p, calls},            // CPU 1 writes, CPU 2 holds it: a transfer of CPU 1's, inside
      {T + 2'000, 2, p, calls},    // CPU 2 writes: a transfer (CPU 2's); another CPU's access inside
      {T + 3'000, 3, pn, ncalls},  // CPU 3 on nohz's line: not one of CPU 1's lines
      {T + 4'000, 2, p, calls},    // CPU 2 writes: a hit; another access inside
      {T + 6'000, 1, p, noop},     // CPU 1 reads, CPU 2 wrote last: CPU 1's second transfer
      {T + 8'000, 3, p, calls},    // CPU 3 writes ({2, 1} hold it): a transfer; another access inside
      {T + 12'000, 2, p, calls},   // after the window: a transfer, not the event's
  };
  h.caught.events = {caught(1, T + 10'000, 10'000),
                     caught(0, T + 500'000, 10'000)};  // CPU 0 made no record inside its window
  return h;
}

}  // namespace

TEST(TailsExact, TheRecordsMapAsTheHandCountAssumes) {
  const Meta m = tails_exact_meta();
  const int p = m.probe_index("cpupri_set");
  const auto calls = event_lines(m, layout_of(m), p, word_of(m, "cpupri_set", "calls"), 1);
  const auto noop = event_lines(m, layout_of(m), p, word_of(m, "cpupri_set", "noop"), 1);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].first, (LineKey{"cpupri.cpu_to_pri", 0}));
  EXPECT_TRUE(calls[0].second);
  ASSERT_EQ(noop.size(), 1u);
  EXPECT_EQ(noop[0].first, (LineKey{"cpupri.cpu_to_pri", 0}));
  EXPECT_FALSE(noop[0].second);
  EXPECT_EQ(event_lines(m, layout_of(m), p, word_of(m, "cpupri_set", "calls"), 3)[0].first,
            (LineKey{"cpupri.cpu_to_pri", 0}));
  for (const auto& [k, w] : event_lines(m, layout_of(m), m.probe_index("nohz_enter"), word_of(m, "nohz_enter", "calls"), 3))
    EXPECT_NE(k.object, "cpupri.cpu_to_pri");
}

TEST(TailsExact, HandCountedTransfersAndOtherAccesses) {
  const HandCase h = hand_case();
  const nlohmann::json r = report(h.m, samples(h.m, {h.exact}, {h.caught}));
  ASSERT_EQ(r["tails"].size(), 1u);
  const auto& x = r["tails"][0]["exact"];
  ASSERT_TRUE(x.is_object()) << r["tails"][0].dump();
  EXPECT_EQ(x["events"].get<uint64_t>(), 2u);
  EXPECT_EQ(x["with_accesses"].get<uint64_t>(), 1u);  // CPU 0's event: no record of its own
  EXPECT_EQ(x["with_transfers"].get<uint64_t>(), 1u);
  EXPECT_EQ(x["transfers"].get<uint64_t>(), 2u);       // T (write) and T + 6 us (read)
  EXPECT_EQ(x["other_accesses"].get<uint64_t>(), 3u);  // CPU 2 twice, CPU 3 once; not nohz, not T + 12 us
  EXPECT_EQ(x["window_transfers"].get<uint64_t>(), 5u);
  EXPECT_EQ(x["lost"].get<uint64_t>(), 0u);
  EXPECT_FALSE(x["lower_bound"].get<bool>());
  ASSERT_EQ(x["lines"].size(), 1u);
  const auto& l = x["lines"][0];
  EXPECT_EQ(l["object"], "cpupri.cpu_to_pri");
  EXPECT_EQ(l["line"].get<int64_t>(), 0);
  EXPECT_EQ(l["transfers"].get<uint64_t>(), 2u);
  EXPECT_EQ(l["other_accesses"].get<uint64_t>(), 3u);
  // Named as the cachelines section names the same line, whose exact figure is the same
  // replay's: 5 transfers over the 1 s interval.
  bool found = false;
  for (const auto& cl : r["cachelines"]["lines"])
    if (cl["object"] == "cpupri.cpu_to_pri" && cl["line"] == 0) {
      found = true;
      EXPECT_EQ(cl["name"], l["name"]);
      EXPECT_DOUBLE_EQ(cl["exact"]["xfers_per_s"].get<double>(), 5.0);
    }
  EXPECT_TRUE(found) << r["cachelines"].dump();
  const std::string text = render_report_text(r);
  const std::string want = "  exact: of 2 caught, 1 took coherence transfers inside (2 in all: " +
                           l["name"].get<std::string>() +
                           " 2); other CPUs touched their lines 3 times inside (1 had no --exact record of their CPU "
                           "inside)\n";
  EXPECT_NE(text.find(want), std::string::npos) << text;
}

TEST(TailsExact, OtherAccessesBeforeTheCpusFirstOneInsideCount) {
  // Counted from the window's start, not from the CPU's first access inside: CPU 2 reads
  // cpu_to_pri (noop) at T + 1 us, before CPU 1's first access inside (a write at T + 5 us:
  // holders {1, 2}, a transfer), and again at the window's end (included).
  Meta m = tails_exact_meta();
  const uint16_t p = uint16_t(m.probe_index("cpupri_set")), calls = word_of(m, "cpupri_set", "calls"),
                 noop = word_of(m, "cpupri_set", "noop");
  const uint64_t T = m.start_mono_ns + kSec / 2;
  ExactBatch b;
  b.records = {{T - 9'000, 1, p, calls}, {T + 1'000, 2, p, noop}, {T + 5'000, 1, p, calls}, {T + 10'000, 2, p, noop}};
  CatchBatch c;
  c.events = {caught(1, T + 10'000, 10'000)};
  const nlohmann::json r = report(m, samples(m, {b}, {c}));
  const auto& x = r["tails"][0]["exact"];
  EXPECT_EQ(x["events"].get<uint64_t>(), 1u);
  EXPECT_EQ(x["transfers"].get<uint64_t>(), 1u);       // T + 5 us; T - 9 us (cold) is before
  EXPECT_EQ(x["other_accesses"].get<uint64_t>(), 2u);  // T + 1 us and the end, T + 10 us (included)
  EXPECT_EQ(x["window_transfers"].get<uint64_t>(), 3u);  // CPU 2's two reads after CPU 1's writes, CPU 1's write
}

TEST(TailsExact, AWindowStartingInThePreviousIntervalSeesItsRecords) {
  Meta m = tails_exact_meta();
  const uint16_t p = uint16_t(m.probe_index("cpupri_set")), calls = word_of(m, "cpupri_set", "calls");
  const uint64_t edge = m.start_mono_ns + kSec;  // the first interval's end
  ExactBatch b1, b2;
  b1.records = {{edge - 30'000, 2, p, calls}, {edge - 10'000, 1, p, calls}};  // CPU 1: a transfer
  b2.records = {{edge + 1'000, 2, p, calls}};                                  // CPU 2 inside
  CatchBatch c2;
  c2.events = {caught(1, edge + 5'000, 20'000)};  // [edge - 15 us, edge + 5 us]
  const nlohmann::json r = report(m, samples(m, {b1, b2}, {std::nullopt, c2}));
  const auto& x = r["tails"][0]["exact"];
  EXPECT_EQ(x["events"].get<uint64_t>(), 1u);
  EXPECT_EQ(x["with_accesses"].get<uint64_t>(), 1u);
  EXPECT_EQ(x["transfers"].get<uint64_t>(), 1u);
  EXPECT_EQ(x["other_accesses"].get<uint64_t>(), 1u);
}

TEST(TailsExact, AnIntervalWithoutExactRecordsIsNotLookedAt) {
  HandCase h = hand_case();
  // The hand case's interval, then one whose sample has a CATCH frame and no EXACT frame.
  CatchBatch later;
  later.events = {caught(1, h.m.start_mono_ns + kSec + kSec / 2, 50'000)};
  const nlohmann::json r = report(h.m, samples(h.m, {h.exact, std::nullopt}, {h.caught, later}));
  const auto& t = r["tails"][0];
  EXPECT_EQ(t["events_received"].get<uint64_t>(), 3u);
  EXPECT_EQ(t["exact"]["events"].get<uint64_t>(), 2u);  // the later one is not counted
  EXPECT_EQ(t["exact"]["transfers"].get<uint64_t>(), 2u);
  EXPECT_NE(render_report_text(r).find("  exact: of 2 caught in intervals with --exact records, 1 took"), std::string::npos);
  // An EXACT frame with no record in the event's window: looked at, nothing inside.
  CatchBatch quiet;
  quiet.events = {caught(1, h.m.start_mono_ns + kSec / 2, 10'000)};
  const nlohmann::json rq = report(h.m, samples(h.m, {ExactBatch{}}, {quiet}));
  const auto& q = rq["tails"][0]["exact"];
  EXPECT_EQ(q["events"].get<uint64_t>(), 1u);
  EXPECT_EQ(q["with_accesses"].get<uint64_t>(), 0u);
  EXPECT_EQ(q["transfers"].get<uint64_t>(), 0u);
  EXPECT_EQ(q["lines"].size(), 0u);
}

TEST(TailsExact, NoExactFramesIsNull) {
  HandCase h = hand_case();
  const nlohmann::json r = report(h.m, samples(h.m, {}, {h.caught}));
  ASSERT_EQ(r["tails"].size(), 1u);
  EXPECT_TRUE(r["tails"][0]["exact"].is_null());
  EXPECT_EQ(render_report_text(r).find("  exact:"), std::string::npos);
}

TEST(TailsExact, LostRecordsMakeLowerBounds) {
  HandCase h = hand_case();
  h.exact.lost = 4;
  ExactBatch other;  // an interval without caught events: its losses are not the events'
  other.lost = 100;
  const nlohmann::json r = report(h.m, samples(h.m, {h.exact, other}, {h.caught}));
  const auto& x = r["tails"][0]["exact"];
  EXPECT_EQ(x["lost"].get<uint64_t>(), 4u);
  EXPECT_TRUE(x["lower_bound"].get<bool>());
  EXPECT_EQ(x["transfers"].get<uint64_t>(), 2u);
  EXPECT_NE(render_report_text(r).find("; 4 --exact records lost in their intervals: lower bounds\n"), std::string::npos);
}

TEST(TailsExact, NoneTookATransfer) {
  Meta m = tails_exact_meta();
  const uint16_t p = uint16_t(m.probe_index("cpupri_set")), calls = word_of(m, "cpupri_set", "calls");
  const uint64_t T = m.start_mono_ns + kSec / 2;
  ExactBatch b;
  b.records = {{T, 1, p, calls}, {T + 1'000, 1, p, calls}, {T + 2'000, 2, p, calls}};  // cold, hit; CPU 2's transfer
  CatchBatch c;
  c.events = {caught(1, T + 2'000, 2'000)};
  const nlohmann::json r = report(m, samples(m, {b}, {c}));
  const auto& x = r["tails"][0]["exact"];
  EXPECT_EQ(x["with_transfers"].get<uint64_t>(), 0u);
  EXPECT_EQ(x["other_accesses"].get<uint64_t>(), 1u);
  ASSERT_EQ(x["lines"].size(), 1u);
  EXPECT_EQ(x["lines"][0]["transfers"].get<uint64_t>(), 0u);
  EXPECT_NE(render_report_text(r).find("  exact: of 1 caught, none took a coherence transfer inside; other CPUs touched "
                                       "their lines 1 time inside\n"),
            std::string::npos);
}

TEST(TailsExact, OverlappingWindowsStopAtTheScanCap) {
  // A crafted batch: many events on CPU 1 whose windows all cover its accesses. With a cap
  // of 10 accesses scanned, events are looked at while the count is at most 10 (4 + 1
  // each: 5, 10, 15), the rest not.
  const Meta m = tails_exact_meta();
  TailAccumulator tails(m);
  TailExactJoin join(tails, m.catch_rules.size(), 10);
  ExactAccumulator acc(m);
  acc.set_observer(&join);
  const uint16_t p = uint16_t(m.probe_index("cpupri_set")), calls = word_of(m, "cpupri_set", "calls");
  const uint64_t T = m.start_mono_ns + kSec / 2;
  ExactBatch exact;
  exact.records = {{T, 2, p, calls}};  // CPU 2 first: CPU 1's first write is a transfer
  for (uint64_t i = 0; i < 4; ++i) exact.records.push_back({T + 1'000 + i * 1'000, 1, p, calls});
  exact.records.push_back({T + 5'500, 2, p, calls});  // CPU 2 again, inside every window
  CatchBatch batch;
  for (int i = 0; i < 6; ++i) batch.events.push_back(caught(1, T + 10'000 + uint64_t(i), 20'000));
  acc.add(1.0, exact);
  join.add(&exact, &batch);
  const nlohmann::json x = join.json(0, acc);
  ASSERT_TRUE(x.is_object()) << x.dump();
  EXPECT_EQ(x["events"].get<uint64_t>(), 3u);
  EXPECT_EQ(x["not_looked_at"].get<uint64_t>(), 3u);
  EXPECT_EQ(x["transfers"].get<uint64_t>(), 3u);       // CPU 1's first write, in each window
  EXPECT_EQ(x["other_accesses"].get<uint64_t>(), 6u);  // CPU 2's two, in each window
  nlohmann::json tail = {{"exact", x}, {"events_received", 6}};
  EXPECT_NE(tail_exact_text(tail).find("; 3 not looked at (the join's cap on accesses scanned"), std::string::npos)
      << tail_exact_text(tail);
}
