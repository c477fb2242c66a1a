// The live seam (src/live/session.h) on this kernel: a session attaches what it can,
// samples on its schedule, records what it returns, counts the samples missed between
// them and reads the programs' run time after each; bad probe selections are usage errors.
// Needs root and BPF (label bpf).
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "live/record.h"
#include "live/session.h"
#include "sample/sampler.h"
#include "store/recording.h"

using namespace schedhot;

namespace {

std::string temp_path(const char* name) {
  return std::string(::testing::TempDir()) + "schedhot-session-" + std::to_string(getpid()) + "-" + name;
}

}  // namespace

TEST(LiveSession, RecordsWhatItReturnsWithTheLostSamplesAndRunTime) {
  const std::string path = temp_path("rec.shot");
  std::remove(path.c_str());
  LiveOptions o;
  o.interval_ns = 100'000'000;
  o.duration_ns = 300'000'000;
  o.command_line = "schedhot record (test)";
  o.recording.path = path;
  o.run_stats = true;
  LiveSession s(std::move(o));
  ASSERT_GT(s.attached_count(), 0u);
  EXPECT_LE(s.proxy_count(), s.attached_count());
  ASSERT_EQ(s.meta().probes.size(), s.statuses().size());
  for (size_t i = 0; i < s.statuses().size(); ++i)
    EXPECT_EQ(s.meta().probes[i].status.attached, s.statuses()[i].attached) << s.statuses()[i].probe;
  EXPECT_EQ(s.meta().command, "schedhot record (test)");
  EXPECT_EQ(s.interval(), 100'000'000u);

  std::vector<Sample> got;
  std::vector<BpfRunTotals> runs;
  Sample x;
  while (s.next(x)) {
    got.push_back(x);
    runs.push_back(s.run_totals());
  }
  // The baseline, then one sample a deadline up to the duration's end.
  ASSERT_EQ(got.size(), 4u);
  uint64_t lost = 0;
  for (size_t i = 1; i < got.size(); ++i) {
    EXPECT_GT(got[i].mono_ns, got[i - 1].mono_ns);
    lost += missed_samples(got[i].mono_ns - got[i - 1].mono_ns, 100'000'000);
  }
  EXPECT_EQ(s.lost_samples(), lost);
  EXPECT_EQ(s.run_stats_on(), s.run_stats_error().empty()) << s.run_stats_error();
  if (s.run_stats_on())
    for (size_t i = 1; i < runs.size(); ++i) EXPECT_GE(runs[i].runs, runs[i - 1].runs);

  EXPECT_TRUE(s.recording().recording());
  const std::string wrote = s.close(true);  // the run ended: no final sample to take
  EXPECT_EQ(wrote.rfind("wrote 4 samples, ", 0), 0u) << wrote;
  EXPECT_EQ(s.close(true), wrote) << "idempotent";

  auto r = RecordingReader::open(path);
  EXPECT_EQ(r->meta().command, "schedhot record (test)");
  std::vector<uint64_t> read;
  Sample y;
  while (r->next(y)) read.push_back(y.mono_ns);
  ASSERT_EQ(read.size(), got.size());
  for (size_t i = 0; i < read.size(); ++i) EXPECT_EQ(read[i], got[i].mono_ns);
  std::remove(path.c_str());
}

TEST(LiveSession, AStopTakesOneFinalSample) {
  std::atomic<bool> stop{false};
  LiveOptions o;
  o.interval_ns = 10'000'000'000;  // no deadline within the test
  o.stop = &stop;
  LiveSession s(std::move(o));
  Sample a, b, c;
  ASSERT_TRUE(s.next(a));  // the baseline, at once
  stop.store(true);
  ASSERT_TRUE(s.next(b)) << "the stop's final sample";
  EXPECT_GT(b.mono_ns, a.mono_ns);
  EXPECT_FALSE(s.next(c));
  EXPECT_FALSE(s.recording().recording());
  EXPECT_EQ(s.close(true), "");
  EXPECT_EQ(s.run_stats_error(), "not asked");
}

TEST(LiveSession, ABadProbeSelectionIsAUsageError) {
  const auto status_of = [](const std::string& probes, std::string& msg) {
    LiveOptions o;
    o.probes.probes = probes;
    try {
      LiveSession s(std::move(o));
    } catch (const LiveError& e) {
      msg = e.what();
      return e.status();
    }
    return 0;
  };
  std::string msg;
  EXPECT_EQ(status_of("nosuch", msg), 2);
  EXPECT_EQ(msg.rfind("--probes: no probe named 'nosuch' (probes: ", 0), 0u) << msg;
  EXPECT_EQ(status_of(",", msg), 2);
  EXPECT_EQ(msg, "--probes ',' names no probe (leave it out for all)");
  LiveOptions o;
  o.probes.backend = "warp";
  try {
    LiveSession s(std::move(o));
    ADD_FAILURE() << "--backend warp accepted";
  } catch (const LiveError& e) {
    EXPECT_EQ(e.status(), 2);
    EXPECT_NE(std::string(e.what()).find("warp"), std::string::npos) << e.what();
  }
}

// A stop while the probes attach (Ctrl-C right after launch) records nothing and keeps the
// file --force would have replaced (an attacker's pass, 2026-12-05: the old recording was
// replaced by two samples taken after the signal, and record exited 0).
TEST(LiveSession, RecordStoppedBeforeItsFirstSampleKeepsTheOldFile) {
  const std::string path = temp_path("old.shot");
  { std::ofstream(path) << "an old recording\n"; }
  std::atomic<bool> stop{true};
  RecordRequest r;
  r.output = path;
  r.force = true;
  r.quiet = true;
  r.duration_ns = 1'000'000'000;
  r.interval_ns = 100'000'000;
  r.stop = &stop;
  EXPECT_EQ(record(r), 130);
  std::ifstream in(path);
  std::stringstream got;
  got << in.rdbuf();
  EXPECT_EQ(got.str(), "an old recording\n");
  std::remove(path.c_str());
}
