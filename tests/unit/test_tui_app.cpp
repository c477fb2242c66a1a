// The top/replay UI's key handling (src/tui/app.h) over the replay feed
// (tui_replay.h) on the committed recording tests/data/tui16.shot, and over a small
// live-like feed for the keys that only make sense live.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <regex>
#include <thread>

#include <fmt/format.h>

#include "data/tui_fixture.h"
#include "unit/test_recording_util.h"
#include "store/recording.h"
#include "tui/app.h"
#include "sample/sampler.h"
#include "tui/replay_feed.h"
#include "tui/terminal.h"
#include "tui/tails_view.h"
#include "probe/catch_rules.h"

using namespace schedhot;
using namespace schedhot::tui;
namespace fx = schedhot::tui_fixture;

namespace {

std::string text(const Screen& s) {
  std::string out;
  for (auto& l : s) out += l.text + "\n";
  return out;
}

/// Line i of the screen (empty when past the end).
std::string line(const Screen& s, size_t i) { return i < s.size() ? s[i].text : ""; }

/// Index of the first line starting with prefix, or -1.
int find_line(const Screen& s, const std::string& prefix) {
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i].text.rfind(prefix, 0) == 0) return int(i);
  return -1;
}

/// The CPU of the first table row (the line after the " CPU" header).
int first_cpu(const Screen& s) {
  int h = find_line(s, "  CPU ");
  if (h < 0 || size_t(h + 1) >= s.size()) return -1;
  return std::stoi(s[size_t(h + 1)].text.substr(0, 5));
}

uint64_t parse_seconds(const std::string& t) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(t, &used);
  } catch (...) {
    throw std::invalid_argument("time '" + t + "' is not a non-negative number");
  }
  std::string unit = t.substr(used);
  if (!unit.empty() && unit != "s") throw std::invalid_argument("time '" + t + "': unknown unit");
  return uint64_t(v * 1e9);
}

class Replay : public ::testing::Test {
 protected:
  void SetUp() override {
    feed = std::make_unique<ReplayFeed>(RecordingReader::open(std::string(SCHEDHOT_TEST_DATA) + "/tui16.shot"));
    TuiOptions o;
    o.parse_time = parse_seconds;
    o.utf8 = false;
    app = std::make_unique<TuiApp>(*feed, o);
  }
  void keys(const std::string& ks) {
    for (char k : ks) ASSERT_TRUE(app->on_key(k == '\n' ? kKeyEnter : k));
  }
  Screen screen(int w = 160, int h = 50) { return app->render(w, h); }
  std::unique_ptr<ReplayFeed> feed;
  std::unique_ptr<TuiApp> app;
};

/// A live-like feed with two fixed samples: for the keys that differ live.
class TwoSamples : public TuiFeed {
 public:
  TwoSamples() : m_(fx::fixture_meta()), s_(fx::fixture_samples(m_)) {}
  const Meta& meta() const override { return m_; }
  bool live() const override { return true; }
  const Sample* first() const override { return &s_[1]; }
  const Sample* last() const override { return &s_[2]; }
  std::string when() const override { return "live 12:00:00"; }
  uint64_t lost() const override { return 0; }
  std::string cost() const override { return "BPF 0.100 ms/s"; }
  std::string state() const override { return paused_ ? "paused" : ""; }
  uint64_t interval_ns() const override { return fx::kSecond; }
  int wait_ms() const override { return -1; }
  bool update() override { return false; }
  void toggle_pause() override { paused_ = !paused_; }
  std::string adjust(int dir) override { return dir > 0 ? "longer" : "shorter"; }

 private:
  Meta m_;
  std::vector<Sample> s_;
  bool paused_ = false;
};

}  // namespace

TEST_F(Replay, StartsAtTheFirstInterval) {
  EXPECT_EQ(feed->position(), 1u);
  EXPECT_EQ(feed->samples(), 11u);
  EXPECT_EQ(feed->lost(), 0u);
  Screen s = screen();
  ASSERT_EQ(s.size(), 50u);
  EXPECT_NE(line(s, 0).find("sample 2/11  +1.00 s  2023-11-14 22:13:21 UTC"), std::string::npos) << line(s, 0);
  EXPECT_NE(text(s).find("Per CPU: 16 of 16 CPUs  sorted by idle/s (highest first)  rows 1-16 of 16"), std::string::npos);
  EXPECT_EQ(first_cpu(s), 15);
  EXPECT_NE(text(s).find("paused (space plays)"), std::string::npos);
}

TEST_F(Replay, StepAndBounds) {
  keys("t");
  EXPECT_EQ(app->message(), "t: at the first sample");
  keys("TTTTTT");
  EXPECT_EQ(feed->position(), 7u);
  Screen s = screen();
  EXPECT_EQ(first_cpu(s), 3);  // the idle spike
  EXPECT_NE(line(s, size_t(find_line(s, "  CPU ") + 1)).find("5000"), std::string::npos);
  keys("t");
  EXPECT_EQ(feed->position(), 6u);
  keys("TTTTT");
  EXPECT_EQ(feed->position(), 10u);
  EXPECT_EQ(app->message(), "T: at the last sample");
}

TEST_F(Replay, WorstSampleForTheSortColumn) {
  keys("w");
  EXPECT_EQ(feed->position(), 7u);
  EXPECT_EQ(app->message(), "w: worst is sample 8/11 (+7.00 s)");
  // bcast_wait/s is 3 everywhere: the first interval with it wins.
  while (app->sort_col() != find_column("bcast_wait/s")) keys(">");
  keys("w");
  EXPECT_EQ(feed->position(), 1u);
  // A probe that is unavailable has nothing to compare.
  keys("<");
  keys("w");
  EXPECT_EQ(app->message(), "w: the sort column has no values in this recording");
  while (app->sort_col() != 0) keys("<");
  keys("w");
  EXPECT_EQ(app->message(), "w: sort by a value column first (< >)");
}

TEST_F(Replay, JumpToATime) {
  keys("j5\n");
  EXPECT_EQ(feed->position(), 5u);
  EXPECT_EQ(app->message(), "");
  keys("j0\n");
  EXPECT_EQ(feed->position(), 1u);
  keys("jabc\n");
  EXPECT_EQ(app->message(), "j: time 'abc' is not a non-negative number");
  EXPECT_EQ(feed->position(), 1u);
  keys("j99\n");
  EXPECT_EQ(app->message(), "j: +99.00 s is after the last sample (+10.00 s)");
  // The prompt shows what is typed; Esc cancels it.
  keys("j7");
  EXPECT_NE(line(screen(), 49).find("jump to time since the start"), std::string::npos);
  EXPECT_NE(line(screen(), 49).find("7_"), std::string::npos);
  ASSERT_TRUE(app->on_key(kKeyEsc));
  EXPECT_EQ(feed->position(), 1u);
}

TEST_F(Replay, SortKeys) {
  keys(">");
  EXPECT_EQ(app->sort_col(), 2);
  Screen s = screen();
  EXPECT_NE(text(s).find("sorted by nohz_exit/s (highest first)"), std::string::npos);
  EXPECT_EQ(first_cpu(s), 0);
  keys("r");
  EXPECT_EQ(first_cpu(screen()), 15);
  EXPECT_NE(text(screen()).find("sorted by nohz_exit/s (lowest first)"), std::string::npos);
  keys("r<<");
  EXPECT_EQ(app->sort_col(), 0);
  EXPECT_EQ(first_cpu(screen()), 0);
  keys("<");  // wraps to the last column
  EXPECT_EQ(app->sort_col(), table_columns() - 1);
  ASSERT_TRUE(app->on_key(kKeyF6));
  EXPECT_EQ(app->sort_col(), 0);
}

