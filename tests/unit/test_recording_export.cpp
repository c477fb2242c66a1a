// Export (CSV, JSON, Chrome trace-event JSON for Perfetto) and info on recordings with
// known values.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "model/lines.h"
#include "store/recording.h"
#include "test_recording_util.h"
#include "command/export.h"
#include "command/report.h"
#include "analysis/info.h"
#include "output/info_text.h"
#include "command/info.h"

using namespace schedhot;
using namespace schedhot::testing;

namespace {

/// Three samples of 4 CPUs (nohz_kick unavailable) at 10 s, 11 s and 13 s:
///   interval 1 (1 s): cpupri_set calls on CPU 1 +100, latencies 10, 10, 10, 12 ns on CPU 1;
///                     idle exits on CPU 0 +50
///   interval 2 (2 s): cpupri_set calls on CPU 1 +300, no latencies; idle exits on CPU 0 +10
struct Known {
  Meta m = synthetic_meta(4, {"nohz_kick"});
  std::vector<Sample> s;
  Known() {
    int cs = m.probe_index("cpupri_set"), id = m.probe_index("idle");
    Sample a = make_sample(m);
    a.mono_ns = 10'000'000'000;
    a.wall_ns = 1'700'000'000'000'000'000ull;
    s.push_back(a);
    a.seq = 1;
    a.mono_ns += 1'000'000'000;
    a.wall_ns += 1'000'000'000;
    a.probes[cs].words.mut(word(m, cs, 1, "calls")) += 100;
    for (uint64_t v : {10, 10, 10, 12}) add_hist(m, a, cs, 1, "lat", v);
    a.probes[id].words.mut(word(m, id, 0, "exits")) += 50;
    s.push_back(a);
    a.seq = 2;
    a.mono_ns += 2'000'000'000;
    a.wall_ns += 2'000'000'000;
    a.probes[cs].words.mut(word(m, cs, 1, "calls")) += 300;
    a.probes[id].words.mut(word(m, id, 0, "exits")) += 10;
    s.push_back(a);
  }
  std::string write(const std::string& path) const {
    WriterOptions wo;
    wo.overwrite = true;
    RecordingWriter w(path, m, wo);
    for (auto& x : s) w.write_sample(x);
    w.close();
    return path;
  }
};

std::string run_export(const std::string& path, ExportOptions o) {
  auto r = RecordingReader::open(path);
  std::ostringstream out;
  export_samples(*r, out, o, [&] {
    SourceInfo si;
    si.file = path;
    si.format = "1.1";
    si.complete = r->saw_end();
    return si;
  });
  return out.str();
}

std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    size_t pos = 0;
    while (true) {
      size_t c = line.find(',', pos);
      cells.push_back(line.substr(pos, c == std::string::npos ? std::string::npos : c - pos));
      if (c == std::string::npos) break;
      pos = c + 1;
    }
    rows.push_back(cells);
  }
  return rows;
}

}  // namespace

