// Compatibility fixtures (tests/data/*.shot): what make_fixtures writes and what
// test_recording_compat checks. Each recording FILE.shot has a FILE.expect.json written
// with it, holding values computed from the samples as they were written (not as read).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sample/sample.h"

namespace schedhot::fixtures {

/// FNV-1a 64 over every decoded sample in order: seq, mono_ns, wall_ns, then for each
/// probe its present flag and words. Identical samples give identical hashes.
inline uint64_t fnv1a(uint64_t h, uint64_t v) {
  for (int i = 0; i < 8; ++i) {
    h ^= (v >> (8 * i)) & 0xff;
    h *= 0x100000001b3ull;
  }
  return h;
}
inline constexpr uint64_t kFnvBasis = 0xcbf29ce484222325ull;

inline uint64_t hash_sample(uint64_t h, const Sample& s) {
  h = fnv1a(h, s.seq);
  h = fnv1a(h, s.mono_ns);
  h = fnv1a(h, s.wall_ns);
  for (const auto& p : s.probes) {
    h = fnv1a(h, p.present ? 1 : 0);
    h = fnv1a(h, p.words.size());
    for (size_t i = 0; i < p.words.size(); ++i) h = fnv1a(h, p.words[i]);
  }
  return h;
}

/// FNV-1a 64 of a sample's caught events (format 1.5 CATCH frames) on top of h: lost, then
/// per event its fields, its comm's bytes and its stack's frames (symbol bytes, offset).
inline uint64_t hash_caught(uint64_t h, const CatchBatch& b) {
  h = fnv1a(h, b.lost);
  for (const CaughtEvent& e : b.events) {
    for (uint64_t v : {e.ts_ns, e.dur_ns, uint64_t(e.cpu), uint64_t(e.probe), uint64_t(e.flags), uint64_t(e.pid),
                       uint64_t(e.tgid), e.detail, e.irq_ns, e.softirq_ns, e.nmi_ns, uint64_t(e.stack)})
      h = fnv1a(h, v);
    if (e.flags & SH_CATCH_F_STEAL) h = fnv1a(h, e.steal_ns);  // 1.6 (no 1.5 event has the flag)
    for (char ch : e.comm) h = fnv1a(h, uint8_t(ch));
    if (e.stack && e.stack <= b.stacks.size())
      for (const StackFrame& f : b.stacks[e.stack - 1]) {
        for (char ch : f.sym) h = fnv1a(h, uint8_t(ch));
        h = fnv1a(h, f.off);
      }
  }
  return h;
}

/// One counter value to check: probe.field[idx] on cpu in sample number `sample`.
struct ValueCheck {
  uint32_t sample;
  std::string probe;
  std::string field;
  uint32_t idx;
  uint32_t cpu;
};

/// The values every fixture's .expect.json lists (chosen to touch a counter, an array
/// element and histogram words, early and late in the file).
inline std::vector<ValueCheck> value_checks(uint32_t nsamples) {
  uint32_t last = nsamples ? nsamples - 1 : 0;
  return {{1, "idle", "exits", 0, 0},       {last, "idle", "exits", 0, 1},
          {last, "cpupri_set", "calls", 0, 0}, {last / 2, "cpupri_set", "trans", 5, 1},
          {last, "cpupri_find", "lat", 0, 1},  {last, "cpupri_find", "lat", 2 + 200, 0},
          {last, "bcast_lock", "calls", 0, 0}};
}

}  // namespace schedhot::fixtures