TEST_F(Replay, FilterCpus) {
  keys("/0-3,12\n");
  EXPECT_EQ(app->filter(), (std::vector<int>{0, 1, 2, 3, 12}));
  Screen s = screen();
  EXPECT_NE(text(s).find("Per CPU: 5 of 16 CPUs  filter 0-3,12"), std::string::npos);
  EXPECT_EQ(first_cpu(s), 12);
  keys("/");
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(app->on_key(kKeyBackspace));
  keys("abc\n");
  EXPECT_EQ(app->message(), "filter: bad CPU list 'abc': 'abc' is not a CPU number");
  EXPECT_EQ(app->filter().size(), 5u);  // unchanged
  keys("/");
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(app->on_key(kKeyBackspace));
  keys("99\n");
  EXPECT_NE(app->message().find("filter: bad CPU list '99'"), std::string::npos);
  keys("/");
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(app->on_key(kKeyBackspace));
  keys("\n");
  EXPECT_TRUE(app->filter().empty());
}

TEST_F(Replay, Paging) {
  // 20 lines: 5 header lines, title, table header, footer: 16 rows do not fit.
  Screen s = screen(160, 20);
  int head = find_line(s, "  CPU ");
  ASSERT_GT(head, 0);
  const int page = 20 - 1 - (head + 1);
  ASSERT_LT(page, 16);
  EXPECT_NE(text(s).find(fmt::format("rows 1-{} of 16", page)), std::string::npos);
  EXPECT_EQ(first_cpu(s), 15);
  ASSERT_TRUE(app->on_key(kKeyPgDn));
  s = screen(160, 20);
  EXPECT_NE(text(s).find(fmt::format("rows {}-16 of 16", 16 - page + 1)), std::string::npos);
  EXPECT_EQ(first_cpu(s), page - 1);  // the last row shown is CPU 0
  ASSERT_TRUE(app->on_key(kKeyUp));
  EXPECT_EQ(first_cpu(screen(160, 20)), page);
  ASSERT_TRUE(app->on_key(kKeyHome));
  EXPECT_EQ(first_cpu(screen(160, 20)), 15);
  ASSERT_TRUE(app->on_key(kKeyEnd));
  EXPECT_EQ(first_cpu(screen(160, 20)), page - 1);
}

TEST_F(Replay, HistogramView) {
  // From idle/s, h opens idle's histogram; h again moves on.
  keys("h");
  EXPECT_EQ(app->view(), View::hist);
  EXPECT_EQ(feed->meta().probes[size_t(app->hist_probe())].name, "idle");
  keys("c");
  while (app->sort_col() != find_column("cpupri_set/s")) keys(">");
  keys("h");
  EXPECT_EQ(feed->meta().probes[size_t(app->hist_probe())].name, "cpupri_set");
  std::string t = text(screen());
  EXPECT_NE(t.find("cpupri_set entry-to-exit time, ns over all CPUs: 3100 events"), std::string::npos) << t;
  EXPECT_NE(t.find("p10 1008  p50 1008  p90 1008  p98 4992  p99 35.8us  max 100.0us"), std::string::npos);
  keys("/0\n");
  t = text(screen());
  EXPECT_NE(t.find("over CPUs 0: 100 events"), std::string::npos);
  EXPECT_NE(t.find("p98 4992  p99 20.0us  max 100.0us"), std::string::npos);
  keys("h");
  EXPECT_EQ(feed->meta().probes[size_t(app->hist_probe())].name, "cpupri_find");
  keys("H");
  EXPECT_EQ(feed->meta().probes[size_t(app->hist_probe())].name, "cpupri_set");
  ASSERT_TRUE(app->on_key(kKeyRight));
  EXPECT_EQ(feed->meta().probes[size_t(app->hist_probe())].name, "cpupri_find");
}

TEST_F(Replay, TopologyView) {
  keys("o");
  EXPECT_EQ(app->view(), View::topo);
  EXPECT_EQ(app->level(), TopoLevel::llc);
  Screen s = screen();
  std::string t = text(s);
  EXPECT_NE(t.find("Topology by LLC: 4 groups over 16 CPUs"), std::string::npos) << t;
  int head = find_line(s, " LLC  ");
  ASSERT_GT(head, 0);
  // Highest idle/s first: LLC 3 (CPUs 6,7,14,15: 160+170+240+250 = 820).
  EXPECT_EQ(line(s, size_t(head + 1)).substr(0, 6), " LLC 3");
  EXPECT_NE(line(s, size_t(head + 1)).find(" 820 "), std::string::npos);
  keys("o");
  EXPECT_EQ(app->level(), TopoLevel::node);
  s = screen();
  head = find_line(s, " node  ");
  EXPECT_EQ(line(s, size_t(head + 1)).substr(0, 7), " node 1");
  keys("oo");
  EXPECT_EQ(app->level(), TopoLevel::core);
  EXPECT_NE(text(screen()).find("Topology by core: 8 groups over 16 CPUs"), std::string::npos);
  keys("w");  // worst over groups: the spike's core (CPU 3 + CPU 11)
  EXPECT_EQ(feed->position(), 7u);
  keys("c");
  EXPECT_EQ(app->view(), View::cpus);
}

TEST_F(Replay, SummaryHelpSmallQuit) {
  keys("s");
  std::string t = text(screen());
  EXPECT_NE(t.find("Summary per probe over all CPUs"), std::string::npos);
  EXPECT_NE(t.find("bcast_lock   unavailable: fentry refused"), std::string::npos);
  keys("?");
  t = text(screen());
  EXPECT_NE(t.find("schedhot replay: keys"), std::string::npos);
  keys("x");  // any key closes the help
  EXPECT_EQ(text(screen()).find("schedhot replay: keys"), std::string::npos);
  keys("x");
  EXPECT_EQ(app->message(), "unknown key 'x' (? for help)");
  Screen small = screen(50, 10);
  ASSERT_EQ(small.size(), 10u);
  EXPECT_EQ(small[0].text, "terminal too small");
  EXPECT_EQ(small[1].text, "50x10, need 60x12");
  EXPECT_FALSE(app->on_key('q'));
}

namespace {

/// Lines under the first line starting with head_prefix that match row (at most n), or -1
/// when there is no such line.
int rows_under(const Screen& s, const std::string& head_prefix, const std::regex& row, int n = 3) {
  int h = find_line(s, head_prefix);
  if (h < 0) return -1;
  int k = 0;
  while (k < n && size_t(h + 1 + k) < s.size() && std::regex_search(s[size_t(h + 1 + k)].text, row)) ++k;
  return k;
}

/// The lines above the first line starting with prefix (the header over a view).
std::string above(const Screen& s, const std::string& prefix) {
  std::string out;
  for (const Line& l : s) {
    if (l.text.rfind(prefix, 0) == 0) break;
    out += l.text + "\n";
  }
  return out;
}

}  // namespace

