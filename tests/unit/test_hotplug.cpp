// CPU hotplug during a recording: the online CPUs of every sample (format 1.2 ONLINE
// frames) survive writing, reading and seeking; an interval measures only the CPUs online
// in it; report lists every CPU online at some point of the window; export leaves an
// offline CPU's cells empty and its totals are the sums of the rows.
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "model/interval.h"
#include "store/recording.h"
#include "test_recording_util.h"
#include "command/export.h"
#include "analysis/info.h"
#include "output/info_text.h"
#include "command/report.h"
#include "output/report_text.h"

using namespace schedhot;
using namespace schedhot::testing;

namespace {

/// 8 possible CPUs, 0-2 online at the start (as `possible 0-7, online 0-2`).
Meta hotplug_meta() {
  Meta m = synthetic_meta(8);
  m.host.online = {0, 1, 2};
  return m;
}

std::vector<int> cpus(std::initializer_list<int> l) { return l; }

}  // namespace

TEST(Hotplug, OnlineCpusOfEverySampleReadBackAndAfterSeeks) {
  TempDir dir("hotplug_rw");
  const Meta m = hotplug_meta();
  // CPU 3 comes online at sample 5 and goes offline again at sample 80 (keyframes at 0 and 64).
  auto written = make_hotplug_samples(m, 100, 3, 5, 80);
  write_samples(dir / "h.shot", m, written);
  auto r = RecordingReader::open(dir / "h.shot");
  EXPECT_GE(r->minor(), 2);  // ONLINE frames from 1.2 on (the writer writes 1.4 since GAPS)
  auto got = read_all(*r);
  ASSERT_EQ(got.size(), written.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].online, written[i].online) << "sample " << i;
  EXPECT_EQ(got[4].online, cpus({0, 1, 2}));
  EXPECT_EQ(got[5].online, cpus({0, 1, 2, 3}));
  EXPECT_EQ(got[80].online, cpus({0, 1, 2}));
  // ONLINE frames: the two keyframes and the two changes in between.
  EXPECT_EQ(r->stats().online_frames, 4u);
  // A seek to a keyframe finds its ONLINE frame; one past it carries it forward.
  for (size_t i : {64u, 70u, 3u, 99u, 5u}) {
    Sample s;
    ASSERT_TRUE(r->seek_sample(i));
    ASSERT_TRUE(r->next(s));
    EXPECT_EQ(s.online, written[i].online) << "after a seek to " << i;
  }
  // Online at some point: the whole run, before CPU 3 came, and after it left.
  EXPECT_EQ(r->online_cpus(), cpus({0, 1, 2, 3}));
  EXPECT_EQ(r->online_cpus(written[0].mono_ns, written[4].mono_ns), cpus({0, 1, 2}));
  EXPECT_EQ(r->online_cpus(written[2].mono_ns, written[30].mono_ns), cpus({0, 1, 2, 3}));
  EXPECT_EQ(r->online_cpus(written[81].mono_ns, written[99].mono_ns), cpus({0, 1, 2}));
}

TEST(Hotplug, SamplesWithoutOnlineSetsFallBackToTheMetadataAndCountersThatMoved) {
  TempDir dir("hotplug_old");
  Meta m = hotplug_meta();
  auto written = make_hotplug_samples(m, 10, 3, 4, 100);
  for (auto& s : written) s.online.clear();  // a writer that did not know: as 1.0/1.1 files
  write_samples(dir / "h.shot", m, written);
  auto r = RecordingReader::open(dir / "h.shot");
  auto got = read_all(*r);
  ASSERT_EQ(got.size(), 10u);
  EXPECT_EQ(r->stats().online_frames, 0u);
  EXPECT_EQ(got[3].online, cpus({0, 1, 2}));     // CPU 3 has counted nothing yet
  EXPECT_EQ(got[9].online, cpus({0, 1, 2, 3}));  // it has now
  EXPECT_EQ(r->online_cpus(), cpus({0, 1, 2, 3}));
}

TEST(Hotplug, OldFixturesCountTheMetadatasOnlineCpus) {
  for (const char* f : {"/v1.0-basic.shot", "/v1.1-basic.shot"}) {
    auto r = RecordingReader::open(std::string(SCHEDHOT_DATA) + f);
    Sample s;
    ASSERT_TRUE(r->next(s));
    EXPECT_EQ(s.online, r->meta().host.online) << f;
    EXPECT_EQ(r->online_cpus(), r->meta().host.online) << f;
  }
}

TEST(Hotplug, IntervalMeasuresACpuOnlineAtEitherEndOrThatCounted) {
  const Meta m = hotplug_meta();
  auto s = make_hotplug_samples(m, 12, 3, 5, 9);
  EXPECT_FALSE(Interval(m, s[2], s[3]).online(3));  // offline at both ends
  EXPECT_TRUE(Interval(m, s[2], s[3]).online(0));
  EXPECT_TRUE(Interval(m, s[4], s[5]).online(3));   // came online
  EXPECT_TRUE(Interval(m, s[8], s[9]).online(3));   // went offline
  EXPECT_FALSE(Interval(m, s[9], s[11]).online(3));
  EXPECT_FALSE(Interval(m, s[2], s[3]).online(7));  // never online
  EXPECT_FALSE(Interval(m, s[2], s[3]).online(8));  // not a CPU
  // Online only between the two samples: its counters moved, so it was measured.
  EXPECT_GT(Interval(m, s[4], s[9]).count(m.probe_index("idle"), "exits", 3), 0u);
  Sample a = s[4], b = s[9];
  b.online = a.online;
  EXPECT_TRUE(Interval(m, a, b).online(3));
  // Samples that do not know count every CPU.
  a.online.clear();
  b.online.clear();
  EXPECT_TRUE(Interval(m, a, b).online(7));
}

