// Compatibility: every recording tests/data/v<major>.<minor>-*.shot (made by
// tests/data/make_fixtures.cpp with the format version in its name) must stay readable by this and every later version,
// with exactly the values its .expect.json lists.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "../data/fixtures.h"
#include "store/recording.h"
#include "sys/cpulist.h"
#include "test_recording_util.h"

using namespace schedhot;
using namespace schedhot::testing;
namespace fs = std::filesystem;

namespace {

/// tests/data/v<major>.<minor>-<name>.shot (other recordings there belong to other tests).
std::vector<std::string> fixture_files() {
  static const std::regex name(R"(v\d+\.\d+-[a-z0-9_]+\.shot)");
  std::vector<std::string> out;
  for (auto& e : fs::directory_iterator(SCHEDHOT_DATA))
    if (std::regex_match(e.path().filename().string(), name)) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST(RecordingCompat, EveryReleasedVersionHasFixtures) {
  std::set<std::string> versions;
  for (auto& f : fixture_files()) {
    std::string name = fs::path(f).filename().string();
    versions.insert(name.substr(1, name.find('-') - 1));  // "v1.0-basic.shot" -> "1.0"
  }
  for (uint16_t minor = 0; minor <= kFormatMinor; ++minor)
    EXPECT_TRUE(versions.count(fmt::format("{}.{}", kFormatMajor, minor)))
        << "no fixture of format " << kFormatMajor << "." << minor
        << ": run schedhot_make_fixtures tests/data and commit what it writes";
}

TEST(RecordingCompat, FixturesReadBackExactly) {
  auto files = fixture_files();
  ASSERT_GE(files.size(), 10u);
  for (const std::string& f : files) {
    SCOPED_TRACE(f);
    std::string expect_path = f.substr(0, f.size() - 5) + ".expect.json";
    std::ifstream in(expect_path);
    ASSERT_TRUE(in) << "missing " << expect_path;
    nlohmann::json e = nlohmann::json::parse(in);
    auto r = RecordingReader::open(f);
    EXPECT_EQ(fmt::format("{}.{}", r->major(), r->minor()), e["format"].get<std::string>());
    EXPECT_EQ(r->file_bytes(), e["bytes"].get<uint64_t>());
    const Meta& m = r->meta();
    EXPECT_EQ(m.ncpus, e["ncpus"].get<uint32_t>());
    EXPECT_EQ(m.host.hostname, e["hostname"].get<std::string>());
    EXPECT_EQ(m.host.kernel_release, e["kernel_release"].get<std::string>());
    EXPECT_EQ(m.interval_ns, e["interval_ns"].get<uint64_t>());
    EXPECT_EQ(m.start_wall_ns, e["start_wall_ns"].get<uint64_t>());
    std::vector<std::string> unavailable;
    for (auto& p : m.probes)
      if (!p.status.attached) unavailable.push_back(p.name);
    EXPECT_EQ(unavailable, e["unavailable"].get<std::vector<std::string>>());

    // Seek first (index or scan), then read everything from the start.
    const uint32_t n = e["samples"].get<uint32_t>();
    EXPECT_EQ(r->sample_count(), n);
    Sample s;
    if (n > 2) {
      ASSERT_TRUE(r->seek_sample(n - 2));
      ASSERT_TRUE(r->next(s));
    }
    ASSERT_TRUE(r->seek_sample(0));
    auto got = read_all(*r);
    ASSERT_EQ(got.size(), n);
    uint64_t h = fixtures::kFnvBasis;
    for (auto& x : got) h = fixtures::hash_sample(h, x);
    EXPECT_EQ(fmt::format("{:016x}", h), e["samples_fnv1a"].get<std::string>());
    EXPECT_EQ(got.front().mono_ns, e["first_mono_ns"].get<uint64_t>());
    EXPECT_EQ(got.back().mono_ns, e["last_mono_ns"].get<uint64_t>());
    for (auto& c : e["checks"]) {
      int p = m.probe_index(c["probe"].get<std::string>());
      ASSERT_GE(p, 0);
      const Field* fld = m.probes[p].slot.find(c["field"].get<std::string>());
      ASSERT_NE(fld, nullptr);
      size_t w = size_t(c["cpu"].get<uint32_t>()) * m.probes[p].slot.slot_words + fld->offset + c["idx"].get<uint32_t>();
      EXPECT_EQ(got.at(c["sample"].get<uint32_t>()).probes[p].words[w], c["value"].get<uint64_t>()) << c.dump();
    }
    // 1.2 on: the online CPUs of some samples (CPU hotplug in v1.2-hotplug).
    if (e.contains("online"))
      for (auto& c : e["online"])
        EXPECT_EQ(format_cpulist(got.at(c["sample"].get<uint32_t>()).online), c["online"].get<std::string>()) << c.dump();
    // 1.3 on: --exact records (v1.3-exact); read from the start, every sample's EXACT frame.
    if (e.contains("exact_records")) {
      uint64_t recs = 0, lost = 0;
      for (auto& x : got)
        if (x.exact) {
          recs += x.exact->records.size();
          lost += x.exact->lost;
        }
      EXPECT_EQ(recs, e["exact_records"].get<uint64_t>());
      EXPECT_EQ(lost, e["exact_lost"].get<uint64_t>());
      EXPECT_FALSE(got.front().exact.has_value());
    }
    // 1.4 on: the probes' gap counts (v1.4-gaps); read from the start, every sample but the
    // first gets its GAPS frame (their from_ns is the sample before).
    if (e.contains("gap_entries")) {
      EXPECT_EQ(m.gap_lines.size(), e["gap_lines"].get<size_t>());
      uint64_t frames = 0, entries = 0, full = 0, sum = 0;
      for (size_t i = 0; i < got.size(); ++i)
        if (const auto& g = got[i].gaps) {
          ++frames;
          EXPECT_EQ(g->from_ns, got.at(i - 1).mono_ns) << i;
          entries += g->counts.size();
          full += g->full;
          for (const GapCounts& c : g->counts)
            for (const auto* h : {&c.ww, &c.wa, &c.ra})
              for (uint32_t v : *h) sum += v;
        }
      EXPECT_EQ(frames, e["gap_frames"].get<uint64_t>());
      EXPECT_EQ(entries, e["gap_entries"].get<uint64_t>());
      EXPECT_EQ(full, e["gap_full"].get<uint64_t>());
      EXPECT_EQ(sum, e["gap_value_sum"].get<uint64_t>());
      EXPECT_FALSE(got.front().gaps.has_value());
    } else {
      for (auto& x : got) EXPECT_FALSE(x.gaps.has_value());
    }
    // 1.5 on: --catch events (v1.5-catch); read from the start, every sample's CATCH frame.
    if (e.contains("caught_events")) {
      EXPECT_EQ(m.catch_rules.size(), e["catch_rules"].get<size_t>());
      uint64_t frames = 0, events = 0, lost = 0, hc = fixtures::kFnvBasis, steal_events = 0, steal_ns = 0;
      for (auto& x : got)
        if (x.caught) {
          ++frames;
          events += x.caught->events.size();
          lost += x.caught->lost;
          hc = fixtures::hash_caught(hc, *x.caught);
          for (const CaughtEvent& ev : x.caught->events) {
            EXPECT_LE(ev.steal_ns, ev.dur_ns);
            if (ev.flags & SH_CATCH_F_STEAL)
              ++steal_events, steal_ns += ev.steal_ns;
            else
              EXPECT_EQ(ev.steal_ns, 0u) << "not kept: never a value";
          }
        }
      // 1.6 on: the STEAL frames' steal times; before, none (not kept).
      EXPECT_EQ(steal_events, e.value("caught_steal_events", uint64_t(0)));
      EXPECT_EQ(steal_ns, e.value("caught_steal_ns", uint64_t(0)));
      EXPECT_EQ(frames, e["caught_frames"].get<uint64_t>());
      EXPECT_EQ(events, e["caught_events"].get<uint64_t>());
      EXPECT_EQ(lost, e["caught_lost"].get<uint64_t>());
      EXPECT_EQ(fmt::format("{:016x}", hc), e["caught_fnv1a"].get<std::string>());
      EXPECT_FALSE(got.front().caught.has_value());
    } else {
      for (auto& x : got) EXPECT_FALSE(x.caught.has_value());
    }
    EXPECT_EQ(r->saw_end(), e["complete"].get<bool>());
    if (e["damage_contains"].is_null()) {
      EXPECT_FALSE(r->damage().has_value()) << r->damage()->reason;
    } else {
      ASSERT_TRUE(r->damage().has_value());
      EXPECT_NE(r->damage()->reason.find(e["damage_contains"].get<std::string>()), std::string::npos)
          << r->damage()->reason;
    }
    EXPECT_EQ(r->status_notes().size(), e["notes"].get<size_t>());
    // Closed files of 1.1 and later carry an index; 1.0 files and unclosed ones are scanned.
    EXPECT_EQ(r->index().has_value(), r->minor() >= 1 && e["complete"].get<bool>());
  }
}