TEST_F(Replay, SmallTerminalsShowTheTableAndTheKeyLineInEveryView) {
  // Down to kMinWidth x kMinHeight (60x12) every view keeps its title, its table header,
  // kMinTableRows rows and the key line: the header's probe list folds to make room, and
  // bcast_lock stays visible as unavailable in every form.
  const std::regex cpu_row(R"(^ +\d+ +\d)"), llc_row("^ LLC \\d"), bar_row(R"(^ +[\d.]+\w* +[\d.]+)"),
      probe_row("^[a-z_]+ +[a-z(]"), line_row(R"(^ [a-z_.\[\]0-9]+ .* \d)");
  struct V {
    const char* keys;
    const char* title;
    const char* head;
    const std::regex* row;
  };
  const V views[] = {{"c", "Per CPU: 16 of 16 CPUs", "  CPU ", &cpu_row},
                     {"o", "Topology by LLC: 4 groups", " LLC ", &llc_row},
                     {"ch", "Histogram of cpupri_set", "    from", &bar_row},
                     {"s", "Summary per probe over all CPUs", "PROBE", &probe_row},
                     {"l", "Cachelines: 6 modeled lines", " LINE ", &line_row}};
  while (app->sort_col() != find_column("cpupri_set/s")) keys(">");  // h opens cpupri_set's histogram
  for (auto [w, h] : {std::pair{60, 12}, {64, 13}, {70, 14}, {75, 16}, {80, 17}, {100, 24}, {160, 50}}) {
    for (const V& v : views) {
      keys(v.keys);
      Screen s = screen(w, h);
      std::string at = fmt::format("{}x{} after '{}':\n{}", w, h, v.keys, text(s));
      ASSERT_EQ(s.size(), size_t(h)) << at;
      for (const Line& l : s) EXPECT_LE(l.width(), w) << at;
      EXPECT_GE(find_line(s, v.title), 0) << at;
      EXPECT_EQ(rows_under(s, v.head, *v.row), kMinTableRows) << at;
      EXPECT_EQ(s.back().text.rfind("q quit  ? help  space play", 0), 0u) << at;
      std::string head = above(s, v.title);
      EXPECT_TRUE(head.find("bcast_lock unavailable") != std::string::npos ||
                  head.find("1 unavailable (bcast_lock)") != std::string::npos)
          << at;
      EXPECT_NE(head.find("sample 2/11"), std::string::npos) << at;
    }
  }
  // A normal size keeps the full probe list with the reason; 60x12 folds to one line.
  EXPECT_NE(text(screen(160, 50)).find("bcast_lock unavailable: fentry refused: EPERM"), std::string::npos);
  keys("c");
  Screen s = screen(60, 12);
  EXPECT_EQ(line(s, 2), "probes 8 attached, 1 unavailable (bcast_lock)  p: details") << text(s);
  EXPECT_EQ(rows_under(s, "  CPU ", cpu_row, 16), 12 - 4 - 2 - 1) << text(s);  // header, title + table header, key line
}

namespace {

/// The model of the interval a feed shows, as the UI builds it.
CoherenceSummary model_shown(const TuiFeed& f) {
  CoherenceAccumulator acc(f.meta());
  acc.add(Interval(f.meta(), *f.first(), *f.last()));
  return acc.summary();
}

/// The last cell of CPU c's row (the xfer/s column, the table's last), or "" when none.
std::string xfer_cell(const Screen& s, int c) {
  const std::regex row(fmt::format(R"(^ +{} +\d.*\s(\S+)\s*$)", c));
  int h = find_line(s, "  CPU ");
  for (size_t i = size_t(h + 1); h >= 0 && i < s.size(); ++i) {
    std::smatch m;
    if (std::regex_match(s[i].text, m, row)) return m[1];
  }
  return "";
}

}  // namespace

TEST_F(Replay, XferColumnShowsTheModelOfTheIntervalShown) {
  for (int step = 0; step < 2; ++step) {
    if (step) keys("TTTTT");  // sample 7: CPU 3's idle spike
    const CoherenceSummary sum = model_shown(*feed);
    Screen s = screen();
    ASSERT_NE(line(s, size_t(find_line(s, "  CPU "))).find("xfer/s"), std::string::npos) << text(s);
    for (int c = 0; c < 16; ++c) {
      ASSERT_GT(sum.cpu_xfers_per_s(c), 0) << c;
      EXPECT_EQ(xfer_cell(s, c), format_rate(sum.cpu_xfers_per_s(c))) << "CPU " << c << "\n" << text(s);
    }
    // Plain output (top -b, replay | cat) has the same cells.
    std::string plain = app->render_text();
    EXPECT_NE(plain.find(" " + format_rate(sum.cpu_xfers_per_s(0)) + "\n"), std::string::npos) << plain;
  }
}

TEST_F(Replay, SortByXferPerSecond) {
  TuiOptions o;
  o.parse_time = parse_seconds;
  o.sort_col = find_column("xfer/s");  // --sort xfer/s
  ASSERT_GT(o.sort_col, 0);
  app = std::make_unique<TuiApp>(*feed, o);
  const CoherenceSummary sum = model_shown(*feed);
  int best = 0;
  for (int c = 1; c < 16; ++c)
    if (sum.cpu_xfers_per_s(c) > sum.cpu_xfers_per_s(best)) best = c;
  Screen s = screen();
  EXPECT_NE(text(s).find("sorted by xfer/s (highest first)"), std::string::npos) << text(s);
  EXPECT_EQ(first_cpu(s), best) << text(s);
  // The sort keys reach it, and w scores intervals by it.
  app = std::make_unique<TuiApp>(*feed, TuiOptions{});
  while (app->sort_col() != find_column("xfer/s")) keys(">");
  EXPECT_EQ(first_cpu(screen()), best);
  double worst = -1;
  size_t at = 0;
  feed->jump(0);
  for (;;) {
    double peak = 0;
    const CoherenceSummary m = model_shown(*feed);
    for (int c = 0; c < 16; ++c) peak = std::max(peak, m.cpu_xfers_per_s(c));
    if (peak > worst) worst = peak, at = feed->position();
    if (feed->position() + 1 >= feed->samples()) break;
    feed->step(1);
  }
  EXPECT_EQ(feed->position(), 10u);
  feed->jump(0);
  keys("w");
  EXPECT_EQ(feed->position(), at) << app->message();
  EXPECT_EQ(app->message().rfind("w: worst is sample", 0), 0u) << app->message();
}

// A recording made with --exact: the lines view shows, next to the model's xfer/s, the
// exact count and the gap model of the interval's records (ExactAccumulator::interval():
// the later sample's records after the earlier one's), and says which figure is which.
TEST(TuiReplayExact, LinesViewShowsExactAndGapNextToTheModel) {
  ReplayFeed feed(RecordingReader::open(std::string(SCHEDHOT_TEST_DATA) + "/v1.3-exact.shot"));
  TuiOptions o;
  o.parse_time = parse_seconds;
  o.utf8 = false;
  TuiApp app(feed, o);
  ASSERT_TRUE(app.on_key('l'));
  int with_exact = 0, nonzero = 0;
  for (size_t k = 1; k < feed.samples(); k += 3) {
    ASSERT_TRUE(feed.seek(k));
    SCOPED_TRACE(fmt::format("position {}", k));
    const Interval iv(feed.meta(), *feed.first(), *feed.last());
    ASSERT_TRUE(feed.last()->exact.has_value()) << "every sample after the first has an EXACT frame";
    ExactAccumulator x(feed.meta());
    x.interval(feed.first()->exact ? &*feed.first()->exact : nullptr, iv.seconds(), *feed.last()->exact);
    const CoherenceSummary sum = model_shown(feed);
    const std::vector<LineRow> rows = line_rows(sum, XferCost{}, &x);
    const Screen s = app.render(200, 50);
    const std::string t = text(s);
    const int title = find_line(s, "Cachelines: ");
    ASSERT_GE(title, 0) << t;
    EXPECT_NE(line(s, size_t(title)).find("xfer/s: independent arrivals (model)  exact/s: --exact records  gap/s: their gap model"),
              std::string::npos) << t;
    const std::string head = line(s, size_t(title + 2));
    EXPECT_NE(head.find("  xfer/s  exact/s    gap/s     KB/s"), std::string::npos) << head;
    EXPECT_NE(t.find(fmt::format("exact/s: the interval's {} --exact records", x.records())), std::string::npos) << t;
    for (size_t i = 0; i < rows.size(); ++i) {
      ASSERT_TRUE(rows[i].exact_per_s && rows[i].gap_per_s);
      const std::string l = line(s, size_t(title + 3) + i);
      // read/s write/s xfer/s exact/s gap/s, in that order.
      EXPECT_NE(l.find(fmt::format(" {:>8} {:>8} {:>8} ", format_rate(rows[i].xfers_per_s), format_rate(*rows[i].exact_per_s),
                                   format_rate(*rows[i].gap_per_s))),
                std::string::npos)
          << l;
      ++with_exact;
      nonzero += *rows[i].exact_per_s > 0;
    }
    // Each row's exact figure is the exact count of that line in the interval.
    for (const LineSummary& ls : sum.lines)
      for (const LineRow& r : rows)
        if (r.name == ls.name) {
          EXPECT_DOUBLE_EQ(*r.exact_per_s, x.traffic(ls.key).value_or(LineTraffic{}).total()) << r.name;
          EXPECT_DOUBLE_EQ(*r.gap_per_s, x.gap_traffic(ls.key).value_or(LineTraffic{}).total()) << r.name;
        }
  }
  EXPECT_GT(with_exact, 10);
  EXPECT_EQ(nonzero, 0) << "its records are nohz_kick's reads of the nohz line: no transfer";
}

