// --catch rules (probe/catch_rules.h): parsing, thresholds rounded to histogram buckets,
// percentile thresholds, and the stacks of caught events (probe/catch_reader.h).
#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>

#include "probe/catch_reader.h"
#include "probe/catch_rules.h"
#include "schedhot/abi.h"

namespace schedhot {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse_catch_rules(text, 100);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(CatchRules, ParsesDurationsAndPercentiles) {
  const auto r = parse_catch_rules("cpupri_set>20us,idle>p99.9,bcast_wait>5us", 50);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].probe, "cpupri_set");
  EXPECT_EQ(r[0].text, "cpupri_set>20us");
  EXPECT_EQ(r[0].asked_ns, 20'000u);
  // 20000 ns lies in bucket [19456, 20480) (msb 14: 1024-ns steps): rounded up to 20480.
  EXPECT_EQ(r[0].threshold_ns, 20'480u);
  EXPECT_EQ(r[0].per_sec, 50u);
  EXPECT_DOUBLE_EQ(r[1].percentile, 99.9);
  EXPECT_EQ(r[1].threshold_ns, 0u) << "armed once the probe has counted";
  EXPECT_EQ(r[2].threshold_ns, 5'120u);
  const auto sp = parse_catch_rules("idle>800ns, bcast_wait>p99", 1);
  EXPECT_EQ(sp[0].asked_ns, 800u) << "whole ns";
  EXPECT_EQ(sp[1].probe, "bcast_wait") << "a space after the comma";
}

TEST(CatchRules, ThresholdsAreBucketLowerBoundsAtOrAboveTheAsked) {
  for (uint64_t ns : {1ull, 15ull, 16ull, 17ull, 999ull, 1000ull, 20'000ull, 1'048'576ull, 123'456'789ull}) {
    const uint64_t t = round_threshold(ns);
    EXPECT_GE(t, ns);
    EXPECT_EQ(sh_hist_lower(sh_hist_index(t)), t) << ns;
    EXPECT_LT(t - ns, sh_hist_width(sh_hist_index(ns))) << ns << ": at most one bucket up";
  }
  EXPECT_EQ(round_threshold(0), 0u);
  const uint64_t top = sh_hist_lower(SH_HIST_BUCKETS - 1);
  EXPECT_EQ(round_threshold(top + 12345), top) << "the last bucket holds everything above it";
}

TEST(CatchRules, RefusesWhatCannotCatch) {
  EXPECT_NE(error_of("nosuch>1us").find("no probe named 'nosuch' (probes with durations: nohz_exit"), std::string::npos);
  EXPECT_NE(error_of("ilb_kick>1us").find("does not time them"), std::string::npos);
  EXPECT_NE(error_of("idle>1us,idle>2us").find("idle has two rules"), std::string::npos);
  EXPECT_NE(error_of("idle>p100").find("percentile"), std::string::npos);
  EXPECT_NE(error_of("idle>p0").find("percentile"), std::string::npos);
  EXPECT_NE(error_of("idle>px").find("percentile"), std::string::npos);
  for (const char* bad : {"idle>p 99", "idle>p0x10", "idle>p1e-320", "idle>p99.", "idle>p.5", "idle>p0.0001"})
    EXPECT_NE(error_of(bad).find("percentile"), std::string::npos) << bad;
  EXPECT_NE(error_of("idle>0").find("above 0"), std::string::npos);
  EXPECT_NE(error_of("idle>3parsecs").find("--catch 'idle>3parsecs'"), std::string::npos);
  EXPECT_NE(error_of("idle").find("PROBE>DURATION"), std::string::npos);
  EXPECT_NE(error_of(">1us").find("PROBE>DURATION"), std::string::npos);
  EXPECT_NE(error_of(",").find("no rule"), std::string::npos);
  ProbeStatus st;
  st.attached = true;
  st.proxy = true;
  st.backend = Backend::tracepoint;
  const CatchRule r = parse_catch_rules("nohz_exit>1us", 1)[0];
  EXPECT_NE(catch_unusable(r, st).find("proxy"), std::string::npos);
  st.proxy = false;
  EXPECT_EQ(catch_unusable(r, st), "");
  st.attached = false;
  st.reason = "fentry refused";
  EXPECT_EQ(catch_unusable(r, st), "--catch nohz_exit>1us: nohz_exit is not attached: fentry refused");
}

TEST(CatchRules, PercentileThresholdIsTheNearestRanksBucket) {
  std::vector<uint64_t> b(SH_HIST_BUCKETS, 0);
  EXPECT_EQ(percentile_threshold(b, 99), 0u) << "nothing counted: off";
  b[sh_hist_index(1000)] = 980;
  b[sh_hist_index(50'000)] = 10;
  b[sh_hist_index(900'000)] = 10;
  EXPECT_EQ(percentile_threshold(b, 50), sh_hist_lower(sh_hist_index(1000)));
  EXPECT_EQ(percentile_threshold(b, 99), sh_hist_lower(sh_hist_index(50'000)));  // rank 990 of 1000
  EXPECT_EQ(percentile_threshold(b, 99.5), 0u) << "5 events above p99.5 of 1000: too few, off";
  b[sh_hist_index(1000)] = 1980;
  EXPECT_EQ(percentile_threshold(b, 99.5), sh_hist_lower(sh_hist_index(50'000)));  // rank 1990 of 2000: 1980 + 10
  // A first interval of a few events (serve's first sample): off, not armed at their largest.
  std::vector<uint64_t> few(SH_HIST_BUCKETS, 0);
  few[sh_hist_index(20'000)] = 80;
  few[sh_hist_index(2'000'000)] = 6;
  EXPECT_EQ(percentile_threshold(few, 99), 0u);
  EXPECT_EQ(percentile_threshold(few, 90), 0u) << "8.6 above p90: below 10";
}

// Raw records to a batch: time order across CPUs, each stack once, symbols not addresses.
TEST(CatchReader, BatchesKeepEachStackOnceInTimeOrder) {
  const SymbolTable syms = SymbolTable::parse(
      "ffffffff81000000 T _stext\nffffffff81100000 T cpupri_set\nffffffff81100200 T enqueue_task_rt\n"
      "ffffffff81100400 t do_idle\nffffffff81200000 T _etext\n");
  StackSymbolizer sym(&syms);
  std::vector<RawCaught> recs;
  auto add = [&](uint64_t ts, uint32_t cpu, std::vector<uint64_t> ips) {
    sh_catch_rec r{};
    r.ts = ts;
    r.dur_ns = 25'000;
    r.cpu = cpu;
    r.probe = SH_P_CPUPRI_SET;
    r.flags = SH_CATCH_F_DETAIL;
    r.detail = (1u << 16) | 51u;
    std::memcpy(r.comm, "rt-worker\x1b", 10);
    r.stack_bytes = int32_t(ips.size() * 8);
    for (size_t i = 0; i < ips.size(); ++i) r.stack[i] = ips[i];
    RawCaught c;
    ASSERT_TRUE(parse_catch_record(&r, sizeof r, c));
    recs.push_back(std::move(c));
  };
  const std::vector<uint64_t> a = {0xffffffff81100010, 0xffffffff81100230}, b2 = {0xffffffff81100410, 0xffffffffc0001000};
  add(300, 1, a);
  add(100, 0, a);
  add(200, 0, b2);
  add(400, 1, {});
  CatchBatch out = make_catch_batch(recs, sym);
  ASSERT_EQ(out.events.size(), 4u);
  EXPECT_EQ(out.events[0].ts_ns, 100u);
  EXPECT_EQ(out.events[1].ts_ns, 200u);
  EXPECT_EQ(out.events[2].ts_ns, 300u);
  ASSERT_EQ(out.stacks.size(), 2u);
  EXPECT_EQ(out.events[0].stack, out.events[2].stack) << "one stack, named twice";
  EXPECT_EQ(out.events[3].stack, 0u) << "no stack";
  const auto& s0 = out.stacks[out.events[0].stack - 1];
  ASSERT_EQ(s0.size(), 2u);
  EXPECT_EQ(s0[0], (StackFrame{"cpupri_set", 0x10}));
  EXPECT_EQ(s0[1], (StackFrame{"enqueue_task_rt", 0x30}));
  const auto& s1 = out.stacks[out.events[1].stack - 1];
  EXPECT_EQ(s1[0], (StackFrame{"do_idle", 0x10}));
  EXPECT_EQ(s1[1], (StackFrame{"", 0})) << "a module address: unknown, and no address kept";
  EXPECT_EQ(out.events[0].comm, "rt-worker?") << "no control bytes from a task's own name";
  EXPECT_EQ(out.events[0].detail, (1u << 16) | 51u);
  RawCaught bad;
  EXPECT_FALSE(parse_catch_record("short", 5, bad));
}

}  // namespace
}  // namespace schedhot

namespace schedhot {
namespace {

// The BPF program, bpf_trace_run2 and __traceiter_cpu_idle are how the event was seen, not
// what ran: dropped, up to the first traced-code frame; unknown frames further out stay.
TEST(CatchReader, TracingMachineryFramesAreTrimmedFromTheInside) {
  std::vector<StackFrame> f = {{"", 0},          {"bpf_trace_run2", 0x103}, {"__traceiter_cpu_idle", 0x2a},
                               {"default_idle_call", 0x82}, {"", 0},          {"do_idle", 0x214}};
  trim_tracing_frames(f);
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].sym, "default_idle_call");
  EXPECT_EQ(f[1].sym, "") << "an unknown frame of the traced code's callers stays";
  std::vector<StackFrame> fexit = {{"", 0}, {"bpf_trampoline_6442", 0x5c}, {"enqueue_task_rt", 0x1f0}};
  trim_tracing_frames(fexit);
  ASSERT_EQ(fexit.size(), 1u);
  EXPECT_EQ(fexit[0].sym, "enqueue_task_rt");
  std::vector<StackFrame> only = {{"", 0}, {"", 0}};
  trim_tracing_frames(only);
  EXPECT_EQ(only.size(), 2u) << "nothing known: kept as it is";
}

}  // namespace
}  // namespace schedhot

namespace schedhot {
namespace {
TEST(CatchRules, AThresholdBeyond64BitsSaysSo) {
  EXPECT_NE(error_of("cpupri_set>18446744073709551616ns").find("does not fit in 64 bits"), std::string::npos);
}
}  // namespace
}  // namespace schedhot
