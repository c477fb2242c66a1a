// The fixed recording of the top/replay UI tests (tests/data/tui16.shot): what
// make_tui_fixture writes, and what the unit tests (test_tui_*.cpp) and the tmux test
// (tests/tui/test_tui.py) expect from it. Deterministic: no clock, no randomness.
//
// Machine: 16 CPUs online, 2 packages = 2 NUMA nodes, 4 cores per package with 2 SMT
// threads, 2 LLCs per package (2 cores each). CPU c: thread c / 8, package (c % 8) / 4,
// core_id c % 4, LLC id 2 * package + core_id / 2, so c and c + 8 are SMT siblings:
//   package 0 / node 0: CPUs 0-3,8-11   LLC 0: 0,1,8,9   LLC 1: 2,3,10,11
//   package 1 / node 1: CPUs 4-7,12-15  LLC 2: 4,5,12,13 LLC 3: 6,7,14,15
//
// 11 samples, exactly 1 s apart (seq 0..10, mono 1000 s + k s, wall 2023-11-14 22:13:20 UTC
// + k s), so every rate equals the per-interval delta. Deltas per interval k = 1..10 on CPU c:
//   idle         exits = entries = 100 + 10c, except CPU 3 in interval 7: 5000
//                (the worst idle/s sample); residency 50 us each
//   nohz_exit    calls = 200 - 10c, worked = calls / 2, each 300 ns
//   nohz_enter   calls = 200 - 10c, first = calls / 2
//   nohz_kick    calls = 1000, idle_ticks = 400, each 150 ns (backend kprobe, via caller)
//   ilb_kick     sent = 20 on CPUs 0,4,8,12; received = 20 on CPUs 1,5,9,13
//   cpupri_set   calls n = 100 (1 + c % 3): 0.90n at 1000 ns, 0.08n at 5000 ns,
//                0.01n at 20000 + 1000c ns, 0.01n at 100000 ns, so on every CPU
//                p10 = p50 = p90 = 1007.5 and p98 = 4991.5 (bucket midpoints, shown as
//                1008 and 4992), p99 = the midpoint of 20000 + 1000c's bucket, max = 100000
//   cpupri_find  calls = 40, found = 30, each 500 ns
//   bcast_lock   unavailable (its column shows "-")
//   bcast_wait   contentions = ends = 3 on CPU 2 only, each 2000 ns; all_locks = 10
#pragma once
#include <cstdint>
#include <vector>

#include "sample/sample.h"
#include "schedhot/abi.h"