// Without EXACT frames the lines view has the model only, and says it is the model.
TEST_F(Replay, LinesViewSaysTheEstimateWithoutExactColumns) {
  keys("l");
  const Screen s = screen();
  const std::string t = text(s);
  const int title = find_line(s, "Cachelines: ");
  ASSERT_GE(title, 0) << t;
  EXPECT_NE(line(s, size_t(title)).find("xfer/s: independent arrivals (model)  sorted by xfer/s"), std::string::npos) << t;
  EXPECT_EQ(t.find("exact/s"), std::string::npos) << t;
  EXPECT_EQ(t.find("gap/s"), std::string::npos) << t;
}

TEST_F(Replay, LinesViewOnL) {
  EXPECT_EQ(line(screen(), 49).find("l lines") != std::string::npos, true) << line(screen(), 49);
  keys("l");
  EXPECT_EQ(app->view(), View::lines);
  for (int step = 0; step < 2; ++step) {
    if (step) keys("TTTTT");
    const CoherenceSummary sum = model_shown(*feed);
    const std::vector<LineRow> rows = line_rows(sum, XferCost{});
    ASSERT_FALSE(rows.empty());
    Screen s = screen();
    std::string t = text(s);
    const int title = find_line(s, "Cachelines: ");
    ASSERT_GE(title, 0) << t;
    EXPECT_EQ(line(s, size_t(title)).rfind(fmt::format("Cachelines: {} modeled lines over 1 s", rows.size()), 0), 0u) << t;
    EXPECT_EQ(line(s, size_t(title + 1)), "fixes: layout not recorded") << t;
    EXPECT_EQ(line(s, size_t(title + 2)).rfind(" LINE ", 0), 0u) << t;
    // The rows: the model's lines, hottest first, with their figures.
    for (size_t i = 0; i < rows.size(); ++i) {
      const std::string l = line(s, size_t(title + 3) + i);
      EXPECT_EQ(l.substr(1, rows[i].name.size()), rows[i].name) << t;
      EXPECT_NE(l.find(" " + format_rate(rows[i].reads_per_s) + " "), std::string::npos) << l;
      EXPECT_NE(l.find(" " + format_rate(rows[i].xfers_per_s) + " "), std::string::npos) << l;
      EXPECT_NE(l.find(fmt::format(" {:.1f} ", rows[i].kb_per_s)), std::string::npos) << l;
    }
    // Below them, the what-ifs.
    EXPECT_EQ(line(s, size_t(title + 3) + rows.size()).rfind("what-if ", 0), 0u) << t;
    for (const WhatIfResult& w : sum.what_if) EXPECT_NE(t.find("what-if " + w.what.title), std::string::npos) << t;
  }
  // The header's fixes, once.
  std::string head = text(screen());
  EXPECT_NE(head.find("  fixes: layout not recorded\n"), std::string::npos) << head;
  keys("c");
  EXPECT_EQ(app->view(), View::cpus);
  keys("l");
  ASSERT_TRUE(app->on_key(kKeyEsc));
  EXPECT_EQ(app->view(), View::cpus);
  keys("?");
  EXPECT_NE(text(screen()).find("  l                 cachelines view"), std::string::npos) << text(screen());
}

TEST_F(Replay, SummaryScrollsWhereItDoesNotFit) {
  keys("s");
  Screen s = screen(60, 12);  // header 4 lines, title, PROBE line, 5 of the 9 probes, key line
  EXPECT_EQ(line(s, 4).rfind("Summary per probe over all CPUs, 1 s  rows 1-5 of 9", 0), 0u) << text(s);
  EXPECT_EQ(line(s, 6).substr(0, 13), "nohz_exit    ");
  ASSERT_TRUE(app->on_key(kKeyEnd));
  s = screen(60, 12);
  EXPECT_EQ(line(s, 4).rfind("Summary per probe over all CPUs, 1 s  rows 5-9 of 9", 0), 0u) << text(s);
  EXPECT_EQ(line(s, 10).substr(0, 13), "idle         ");
  EXPECT_EQ(line(s, 8).substr(0, 35), "bcast_lock   unavailable: fentry re");
  EXPECT_EQ(text(screen()).find("rows"), std::string::npos) << "all 9 fit at 160x50: no rows note";
  keys("cs");  // back to the summary: from its first line
  EXPECT_EQ(line(screen(60, 12), 6).substr(0, 13), "nohz_exit    ");
}

TEST(TuiLive, SmallTerminalShowsTheTableAndTheKeyLine) {
  TwoSamples feed;
  TuiApp app(feed, TuiOptions{});
  Screen s = app.render(60, 12);
  ASSERT_EQ(s.size(), 12u);
  EXPECT_GE(rows_under(s, "  CPU ", std::regex(R"(^ +\d+ +\d)")), kMinTableRows) << text(s);
  EXPECT_EQ(s.back().text.rfind("q quit  ? help  space pause", 0), 0u) << text(s);
}

TEST_F(Replay, HelpAndProbeDetailsScrollOnASmallTerminal) {
  const std::vector<Line> all = render_help(false, 60);
  ASSERT_GT(all.size(), 11u);  // taller than 60x12: it scrolls
  keys("?");
  EXPECT_EQ(app->overlay(), Overlay::help);
  Screen s = screen(60, 12);
  ASSERT_EQ(s.size(), 12u);
  EXPECT_EQ(line(s, 0), "schedhot replay: keys");
  EXPECT_EQ(s.back().text.rfind(fmt::format("lines 1-11 of {}  arrows PgUp PgDn scroll", all.size()), 0), 0u)
      << s.back().text;
  // Down scrolls one line at a time through every line of the help, and stops at the end.
  for (size_t i = 0; i + 11 <= all.size(); ++i) {
    s = screen(60, 12);
    EXPECT_EQ(line(s, 0), all[i].text) << i;
    EXPECT_EQ(line(s, 10), all[i + 10].text) << i;
    ASSERT_TRUE(app->on_key(kKeyDown));
    EXPECT_EQ(app->overlay(), Overlay::help);
  }
  s = screen(60, 12);
  EXPECT_EQ(line(s, 10), all.back().text);
  EXPECT_NE(s.back().text.find(fmt::format("-{} of {}", all.size(), all.size())), std::string::npos) << s.back().text;
  ASSERT_TRUE(app->on_key(kKeyPgUp));
  const size_t last_top = all.size() - 11;  // PgUp: a page (11 lines) back
  EXPECT_EQ(line(screen(60, 12), 0), all[last_top > 11 ? last_top - 11 : 0].text);
  ASSERT_TRUE(app->on_key(kKeyHome));
  EXPECT_EQ(line(screen(60, 12), 0), "schedhot replay: keys");
  keys("x");  // any other key closes it, and is not taken as a command
  EXPECT_EQ(app->overlay(), Overlay::none);
  EXPECT_EQ(app->message(), "");
  // At a normal size the help fits: no scrolling, "any key closes".
  keys("?");
  s = screen();
  EXPECT_EQ(s.back().text.rfind("any key closes", 0), 0u);
  EXPECT_NE(text(s).find("  p                 probes: each one's backend"), std::string::npos);
  keys(" ");

  // p: every probe with its backend, bcast_lock with its whole reason (wrapped at 60).
  keys("p");
  EXPECT_EQ(app->overlay(), Overlay::probes);
  std::string t = text(screen());
  EXPECT_NE(t.find("  nohz_kick    kprobe sched_balance_trigger (nohz_balancer_kick inlined)"), std::string::npos) << t;
  EXPECT_NE(t.find("  bcast_lock   unavailable: fentry refused: EPERM (kernel lockdown or an LSM denies BPF tracing "
                   "programs); kprobes not built into this kernel (CONFIG_KPROBES=n)"),
            std::string::npos)
      << t;
  s = screen(60, 12);
  for (const Line& l : s) EXPECT_LE(l.width(), 60);
  ASSERT_TRUE(app->on_key(kKeyEnd));
  t = text(screen(60, 12));
  EXPECT_NE(t.find("  bcast_lock   unavailable: fentry refused: EPERM (kernel"), std::string::npos) << t;
  EXPECT_NE(t.find("(CONFIG_KPROBES=n)"), std::string::npos) << t;
  keys("q");  // closes the overlay; does not quit
  EXPECT_EQ(app->overlay(), Overlay::none);
  EXPECT_FALSE(app->on_key('q'));
}

