// --catch's tails (issue 31) where they show: the report's "tails" (JSON and text) from
// hand-made samples with catch rules, slot counters and CatchBatches, and
// `export --format folded`.
#include <gtest/gtest.h>

#include <sstream>

#include <filesystem>

#include "analysis/report.h"
#include "analysis/tails.h"
#include "probe/catch_rules.h"
#include "command/export.h"
#include "command/report.h"
#include "output/export.h"
#include "output/report_text.h"
#include "store/recording.h"
#include "test_recording_util.h"
#include "test_util.h"

using namespace schedhot;
using namespace schedhot::testing;

namespace {

/// Samples in memory, in order.
class ListSource : public SampleSource {
 public:
  ListSource(const Meta& m, std::vector<Sample> v) : m_(m), v_(std::move(v)) {}
  const Meta& meta() const override { return m_; }
  bool next(Sample& out) override {
    if (i_ >= v_.size()) return false;
    out = v_[i_++];
    return true;
  }

 private:
  const Meta& m_;
  std::vector<Sample> v_;
  size_t i_ = 0;
};

CatchRule rule(const std::string& probe, uint64_t asked_ns) { return fixed_catch_rule(probe, asked_ns); }

std::vector<StackFrame> stack(std::initializer_list<std::pair<const char*, uint64_t>> frames) {
  std::vector<StackFrame> v;
  for (auto& [s, o] : frames) v.push_back({s, o});
  return v;
}

CaughtEvent ev(uint16_t probe, uint64_t dur, uint32_t stack_ix, const char* comm, uint32_t pid, uint32_t tgid) {
  CaughtEvent e;
  e.probe = probe;
  e.dur_ns = dur;
  e.stack = stack_ix;
  e.comm = comm;
  e.pid = pid;
  e.tgid = tgid;
  return e;
}

const auto kA = stack({{"cpupri_set", 0x10}, {"enqueue_task_rt", 0x80}, {"ttwu_do_activate", 0x40}});
const auto kB = stack({{"cpupri_set", 0x10}, {"dequeue_rt_stack", 0x33}, {"", 0x5}});

/// A window of three samples 1 s apart: cpupri_set with a rule at 20 us; its slot counters
/// and histogram on CPU 1 moved by what each interval's batch says, plus `extra` events in
/// the histogram above the threshold that no counter saw (0: accounted).
struct Case {
  Meta m;
  std::vector<Sample> samples;
};

Case make_case(uint64_t extra = 0, uint64_t rate_drops = 3) {
  Case c;
  c.m = synthetic_meta(4);
  apply_catch_rules(c.m, {rule("cpupri_set", 20'000)});
  const int p = c.m.probe_index("cpupri_set");
  Sample a = make_sample(c.m);
  a.mono_ns = 10'000'000'000;
  a.wall_ns = 1'700'000'000'000'000'000;
  // Baseline: something before the window that must not count.
  a.probes[p].words.mut(word(c.m, p, 1, "caught")) = 7;
  add_hist(c.m, a, p, 1, "lat", 50'000);
  Sample b = a, d = a;
  b.mono_ns += 1'000'000'000;
  b.wall_ns += 1'000'000'000;
  d.mono_ns += 2'000'000'000;
  d.wall_ns += 2'000'000'000;
  // Interval 1: 3 events, stacks A, A, B; irq accounting on.
  CatchBatch b1;
  b1.stacks = {kA, kB};
  CaughtEvent e1 = ev(SH_P_CPUPRI_SET, 30'000, 1, "rtapp", 100, 100);
  e1.flags = SH_CATCH_F_IRQ | SH_CATCH_F_DETAIL;
  e1.detail = (uint64_t(50 + 1) << 16) | (0 + 1);  // RT -> NORMAL
  e1.softirq_ns = 6'000;
  e1.flags |= SH_CATCH_F_STEAL;  // 4 us of steal inside; e3 measured none; the others not kept
  e1.steal_ns = 4'000;
  CaughtEvent e2 = ev(SH_P_CPUPRI_SET, 22'000, 1, "rtapp", 101, 100);
  e2.flags = SH_CATCH_F_IRQ | SH_CATCH_F_DETAIL;
  e2.detail = (uint64_t(0 + 1) << 16) | (50 + 1);  // NORMAL -> RT
  CaughtEvent e3 = ev(SH_P_CPUPRI_SET, 100'000, 2, "kworker/1:0", 7, 7);
  e3.flags = SH_CATCH_F_IRQ | SH_CATCH_F_IRQ_MORE | SH_CATCH_F_DETAIL;
  e3.detail = (uint64_t(50 + 1) << 16) | (0 + 1);  // RT -> NORMAL
  e3.irq_ns = 10'000;
  e3.softirq_ns = 20'000;
  e3.flags |= SH_CATCH_F_STEAL;
  b1.events = {e1, e2, e3};
  // Interval 2: stack A again (index 2 in this batch: stacks are per batch) and one without a stack.
  CatchBatch b2;
  b2.stacks = {kB, kA};
  CaughtEvent e4 = ev(SH_P_CPUPRI_SET, 40'000, 2, "rtapp", 100, 100);
  e4.flags = SH_CATCH_F_IRQ;
  CaughtEvent e5 = ev(SH_P_CPUPRI_SET, 25'000, 0, "rtapp", 100, 100);
  e5.flags = SH_CATCH_F_IRQ;
  CaughtEvent other = ev(SH_P_CPUPRI_FIND, 90'000, 1, "x", 1, 1);  // a probe without a rule
  b2.events = {e4, e5, other};
  b2.lost = 0;
  for (const CaughtEvent& e : b1.events) add_hist(c.m, b, p, 1, "lat", e.dur_ns);
  d.probes[p].words = b.probes[p].words;
  for (const CaughtEvent& e : b2.events)
    if (e.probe == SH_P_CPUPRI_SET) add_hist(c.m, d, p, 1, "lat", e.dur_ns);
  // Below the threshold: in the histogram, not caught.
  add_hist(c.m, d, p, 1, "lat", 5'000);
  add_hist(c.m, d, p, 1, "lat", 19'000);
  for (uint64_t i = 0; i < extra; ++i) add_hist(c.m, d, p, 1, "lat", 21'000);
  // Counters: 5 caught, `rate_drops` dropped (each also in the histogram above).
  b.probes[p].words.mut(word(c.m, p, 1, "caught")) += 3;
  d.probes[p].words.mut(word(c.m, p, 1, "caught")) = b.probes[p].words[word(c.m, p, 1, "caught")] + 2;
  d.probes[p].words.mut(word(c.m, p, 2, "catch_rate_drops")) = rate_drops;
  for (uint64_t i = 0; i < rate_drops; ++i) add_hist(c.m, d, p, 2, "lat", 60'000);
  // Each event ends inside its interval (a recording's CATCH frame checks it).
  for (size_t k = 0; k < b1.events.size(); ++k) b1.events[k].ts_ns = a.mono_ns + 100'000'000 * (k + 1);
  for (size_t k = 0; k < b2.events.size(); ++k) b2.events[k].ts_ns = b.mono_ns + 100'000'000 * (k + 1);
  b.caught = b1;
  d.caught = b2;
  c.samples = {a, b, d};
  return c;
}

nlohmann::json report(const Case& c) {
  ReportBuilder rb(c.m, ReportOptions{});
  for (const Sample& s : c.samples) rb.add(s);
  return rb.build(c.m, SourceInfo{});
}

}  // namespace

TEST(Tails, CountsAccountingDurationsStacksTasks) {
  const Case c = make_case();
  const nlohmann::json r = report(c);
  ASSERT_TRUE(r.contains("tails"));
  ASSERT_EQ(r["tails"].size(), 1u);
  const auto& t = r["tails"][0];
  EXPECT_EQ(t["rule"], "cpupri_set>20us");
  EXPECT_EQ(t["probe"], "cpupri_set");
  EXPECT_EQ(t["threshold_ns"].get<uint64_t>(), sh_hist_lower(sh_hist_index(20'000)));
  EXPECT_LE(t["threshold_ns"].get<uint64_t>(), 20'000u);
  EXPECT_EQ(t["caught"].get<uint64_t>(), 5u);  // the baseline's 7 are before the window
  EXPECT_EQ(t["rate_drops"].get<uint64_t>(), 3u);
  EXPECT_EQ(t["full_drops"].get<uint64_t>(), 0u);
  EXPECT_EQ(t["histogram_above"].get<uint64_t>(), 8u);  // 19 us is below 20 us's bucket... and not above
  EXPECT_TRUE(t["accounted"].get<bool>());
  EXPECT_EQ(t["events_received"].get<uint64_t>(), 5u);  // cpupri_find's event has no rule
  // Durations 22, 25, 30, 40, 100 us: nearest rank.
  EXPECT_EQ(t["duration_ns"]["p50"].get<uint64_t>(), 30'000u);
  EXPECT_EQ(t["duration_ns"]["p99"].get<uint64_t>(), 100'000u);
  EXPECT_EQ(t["duration_ns"]["max"].get<uint64_t>(), 100'000u);
  EXPECT_TRUE(t["duration_ns"]["reservoir"].is_null());
  // Stack A: twice in batch 1, once in batch 2 under another index: merged by content.
  ASSERT_EQ(t["stacks"].size(), 2u);
  EXPECT_EQ(t["stacks"][0]["count"].get<uint64_t>(), 3u);
  EXPECT_EQ(t["stacks"][0]["frames"],
            nlohmann::json({"cpupri_set+0x10", "enqueue_task_rt+0x80", "ttwu_do_activate+0x40"}));
  EXPECT_DOUBLE_EQ(t["stacks"][0]["share"].get<double>(), 0.6);
  EXPECT_EQ(t["stacks"][1]["count"].get<uint64_t>(), 1u);
  EXPECT_EQ(t["stacks"][1]["frames"][2], "[unknown]");
  EXPECT_EQ(t["stacks_unique"].get<uint64_t>(), 2u);
  EXPECT_EQ(t["no_stack"].get<uint64_t>(), 1u);
  ASSERT_EQ(t["tasks"].size(), 3u);
  EXPECT_EQ(t["tasks"][0]["comm"], "rtapp");
  EXPECT_EQ(t["tasks"][0]["pid"].get<uint32_t>(), 100u);
  EXPECT_EQ(t["tasks"][0]["count"].get<uint64_t>(), 3u);
  // The probe's detail: cpupri transitions named as the trans array's elements.
  EXPECT_EQ(t["detail"]["RT->NORMAL"].get<uint64_t>(), 2u);
  EXPECT_EQ(t["detail"]["NORMAL->RT"].get<uint64_t>(), 1u);
  for (const char* k : {"per_sec", "asked_ns", "percentile", "perf_lost", "interrupts", "tasks_unique", "other_stacks"})
    EXPECT_TRUE(t.contains(k)) << k;
}

TEST(Tails, InterruptShares) {
  const nlohmann::json r = report(make_case());
  const auto& in = r["tails"][0]["interrupts"];
  EXPECT_EQ(in["events"].get<uint64_t>(), 5u);
  EXPECT_EQ(in["softirq"]["events"].get<uint64_t>(), 2u);
  EXPECT_DOUBLE_EQ(in["softirq"]["share"].get<double>(), 0.4);
  EXPECT_EQ(in["softirq"]["ns"].get<uint64_t>(), 26'000u);
  // of all the caught time (217 us), and of the time of the two that had one (130 us)
  EXPECT_DOUBLE_EQ(in["softirq"]["time_share"].get<double>(), 26'000.0 / 217'000.0);
  EXPECT_DOUBLE_EQ(in["softirq"]["time_share_of_those"].get<double>(), 26'000.0 / 130'000.0);
  EXPECT_EQ(in["irq"]["events"].get<uint64_t>(), 1u);
  EXPECT_EQ(in["nmi"]["events"].get<uint64_t>(), 0u);
  EXPECT_TRUE(in["lower_bound"].get<bool>());
  EXPECT_EQ(in["events_lower_bound"].get<uint64_t>(), 1u);
}

TEST(Tails, Text) {
  const std::string text = render_report_text(report(make_case()));
  const std::string th = format_ns(double(sh_hist_lower(sh_hist_index(20'000))));
  EXPECT_NE(text.find("\nTails (--catch"), std::string::npos) << text;
  EXPECT_NE(text.find("cpupri_set >= " + th + " (asked 20.0us): 5 caught, 3 dropped (rate), 0 (buffer); 8 = the "
                      "histogram's count at or above " + th + "\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  duration of the 5 received: p50 30.0us, p99 100.0us, max 100.0us\n"), std::string::npos) << text;
  // Folded, outermost first, with the offsets (export --format folded drops them).
  EXPECT_NE(text.find("\n         3 ttwu_do_activate+0x40;enqueue_task_rt+0x80;cpupri_set+0x10\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("  of 5 caught, 40 % had a softirq inside (20 % of their time), 20 % had a hard IRQ inside "
                      "(10 % of their time)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  1 had more interrupts inside than the ring kept"), std::string::npos) << text;
  EXPECT_NE(text.find("  transitions: RT->NORMAL=2 NORMAL->RT=1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("top tasks: rtapp (pid 100) 3, kworker/1:0 (pid 7) 1, rtapp (tid 101 of 100) 1\n"), std::string::npos)
      << text;
}

TEST(Tails, OneEventPerCpuInFlightAtAnEdgeIsAccounted) {
  // A sample that copied CPU 1's slot between its histogram's add and its counter's: one
  // event in the histogram, not yet counted (bpf/common.bpf.h: sh_catch_note).
  const nlohmann::json r = report(make_case(/*extra=*/1));
  const auto& t = r["tails"][0];
  EXPECT_EQ(t["histogram_above"].get<uint64_t>(), 9u);
  EXPECT_EQ(t["in_flight"].get<int64_t>(), 1);
  EXPECT_TRUE(t["accounted"].get<bool>());
  const std::string text = render_report_text(r);
  EXPECT_NE(text.find("; 8 vs 9, the histogram's count at or above "), std::string::npos) << text;
  EXPECT_NE(text.find(": 1 in flight at the window's edges (at most one per CPU"), std::string::npos) << text;
}

TEST(Tails, ARuleEditedLiveIsNotCheckedAndSaysWhen) {
  // top's rule editor left its NOTE on the probe (LiveSession::set_catch_threshold): the
  // start's threshold no longer holds for the whole window.
  Case c = make_case(/*extra=*/2);
  const int p = c.m.probe_index("cpupri_set");
  c.m.probes[size_t(p)].status.notes.push_back(std::string(kCatchEditedNote) +
                                               " cpupri_set at +1.5 s: cpupri_set>5us (armed at 5120 ns)");
  const nlohmann::json r = report(c);
  const auto& t = r["tails"][0];
  EXPECT_TRUE(t["accounted"].is_null());
  EXPECT_TRUE(t["in_flight"].is_null());
  EXPECT_EQ(t["edited_live"], "cpupri_set at +1.5 s: cpupri_set>5us (armed at 5120 ns)");
  EXPECT_EQ(t["caught"].get<uint64_t>(), 5u);
  const std::string text = render_report_text(r);
  EXPECT_NE(text.find("; edited live (cpupri_set at +1.5 s: cpupri_set>5us (armed at 5120 ns)): before that the "
                      "threshold was this one, so the histogram check is not made"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("not accounted for"), std::string::npos) << text;
}

TEST(Tails, NotAccountedWhenTheHistogramHasMore) {
  const nlohmann::json r = report(make_case(/*extra=*/2));
  const auto& t = r["tails"][0];
  EXPECT_EQ(t["histogram_above"].get<uint64_t>(), 10u);
  EXPECT_FALSE(t["accounted"].get<bool>());
  const std::string text = render_report_text(r);
  EXPECT_NE(text.find("; 8 != 10, the histogram's count at or above"), std::string::npos) << text;
}

// Steal time: over the events that measured it (2 of 5), the share that had some and its
// total; none measured: "not kept on this machine", null in the JSON, never 0.
TEST(Tails, StealShares) {
  Case c = make_case();
  {
    const nlohmann::json r = report(c);
    const auto& st = r["tails"][0]["steal"];
    ASSERT_FALSE(st.is_null());
    EXPECT_EQ(st["events"].get<uint64_t>(), 2u);
    EXPECT_EQ(st["not_kept"].get<uint64_t>(), 3u);
    EXPECT_EQ(st["with"].get<uint64_t>(), 1u);
    EXPECT_DOUBLE_EQ(st["share"].get<double>(), 0.5);
    EXPECT_EQ(st["ns"].get<uint64_t>(), 4'000u);
    EXPECT_DOUBLE_EQ(st["time_share"].get<double>(), 4'000.0 / 130'000.0);  // e1 30 us + e3 100 us
    EXPECT_DOUBLE_EQ(st["time_share_of_those"].get<double>(), 4'000.0 / 30'000.0);
    const std::string text = render_report_text(r);
    EXPECT_NE(text.find("  steal: of 2 caught, 1 had steal inside, 4000 ns total (13 % of their time): the vCPU waited "
                        "for the host (3 more without a steal reading)\n"),
              std::string::npos)
        << text;
  }
  // A crafted steal time over its event's duration counts as the duration.
  for (Sample& s : c.samples)
    if (s.caught)
      for (CaughtEvent& e : s.caught->events)
        if (e.steal_ns) e.steal_ns = ~uint64_t(0);
  EXPECT_EQ(report(c)["tails"][0]["steal"]["ns"].get<uint64_t>(), 30'000u);
  // Every event measured, none with steal inside.
  for (Sample& s : c.samples)
    if (s.caught)
      for (CaughtEvent& e : s.caught->events) e.flags |= SH_CATCH_F_STEAL, e.steal_ns = 0;
  EXPECT_NE(render_report_text(report(c)).find("  steal: of 5 caught, none had steal inside\n"), std::string::npos);
  // None measured (no paravirt steal clock; a recording made before 1.6).
  for (Sample& s : c.samples)
    if (s.caught)
      for (CaughtEvent& e : s.caught->events) e.flags &= uint16_t(~SH_CATCH_F_STEAL), e.steal_ns = 0;
  const nlohmann::json off = report(c);
  EXPECT_TRUE(off["tails"][0]["steal"].is_null());
  EXPECT_NE(render_report_text(off).find("  steal: not kept on this machine (no paravirt steal clock)\n"),
            std::string::npos);
}

TEST(Tails, NoInterruptInsideIsTheFunctionsOwnTime) {
  Case c = make_case();
  for (Sample& s : c.samples)
    if (s.caught)
      for (CaughtEvent& e : s.caught->events) e.irq_ns = e.softirq_ns = e.nmi_ns = 0, e.flags &= ~SH_CATCH_F_IRQ_MORE;
  const nlohmann::json r = report(c);
  EXPECT_EQ(r["tails"][0]["interrupts"]["softirq"]["events"].get<uint64_t>(), 0u);
  const std::string text = render_report_text(r);
  EXPECT_NE(text.find("  of 5 caught, none had an interrupt inside: the time was the function's own (cache misses, "
                      "coherence transfers, virtualization)\n"),
            std::string::npos)
      << text;
  // Accounting off: no claim either way.
  for (Sample& s : c.samples)
    if (s.caught)
      for (CaughtEvent& e : s.caught->events) e.flags &= ~SH_CATCH_F_IRQ;
  const nlohmann::json off = report(c);
  EXPECT_TRUE(off["tails"][0]["interrupts"].is_null());
  EXPECT_NE(render_report_text(off).find("  interrupt time not measured\n"), std::string::npos);
}

TEST(Tails, ReceivedBelowCaughtSaysThePerfBufferLostThem) {
  Case c = make_case();
  c.samples[2].caught->events.erase(c.samples[2].caught->events.begin());  // e4 never arrived
  c.samples[2].caught->lost = 1;
  const nlohmann::json r = report(c);
  EXPECT_EQ(r["tails"][0]["events_received"].get<uint64_t>(), 4u);
  EXPECT_EQ(r["tails"][0]["perf_lost"].get<uint64_t>(), 1u);
  EXPECT_NE(render_report_text(r).find("  4 received, 5 caught in the window: 1 lost by the perf buffers"),
            std::string::npos);
}

TEST(Tails, WindowSkipsTheBatchBeforeIt) {
  Case c = make_case();
  ReportOptions o;
  o.from_s = 1;  // from the second sample: only the second interval
  ReportBuilder rb(c.m, o);
  for (const Sample& s : c.samples) rb.add(s);
  const nlohmann::json r = rb.build(c.m, SourceInfo{});
  const auto& t = r["tails"][0];
  EXPECT_EQ(t["events_received"].get<uint64_t>(), 2u);
  EXPECT_EQ(t["caught"].get<uint64_t>(), 2u);
  EXPECT_EQ(t["rate_drops"].get<uint64_t>(), 3u);
  EXPECT_EQ(t["histogram_above"].get<uint64_t>(), 5u);
  EXPECT_TRUE(t["accounted"].get<bool>());
  EXPECT_EQ(t["stacks"][0]["count"].get<uint64_t>(), 1u);
  // To the second sample: the first interval only (the report reads on past --to).
  ReportOptions o2;
  o2.to_s = 1;
  ReportBuilder rb2(c.m, o2);
  for (const Sample& s : c.samples) rb2.add(s);
  const nlohmann::json t2 = rb2.build(c.m, SourceInfo{})["tails"][0];
  EXPECT_EQ(t2["events_received"].get<uint64_t>(), 3u);
  EXPECT_EQ(t2["caught"].get<uint64_t>(), 3u);
  EXPECT_EQ(t2["histogram_above"].get<uint64_t>(), 3u);
  EXPECT_TRUE(t2["accounted"].get<bool>());
  EXPECT_EQ(t2["duration_ns"]["max"].get<uint64_t>(), 100'000u);
}

// A p99 rule over running histograms of 1 to 13 events stays disarmed (10 must lie above
// the percentile): the 8 counted have no place in the histogram check.
TEST(Tails, APercentileRuleThatWasDisarmedCountsNothing) {
  Case c = make_case();
  c.m.catch_rules[0].percentile = 99;
  c.m.catch_rules[0].asked_ns = 0;
  c.m.catch_rules[0].text = "cpupri_set>p99";
  const nlohmann::json r = report(c);
  const auto& t = r["tails"][0];
  EXPECT_EQ(t["caught"].get<uint64_t>(), 5u);
  EXPECT_TRUE(t["histogram_above"].is_null());
  EXPECT_EQ(t["histogram_above_bounds"], nlohmann::json::array({0, 0}));
  EXPECT_EQ(t["checked_counted"].get<uint64_t>(), 8u);
  EXPECT_FALSE(t["accounted"].get<bool>());
  EXPECT_NE(render_report_text(r).find("cpupri_set > p99 (re-armed at each sample from the running histogram; disarmed until the probe has counted 10 events above it)"),
            std::string::npos);
}

TEST(Tails, NoRulesNoTails) {
  Meta m = synthetic_meta(2);
  Sample a = make_sample(m), b = make_sample(m);
  b.mono_ns = 1'000'000'000;
  ReportBuilder rb(m, ReportOptions{});
  rb.add(a);
  rb.add(b);
  const nlohmann::json r = rb.build(m, SourceInfo{});
  EXPECT_FALSE(r.contains("tails"));
  EXPECT_EQ(render_report_text(r).find("Tails"), std::string::npos);
}

TEST(Tails, DurationsBeyondTheCapAreAReservoir) {
  Meta m = synthetic_meta(1);
  apply_catch_rules(m, {rule("idle", 1'000'000)});
  TailAccumulator acc(m);
  const size_t n = TailAccumulator::kMaxDurations + 1000;
  for (size_t i = 0; i < n;) {  // in batches of 10000, as intervals bring them
    CatchBatch b;
    for (size_t k = 0; k < 10'000 && i < n; ++k, ++i) {
      CaughtEvent e = ev(SH_P_IDLE, 1'000'000 + i, 0, "swapper/0", 0, 0);
      e.flags = SH_CATCH_F_DETAIL;
      e.detail = i % 3;
      b.events.push_back(e);
    }
    acc.add(b);
  }
  Sample s0 = make_sample(m), s1 = make_sample(m);
  s1.mono_ns = 1'000'000'000;
  const Interval iv(m, s0, s1);
  const nlohmann::json t = acc.json(m, iv)[0];
  EXPECT_EQ(t["events_received"].get<uint64_t>(), n);
  EXPECT_EQ(t["duration_ns"]["reservoir"].get<uint64_t>(), TailAccumulator::kMaxDurations);
  EXPECT_EQ(t["duration_ns"]["max"].get<uint64_t>(), 1'000'000 + n - 1);
  // A uniform sample of 1e6 of 1.001e6 values: its median within 0.5 % of the true one.
  EXPECT_NEAR(t["duration_ns"]["p50"].get<double>(), 1'000'000 + n / 2.0, n * 0.005);
  EXPECT_EQ(t["detail"]["state 0"].get<uint64_t>(), (n + 2) / 3);
  EXPECT_EQ(t["detail"]["state 2"].get<uint64_t>(), n / 3);
}

TEST(Folded, OneLinePerProbeAndStackOutermostFirst) {
  Case c = make_case();
  ListSource src(c.m, c.samples);
  std::ostringstream out;
  ExportOptions o;
  o.format = ExportFormat::folded;
  const ExportResult res = export_samples(src, out, o, [] { return SourceInfo{}; });
  EXPECT_EQ(res.caught, 6u);
  EXPECT_EQ(out.str(),
            "cpupri_find;[unknown];dequeue_rt_stack;cpupri_set 1\n"  // any probe's events, rule or not
            "cpupri_set;[no stack] 1\n"
            "cpupri_set;[unknown];dequeue_rt_stack;cpupri_set 1\n"
            "cpupri_set;ttwu_do_activate;enqueue_task_rt;cpupri_set 3\n");
}

TEST(Folded, NoCaughtEventsWritesNothing) {
  Meta m = synthetic_meta(2);
  Sample a = make_sample(m), b = make_sample(m);
  b.mono_ns = 1'000'000'000;
  ListSource src(m, {a, b});
  std::ostringstream out;
  ExportOptions o;
  o.format = ExportFormat::folded;
  const ExportResult res = export_samples(src, out, o, [] { return SourceInfo{}; });
  EXPECT_EQ(res.caught, 0u);
  EXPECT_EQ(res.intervals, 1u);
  EXPECT_EQ(out.str(), "");
  EXPECT_EQ(parse_export_format("folded"), ExportFormat::folded);
}

// End to end through a recording (CATCH frames): written by RecordingWriter with
// Sample::caught set, read back by report and export.
TEST(TailsRecording, ReportAndFoldedExportOfARecordingWithCatchFrames) {
  const Case c = make_case();
  TempDir dir("tails_e2e");
  const std::string path = dir / "catch.shot";
  write_samples(path, c.m, c.samples);
  {
    auto r = RecordingReader::open(path);
    ASSERT_EQ(r->meta().catch_rules, c.m.catch_rules);
    Sample s;
    int with = 0;
    while (r->next(s)) with += s.caught.has_value();
    EXPECT_EQ(with, 2);
  }
  ReportRequest req;
  req.file = path;
  req.format = "json";
  const CommandOutput rep = report_file_command(req);
  ASSERT_EQ(rep.status, 0) << (rep.errors.empty() ? "" : rep.errors[0]);
  const nlohmann::json j = nlohmann::json::parse(rep.out);
  EXPECT_EQ(j["tails"], report(c)["tails"]) << "the same tails as from the samples in memory";
  req.format = "text";
  const CommandOutput text = report_file_command(req);
  EXPECT_NE(text.out.find("5 caught, 3 dropped (rate), 0 (buffer); 8 = the histogram's count"), std::string::npos)
      << text.out;
  // export --format folded to a file, as the other formats: the same lines as in memory.
  ExportRequest ex;
  ex.file = path;
  ex.output = dir / "tails.folded";
  ex.opts.format = ExportFormat::folded;
  std::ostringstream none;
  const CommandOutput e = export_command(ex, none);
  ASSERT_EQ(e.status, 0) << (e.errors.empty() ? "" : e.errors[0]);
  EXPECT_EQ(none.str(), "");
  EXPECT_EQ(slurp(dir / "tails.folded"),
            "cpupri_find;[unknown];dequeue_rt_stack;cpupri_set 1\n"
            "cpupri_set;[no stack] 1\n"
            "cpupri_set;[unknown];dequeue_rt_stack;cpupri_set 1\n"
            "cpupri_set;ttwu_do_activate;enqueue_task_rt;cpupri_set 3\n");
  // A window of the second interval only.
  ex.output = "-";
  ex.opts.from_s = 1;
  ex.from = "1";
  std::ostringstream out;
  ASSERT_EQ(export_command(ex, out).status, 0);
  EXPECT_EQ(out.str(),
            "cpupri_find;[unknown];dequeue_rt_stack;cpupri_set 1\n"
            "cpupri_set;[no stack] 1\n"
            "cpupri_set;ttwu_do_activate;enqueue_task_rt;cpupri_set 1\n");
  // A recording without caught events: one line, status 1, no file.
  const std::string plain = dir / "plain.shot";
  Meta m = synthetic_meta(2);
  Sample a = make_sample(m), b = make_sample(m);
  b.mono_ns = 1'000'000'000;
  write_samples(plain, m, {a, b});
  ExportRequest ep;
  ep.file = plain;
  ep.output = dir / "none.folded";
  ep.opts.format = ExportFormat::folded;
  const CommandOutput en = export_command(ep, out);
  EXPECT_EQ(en.status, 1);
  ASSERT_EQ(en.errors.size(), 1u);
  EXPECT_EQ(en.errors[0], "no --catch rules in this recording: record with --catch to catch tail events");
  EXPECT_FALSE(std::filesystem::exists(dir / "none.folded"));
}

// export --format perfetto of a recording with CATCH frames: each caught event a complete
// ("X") slice on its CPU's "tails (--catch)" track, from ts - dur to ts, with its rule, task,
// detail, interrupt time and stack (innermost first) as args.
TEST(TailsRecording, PerfettoSlicesOnTheirCpusTracks) {
  Case c = make_case();
  const uint32_t cpus1[] = {1, 1, 2}, cpus2[] = {1, 3, 0};
  for (size_t k = 0; k < 3; ++k) c.samples[1].caught->events[k].cpu = cpus1[k];
  for (size_t k = 0; k < 3; ++k) c.samples[2].caught->events[k].cpu = cpus2[k];
  TempDir dir("tails_perfetto");
  const std::string path = dir / "catch.shot";
  write_samples(path, c.m, c.samples);
  ExportRequest ex;
  ex.file = path;
  ex.output = "-";
  ex.opts.format = ExportFormat::perfetto;
  std::ostringstream out;
  const CommandOutput e = export_command(ex, out);
  ASSERT_EQ(e.status, 0) << (e.errors.empty() ? "" : e.errors[0]);
  const nlohmann::json trace = nlohmann::json::parse(out.str());  // Chrome trace-event JSON
  ASSERT_TRUE(trace["traceEvents"].is_array());
  std::vector<nlohmann::json> slices, tracks;
  for (const auto& ev : trace["traceEvents"]) {
    if (ev["ph"] == "X") slices.push_back(ev);
    if (ev["ph"] == "M" && ev["name"] == "thread_name") tracks.push_back(ev);
  }
  const std::string sA = "cpupri_set+0x10 <- enqueue_task_rt+0x80 <- ttwu_do_activate+0x40";
  const std::string sB = "cpupri_set+0x10 <- dequeue_rt_stack+0x33 <- [unknown]";
  auto slice = [](int cpu, double ts, double dur, const char* name, nlohmann::json args) {
    return nlohmann::json{{"ph", "X"}, {"pid", 1000 + cpu}, {"tid", 1000 + cpu}, {"ts", ts}, {"dur", dur}, {"name", name},
                          {"args", std::move(args)}};
  };
  auto args = [](nlohmann::json rule, uint64_t dur, const char* comm, uint32_t pid, uint32_t tid, nlohmann::json detail,
                 nlohmann::json irq, nlohmann::json softirq, nlohmann::json nmi, nlohmann::json stack,
                 nlohmann::json steal = nullptr) {
    return nlohmann::json{{"rule", rule},       {"dur_ns", dur},       {"comm", comm}, {"pid", pid},     {"tid", tid},
                          {"detail", detail},   {"irq_ns", irq},       {"softirq_ns", softirq}, {"nmi_ns", nmi},
                          {"stack", stack},     {"steal_ns", steal}};
  };
  const nlohmann::json null = nullptr;
  nlohmann::json a3 = args("cpupri_set>20us", 100'000, "kworker/1:0", 7, 7, "RT->NORMAL", 10'000, 20'000, 0, sB, 0);
  a3["irq_lower_bound"] = true;
  const std::vector<nlohmann::json> want = {
      slice(1, 10'099'970.0, 30.0, "cpupri_set tail",
            args("cpupri_set>20us", 30'000, "rtapp", 100, 100, "RT->NORMAL", 0, 6'000, 0, sA, 4'000)),
      slice(1, 10'199'978.0, 22.0, "cpupri_set tail",
            args("cpupri_set>20us", 22'000, "rtapp", 100, 101, "NORMAL->RT", 0, 0, 0, sA)),
      slice(2, 10'299'900.0, 100.0, "cpupri_set tail", a3),
      slice(1, 11'099'960.0, 40.0, "cpupri_set tail", args("cpupri_set>20us", 40'000, "rtapp", 100, 100, null, 0, 0, 0, sA)),
      slice(3, 11'199'975.0, 25.0, "cpupri_set tail", args("cpupri_set>20us", 25'000, "rtapp", 100, 100, null, 0, 0, 0, null)),
      // a probe without a rule: its events are slices too; nothing measured is null, not 0
      slice(0, 11'299'910.0, 90.0, "cpupri_find tail", args(null, 90'000, "x", 1, 1, null, null, null, null, sB)),
  };
  ASSERT_EQ(slices.size(), want.size()) << out.str();
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(slices[i], want[i]) << i;
  // One named track per CPU with slices, named once.
  ASSERT_EQ(tracks.size(), 4u);
  EXPECT_EQ(tracks[0], (nlohmann::json{{"ph", "M"}, {"pid", 1001}, {"tid", 1001}, {"name", "thread_name"},
                                       {"args", {{"name", "tails (--catch)"}}}}));
  EXPECT_EQ(trace["otherData"]["caught_slices"].get<uint64_t>(), 6u);
  // --cpus: only the exported CPUs' slices.
  ex.cpus = {1};
  std::ostringstream one;
  ASSERT_EQ(export_command(ex, one).status, 0);
  size_t n = 0;
  const nlohmann::json trace1 = nlohmann::json::parse(one.str());  // kept alive through the loop
  for (const auto& ev : trace1["traceEvents"])
    if (ev["ph"] == "X") {
      EXPECT_EQ(ev["pid"], 1001);
      ++n;
    }
  EXPECT_EQ(n, 3u);
}

namespace {

/// cpupri_set>p90 over three samples (CPU 1): the baseline's running histogram 100 x 1 us
/// and 20 x 100 us arms p90 at 100 us's bucket, and so does the next sample's (130 events,
/// the 117th in that bucket). Interval 1 adds 10 x 200 us (before it nothing was armed:
/// 0 to 10 of them count), interval 2 adds 50 x 1 us and 5 x 200 us (5 count). caught1
/// and counted2: the slot counters' moves in each interval.
Case percentile_case(uint64_t caught1, uint64_t counted2, uint32_t first_seq = 0) {
  Case c;
  c.m = synthetic_meta(4);
  apply_catch_rules(c.m, parse_catch_rules("cpupri_set>p90", 0));
  const int p = c.m.probe_index("cpupri_set");
  Sample a = make_sample(c.m);
  a.seq = first_seq;
  a.mono_ns = 10'000'000'000;
  for (int i = 0; i < 100; ++i) add_hist(c.m, a, p, 1, "lat", 1'000);
  for (int i = 0; i < 20; ++i) add_hist(c.m, a, p, 1, "lat", 100'000);
  Sample b = a, d = a;
  b.seq = first_seq + 1;
  d.seq = first_seq + 2;
  b.mono_ns += 1'000'000'000;
  d.mono_ns += 2'000'000'000;
  for (int i = 0; i < 10; ++i) add_hist(c.m, b, p, 1, "lat", 200'000);
  b.probes[p].words.mut(word(c.m, p, 1, "caught")) = caught1;
  d.probes[p].words = b.probes[p].words;
  for (int i = 0; i < 50; ++i) add_hist(c.m, d, p, 1, "lat", 1'000);
  for (int i = 0; i < 5; ++i) add_hist(c.m, d, p, 1, "lat", 200'000);
  d.probes[p].words.mut(word(c.m, p, 1, "caught")) = caught1 + std::min<uint64_t>(counted2, 5);
  d.probes[p].words.mut(word(c.m, p, 2, "catch_rate_drops")) = counted2 - std::min<uint64_t>(counted2, 5);
  b.caught = CatchBatch{};
  d.caught = CatchBatch{};
  c.samples = {a, b, d};
  return c;
}

}  // namespace

// A percentile rule is checked per interval, between the counts above the threshold armed
// before the interval's re-arm and the one after (live/session.cpp re-arms after each sample).
TEST(Tails, APercentileRuleIsCheckedBetweenItsIntervalsThresholds) {
  const nlohmann::json r = report(percentile_case(10, 5));
  const auto& t = r["tails"][0];
  EXPECT_EQ(t["rule"], "cpupri_set>p90");
  EXPECT_EQ(t["histogram_above_bounds"], nlohmann::json::array({5, 15}));
  EXPECT_EQ(t["intervals_checked"].get<uint64_t>(), 2u);
  EXPECT_EQ(t["checked_counted"].get<uint64_t>(), 15u);
  EXPECT_TRUE(t["accounted"].get<bool>());
  // 15 more drops than the histogram has above either threshold (beyond one per CPU).
  const nlohmann::json bad = report(percentile_case(10, 20));
  EXPECT_EQ(bad["tails"][0]["checked_counted"].get<uint64_t>(), 30u);
  EXPECT_FALSE(bad["tails"][0]["accounted"].get<bool>());
  // Not from the baseline: the threshold before the first interval is not known, so only
  // the second interval is checked.
  const nlohmann::json later = report(percentile_case(10, 5, /*first_seq=*/7));
  EXPECT_EQ(later["tails"][0]["intervals_checked"].get<uint64_t>(), 1u);
  EXPECT_EQ(later["tails"][0]["intervals"].get<uint64_t>(), 2u);
  EXPECT_EQ(later["tails"][0]["histogram_above_bounds"], nlohmann::json::array({5, 5}));
  EXPECT_TRUE(later["tails"][0]["accounted"].get<bool>());
}

TEST(Tails, APercentileRulesCheckInText) {
  const std::string text = render_report_text(report(percentile_case(10, 5)));
  EXPECT_NE(text.find("; 15 over its 2 intervals: within the histogram's 5..15 above each interval's thresholds"),
            std::string::npos)
      << text;
  const std::string bad = render_report_text(report(percentile_case(10, 20)));
  EXPECT_NE(bad.find("; 30 over its 2 intervals: outside the histogram's 5..15"), std::string::npos) << bad;
}

// A blind probe's rule (bcast_wait under virt_spin_lock) sees none of its events: its
// counters are null, not zeros that would read as measured.
TEST(Tails, ABlindProbesRuleCountsNothingAndSaysWhy) {
  Meta m = synthetic_meta(2);
  m.host.spinlock = SpinlockMode::virt_spin_lock;
  apply_catch_rules(m, {rule("bcast_wait", 5'000)});
  Sample a = make_sample(m), b = make_sample(m);
  a.seq = 0;
  b.seq = 1;
  b.mono_ns = 1'000'000'000;
  b.caught = CatchBatch{};
  ReportBuilder rb(m, ReportOptions{});
  rb.add(a);
  rb.add(b);
  const nlohmann::json r = rb.build(m, SourceInfo{});
  const auto& t = r["tails"][0];
  EXPECT_TRUE(t["caught"].is_null());
  EXPECT_TRUE(t["rate_drops"].is_null());
  EXPECT_TRUE(t["accounted"].is_null());
  EXPECT_FALSE(t["blind"].get<std::string>().empty());
  EXPECT_EQ(t["duration_is"], "wait time");
  const std::string text = render_report_text(r);
  EXPECT_NE(text.find(" ns (asked 5000 ns): not counted: the probe is blind here (hypervisor"), std::string::npos)
      << text;
}

TEST(Tails, SharesThatRoundToNoneOrAllSayLessOrMore) {
  // "100 % had a hard IRQ inside (0 % of their time)" read as none: a share above 0 that
  // rounds to 0 is "<1 %", one below 1 that rounds to 100 is ">99 %".
  EXPECT_EQ(format_share_pct(0), "0 %");
  EXPECT_EQ(format_share_pct(0.001), "<1 %");
  EXPECT_EQ(format_share_pct(0.005), "0 %") << "rounds half to even: fmt's {:.0f} of 0.5";
  EXPECT_EQ(format_share_pct(0.37), "37 %");
  EXPECT_EQ(format_share_pct(0.999), ">99 %");
  EXPECT_EQ(format_share_pct(1), "100 %");
}
