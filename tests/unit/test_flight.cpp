// The flight recorder (src/store/flight.h, record --flight): synthetic samples 1 s apart
// with caught events placed by hand, fed in order; the files read back.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <map>

#include "store/flight.h"
#include "test_recording_util.h"

using namespace schedhot;
using namespace schedhot::testing;

namespace {

constexpr uint64_t kS = 1'000'000'000ull;

Meta flight_meta_cpus(uint32_t n) {
  Meta m = synthetic_meta(n);
  CatchRule r;
  r.text = "cpupri_set>20us";
  r.probe = "cpupri_set";
  r.asked_ns = 20'000;
  r.threshold_ns = 19'968;
  apply_catch_rules(m, {r});
  m.command = "schedhot record --flight 5s";
  return m;
}

Meta flight_meta() { return flight_meta_cpus(4); }

/// n samples at mono 5 s, 6 s, ... (make_samples), each with an empty caught batch after
/// the baseline, and a cpupri_set event at each mono time of fire_ns (in its sample).
std::vector<Sample> flight_samples(const Meta& m, int n, const std::vector<uint64_t>& fire_ns) {
  std::vector<Sample> v = make_samples(m, n);
  for (size_t i = 1; i < v.size(); ++i) {
    v[i].caught = CatchBatch{};
    for (uint64_t t : fire_ns)
      if (t > v[i - 1].mono_ns && t <= v[i].mono_ns) {
        CaughtEvent e;
        e.ts_ns = t;
        e.dur_ns = 25'000;
        e.cpu = 1;
        e.probe = uint16_t(SH_P_CPUPRI_SET);
        e.pid = e.tgid = 77;
        e.comm = "fifo";
        v[i].caught->events.push_back(e);
      }
  }
  return v;
}

struct FileRead {
  std::vector<Sample> samples;
  bool complete = false;
  std::string command;
  uint64_t events = 0;
};

FileRead read_flight(const std::string& f) {
  FileRead out;
  auto r = RecordingReader::open(f);
  out.samples = read_all(*r);
  out.complete = r->saw_end() && !r->damage();
  out.command = r->meta().command;
  for (auto& s : out.samples)
    if (s.caught) out.events += s.caught->events.size();
  return out;
}

/// Collects what the recorder says: its say callback points at this FlightRun, which must
/// outlive the recorder (a temporary does not: stack-use-after-scope under ASan).
struct FlightRun {
  std::vector<std::string> said;
  FlightOptions opts(uint64_t window_ns, unsigned max_files = 100) {
    FlightOptions o;
    o.window_ns = window_ns;
    o.interval_ns = kS;
    o.max_files = max_files;
    o.say = [this](const std::string& m) { said.push_back(m); };
    return o;
  }
};

uint64_t mono(double s) { return uint64_t(s * 1e9); }

}  // namespace

TEST(Flight, OneFilePerFiringCoveringTheWindowBeforeAndAfter) {
  const Meta m = flight_meta();
  TempDir dir("flight_one");
  const std::string d = dir / "out";  // missing: created
  // firings at 24.5 s and 44.5 s; samples at 5 .. 64 s; D = 5 s
  auto v = flight_samples(m, 60, {mono(24.5), mono(44.5)});
  FlightRun run;
  FlightRecorder fr(d, run.opts(5 * kS));
  EXPECT_EQ(fr.held_cap(), 7u);
  for (auto& s : v) {
    fr.add(s, m);
    EXPECT_LE(fr.held(), fr.held_cap());
  }
  fr.close();
  ASSERT_EQ(fr.files().size(), 2u);
  EXPECT_EQ(fr.stats().firings, 2u);
  EXPECT_EQ(fr.stats().inside, 0u);
  EXPECT_EQ(fr.stats().files, 2u);
  // names: the firing's wall time (make_samples: wall = 1.7e18 + (mono - 5 s))
  const uint64_t wall0 = v[0].wall_ns - v[0].mono_ns;
  EXPECT_EQ(fr.files()[0], d + "/" + flight_file_name(wall0 + mono(24.5), "cpupri_set"));
  EXPECT_EQ(fr.files()[1], d + "/" + flight_file_name(wall0 + mono(44.5), "cpupri_set"));
  EXPECT_EQ(flight_file_name(1'700'000'019'500'000'000ull, "cpupri_set"), "20231114T221339Z-cpupri_set.shot");
  const std::vector<std::pair<double, double>> want = {{19, 30}, {39, 50}};  // latest <= t - D, first >= t + D
  for (size_t k = 0; k < 2; ++k) {
    FileRead f = read_flight(fr.files()[k]);
    EXPECT_TRUE(f.complete) << fr.files()[k];
    ASSERT_FALSE(f.samples.empty());
    EXPECT_EQ(f.samples.front().mono_ns, mono(want[k].first)) << k;
    EXPECT_EQ(f.samples.back().mono_ns, mono(want[k].second)) << k;
    EXPECT_EQ(f.samples.size(), 12u) << k;
    EXPECT_FALSE(f.samples.front().caught.has_value()) << "the first sample's interval is before the file";
    EXPECT_EQ(f.events, 1u) << k;
    EXPECT_NE(f.command.find("# flight recorder: cpupri_set fired at"), std::string::npos) << f.command;
    // the samples are the run's, word for word
    for (auto& s : f.samples) expect_same(s, v[size_t((s.mono_ns - mono(5)) / kS)]);
  }
  EXPECT_EQ(run.said.size(), 2u);
  EXPECT_NE(run.said[0].find("flight: wrote " + fr.files()[0] + ": 12 samples"), std::string::npos) << run.said[0];
  EXPECT_EQ(fr.summary(), fmt::format("flight: 2 firings, 2 files in {}, 0 inside a file in progress, 0 skipped (--flight-max)", d));
  struct stat st {};
  ASSERT_EQ(::stat(d.c_str(), &st), 0);
  const mode_t um = ::umask(0);
  ::umask(um);
  EXPECT_EQ(st.st_mode & 07777, 0755u & ~um);
}

