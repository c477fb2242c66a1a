// ReportBuilder: the window's monotonic bounds, and bcast_wait on a host whose spinlocks
// emit no contention events (virt_spin_lock) or whose lock address was never learned:
// "blind", never a zero.
#include <gtest/gtest.h>

#include "test_util.h"
#include "model/interval.h"
#include "command/export.h"
#include "analysis/info.h"
#include "output/info_text.h"
#include "command/command.h"
#include "command/report.h"
#include "output/report_text.h"
#include "output/format.h"
#include "sys/json_text.h"

using namespace schedhot;
using namespace schedhot::testing;

namespace {

struct Built {
  nlohmann::json json;
  std::string text;
};

// Two samples 2 s apart with 30 contentions on CPU 1 and 40 cpupri_set calls on CPU 2.
// bcast_wait_note: a note bcast_wait's status ends with (how its lock address was found).
Built build(SpinlockMode mode, const std::string& bcast_wait_note = "") {
  Meta m = synthetic_meta(4);
  if (!bcast_wait_note.empty()) m.probes[size_t(m.probe_index("bcast_wait"))].status.notes.push_back(bcast_wait_note);
  m.host.spinlock = mode;
  m.host.hypervisor = mode == SpinlockMode::virt_spin_lock;
  Sample a = make_sample(m), b = make_sample(m);
  a.mono_ns = 5'000'000'000;
  b.mono_ns = 7'000'000'000;
  a.probes[m.probe_index("bcast_wait")].words.mut(word(m, m.probe_index("bcast_wait"), 1, "contentions")) = 10;
  b.probes[m.probe_index("bcast_wait")].words.mut(word(m, m.probe_index("bcast_wait"), 1, "contentions")) = 40;
  b.probes[m.probe_index("cpupri_set")].words.mut(word(m, m.probe_index("cpupri_set"), 2, "calls")) = 40;
  ReportOptions o;
  o.all_cpus = true;
  ReportBuilder rb(m, o);
  rb.add(a);
  rb.add(b);
  Built r;
  r.json = rb.build(m, SourceInfo{});
  r.text = render_report_text(r.json);
  return r;
}

const nlohmann::json& probe(const nlohmann::json& r, const std::string& name) {
  for (auto& p : r["probes"])
    if (p["name"] == name) return p;
  throw std::runtime_error("no probe " + name);
}

const nlohmann::json& cpu_row(const nlohmann::json& r, int cpu) {
  for (auto& row : r["cpus"])
    if (row["cpu"] == cpu) return row;
  throw std::runtime_error("no cpu row");
}

}  // namespace

