// render_metrics (`schedhot serve`, `--textfile`) on a sample with known values: counter
// totals, exact cumulative histogram buckets (le: value <= le, exactly), idle residency's
// name, counter arrays named as report names them, the line transfer counter, unattached
// probes as info only, both exposition formats, --per-cpu (all or a list of families, and
// its start-up line) and label escaping.
#include <gtest/gtest.h>

#include <cstdlib>
#include <array>
#include <cstdio>
#include <map>
#include <set>
#include <regex>
#include <sstream>

#include <fmt/format.h>

#include "probe/module.h"
#include "test_util.h"
#include "output/metrics.h"

using namespace schedhot;
using namespace schedhot::testing;

namespace {

/// 4 CPUs, nohz_kick not attached (its reason holds a quote, a backslash and a newline).
/// Since attach: cpupri_set calls on CPU 1: 100, latencies 10, 10, 10, 12 ns;
/// idle exits on CPU 0: 50 and CPU 2: 7; idle latencies 70, 100, 1000, 1000000 ns on CPU 2.
struct Known {
  MetricsState st;
  Known() {
    st.meta = synthetic_meta(4, {"nohz_kick"});
    Meta& m = st.meta;
    m.probes[m.probe_index("nohz_kick")].status.reason = "kprobe \"nohz_balancer_kick\" refused\\EPERM\nsee dmesg";
    st.last = make_sample(m);
    const int cs = m.probe_index("cpupri_set"), id = m.probe_index("idle");
    st.last.probes[cs].words.mut(word(m, cs, 1, "calls")) = 100;
    for (uint64_t v : {10, 10, 10, 12}) add_hist(m, st.last, cs, 1, "lat", v);
    st.last.probes[id].words.mut(word(m, id, 0, "exits")) = 50;
    st.last.probes[id].words.mut(word(m, id, 2, "exits")) = 7;
    for (uint64_t v : {70, 100, 1000, 1000000}) add_hist(m, st.last, id, 2, "lat", v);
    st.last.wall_ns = 1796539515197123456ull;
    st.samples = 12;
    st.lost_samples = 1;
    st.lines = {{"nohz", "nohz \"line\" 0", 251.5}};
  }
};

/// The value of the series with exactly this name and label text ("" for none); NaN when absent.
double value(const std::string& text, const std::string& name, const std::string& labels = "") {
  const std::string key = labels.empty() ? name + " " : name + "{" + labels + "} ";
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    if (l.rfind(key, 0) == 0) return std::strtod(l.c_str() + key.size(), nullptr);
  return std::nan("");
}

bool has_line(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

}  // namespace

TEST(Metrics, CountersAreTotalsSinceAttach) {
  Known k;
  const std::string t = render_metrics(k.st, MetricsOptions{});
  EXPECT_EQ(value(t, "schedhot_cpupri_set_calls_total"), 100);
  EXPECT_EQ(value(t, "schedhot_idle_exits_total"), 57);
  EXPECT_TRUE(has_line(t, "# TYPE schedhot_cpupri_set_calls_total counter")) << t;
  EXPECT_EQ(value(t, "schedhot_samples_total"), 12);
  EXPECT_EQ(value(t, "schedhot_lost_samples_total"), 1);
  EXPECT_TRUE(has_line(t, "schedhot_last_sample_timestamp_seconds 1796539515.197123")) << "the sample's wall time, in us";
  EXPECT_EQ(value(t, "schedhot_bpf_stats_enabled"), 0);
  EXPECT_TRUE(std::isnan(value(t, "schedhot_bpf_run_seconds_total"))) << "absent when bpf_stats is off";
  EXPECT_EQ(t.find("# EOF"), std::string::npos) << "0.0.4 text has no EOF marker";
}

TEST(Metrics, HistogramBucketsAreExactCumulativeCounts) {
  Known k;
  const std::string t = render_metrics(k.st, MetricsOptions{});
  const std::string h = "schedhot_idle_residency_seconds";
  EXPECT_TRUE(has_line(t, "# TYPE " + h + " histogram")) << t;
  EXPECT_EQ(value(t, h + "_bucket", "le=\"6.3e-08\""), 0);        // 63 ns: none (70 is above)
  EXPECT_EQ(value(t, h + "_bucket", "le=\"1.27e-07\""), 2);       // 70, 100
  EXPECT_EQ(value(t, h + "_bucket", "le=\"5.11e-07\""), 2);
  EXPECT_EQ(value(t, h + "_bucket", "le=\"1.023e-06\""), 3);      // + 1000
  EXPECT_EQ(value(t, h + "_bucket", "le=\"0.000524287\""), 3);
  EXPECT_EQ(value(t, h + "_bucket", "le=\"0.001048575\""), 4);    // + 1 ms
  EXPECT_EQ(value(t, h + "_bucket", "le=\"+Inf\""), 4);
  EXPECT_EQ(value(t, h + "_count"), 4);
  EXPECT_NEAR(value(t, h + "_sum"), 1001170e-9, 1e-15);
  EXPECT_EQ(value(t, "schedhot_cpupri_set_lat_seconds_bucket", "le=\"6.3e-08\""), 4);
  EXPECT_NEAR(value(t, "schedhot_cpupri_set_lat_seconds_sum"), 42e-9, 1e-18);
  // 25 bounds (2^6 .. 2^30 ns) plus +Inf, never decreasing.
  std::istringstream in(t);
  int n = 0;
  double prev = -1;
  for (std::string l; std::getline(in, l);)
    if (l.rfind(h + "_bucket{", 0) == 0) {
      const double v = std::strtod(l.c_str() + l.rfind(' ') + 1, nullptr);
      EXPECT_GE(v, prev) << l;
      prev = v;
      ++n;
    }
  EXPECT_EQ(n, 26);
}

TEST(Metrics, UnattachedProbeIsInfoOnlyAndLabelsAreEscaped) {
  Known k;
  const std::string t = render_metrics(k.st, MetricsOptions{});
  EXPECT_EQ(t.find("schedhot_nohz_kick_"), std::string::npos) << "not measured is absent, never 0";
  EXPECT_NE(t.find("schedhot_probe_info{probe=\"nohz_kick\",attached=\"false\",backend=\"none\""), std::string::npos) << t;
  EXPECT_NE(t.find("reason=\"kprobe \\\"nohz_balancer_kick\\\" refused\\\\EPERM\\nsee dmesg\""), std::string::npos) << t;
  EXPECT_EQ(value(t, "schedhot_line_transfers_total", "family=\"nohz\",line=\"nohz \\\"line\\\" 0\",estimate=\"independent_arrivals\""), 251.5) << t;
  // Every line is a comment or `name[{labels}] value`: nothing raw from a label leaks out.
  const std::regex series(R"(^[a-zA-Z_:][a-zA-Z0-9_:]*(\{.*\})? [-+0-9.eInfNa]+$)");
  std::istringstream in(t);
  for (std::string l; std::getline(in, l);)
    if (l.empty() || l[0] != '#') EXPECT_TRUE(std::regex_match(l, series)) << l;
}

TEST(Metrics, OpenMetricsNamesCounterFamiliesWithoutTotalAndEndsWithEof) {
  Known k;
  const std::string t = render_metrics(k.st, MetricsOptions{true, false});
  EXPECT_TRUE(has_line(t, "# TYPE schedhot_cpupri_set_calls counter")) << t;
  EXPECT_TRUE(has_line(t, "# TYPE schedhot_probe info")) << t;
  EXPECT_EQ(value(t, "schedhot_cpupri_set_calls_total"), 100);
  ASSERT_GE(t.size(), 6u);
  EXPECT_EQ(t.substr(t.size() - 6), "# EOF\n");
  EXPECT_STREQ(metrics_content_type(true), "application/openmetrics-text; version=1.0.0; charset=utf-8");
  EXPECT_TRUE(wants_openmetrics("application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"));
  EXPECT_FALSE(wants_openmetrics("text/plain"));
}

// Accept negotiation: q=0 refuses a range, a version this text is not is not chosen, the
// higher q wins and a tie is OpenMetrics; what Prometheus sends picks OpenMetrics.
TEST(Metrics, AcceptNegotiationHonoursQAndVersion) {
  EXPECT_TRUE(wants_openmetrics("application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
                                "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"));  // Prometheus 2.x
  EXPECT_TRUE(wants_openmetrics("application/openmetrics-text"));
  EXPECT_TRUE(wants_openmetrics("Application/OpenMetrics-Text; Version=1.0.0"));
  EXPECT_FALSE(wants_openmetrics("application/openmetrics-text;q=0, text/plain"));
  EXPECT_FALSE(wants_openmetrics("application/openmetrics-text; q=0.0"));
  EXPECT_FALSE(wants_openmetrics("application/openmetrics-text; version=9.9.9"));
  EXPECT_FALSE(wants_openmetrics("application/openmetrics-text;q=0.4, text/plain;q=0.5"));
  EXPECT_TRUE(wants_openmetrics("text/plain;q=0.5, application/openmetrics-text;q=0.5"));
  EXPECT_FALSE(wants_openmetrics("application/openmetrics-text;q=abc"));
  EXPECT_FALSE(wants_openmetrics(""));
  EXPECT_FALSE(wants_openmetrics("*/*"));
}

TEST(Metrics, PerCpuLabelsEveryOnlineCpu) {
  Known k;
  const std::string t = render_metrics(k.st, MetricsOptions{false, parse_per_cpu("all")});
  EXPECT_EQ(value(t, "schedhot_idle_exits_total", "cpu=\"0\""), 50);
  EXPECT_EQ(value(t, "schedhot_idle_exits_total", "cpu=\"1\""), 0);
  EXPECT_EQ(value(t, "schedhot_idle_exits_total", "cpu=\"2\""), 7);
  EXPECT_EQ(value(t, "schedhot_idle_exits_total", "cpu=\"3\""), 0);
  EXPECT_TRUE(std::isnan(value(t, "schedhot_idle_exits_total"))) << "no unlabelled total with --per-cpu";
  EXPECT_EQ(value(t, "schedhot_idle_residency_seconds_bucket", "cpu=\"2\",le=\"1.27e-07\""), 2);
  EXPECT_EQ(value(t, "schedhot_idle_residency_seconds_count", "cpu=\"0\""), 0);
  // Only the online CPUs: CPU 3 offline leaves its series out.
  k.st.last.online = {0, 1, 2};
  const std::string t3 = render_metrics(k.st, MetricsOptions{false, parse_per_cpu("all")});
  EXPECT_TRUE(std::isnan(value(t3, "schedhot_idle_exits_total", "cpu=\"3\"")));
  EXPECT_EQ(value(t3, "schedhot_idle_exits_total", "cpu=\"2\""), 7);
}

// The bare --per-cpu ("counters"): every per-probe counter per CPU; the histograms and the
// counter arrays stay summed (their series per CPU are what made a scrape of 8192 CPUs
// 3.6 M series); =all labels them too.
TEST(Metrics, BarePerCpuLabelsTheCountersOnly) {
  Known k;
  const PerCpu pc = parse_per_cpu("counters");
  const std::string t = render_metrics(k.st, MetricsOptions{false, pc});
  EXPECT_EQ(value(t, "schedhot_idle_exits_total", "cpu=\"0\""), 50);
  EXPECT_EQ(value(t, "schedhot_idle_exits_total", "cpu=\"2\""), 7);
  EXPECT_TRUE(std::isnan(value(t, "schedhot_idle_exits_total"))) << "no unlabelled total of a labelled counter";
  EXPECT_EQ(value(t, "schedhot_cpupri_set_calls_total", "cpu=\"1\""), 100);
  EXPECT_EQ(value(t, "schedhot_idle_residency_seconds_count"), 4) << "a histogram: summed";
  EXPECT_TRUE(std::isnan(value(t, "schedhot_idle_residency_seconds_count", "cpu=\"0\"")));
  size_t arrays = 0, labelled_arrays = 0;  // counter arrays (element=): summed
  std::istringstream in(t);
  for (std::string l; std::getline(in, l);)
    if (l.find("element=\"") != std::string::npos) {
      ++arrays;
      labelled_arrays += l.find("cpu=\"") != std::string::npos;
    }
  EXPECT_GT(arrays, 0u) << t;
  EXPECT_EQ(labelled_arrays, 0u);
  const std::string all = render_metrics(k.st, MetricsOptions{false, parse_per_cpu("all")});
  EXPECT_EQ(value(all, "schedhot_idle_residency_seconds_count", "cpu=\"0\""), 0);
  EXPECT_TRUE(pc.covers("idle", "schedhot_idle_exits", FieldKind::counter));
  EXPECT_FALSE(pc.covers("idle", "schedhot_idle_residency_seconds", FieldKind::hist));
  EXPECT_FALSE(pc.covers("cpupri_set", "schedhot_cpupri_set_vec_set", FieldKind::counter_array));
  EXPECT_TRUE(parse_per_cpu("all").covers("cpupri_set", "schedhot_cpupri_set_vec_set", FieldKind::counter_array));
  const std::string n = per_cpu_notice(k.st, pc);
  EXPECT_NE(n.find("; the counters: --per-cpu=all labels the histograms and counter arrays too"), std::string::npos) << n;
}

TEST(Metrics, BpfRunTimeWhenStatsAreOn) {
  Known k;
  k.st.bpf_run_ns = 1'500'000'000;
  k.st.bpf_runs = 3000;
  const std::string t = render_metrics(k.st, MetricsOptions{});
  EXPECT_EQ(value(t, "schedhot_bpf_stats_enabled"), 1);
  EXPECT_EQ(value(t, "schedhot_bpf_run_seconds_total"), 1.5);
  EXPECT_EQ(value(t, "schedhot_bpf_runs_total"), 3000);
}

// A bucket counts exactly the values <= its le (Prometheus's meaning): a value at le is in
// it, le + 1 ns is not (issue 28: a 64 ns event was left out of le="6.4e-08").
TEST(Metrics, EveryLeCountsTheValuesAtOrBelowIt) {
  for (uint64_t le_ns : metric_bounds_ns())
    for (uint64_t v : {le_ns, le_ns + 1}) {
      Known k;
      const int cs = k.st.meta.probe_index("cpupri_set");
      k.st.last = make_sample(k.st.meta);
      add_hist(k.st.meta, k.st.last, cs, 0, "lat", v);
      const std::string t = render_metrics(k.st, MetricsOptions{});
      const std::string le = fmt::format("le=\"{}\"", double(le_ns) / 1e9);
      const double n = value(t, "schedhot_cpupri_set_lat_seconds_bucket", le);
      ASSERT_FALSE(std::isnan(n)) << "no bucket " << le << " in\n" << t;
      EXPECT_EQ(n, v <= le_ns ? 1 : 0) << v << " ns at " << le;
    }
  // 64 ns, the issue's example: in le = 127 ns, not in le = 63 ns.
  Known k;
  const int cs = k.st.meta.probe_index("cpupri_set");
  k.st.last = make_sample(k.st.meta);
  add_hist(k.st.meta, k.st.last, cs, 0, "lat", 64);
  const std::string t = render_metrics(k.st, MetricsOptions{});
  EXPECT_EQ(value(t, "schedhot_cpupri_set_lat_seconds_bucket", "le=\"6.3e-08\""), 0);
  EXPECT_EQ(value(t, "schedhot_cpupri_set_lat_seconds_bucket", "le=\"1.27e-07\""), 1);
}

// Idle's histogram is residency, in seconds: its name and HELP say so (not "lat", not "ns").
TEST(Metrics, IdleResidencyIsNamedAndHelpedInSeconds) {
  Known k;
  const std::string t = render_metrics(k.st, MetricsOptions{});
  EXPECT_EQ(t.find("schedhot_idle_lat_seconds"), std::string::npos) << t;
  EXPECT_NE(t.find("# HELP schedhot_idle_residency_seconds idle residency (seconds;"), std::string::npos) << t;
  EXPECT_EQ(t.find(", ns ("), std::string::npos) << "no HELP in ns: " << t;
  EXPECT_NE(t.find("# HELP schedhot_cpupri_set_lat_seconds entry-to-exit time (seconds;"), std::string::npos) << t;
}

// Counter arrays carry the element names report uses (ilb_kick flags, cpupri_set transitions).
TEST(Metrics, ArrayElementsAreNamedAsReportNamesThem) {
  Known k;
  Meta& m = k.st.meta;
  const int ik = m.probe_index("ilb_kick"), cs = m.probe_index("cpupri_set");
  k.st.last.probes[ik].words.mut(word(m, ik, 0, "flags", 3)) = 5;   // BALANCE|STATS
  k.st.last.probes[ik].words.mut(word(m, ik, 1, "flags", 0)) = 2;   // none
  const Field* tr = m.probes[cs].slot.find("trans");
  ASSERT_NE(tr, nullptr);
  k.st.last.probes[cs].words.mut(word(m, cs, 0, "trans", 1)) = 9;
  const std::string t = render_metrics(k.st, MetricsOptions{});
  EXPECT_EQ(value(t, "schedhot_ilb_kick_flags_total", "element=\"BALANCE|STATS\""), 5) << t;
  EXPECT_EQ(value(t, "schedhot_ilb_kick_flags_total", "element=\"none\""), 2) << t;
  EXPECT_TRUE(std::isnan(value(t, "schedhot_ilb_kick_flags_total", "element=\"3\""))) << t;
  const std::string trans1 = find_module("cpupri_set")->label("trans", 1).value();
  EXPECT_NE(trans1.find("->"), std::string::npos) << trans1;
  EXPECT_EQ(value(t, "schedhot_cpupri_set_trans_total", "element=\"" + trans1 + "\""), 9) << t;
}

// Modeled transfers are a counter: each interval's rate x its seconds, summed (rate() works).
TEST(Metrics, LineTransfersAreACounterOfEveryInterval) {
  LineTransferTotals tot;
  CoherenceSummary s;
  s.seconds = 0.5;
  LineSummary l;
  l.family = "nohz";
  l.name = "nohz line 0";
  l.traffic.read_xfers_per_s = 100;
  l.traffic.write_xfers_per_s = 20;
  s.lines = {l};
  tot.add(s);  // 60
  s.seconds = 2;
  s.lines[0].traffic.read_xfers_per_s = 5;
  s.lines[0].traffic.write_xfers_per_s = 0;
  const std::vector<LineTotal>& v = tot.add(s);  // + 10
  ASSERT_EQ(v.size(), 1u);
  EXPECT_DOUBLE_EQ(v[0].xfers, 70);
  Known k;
  k.st.lines = v;
  const std::string t = render_metrics(k.st, MetricsOptions{});
  EXPECT_TRUE(has_line(t, "# TYPE schedhot_line_transfers_total counter")) << t;
  EXPECT_EQ(value(t, "schedhot_line_transfers_total", "family=\"nohz\",line=\"nohz line 0\",estimate=\"independent_arrivals\""), 70) << t;
  EXPECT_EQ(t.find("transfers_per_second"), std::string::npos) << "the last interval's gauge is gone";
}

// --per-cpu=LIST: only the listed probes' and families' series per CPU; the rest summed.
TEST(Metrics, PerCpuListLabelsOnlyThoseFamilies) {
  Known k;
  const std::string t = render_metrics(k.st, MetricsOptions{false, parse_per_cpu("schedhot_idle_exits_total,cpupri_set")});
  EXPECT_EQ(value(t, "schedhot_idle_exits_total", "cpu=\"0\""), 50);
  EXPECT_TRUE(std::isnan(value(t, "schedhot_idle_exits_total"))) << t;
  EXPECT_EQ(value(t, "schedhot_idle_entries_total"), 0) << "not listed: summed, no cpu label";
  EXPECT_TRUE(std::isnan(value(t, "schedhot_idle_entries_total", "cpu=\"0\"")));
  EXPECT_EQ(value(t, "schedhot_idle_residency_seconds_count"), 4);
  EXPECT_EQ(value(t, "schedhot_cpupri_set_calls_total", "cpu=\"1\""), 100);  // the probe: all its families
  EXPECT_EQ(value(t, "schedhot_cpupri_set_lat_seconds_count", "cpu=\"1\""), 4);
  // The OpenMetrics family name (no _total) and a histogram name are taken too.
  EXPECT_TRUE(parse_per_cpu("schedhot_idle_exits,schedhot_idle_residency_seconds").covers("idle", "schedhot_idle_exits", FieldKind::counter));
  EXPECT_FALSE(parse_per_cpu("schedhot_idle_exits").covers("idle", "schedhot_idle_entries", FieldKind::counter));
  EXPECT_THROW(parse_per_cpu("idel"), std::invalid_argument);
  EXPECT_THROW(parse_per_cpu("idle,"), std::invalid_argument);
  EXPECT_THROW(parse_per_cpu("schedhot_idle_lat_seconds"), std::invalid_argument);
  EXPECT_THROW(parse_per_cpu("schedhot_idle_residency_seconds_total"), std::invalid_argument) << "a histogram has no _total";
  EXPECT_NO_THROW(parse_per_cpu("schedhot_cpupri_set_vec_set_total"));  // a counter array's samples have it
  try {
    parse_per_cpu("0-3");
    ADD_FAILURE() << "a CPU list is not taken";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'0-3' is neither a probe nor"), std::string::npos) << e.what();
  }
}

/// Series lines (not comments) of an exposition text.
size_t series_of(const std::string& t) {
  size_t c = 0;
  std::istringstream in(t);
  for (std::string l; std::getline(in, l);) c += !l.empty() && l[0] != '#';
  return c;
}

/// The figures of a per_cpu_notice line: total, per CPU, CPUs, without.
std::array<size_t, 4> notice_figures(const std::string& n) {
  std::array<size_t, 4> f{};
  EXPECT_EQ(std::sscanf(n.c_str(), "--per-cpu: %zu series a scrape (%zu per CPU x %zu CPU", &f[0], &f[1], &f[2]), 3) << n;
  const size_t w = n.find("), ");
  EXPECT_NE(w, std::string::npos) << n;
  if (w != std::string::npos) EXPECT_EQ(std::sscanf(n.c_str() + w, "), %zu without it", &f[3]), 1) << n;
  return f;
}

// The start-up line of --per-cpu says how many series a scrape carries.
TEST(Metrics, PerCpuNoticeCountsTheSeries) {
  Known k;
  k.st.last.online = {0, 1, 2, 3};
  const std::string n = per_cpu_notice(k.st, parse_per_cpu("all"));
  const size_t w = series_of(render_metrics(k.st, MetricsOptions{false, parse_per_cpu("all")}));
  const size_t o = series_of(render_metrics(k.st, MetricsOptions{}));
  EXPECT_EQ(n.rfind(fmt::format("--per-cpu: {} series a scrape ({} per CPU x 4 CPUs), {} without it;", w, (w - o) / 3, o), 0),
            0u)
      << n;
  const std::string one = per_cpu_notice(k.st, parse_per_cpu("schedhot_idle_exits"));
  EXPECT_EQ(one.rfind(fmt::format("--per-cpu: {} series a scrape (1 per CPU x 4 CPUs), {} without it", o + 3, o), 0), 0u)
      << one;
}

// Issue: the notice said 586 and 300 where scrapes had 588 and 302 (the BPF run-time pair
// left out) and did not count the line transfers. Its figures are now those of the
// rendering of the state serve publishes, whatever that holds.
TEST(Metrics, PerCpuNoticeFiguresAreTheRenderedSeries) {
  Known k;
  k.st.last.online = {0, 2};
  k.st.bpf_run_ns = 5'000'000;
  k.st.bpf_runs = 77;
  k.st.lines = LineTransferTotals(k.st.meta).totals();
  ASSERT_FALSE(k.st.lines.empty());
  for (const char* spec : {"all", "counters", "idle", "schedhot_cpupri_set_vec_set_total,cpupri_find"}) {
    SCOPED_TRACE(spec);
    const PerCpu pc = parse_per_cpu(spec);
    const std::string with = render_metrics(k.st, MetricsOptions{false, pc}), without = render_metrics(k.st, MetricsOptions{});
    const auto f = notice_figures(per_cpu_notice(k.st, pc));
    EXPECT_EQ(f[0], series_of(with));
    EXPECT_EQ(f[3], series_of(without));
    EXPECT_EQ(f[2], 2u);
    size_t labelled = 0;
    std::istringstream in(with);
    for (std::string l; std::getline(in, l);) labelled += l.find("{cpu=\"") != std::string::npos;
    EXPECT_EQ(f[1] * f[2], labelled);
    EXPECT_GT(f[1], 0u);
  }
  // The real thing: the BPF pair and the lines are in both counts.
  const auto f = notice_figures(per_cpu_notice(k.st, parse_per_cpu("all")));
  MetricsState bare = k.st;
  bare.bpf_run_ns.reset();
  bare.lines.clear();
  EXPECT_EQ(f[3], series_of(render_metrics(bare, MetricsOptions{})) + 2 + k.st.lines.size());
}

// --per-cpu=LIST naming what this run does not export: the notice says which and why.
TEST(Metrics, PerCpuNoticeNamesTheItemsThatLabelNothing) {
  Known k;  // nohz_kick not attached
  const int cs = k.st.meta.probe_index("cpupri_set");
  k.st.meta.probes[size_t(cs)].status.proxy = true;  // a proxy: no noop, no lat
  k.st.meta.probes[size_t(cs)].status.backend = Backend::tracepoint;
  const std::string n =
      per_cpu_notice(k.st, parse_per_cpu("idle,nohz_kick,schedhot_cpupri_set_noop_total,schedhot_cpupri_set_lat_seconds"));
  EXPECT_EQ(n.find('\n'), std::string::npos) << "one line: " << n;
  EXPECT_NE(n.find("; nothing per CPU from nohz_kick (not attached: kprobe \"nohz_balancer_kick\" refused\\EPERM see dmesg), "
                   "schedhot_cpupri_set_noop_total (cpupri_set runs as a proxy (tracepoint), which does not see noop), "
                   "schedhot_cpupri_set_lat_seconds (cpupri_set runs as a proxy (tracepoint), which does not see lat)"),
            std::string::npos)
      << n;
  EXPECT_EQ(n.find("idle ("), std::string::npos) << "idle labels its families: " << n;
  // A family of a probe that did not attach.
  const std::string f = per_cpu_notice(k.st, parse_per_cpu("schedhot_nohz_kick_calls"));
  EXPECT_NE(f.find("(0 per CPU x 4 CPUs)"), std::string::npos) << f;
  EXPECT_NE(f.find("nothing per CPU from schedhot_nohz_kick_calls (nohz_kick not attached: kprobe"), std::string::npos) << f;
  // Every item labels something: no such part.
  EXPECT_EQ(per_cpu_notice(k.st, parse_per_cpu("idle")).find("nothing"), std::string::npos);
}

// "--per-cpu=" is an empty list, not the bare flag (CLI11 hands it on as the default "counters").
TEST(Metrics, PerCpuEmptyListIsAUsageError) {
  EXPECT_EQ(per_cpu_spec({"serve", "--per-cpu="}, "counters"), "");
  EXPECT_EQ(per_cpu_spec({"serve", "--per-cpu"}, "counters"), "counters");
  EXPECT_EQ(per_cpu_spec({"serve", "--per-cpu=idle"}, "idle"), "idle");
  EXPECT_EQ(per_cpu_spec({"serve", "--", "--per-cpu="}, "counters"), "counters");
  try {
    parse_per_cpu(per_cpu_spec({"serve", "--listen", ":9870", "--per-cpu="}, "counters"));
    ADD_FAILURE() << "an empty list is taken";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--per-cpu=: an empty list"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
  }
}

// The cpupri vector arrays have SH_CPUPRI_VECS (104) slots for the kernel's 101 vectors:
// only the real vectors are exported, as many as the layout says.
TEST(Metrics, CpupriVectorArraysExportTheKernelsVectorsOnly) {
  Known k;  // no layout: the assumed one, 101 vectors
  auto elements = [](const std::string& t, const std::string& name) {
    std::set<std::string> e;
    std::istringstream in(t);
    for (std::string l; std::getline(in, l);)
      if (l.rfind(name + "{", 0) == 0) {
        const size_t a = l.find("element=\"") + 9;
        e.insert(l.substr(a, l.find('"', a) - a));
      }
    return e;
  };
  std::string t = render_metrics(k.st, MetricsOptions{});
  for (const char* f : {"schedhot_cpupri_set_vec_set_total", "schedhot_cpupri_set_vec_clear_total"}) {
    const auto e = elements(t, f);
    EXPECT_EQ(e.size(), 101u) << f;
    EXPECT_TRUE(e.count("0") && e.count("100")) << f;
    EXPECT_FALSE(e.count("101") || e.count("103")) << f;
  }
  // A kernel with 102 vectors (before v5.11), read from its BTF.
  CoherenceLayout L = assumed_layout("5.10.0", 64);
  L.cpupri->nr_prios = 102;
  k.st.meta.layout = L;
  t = render_metrics(k.st, MetricsOptions{});
  EXPECT_EQ(elements(t, "schedhot_cpupri_set_vec_set_total").size(), 102u);
  // Other arrays keep every element.
  const int ik = k.st.meta.probe_index("ilb_kick");
  const Field* fl = k.st.meta.probes[size_t(ik)].slot.find("flags");
  ASSERT_NE(fl, nullptr);
  EXPECT_EQ(array_elements(k.st.meta, k.st.meta.probes[size_t(ik)], *fl), fl->nwords);
  // --per-cpu: the same elements on each CPU.
  const std::string pc = render_metrics(k.st, MetricsOptions{false, parse_per_cpu("schedhot_cpupri_set_vec_set")});
  EXPECT_EQ(elements(pc, "schedhot_cpupri_set_vec_set_total").size(), 102u);
  EXPECT_TRUE(std::isnan(value(pc, "schedhot_cpupri_set_vec_set_total", "cpu=\"0\",element=\"102\"")));
  EXPECT_EQ(value(pc, "schedhot_cpupri_set_vec_set_total", "cpu=\"3\",element=\"101\""), 0);
}

// Every line the attached probes can touch is a series from the first scrape, at 0 (absent
// is not zero to rate() and alerts); lines only unattached probes reach are not.
TEST(Metrics, LineTransfersArePresentFromTheFirstSample) {
  Known k;  // nohz_kick not attached
  const Meta& m = k.st.meta;
  LineTransferTotals tot(m);
  const std::vector<LineTotal> first = tot.totals();
  ASSERT_FALSE(first.empty());
  std::set<std::pair<std::string, std::string>> want;
  for (const PossibleLine& l : possible_lines(m, layout_of(m)))
    for (int p : l.probes)
      if (m.probes[size_t(p)].status.attached) want.insert({l.family, l.name});
  std::set<std::pair<std::string, std::string>> got;
  for (const LineTotal& l : first) {
    EXPECT_EQ(l.xfers, 0) << l.name;
    got.insert({l.family, l.name});
  }
  EXPECT_EQ(got, want);
  EXPECT_EQ(got.size(), first.size()) << "each line once";
  k.st.lines = first;
  const std::string t = render_metrics(k.st, MetricsOptions{});
  for (const LineTotal& l : first)
    EXPECT_EQ(value(t, "schedhot_line_transfers_total", fmt::format("family=\"{}\",line=\"{}\",estimate=\"independent_arrivals\"", l.family, l.name)), 0)
        << l.name;
  // An interval's model adds to the seeded lines, in place: the same series, no new one.
  Sample a = make_sample(m), b = a;
  std::mt19937_64 rng(7);
  advance(m, b, rng, 1.0);
  CoherenceAccumulator acc(m);
  const std::vector<LineTotal>& after = tot.add(acc.of(Interval(m, a, b)));
  EXPECT_EQ(after.size(), first.size());
  double sum = 0;
  for (size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after[i].name, first[i].name);
    sum += after[i].xfers;
  }
  EXPECT_GT(sum, 0);
}


