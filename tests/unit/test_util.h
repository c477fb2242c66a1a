// Synthetic metas and samples for the unit tests.
#pragma once
#include <random>

#include "probe/catalog.h"
#include "sample/sample.h"
#include "schedhot/abi.h"

namespace schedhot::testing {

/// A Meta for this build's catalog with ncpus CPUs online; probes listed in
/// unavailable are not attached.
/// A fixed --catch rule "PROBE>Nus" (asked_ns a whole number of us) armed at its bucket's
/// lower bound, at most 100 events/s per CPU, as parse_catch_rules would make it.
inline CatchRule fixed_catch_rule(const std::string& probe, uint64_t asked_ns) {
  CatchRule r;
  r.probe = probe;
  r.text = probe + ">" + std::to_string(asked_ns / 1000) + "us";
  r.asked_ns = asked_ns;
  r.threshold_ns = sh_hist_lower(sh_hist_index(asked_ns));
  r.per_sec = 100;
  return r;
}

inline Meta synthetic_meta(uint32_t ncpus, std::vector<std::string> unavailable = {}) {
  std::vector<ProbeStatus> st;
  for (auto& p : probe_catalog()) {
    ProbeStatus s;
    s.probe = p.name;
    s.target = p.target;
    s.attached = std::find(unavailable.begin(), unavailable.end(), p.name) == unavailable.end();
    s.backend = s.attached ? Backend::fentry : Backend::none;
    if (!s.attached) s.reason = "fentry refused: EPERM (test)";
    st.push_back(s);
  }
  HostInfo h;
  h.hostname = "testhost";
  h.kernel_release = "6.12.0-test";
  h.possible_cpus = static_cast<int>(ncpus);
  for (uint32_t c = 0; c < ncpus; ++c) h.online.push_back(static_cast<int>(c));
  Meta m = make_meta(h, ncpus, st);
  m.interval_ns = 1'000'000'000;
  m.tool_version = "test";
  return m;
}

/// Word index of field f (element idx) of cpu in a probe's sample.
inline size_t word(const Meta& m, int probe, int cpu, const char* field, uint32_t idx = 0) {
  const Field* f = m.probes[probe].slot.find(field);
  return size_t(cpu) * m.probes[probe].slot.slot_words + f->offset + idx;
}

/// Adds one histogram value v to (probe, field, cpu) in s.
inline void add_hist(const Meta& m, Sample& s, int probe, int cpu, const char* field, uint64_t v) {
  auto& w = s.probes[probe].words;
  w.mut(word(m, probe, cpu, field, 0)) += v;                        // sum_ns
  size_t mx = word(m, probe, cpu, field, 1);
  if (v > w[mx]) w.mut(mx) = v;                                     // max_ns
  w.mut(word(m, probe, cpu, field, 2 + sh_hist_index(v))) += 1;     // bucket
}

/// Advances every attached probe of s by pseudo-random amounts on a few CPUs, as a busy
/// machine would (idle CPUs unchanged).
inline void advance(const Meta& m, Sample& s, std::mt19937_64& rng, double busy_fraction = 0.3) {
  s.seq++;
  s.mono_ns += m.interval_ns;
  s.wall_ns += m.interval_ns;
  std::uniform_real_distribution<double> u(0, 1);
  for (size_t p = 0; p < m.probes.size(); ++p) {
    if (!s.probes[p].present) continue;
    for (uint32_t c = 0; c < m.ncpus; ++c) {
      if (u(rng) > busy_fraction) continue;
      for (auto& f : m.probes[p].slot.fields) {
        if (f.kind == FieldKind::counter) s.probes[p].words.mut(word(m, int(p), int(c), f.name.c_str())) += rng() % 1000;
        if (f.kind == FieldKind::counter_array)
          s.probes[p].words.mut(word(m, int(p), int(c), f.name.c_str(), uint32_t(rng() % f.nwords))) += rng() % 100;
        if (f.kind == FieldKind::hist)
          for (int k = 0; k < 5; ++k) add_hist(m, s, int(p), int(c), f.name.c_str(), 100 + rng() % 100000);
      }
    }
  }
}

}  // namespace schedhot::testing
