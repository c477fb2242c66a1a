// Writes the compatibility fixtures of the CURRENT format version into a directory:
//   v<major>.<minor>-basic.shot     4 CPUs, 70 samples (two keyframes), zstd, a NOTE frame,
//                                   two probes unavailable; closed (INDEX + END)
//   v<major>.<minor>-raw.shot       2 CPUs, 5 samples, no compression, closed
//   v<major>.<minor>-unclosed.shot  the basic recording cut inside its 9th sample frame,
//                                   as a recorder killed mid-write leaves it
//   v<major>.<minor>-hotplug.shot   (1.2 on) 4 CPUs, 70 samples: CPU 3 offline until sample
//                                   10, CPU 2 offline from sample 50 (their counters frozen)
//   v<major>.<minor>-exact.shot     (1.3 on) 4 CPUs, 70 samples, each after the first with an
//                                   EXACT frame (--exact records: i % 5 records, 1 lost every 7th)
//   v<major>.<minor>-gaps.shot      (1.4 on) 4 CPUs, 70 samples, 7 META gap_lines, each sample
//                                   after the first but sample 20 with a GAPS frame (gap_counts())
//   v<major>.<minor>-catch.shot     (1.5 on) 4 CPUs, 70 samples, a --catch rule on cpupri_set,
//                                   each sample after the first but every 10th with a CATCH
//                                   frame (caught_batch(): 2 stacks shared by 1..5 events;
//                                   1.6 on: events k % 3 != 2 with a steal time, STEAL frames)
// each with a .expect.json of values computed from the samples as written. Existing files
// are never replaced: fixtures of released versions stay as they were made.
//
// usage: schedhot_make_fixtures DIR
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "../unit/test_util.h"
#include "fixtures.h"
#include "store/recording.h"
#include "sys/cpulist.h"

using namespace schedhot;
using namespace schedhot::testing;
using namespace schedhot::fixtures;