namespace schedhot::tui_fixture {

inline constexpr uint32_t kCpus = 16;
inline constexpr uint32_t kSamples = 11;
inline constexpr uint64_t kStartMono = 1000'000'000'000ull;
inline constexpr uint64_t kStartWall = 1'700'000'000'000'000'000ull;  // 2023-11-14 22:13:20 UTC
inline constexpr uint64_t kSecond = 1'000'000'000ull;

/// CPU c's topology as described above.
inline CpuTopology topology_of(int c) {
  CpuTopology t;
  t.cpu = c;
  t.package = (c % 8) / 4;
  t.die = 0;
  t.core = c % 4;
  t.llc = 2 * t.package + t.core / 2;
  t.node = t.package;
  return t;
}

/// Idle exits of CPU c in interval k (1..10).
inline uint64_t idle_exits(int c, int k) { return (c == 3 && k == 7) ? 5000 : 100 + 10 * uint64_t(c); }
/// cpupri_set calls of CPU c per interval.
inline uint64_t cpupri_set_calls(int c) { return 100 * (1 + uint64_t(c) % 3); }
/// The slowest-but-one cpupri_set duration of CPU c (its p99 value), ns.
inline uint64_t cpupri_set_tail(int c) { return 20000 + 1000 * uint64_t(c); }

inline Meta fixture_meta() {
  std::vector<ProbeStatus> st;
  for (const auto& p : probe_catalog()) {
    ProbeStatus s;
    s.probe = p.name;
    s.target = p.target;
    s.attached = true;
    s.backend = Backend::fentry;
    s.symbol = p.symbols.empty() ? "" : p.symbols.front();
    if (p.kind == ProbeKind::tracepoint) {
      s.backend = Backend::tracepoint;
      s.symbol.clear();
      for (const auto& t : p.tp_programs) s.symbol += (s.symbol.empty() ? "" : ",") + t.tracepoint;
    }
    if (p.name == "nohz_kick") {
      s.backend = Backend::kprobe;
      s.symbol = "sched_balance_trigger";
      s.via = "via sched_balance_trigger (nohz_balancer_kick inlined)";
    }
    if (p.name == "bcast_lock") {
      s.attached = false;
      s.backend = Backend::none;
      s.reason = "fentry refused: EPERM (kernel lockdown or an LSM denies BPF tracing programs); "
                 "kprobes not built into this kernel (CONFIG_KPROBES=n)";
    }
    st.push_back(s);
  }
  HostInfo h;
  h.hostname = "fixture16";
  h.kernel_release = "6.18.0-fixture";
  h.kernel_version = "#1 SMP PREEMPT_DYNAMIC fixture";
  h.machine = "x86_64";
  h.possible_cpus = kCpus;
  h.cacheline_bytes = 64;
  h.cpuidle_driver = "intel_idle";
  h.broadcast_device = "<NULL>";
  h.arat = true;
  for (uint32_t c = 0; c < kCpus; ++c) {
    h.online.push_back(int(c));
    h.topology.push_back(topology_of(int(c)));
  }
  Meta m = schedhot::make_meta(h, kCpus, st);
  m.tool_version = "fixture";
  m.command = "make_tui_fixture";
  m.interval_ns = kSecond;
  m.start_mono_ns = kStartMono;
  m.start_wall_ns = kStartWall;
  return m;
}

/// Adds n values of v ns to histogram `field` of probe p on cpu in s.
inline void add_values(const Meta& m, Sample& s, int p, int cpu, const char* field, uint64_t v, uint64_t n) {
  if (!n) return;
  const ProbeMeta& pm = m.probes[p];
  uint64_t* w = s.probes[p].words.mut_cpu(uint32_t(cpu)) + pm.slot.find(field)->offset;
  w[0] += v * n;               // sum_ns
  if (v > w[1]) w[1] = v;      // max_ns
  w[2 + sh_hist_index(v)] += n;
}

/// Adds d to counter `field` (element idx) of probe p on cpu in s.
inline void add_count(const Meta& m, Sample& s, int p, int cpu, const char* field, uint64_t d, uint32_t idx = 0) {
  const ProbeMeta& pm = m.probes[p];
  s.probes[p].words.mut(size_t(cpu) * pm.slot.slot_words + pm.slot.find(field)->offset + idx) += d;
}

/// Adds interval k's deltas (see the header comment) to s.
inline void advance(const Meta& m, Sample& s, int k) {
  const int idle = m.probe_index("idle"), nx = m.probe_index("nohz_exit"), ne = m.probe_index("nohz_enter"),
            nk = m.probe_index("nohz_kick"), ilb = m.probe_index("ilb_kick"), cs = m.probe_index("cpupri_set"),
            cf = m.probe_index("cpupri_find"), bw = m.probe_index("bcast_wait");
  for (int c = 0; c < int(kCpus); ++c) {
    uint64_t ex = idle_exits(c, k);
    add_count(m, s, idle, c, "exits", ex);
    add_count(m, s, idle, c, "entries", ex);
    add_count(m, s, idle, c, "by_state", ex, uint32_t(1 + c % 3));
    add_values(m, s, idle, c, "lat", 50'000, ex);

    uint64_t nc = 200 - 10 * uint64_t(c);
    add_count(m, s, nx, c, "calls", nc);
    add_count(m, s, nx, c, "worked", nc / 2);
    add_values(m, s, nx, c, "lat", 300, nc);
    add_count(m, s, ne, c, "calls", nc);
    add_count(m, s, ne, c, "first", nc / 2);

    add_count(m, s, nk, c, "calls", 1000);
    add_count(m, s, nk, c, "idle_ticks", 400);
    add_values(m, s, nk, c, "lat", 150, 1000);

    if (c % 4 == 0) {
      add_count(m, s, ilb, c, "sent", 20);
      add_count(m, s, ilb, c, "flags", 20, 1);
    }
    if (c % 4 == 1) add_count(m, s, ilb, c, "received", 20);

    uint64_t n = cpupri_set_calls(c);
    add_count(m, s, cs, c, "calls", n);
    add_count(m, s, cs, c, "trans", n / 2, SH_CP_NORMAL * SH_CP_NCLASS + SH_CP_RT);
    add_count(m, s, cs, c, "trans", n / 2, SH_CP_RT * SH_CP_NCLASS + SH_CP_NORMAL);
    add_values(m, s, cs, c, "lat", 1000, n * 90 / 100);
    add_values(m, s, cs, c, "lat", 5000, n * 8 / 100);
    add_values(m, s, cs, c, "lat", cpupri_set_tail(c), n / 100);
    add_values(m, s, cs, c, "lat", 100'000, n / 100);

    add_count(m, s, cf, c, "calls", 40);
    add_count(m, s, cf, c, "found", 30);
    add_values(m, s, cf, c, "lat", 500, 40);

    add_count(m, s, bw, c, "all_locks", 10);
    if (c == 2) {
      add_count(m, s, bw, c, "contentions", 3);
      add_count(m, s, bw, c, "ends", 3);
      add_values(m, s, bw, c, "lat", 2000, 3);
    }
  }
}

/// The recording's samples: seq 0 is a baseline with non-zero counters (as after a
/// while of running), then one sample per interval.
inline std::vector<Sample> fixture_samples(const Meta& m) {
  std::vector<Sample> out;
  Sample s = schedhot::make_sample(m);
  s.mono_ns = kStartMono;
  s.wall_ns = kStartWall;
  for (int k = -5; k <= 0; ++k) advance(m, s, 1);  // history before the recording started
  out.push_back(s);
  for (int k = 1; k < int(kSamples); ++k) {
    advance(m, s, k);
    s.seq = uint32_t(k);
    s.mono_ns = kStartMono + uint64_t(k) * kSecond;
    s.wall_ns = kStartWall + uint64_t(k) * kSecond;
    out.push_back(s);
  }
  return out;
}

}  // namespace schedhot::tui_fixture
