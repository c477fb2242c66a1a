// analysis/diff.h on synthetic recordings: the same recording against itself is no change
// (status 0), a host with another kernel and a proxy on one side are warned about, a
// file that cannot be read is one line and status 1, and 2x latency on a probe is
// significant with the right ratio (status 3).
#include <filesystem>
#include <optional>
#include <functional>
#include <regex>
#include <sstream>

#include <gtest/gtest.h>

#include "store/recording.h"
#include "test_recording_util.h"
#include "test_util.h"
#include "command/diff.h"
#include "output/diff_text.h"

using namespace schedhot;
using namespace schedhot::testing;

namespace {

std::string write_rec(const std::string& name, Meta m, uint64_t seed, uint64_t lat_scale = 1) {
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::filesystem::remove(path);
  RecordingWriter w(path, m, WriterOptions{});
  std::mt19937_64 rng(seed);
  Sample s = make_sample(m);
  w.write_sample(s);
  const int p = m.probe_index("cpupri_set");
  for (int i = 0; i < 30; ++i) {
    s.seq++;
    s.mono_ns += m.interval_ns;
    s.wall_ns += m.interval_ns;
    for (int c = 0; c < int(m.ncpus); ++c)
      for (int k = 0; k < 200; ++k) {
        s.probes[p].words.mut(word(m, p, c, "calls")) += 1;
        add_hist(m, s, p, c, "lat", (500 + rng() % 1000) * lat_scale);
      }
    w.write_sample(s);
  }
  w.close();
  return path;
}

/// 30 one-second intervals on every CPU: 200 cpupri_set calls timed lat(rng) ns and 50 idle
/// exits with residencies 10 x lat(rng) ns.
std::string write_rec_with(const std::string& name, Meta m, uint64_t seed, const std::function<uint64_t(std::mt19937_64&)>& lat) {
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::filesystem::remove(path);
  RecordingWriter w(path, m, WriterOptions{});
  std::mt19937_64 rng(seed);
  Sample s = make_sample(m);
  w.write_sample(s);
  const int p = m.probe_index("cpupri_set"), id = m.probe_index("idle");
  for (int i = 0; i < 30; ++i) {
    s.seq++;
    s.mono_ns += m.interval_ns;
    s.wall_ns += m.interval_ns;
    for (int c = 0; c < int(m.ncpus); ++c) {
      for (int k = 0; k < 200; ++k) {
        s.probes[p].words.mut(word(m, p, c, "calls")) += 1;
        add_hist(m, s, p, c, "lat", lat(rng));
      }
      for (int k = 0; k < 50; ++k) {
        s.probes[id].words.mut(word(m, id, c, "exits")) += 1;
        add_hist(m, s, id, c, "lat", 10 * lat(rng));
      }
    }
    w.write_sample(s);
  }
  w.close();
  return path;
}

uint64_t uniform(std::mt19937_64& r) { return 500 + r() % 1000; }
/// The same, with the top 20 % ten times longer: p90 p98 p99 move, p10 p50 do not.
uint64_t tail(std::mt19937_64& r) {
  const uint64_t v = uniform(r);
  return v > 1300 ? v * 10 : v;
}

}  // namespace