TEST_F(Replay, QTypedAheadOfSlowKeysQuitsUnlessAPromptTakesIt) {
  using V = std::vector<int>;
  EXPECT_TRUE(tui::quits_ahead(*app, V{'w', 'w', 'w', 'q'}));
  EXPECT_FALSE(tui::quits_ahead(*app, V{'w', 'T'}));
  EXPECT_FALSE(tui::quits_ahead(*app, V{'/', '1', 'q'})) << "after / the q is the filter's text";
  EXPECT_FALSE(tui::quits_ahead(*app, V{'j', 'q'}));
  // q in the help or probes overlay closes it (a fresh user's ? q quit top).
  EXPECT_FALSE(tui::quits_ahead(*app, V{'?', 'q'}));
  EXPECT_FALSE(tui::quits_ahead(*app, V{'p', kKeyDown, 'q'}));
  EXPECT_TRUE(tui::quits_ahead(*app, V{'?', 'q', 'q'}));
  keys("?");
  EXPECT_FALSE(tui::quits_ahead(*app, V{'q'}));
  EXPECT_TRUE(tui::quits_ahead(*app, V{'x', 'q'}));
  keys("x");
  keys("/");
  ASSERT_TRUE(app->in_prompt());
  EXPECT_FALSE(tui::quits_ahead(*app, V{'q'}));
}

TEST_F(Replay, Plays) {
  EXPECT_EQ(feed->wait_ms(), -1);
  keys("++++");
  EXPECT_EQ(feed->speed(), 16);
  EXPECT_EQ(app->message(), "speed 16x");
  keys("+");
  EXPECT_EQ(feed->speed(), 16);
  keys(" ");
  EXPECT_TRUE(feed->playing());
  EXPECT_LE(feed->wait_ms(), 63);
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (feed->position() < 3 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(std::max(feed->wait_ms(), 1)));
    feed->update();
  }
  EXPECT_GE(feed->position(), 3u);
  keys(" ");
  EXPECT_FALSE(feed->playing());
  EXPECT_NE(text(screen()).find("paused (space plays)"), std::string::npos);
}

TEST(TuiLive, LiveOnlyAndReplayOnlyKeys) {
  TwoSamples feed;
  TuiOptions o;
  TuiApp app(feed, o);
  for (char k : std::string("tTw")) {
    ASSERT_TRUE(app.on_key(k));
    EXPECT_EQ(app.message(), fmt::format("{}: only in replay", k));
  }
  ASSERT_TRUE(app.on_key('j'));
  EXPECT_EQ(app.message(), "j: only in replay");
  ASSERT_TRUE(app.on_key('+'));
  EXPECT_EQ(app.message(), "longer");
  ASSERT_TRUE(app.on_key(' '));
  Screen s = app.render(160, 40);
  EXPECT_NE(text(s).find("schedhot top  host fixture16"), std::string::npos);
  EXPECT_NE(text(s).find("lost 0  cost BPF 0.100 ms/s  paused"), std::string::npos);
  EXPECT_NE(line(s, 39).find("+/- interval"), std::string::npos);
  // Batch text: header and every row, no padding.
  std::string b = app.render_text();
  EXPECT_NE(b.find("  CPU  idle/s"), std::string::npos);
  EXPECT_NE(b.find("\n   15     250        50.0"), std::string::npos);
  EXPECT_EQ(b.find(" \n"), std::string::npos);
}

TEST(TuiReplayFeed, MissedSamples) {
  EXPECT_EQ(missed_samples(1'000'000'000, 1'000'000'000), 0u);
  EXPECT_EQ(missed_samples(1'400'000'000, 1'000'000'000), 0u);
  EXPECT_EQ(missed_samples(1'500'000'000, 1'000'000'000), 1u);
  EXPECT_EQ(missed_samples(3'000'000'000, 1'000'000'000), 2u);
  EXPECT_EQ(missed_samples(5, 0), 0u);
}

TEST(TuiReplayFeed, NeedsTwoSamples) {
  Meta m = fx::fixture_meta();
  auto s = fx::fixture_samples(m);
  std::string path = ::testing::TempDir() + "/tui_one_sample.shot";
  std::remove(path.c_str());
  {
    RecordingWriter w(path, m);
    w.write_sample(s[0]);
    w.close();
  }
  try {
    ReplayFeed f(RecordingReader::open(path));
    ADD_FAILURE() << "a one-sample recording was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "the recording has 1 readable sample: replay needs two for rates");
  }
  std::remove(path.c_str());
}

TEST(TuiReplayFeed, SaysWhenTheRecordingIsNotClosedOrDamaged) {
  const std::string src = std::string(SCHEDHOT_TEST_DATA) + "/tui16.shot";
  std::string bytes;
  {
    std::ifstream in(src, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  auto r = RecordingReader::open(src);
  const auto last = r->sample_positions().back();
  uint32_t payload = 0;
  std::memcpy(&payload, bytes.data() + last.offset + 4, 4);
  const size_t after_last = size_t(last.offset) + 24 + payload;  // where INDEX and END begin
  const std::string path = ::testing::TempDir() + "/tui_cut.shot";
  auto feed_of = [&](size_t cut) {
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), std::streamsize(cut));
    return std::make_unique<ReplayFeed>(RecordingReader::open(path));
  };
  EXPECT_EQ(ReplayFeed(RecordingReader::open(src)).source_note(), "");
  auto unclosed = feed_of(after_last);
  EXPECT_EQ(unclosed->source_note(), "recording not closed by its writer");
  EXPECT_EQ(unclosed->samples(), 11u);
  auto cut = feed_of(after_last - 5);
  EXPECT_EQ(cut->samples(), 10u);
  EXPECT_NE(cut->source_note().find(fmt::format("recording damaged at byte {}", last.offset)), std::string::npos)
      << cut->source_note();
  // A bad frame in the middle of a closed file (its index intact, so the index alone would
  // list all 11 samples): the replay ends before it and says so.
  const auto sixth = r->sample_positions()[5];
  std::string flipped = bytes;
  flipped[size_t(sixth.offset) + 30] ^= 0x10;
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(flipped.data(), std::streamsize(flipped.size()));
  ReplayFeed mid(RecordingReader::open(path));
  EXPECT_EQ(mid.samples(), 5u);
  EXPECT_NE(mid.source_note().find(fmt::format("recording damaged at byte {}", sixth.offset)), std::string::npos)
      << mid.source_note();
  // Plain output (not interactive) keeps the note, drops "paused".
  TuiApp app(*unclosed, TuiOptions{});
  std::string text = app.render_text();
  EXPECT_NE(text.find("lost 0  cost not recorded  recording not closed by its writer"), std::string::npos) << text;
  EXPECT_EQ(text.find("paused"), std::string::npos);
  std::remove(path.c_str());
}