TEST(Flight, AFiringInsideAFileExtendsNothingAndOneAfterItStartsTheNext) {
  const Meta m = flight_meta();
  TempDir dir("flight_inside");
  // 24.5 starts [19.5, 29.5]; 27.5 and 29.2 inside; 29.7 (same sample as 29.2, after the
  // end) starts the next file, [24.7, 34.7]
  auto v = flight_samples(m, 50, {mono(24.5), mono(27.5), mono(29.2), mono(29.7)});
  FlightRun run;
  FlightRecorder fr(dir.path, run.opts(5 * kS));
  for (auto& s : v) fr.add(s, m);
  fr.close();
  ASSERT_EQ(fr.files().size(), 2u);
  EXPECT_EQ(fr.stats().firings, 4u);
  EXPECT_EQ(fr.stats().inside, 2u);
  FileRead a = read_flight(fr.files()[0]), b = read_flight(fr.files()[1]);
  EXPECT_TRUE(a.complete);
  EXPECT_TRUE(b.complete);
  EXPECT_EQ(a.samples.front().mono_ns, mono(19));
  EXPECT_EQ(a.samples.back().mono_ns, mono(30)) << "not extended by the firings inside";
  EXPECT_EQ(a.events, 4u) << "the file ends with the sample holding 29.2 and 29.7";
  EXPECT_EQ(b.samples.front().mono_ns, mono(24));
  EXPECT_EQ(b.samples.back().mono_ns, mono(35));
  EXPECT_EQ(b.events, 4u) << "files overlap before their firing: 24.5 (sample 25), 27.5, 29.2 and 29.7";
  EXPECT_NE(run.said[0].find("(2 later firings inside)"), std::string::npos) << run.said[0];
}

TEST(Flight, CapsFilesAndSaysSoOnce) {
  const Meta m = flight_meta();
  TempDir dir("flight_cap");
  auto v = flight_samples(m, 60, {mono(10.5), mono(20.5), mono(30.5), mono(40.5)});
  FlightRun run;
  FlightRecorder fr(dir.path, run.opts(3 * kS, 2));
  for (auto& s : v) fr.add(s, m);
  fr.close();
  EXPECT_EQ(fr.files().size(), 2u);
  EXPECT_EQ(fr.stats().skipped_cap, 2u);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path), {}), 2);
  int said_cap = 0;
  for (auto& s : run.said) said_cap += s.find("--flight-max 2 files written") != std::string::npos;
  EXPECT_EQ(said_cap, 1);
  EXPECT_EQ(fr.summary(),
            fmt::format("flight: 4 firings, 2 files in {}, 0 inside a file in progress, 2 skipped (--flight-max)", dir.path));
}