TEST(Hotplug, ReportListsEveryCpuOnlineInTheWindow) {
  const Meta m = hotplug_meta();
  auto s = make_hotplug_samples(m, 20, 3, 6, 100);
  auto build = [&](double from_s, double to_s) {
    ReportOptions o;
    o.all_cpus = true;
    o.from_s = from_s;
    o.to_s = to_s;
    ReportBuilder b(m, o);
    for (auto& x : s) b.add(x);
    return b.build(m, SourceInfo{});
  };
  auto r = build(-1, -1);
  EXPECT_EQ(r["cpus_total"], 4);
  EXPECT_EQ(r["window"]["online"], "0-3");
  auto before = build(-1, 4);  // CPU 3 not online yet
  EXPECT_EQ(before["cpus_total"], 3);
  EXPECT_EQ(before["window"]["online"], "0-2");
}

TEST(Hotplug, ExportLeavesOfflineCellsEmptyAndTotalsAreTheSumOfTheRows) {
  TempDir dir("hotplug_export");
  const Meta m = hotplug_meta();
  auto written = make_hotplug_samples(m, 12, 3, 4, 9);  // CPU 3 online in samples 4..8
  write_samples(dir / "h.shot", m, written);
  auto r = RecordingReader::open(dir / "h.shot");
  ExportOptions o;
  o.format = ExportFormat::json;
  o.cpus = r->online_cpus();
  ASSERT_EQ(o.cpus, cpus({0, 1, 2, 3}));
  ASSERT_TRUE(r->seek_sample(0));
  std::ostringstream out;
  export_samples(*r, out, o, [] { return SourceInfo{}; });
  auto j = nlohmann::json::parse(out.str());
  ASSERT_EQ(j["intervals"].size(), 11u);
  const std::string metric = "idle.exits_per_s";
  for (size_t i = 0; i < 11; ++i) {
    SCOPED_TRACE(i);
    const auto& iv = j["intervals"][i];
    const auto& row = iv["values"][metric];
    ASSERT_EQ(row.size(), 4u);
    // Interval i runs from sample i to i + 1: CPU 3 is measured when online at either end.
    const bool measured = (i + 1 >= 4 && i + 1 < 9) || (i >= 4 && i < 9);
    EXPECT_EQ(row[3].is_null(), !measured);
    double sum = 0;
    for (auto& c : row)
      if (!c.is_null()) sum += c.get<double>();
    EXPECT_NEAR(iv["total"][metric].get<double>(), sum, 1e-6);
  }
  // CSV: the same cells are empty.
  o.format = ExportFormat::csv;
  ASSERT_TRUE(r->seek_sample(0));
  std::ostringstream csv;
  export_samples(*r, csv, o, [] { return SourceInfo{}; });
  std::istringstream lines(csv.str());
  std::string line;
  std::getline(lines, line);  // header
  int rows = 0;
  std::map<int, int> all_empty;  // per CPU: rows whose every value cell is empty
  while (std::getline(lines, line)) {
    ++rows;
    std::vector<std::string> cells;
    std::stringstream ls(line);
    for (std::string c; std::getline(ls, c, ',');) cells.push_back(c);
    if (line.back() == ',') cells.push_back("");
    ASSERT_GE(cells.size(), 3u);
    bool empty = true;
    for (size_t k = 2; k < cells.size(); ++k) empty = empty && cells[k].empty();
    all_empty[std::stoi(cells[1])] += empty;
  }
  EXPECT_EQ(rows, 11 * 4);
  EXPECT_EQ(all_empty[3], 5) << "intervals 0-2 and 9-10 have CPU 3 offline at both ends";
  EXPECT_EQ(all_empty[0], 0);
}

TEST(Hotplug, AMalformedOnlineFrameIsDamageAndTheSamplesBeforeItStay) {
  TempDir dir("hotplug_bad");
  Meta m = synthetic_meta(4);
  auto written = make_hotplug_samples(m, 6, 3, 0, 3);  // CPU 3 leaves at sample 3: an ONLINE frame there
  write_samples(dir / "h.shot", m, written, false);
  const std::string good = slurp(dir / "h.shot");
  const uint64_t at3 = sample_offset(dir / "h.shot", 3);
  const uint64_t online_at = at3 - kFrameHeaderBytes - online_bitmap_bytes(4);
  for (auto [payload, why] : {std::pair<std::string, std::string>{std::string("\x07\x00", 2), "online frame of 2 bytes for 4 CPUs"},
                              {"\x27", "online frame names CPU 5 of 4"}}) {
    SCOPED_TRACE(why);
    std::string bad = good.substr(0, online_at) + make_frame(FrameType::online, 0, written[3].mono_ns, payload) +
                      good.substr(at3);
    spit(dir / "bad.shot", bad);
    auto r = RecordingReader::open(dir / "bad.shot");
    auto got = read_all(*r);
    EXPECT_EQ(got.size(), 3u);
    ASSERT_TRUE(r->damage().has_value());
    EXPECT_EQ(r->damage()->offset, online_at);
    EXPECT_EQ(r->damage()->reason, why);
    // The position scan (replay, seeks without an index) stops there too and says why:
    // replay printed 3 intervals of 70 with exit 0 and no note.
    auto scan = RecordingReader::open(dir / "bad.shot");
    scan->check_all_frames();
    EXPECT_EQ(scan->sample_positions().size(), 3u);
    ASSERT_TRUE(scan->damage().has_value());
    EXPECT_EQ(scan->damage()->offset, online_at);
  }
}
