// render_metrics (`schedhot serve`, `--textfile`) on a sample with known values: counter
// totals, exact cumulative histogram buckets, unattached probes as info only, both
// exposition formats, --per-cpu labels and label escaping.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <regex>
#include <sstream>

#include "test_util.h"
#include "view/metrics.h"

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
    st.last.probes[cs].words[word(m, cs, 1, "calls")] = 100;
    for (uint64_t v : {10, 10, 10, 12}) add_hist(m, st.last, cs, 1, "lat", v);
    st.last.probes[id].words[word(m, id, 0, "exits")] = 50;
    st.last.probes[id].words[word(m, id, 2, "exits")] = 7;
    for (uint64_t v : {70, 100, 1000, 1000000}) add_hist(m, st.last, id, 2, "lat", v);
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
  EXPECT_EQ(value(t, "schedhot_bpf_stats_enabled"), 0);
  EXPECT_TRUE(std::isnan(value(t, "schedhot_bpf_run_seconds_total"))) << "absent when bpf_stats is off";
  EXPECT_EQ(t.find("# EOF"), std::string::npos) << "0.0.4 text has no EOF marker";
}

TEST(Metrics, HistogramBucketsAreExactCumulativeCounts) {
  Known k;
  const std::string t = render_metrics(k.st, MetricsOptions{});
  const std::string h = "schedhot_idle_lat_seconds";
  EXPECT_TRUE(has_line(t, "# TYPE " + h + " histogram")) << t;
  EXPECT_EQ(value(t, h + "_bucket", "le=\"6.4e-08\""), 0);        // 64 ns: none (70 is above)
  EXPECT_EQ(value(t, h + "_bucket", "le=\"1.28e-07\""), 2);       // 70, 100
  EXPECT_EQ(value(t, h + "_bucket", "le=\"5.12e-07\""), 2);
  EXPECT_EQ(value(t, h + "_bucket", "le=\"1.024e-06\""), 3);      // + 1000
  EXPECT_EQ(value(t, h + "_bucket", "le=\"0.000524288\""), 3);
  EXPECT_EQ(value(t, h + "_bucket", "le=\"0.001048576\""), 4);    // + 1 ms
  EXPECT_EQ(value(t, h + "_bucket", "le=\"+Inf\""), 4);
  EXPECT_EQ(value(t, h + "_count"), 4);
  EXPECT_NEAR(value(t, h + "_sum"), 1001170e-9, 1e-15);
  EXPECT_EQ(value(t, "schedhot_cpupri_set_lat_seconds_bucket", "le=\"6.4e-08\""), 4);
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
  EXPECT_EQ(value(t, "schedhot_line_transfers_per_second", "family=\"nohz\",line=\"nohz \\\"line\\\" 0\""), 251.5) << t;
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

TEST(Metrics, PerCpuLabelsEveryOnlineCpu) {
  Known k;
  const std::string t = render_metrics(k.st, MetricsOptions{false, true});
  EXPECT_EQ(value(t, "schedhot_idle_exits_total", "cpu=\"0\""), 50);
  EXPECT_EQ(value(t, "schedhot_idle_exits_total", "cpu=\"1\""), 0);
  EXPECT_EQ(value(t, "schedhot_idle_exits_total", "cpu=\"2\""), 7);
  EXPECT_EQ(value(t, "schedhot_idle_exits_total", "cpu=\"3\""), 0);
  EXPECT_TRUE(std::isnan(value(t, "schedhot_idle_exits_total"))) << "no unlabelled total with --per-cpu";
  EXPECT_EQ(value(t, "schedhot_idle_lat_seconds_bucket", "cpu=\"2\",le=\"1.28e-07\""), 2);
  EXPECT_EQ(value(t, "schedhot_idle_lat_seconds_count", "cpu=\"0\""), 0);
  // Only the online CPUs: CPU 3 offline leaves its series out.
  k.st.last.online = {0, 1, 2};
  const std::string t3 = render_metrics(k.st, MetricsOptions{false, true});
  EXPECT_TRUE(std::isnan(value(t3, "schedhot_idle_exits_total", "cpu=\"3\"")));
  EXPECT_EQ(value(t3, "schedhot_idle_exits_total", "cpu=\"2\""), 7);
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