TEST(Flight, AYoungRunStartsAtItsFirstSampleAndTheStopClosesTheFileInProgress) {
  const Meta m = flight_meta();
  TempDir dir("flight_stop");
  auto v = flight_samples(m, 10, {mono(7.5)});
  FlightRun run;
  FlightRecorder fr(dir.path, run.opts(30 * kS));
  for (auto& s : v) fr.add(s, m);
  EXPECT_TRUE(fr.writing());
  fr.close();  // the stop
  EXPECT_FALSE(fr.writing());
  ASSERT_EQ(fr.files().size(), 1u);
  FileRead f = read_flight(fr.files()[0]);
  EXPECT_TRUE(f.complete);
  EXPECT_EQ(f.samples.size(), 10u);
  EXPECT_EQ(f.samples.front().mono_ns, mono(5));
  EXPECT_EQ(f.samples.back().mono_ns, mono(14));
  EXPECT_EQ(fr.held(), 10u);
  EXPECT_EQ(fr.held_cap(), 32u);
}

TEST(Flight, HeldSamplesAreBounded) {
  const Meta m = flight_meta();
  TempDir dir("flight_bound");
  auto v = flight_samples(m, 40, {});
  FlightRun run;
  FlightRecorder fr(dir.path, run.opts(5 * kS));
  size_t most = 0;
  for (auto& s : v) {
    fr.add(s, m);
    most = std::max(most, fr.held());
  }
  EXPECT_EQ(most, 6u) << "the latest at or before now - 5 s and the 5 after it";
  EXPECT_EQ(fr.files().size(), 0u);
  EXPECT_EQ(flight_held_cap(30 * kS, 250'000'000), 122u);
}

TEST(Flight, HeldSamplesStayUnderFlightMemAndAFileSaysItStartsLater) {
  const Meta m = flight_meta();
  TempDir dir("flight_mem");
  auto v = flight_samples(m, 40, {mono(30.5)});
  const size_t one = sample_bytes(v[5]);
  ASSERT_GT(one, 100u);
  FlightRun run;
  FlightOptions o = run.opts(20 * kS);
  o.max_held_bytes = 4 * one + one / 2;  // room for 4 samples of the 22 a 20 s window holds
  FlightRecorder fr(dir.path, o);
  size_t most = 0;
  for (auto& s : v) {
    fr.add(s, m);
    if (!fr.writing()) {
      most = std::max<size_t>(most, fr.held());
      EXPECT_LE(fr.held_bytes(), o.max_held_bytes);
    }
  }
  fr.close();
  EXPECT_EQ(most, 4u);
  EXPECT_GT(fr.stats().trimmed, 0u);
  ASSERT_EQ(fr.files().size(), 1u);
  FileRead f = read_flight(fr.files()[0]);
  EXPECT_TRUE(f.complete);
  // firing at 30.5 s (sample 31, added before the trim): held 27..31 instead of 10..31
  EXPECT_EQ(f.samples.front().mono_ns, mono(27));
  EXPECT_NE(f.command.find("; it starts 3.50s before the firing: --flight-mem"), std::string::npos) << f.command;
  int said = 0;
  for (auto& l : run.said) said += l.find("the held samples reached --flight-mem") != std::string::npos;
  EXPECT_EQ(said, 1);
  EXPECT_NE(fr.summary().find(" held samples dropped early (--flight-mem)"), std::string::npos) << fr.summary();
}

TEST(Flight, ADirItMadeAndLeftEmptyGoesAgain) {
  const Meta m = flight_meta();
  TempDir dir("flight_rmdir");
  const std::string made = dir / "made", kept = dir / "kept";
  {
    FlightRun run;
    FlightRecorder fr(made, run.opts(5 * kS));  // made here, no firing
    EXPECT_TRUE(std::filesystem::is_directory(made));
    for (auto& s : flight_samples(m, 5, {})) fr.add(s, m);
  }
  EXPECT_FALSE(std::filesystem::exists(made)) << "made by the run, nothing written: removed";
  ASSERT_EQ(::mkdir(kept.c_str(), 0755), 0);
  { FlightRun run; FlightRecorder fr(kept, run.opts(5 * kS)); }
  EXPECT_TRUE(std::filesystem::is_directory(kept)) << "the user's own DIR stays";
}

TEST(Flight, ATakenNameGetsASuffixAndAPlantedLinkIsNotFollowed) {
  const Meta m = flight_meta();
  TempDir dir("flight_names");
  auto v = flight_samples(m, 20, {mono(10.5)});
  const uint64_t wall0 = v[0].wall_ns - v[0].mono_ns;
  const std::string name = flight_file_name(wall0 + mono(10.5), "cpupri_set");
  const std::string victim = dir / "victim";
  spit(victim, "precious");
  ASSERT_EQ(::symlink(victim.c_str(), (dir / name).c_str()), 0);
  FlightRun run;
  FlightRecorder fr(dir.path, run.opts(2 * kS));
  for (auto& s : v) fr.add(s, m);
  fr.close();
  ASSERT_EQ(fr.files().size(), 1u);
  EXPECT_EQ(fr.files()[0], dir / (name.substr(0, name.size() - 5) + "-1.shot"));
  EXPECT_EQ(slurp(victim), "precious");
  EXPECT_TRUE(read_flight(fr.files()[0]).complete);
}

