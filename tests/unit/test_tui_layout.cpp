// top/replay layouts (src/tui/screen.h) on the fixed recording's samples
// (tests/data/tui_fixture.h): table values, sorting, paging, topology folding, histogram
// bars and percentile marks, header, summary, the small-terminal screen, and that the
// committed tests/data/tui16.shot holds exactly what the generator makes.
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include <algorithm>

#include "data/tui_fixture.h"
#include "model/interval.h"
#include "store/recording.h"
#include "tui/screen.h"
#include "tui/tails_view.h"
#include "probe/catch_rules.h"

using namespace schedhot;
using namespace schedhot::tui;
namespace fx = schedhot::tui_fixture;

namespace {

/// Column index (into cpu_columns() / TableRow::v) of a header.
size_t col(const char* header) {
  const auto& cols = cpu_columns();
  for (size_t i = 0; i < cols.size(); ++i)
    if (std::string(cols[i].header) == header) return i;
  ADD_FAILURE() << "no column " << header;
  return 0;
}

/// Midpoint of the bucket holding v, lower + (width - 1) / 2: what a percentile reports.
double mid(uint64_t v) {
  uint32_t i = sh_hist_index(v);
  return double(sh_hist_lower(i)) + double(sh_hist_width(i) - 1) / 2.0;
}

std::string screen_text(const std::vector<Line>& lines) {
  std::string s;
  for (auto& l : lines) s += l.text + "\n";
  return s;
}

class Fixture : public ::testing::Test {
 protected:
  Meta m = fx::fixture_meta();
  std::vector<Sample> s = fx::fixture_samples(m);
  std::vector<int> all() const {
    std::vector<int> v;
    for (int c = 0; c < int(fx::kCpus); ++c) v.push_back(c);
    return v;
  }
};

}  // namespace

TEST(TuiText, CellsFitClip) {
  EXPECT_EQ(cells("ab\u2588c"), 4);
  EXPECT_EQ(fit("abcdef", 3), "abc");
  EXPECT_EQ(fit("ab", 4), "ab  ");
  EXPECT_EQ(fit("\u2588\u2588x", 2), "\u2588\u2588");
  Line l;
  l.add("abc").add("defgh", Role::bad).add("ij", Role::mark);
  clip(l, 5);
  EXPECT_EQ(l.text, "abcde");
  ASSERT_EQ(l.spans.size(), 1u);
  EXPECT_EQ(l.spans[0].col, 3);
  EXPECT_EQ(l.spans[0].len, 2);
}

TEST(TuiColumns, TheModulesColumnsInTableRankThenProbeOrder) {
  // Built from each module's ProbeSpec::columns: idle (rank -1) first, then by sh_probe_id,
  // then the model column.
  std::string heads;
  for (auto& c : cpu_columns()) heads += std::string(heads.empty() ? "" : " ") + c.header + "=" + c.probe;
  EXPECT_EQ(heads,
            "idle/s=idle nohz_exit/s=nohz_exit exit_work/s=nohz_exit nohz_enter/s=nohz_enter nohz_kick/s=nohz_kick "
            "ilb_sent/s=ilb_kick ilb_recv/s=ilb_kick cpupri_set/s=cpupri_set set_p99=cpupri_set "
            "cpupri_find/s=cpupri_find bcast_lock/s=bcast_lock bcast_wait/s=bcast_wait xfer/s=");
}

TEST(TuiColumns, ExtendReportColumns) {
  // top's columns are report's list: the p99 and the placeholder model column included.
  const auto& cols = cpu_columns();
  EXPECT_EQ(table_columns(), int(cols.size()) + 1);
  EXPECT_EQ(cols[col("set_p99")].kind, CpuColumnKind::p99);
  EXPECT_STREQ(cols[col("set_p99")].json_key(), "cpupri_set_p99_ns");
  EXPECT_EQ(cols[col("xfer/s")].kind, CpuColumnKind::model);
  EXPECT_EQ(find_column("cpu"), 0);
  EXPECT_EQ(find_column("idle"), 1);
  EXPECT_EQ(find_column("cpupri_set"), int(col("cpupri_set/s")) + 1);
  EXPECT_EQ(find_column("set_p99"), int(col("set_p99")) + 1);
  EXPECT_EQ(find_column("nope"), -1);
  EXPECT_EQ(find_column(""), -1);
}

TEST_F(Fixture, CpuRowValues) {
  Interval iv(m, s[1], s[2]);
  auto cpus = all();
  auto rows = cpu_rows(iv, cpus);
  ASSERT_EQ(rows.size(), 16u);
  for (int c = 0; c < 16; ++c) {
    const TableRow& r = rows[size_t(c)];
    EXPECT_EQ(r.label, std::to_string(c));
    EXPECT_DOUBLE_EQ(r.v[col("idle/s")], 100 + 10 * c);
    EXPECT_DOUBLE_EQ(r.v[col("nohz_exit/s")], 200 - 10 * c);
    EXPECT_DOUBLE_EQ(r.v[col("exit_work/s")], (200 - 10 * c) / 2);
    EXPECT_DOUBLE_EQ(r.v[col("nohz_kick/s")], 1000);
    EXPECT_DOUBLE_EQ(r.v[col("ilb_sent/s")], c % 4 == 0 ? 20 : 0);
    EXPECT_DOUBLE_EQ(r.v[col("cpupri_set/s")], double(fx::cpupri_set_calls(c)));
    EXPECT_DOUBLE_EQ(r.v[col("set_p99")], mid(fx::cpupri_set_tail(c)));
    EXPECT_DOUBLE_EQ(r.v[col("cpupri_find/s")], 40);
    EXPECT_EQ(r.v[col("bcast_lock/s")], kUnavailable);
    EXPECT_DOUBLE_EQ(r.v[col("bcast_wait/s")], c == 2 ? 3 : 0);
    EXPECT_EQ(r.v[col("xfer/s")], kBlank);
  }
  EXPECT_DOUBLE_EQ(rows[0].v[col("set_p99")], 19967.5);  // 20000 ns: bucket [19456, 20480)
  // The spike: CPU 3 in interval 7.
  Interval spike(m, s[6], s[7]);
  EXPECT_DOUBLE_EQ(cpu_rows(spike, cpus)[3].v[col("idle/s")], 5000);
}