// issue 28 item 12: the significant percentiles are named (p50 unchanged, p90 moved), idle's
// block says residency, every latency column has one unit (us, in the header).
TEST(Diff, NamesTheSignificantPercentilesAndOneUnitPerColumn) {
  Meta m = synthetic_meta(4);
  DiffRequest req;
  std::string format = "text";  // an output format (output/format.h)
  req.a.file = write_rec_with("diff_t_a.shot", m, 11, uniform);
  req.b.file = write_rec_with("diff_t_b.shot", m, 12, tail);
  format = "json";
  CommandOutput o = diff_command(req, format);
  ASSERT_EQ(o.status, 3) << o.out;
  auto d = nlohmann::json::parse(o.out);
  for (auto& p : d["probes"])
    if (p["probe"] == "cpupri_set") {
      EXPECT_FALSE(p["latency_ns"]["p50"]["significant"].get<bool>()) << p.dump();
      EXPECT_TRUE(p["latency_ns"]["p90"]["significant"].get<bool>()) << p.dump();
    }
  format = "patch";
  o = diff_command(req, format);
  EXPECT_NE(o.out.find("- runtime for cpupri_set, nanoseconds:"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("- residency for idle, nanoseconds:"), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("runtime for idle"), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("(the change is beyond the noise: significant)"), std::string::npos) << o.out;
  const size_t at = o.out.find("  (beyond the noise, significant: p90 +");
  ASSERT_NE(at, std::string::npos) << o.out;
  const std::string line = o.out.substr(at, o.out.find('\n', at) - at);
  EXPECT_EQ(line.find("p50"), std::string::npos) << line;
  EXPECT_EQ(line.find("p10"), std::string::npos) << line;
  EXPECT_NE(line.find("; the other percentiles are not)"), std::string::npos) << line;
  format = "text";
  o = diff_command(req, format);
  EXPECT_NE(o.out.find(" p10 us  p50 us  p90 us  p98 us  p99 us  max us  verdict\n"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("significant (p90, p98, p99)\n"), std::string::npos) << o.out;
  // No duration cell carries a unit of its own ("9472" next to "26.1us" was two units).
  const std::regex unit_cell(R"(\d(ns|us|ms|s)( |$))");
  std::istringstream in(o.out.substr(o.out.find("\nProbes"), o.out.find("\nCachelines") - o.out.find("\nProbes")));
  for (std::string l; std::getline(in, l);)
    if (l.rfind("cpupri_set", 0) == 0 || l.rfind("idle", 0) == 0 || l.rfind("  ", 0) == 0)
      EXPECT_FALSE(std::regex_search(l, unit_cell)) << l;
  format = "markdown";
  o = diff_command(req, format);
  EXPECT_NE(o.out.find("| p10 (us) | p50 (us) |"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("significant (p90, p98, p99) |"), std::string::npos) << o.out;
}

// Rates are plain events/s in every row: 12800 is not "12.8k" under a "9472" of another row.
TEST(Diff, RateColumnsHaveNoMultiplier) {
  Meta m = synthetic_meta(64);  // 64 x 200 cpupri_set calls a second
  DiffRequest req;
  std::string format = "text";  // an output format (output/format.h)
  req.a.file = req.b.file = write_rec_with("diff_r.shot", m, 41, uniform);
  for (const char* f : {"text", "markdown"}) {
    format = f;
    CommandOutput o = diff_command(req, format);
    ASSERT_EQ(o.status, 0) << o.out;
    EXPECT_NE(o.out.find(" 12800 "), std::string::npos) << o.out;
    EXPECT_EQ(o.out.find("12.8k"), std::string::npos) << o.out;
  }
}

// Probes left out with --probes are "not selected (--probes)" as info and report say; a
// reason both sides share (a long blind reason) is said once per line.
TEST(Diff, NotSelectedIsSaidAsReportSaysItAndABlindReasonOnce) {
  Meta m = synthetic_meta(4);
  Meta mb = m;
  for (Meta* x : {&m, &mb}) x->host.spinlock = SpinlockMode::virt_spin_lock;  // bcast_* blind on both
  const int k = mb.probe_index("nohz_kick");
  mb.probes[k].status.attached = false;
  mb.probes[k].status.backend = Backend::none;
  mb.probes[k].status.reason = "not selected (--probes)";
  DiffRequest req;
  std::string format = "text";  // an output format (output/format.h)
  req.a.file = write_rec_with("diff_s_a.shot", m, 21, uniform);
  req.b.file = write_rec_with("diff_s_b.shot", mb, 22, uniform);
  CommandOutput o = diff_command(req, format);
  ASSERT_LE(o.status, 3) << (o.errors.empty() ? o.out : o.errors[0]);
  EXPECT_EQ(o.out.find("unavailable"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("nohz_kick: measured (A) vs not selected (--probes) (B)"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("not compared (A: measured; B: not selected (--probes))"), std::string::npos) << o.out;
  std::istringstream in(o.out);
  int blind_lines = 0;
  for (std::string l; std::getline(in, l);) {
    size_t n = 0;
    for (size_t at = l.find("blind:"); at != std::string::npos; at = l.find("blind:", at + 1)) ++n;
    EXPECT_LE(n, 1u) << "the blind reason twice: " << l;
    if (n && l.find("not compared (A and B: blind: ") != std::string::npos) ++blind_lines;
  }
  EXPECT_GE(blind_lines, 1) << o.out;
}

// A damaged recording: a window wholly before the damage is compared (and says so), one that
// reaches it is refused with the intact span (report's damage-as-a-value, issue 28).
TEST(Diff, WindowBeforeTheDamageIsComparedOneReachingItIsRefused) {
  Meta m = synthetic_meta(4);
  const std::string src = write_rec_with("diff_d_src.shot", m, 31, uniform);
  std::string data = slurp(src);
  data[data.size() - 200] ^= 0x10;  // inside the last sample frame (+30 s)
  const std::string bad = (std::filesystem::temp_directory_path() / "diff_d.shot").string();
  spit(bad, data);
  DiffRequest req;
  std::string format = "text";  // an output format (output/format.h)
  req.a.file = req.b.file = bad;
  req.a.to_s = 10;
  req.a.window = ":10s";
  req.b.from_s = 10;
  req.b.to_s = 20;
  req.b.window = "10s:20s";
  CommandOutput o = diff_command(req, format);
  ASSERT_EQ(o.status, 0) << (o.errors.empty() ? "" : o.errors[0]) << o.out;
  EXPECT_NE(o.out.find("after the window: its samples are intact)"), std::string::npos) << o.out;
  format = "json";
  o = diff_command(req, format);
  auto d = nlohmann::json::parse(o.out);
  EXPECT_TRUE(d["a"]["damage"].is_string()) << d["a"].dump();
  format = "text";
  req.b.to_s = -1;  // 10s: reaches the damage
  req.b.window = "10s:";
  o = diff_command(req, format);
  EXPECT_EQ(o.status, 1) << o.out;
  ASSERT_EQ(o.errors.size(), 1u);
  EXPECT_NE(o.errors[0].find("B: " + bad + " is damaged at byte "), std::string::npos) << o.errors[0];
  EXPECT_NE(o.errors[0].find("and the window 10s: reaches it; its intact samples span +0..+29.00 s"), std::string::npos)
      << o.errors[0];
  req.a = req.b = DiffSide{bad};  // the whole recording
  o = diff_command(req, format);
  EXPECT_EQ(o.status, 1);
  ASSERT_EQ(o.errors.size(), 1u);
  EXPECT_NE(o.errors[0].find("and the whole recording reaches it"), std::string::npos) << o.errors[0];
}

TEST(Diff, SameRecordingIsNoChangeAndTwiceTheLatencyIsSignificant) {
  Meta m = synthetic_meta(4);
  DiffRequest req;
  std::string format = "text";  // an output format (output/format.h)
  req.a.file = req.b.file = write_rec("diff_a.shot", m, 1);
  format = "json";
  CommandOutput o = diff_command(req, format);
  ASSERT_EQ(o.status, 0) << o.out << (o.errors.empty() ? "" : o.errors[0]);
  auto d = nlohmann::json::parse(o.out);
  EXPECT_EQ(d["schema"], "schedhot.diff/1");
  EXPECT_TRUE(d["host_differences"].empty());
  req.b.file = write_rec("diff_b.shot", m, 2, 2);
  o = diff_command(req, format);
  ASSERT_EQ(o.status, 3) << o.out;
  d = nlohmann::json::parse(o.out);
  for (auto& p : d["probes"])
    if (p["probe"] == "cpupri_set") {
      EXPECT_NEAR(p["latency_ns"]["p50"]["ratio"].get<double>(), 2.0, 0.15);
      EXPECT_TRUE(p["latency_ns"]["p50"]["significant"].get<bool>());
      EXPECT_NEAR(p["rate"]["ratio"].get<double>(), 1.0, 1e-9);
      EXPECT_FALSE(p["rate"]["significant"].get<bool>());
    }
  // The commit-message table names A and B, marks the significant latency change, not the
  // unchanged rate, and leaves out the probes with no event on either side.
  format = "patch";
  o = diff_command(req, format);
  ASSERT_EQ(o.status, 3) << o.out;
  EXPECT_EQ(o.out.rfind("A: " + req.a.file + " (", 0), 0u) << o.out;
  EXPECT_NE(o.out.find("\nB: " + req.b.file + " ("), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("- runtime for cpupri_set, nanoseconds:"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("  (beyond the noise, significant: p10 +"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("- cpupri_set calls/s: 800.00 -> 800.00 (+0.0 %)\n"), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("nohz_exit"), std::string::npos) << "no event on either side: left out\n" << o.out;
}

TEST(Diff, WindowsOfOneFileAndHostWarningsAndUnreadableFile) {
  Meta m = synthetic_meta(4);
  DiffRequest req;
  std::string format = "text";  // an output format (output/format.h)
  req.a.file = req.b.file = write_rec("diff_w.shot", m, 3);
  req.a.to_s = 15;
  req.a.window = ":15s";
  req.b.from_s = 15;
  req.b.window = "15s:";
  CommandOutput o = diff_command(req, format);
  EXPECT_EQ(o.status, 0) << o.out;
  EXPECT_NE(o.out.find("(15 intervals"), std::string::npos) << o.out;
  Meta m2 = m;
  m2.host.kernel_release = "6.13.0-other";
  const int p = m2.probe_index("cpupri_set");
  m2.probes[p].status.proxy = true;
  m2.probes[p].status.proxy_label = "tp:test";
  req = DiffRequest{};
  format = "text";
  req.a.file = write_rec("diff_h1.shot", m, 4);
  req.b.file = write_rec("diff_h2.shot", m2, 5);
  o = diff_command(req, format);
  EXPECT_NE(o.out.find("kernel: 6.12.0-test (A) vs 6.13.0-other (B)"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("cpupri_set: a proxy (tp:test) on B only"), std::string::npos) << o.out;
  // The commit-message format carries the same warnings (a pasted table must not hide them).
  format = "patch";
  o = diff_command(req, format);
  EXPECT_NE(o.out.find("\n! kernel: 6.12.0-test (A) vs 6.13.0-other (B)\n"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("\n! cpupri_set: a proxy (tp:test) on B only"), std::string::npos) << o.out;
  format = "text";
  req.b.file = "/nonexistent.shot";
  o = diff_command(req, format);
  EXPECT_EQ(o.status, 1);
  ASSERT_EQ(o.errors.size(), 1u);
  EXPECT_NE(o.errors[0].find("/nonexistent.shot"), std::string::npos) << o.errors[0];
}

// Text from a recording (host name, kernel release, probe names) is escaped in the Markdown
// table: a crafted name neither breaks the table nor carries HTML, links or emphasis; the
// commit-message layout is plain text, its controls scrubbed when the META was read.
TEST(Diff, MarkdownEscapesTheRecordingsText) {
  Meta m = synthetic_meta(4);
  m.probes[m.probe_index("nohz_kick")].name = "p|<b>*q*</b>\x1b[31m";
  Meta mb = m;
  mb.host.hostname = "h|x</td><script>alert(1)</script>";
  mb.host.kernel_release = "6.1 | ** [x](javascript:alert(1)) _e_ `c` \\";
  DiffRequest req;
  std::string format = "markdown";
  req.a.file = write_rec("diff_md_a.shot", m, 6);
  req.b.file = write_rec("diff_md_b.shot", mb, 7);
  CommandOutput o = diff_command(req, format);
  ASSERT_LE(o.status, 3) << (o.errors.empty() ? o.out : o.errors[0]);
  EXPECT_NE(o.out.find("h\\|x&lt;/td&gt;&lt;script&gt;alert(1)&lt;/script&gt; (B)"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("6.1 \\| \\*\\* \\[x\\](javascript:alert(1)) \\_e\\_ \\`c\\` \\\\ (B)"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("| p\\|&lt;b&gt;\\*q\\*&lt;/b&gt;?\\[31m | A |"), std::string::npos) << o.out;
  for (const char* raw : {"<", ">", "[x]", "[x](", "*q*", "h|x", " ** "})
    EXPECT_EQ(o.out.find(raw), std::string::npos) << raw << "\n" << o.out;
  EXPECT_NE(o.out.find("| cpupri_set | A |"), std::string::npos) << "a name between letters keeps its _: " << o.out;
  // every table row has its 11 cells: no '|' from a name splits one
  std::istringstream in(o.out);
  for (std::string l; std::getline(in, l);)
    if (l.rfind("| ", 0) == 0 && l.find("xfers") == std::string::npos && l.find("| line") == std::string::npos) {
      size_t bars = 0;
      for (size_t i = 0; i < l.size(); ++i) bars += l[i] == '|' && (i == 0 || l[i - 1] != '\\');
      if (l.find("p10 (us)") != std::string::npos || l.find(" A |") != std::string::npos || l.find("B/A") != std::string::npos ||
          l.find("not compared") != std::string::npos)
        EXPECT_EQ(bars, 12u) << l;
    }
  format = "patch";
  o = diff_command(req, format);
  EXPECT_EQ(o.out.find('\x1b'), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("h|x</td><script>alert(1)</script>"), std::string::npos) << "plain text, not Markdown: " << o.out;
}

namespace {

StackFrame fr(const char* s, uint64_t o) { return StackFrame{s, o}; }
const std::vector<StackFrame> kS1 = {fr("cpupri_set", 0x10), fr("enqueue_task_rt", 0x80)};
const std::vector<StackFrame> kS2 = {fr("cpupri_set", 0x10), fr("dequeue_rt_stack", 0x33)};
const std::vector<StackFrame> kS3 = {fr("cpupri_set", 0x10), fr("", 0)};

/// 4 one-second intervals of 2 CPUs; with `rule`, cpupri_set>20us armed and the first
/// interval's caught events `events` (stack, duration), counted by the slot's caught counter;
/// steals[k], when given and set, is event k's steal time (SH_CATCH_F_STEAL: a STEAL frame).
std::string write_tails_rec(const std::string& name, bool rule, const std::vector<std::pair<int, uint64_t>>& events,
                            const std::vector<std::optional<uint64_t>>& steals = {}) {
  Meta m = synthetic_meta(2);
  if (rule) apply_catch_rules(m, {fixed_catch_rule("cpupri_set", 20'000)});
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::filesystem::remove(path);
  RecordingWriter w(path, m, WriterOptions{});
  Sample s = make_sample(m);
  s.mono_ns = 5'000'000'000;
  w.write_sample(s);
  const int p = m.probe_index("cpupri_set");
  for (int i = 0; i < 4; ++i) {
    const uint64_t from = s.mono_ns;
    s.seq++;
    s.mono_ns += 1'000'000'000;
    s.wall_ns += 1'000'000'000;
    s.caught.reset();
    if (rule && i == 0) {
      CatchBatch b;
      b.stacks = {kS1, kS2, kS3};
      for (size_t k = 0; k < events.size(); ++k) {
        CaughtEvent e;
        e.probe = SH_P_CPUPRI_SET;
        e.cpu = 1;
        e.dur_ns = events[k].second;
        e.ts_ns = from + 1'000'000 * (k + 1);  // in time order
        e.stack = uint32_t(events[k].first);
        e.comm = "rtapp";
        if (k < steals.size() && steals[k]) {
          e.flags |= SH_CATCH_F_STEAL;
          e.steal_ns = *steals[k];
        }
        b.events.push_back(e);
        s.probes[p].words.mut(word(m, p, 1, "caught")) += 1;
      }
      s.caught = b;
    }
    w.write_sample(s);
  }
  w.close();
  return path;
}

}  // namespace

TEST(Diff, TailsCaughtRateP99AndStacksMergedByContent) {
  DiffRequest req;
  // A: S1 x3, S2 x1 (p99 50 us); B: S1 x2, S3 x6 (p99 100 us)
  req.a.file = write_tails_rec("diff_tails_a.shot", true, {{1, 30'000}, {1, 40'000}, {2, 25'000}, {1, 50'000}});
  req.b.file = write_tails_rec("diff_tails_b.shot", true,
                               {{1, 21'000}, {3, 60'000}, {3, 60'000}, {1, 100'000}, {3, 60'000}, {3, 60'000}, {3, 60'000}, {3, 60'000}});
  std::string format = "json";
  CommandOutput o = diff_command(req, format);
  ASSERT_TRUE(o.status == 0 || o.status == 3) << (o.errors.empty() ? "" : o.errors[0]);
  const nlohmann::json d = nlohmann::json::parse(o.out);
  const nlohmann::json& t = d["tails"];
  EXPECT_TRUE(t["note"].is_null());
  EXPECT_TRUE(t["unmatched"].empty());
  ASSERT_EQ(t["rules"].size(), 1u);
  const nlohmann::json& r = t["rules"][0];
  EXPECT_EQ(r["probe"], "cpupri_set");
  EXPECT_EQ(r["rule"], (nlohmann::json{{"a", "cpupri_set>20us"}, {"b", "cpupri_set>20us"}}));
  EXPECT_EQ(r["caught"], (nlohmann::json{{"a", 4}, {"b", 8}}));
  EXPECT_EQ(r["events_received"], (nlohmann::json{{"a", 4}, {"b", 8}}));
  EXPECT_EQ(r["caught_per_s"], (nlohmann::json{{"a", 1.0}, {"b", 2.0}}));
  EXPECT_EQ(r["p99_ns"], (nlohmann::json{{"a", 50'000}, {"b", 100'000}}));
  auto row = [](std::vector<std::string> frames, uint64_t ca, double sa, uint64_t cb, double sb, nlohmann::json marker) {
    return nlohmann::json{{"frames", frames},
                          {"a", {{"count", ca}, {"share", sa}}},
                          {"b", {{"count", cb}, {"share", sb}}},
                          {"marker", marker}};
  };
  // By share in A plus share in B; S2 only in A, S3 only in B.
  const nlohmann::json want = {
      row({"cpupri_set+0x10", "enqueue_task_rt+0x80"}, 3, 0.75, 2, 0.25, nullptr),
      row({"cpupri_set+0x10", "[unknown]"}, 0, 0.0, 6, 0.75, "new in B"),
      row({"cpupri_set+0x10", "dequeue_rt_stack+0x33"}, 1, 0.25, 0, 0.0, "gone in B"),
  };
  EXPECT_EQ(r["stacks"], want) << r["stacks"].dump(1);
  format = "text";
  o = diff_command(req, format);
  EXPECT_NE(o.out.find("\nTails (--catch: the caught events of the rules both sides have; stacks innermost first)\n"
                       "cpupri_set: A cpupri_set>20us, B cpupri_set>20us\n"
                       "  caught/s: A 1.0, B 2.0; p99 of the caught: A 50.0 us, B 100.0 us\n"
                       "         A    A %        B    B %             stack\n"
                       "         3   75.0        2   25.0             cpupri_set+0x10 <- enqueue_task_rt+0x80\n"
                       "         0    0.0        6   75.0  new in B   cpupri_set+0x10 <- [unknown]\n"
                       "         1   25.0        0    0.0  gone in B  cpupri_set+0x10 <- dequeue_rt_stack+0x33\n"),
            std::string::npos)
      << o.out;
}

TEST(Diff, TailsOnOneSideOnlyIsOneLine) {
  DiffRequest req;
  req.a.file = write_tails_rec("diff_tails_one_a.shot", true, {{1, 30'000}});
  req.b.file = write_tails_rec("diff_tails_one_b.shot", false, {});
  std::string format = "json";
  CommandOutput o = diff_command(req, format);
  const nlohmann::json d = nlohmann::json::parse(o.out);
  EXPECT_EQ(d["tails"]["note"], "only A has --catch rules (cpupri_set>20us): no tails to compare");
  EXPECT_TRUE(d["tails"]["rules"].empty());
  format = "text";
  o = diff_command(req, format);
  EXPECT_NE(o.out.find("\nTails: only A has --catch rules (cpupri_set>20us): no tails to compare\n"), std::string::npos)
      << o.out;
  // Neither side: no tails at all.
  req.a.file = req.b.file;
  format = "json";
  EXPECT_TRUE(nlohmann::json::parse(diff_command(req, format).out)["tails"].is_null());
  format = "text";
  EXPECT_EQ(diff_command(req, format).out.find("Tails"), std::string::npos);
}

TEST(Diff, TailsStealShareOfEachSideOrNotKept) {
  DiffRequest req;
  // A: 4 events; 3 with a steal reading (3 us, 0, 6 us; the third event has none): 9 us of
  // the 120 us those 3 took, 2 had steal inside. B: no steal reading (no paravirt clock).
  req.a.file = write_tails_rec("diff_steal_a.shot", true, {{1, 30'000}, {1, 40'000}, {2, 25'000}, {1, 50'000}},
                               {3'000, 0, std::nullopt, 6'000});
  req.b.file = write_tails_rec("diff_steal_b.shot", true, {{1, 21'000}, {1, 60'000}});
  std::string format = "json";
  CommandOutput o = diff_command(req, format);
  ASSERT_TRUE(o.status == 0 || o.status == 3) << (o.errors.empty() ? "" : o.errors[0]);
  const nlohmann::json r = nlohmann::json::parse(o.out)["tails"]["rules"].at(0);
  const nlohmann::json want_a = {{"events", 3}, {"not_kept", 1}, {"with", 2}, {"share", 2.0 / 3},
                                 {"ns", 9'000}, {"time_share", 0.075}, {"time_share_of_those", 9'000.0 / 80'000}};
  EXPECT_EQ(r["steal"]["a"], want_a) << r["steal"].dump();
  EXPECT_TRUE(r["steal"]["b"].is_null()) << r["steal"].dump();
  format = "text";
  o = diff_command(req, format);
  EXPECT_NE(o.out.find(" us\n"  // right after the caught/s line
                       "  steal share of the caught time: A 7.5 % (2 of 3 with steal inside, 9000 ns), B not kept\n"),
            std::string::npos)
      << o.out;
  // Swapped: B's figures on B's side.
  std::swap(req.a.file, req.b.file);
  o = diff_command(req, format);
  EXPECT_NE(o.out.find("  steal share of the caught time: A not kept, B 7.5 % (2 of 3 with steal inside, 9000 ns)\n"),
            std::string::npos)
      << o.out;
  // Neither side kept any: no steal line, and null on both sides.
  req.a.file = req.b.file = write_tails_rec("diff_steal_none.shot", true, {{1, 30'000}});
  o = diff_command(req, format);
  EXPECT_EQ(o.out.find("steal share"), std::string::npos) << o.out;
  format = "json";
  const nlohmann::json n = nlohmann::json::parse(diff_command(req, format).out)["tails"]["rules"].at(0)["steal"];
  EXPECT_EQ(n, (nlohmann::json{{"a", nullptr}, {"b", nullptr}}));
}

// A fresh user's `diff --by cpu` on two runs with no modeled transfer printed no per-CPU
// section and no word why: the text says there was nothing to split.
TEST(Diff, ByWithNoModeledTransfersSaysSo) {
  Meta m = synthetic_meta(4);
  DiffRequest req;
  std::string format = "json";
  req.a.file = write_rec_with("diff_by_a.shot", m, 11, uniform);
  req.b.file = write_rec_with("diff_by_b.shot", m, 12, uniform);
  req.by = TopoLevel::cpu;
  CommandOutput o = diff_command(req, format);
  auto d = nlohmann::json::parse(o.out);
  ASSERT_EQ(d["by"], "cpu");
  ASSERT_FALSE(d["lines"].empty()) << "the synthetic runs model transfers";
  EXPECT_EQ(render_diff_text(d).find("nothing to split"), std::string::npos);
  d["lines"] = nlohmann::json::array();  // as two runs of a host whose probes touch no modeled line
  EXPECT_NE(render_diff_text(d).find("\nCachelines: no modeled transfers on either side: nothing to split --by cpu\n"),
            std::string::npos)
      << render_diff_text(d);
  d["by"] = nullptr;  // without --by: no such line
  EXPECT_EQ(render_diff_text(d).find("Cachelines"), std::string::npos);
}