TEST(TuiReplayFeed, FollowsAWriterThroughARotation) {
  Meta m = fx::fixture_meta();
  auto s = fx::fixture_samples(m);
  const std::string path = ::testing::TempDir() + "/tui_follow.shot";
  std::remove(path.c_str());
  std::remove((path + ".1").c_str());
  auto poll = [](ReplayFeed& f) {  // one poll period later, as the UI loop calls it
    std::this_thread::sleep_for(std::chrono::milliseconds(ReplayFeed::kFollowPollMs + 20));
    return f.update();
  };
  auto w = std::make_unique<RecordingWriter>(path, m);
  w->write_sample(s[0]);
  FollowOptions fo;
  fo.enabled = true;
  ReplayFeed f(RecordingReader::open(path, fo), true);
  EXPECT_EQ(f.first(), nullptr);
  EXPECT_EQ(f.when(), "following " + path + ": 1 sample so far");
  EXPECT_EQ(f.source_note(), "");  // not closed yet is expected while following

  // Samples arrive: the newest interval is shown.
  w->write_sample(s[1]);
  w->write_sample(s[2]);
  EXPECT_TRUE(poll(f));
  EXPECT_EQ(f.samples(), 3u);
  EXPECT_EQ(f.position(), 2u);
  ASSERT_NE(f.last(), nullptr);
  EXPECT_EQ(f.last()->seq, 2u);
  EXPECT_EQ(f.state(), "following the writer");

  // Stepped back, the view stays where it is while samples arrive...
  EXPECT_EQ(f.step(-1), "");
  w->write_sample(s[3]);
  EXPECT_TRUE(poll(f));
  EXPECT_EQ(f.samples(), 4u);
  EXPECT_EQ(f.position(), 1u);
  EXPECT_EQ(f.state(), "following; showing an older sample (T to the last resumes)");
  // ...and follows again once back at the last sample.
  EXPECT_EQ(f.step(2), "");
  w->write_sample(s[4]);
  EXPECT_TRUE(poll(f));
  EXPECT_EQ(f.position(), 4u);
  EXPECT_EQ(f.last()->seq, 4u);
  EXPECT_FALSE(poll(f));  // nothing new

  // Plain output at the last sample: await_more() finds the next one.
  w->write_sample(s[5]);
  EXPECT_TRUE(f.await_more());
  EXPECT_EQ(f.step(1), "");
  EXPECT_EQ(f.last()->seq, 5u);

  // The writer closes and rotates: FILE -> FILE.1, a new FILE that starts, as
  // RotatingWriter's do, with the closed file's last sample.
  w->close();
  w.reset();
  EXPECT_TRUE(poll(f));
  EXPECT_EQ(f.source_note(), "");
  ASSERT_EQ(std::rename(path.c_str(), (path + ".1").c_str()), 0);
  w = std::make_unique<RecordingWriter>(path, m);
  EXPECT_FALSE(poll(f)) << "a new FILE without a sample yet is looked at again later";
  EXPECT_EQ(f.files(), 1);
  w->write_sample(s[5]);
  w->write_sample(s[6]);
  w->write_sample(s[7]);
  EXPECT_TRUE(poll(f));
  EXPECT_EQ(f.files(), 2);
  EXPECT_EQ(f.samples(), 3u);
  EXPECT_EQ(f.position(), 2u);
  EXPECT_EQ(f.last()->seq, 7u);
  EXPECT_EQ(f.state(), "following the writer (file 2 after rotation)");
  EXPECT_EQ(f.plain_state(), "file 2 after rotation") << "plain output says it too";

  // Closed for good: following ends after the rotation grace.
  w->close();
  w.reset();
  EXPECT_TRUE(poll(f));
  EXPECT_TRUE(f.await_more());  // within the grace a rotation may still come
  std::this_thread::sleep_for(std::chrono::milliseconds(ReplayFeed::kRotateGraceMs));
  EXPECT_TRUE(f.update()) << "the end of following changes the state line: the UI redraws";
  EXPECT_FALSE(f.update());
  EXPECT_FALSE(f.await_more());
  EXPECT_EQ(f.state(), "followed to the writer's close (file 2 after rotation)");
  std::remove(path.c_str());
  std::remove((path + ".1").c_str());
}

TEST(TuiReplayFeed, AFollowerThatLagsFindsTheLastFileAlreadyClosed) {
  // The writer rotates and closes the new FILE before the follower looks again (a slow
  // terminal, a loaded machine): the closed file is read from its index, so no END frame
  // is met. Following must still end after the grace (it used to wait for ever).
  Meta m = fx::fixture_meta();
  auto s = fx::fixture_samples(m);
  const std::string path = ::testing::TempDir() + "/tui_follow_lag.shot";
  std::remove(path.c_str());
  std::remove((path + ".1").c_str());
  auto w = std::make_unique<RecordingWriter>(path, m);
  w->write_sample(s[0]);
  w->write_sample(s[1]);
  FollowOptions fo;
  fo.enabled = true;
  ReplayFeed f(RecordingReader::open(path, fo), true);
  EXPECT_EQ(f.samples(), 2u);
  w->close();
  ASSERT_EQ(std::rename(path.c_str(), (path + ".1").c_str()), 0);
  w = std::make_unique<RecordingWriter>(path, m);
  for (int i = 1; i < 5; ++i) w->write_sample(s[i]);
  w->close();
  w.reset();
  ASSERT_TRUE(RecordingReader::open(path)->index().has_value()) << "the case needs a file closed with an index";
  std::this_thread::sleep_for(std::chrono::milliseconds(ReplayFeed::kFollowPollMs + 20));
  EXPECT_TRUE(f.update());  // END of file 1
  std::this_thread::sleep_for(std::chrono::milliseconds(ReplayFeed::kFollowPollMs + 20));
  EXPECT_TRUE(f.update());  // file 2, already closed
  EXPECT_EQ(f.files(), 2);
  EXPECT_EQ(f.samples(), 4u);
  EXPECT_EQ(f.last()->seq, 4u);
  std::this_thread::sleep_for(std::chrono::milliseconds(ReplayFeed::kRotateGraceMs + 20));
  EXPECT_TRUE(f.update()) << "the end of following changes the state line";
  EXPECT_FALSE(f.await_more());
  EXPECT_EQ(f.state(), "followed to the writer's close (file 2 after rotation)");
  std::remove(path.c_str());
  std::remove((path + ".1").c_str());
}

TEST(TuiReplayFeed, FollowingStopsWhenAnotherRunsRecordingReplacesTheFile) {
  Meta m = fx::fixture_meta();
  auto s = fx::fixture_samples(m);
  const std::string path = ::testing::TempDir() + "/tui_follow_foreign.shot";
  std::remove(path.c_str());
  {
    RecordingWriter w(path, m);
    w.write_sample(s[0]);
    w.write_sample(s[1]);
    w.write_sample(s[2]);
  }
  FollowOptions fo;
  fo.enabled = true;
  ReplayFeed f(RecordingReader::open(path, fo), true);
  EXPECT_EQ(f.samples(), 3u);
  // mv other-host.shot FILE: not a rotation of this run.
  Meta other = m;
  other.host.hostname = "elsewhere";
  ASSERT_EQ(std::remove(path.c_str()), 0);
  {
    RecordingWriter w(path, other);
    w.write_sample(s[0]);
    w.write_sample(s[1]);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(ReplayFeed::kFollowPollMs + 20));
  EXPECT_TRUE(f.update());
  EXPECT_EQ(f.files(), 1) << "not counted as file 2 after rotation";
  EXPECT_NE(f.source_note().find("was replaced by a recording of another run (elsewhere"), std::string::npos)
      << f.source_note();
  EXPECT_EQ(f.foreign(), f.source_note());
  EXPECT_FALSE(f.await_more());

  // The same host, a restarted recorder (its first sample is not the closed file's last):
  // not a rotation either.
  ASSERT_EQ(std::remove(path.c_str()), 0);
  {
    RecordingWriter w(path, m);
    w.write_sample(s[0]);
    w.write_sample(s[1]);
    w.write_sample(s[2]);
  }
  ReplayFeed g(RecordingReader::open(path, fo), true);
  ASSERT_EQ(std::remove(path.c_str()), 0);
  {
    RecordingWriter w(path, m);
    w.write_sample(s[4]);
    w.write_sample(s[5]);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(ReplayFeed::kFollowPollMs + 20));
  EXPECT_TRUE(g.update());
  EXPECT_EQ(g.files(), 1);
  EXPECT_NE(g.foreign().find("was replaced by a recording of another run"), std::string::npos) << g.foreign();
  std::remove(path.c_str());
}