TEST_F(Fixture, ProxyP99IsNotMeasuredNotBlank) {
  // cpupri_set through its proxy times nothing: its set_p99 is "-" (as in report), while
  // its rate stays a number.
  Meta pm = m;
  pm.probes[size_t(pm.probe_index("cpupri_set"))].status.proxy = true;
  Interval iv(pm, s[1], s[2]);
  auto rows = cpu_rows(iv, all());
  EXPECT_EQ(rows[0].v[col("set_p99")], kUnavailable);
  EXPECT_DOUBLE_EQ(rows[0].v[col("cpupri_set/s")], double(fx::cpupri_set_calls(0)));
}

TEST_F(Fixture, BlindBcastWaitIsNotMeasuredNotZero) {
  // A host whose spinlocks emit no contention events: bcast_wait/s is "-" in every row,
  // the header and the summary say blind; the other columns keep their numbers.
  for (int why = 0; why < 2; ++why) {
    Meta bm = m;
    if (why == 0) bm.host.spinlock = SpinlockMode::virt_spin_lock;
    else bm.probes[size_t(bm.probe_index("bcast_wait"))].status.notes.push_back(std::string(kLockAddrUnknownNote) + ": learning it");
    Interval iv(bm, s[1], s[2]);
    auto rows = cpu_rows(iv, all());
    EXPECT_EQ(rows[2].v[col("bcast_wait/s")], kUnavailable) << why;
    EXPECT_DOUBLE_EQ(rows[2].v[col("cpupri_find/s")], 40) << why;
    HeaderInfo hi;
    hi.mode = "replay";
    std::string head = screen_text(render_header(bm, hi, 400));
    EXPECT_NE(head.find(why == 0 ? "bcast_wait tracepoint blind: hypervisor without paravirt spinlocks"
                                 : "bcast_wait tracepoint blind: tick_broadcast_lock's address was not learned"),
              std::string::npos)
        << head;
    std::string sum = screen_text(render_summary(iv, all(), 400));
    EXPECT_NE(sum.find("bcast_wait   blind: "), std::string::npos) << sum;
  }
}

TEST_F(Fixture, CellText) {
  const auto& cols = cpu_columns();
  EXPECT_EQ(cell_text(cols[col("bcast_lock/s")], kUnavailable), "-");
  EXPECT_EQ(cell_text(cols[col("xfer/s")], kBlank), "");
  EXPECT_EQ(cell_text(cols[col("idle/s")], 250), "250");
  EXPECT_EQ(cell_text(cols[col("idle/s")], 50), "50.0");
  EXPECT_EQ(cell_text(cols[col("idle/s")], 0), "0");
  EXPECT_EQ(cell_text(cols[col("set_p99")], 35840), "35.8us");
  EXPECT_EQ(cell_text(cols[col("set_p99")], 1008), "1008");
}

TEST_F(Fixture, SortRows) {
  Interval iv(m, s[1], s[2]);
  auto cpus = all();
  auto rows = cpu_rows(iv, cpus);
  auto order = [&] {
    std::vector<int> v;
    for (auto& r : rows) v.push_back(r.key);
    return v;
  };
  sort_rows(rows, 1, false);  // idle/s, highest first
  EXPECT_EQ(order().front(), 15);
  EXPECT_EQ(order().back(), 0);
  sort_rows(rows, 1, true);
  EXPECT_EQ(order().front(), 0);
  sort_rows(rows, 0, false);  // CPU ascending
  EXPECT_EQ(order(), cpus);
  sort_rows(rows, 0, true);
  EXPECT_EQ(order().front(), 15);
  sort_rows(rows, int(col("nohz_exit/s")) + 1, false);
  EXPECT_EQ(order().front(), 0);
  // Ties keep CPU order: cpupri_set/s is 300 on CPUs 2, 5, 8, 11, 14.
  sort_rows(rows, int(col("cpupri_set/s")) + 1, false);
  std::vector<int> o = order();
  EXPECT_EQ(std::vector<int>(o.begin(), o.begin() + 5), (std::vector<int>{2, 5, 8, 11, 14}));
  // Unavailable sorts after every number whatever the direction of numbers.
  sort_rows(rows, int(col("bcast_wait/s")) + 1, false);
  EXPECT_EQ(order().front(), 2);
  EXPECT_DOUBLE_EQ(column_peak(rows, int(col("bcast_wait/s")) + 1), 3);
  EXPECT_EQ(column_peak(rows, int(col("bcast_lock/s")) + 1), kBlank);
  EXPECT_EQ(column_peak(rows, int(col("xfer/s")) + 1), kBlank);
}