TEST(Report, WindowCarriesFirstAndLastSampleMonotonicTimes) {
  Built r = build(SpinlockMode::native);
  EXPECT_EQ(r.json["window"]["start_mono_ns"].get<uint64_t>(), 5'000'000'000u);
  EXPECT_EQ(r.json["window"]["end_mono_ns"].get<uint64_t>(), 7'000'000'000u);
  EXPECT_DOUBLE_EQ(r.json["window"]["seconds"].get<double>(), 2.0);
}

TEST(Report, NativeSpinlockShowsContentions) {
  Built r = build(SpinlockMode::native);
  const auto& bw = probe(r.json, "bcast_wait");
  EXPECT_FALSE(bw.contains("blind"));
  EXPECT_EQ(bw["counters"]["contentions"]["total"].get<uint64_t>(), 30u);
  EXPECT_DOUBLE_EQ(cpu_row(r.json, 1)["bcast_wait/s"].get<double>(), 15.0);
  EXPECT_EQ(r.text.find("blind:"), std::string::npos);
}

TEST(Report, VirtSpinLockMakesBcastWaitBlindNotZero) {
  Built r = build(SpinlockMode::virt_spin_lock);
  const auto& bw = probe(r.json, "bcast_wait");
  ASSERT_TRUE(bw.contains("blind"));
  HostInfo h;
  h.spinlock = SpinlockMode::virt_spin_lock;
  EXPECT_EQ(bw["blind"].get<std::string>(), spinlock_blind_spot(h));
  EXPECT_EQ(bw["status"], "attached");
  EXPECT_TRUE(bw["counters"].is_null());
  EXPECT_TRUE(bw["latency_ns"].is_null());
  EXPECT_TRUE(bw["per_cpu"].is_null());
  for (int c = 0; c < 4; ++c) EXPECT_TRUE(cpu_row(r.json, c)["bcast_wait/s"].is_null()) << "cpu " << c;
  // Only bcast_wait is blind: the other probes keep their numbers.
  const auto& cs = probe(r.json, "cpupri_set");
  EXPECT_FALSE(cs.contains("blind"));
  EXPECT_EQ(cs["counters"]["calls"]["total"].get<uint64_t>(), 40u);
  EXPECT_DOUBLE_EQ(cpu_row(r.json, 2)["cpupri_set/s"].get<double>(), 20.0);
  // The text report says it on bcast_wait's own line.
  size_t at = r.text.find("\nbcast_wait ");
  ASSERT_NE(at, std::string::npos);
  std::string line = r.text.substr(at + 1, r.text.find('\n', at + 1) - at - 1);
  EXPECT_NE(line.find("blind: hypervisor without paravirt spinlocks"), std::string::npos) << line;
  // Export: every bcast_wait column is empty, the others are not.
  Meta m = synthetic_meta(4);
  m.host.spinlock = SpinlockMode::virt_spin_lock;
  int n = 0;
  for (const ExportMetric& e : export_metrics(m)) {
    EXPECT_EQ(e.unseen, e.name.rfind("bcast_wait.", 0) == 0) << e.name;
    n += e.name.rfind("bcast_wait.", 0) == 0;
  }
  EXPECT_GE(n, 3);
}

TEST(Report, UnlearnedLockAddressMakesBcastWaitBlindNotZero) {
  // Still learning at the end: the lock's contentions were never told from other locks'.
  Built r = build(SpinlockMode::native, std::string(kLockAddrUnknownNote) +
                                            " (not in /proc/kallsyms): learning it from contention stacks");
  const auto& bw = probe(r.json, "bcast_wait");
  ASSERT_TRUE(bw.contains("blind"));
  EXPECT_NE(bw["blind"].get<std::string>().find("address was not learned"), std::string::npos);
  EXPECT_TRUE(bw["counters"].is_null());
  EXPECT_TRUE(cpu_row(r.json, 1)["bcast_wait/s"].is_null());
  EXPECT_NE(r.text.find("blind: tick_broadcast_lock's address was not learned"), std::string::npos);
  // Learned: the same samples are numbers again.
  Built l = build(SpinlockMode::native, "tick_broadcast_lock at 0xffffffff81000000 learned from 2 contention stacks");
  EXPECT_FALSE(probe(l.json, "bcast_wait").contains("blind"));
  EXPECT_DOUBLE_EQ(cpu_row(l.json, 1)["bcast_wait/s"].get<double>(), 15.0);
}

TEST(Report, CpusOnlineMidRunAreRowsSoRowsAddUpToTotals) {
  // Online at the start: 0 and 2; CPU 3 comes online during the window and counts.
  Meta m = synthetic_meta(4);
  m.host.online = {0, 2};
  const int idle = m.probe_index("idle");
  Sample a = make_sample(m), b = make_sample(m);
  a.mono_ns = 1'000'000'000;
  b.mono_ns = 2'000'000'000;
  b.probes[idle].words.mut(word(m, idle, 0, "exits")) = 10;
  b.probes[idle].words.mut(word(m, idle, 3, "exits")) = 30;
  ReportOptions o;
  o.all_cpus = true;
  ReportBuilder rb(m, o);
  rb.add(a);
  rb.add(b);
  nlohmann::json r = rb.build(m, SourceInfo{});
  const auto& p = probe(r, "idle");
  EXPECT_EQ(p["counters"]["exits"]["total"].get<uint64_t>(), 40u);
  uint64_t sum = 0;
  std::vector<int> cpus;
  for (auto& row : p["per_cpu"]) {
    sum += row["total"].get<uint64_t>();
    cpus.push_back(row["cpu"].get<int>());
  }
  EXPECT_EQ(sum, 40u);
  EXPECT_EQ(cpus, (std::vector<int>{0, 2, 3})) << "CPU 1 stayed offline and silent";
  EXPECT_EQ(r["cpus_total"].get<size_t>(), 3u);
  EXPECT_DOUBLE_EQ(cpu_row(r, 3)["idle/s"].get<double>(), 30.0);
}

TEST(Report, ProxyCountersItCannotSeeAreNullNotZero) {
  // cpupri_set through its sched_switch proxy: calls are counted; no-op calls and the
  // timing stack's pairing counters cannot be seen, so they are null in JSON, "-" in the
  // text, and empty cells in the export; with fentry the same fields are numbers.
  for (bool proxy : {true, false}) {
    Meta m = synthetic_meta(4);
    const int cs = m.probe_index("cpupri_set");
    m.probes[cs].status.proxy = proxy;
    Sample a = make_sample(m), b = make_sample(m);
    a.mono_ns = 1'000'000'000;
    b.mono_ns = 2'000'000'000;
    b.probes[cs].words.mut(word(m, cs, 0, "calls")) = 12;
    ReportBuilder rb(m, ReportOptions{});
    rb.add(a);
    rb.add(b);
    nlohmann::json r = rb.build(m, SourceInfo{});
    const auto& c = probe(r, "cpupri_set")["counters"];
    EXPECT_EQ(c["calls"]["total"].get<uint64_t>(), 12u) << proxy;
    for (const char* f : {"noop", "nested", "orphan_exits"}) {
      ASSERT_TRUE(c.contains(f)) << f;
      if (proxy)
        EXPECT_TRUE(c[f].is_null()) << f;
      else
        EXPECT_EQ(c[f]["total"].get<uint64_t>(), 0u) << f;
    }
    std::string text = render_report_text(r);
    EXPECT_EQ(text.find("noop - (not seen by the proxy)") != std::string::npos, proxy) << text;
    // Export: the noop column is empty for the proxy, 0 with fentry.
    auto metrics = export_metrics(m);
    auto it = std::find_if(metrics.begin(), metrics.end(), [](const ExportMetric& e) { return e.name == "cpupri_set.noop_per_s"; });
    ASSERT_NE(it, metrics.end());
    EXPECT_EQ(it->unseen, proxy);
  }
}

TEST(Report, WindowEdgesTakeSamplesALittleLate) {
  // Samples 0.9 ms after each whole second (as a recorder takes them): --from 2 --to 5
  // means the samples of +2..+5 s, four of them; a sample half an interval late is out.
  Meta m = synthetic_meta(2);
  m.interval_ns = 1'000'000'000;
  auto run = [&](double from, double to, uint64_t late_ns) {
    ReportOptions o;
    o.from_s = from;
    o.to_s = to;
    ReportBuilder rb(m, o);
    for (uint64_t k = 0; k <= 8; ++k) {
      Sample s = make_sample(m);
      s.mono_ns = 10'000'000'000 + k * 1'000'000'000 + (k ? late_ns : 0);
      rb.add(s);
    }
    return rb.samples();
  };
  EXPECT_EQ(run(2, 5, 900'000), 4u);
  EXPECT_EQ(run(2, 5, 0), 4u);
  EXPECT_EQ(run(2, 5, 99'000'000), 4u) << "up to a tenth of an interval late";
  EXPECT_EQ(run(2, 5, 500'000'000), 3u) << "+2.5 +3.5 +4.5: half an interval late is not the +5 s sample";
  SampleWindow w{2, 5, 1'000'000'000};
  EXPECT_FALSE(w.before(1.95));
  EXPECT_TRUE(w.before(1.85));
  EXPECT_FALSE(w.after(5.05));
  EXPECT_TRUE(w.after(5.15));
  EXPECT_EQ(w.start_ns(), 1'899'999'999u);
}

TEST(Report, AWindowPastTheEndSaysWhereItEnds) {
  // Samples at +0..+8 s; --to 20 s ends at +8 s and says so, --to 8 s says nothing.
  Meta m = synthetic_meta(2);
  m.interval_ns = 1'000'000'000;
  auto build_to = [&](double to) {
    ReportOptions o;
    o.from_s = 5;
    o.to_s = to;
    ReportBuilder rb(m, o);
    for (uint64_t k = 0; k <= 8; ++k) {
      Sample s = make_sample(m);
      s.mono_ns = 10'000'000'000 + k * 1'000'000'000;
      rb.add(s);
    }
    return rb.build(m, SourceInfo{});
  };
  nlohmann::json past = build_to(20);
  ASSERT_TRUE(past["window"].contains("note"));
  EXPECT_EQ(past["window"]["note"], "--to 20.00 s is after the last sample (+8.00 s): the window ends there");
  EXPECT_NE(render_report_text(past).find("window --to 20.00 s is after the last sample"), std::string::npos);
  EXPECT_DOUBLE_EQ(past["window"]["seconds"].get<double>(), 3.0);
  EXPECT_FALSE(build_to(8)["window"].contains("note"));
  EXPECT_FALSE(build_to(7)["window"].contains("note"));
}

// The output-format registry: each kind of document has text first and json last, json
// renders any document as indented JSON, a document is rendered by its own schema's
// renderer, and an unknown format names the kind's formats.
TEST(OutputFormats, EachDocumentKindHasItsFormatsAndJson) {
  EXPECT_EQ(format_names(schema::report), (std::vector<std::string>{"text", "json"}));
  EXPECT_EQ(format_names(schema::diff), (std::vector<std::string>{"text", "markdown", "patch", "json"}));
  EXPECT_EQ(format_names(schema::fleet), (std::vector<std::string>{"text", "csv", "json"}));
  EXPECT_EQ(format_choices_text(schema::diff), "text (default), markdown, patch or json");
  for (const char* k : {schema::report, schema::info, schema::probes, schema::diff, schema::fleet})
    EXPECT_EQ(format_names(k).front(), "text") << k;
  const nlohmann::json doc = build(SpinlockMode::native).json;
  EXPECT_EQ(render_document(doc, "json"), json_text(doc, 2) + "\n");
  EXPECT_EQ(render_document(doc, "text"), render_report_text(doc));
  try {
    (void)render_document(doc, "csv");
    ADD_FAILURE() << "a report has no csv";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "--format 'csv': one of text, json");
  }
}

// A document of its own file's: its format and its command registered from there
// (RegisterOutputFormat, RegisterDocumentCommand), as a src/command/<name>.cpp does.
namespace {

constexpr const char* kTestSchema = "schedhot.test-registered/1";
const RegisterOutputFormat test_text{{"text", kTestSchema, "text", [](const nlohmann::json& d) {
                                        return "n=" + std::to_string(d["n"].get<int>()) + "\n";
                                      }}};
const RegisterOutputFormat test_tsv{{"tsv", kTestSchema, "tab-separated", [](const nlohmann::json&) {
                                       return std::string("n\n");
                                     }}};
const RegisterDocumentCommand test_command{{"test-registered", kTestSchema, [](const DocumentRequest& req) {
                                              CommandOutput res;
                                              res.out = render_document({{"schema", kTestSchema}, {"n", 3}}, req.format);
                                              return res;
                                            }}};

}  // namespace

TEST(OutputFormats, ARegisteredKindsFormatsComeBeforeJson) {
  EXPECT_EQ(format_names(kTestSchema), (std::vector<std::string>{"text", "tsv", "json"}));
  EXPECT_EQ(format_choices_text(kTestSchema), "text (default), tsv or json");
  EXPECT_EQ(format_names(schema::report), (std::vector<std::string>{"text", "json"}));  // others unchanged
  EXPECT_EQ(output_formats().back().name, std::string("json"));
  const DocumentCommand& c = document_command("test-registered");
  EXPECT_STREQ(c.schema, kTestSchema);
  DocumentRequest req;
  EXPECT_EQ(c.run(req).out, "n=3\n");
  req.format = "json";
  EXPECT_EQ(c.run(req).out, json_text(nlohmann::json{{"schema", kTestSchema}, {"n", 3}}, 2) + "\n");
  EXPECT_THROW((void)document_command("no-such-command"), std::logic_error);
}