// A recording with CPU 3 offline at the start (possible 0-7, online 0-2) and online from
// sample 4: replay lists it from the first interval (as not measured, "-", until it comes
// online), the filter takes it, and CPUs never online are refused.
TEST(TuiReplayFeed, ShowsACpuOnlinedMidRun) {
  using namespace schedhot::testing;
  TempDir dir("tui_hotplug");
  Meta m = synthetic_meta(8);
  m.host.online = {0, 1, 2};
  write_samples(dir / "h.shot", m, make_hotplug_samples(m, 8, 3, 4, 100));
  ReplayFeed feed(RecordingReader::open(dir / "h.shot"));
  EXPECT_EQ(feed.online_cpus(), (std::vector<int>{0, 1, 2, 3}));
  TuiOptions o;
  o.parse_time = parse_seconds;
  o.utf8 = false;
  o.sort_col = 0;  // by CPU
  TuiApp app(feed, o);
  auto row_of = [&](int cpu) {
    Screen s = app.render(160, 30);
    int h = find_line(s, "  CPU ");
    for (size_t i = size_t(h + 1); h >= 0 && i < s.size(); ++i)
      if (s[i].text.size() > 5 && std::stoi(s[i].text.substr(0, 5)) == cpu) return s[i].text;
    return std::string("no row for CPU ") + std::to_string(cpu) + " in\n" + text(s);
  };
  EXPECT_NE(text(app.render(160, 30)).find("Per CPU: 4 of 4 CPUs"), std::string::npos) << text(app.render(160, 30));
  EXPECT_EQ(app.shown_cpus(), (std::vector<int>{0, 1, 2, 3}));
  // Interval 0-1: CPU 3 offline at both ends: every number column is "-".
  std::string r3 = row_of(3), r0 = row_of(0);
  EXPECT_EQ(r3.find_first_of("0123456789", 5), std::string::npos) << r3;
  EXPECT_NE(r3.find('-'), std::string::npos) << r3;
  EXPECT_NE(r0.find_first_of("123456789", 5), std::string::npos) << r0;
  ASSERT_TRUE(feed.seek(5));
  r3 = row_of(3);
  EXPECT_NE(r3.find_first_of("123456789", 5), std::string::npos) << r3;
  for (char k : std::string("/3\n")) ASSERT_TRUE(app.on_key(k == '\n' ? kKeyEnter : k));
  EXPECT_EQ(app.filter(), (std::vector<int>{3}));
  for (char k : std::string("/\x15" "6\n")) ASSERT_TRUE(app.on_key(k == '\n' ? kKeyEnter : k));
  EXPECT_EQ(app.filter(), (std::vector<int>{3}));
  EXPECT_NE(app.message().find("online at some point: 0-3"), std::string::npos) << app.message();
}

// ---- the crash handler -----------------------------------------------------------

namespace {

/// Recurses until the stack runs out (a frame of 4 KiB that the compiler cannot drop).
__attribute__((noinline)) int overflow_stack(int depth) {
  if (depth < 0) return 0;  // never: keeps the recursion from looking unconditional
  volatile char frame[4096];
  frame[0] = static_cast<char>(depth);
  frame[sizeof frame - 1] = 1;
  return overflow_stack(depth + 1) + frame[0] + frame[sizeof frame - 1];
}

}  // namespace