TEST_F(Fixture, TableLayout) {
  Interval iv(m, s[1], s[2]);
  auto cpus = all();
  auto rows = cpu_rows(iv, cpus);
  sort_rows(rows, 1, false);
  TableStyle st;
  st.width = 160;
  auto lines = render_table(rows, st);
  ASSERT_EQ(lines.size(), 17u);
  EXPECT_EQ(lines[0].text.substr(0, 12), "  CPU  idle/");
  EXPECT_NE(lines[0].text.find("xfer/s"), std::string::npos);
  EXPECT_EQ(lines[0].width(), 160);
  // CPU 15 first: 250 idle exits/s, 50.0 nohz exits/s, "-" for the unavailable probe.
  EXPECT_EQ(lines[1].text.substr(0, 13), "   15     250");
  EXPECT_NE(lines[1].text.find("  35.8us"), std::string::npos);
  EXPECT_NE(lines[1].text.find("            -"), std::string::npos);
  for (auto& l : lines) EXPECT_LE(l.width(), 160);
  // The sort column's header is marked.
  bool marked = false;
  for (auto& sp : lines[0].spans) marked |= sp.role == Role::sort_head && lines[0].text.substr(size_t(sp.col), size_t(sp.len)).find("idle/s") != std::string::npos;
  EXPECT_TRUE(marked);

  // Narrow: columns that do not fit are left out, never cut.
  st.width = 60;
  lines = render_table(rows, st);
  EXPECT_EQ(lines[0].text.find("xfer/s"), std::string::npos);
  for (auto& l : lines) EXPECT_LE(l.width(), 60);
  // Scrolled right by 2 columns: nohz_exit/s and exit_work/s are gone... from the left.
  st.first_col = 2;
  lines = render_table(rows, st);
  EXPECT_EQ(lines[0].text.find("idle/s"), std::string::npos);
  EXPECT_NE(lines[0].text.find("nohz_enter/s"), std::string::npos);
  int shown = -1;
  render_table(rows, st, &shown);
  EXPECT_EQ(shown, 2);
  // Scrolled further than a wide screen needs: the columns come back from the left, so
  // the last column ends near the right edge instead of blank space after it.
  st.width = 1000;
  st.first_col = table_columns() - 2;
  lines = render_table(rows, st, &shown);
  EXPECT_EQ(shown, 0);
  EXPECT_NE(lines[0].text.find("idle/s"), std::string::npos);
  st.width = 100;
  lines = render_table(rows, st, &shown);
  EXPECT_GT(shown, 0);
  EXPECT_LT(shown, table_columns() - 2);
  EXPECT_NE(lines[0].text.find(column_header(table_columns() - 1)), std::string::npos);
  EXPECT_GT(lines[0].text.find_last_not_of(' '), 100u - 16);  // less than one column's room left

  // Paging: rows 5..9 of the sorted table.
  st = TableStyle();
  st.width = 160;
  st.first_row = 5;
  st.height = 6;
  lines = render_table(rows, st);
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(lines[1].text.substr(0, 5), "   10");
  EXPECT_EQ(lines[5].text.substr(0, 5), "    6");
}