TEST(Metrics, AProxysFamiliesSayWhatCountsThemHere) {
  // A proxy's counts are not the function's: its HELP says so on this host, escaped as the
  // format wants (a backslash and a newline in the label; a quote in OpenMetrics).
  Known k;
  const int cs = k.st.meta.probe_index("cpupri_set");
  ProbeStatus& st = k.st.meta.probes[size_t(cs)].status;
  st.proxy = true;
  st.proxy_label = "proxy: cpu_to_pri \"changes\"\\seen\nat sched_switch";
  const std::string prom = render_metrics(k.st, MetricsOptions{false, {}});
  EXPECT_TRUE(has_line(prom, "# HELP schedhot_cpupri_set_calls_total function entries; here a proxy counts it, proxy: "
                             "cpu_to_pri \"changes\"\\\\seen\\nat sched_switch"))
      << prom;
  const std::string om = render_metrics(k.st, MetricsOptions{true, {}});
  EXPECT_TRUE(has_line(om, "# HELP schedhot_cpupri_set_calls function entries; here a proxy counts it, proxy: "
                           "cpu_to_pri \\\"changes\\\"\\\\seen\\nat sched_switch"))
      << om;
  // A probe that is not a proxy keeps its HELP as it was.
  EXPECT_TRUE(has_line(prom, "# HELP schedhot_idle_exits_total idle exits")) << prom;
}