TEST(Flight, RefusesASymlinkedOrSharedDirectory) {
  TempDir dir("flight_refuse");
  const std::string real = dir / "real", link = dir / "link", shared = dir / "shared", group = dir / "group",
                    file = dir / "file";
  ASSERT_EQ(::mkdir(real.c_str(), 0755), 0);
  ASSERT_EQ(::symlink(real.c_str(), link.c_str()), 0);
  ASSERT_EQ(::mkdir(shared.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(shared.c_str(), 01777), 0);
  ASSERT_EQ(::mkdir(group.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(group.c_str(), 0775), 0);
  spit(file, "x");
  auto why = [](const std::string& d) -> std::string {
    try {
      FlightRecorder fr(d, FlightOptions{});
    } catch (const std::exception& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(why(link), "-o " + link + " is a symlink: not followed (name the directory itself)");
  EXPECT_EQ(why(shared), "-o " + shared + " is writable by others: another user could plant names in it; chmod go-w it or use another directory");
  EXPECT_EQ(why(group), "-o " + group + " is writable by its group: another user could plant names in it; chmod go-w it or use another directory");
  EXPECT_EQ(why(file), "-o " + file + " is not a directory (--flight writes files into DIR)");
  EXPECT_EQ(why(real), "");
  // a directory under one others may write without the sticky bit: the path is refused
  const std::string open_parent = dir / "open";
  ASSERT_EQ(::mkdir(open_parent.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(open_parent.c_str(), 0777), 0);
  EXPECT_NE(why(open_parent + "/d").find("without the sticky bit"), std::string::npos) << why(open_parent + "/d");
  EXPECT_FALSE(std::filesystem::exists(open_parent + "/d"));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(real), {}), 0);
}

TEST(Flight, ASampleHoldsEveryProbesSlotWordsOfEveryCpu) {
  // What README's memory figure is made of: a held Sample's slot words, 8 bytes per word per
  // CPU per attached probe (the rest, seq, times, online list, is under 1 KiB).
  for (uint32_t n : {2u, 64u, 1024u}) {
    const Meta m = flight_meta_cpus(n);
    const Sample s = make_sample(m);
    size_t words = 0, per_cpu = 0;
    for (size_t p = 0; p < s.probes.size(); ++p) {
      words += s.probes[p].words.size();
      per_cpu += m.probes[p].slot.slot_words;
    }
    EXPECT_EQ(words, per_cpu * n) << "every probe of the catalog present in synthetic_meta";
    std::printf("flight: a sample at %u CPUs holds %zu slot words: %zu bytes (%zu per CPU)\n", n, words, words * 8,
                per_cpu * 8);
  }
}

TEST(Flight, AStatusChangeWhileAFileIsWrittenIsANoteInItAndInTheNextFilesMeta) {
  Meta m = flight_meta();
  TempDir dir("flight_note");
  auto v = flight_samples(m, 30, {mono(10.5), mono(20.5)});
  FlightRun run;
  FlightRecorder fr(dir.path, run.opts(2 * kS));
  const int p = m.probe_index("bcast_wait");
  for (auto& s : v) {
    std::vector<int> changed;
    if (s.mono_ns == mono(12)) {  // inside the first file, [8.5, 12.5]
      m.probes[size_t(p)].status.notes.push_back("learned tick_broadcast_lock at 0xffffffff82a0b040");
      changed.push_back(p);
    }
    fr.add(s, m, changed);
  }
  fr.close();
  ASSERT_EQ(fr.files().size(), 2u);
  auto a = RecordingReader::open(fr.files()[0]);
  read_all(*a);
  ASSERT_EQ(a->status_notes().size(), 1u);
  EXPECT_EQ(a->status_notes()[0].notes.back(), "learned tick_broadcast_lock at 0xffffffff82a0b040");
  auto b = RecordingReader::open(fr.files()[1]);
  read_all(*b);
  EXPECT_TRUE(b->status_notes().empty());
  EXPECT_EQ(b->meta().probes[size_t(p)].status.notes.back(), "learned tick_broadcast_lock at 0xffffffff82a0b040");
}