TEST(RecordingExport, MetricsFollowTheCatalog) {
  Meta m = synthetic_meta(2);
  auto metrics = export_metrics(m);
  std::vector<std::string> names;
  for (auto& x : metrics) names.push_back(x.name);
  for (const char* want : {"nohz_exit.calls_per_s", "nohz_exit.worked_per_s", "nohz_exit.lat_p50_ns",
                           "nohz_exit.lat_p99_ns", "bcast_lock.calls_per_s", "idle.exits_per_s", "idle.entries_per_s"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  for (size_t i = 0; i < metrics.size(); ++i)
    if (metrics[i].kind == ExportMetric::Kind::p50) {
      ASSERT_LT(i + 1, metrics.size());
      EXPECT_EQ(metrics[i + 1].kind, ExportMetric::Kind::p99);
      EXPECT_EQ(metrics[i + 1].field, metrics[i].field);
    }
  EXPECT_STREQ(metrics[0].unit(), "1/s");
}

TEST(RecordingExport, CsvHasOneRowPerIntervalAndCpuWithBlanksForAbsentProbes) {
  Known k;
  TempDir dir("csv");
  auto rows = parse_csv(run_export(k.write(dir / "k.shot"), ExportOptions{}));
  ASSERT_EQ(rows.size(), 1u + 2 * 4);
  const auto& head = rows[0];
  auto col = [&](const std::string& n) {
    auto it = std::find(head.begin(), head.end(), n);
    EXPECT_NE(it, head.end()) << n;
    return static_cast<size_t>(it - head.begin());
  };
  EXPECT_EQ(head[0], "time_s");
  EXPECT_EQ(head[1], "cpu");
  const size_t calls = col("cpupri_set.calls_per_s"), p50 = col("cpupri_set.lat_p50_ns"), p99 = col("cpupri_set.lat_p99_ns"),
               kick = col("nohz_kick.calls_per_s"), exits = col("idle.exits_per_s");
  for (auto& r : rows) ASSERT_EQ(r.size(), head.size());
  // rows[1..4]: interval ending at +1 s, CPUs 0..3; rows[5..8]: ending at +3 s.
  EXPECT_EQ(rows[1][0], "1.000000");
  EXPECT_EQ(rows[2][1], "1");
  EXPECT_EQ(rows[2][calls], "100.000");
  EXPECT_EQ(rows[2][p50], "10.0");
  EXPECT_EQ(rows[2][p99], "12.0");
  EXPECT_EQ(rows[1][calls], "0.000") << "attached and idle is 0";
  EXPECT_EQ(rows[1][p50], "") << "no latency without events";
  EXPECT_EQ(rows[1][exits], "50.000");
  EXPECT_EQ(rows[5][0], "3.000000");
  EXPECT_EQ(rows[6][calls], "150.000");
  EXPECT_EQ(rows[6][p99], "");
  EXPECT_EQ(rows[5][exits], "5.000");
  for (size_t i = 1; i < rows.size(); ++i) EXPECT_EQ(rows[i][kick], "") << "unavailable is blank, never 0";
}

TEST(RecordingExport, JsonFollowsItsSchema) {
  Known k;
  TempDir dir("json");
  auto j = nlohmann::json::parse(run_export(k.write(dir / "k.shot"), ExportOptions{ExportFormat::json}));
  EXPECT_EQ(j["schema"], "schedhot.export/1");
  EXPECT_EQ(j["cpus"], nlohmann::json({0, 1, 2, 3}));
  EXPECT_EQ(j["host"]["hostname"], "testhost");
  EXPECT_EQ(j["samples"], 3);
  EXPECT_EQ(j["time_zero_mono_ns"], 10'000'000'000ull);
  EXPECT_EQ(j["source"]["complete"], true);
  EXPECT_TRUE(j["source"]["damage"].is_null());
  bool found = false;
  for (auto& m : j["metrics"])
    if (m["name"] == "cpupri_set.lat_p99_ns") {
      found = true;
      EXPECT_EQ(m["kind"], "p99");
      EXPECT_EQ(m["unit"], "ns");
      EXPECT_EQ(m["probe"], "cpupri_set");
    }
  EXPECT_TRUE(found);
  for (auto& p : j["probes"])
    EXPECT_EQ(p["status"], p["name"] == "nohz_kick" ? "unavailable" : "attached") << p.dump();
  const auto& iv = j["intervals"];
  ASSERT_EQ(iv.size(), 2u);
  EXPECT_DOUBLE_EQ(iv[0]["time_s"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(iv[1]["seconds"].get<double>(), 2.0);
  EXPECT_EQ(iv[1]["mono_ns"], 13'000'000'000ull);
  EXPECT_DOUBLE_EQ(iv[0]["values"]["cpupri_set.calls_per_s"][1].get<double>(), 100.0);
  EXPECT_DOUBLE_EQ(iv[1]["values"]["cpupri_set.calls_per_s"][1].get<double>(), 150.0);
  EXPECT_DOUBLE_EQ(iv[0]["total"]["cpupri_set.calls_per_s"].get<double>(), 100.0);
  EXPECT_DOUBLE_EQ(iv[0]["values"]["cpupri_set.lat_p99_ns"][1].get<double>(), 12.0);
  EXPECT_TRUE(iv[0]["values"]["cpupri_set.lat_p99_ns"][0].is_null());
  EXPECT_TRUE(iv[1]["total"]["cpupri_set.lat_p50_ns"].is_null());
  EXPECT_TRUE(iv[0]["values"]["nohz_kick.calls_per_s"].is_null());
  EXPECT_TRUE(iv[0]["total"]["nohz_kick.calls_per_s"].is_null());
}

TEST(RecordingExport, PerfettoTraceHasCounterTracksPerCpuAndMetric) {
  Known k;
  TempDir dir("perfetto");
  auto j = nlohmann::json::parse(run_export(k.write(dir / "k.shot"), ExportOptions{ExportFormat::perfetto}));
  const auto& ev = j["traceEvents"];
  int meta = 0;
  std::vector<nlohmann::json> cs;
  for (auto& e : ev) {
    if (e["ph"] == "M") {
      ++meta;
      EXPECT_EQ(e["name"], "process_name");
    }
    EXPECT_NE(e.value("name", ""), "nohz_kick") << "no events for an unavailable probe";
    if (e["ph"] == "C" && e["name"] == "cpupri_set" && e["pid"] == 1001) cs.push_back(e);
  }
  EXPECT_EQ(meta, 5) << "all CPUs + 4 CPUs";
  ASSERT_EQ(cs.size(), 3u) << "two intervals and the closing event";
  EXPECT_DOUBLE_EQ(cs[0]["ts"].get<double>(), 10'000'000.0) << "us, at the interval's start";
  EXPECT_DOUBLE_EQ(cs[0]["args"]["calls_per_s"].get<double>(), 100.0);
  EXPECT_DOUBLE_EQ(cs[0]["args"]["lat_p50_ns"].get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(cs[0]["args"]["lat_p99_ns"].get<double>(), 12.0);
  EXPECT_DOUBLE_EQ(cs[1]["ts"].get<double>(), 11'000'000.0);
  EXPECT_DOUBLE_EQ(cs[1]["args"]["calls_per_s"].get<double>(), 150.0);
  EXPECT_FALSE(cs[1]["args"].contains("lat_p99_ns"));
  EXPECT_DOUBLE_EQ(cs[2]["ts"].get<double>(), 13'000'000.0);
  EXPECT_EQ(cs[2]["args"], cs[1]["args"]);
  EXPECT_EQ(j["otherData"]["samples"], 3);
}

TEST(RecordingExport, WindowAndCpuSelection) {
  Meta m = synthetic_meta(4);
  TempDir dir("window");
  auto written = write_recording(dir / "w.shot", m, 10, true);  // samples at +0 .. +9 s
  ExportOptions o;
  o.from_s = 2;
  o.to_s = 5;
  o.cpus = {1, 3};
  std::string plain = run_export(dir / "w.shot", o);
  auto rows = parse_csv(plain);
  ASSERT_EQ(rows.size(), 1u + 3 * 2) << "samples at +2..+5 s: three intervals, two CPUs";
  EXPECT_EQ(rows[1][0], "3.000000");
  EXPECT_EQ(rows[1][1], "1");
  EXPECT_EQ(rows[2][1], "3");
  EXPECT_EQ(rows[6][0], "5.000000");
  // Seeking to the window first (as the export command does) changes nothing.
  auto r = RecordingReader::open(dir / "w.shot");
  Sample first;
  ASSERT_TRUE(r->next(first));
  o.t0_mono_ns = first.mono_ns;
  ASSERT_TRUE(r->seek_time(first.mono_ns + 2'000'000'000));
  std::ostringstream out;
  auto res = export_samples(*r, out, o, [] { return SourceInfo{}; });
  EXPECT_EQ(out.str(), plain);
  EXPECT_EQ(res.samples, 4u);
  EXPECT_EQ(res.intervals, 3u);
}

TEST(RecordingExport, UnknownFormatIsAnError) {
  EXPECT_EQ(parse_export_format("perfetto"), ExportFormat::perfetto);
  EXPECT_THROW(parse_export_format("xml"), std::invalid_argument);
}

TEST(RecordingInfo, SummarizesACleanFile) {
  Known k;
  TempDir dir("info");
  std::string path = k.write(dir / "k.shot");
  auto r = RecordingReader::open(path);
  auto j = recording_info(*r, path);
  EXPECT_EQ(j["schema"], "schedhot.info/1");
  EXPECT_EQ(j["format"], fmt::format("{}.{}", kFormatMajor, kFormatMinor));
  EXPECT_EQ(j["host"]["online"], "0-3");
  EXPECT_EQ(j["host"]["possible_cpus"], 4);
  EXPECT_TRUE(j["topology"].is_null());
  EXPECT_EQ(j["probes_attached"], 8);
  EXPECT_EQ(j["probes"].size(), 9u);
  const auto& in = j["integrity"];
  EXPECT_EQ(in["samples"], 3);
  EXPECT_EQ(in["frames"], 6) << "META, 3 samples, INDEX, END";
  EXPECT_EQ(in["keyframes"], 1);
  EXPECT_DOUBLE_EQ(in["span_s"].get<double>(), 3.0);
  EXPECT_EQ(in["index"]["status"], "present");
  EXPECT_EQ(in["complete"], true);
  EXPECT_TRUE(in["damage"].is_null());
  EXPECT_GT(in["bytes_per_sample"].get<double>(), 30.0);
  std::string text = render_info_text(j);
  EXPECT_NE(text.find("clean (END frame)"), std::string::npos) << text;
  EXPECT_NE(text.find("8 of 9 attached"), std::string::npos) << text;
  EXPECT_NE(text.find("nohz_kick    unavailable  fentry refused: EPERM (test)"), std::string::npos) << text;
}

TEST(RecordingInfo, NamesADamagedTail) {
  Meta m = synthetic_meta(2);
  m.host.topology = {{0, 0, 0, 0, 0, 0}, {1, 0, 0, 0, 0, 0}};
  TempDir dir("infodmg");
  write_recording(dir / "a.shot", m, 10, false);
  const uint64_t cut = copy_cut_inside(dir / "a.shot", dir / "b.shot", 7, 100) + 100;
  auto r = RecordingReader::open(dir / "b.shot");
  auto j = recording_info(*r, dir / "b.shot");
  const auto& in = j["integrity"];
  EXPECT_EQ(in["samples"], 7);
  EXPECT_EQ(in["complete"], false);
  EXPECT_EQ(in["index"]["status"], "absent");
  ASSERT_FALSE(in["damage"].is_null());
  EXPECT_EQ(in["damage"]["offset"], cut - 100);
  EXPECT_NE(in["damage"]["reason"].get<std::string>().find("truncated"), std::string::npos);
  EXPECT_EQ(j["topology"]["cores"], 1);
  EXPECT_EQ(j["topology"]["packages"], 1);
  std::string text = render_info_text(j);
  EXPECT_NE(text.find(fmt::format("DAMAGED at byte {}", cut - 100)), std::string::npos) << text;
  EXPECT_NE(text.find("the 7 samples before it are intact"), std::string::npos) << text;
}

namespace {

ExportRequest export_request(const std::string& file, const std::string& output) {
  ExportRequest req;
  req.file = file;
  req.output = output;
  return req;
}

}  // namespace

TEST(ExportCommand, WritesTheFileAndReturnsSuccess) {
  Known k;
  TempDir dir("expcmd");
  const std::string path = k.write(dir / "k.shot");
  std::ostringstream out;
  const CommandOutput res = export_command(export_request(path, dir / "k.csv"), out);
  EXPECT_EQ(res.status, 0);
  EXPECT_TRUE(res.errors.empty());
  EXPECT_TRUE(out.str().empty()) << "-o FILE: nothing on stdout";
  EXPECT_EQ(parse_csv(slurp(dir / "k.csv")).size(), 1u + 2u * 4u) << "a header, 2 intervals x 4 CPUs";
  const CommandOutput to_stdout = export_command(export_request(path, "-"), out);
  EXPECT_EQ(to_stdout.status, 0);
  EXPECT_EQ(out.str(), slurp(dir / "k.csv")) << "the same bytes on stdout";
}

TEST(ExportCommand, NothingAfterFromIsAnErrorAndWritesNothing) {
  Known k;
  TempDir dir("expfrom");
  const std::string path = k.write(dir / "k.shot");
  ExportRequest req = export_request(path, dir / "out.csv");
  req.opts.from_s = 100;
  req.from = "100s";
  std::ostringstream out;
  const CommandOutput res = export_command(req, out);
  EXPECT_EQ(res.status, 1);
  ASSERT_EQ(res.errors.size(), 1u);
  EXPECT_EQ(res.errors[0], path + ": no samples at or after --from 100s; the samples span +0..+3.00 s");
  EXPECT_FALSE(std::filesystem::exists(dir / "out.csv"));
}

TEST(ExportCommand, AWindowWithOneSampleIsAnErrorAndLeavesNoFile) {
  Known k;  // samples at +0, +1, +3 s
  TempDir dir("expone");
  const std::string path = k.write(dir / "k.shot");
  ExportRequest req = export_request(path, dir / "out.csv");
  req.opts.from_s = 2.5;
  req.from = "2.5";
  std::ostringstream out;
  const CommandOutput res = export_command(req, out);
  EXPECT_EQ(res.status, 1);
  ASSERT_EQ(res.errors.size(), 1u);
  EXPECT_EQ(res.errors[0], path + ": 1 sample in the window --from 2.5, need two for an interval");
  // To stdout, nothing is written before the failure (no CSV header of an empty export).
  ExportRequest to_out = export_request(path, "-");
  to_out.opts.from_s = 2.5;
  std::ostringstream sink;
  EXPECT_EQ(export_command(to_out, sink).status, 1);
  EXPECT_EQ(sink.str(), "");
  for (const auto& e : std::filesystem::directory_iterator(dir.path))
    EXPECT_EQ(e.path().filename(), "k.shot") << "no temporary file left";
}

TEST(ExportCommand, BadOutputPathsAreErrors) {
  Known k;
  TempDir dir("expout");
  const std::string path = k.write(dir / "k.shot");
  std::ostringstream out;
  CommandOutput res = export_command(export_request(path, dir.path), out);
  EXPECT_EQ(res.status, 2) << "a directory is a usage error";
  ASSERT_EQ(res.errors.size(), 1u);
  EXPECT_EQ(res.errors[0], "-o " + dir.path + ": is a directory");

  res = export_command(export_request(path, path), out);
  EXPECT_EQ(res.status, 2);
  ASSERT_EQ(res.errors.size(), 1u);
  EXPECT_EQ(res.errors[0], "-o " + path + ": is the recording being exported");

  spit(dir / "old.csv", "keep");
  res = export_command(export_request(path, dir / "old.csv"), out);
  EXPECT_EQ(res.status, 1);
  ASSERT_EQ(res.errors.size(), 1u);
  EXPECT_EQ(res.errors[0], dir / "old.csv" + " exists; choose another name or pass --force");
  EXPECT_EQ(slurp(dir / "old.csv"), "keep");

  res = export_command(export_request(path, dir / "no/such/dir.csv"), out);
  EXPECT_EQ(res.status, 1);
  ASSERT_EQ(res.errors.size(), 1u);
  EXPECT_EQ(res.errors[0].rfind("cannot write " + dir / "no/such/dir.csv" + ": ", 0), 0u) << res.errors[0];
  EXPECT_TRUE(out.str().empty());
}

TEST(ExportCommand, ACpuNotInTheRecordingIsAUsageError) {
  Known k;
  TempDir dir("expcpu");
  const std::string path = k.write(dir / "k.shot");
  ExportRequest req = export_request(path, "-");
  req.cpus = {7};
  std::ostringstream out;
  const CommandOutput res = export_command(req, out);
  EXPECT_EQ(res.status, 2);
  ASSERT_EQ(res.errors.size(), 1u);
  EXPECT_EQ(res.errors[0], "--cpus: CPU 7 is not in the recording (4 CPUs)");
  EXPECT_TRUE(out.str().empty());
}

TEST(InfoCommand, RendersTheDocumentOrSaysWhyNot) {
  Known k;
  TempDir dir("infocmd");
  const std::string path = k.write(dir / "k.shot");
  InfoRequest req;
  req.file = path;
  req.format = "json";
  CommandOutput res = info_command(req);
  EXPECT_EQ(res.status, 0);
  EXPECT_TRUE(res.errors.empty());
  auto j = nlohmann::json::parse(res.out);
  EXPECT_EQ(j["schema"], "schedhot.info/1");
  EXPECT_EQ(j["integrity"]["samples"], 3);
  req.format = "text";
  res = info_command(req);
  EXPECT_EQ(res.status, 0);
  EXPECT_NE(res.out.find("clean (END frame)"), std::string::npos) << res.out;

  req.file = dir / "missing.shot";
  res = info_command(req);
  EXPECT_EQ(res.status, 1);
  ASSERT_EQ(res.errors.size(), 1u);
  EXPECT_NE(res.errors[0].find(dir / "missing.shot"), std::string::npos) << res.errors[0];
  EXPECT_TRUE(res.out.empty());

  spit(dir / "junk.shot", "not a recording at all, just some bytes");
  req.file = dir / "junk.shot";
  res = info_command(req);
  EXPECT_EQ(res.status, 1);
  EXPECT_EQ(res.errors.size(), 1u);

  std::atomic<bool> stop{true};
  req.file = path;
  req.stop = &stop;
  res = info_command(req);
  EXPECT_EQ(res.status, 130);
  ASSERT_EQ(res.errors.size(), 1u);
  EXPECT_EQ(res.errors[0], "interrupted");
}

// ---- the coherence model's lines in the export ---------------------------------------

namespace {

/// Two samples of 4 CPUs 1 s apart: cpupri_set calls +100 on CPUs 1 and 2 (no noop), so
/// each stores cpu_to_pri[cpu] 100 times/s, both in line 0 of cpu_to_pri[]. The model
/// (model/coherence.h): write transfers of c = w_c (L - r_c - w_c) / (L - r_c) =
/// 100 x 100 / 200 = 50/s per CPU, 100/s on the line.
struct TwoWriters {
  Meta m;
  std::vector<Sample> s;
  explicit TwoWriters(std::vector<std::string> unavailable = {}) : m(synthetic_meta(4, unavailable)) {
    const int cs = m.probe_index("cpupri_set");
    Sample a = make_sample(m);
    a.mono_ns = 10'000'000'000;
    s.push_back(a);
    a.seq = 1;
    a.mono_ns += 1'000'000'000;
    if (m.probes[size_t(cs)].status.attached)
      for (int cpu : {1, 2}) a.probes[cs].words.mut(word(m, cs, cpu, "calls")) += 100;
    s.push_back(a);
  }
  std::string write(const std::string& path) const {
    WriterOptions wo;
    wo.overwrite = true;
    RecordingWriter w(path, m, wo);
    for (auto& x : s) w.write_sample(x);
    w.close();
    return path;
  }
};

const char* kToPri = "cpupri.cpu_to_pri line 0";

}  // namespace

TEST(RecordingExport, CsvHasAColumnPerModeledLineWithEachCpusTransfers) {
  TwoWriters k;
  TempDir dir("lines_csv");
  auto rows = parse_csv(run_export(k.write(dir / "k.shot"), ExportOptions{}));
  ASSERT_EQ(rows.size(), 1u + 4);
  const auto& head = rows[0];
  auto col = [&](const std::string& n) {
    auto it = std::find(head.begin(), head.end(), n);
    EXPECT_NE(it, head.end()) << n;
    return static_cast<size_t>(it - head.begin());
  };
  const size_t pri = col(std::string("xfers_per_s:") + kToPri), nohz = col("xfers_per_s:nohz"),
               vec0 = col("xfers_per_s:cpupri.pri_to_cpu[0].mask"), lock = col("xfers_per_s:tick_broadcast_lock");
  EXPECT_GT(pri, col("idle.lat_p99_ns")) << "after the probe metrics";
  for (auto& r : rows) ASSERT_EQ(r.size(), head.size());
  EXPECT_EQ(rows[1][pri], "0.000") << "CPU 0 does not touch it";
  EXPECT_EQ(rows[2][pri], "50.000");
  EXPECT_EQ(rows[3][pri], "50.000");
  EXPECT_EQ(rows[4][pri], "0.000");
  for (size_t i = 1; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i][nohz], "0.000") << "measured (nohz_exit, nohz_enter attached) and idle: 0";
    EXPECT_EQ(rows[i][vec0], "0.000");
    EXPECT_EQ(rows[i][lock], "0.000");
  }
  // Every pri_to_cpu[i].mask of the assumed (OFFSTACK) layout has its column: the columns
  // depend on the recording's probes and layout, not on what this file's counts touched.
  EXPECT_NE(std::find(head.begin(), head.end(), "xfers_per_s:cpupri.pri_to_cpu[100].mask"), head.end());
}

TEST(RecordingExport, ALineWhoseProbesAreAllAbsentIsBlankNeverZero) {
  TwoWriters k({"cpupri_set", "cpupri_find"});
  TempDir dir("lines_blank");
  const std::string path = k.write(dir / "k.shot");
  auto rows = parse_csv(run_export(path, ExportOptions{}));
  const auto& head = rows[0];
  const auto pri = std::find(head.begin(), head.end(), std::string("xfers_per_s:") + kToPri) - head.begin();
  const auto nohz = std::find(head.begin(), head.end(), "xfers_per_s:nohz") - head.begin();
  ASSERT_LT(size_t(pri), head.size());
  ASSERT_LT(size_t(nohz), head.size());
  for (size_t i = 1; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i][size_t(pri)], "") << "only cpupri_set touches cpu_to_pri[], and it is unavailable";
    EXPECT_EQ(rows[i][size_t(nohz)], "0.000");
  }
  auto j = nlohmann::json::parse(run_export(path, ExportOptions{ExportFormat::json}));
  EXPECT_TRUE(j["intervals"][0]["lines"].empty());
  const auto trace = nlohmann::json::parse(run_export(path, ExportOptions{ExportFormat::perfetto}));  // kept alive
  for (auto& e : trace["traceEvents"]) EXPECT_NE(e.value("name", ""), std::string("xfer/s ") + kToPri);
}

TEST(RecordingExport, JsonListsEachIntervalsLinesAndPerfettoHasATrackPerLine) {
  TwoWriters k;
  TempDir dir("lines_json");
  const std::string path = k.write(dir / "k.shot");
  auto j = nlohmann::json::parse(run_export(path, ExportOptions{ExportFormat::json}));
  const auto& head = j["cachelines"];
  EXPECT_EQ(head["line_bytes"], 64);
  EXPECT_EQ(head["layout_recorded"], false);
  bool listed = false;
  for (auto& l : head["lines"])
    if (l["name"] == kToPri) {
      listed = true;
      EXPECT_EQ(l["object"], "cpupri.cpu_to_pri");
      EXPECT_EQ(l["family"], "cpupri");
      EXPECT_EQ(l["probes"], nlohmann::json({"cpupri_set"}));
    }
  EXPECT_TRUE(listed);
  const auto& lines = j["intervals"][0]["lines"];
  ASSERT_EQ(lines.size(), 1u) << lines.dump();
  EXPECT_EQ(lines[0]["name"], kToPri);
  EXPECT_DOUBLE_EQ(lines[0]["reads_per_s"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(lines[0]["writes_per_s"].get<double>(), 200.0);
  EXPECT_DOUBLE_EQ(lines[0]["xfers_per_s"].get<double>(), 100.0);
  double by = 0;
  for (auto& [d, x] : lines[0]["by_distance"].items()) by += x.get<double>();
  EXPECT_DOUBLE_EQ(by, 100.0);
  EXPECT_EQ(lines[0]["by_distance"].size(), 4u);

  auto t = nlohmann::json::parse(run_export(path, ExportOptions{ExportFormat::perfetto}));
  std::vector<nlohmann::json> track;
  for (auto& e : t["traceEvents"])
    if (e["ph"] == "C" && e["name"] == std::string("xfer/s ") + kToPri) track.push_back(e);
  ASSERT_EQ(track.size(), 2u) << "the interval and the closing event";
  EXPECT_EQ(track[0]["pid"], 1) << "under all CPUs";
  EXPECT_DOUBLE_EQ(track[0]["ts"].get<double>(), 10'000'000.0);
  EXPECT_DOUBLE_EQ(track[0]["args"]["xfers_per_s"].get<double>(), 100.0);
  EXPECT_DOUBLE_EQ(track[1]["ts"].get<double>(), 11'000'000.0);
}

// The export's per-interval figures, averaged over time, are the report's: both come from
// the same model (one CoherenceAccumulator), over the same window.
TEST(RecordingExport, LineFiguresAverageToTheReportsCachelines) {
  const std::string file = std::string(SCHEDHOT_DATA) + "/vm-7.3.shot";
  for (auto [from, to] : {std::pair{-1.0, -1.0}, std::pair{2.0, 6.0}}) {
    SCOPED_TRACE(fmt::format("window {} .. {}", from, to));
    ExportRequest er = export_request(file, "-");
    er.opts.format = ExportFormat::json;
    er.opts.from_s = from;
    er.opts.to_s = to;
    std::ostringstream out;
    ASSERT_EQ(export_command(er, out).status, 0);
    const auto ex = nlohmann::json::parse(out.str());
    ReportRequest rr;
    rr.file = file;
    rr.format = "json";
    rr.opts.from_s = from;
    rr.opts.to_s = to;
    auto reader = RecordingReader::open(file);
    const CommandOutput rep = report_command(*reader, reader.get(), rr);
    ASSERT_EQ(rep.status, 0);
    const auto c = nlohmann::json::parse(rep.out)["cachelines"];
    ASSERT_FALSE(c["lines"].empty());
    struct Sum {
      double reads = 0, writes = 0, xfers = 0;
      std::map<std::string, double> by;
    };
    std::map<std::string, Sum> sums;
    double secs = 0;
    for (auto& iv : ex["intervals"]) {
      const double s = iv["seconds"].get<double>();
      secs += s;
      for (auto& l : iv["lines"]) {
        Sum& x = sums[l["name"].get<std::string>()];
        x.reads += l["reads_per_s"].get<double>() * s;
        x.writes += l["writes_per_s"].get<double>() * s;
        x.xfers += l["xfers_per_s"].get<double>() * s;
        for (auto& [d, v] : l["by_distance"].items()) x.by[d] += v.get<double>() * s;
      }
    }
    EXPECT_NEAR(secs, nlohmann::json::parse(rep.out)["window"]["seconds"].get<double>(), 1e-9);
    EXPECT_EQ(sums.size(), c["lines"].size()) << "the same lines";
    int nonzero = 0;
    for (auto& l : c["lines"]) {
      const std::string name = l["name"].get<std::string>();
      SCOPED_TRACE(name);
      ASSERT_TRUE(sums.count(name));
      const Sum& x = sums[name];
      auto near = [](double a, double b) { EXPECT_NEAR(a, b, 1e-9 * std::max(1.0, std::abs(b))); };
      near(x.reads / secs, l["reads_per_s"].get<double>());
      near(x.writes / secs, l["writes_per_s"].get<double>());
      near(x.xfers / secs, l["xfers_per_s"].get<double>());
      for (auto& [d, v] : l["by_distance"].items()) near(x.by.at(d) / secs, v.get<double>());
      nonzero += l["xfers_per_s"].get<double>() > 1;
    }
    EXPECT_GE(nonzero, 5) << "the recording has traffic on most lines";
  }
}

// CSV rows of an interval add up to that interval's line total in the JSON.
TEST(RecordingExport, CsvLineColumnsAddUpToTheJsonLineTotals) {
  const std::string file = std::string(SCHEDHOT_DATA) + "/vm-7.3.shot";
  ExportRequest er = export_request(file, "-");
  std::ostringstream csv, json;
  ASSERT_EQ(export_command(er, csv).status, 0);
  er.opts.format = ExportFormat::json;
  ASSERT_EQ(export_command(er, json).status, 0);
  const auto rows = parse_csv(csv.str());
  const auto ex = nlohmann::json::parse(json.str());
  const size_t ncpus = ex["cpus"].size();
  ASSERT_EQ(rows.size(), 1 + ncpus * ex["intervals"].size());
  int checked = 0;
  for (size_t i = 0; i < ex["intervals"].size(); ++i)
    for (auto& l : ex["intervals"][i]["lines"]) {
      const auto c = std::find(rows[0].begin(), rows[0].end(), "xfers_per_s:" + l["name"].get<std::string>()) - rows[0].begin();
      ASSERT_LT(size_t(c), rows[0].size()) << l["name"];
      double sum = 0;
      for (size_t r = 0; r < ncpus; ++r) {
        const std::string& cell = rows[1 + i * ncpus + r][size_t(c)];
        if (!cell.empty()) sum += std::stod(cell);
      }
      EXPECT_NEAR(sum, l["xfers_per_s"].get<double>(), 0.0005 * ncpus + 1e-9) << l["name"] << " interval " << i;
      ++checked;
    }
  EXPECT_GT(checked, 10);
}

TEST(InfoCommand, ShowsTheRecordedLayoutAndFixesOrSaysItIsNotRecorded) {
  TempDir dir("info_layout");
  Known old;  // no layout: made before layouts were recorded
  const std::string a = old.write(dir / "old.shot");
  CommandOutput res = info_command(InfoRequest{a, "text"});
  ASSERT_EQ(res.status, 0);
  EXPECT_NE(res.out.find("\nlayout     layout not recorded (an older recording)"), std::string::npos) << res.out;
  EXPECT_NE(res.out.find("\nfixes      nohz.nr_cpus unknown (layout not recorded); cpupri_vec.count unknown (layout "
                         "not recorded); tick_broadcast_lock unknown (layout not recorded)\n"),
            std::string::npos)
      << res.out;
  auto j = nlohmann::json::parse(info_command(InfoRequest{a, "json"}).out);
  EXPECT_TRUE(j["layout"].is_null());
  EXPECT_TRUE(j["fixes"]["nohz_nr_cpus_removed"].is_null());
  EXPECT_TRUE(j["fixes"]["bcast_lock_own_line"].is_null());

  Known k;  // a 6.x layout read from BTF, KALLSYMS_ALL off
  CoherenceLayout L = assumed_layout("6.18.44", 64);
  L.notes = {"cacheline size 64 B"};
  L.btf_source = "/sys/kernel/btf/vmlinux";
  L.bcast_lock.reason = "unknown: KALLSYMS_ALL off (no static data symbols in the symbol table)";
  k.m.layout = L;
  const std::string b = k.write(dir / "new.shot");
  res = info_command(InfoRequest{b, "text"});
  ASSERT_EQ(res.status, 0);
  EXPECT_NE(res.out.find("\nlayout     BTF /sys/kernel/btf/vmlinux; tick_broadcast_lock unknown (KALLSYMS_ALL off (no "
                         "static data symbols in the symbol table)); cacheline 64 B\n"),
            std::string::npos)
      << res.out;
  EXPECT_NE(res.out.find("\nfixes      nohz.nr_cpus present (fix absent); cpupri_vec.count present (fix absent); "
                         "tick_broadcast_lock unknown (KALLSYMS_ALL off (no static data symbols in the symbol table))\n"),
            std::string::npos)
      << res.out;
  j = nlohmann::json::parse(info_command(InfoRequest{b, "json"}).out);
  EXPECT_EQ(j["layout"]["btf_source"], "/sys/kernel/btf/vmlinux");
  EXPECT_EQ(j["layout"]["line_bytes"], 64);
  EXPECT_EQ(j["fixes"]["nohz_nr_cpus_removed"], false);
  EXPECT_EQ(j["fixes"]["cpupri_count_removed"], false);
  EXPECT_TRUE(j["fixes"]["bcast_lock_own_line"].is_null());
  EXPECT_EQ(j["fixes"]["text"], to_string(fixes_present(L)));
}

// A recording made with --exact (v1.3-exact.shot: 4 CPUs, EXACT records in every interval):
// each interval's lines carry the exact count and the gap model of that interval's records,
// run after the previous interval's (ExactAccumulator::interval()), in JSON, CSV and
// Perfetto; cachelines.estimate says what xfers_per_s is.
TEST(RecordingExport, ExactAndGapFiguresPerIntervalNextToTheModel) {
  const std::string file = std::string(SCHEDHOT_DATA) + "/v1.3-exact.shot";
  ExportRequest er = export_request(file, "-");
  er.opts.format = ExportFormat::json;
  std::ostringstream json, csv, trace;
  ASSERT_EQ(export_command(er, json).status, 0);
  const auto ex = nlohmann::json::parse(json.str());
  EXPECT_EQ(ex["cachelines"]["estimate"], "independent arrivals");
  EXPECT_EQ(ex["cachelines"]["exact"], true);

  // The expected figures, from the samples as the reader gives them.
  auto r = RecordingReader::open(file);
  const Meta& meta = r->meta();
  const std::vector<PossibleLine> possible = possible_lines(meta, layout_of(meta));
  std::vector<Sample> samples;
  for (Sample s; r->next(s);) samples.push_back(s);
  ASSERT_EQ(samples.size(), 70u);
  ASSERT_EQ(ex["intervals"].size(), 69u);
  ExactAccumulator x(meta);
  int lines_checked = 0, with_transfers = 0;
  uint64_t records = 0;
  for (size_t i = 0; i < ex["intervals"].size(); ++i) {
    SCOPED_TRACE(fmt::format("interval {}", i));
    const auto& iv = ex["intervals"][i];
    const Sample &a = samples[i], &b = samples[i + 1];
    ASSERT_TRUE(b.exact);
    x.interval(a.exact ? &*a.exact : nullptr, iv["seconds"].get<double>(), *b.exact);
    EXPECT_EQ(iv["exact"]["records"], x.records());
    EXPECT_EQ(iv["exact"]["records"], b.exact->records.size()) << "none skipped";
    EXPECT_EQ(iv["exact"]["lost"], b.exact->lost);
    records += iv["exact"]["records"].get<uint64_t>();
    for (const auto& l : iv["lines"]) {
      const std::string name = l["name"].get<std::string>();
      auto p = std::find_if(possible.begin(), possible.end(), [&](const PossibleLine& q) { return q.name == name; });
      ASSERT_NE(p, possible.end()) << name;
      const LineTraffic e = x.traffic(p->key).value_or(LineTraffic{}), g = x.gap_traffic(p->key).value_or(LineTraffic{});
      ASSERT_TRUE(l.contains("exact") && l.contains("gap")) << l.dump();
      EXPECT_DOUBLE_EQ(l["exact"]["xfers_per_s"].get<double>(), e.total()) << name;
      EXPECT_DOUBLE_EQ(l["exact"]["read_xfers_per_s"].get<double>(), e.read_xfers_per_s) << name;
      EXPECT_DOUBLE_EQ(l["exact"]["write_xfers_per_s"].get<double>(), e.write_xfers_per_s) << name;
      EXPECT_DOUBLE_EQ(l["gap"]["xfers_per_s"].get<double>(), g.total()) << name;
      if (e.total() > 0) {
        EXPECT_DOUBLE_EQ(l["exact"]["ratio"].get<double>(), l["xfers_per_s"].get<double>() / e.total());
        EXPECT_DOUBLE_EQ(l["gap"]["ratio"].get<double>(), g.total() / e.total());
        ++with_transfers;
      } else {
        EXPECT_TRUE(l["exact"]["ratio"].is_null());
      }
      ++lines_checked;
    }
  }
  EXPECT_EQ(records, 140u - 0u) << "every record of the file, once (v1.3-exact.expect.json: 140)";
  EXPECT_GT(lines_checked, 20);
  EXPECT_EQ(with_transfers, 0) << "its records are nohz_kick's reads of the nohz line: no transfer (cold reads)";

  // The first interval starts from nothing, as report's window does: report --to over it
  // gives the same exact and gap figures.
  {
    ReportRequest rr;
    rr.file = file;
    rr.format = "json";
    rr.opts.to_s = 1;
    auto reader = RecordingReader::open(file);
    const CommandOutput rep = report_command(*reader, reader.get(), rr);
    ASSERT_EQ(rep.status, 0);
    const auto c = nlohmann::json::parse(rep.out)["cachelines"];
    EXPECT_EQ(c["estimate"], "independent arrivals");
    ASSERT_EQ(nlohmann::json::parse(rep.out)["window"]["samples"], 2);
    const auto& lines0 = ex["intervals"][0]["lines"];
    ASSERT_EQ(c["lines"].size(), lines0.size());
    for (size_t k = 0; k < lines0.size(); ++k) {
      EXPECT_EQ(c["lines"][k]["name"], lines0[k]["name"]);
      EXPECT_DOUBLE_EQ(c["lines"][k]["exact"]["xfers_per_s"].get<double>(), lines0[k]["exact"]["xfers_per_s"].get<double>());
      EXPECT_DOUBLE_EQ(c["lines"][k]["gap"]["xfers_per_s"].get<double>(), lines0[k]["gap"]["xfers_per_s"].get<double>());
    }
  }

  // CSV: exact and gap columns per line and CPU that add up to the JSON's line figures.
  er.opts.format = ExportFormat::csv;
  ASSERT_EQ(export_command(er, csv).status, 0);
  const auto rows = parse_csv(csv.str());
  const size_t ncpus = ex["cpus"].size();
  ASSERT_EQ(rows.size(), 1 + ncpus * ex["intervals"].size());
  int csv_checked = 0;
  for (size_t i = 0; i < ex["intervals"].size(); ++i)
    for (auto& l : ex["intervals"][i]["lines"])
      for (const char* what : {"exact", "gap"}) {
        const std::string col = std::string(what) + "_xfers_per_s:" + l["name"].get<std::string>();
        const auto c = std::find(rows[0].begin(), rows[0].end(), col) - rows[0].begin();
        ASSERT_LT(size_t(c), rows[0].size()) << col;
        double sum = 0;
        const bool touched = l["exact"]["touched"].get<bool>();
        for (size_t q = 0; q < ncpus; ++q) {
          const std::string& cell = rows[1 + i * ncpus + q][size_t(c)];
          // every CPU is online: a cell is empty exactly when no record named the line
          ASSERT_EQ(cell.empty(), !touched) << col << " interval " << i;
          if (!cell.empty()) sum += std::stod(cell);
        }
        EXPECT_NEAR(sum, l[what]["xfers_per_s"].get<double>(), 0.0005 * ncpus + 1e-9) << col << " interval " << i;
        ++csv_checked;
      }
  EXPECT_GT(csv_checked, 40);
  // The model's columns keep their names; the exact and gap ones follow them, line by line.
  const auto first_model = std::find_if(rows[0].begin(), rows[0].end(), [](const std::string& h) { return h.rfind("xfers_per_s:", 0) == 0; });
  const auto first_exact = std::find_if(rows[0].begin(), rows[0].end(), [](const std::string& h) { return h.rfind("exact_xfers_per_s:", 0) == 0; });
  const auto first_gap = std::find_if(rows[0].begin(), rows[0].end(), [](const std::string& h) { return h.rfind("gap_xfers_per_s:", 0) == 0; });
  EXPECT_LT(first_model, first_exact);
  EXPECT_EQ(first_exact - first_model, first_gap - first_exact) << "as many exact columns as model columns";
  EXPECT_EQ(first_gap + (first_exact - first_model), rows[0].end());

  // Perfetto: the line tracks' events carry the exact and gap figures.
  er.opts.format = ExportFormat::perfetto;
  ASSERT_EQ(export_command(er, trace).status, 0);
  const auto t = nlohmann::json::parse(trace.str());
  int events = 0;
  for (auto& e : t["traceEvents"])
    if (e["ph"] == "C" && e["name"].get<std::string>().rfind("xfer/s ", 0) == 0) {
      EXPECT_TRUE(e["args"].contains("exact_xfers_per_s") && e["args"].contains("gap_xfers_per_s")) << e.dump();
      ++events;
    }
  EXPECT_GT(events, 20);
}

// Without EXACT frames nothing of it: the model's figures, labelled.
TEST(RecordingExport, NoExactFiguresWithoutExactFrames) {
  const std::string file = std::string(SCHEDHOT_DATA) + "/vm-7.3.shot";
  ExportRequest er = export_request(file, "-");
  er.opts.format = ExportFormat::json;
  std::ostringstream json, csv;
  ASSERT_EQ(export_command(er, json).status, 0);
  const auto ex = nlohmann::json::parse(json.str());
  EXPECT_EQ(ex["cachelines"]["estimate"], "independent arrivals");
  EXPECT_EQ(ex["cachelines"]["exact"], false);
  for (auto& iv : ex["intervals"]) {
    EXPECT_FALSE(iv.contains("exact"));
    for (auto& l : iv["lines"]) EXPECT_FALSE(l.contains("exact") || l.contains("gap")) << l.dump();
  }
  er.opts.format = ExportFormat::csv;
  ASSERT_EQ(export_command(er, csv).status, 0);
  EXPECT_EQ(csv.str().find("exact_xfers_per_s:"), std::string::npos);
  EXPECT_EQ(csv.str().find("gap_xfers_per_s:"), std::string::npos);
}

// Known exact figures: cpupri_set calls alternating between CPUs 1 and 2 (10 records an
// interval, each a write of cpupri.cpu_to_pri line 0). The first interval's first write is
// a cold miss (9 transfers/s); the second's runs after the first's records, which left
// CPU 2 the owner, so its first write (CPU 1) is a transfer too (10/s). The gap figure is
// the gap model of the same records (ExactAccumulator::gap_traffic).
TEST(RecordingExport, ExactFiguresOfKnownRecords) {
  TwoWriters k;
  const int cs = k.m.probe_index("cpupri_set");
  const uint32_t calls = k.m.probes[size_t(cs)].slot.find("calls")->offset;
  auto batch = [&](uint64_t end_ns) {
    ExactBatch b;
    for (uint32_t r = 0; r < 10; ++r)
      b.records.push_back({end_ns - 1'000'000'000 + (r + 1) * 50'000'000, r % 2 ? 2u : 1u, uint16_t(cs), uint16_t(calls)});
    return b;
  };
  k.s[1].exact = batch(k.s[1].mono_ns);
  Sample c = k.s[1];
  c.seq = 2;
  c.mono_ns += 1'000'000'000;
  for (int cpu : {1, 2}) c.probes[cs].words.mut(word(k.m, cs, cpu, "calls")) += 100;
  c.exact = batch(c.mono_ns);
  k.s.push_back(c);
  TempDir dir("exact_known");
  const std::string path = k.write(dir / "k.shot");
  auto j = nlohmann::json::parse(run_export(path, ExportOptions{ExportFormat::json}));
  ASSERT_EQ(j["intervals"].size(), 2u);
  EXPECT_EQ(j["cachelines"]["exact"], true);
  for (size_t i = 0; i < 2; ++i) {
    SCOPED_TRACE(fmt::format("interval {}", i));
    const auto& lines = j["intervals"][i]["lines"];
    ASSERT_EQ(lines.size(), 1u) << lines.dump();
    EXPECT_EQ(lines[0]["name"], kToPri);
    EXPECT_DOUBLE_EQ(lines[0]["xfers_per_s"].get<double>(), 100.0) << "the model, as before";
    EXPECT_DOUBLE_EQ(lines[0]["exact"]["xfers_per_s"].get<double>(), i == 0 ? 9.0 : 10.0);
    EXPECT_DOUBLE_EQ(lines[0]["exact"]["write_xfers_per_s"].get<double>(), i == 0 ? 9.0 : 10.0);
    EXPECT_DOUBLE_EQ(lines[0]["exact"]["ratio"].get<double>(), 100.0 / (i == 0 ? 9.0 : 10.0));
    EXPECT_EQ(j["intervals"][i]["exact"]["records"], 10);
  }
  // The gap model of the same records: writes 100 ms apart on each CPU, the other CPU's in
  // between, so nearly every write misses.
  const double g0 = j["intervals"][0]["lines"][0]["gap"]["xfers_per_s"].get<double>();
  const double g1 = j["intervals"][1]["lines"][0]["gap"]["xfers_per_s"].get<double>();
  EXPECT_GT(g0, 5.0);
  EXPECT_LE(g0, 10.0 + 1e-9);
  EXPECT_GT(g1, 5.0);
  EXPECT_LE(g1, 10.0 + 1e-9);
  // CSV: CPU 1 and CPU 2 each miss their share.
  const auto rows = parse_csv(run_export(path, ExportOptions{ExportFormat::csv}));
  const auto col = std::find(rows[0].begin(), rows[0].end(), std::string("exact_xfers_per_s:") + kToPri) - rows[0].begin();
  ASSERT_LT(size_t(col), rows[0].size());
  EXPECT_EQ(rows[1 + 0 * 4 + 1][size_t(col)], "4.000") << "interval 1, CPU 1: its 2nd..5th writes";
  EXPECT_EQ(rows[1 + 0 * 4 + 2][size_t(col)], "5.000") << "interval 1, CPU 2: all 5";
  EXPECT_EQ(rows[1 + 1 * 4 + 1][size_t(col)], "5.000") << "interval 2, CPU 1: all 5 (CPU 2 owned it)";
  EXPECT_EQ(rows[1 + 1 * 4 + 0][size_t(col)], "0.000") << "CPU 0: none";
}

// A probe name from the META that a spreadsheet would run as a formula (= + - @) lands in
// the header as text: prefixed with ' (the fleet CSV's rule, one helper for both).
TEST(RecordingExport, CsvHeaderCellsFromTheRecordingAreNeverFormulas) {
  for (const char* evil : {"=HYPERLINK(\"http://x\")", "+1", "-1", "@SUM(A1)"}) {
    Known k;
    k.m.probes[k.m.probe_index("cpupri_set")].name = evil;
    TempDir dir("csv_formula");
    const std::string text = run_export(k.write(dir / "k.shot"), ExportOptions{});
    const std::string head = text.substr(0, text.find('\n'));
    const std::string quoted = std::string(evil).find('"') == std::string::npos
                                   ? "'" + std::string(evil) + ".calls_per_s"
                                   : "\"'=HYPERLINK(\"\"http://x\"\").calls_per_s\"";
    EXPECT_NE(head.find("," + quoted + ","), std::string::npos) << head;
    const auto rows = parse_csv(head);
    for (auto& cell : rows[0]) EXPECT_EQ(std::string("=+-@").find(cell.empty() ? 'x' : cell[0]), std::string::npos) << cell;
  }
}