namespace {

struct Spec {
  const char* name;
  uint32_t ncpus;
  uint32_t nsamples;
  bool compress;
  bool note;           ///< write a NOTE frame after sample 10
  int cut_in_sample;   ///< >= 0: cut the file inside this sample's frame
  bool hotplug = false;  ///< CPU 3 online from sample 10, CPU 2 offline from sample 50
  bool exact = false;    ///< samples carry --exact records (1.3)
  bool gaps = false;     ///< samples carry gap counts (1.4)
  bool caught = false;   ///< samples carry --catch events (1.5)
};

/// The online CPUs of sample i (1.2 on: every sample says).
std::vector<int> online_at(const Spec& sp, uint32_t i) {
  std::vector<int> v;
  for (uint32_t c = 0; c < sp.ncpus; ++c)
    if (!sp.hotplug || (c == 3 ? i >= 10 : c == 2 ? i < 50 : true)) v.push_back(int(c));
  return v;
}

/// The gap counts of sample i (> 0) of a gaps fixture, over (from_ns, its time]: CPUs c
/// with (i + c) % 3 != 0, each on lines c % 3 and 3 + i % 4; none for sample 20.
std::optional<GapBatch> gap_counts(uint32_t ncpus, uint32_t i, uint64_t from_ns) {
  if (i == 0 || i == 20) return std::nullopt;
  GapBatch b;
  b.from_ns = from_ns;
  b.full = i % 4 == 0 ? i : 0;
  for (uint32_t c = 0; c < ncpus; ++c) {
    if ((i + c) % 3 == 0) continue;
    for (uint32_t line : {c % 3, 3 + i % 4}) {
      GapCounts g;
      g.cpu = c;
      g.line = line;
      g.ww[(i + c) % SH_GAP_BUCKETS] = i * 7 + c + 1;
      g.wa[(2 * i) % SH_GAP_BUCKETS] = i + line;
      g.ra[SH_GAP_BUCKETS - 1] = i % 5;
      if (i == 1 && c == 1) g.ra[0] = UINT32_MAX;
      b.counts.push_back(g);
    }
  }
  return b;
}

/// The caught events of sample i (> 0) of a catch fixture, over (since, mono]: 1 + i % 5
/// events on CPUs k % ncpus, probe cpupri_set (4) or cpupri_find (5), sharing two stacks
/// (the fifth event without one); every 7th sample lost i records; none every 10th sample.
std::optional<CatchBatch> caught_batch(uint32_t ncpus, uint32_t i, uint64_t since, uint64_t mono) {
  if (i == 0 || i % 10 == 0) return std::nullopt;
  CatchBatch b;
  b.lost = i % 7 == 0 ? i : 0;
  b.stacks = {{{"cpupri_set", 0x4c}, {"enqueue_task_rt", 0x1a2}, {"ttwu_do_activate", 0x8e}, {"", 0}},
              {{"cpupri_find_fitness", 0x33}, {"find_lowest_rq", 0x71}, {"push_rt_task.part.0", 0x5c}}};
  const uint32_t n = 1 + i % 5;
  for (uint32_t k = 0; k < n; ++k) {
    CaughtEvent e;
    e.ts_ns = since + (mono - since) * (k + 1) / (n + 1);
    e.dur_ns = 20'000 + uint64_t(i) * 100 + k;
    e.cpu = k % ncpus;
    e.probe = uint16_t(k % 2 ? SH_P_CPUPRI_FIND : SH_P_CPUPRI_SET);
    e.flags = uint16_t(k % 2 ? SH_CATCH_F_IRQ : SH_CATCH_F_IRQ | SH_CATCH_F_DETAIL);
    e.pid = 1000 + k;
    e.tgid = 1000;
    e.comm = k % 3 ? "kworker/1:2" : "stress-ng-cpu";
    e.detail = e.flags & SH_CATCH_F_DETAIL ? (uint64_t(2) << 16 | 5) : 0;
    e.irq_ns = k * 1000;
    e.softirq_ns = i % 3 ? 5000 : 0;
    e.nmi_ns = 0;
    e.stack = k == 4 ? 0 : 1 + k % 2;
    if (kFormatMinor >= 6 && k % 3 != 2) {  // 1.6: a steal time (0 included: measured, none)
      e.flags |= SH_CATCH_F_STEAL;
      e.steal_ns = k == 0 ? 0 : uint64_t(k) * 700 + i;
    }
    b.events.push_back(e);
  }
  return b;
}

Meta fixture_meta(uint32_t ncpus) {
  Meta m = synthetic_meta(ncpus, {"nohz_kick", "bcast_wait"});
  m.host.cacheline_bytes = 64;
  m.host.machine = "x86_64";
  m.host.kernel_version = "#1 SMP PREEMPT_DYNAMIC fixture";
  for (uint32_t c = 0; c < ncpus; ++c)
    m.host.topology.push_back({int(c), int(c / 2), 0, int(c % 2), int(c / 2), int(c / 2)});
  m.start_wall_ns = 1'700'000'000'000'000'000ull;
  m.start_mono_ns = 5'000'000'000ull;
  m.command = "schedhot_make_fixtures";
  return m;
}

std::string slurp(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool exists(const std::string& p) {
  struct stat st {};
  return stat(p.c_str(), &st) == 0;
}

int make(const std::string& dir, const Spec& sp) {
  const std::string base = fmt::format("{}/v{}.{}-{}", dir, kFormatMajor, kFormatMinor, sp.name);
  const std::string shot = base + ".shot", expect = base + ".expect.json";
  if (exists(shot) || exists(expect)) {
    fmt::print("{}: exists, kept\n", shot);
    return 0;
  }
  Meta m = fixture_meta(sp.ncpus);
  if (sp.hotplug) m.host.online = online_at(sp, 0);  // META: the CPUs online at the start
  if (sp.gaps)
    for (int64_t l = 0; l < 7; ++l) m.gap_lines.push_back({l < 3 ? "nohz" : "root_domain.cpupri", l});
  if (sp.caught) {
    CatchRule r;
    r.text = "cpupri_set>20us";
    r.probe = "cpupri_set";
    r.asked_ns = 20'000;
    r.threshold_ns = 19'968;  // the lower bound of its histogram bucket
    r.per_sec = 100;
    apply_catch_rules(m, {r});
  }
  std::mt19937_64 rng(11 + sp.ncpus);
  std::vector<Sample> written;
  {
    WriterOptions wo;
    wo.compress = sp.compress;
    RecordingWriter w(shot, m, wo);
    Sample s = make_sample(m);
    s.mono_ns = m.start_mono_ns;
    s.wall_ns = m.start_wall_ns;
    for (uint32_t i = 0; i < sp.nsamples; ++i) {
      s.online = online_at(sp, i);
      if (i) {
        const Sample before = s;
        advance(m, s, rng);
        for (uint32_t c = 0; c < sp.ncpus; ++c) {  // an offline CPU counts nothing
          if (std::find(s.online.begin(), s.online.end(), int(c)) != s.online.end()) continue;
          for (size_t p = 0; p < m.probes.size(); ++p) {
            const size_t sw = m.probes[p].slot.slot_words;
            if (s.probes[p].present)
              std::copy_n(before.probes[p].words.cpu(c), sw, s.probes[p].words.mut_cpu(c));
          }
        }
      }
      if (sp.exact && i) {
        ExactBatch b;
        for (uint32_t k = 0; k < i % 5; ++k)
          b.records.push_back({s.mono_ns - m.interval_ns + (k + 1) * 1000, k % sp.ncpus, 2, uint16_t(k % 2 ? 4 : 0)});
        b.lost = i % 7 == 0 ? 1 : 0;
        s.exact = b;
      } else {
        s.exact.reset();
      }
      s.gaps = sp.gaps ? gap_counts(sp.ncpus, i, written.empty() ? 0 : written.back().mono_ns) : std::nullopt;
      s.caught = sp.caught ? caught_batch(sp.ncpus, i, written.empty() ? 0 : written.back().mono_ns, s.mono_ns)
                           : std::nullopt;
      w.write_sample(s);
      written.push_back(s);
      if (sp.note && i == 10) {
        ProbeStatus st = m.probes[m.probe_index("idle")].status;
        st.notes.push_back("fixture note after sample 10");
        w.write_status(st);
      }
    }
    w.close();
  }
  uint32_t kept = sp.nsamples;
  if (sp.cut_in_sample >= 0) {
    auto r = RecordingReader::open(shot);
    const auto& pos = r->sample_positions();
    uint64_t cut = pos.at(sp.cut_in_sample).offset + 30;
    if (truncate(shot.c_str(), static_cast<off_t>(cut)) != 0) throw std::runtime_error("truncate failed");
    kept = static_cast<uint32_t>(sp.cut_in_sample);
  }
  // Cross-check: the reader of this version gives back exactly what was written.
  uint64_t h = kFnvBasis;
  for (uint32_t i = 0; i < kept; ++i) h = hash_sample(h, written[i]);
  {
    auto r = RecordingReader::open(shot);
    Sample s;
    uint64_t hr = kFnvBasis;
    uint32_t n = 0;
    while (r->next(s)) {
      hr = hash_sample(hr, s);
      if (s.online != written[n].online) throw std::runtime_error(fmt::format("{}: sample {} online differs", shot, n));
      if (s.exact != written[n].exact) throw std::runtime_error(fmt::format("{}: sample {} exact records differ", shot, n));
      if (s.gaps != written[n].gaps) throw std::runtime_error(fmt::format("{}: sample {} gap counts differ", shot, n));
      if (s.caught != written[n].caught) throw std::runtime_error(fmt::format("{}: sample {} caught events differ", shot, n));
      ++n;
    }
    if (n != kept || hr != h) throw std::runtime_error(fmt::format("{}: read back {} samples, hash differs", shot, n));
  }
  nlohmann::json checks = nlohmann::json::array();
  for (const ValueCheck& c : value_checks(kept)) {
    int p = m.probe_index(c.probe);
    uint64_t v = written[c.sample].probes[p].words[word(m, p, int(c.cpu), c.field.c_str(), c.idx)];
    checks.push_back({{"sample", c.sample}, {"probe", c.probe}, {"field", c.field}, {"idx", c.idx},
                      {"cpu", c.cpu}, {"value", v}});
  }
  // The online CPUs of a few samples (around the hotplug events), as written.
  nlohmann::json online = nlohmann::json::array();
  for (uint32_t i : {0u, 9u, 10u, 49u, 50u, kept - 1})
    if (i < kept) online.push_back({{"sample", i}, {"online", format_cpulist(written[i].online)}});
  nlohmann::json unavailable = nlohmann::json::array();
  for (auto& p : m.probes)
    if (!p.status.attached) unavailable.push_back(p.name);
  nlohmann::json e = {
      {"format", fmt::format("{}.{}", kFormatMajor, kFormatMinor)},
      {"bytes", slurp(shot).size()},
      {"samples", kept},
      {"complete", sp.cut_in_sample < 0},
      {"damage_contains", sp.cut_in_sample < 0 ? nlohmann::json(nullptr) : nlohmann::json("truncated")},
      {"notes", sp.note && kept > 10 ? 1 : 0},
      {"ncpus", sp.ncpus},
      {"hostname", m.host.hostname},
      {"kernel_release", m.host.kernel_release},
      {"interval_ns", m.interval_ns},
      {"start_wall_ns", m.start_wall_ns},
      {"unavailable", unavailable},
      {"first_mono_ns", written.front().mono_ns},
      {"last_mono_ns", written[kept - 1].mono_ns},
      {"samples_fnv1a", fmt::format("{:016x}", h)},
      {"checks", checks},
      {"online", online}};
  if (sp.exact) {
    uint64_t recs = 0, lost = 0;
    for (uint32_t i = 0; i < kept; ++i)
      if (written[i].exact) {
        recs += written[i].exact->records.size();
        lost += written[i].exact->lost;
      }
    e["exact_records"] = recs;
    e["exact_lost"] = lost;
  }
  if (sp.gaps) {
    uint64_t frames = 0, entries = 0, full = 0, sum = 0;
    for (uint32_t i = 0; i < kept; ++i)
      if (written[i].gaps) {
        ++frames;
        entries += written[i].gaps->counts.size();
        full += written[i].gaps->full;
        for (const GapCounts& g : written[i].gaps->counts)
          for (const auto* h : {&g.ww, &g.wa, &g.ra})
            for (uint32_t v : *h) sum += v;
      }
    e["gap_lines"] = m.gap_lines.size();
    e["gap_frames"] = frames;
    e["gap_entries"] = entries;
    e["gap_full"] = full;
    e["gap_value_sum"] = sum;
  }
  if (sp.caught) {
    uint64_t frames = 0, events = 0, lost = 0, hc = kFnvBasis, steal_events = 0, steal_ns = 0;
    for (uint32_t i = 0; i < kept; ++i)
      if (written[i].caught) {
        ++frames;
        events += written[i].caught->events.size();
        lost += written[i].caught->lost;
        hc = hash_caught(hc, *written[i].caught);
        for (const CaughtEvent& ev : written[i].caught->events)
          if (ev.flags & SH_CATCH_F_STEAL) ++steal_events, steal_ns += ev.steal_ns;
      }
    if (kFormatMinor >= 6) {
      e["caught_steal_events"] = steal_events;
      e["caught_steal_ns"] = steal_ns;
    }
    e["catch_rules"] = m.catch_rules.size();
    e["caught_frames"] = frames;
    e["caught_events"] = events;
    e["caught_lost"] = lost;
    e["caught_fnv1a"] = fmt::format("{:016x}", hc);
  }
  std::ofstream(expect) << e.dump(2) << "\n";
  fmt::print("{}: {} samples, {} bytes\n", shot, kept, slurp(shot).size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    fmt::print(stderr, "usage: {} DIR\n", argv[0]);
    return 2;
  }
  const Spec specs[] = {{"basic", 4, 70, true, true, -1}, {"raw", 2, 5, false, false, -1},
                        {"unclosed", 4, 70, true, true, 8}, {"hotplug", 4, 70, true, false, -1, true},
                        {"exact", 4, 70, true, false, -1, false, true},
                        {"gaps", 4, 70, true, false, -1, false, false, true},
                        {"catch", 4, 70, true, false, -1, false, false, false, true}};
  try {
    for (const Spec& s : specs) make(argv[1], s);
  } catch (const std::exception& e) {
    fmt::print(stderr, "make_fixtures: {}\n", e.what());
    return 1;
  }
  return 0;
}