TEST(TuiCrash, AStackOverflowStillRestoresTheTerminal) {
  // The handler must run on its own stack: at a stack overflow the normal one has no room
  // and, without sigaltstack + SA_ONSTACK, the kernel kills the process with the terminal
  // left on the alternate screen, cursor hidden. A child overflows its stack (limited to
  // 1 MiB) with the handler armed; what the handler writes to stdout is read from a pipe.
  int out[2];
  ASSERT_EQ(pipe(out), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    close(out[0]);
    struct rlimit lim {1 << 20, 1 << 20};
    setrlimit(RLIMIT_STACK, &lim);
    arm_crash_restore("restored\n");
    _exit(overflow_stack(0) == 0 ? 3 : 4);  // never reached
  }
  close(out[1]);
  std::string got;
  char buf[256];
  for (ssize_t n; (n = read(out[0], buf, sizeof buf)) > 0;) got.append(buf, size_t(n));
  close(out[0]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_EQ(got, "restored\n") << "the crash handler did not run";
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(WTERMSIG(status), SIGSEGV) << "it then dies of the signal";
}

TEST(TuiCrash, DisarmingPutsBackTheSignalActionsAndStack) {
  struct sigaction before {}, armed {}, after {};
  stack_t ss_before {}, ss_armed {}, ss_after {};
  sigaction(SIGSEGV, nullptr, &before);
  sigaltstack(nullptr, &ss_before);
  arm_crash_restore("");
  sigaction(SIGSEGV, nullptr, &armed);
  sigaltstack(nullptr, &ss_armed);
  disarm_crash_restore();
  sigaction(SIGSEGV, nullptr, &after);
  sigaltstack(nullptr, &ss_after);
  EXPECT_TRUE(armed.sa_flags & SA_ONSTACK) << "the handler runs on the alternate stack";
  EXPECT_TRUE(armed.sa_flags & SA_RESETHAND);
  EXPECT_FALSE(ss_armed.ss_flags & SS_DISABLE) << "an alternate stack is installed";
  EXPECT_GE(ss_armed.ss_size, size_t(MINSIGSTKSZ));
  EXPECT_EQ(after.sa_handler, before.sa_handler);
  EXPECT_EQ(after.sa_flags & (SA_ONSTACK | SA_RESETHAND), before.sa_flags & (SA_ONSTACK | SA_RESETHAND));
  EXPECT_EQ(ss_after.ss_sp, ss_before.ss_sp);
  EXPECT_EQ(ss_after.ss_flags, ss_before.ss_flags);
}

// ---- the tails view (a) and the rule editor (A), issue 31 -----------------------------

namespace {

/// Replay of tests/data/v1.5-catch.shot (70 samples, one rule: cpupri_set>20us).
struct CatchUi {
  CatchUi() {
    feed = std::make_unique<ReplayFeed>(RecordingReader::open(std::string(SCHEDHOT_TEST_DATA) + "/v1.5-catch.shot"));
    TuiOptions o;
    o.utf8 = false;
    app = std::make_unique<TuiApp>(*feed, o);
  }
  Screen screen(int w = 160, int h = 60) { return app->render(w, h); }
  std::unique_ptr<ReplayFeed> feed;
  std::unique_ptr<TuiApp> app;
};
class CatchReplay : public ::testing::Test, public CatchUi {};

/// The tails view's lines: from its title to the key line (excluded).
std::vector<std::string> tails_lines(const Screen& s) {
  std::vector<std::string> out;
  int at = find_line(s, "Tails (--catch)");
  if (at < 0) return out;
  for (size_t i = size_t(at); i + 1 < s.size(); ++i) {
    std::string t = s[i].text;
    t.erase(t.find_last_not_of(' ') + 1);
    out.push_back(t);
  }
  while (!out.empty() && out.back().empty()) out.pop_back();
  return out;
}

/// A live-like feed with rules but no catch counters: the editor's prompt and messages.
class RuledLive : public TwoSamples {
 public:
  RuledLive() { rules_ = parse_catch_rules("cpupri_set>20us", 100); }
  const std::vector<CatchRule>& catch_rules() const override { return rules_; }
  std::string set_catch_threshold(const std::string& probe, uint64_t ns) override {
    asked.emplace_back(probe, ns);
    return fmt::format("{} re-armed at >= {} ns", probe, ns);
  }
  std::vector<std::pair<std::string, uint64_t>> asked;

 private:
  std::vector<CatchRule> rules_;
};

}  // namespace

TEST_F(CatchReplay, TailsViewOfTheFirstInterval) {
  ASSERT_TRUE(app->on_key('a'));
  EXPECT_EQ(app->view(), View::tails);
  const std::vector<std::string> got = tails_lines(screen());
  // The synthetic recording's first interval: one event received (its counters say 0).
  const std::vector<std::string> want = {
      "Tails (--catch): 1 rule, interval 1 s  since start 1 s",
      "cpupri_set>20us  armed >= 20.0us, at most 100/s per CPU",
      "  interval 1.00 s:              0 caught       0/s  dropped 0 (rate) 0 (buffer)  1 received  = histogram >= 20.0us",
      "  since start 1.0 s:            0 caught       0/s  dropped 0 (rate) 0 (buffer)  1 received  = histogram >= 20.0us",
      "  durations since start:  p50 20.1us  p99 20.1us  max 20.1us",
      "  interrupts:             of 1 caught, 100 % had a softirq inside (25 % of their time)",
      "  steal:                  not kept on this machine (no paravirt steal clock)",
      "  last 1 of 1 event of the interval:",
      "         TIME  CPU DURATION  TASK                     DETAIL       STACK (innermost first)",
      "    +0.333333    0   20.1us  stress-ng-cpu/1000       RT->RT       cpupri_set+0x4c < enqueue_task_rt+0x1a2 < "
      "ttwu_do_activate+0x8e < ...",
      "  top stacks since start (1 of 1 unique, innermost first):",
      "          1 100 %  cpupri_set+0x4c < enqueue_task_rt+0x1a2 < ttwu_do_activate+0x8e < [unknown]",
      "  top tasks since start: stress-ng-cpu/1000 1",
  };
  EXPECT_EQ(got, want) << fmt::format("{}", fmt::join(got, "\n"));
  EXPECT_NE(line(screen(), 59).find("l lines  a tails"), std::string::npos) << line(screen(), 59);
}

TEST_F(CatchReplay, SinceStartAtTheLastSampleIsTheReportsWholeRecording) {
  // tests/data/golden/report-v1.5-catch.txt: the same TailAccumulator over the same window.
  ASSERT_TRUE(feed->seek(feed->samples() - 1));
  app->on_key('a');
  const std::vector<std::string> got = tails_lines(screen(200, 60));
  const std::string all = fmt::format("{}", fmt::join(got, "\n"));
  ASSERT_GE(got.size(), 4u) << all;
  EXPECT_EQ(got[3],
            "  since start 69.0 s:       47397 caught     687/s  dropped 48928 (rate) 46395 (buffer)  119 received  "
            "!= 378, histogram >= 20.0us: not accounted for")
      << all;
  EXPECT_NE(all.find("  durations since start:  p50 23.5us  p99 26.9us  max 26.9us"), std::string::npos) << all;
  EXPECT_NE(all.find("  interrupts:             of 119 caught, 66 % had a softirq inside (21 % of their time), 47 % had a "
                     "hard IRQ inside (11 % of their time)"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("        105  88 %  cpupri_set+0x4c < enqueue_task_rt+0x1a2 < ttwu_do_activate+0x8e < [unknown]"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("         14 without a stack"), std::string::npos) << all;
  EXPECT_NE(all.find("  top tasks since start: stress-ng-cpu/1000 63, kworker/1:2/1002 (of 1000) 42, kworker/1:2/1004 (of "
                     "1000) 14"),
            std::string::npos)
      << all;
}

TEST_F(CatchReplay, SinceStartFollowsTheReplayPositionBothWays) {
  app->on_key('a');
  ASSERT_TRUE(feed->seek(20));
  const Screen at20 = screen();
  ASSERT_TRUE(feed->seek(40));
  const Screen at40 = screen();
  EXPECT_NE(tails_lines(at20), tails_lines(at40));
  ASSERT_TRUE(feed->seek(20));  // back: read again from the start
  EXPECT_EQ(tails_lines(screen()), tails_lines(at20));
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(app->on_key('T'));  // forward one by one: read on
  EXPECT_EQ(feed->position(), 40u);
  EXPECT_EQ(tails_lines(screen()), tails_lines(at40));
  // A fresh feed at 40 agrees.
  CatchUi other;
  ASSERT_TRUE(other.feed->seek(40));
  other.app->on_key('a');
  EXPECT_EQ(tails_lines(other.screen()), tails_lines(at40));
}

TEST_F(CatchReplay, TheRuleEditorIsOnlyLive) {
  app->on_key('A');
  EXPECT_FALSE(app->in_prompt());
  EXPECT_EQ(app->message(), "A: the rule editor is only in top (live)");
}

TEST_F(Replay, TailsViewWithoutRules) {
  keys("a");
  const Screen s = screen();
  const int at = find_line(s, "Tails (--catch): 0 rules");
  ASSERT_GE(at, 0) << text(s);
  EXPECT_EQ(line(s, size_t(at + 1)).substr(0, std::strlen(kNoCatchRules)), kNoCatchRules);
}

TEST(TuiTails, TheRuleEditorReArmsThroughTheFeed) {
  RuledLive feed;
  TuiOptions o;
  o.utf8 = false;
  TuiApp app(feed, o);
  auto type = [&](const std::string& s) {
    for (char c : s) ASSERT_TRUE(app.on_key(c == '\n' ? kKeyEnter : c));
  };
  type("A");
  EXPECT_TRUE(app.in_prompt());
  EXPECT_EQ(app.view(), View::tails);
  Screen s = app.render(160, 40);
  EXPECT_EQ(s.back().text, "catch threshold PROBE>DURATION (now cpupri_set>20us; Esc cancels): _");
  type("cpupri_set>50us\n");
  EXPECT_FALSE(app.in_prompt());
  ASSERT_EQ(feed.asked.size(), 1u);
  EXPECT_EQ(feed.asked[0], std::make_pair(std::string("cpupri_set"), uint64_t(50'000)));
  EXPECT_EQ(app.message(), "A: cpupri_set re-armed at >= 50000 ns");
  type("Aidle>p99\n");
  EXPECT_EQ(app.message(), "A: only a duration (e.g. idle>500us): a percentile rule is given at the start (--catch)");
  type("Anonsense\n");
  EXPECT_EQ(app.message(), "A: 'nonsense' is not PROBE>DURATION (e.g. idle>500us)");
  type("Aidle>3parsecs\n");
  EXPECT_NE(app.message().find("3parsecs"), std::string::npos) << app.message();
  type("A");
  ASSERT_TRUE(app.on_key(kKeyEsc));
  EXPECT_FALSE(app.in_prompt());
  EXPECT_EQ(feed.asked.size(), 1u);
}

TEST(TuiTails, TheRuleEditorSaysWhenThereAreNoRules) {
  TwoSamples feed;
  TuiApp app(feed, TuiOptions{});
  ASSERT_TRUE(app.on_key('A'));
  EXPECT_FALSE(app.in_prompt());
  EXPECT_EQ(app.message(), std::string("A: ") + kNoCatchRules);
}

TEST_F(CatchReplay, AStepBackRestartsFromACheckpointWithTheSameFigures) {
  // 70 samples: a checkpoint before sample 64. Stepping back from 69 to 66 restarts there
  // (ReplayFeed::kTailsCheckpoint), and must show what a fresh replay at 66 shows.
  const auto fresh_at = [](size_t k) {  // a new replay's tails view at sample k
    CatchUi f;
    EXPECT_TRUE(f.feed->seek(k));
    f.app->on_key('a');
    return tails_lines(f.screen(200, 60));
  };
  ASSERT_TRUE(feed->seek(feed->samples() - 1));
  app->on_key('a');
  const std::vector<std::string> at_end = tails_lines(screen(200, 60));
  ASSERT_TRUE(feed->seek(66));
  const std::vector<std::string> back = tails_lines(screen(200, 60)), want = fresh_at(66);
  ASSERT_GE(want.size(), 4u);
  EXPECT_NE(at_end, want);
  EXPECT_EQ(back, want) << fmt::format("{}", fmt::join(back, "\n"));
  ASSERT_TRUE(feed->seek(3));  // before the first checkpoint: from the start
  EXPECT_EQ(tails_lines(screen(200, 60)), fresh_at(3));
}