TEST_F(Fixture, TopologyFolding) {
  auto cpus = all();
  auto core = fold_topology(m.host, cpus, TopoLevel::core);
  ASSERT_EQ(core.size(), 8u);
  EXPECT_EQ(core[0].label, "pkg0 core0");
  EXPECT_EQ(core[0].cpus, (std::vector<int>{0, 8}));
  EXPECT_EQ(core[4].label, "pkg1 core0");
  EXPECT_EQ(core[4].cpus, (std::vector<int>{4, 12}));
  auto llc = fold_topology(m.host, cpus, TopoLevel::llc);
  ASSERT_EQ(llc.size(), 4u);
  EXPECT_EQ(llc[0].label, "LLC 0");
  EXPECT_EQ(llc[0].cpus, (std::vector<int>{0, 1, 8, 9}));
  EXPECT_EQ(llc[3].cpus, (std::vector<int>{6, 7, 14, 15}));
  auto node = fold_topology(m.host, cpus, TopoLevel::node);
  ASSERT_EQ(node.size(), 2u);
  EXPECT_EQ(node[1].label, "node 1");
  EXPECT_EQ(node[1].cpus, (std::vector<int>{4, 5, 6, 7, 12, 13, 14, 15}));
  auto pkg = fold_topology(m.host, cpus, TopoLevel::package);
  ASSERT_EQ(pkg.size(), 2u);
  EXPECT_EQ(pkg[0].label, "pkg 0");
  EXPECT_EQ(pkg[0].cpus, (std::vector<int>{0, 1, 2, 3, 8, 9, 10, 11}));
  // A filter folds only its CPUs; CPUs without topology form "unknown", last.
  std::vector<int> some = {2, 3, 10};
  auto f = fold_topology(m.host, some, TopoLevel::llc);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].label, "LLC 1");
  HostInfo h = m.host;
  h.topology.erase(h.topology.begin());  // CPU 0 unknown
  auto u = fold_topology(h, cpus, TopoLevel::package);
  ASSERT_EQ(u.size(), 3u);
  EXPECT_EQ(u[2].label, "unknown");
  EXPECT_EQ(u[2].cpus, (std::vector<int>{0}));
  // Ids far past any machine's (a filter or a crafted topology) and an id listed twice (the
  // last entry counts) fold as any other; no table the size of the largest id is made.
  HostInfo x = m.host;
  CpuTopology far = x.topology[1];
  far.cpu = 2'000'000'000;
  far.llc = 7;
  x.topology.push_back(far);
  CpuTopology again = x.topology[1];  // CPU 1 again, now in LLC 3
  again.llc = 3;
  x.topology.push_back(again);
  const std::vector<int> odd = {1, 2'000'000'000, -5};
  auto g = fold_topology(x, odd, TopoLevel::llc);
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(g[0].label, "LLC 3");
  EXPECT_EQ(g[0].cpus, (std::vector<int>{1}));
  EXPECT_EQ(g[1].label, "LLC 7");
  EXPECT_EQ(g[1].cpus, (std::vector<int>{2'000'000'000}));
  EXPECT_EQ(g[2].label, "unknown");
  EXPECT_EQ(g[2].cpus, (std::vector<int>{-5}));
}

TEST_F(Fixture, GroupRows) {
  Interval iv(m, s[1], s[2]);
  auto cpus = all();
  auto rows = group_rows(iv, fold_topology(m.host, cpus, TopoLevel::llc));
  ASSERT_EQ(rows.size(), 4u);
  // LLC 0 = CPUs 0, 1, 8, 9: rates add up.
  EXPECT_DOUBLE_EQ(rows[0].v[col("idle/s")], 100 + 110 + 180 + 190);
  EXPECT_DOUBLE_EQ(rows[0].v[col("cpupri_set/s")], 100 + 200 + 300 + 100);
  // p99 of the merged histogram: 700 calls, ranks 687..693 are the tails 20000, 21000 x2,
  // 28000 x3, 29000: rank 693 is 29000, bucket [28672, 29696).
  EXPECT_DOUBLE_EQ(rows[0].v[col("set_p99")], 29183.5);
  EXPECT_EQ(rows[0].v[col("bcast_lock/s")], kUnavailable);
  TableStyle st;
  st.label_header = "LLC";
  st.cpu_list = true;
  st.width = 200;
  auto lines = render_table(rows, st);
  EXPECT_EQ(lines[0].text.substr(0, 28), " LLC   CPUs CPU list   idle/");
  EXPECT_EQ(lines[1].text.substr(0, 28), " LLC 0    4 0-1,8-9       58");
  EXPECT_NE(lines[1].text.find(" 580 "), std::string::npos);
}

TEST_F(Fixture, HistogramBoundsAroundAMillisecondStayApart) {
  // One event in each bucket from 1 ms to 4 ms: every row's from and to differ in text.
  std::vector<uint64_t> b(SH_HIST_BUCKETS, 0);
  for (uint32_t i = sh_hist_index(1'000'000); i <= sh_hist_index(4'000'000); ++i) b[i] = 1;
  HistSummary hs;
  hs.count = sh_hist_index(4'000'000) - sh_hist_index(1'000'000) + 1;
  auto lines = render_histogram("x", b, hs, 120, 100, false);
  int rows = 0;
  for (auto& l : lines) {
    std::istringstream in(l.text);
    std::string from, to;
    in >> from >> to;
    if (from.size() < 3 || from.substr(from.size() - 2) != "ms") continue;
    ++rows;
    EXPECT_NE(from, to) << l.text;
  }
  EXPECT_GE(rows, 30);
}

TEST_F(Fixture, HistogramRowsAndMarks) {
  Interval iv(m, s[1], s[2]);
  const int p = m.probe_index("cpupri_set");
  auto b = iv.buckets(p, "lat");
  HistSummary h = iv.hist(p, "lat");
  EXPECT_EQ(h.count, 3100u);
  EXPECT_DOUBLE_EQ(h.p10, 1007.5);  // 1000 ns: bucket [992, 1024)
  EXPECT_DOUBLE_EQ(h.p90, 1007.5);
  EXPECT_DOUBLE_EQ(h.p98, 4991.5);  // 5000 ns: bucket [4864, 5120)
  EXPECT_DOUBLE_EQ(h.p99, mid(35000));  // every tail value is below rank 0.99 N: CPU 15's 35000
  EXPECT_EQ(h.max_ns, 100000u);

  // One row per bucket when there is room: from 1000's bucket to 100000's.
  auto rows = hist_rows(b, h, 1000);
  ASSERT_EQ(rows.size(), size_t(sh_hist_index(100000) - sh_hist_index(1000) + 1));
  EXPECT_EQ(rows.front().lo, 992u);
  EXPECT_EQ(rows.front().hi, 1024u);
  EXPECT_EQ(rows.front().count, 2790u);  // 90 % of 3100
  EXPECT_EQ(rows.front().marks, "p10 p50 p90");
  EXPECT_EQ(rows.back().marks, "max");
  uint64_t total = 0;
  int marked = 0;
  for (auto& r : rows) {
    total += r.count;
    if (r.marks == "p98") EXPECT_EQ(r.lo, 4864u);
    if (r.marks == "p99") EXPECT_TRUE(r.lo <= 35000 && 35000 < r.hi);
    marked += !r.marks.empty();
  }
  EXPECT_EQ(total, 3100u);
  EXPECT_EQ(marked, 4);
  // Squeezed into 8 rows: counts add up, every mark appears exactly once.
  rows = hist_rows(b, h, 8);
  EXPECT_LE(rows.size(), 8u);
  total = 0;
  std::string marks;
  for (auto& r : rows) total += r.count, marks += r.marks + " ";
  EXPECT_EQ(total, 3100u);
  for (const char* k : {"p10", "p50", "p90", "p98", "p99", "max"})
    EXPECT_EQ(std::count_if(rows.begin(), rows.end(), [&](const HistRow& r) { return r.marks.find(k) != std::string::npos; }), 1)
        << k;

  auto lines = render_histogram("cpupri_set", b, h, 120, 30, false);
  std::string text = screen_text(lines);
  EXPECT_NE(text.find("cpupri_set: 3100 events"), std::string::npos);
  EXPECT_NE(text.find("p10 1008  p50 1008  p90 1008  p98 4992  p99 35.8us  max 100.0us"), std::string::npos);
  EXPECT_LE(lines.size(), 30u);
  for (auto& l : lines) EXPECT_LE(l.width(), 120);
  // 27 rows for 106 buckets: 4 buckets a row. The longest bar is the 1000 ns row's; '#'
  // without UTF-8.
  EXPECT_EQ(lines[3].text.substr(0, 33), "     992     1216       2790  ###") << lines[3].text;
  EXPECT_NE(lines[3].text.find("p10 p50 p90"), std::string::npos);
  auto utf = render_histogram("cpupri_set", b, h, 120, 30, true);
  EXPECT_NE(utf[3].text.find("\u2588\u2588"), std::string::npos);
  // One CPU: CPU 0's tail is 20000.
  HistSummary h0 = iv.hist(p, "lat", 0);
  EXPECT_DOUBLE_EQ(h0.p99, 19967.5);
  // Empty.
  std::vector<uint64_t> none(SH_HIST_BUCKETS, 0);
  EXPECT_TRUE(hist_rows(none, HistSummary{}, 10).empty());
  EXPECT_NE(screen_text(render_histogram("x", none, HistSummary{}, 80, 10, false)).find("no events"), std::string::npos);
}

TEST_F(Fixture, HeaderSummaryHelpSmall) {
  HeaderInfo hi;
  hi.mode = "replay";
  hi.when = "sample 2/11";
  hi.interval_ns = fx::kSecond;
  hi.cost = "not recorded";
  auto lines = render_header(m, hi, 160);
  std::string text = screen_text(lines);
  EXPECT_NE(text.find("schedhot replay  host fixture16  kernel 6.18.0-fixture  CPUs 16 online of 16  interval 1 s"),
            std::string::npos);
  EXPECT_NE(text.find("nohz_kick kprobe"), std::string::npos);
  EXPECT_NE(text.find("bcast_lock unavailable: fentry refused: EPERM"), std::string::npos);
  EXPECT_NE(text.find("lost 0  cost not recorded"), std::string::npos);
  EXPECT_EQ(lines[0].text.substr(size_t(160 - 11)), "sample 2/11");
  for (int w : {60, 80, 160})
    for (auto& l : render_header(m, hi, w)) EXPECT_LE(l.width(), w);
  // Too narrow for the title and the time on one line: the time gets the second line.
  hi.when = "sample 2/11  +1.00 s  2023-11-14 22:13:21 UTC";
  auto narrow = render_header(m, hi, 120);  // title 88 cells + 2 + 45
  EXPECT_EQ(narrow[0].text.find("sample"), std::string::npos);
  EXPECT_EQ(narrow[1].text, hi.when);
  HeaderInfo short_when = hi;
  short_when.when = "live";
  EXPECT_EQ(narrow.size(), render_header(m, short_when, 120).size() + 1);
  EXPECT_EQ(render_header(m, short_when, 120)[0].text.substr(size_t(120 - 4)), "live");
  EXPECT_EQ(render_header(m, hi, 160)[0].text.substr(size_t(160 - cells(hi.when))), hi.when);

  Interval iv(m, s[1], s[2]);
  auto cpus = all();
  std::string sum = screen_text(render_summary(iv, cpus, 160));
  EXPECT_NE(sum.find("cpupri_set   fentry                             3100      3100    1008    1008  35.8us 100.0us"),
            std::string::npos)
      << sum;
  EXPECT_NE(sum.find("bcast_lock   unavailable: fentry refused"), std::string::npos);
  std::vector<int> zero = {0};
  EXPECT_NE(screen_text(render_summary(iv, zero, 160)).find("cpupri_set   fentry                              100"),
            std::string::npos);

  std::string live = screen_text(render_help(true, 120)), replay = screen_text(render_help(false, 120));
  EXPECT_NE(live.find("sampling interval"), std::string::npos);
  EXPECT_EQ(live.find("worst sample"), std::string::npos);
  EXPECT_NE(replay.find("worst sample"), std::string::npos);
  EXPECT_EQ(replay.find("sampling interval"), std::string::npos);

  auto small = render_too_small(40, 8);
  EXPECT_EQ(small[0].text, "terminal too small");
  EXPECT_EQ(small[1].text, "40x8, need 60x12");
}

TEST_F(Fixture, HeaderFoldsItsProbeListWhereSpaceIsShort) {
  HeaderInfo hi;
  hi.mode = "replay";
  hi.when = "sample 2/11  +1.00 s  2023-11-14 22:13:21 UTC";
  hi.interval_ns = fx::kSecond;
  hi.cost = "not recorded";
  auto text_of = [&](const Meta& mm, int w, ProbeFold f) {
    auto lines = render_header(mm, hi, w, f);
    for (auto& l : lines) EXPECT_LE(l.width(), w) << screen_text(lines);
    return screen_text(lines);
  };
  // Full: the unavailable probe with its reason.
  EXPECT_NE(text_of(m, 160, ProbeFold::full).find("bcast_lock unavailable: fentry refused: EPERM"), std::string::npos);
  // Compact: every probe, unavailable ones said so, reasons left to p.
  std::string compact = text_of(m, 60, ProbeFold::compact);
  for (const char* want : {"idle tracepoint", "nohz_kick kprobe", "cpupri_set fentry", "bcast_lock unavailable",
                           "bcast_wait tracepoint"})
    EXPECT_NE(compact.find(want), std::string::npos) << want << "\n" << compact;
  EXPECT_EQ(compact.find("fentry refused"), std::string::npos) << compact;
  // Count: one line, naming the unavailable probe where there is room.
  auto count = render_header(m, hi, 60, ProbeFold::count);
  ASSERT_EQ(count.size(), 4u);  // title, time, probes, lost/cost
  EXPECT_EQ(count[2].text, "probes 8 attached, 1 unavailable (bcast_lock)  p: details");
  EXPECT_EQ(render_header(m, hi, 50, ProbeFold::count)[2].text, "probes 8 attached, 1 unavailable  p: details");
  // A blind probe is never counted as measuring.
  Meta bm = m;
  bm.host.spinlock = SpinlockMode::virt_spin_lock;
  EXPECT_NE(text_of(bm, 60, ProbeFold::compact).find("bcast_wait blind"), std::string::npos);
  EXPECT_EQ(render_header(bm, hi, 80, ProbeFold::count)[2].text,
            "probes 7 attached, 1 blind (bcast_wait), 1 unavailable (bcast_lock)  p: details");

  // The budgeted header takes the first form that fits in max_lines, the count when none does.
  for (int w : {60, 70, 80, 160}) {
    const size_t full = render_header(m, hi, w, ProbeFold::full).size(),
                 compact_n = render_header(m, hi, w, ProbeFold::compact).size();
    EXPECT_LE(compact_n, full) << w;
    for (int max = 0; max <= 14; ++max) {
      ProbeFold f{};
      auto lines = render_header(m, hi, w, max, &f);
      ProbeFold want = max == 0 || full <= size_t(max)   ? ProbeFold::full
                       : compact_n <= size_t(max)        ? ProbeFold::compact
                                                         : ProbeFold::count;
      EXPECT_EQ(f, want) << w << "x" << max;
      EXPECT_EQ(screen_text(lines), screen_text(render_header(m, hi, w, want))) << w << "x" << max;
    }
  }
}

TEST_F(Fixture, ProbeDetailsWrapTheWholeReason) {
  for (int w : {60, 80, 160}) {
    auto lines = render_probes(m, w);
    std::string joined;
    for (auto& l : lines) {
      EXPECT_LE(l.width(), w);
      joined += l.text + " ";
    }
    joined = std::regex_replace(joined, std::regex(" +"), " ");  // wrapped text as one line
    EXPECT_NE(joined.find("bcast_lock unavailable: fentry refused: EPERM (kernel lockdown or an LSM denies BPF tracing "
                          "programs); kprobes not built into this kernel (CONFIG_KPROBES=n)"),
              std::string::npos)
        << w << "\n" << screen_text(lines);
    EXPECT_NE(joined.find("nohz_kick kprobe sched_balance_trigger (nohz_balancer_kick inlined)"), std::string::npos)
        << joined;
  }
  Meta bm = m;
  bm.host.spinlock = SpinlockMode::virt_spin_lock;
  EXPECT_NE(screen_text(render_probes(bm, 160)).find("blind: "), std::string::npos);
}

TEST_F(Fixture, CommittedRecordingMatchesGenerator) {
  auto r = RecordingReader::open(std::string(SCHEDHOT_TEST_DATA) + "/tui16.shot");
  EXPECT_EQ(r->meta().ncpus, fx::kCpus);
  EXPECT_EQ(r->meta().host.topology.size(), size_t(fx::kCpus));
  EXPECT_EQ(r->meta().host.topology[13].llc, 2);
  EXPECT_FALSE(r->meta().probes[size_t(r->meta().probe_index("bcast_lock"))].status.attached);
  Sample got;
  size_t n = 0;
  while (r->next(got)) {
    ASSERT_LT(n, s.size());
    EXPECT_EQ(got.mono_ns, s[n].mono_ns);
    EXPECT_EQ(got.wall_ns, s[n].wall_ns);
    ASSERT_EQ(got.probes.size(), s[n].probes.size());
    for (size_t p = 0; p < got.probes.size(); ++p) {
      EXPECT_EQ(got.probes[p].present, s[n].probes[p].present) << p;
      EXPECT_TRUE(got.probes[p].words == s[n].probes[p].words) << "sample " << n << " probe " << p;
    }
    ++n;
  }
  EXPECT_EQ(n, size_t(fx::kSamples));
  EXPECT_TRUE(r->saw_end());
  EXPECT_FALSE(r->damage());
}

// ---- the coherence model in the table and the lines view (issue 11) -----------------

namespace {

/// The model of iv alone, as top/replay build it: a CoherenceAccumulator fed with iv.
CoherenceSummary model_of(const Interval& iv) {
  CoherenceAccumulator acc(iv.meta());
  acc.add(iv);
  return acc.summary();
}

}  // namespace

TEST_F(Fixture, XferColumnIsTheModelsTransfersPerCpu) {
  for (int k : {1, 6}) {  // an ordinary interval and the one with CPU 3's spike
    Interval iv(m, s[size_t(k)], s[size_t(k + 1)]);
    const CoherenceSummary sum = model_of(iv);
    ASSERT_FALSE(sum.lines.empty());
    const ModelColumn mc = model_column(iv, sum);
    EXPECT_TRUE(mc.measured);
    auto rows = cpu_rows(iv, all(), kEveryColumn, &mc);
    double most = 0;
    for (int c = 0; c < 16; ++c) {
      EXPECT_DOUBLE_EQ(rows[size_t(c)].v[col("xfer/s")], sum.cpu_xfers_per_s(c)) << "interval " << k << " CPU " << c;
      EXPECT_GT(rows[size_t(c)].v[col("xfer/s")], 0) << c;  // every CPU writes the nohz mask and reads nohz
      most = std::max(most, sum.cpu_xfers_per_s(c));
    }
    // Sorting by it: the CPU with the most transfers first; the peak is its value.
    const int xc = find_column("xfer/s");
    ASSERT_EQ(xc, int(col("xfer/s")) + 1);
    sort_rows(rows, xc, false);
    EXPECT_DOUBLE_EQ(rows[0].v[col("xfer/s")], most);
    for (size_t i = 1; i < rows.size(); ++i) EXPECT_GE(rows[i - 1].v[col("xfer/s")], rows[i].v[col("xfer/s")]);
    EXPECT_DOUBLE_EQ(column_peak(rows, xc), most);
    // Without the rows (w's scoring), for every column: the same peak.
    for (int c = 1; c < table_columns(); ++c)
      EXPECT_EQ(cpu_column_peak(iv, all(), c, &mc), column_peak(cpu_rows(iv, all(), c, &mc), c)) << "column " << c;
    EXPECT_EQ(cpu_column_peak(iv, all(), xc, nullptr), kBlank) << "the model column without the model";
    // Only the sort column computed (the 8192-CPU path), then the page filled: same values.
    auto one = cpu_rows(iv, all(), xc, &mc);
    EXPECT_EQ(one[0].v[col("idle/s")], kBlank);
    EXPECT_DOUBLE_EQ(one[5].v[col("xfer/s")], sum.cpu_xfers_per_s(5));
    fill_rows(iv, one, 0, 16, &mc);
    EXPECT_DOUBLE_EQ(one[5].v[col("idle/s")], 150);
    EXPECT_DOUBLE_EQ(one[5].v[col("xfer/s")], sum.cpu_xfers_per_s(5));
    // Groups: the sum over their CPUs (LLC 0 = CPUs 0, 1, 8, 9).
    auto g = group_rows(iv, fold_topology(m.host, all(), TopoLevel::llc), kEveryColumn, &mc);
    EXPECT_NEAR(g[0].v[col("xfer/s")],
                sum.cpu_xfers_per_s(0) + sum.cpu_xfers_per_s(1) + sum.cpu_xfers_per_s(8) + sum.cpu_xfers_per_s(9), 1e-9);
    // Shown as a rate.
    EXPECT_EQ(cell_text(cpu_columns()[col("xfer/s")], rows[0].v[col("xfer/s")]), format_rate(most));
  }
}

TEST_F(Fixture, XferColumnIsNotMeasuredWithoutTheProbesThatTouchTheLines) {
  // No probe that declares accesses measures: "-", never 0.
  Meta none = m;
  for (auto& p : none.probes) {
    const ProbeSpec* spec = find_probe(p.name);
    if (spec && !spec->accesses.empty()) p.status.attached = false;
  }
  Interval iv(none, s[1], s[2]);
  const ModelColumn mc = model_column(iv, model_of(iv));
  EXPECT_FALSE(mc.measured);
  auto rows = cpu_rows(iv, all(), kEveryColumn, &mc);
  EXPECT_EQ(rows[0].v[col("xfer/s")], kUnavailable);
  EXPECT_EQ(cell_text(cpu_columns()[col("xfer/s")], rows[0].v[col("xfer/s")]), "-");
}

TEST_F(Fixture, LinesViewRowsAreTheModelsLines) {
  Interval iv(m, s[1], s[2]);
  const CoherenceSummary sum = model_of(iv);
  const XferCost cost;
  const std::vector<LineRow> rows = line_rows(sum, cost);
  ASSERT_EQ(rows.size(), sum.lines.size());
  // Readers and writers per line, counted here from the per-CPU accesses of the interval.
  const std::vector<LineAccesses> acc = line_accesses(iv, layout_of(m));
  ASSERT_EQ(acc.size(), sum.lines.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    if (i) EXPECT_GE(rows[i - 1].xfers_per_s, rows[i].xfers_per_s);  // hottest first
    const LineRow& r = rows[i];
    auto it = std::find_if(sum.lines.begin(), sum.lines.end(), [&](const LineSummary& l) { return l.name == r.name; });
    ASSERT_NE(it, sum.lines.end()) << r.name;
    const LineSummary& l = *it;
    EXPECT_DOUBLE_EQ(r.reads_per_s, l.reads_per_s) << r.name;
    EXPECT_DOUBLE_EQ(r.writes_per_s, l.writes_per_s) << r.name;
    EXPECT_DOUBLE_EQ(r.xfers_per_s, l.traffic.total()) << r.name;
    EXPECT_DOUBLE_EQ(r.kb_per_s, l.traffic.total() * 64 / 1024) << r.name;
    EXPECT_DOUBLE_EQ(r.stall_us_per_s, stall_ns_per_s(l.traffic, cost) / 1e3) << r.name;
    double pct = 0;
    for (int d = 0; d < kXferDistances; ++d) {
      if (l.traffic.total() > 0) EXPECT_DOUBLE_EQ(r.pct[size_t(d)], 100 * l.traffic.by_distance[size_t(d)] / l.traffic.total());
      pct += r.pct[size_t(d)];
    }
    if (l.traffic.total() > 0) EXPECT_NEAR(pct, 100, 1e-9) << r.name;
    // Top CPUs: the highest transfers of the line, highest first.
    double best = 0;
    for (const CpuXfers& c : l.traffic.cpus) best = std::max(best, c.total());
    if (best > 0) {
      ASSERT_FALSE(r.top.empty()) << r.name;
      EXPECT_DOUBLE_EQ(r.top[0].second, best);
    }
    for (size_t t = 1; t < r.top.size(); ++t) EXPECT_GE(r.top[t - 1].second, r.top[t].second);
    const LineAccesses& a = *std::find_if(acc.begin(), acc.end(), [&](const LineAccesses& x) { return x.name == r.name; });
    std::set<int> rd, wr;
    for (const LineCpuRate& x : a.rates) {
      if (x.reads > 0) rd.insert(x.cpu);
      if (x.writes > 0) wr.insert(x.cpu);
    }
    EXPECT_EQ(r.readers, int(rd.size())) << r.name;
    EXPECT_EQ(r.writers, int(wr.size())) << r.name;
  }
  // The nohz line (nr_cpus, written by every CPU's tick-stop exits; read by the kicks):
  // every CPU reads and writes it.
  auto nohz = std::find_if(rows.begin(), rows.end(), [](const LineRow& r) { return r.name == "nohz"; });
  ASSERT_NE(nohz, rows.end());
  EXPECT_EQ(nohz->readers, 16);
  EXPECT_EQ(nohz->writers, 16);

  const LinesView v = render_lines(m, sum, cost, 200);
  EXPECT_EQ(v.fixes.text, "fixes: layout not recorded");  // the fixture records no layout
  EXPECT_EQ(v.head.text.substr(0, 6), " LINE ");
  EXPECT_NE(v.head.text.find("xfer/s"), std::string::npos);
  EXPECT_NE(v.head.text.find("stall us/s"), std::string::npos);
  ASSERT_EQ(v.rows.size(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(v.rows[i].text.substr(1, rows[i].name.size()), rows[i].name);
    EXPECT_NE(v.rows[i].text.find(" " + format_rate(rows[i].xfers_per_s) + " "), std::string::npos) << v.rows[i].text;
    EXPECT_NE(v.rows[i].text.find(fmt::format(" {:.2f} ", rows[i].stall_us_per_s)), std::string::npos) << v.rows[i].text;
    if (!rows[i].top.empty())
      EXPECT_NE(v.rows[i].text.find(fmt::format("  {} ({})", rows[i].top[0].first, format_rate(rows[i].top[0].second))),
                std::string::npos)
          << v.rows[i].text;
  }
  // One what-if line per seed patch, with its before -> after figures.
  std::string tail = screen_text(v.tail);
  ASSERT_EQ(sum.what_if.size(), 4u);
  for (const WhatIfResult& w : sum.what_if) {
    EXPECT_NE(tail.find("what-if " + w.what.title + ": "), std::string::npos) << tail;
    if (w.applies)
      EXPECT_NE(tail.find(fmt::format("{} -> {} xfer/s", format_rate(w.before_xfers_per_s), format_rate(w.after_xfers_per_s))),
                std::string::npos)
          << tail;
  }
  for (int w : {60, 120})
    for (const Line& l : render_lines(m, sum, cost, w).rows) EXPECT_LE(l.width(), w);
}

TEST_F(Fixture, FixesInTheHeaderWhereTheyFit) {
  HeaderInfo hi;
  hi.mode = "replay";
  hi.cost = "not recorded";
  std::string head = screen_text(render_header(m, hi, 160));
  EXPECT_NE(head.find("lost 0  cost not recorded  fixes: layout not recorded"), std::string::npos) << head;
  // A recorded layout: the short form, from fixes_present().
  Meta lm = m;
  lm.layout = assumed_layout("6.12.0", 64);
  const FixesPresent f = fixes_present(*lm.layout);
  ASSERT_TRUE(f.present("nohz_nr_cpus_removed").has_value());
  EXPECT_EQ(fixes_short(lm), fmt::format("fixes: nohz.nr_cpus {}, cpupri_vec.count {}, bcast_lock line {}",
                                         *f.present("nohz_nr_cpus_removed") ? "gone" : "present",
                                         !f.present("cpupri_count_removed") ? "?" : *f.present("cpupri_count_removed") ? "gone" : "present",
                                         !f.present("bcast_lock_own_line") ? "?" : *f.present("bcast_lock_own_line") ? "alone" : "shared"));
  EXPECT_EQ(fixes_text(lm), to_string(f));
  head = screen_text(render_header(lm, hi, 160));
  EXPECT_NE(head.find("  " + fixes_short(lm)), std::string::npos) << head;
  // Where it does not fit, it is left out whole, never cut.
  for (auto& l : render_header(lm, hi, 60)) EXPECT_EQ(l.text.find("fixes"), std::string::npos) << l.text;
}

// ---- the tails view (tui/tails_view.h) ------------------------------------------------

TEST(TuiTailsLayout, NoRulesSaysHowToGetThem) {
  TailsFrame f;
  const std::vector<CatchRule> none;
  f.rules = &none;
  const std::vector<Line> l = render_tails(f, 120);
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0].text, "no --catch rules in this run (record/top/serve --catch 'idle>1ms' or 'cpupri_set>20us')");
}

TEST(TuiTailsLayout, AnEditedRuleSaysWhichChecksItSkips) {
  // A rule edited 30 s into a recorded run, inside the interval shown; no counters known.
  std::vector<CatchRule> rules = parse_catch_rules("idle>500us,cpupri_find>p99", 20);
  rules[1].threshold_ns = 0;
  TailsFrame f;
  f.rules = &rules;
  f.iv_seconds = 1;
  f.t0_mono_ns = 1'000'000'000;
  f.iv_start_mono_ns = 30'500'000'000;
  f.edited_ns = {31'000'000'000, 0};
  f.recording = true;
  std::vector<std::string> got;
  for (const Line& l : render_tails(f, 400)) got.push_back(l.text);
  const std::vector<std::string> want = {
      "idle>500us  armed >= 507.9us, at most 20/s per CPU",
      "  threshold edited at +30.0 s: the checks over it are skipped; the recording keeps the start's threshold and a "
      "NOTE of the edit (report skips its check)",
      "  interval 1.00 s:        not counted (the probe is absent there)",
      "  no event received in this interval",
      "",
      "cpupri_find>p99  not armed yet (p99: fewer than 10 events above it so far), at most 20/s per CPU",
      "  interval 1.00 s:        not counted (the probe is absent there)",
      "  no event received in this interval",
  };
  EXPECT_EQ(got, want) << fmt::format("{}", fmt::join(got, "\n"));
}

TEST(TuiTailsLayout, AnEventInFlightAtAnEdgeIsAccountedAndSaidSo) {
  // TailAccumulator::json: accounted per CPU within one event; in_flight the difference.
  std::vector<CatchRule> rules = parse_catch_rules("idle>500us", 20);
  TailsFrame f;
  f.rules = &rules;
  f.iv_seconds = 1;
  auto entry = [](int64_t in_flight) {
    nlohmann::json t = {{"caught", 10}, {"rate_drops", 0}, {"full_drops", 0}, {"events_received", 10},
                        {"threshold_ns", 507'904}, {"histogram_above", 10 + in_flight},
                        {"in_flight", in_flight}, {"accounted", true}, {"stacks", nlohmann::json::array()},
                        {"stacks_unique", 0}, {"no_stack", 10}, {"tasks", nlohmann::json::array()},
                        {"interrupts", nullptr}};
    t["duration_ns"] = {{"count", 10}, {"p50", 600'000}, {"p99", 700'000}, {"max", 700'000}};
    nlohmann::json a = nlohmann::json::array();
    a.push_back(std::move(t));
    return a;
  };
  f.iv = entry(1);
  std::vector<Line> l = render_tails(f, 400);
  ASSERT_GE(l.size(), 2u);
  EXPECT_NE(l[1].text.find("  ~ histogram >= 507.9us (11): 1 in flight at the edges"), std::string::npos) << l[1].text;
  f.iv = entry(0);
  l = render_tails(f, 400);
  ASSERT_GE(l.size(), 2u);
  EXPECT_NE(l[1].text.find("  = histogram >= 507.9us"), std::string::npos) << l[1].text;
}
