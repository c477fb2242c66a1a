// The BPF handler logic, in the kernel: the same handler cores the fentry/kprobe/
// tracepoint programs use, wrapped in raw_tp programs (test_* in bpf/*.bpf.c) and
// driven with BPF_PROG_TEST_RUN on a chosen CPU with synthetic timestamps, priorities
// and flags. The maps are read back and checked word by word. Needs root.
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <algorithm>
#include <cinttypes>
#include <cstddef>
#include <random>
#include <map>

#include "analysis/tails.h"
#include "model/gaps.h"
#include "probe/catch_reader.h"
#include "probe/catch_rules.h"
#include "probe/steal_clock.h"
#include "model/lines.h"
#include "probe/module.h"
#include "probe/records.h"
#include "sample/sample.h"
#include "schedhot.skel.h"
#include "schedhot/abi.h"

namespace {

std::string g_log;
int capture(enum libbpf_print_level, const char* fmt, va_list ap) {
  char buf[2048];
  vsnprintf(buf, sizeof buf, fmt, ap);
  if (g_log.size() < (1u << 20)) g_log += buf;
  return 0;
}

class Handlers : public ::testing::Test {
 protected:
  void SetUp() override {
    g_log.clear();
    libbpf_set_print(capture);
    ncpus_ = libbpf_num_possible_cpus();
    ASSERT_GT(ncpus_, 0);
    skel_ = schedhot_bpf__open();
    ASSERT_NE(skel_, nullptr) << "cannot open the BPF object";
    struct bpf_program* prog;
    bpf_object__for_each_program(prog, skel_->obj) {
      std::string name = bpf_program__name(prog);
      bpf_program__set_autoload(prog, name.rfind("test_", 0) == 0);
    }
    struct bpf_map* map;
    bpf_object__for_each_map(map, skel_->obj) {
      std::string n = bpf_map__name(map);
      if (n.size() > 6 && n.compare(n.size() - 6, 6, "_slots") == 0) bpf_map__set_max_entries(map, ncpus_);
    }
    bpf_map__set_max_entries(skel_->maps.sh_slot_marks, ncpus_);  // the change marks, as schedhot loads them
    skel_->rodata->sh_marks = 1;
    skel_->rodata->sh_cpupri_nr_prios = 101;
    skel_->rodata->sh_gaps = gaps_ ? 1 : 0;
    skel_->rodata->sh_catch_armed = catch_ ? 1 : 0;
    skel_->rodata->sh_catch_irq = catch_ ? 1 : 0;
    if (holder_) {
      bpf_map__set_max_entries(skel_->maps.sh_bcast_holders, ncpus_);
      skel_->rodata->sh_bcast_hold = 1;
      skel_->rodata->sh_bcast_ncpus = static_cast<__u32>(ncpus_);
    }
    skel_->rodata->sh_catch_steal = steal_ ? ~0u : 0;  // every probe's events
    skel_->rodata->sh_steal_rq_delta = steal_ ? schedhot::find_steal_clock().rq_delta : 0;
    int err = schedhot_bpf__load(skel_);
    ASSERT_EQ(err, 0) << "loading the test programs failed (" << strerror(-err)
                      << "): these tests need root and BPF_PROG_TEST_RUN for raw_tp\n"
                      << g_log.substr(g_log.size() > 4000 ? g_log.size() - 4000 : 0);
  }
  void TearDown() override { schedhot_bpf__destroy(skel_); }

  /// Runs program prog with args on cpu.
  void run(struct bpf_program* prog, std::vector<uint64_t> args, int cpu = 0) {
    LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = args.data(), .ctx_size_in = static_cast<__u32>(args.size() * 8),
                .flags = BPF_F_TEST_RUN_ON_CPU, .cpu = static_cast<__u32>(cpu));
    int err = bpf_prog_test_run_opts(bpf_program__fd(prog), &opts);
    ASSERT_EQ(err, 0) << "BPF_PROG_TEST_RUN of " << bpf_program__name(prog) << " (" << args.size() << " args, [1] " << (args.size() > 1 ? args[1] : 0) << ") on CPU " << cpu << ": " << strerror(errno);
  }

  /// The slot of cpu in map.
  template <typename T>
  T slot(struct bpf_map* map, int cpu) {
    T v{};
    __u32 key = static_cast<__u32>(cpu);
    EXPECT_EQ(bpf_map_lookup_elem(bpf_map__fd(map), &key, &v), 0);
    return v;
  }

  static uint64_t bucket(const sh_hist& h, uint64_t v) { return h.bucket[sh_hist_index(v)]; }
  static uint64_t total(const sh_hist& h) {
    uint64_t n = 0;
    for (auto b : h.bucket) n += b;
    return n;
  }

  int ncpus_ = 0;
  bool gaps_ = false;  ///< load with the gap state on (sh_gaps = 1)
  bool catch_ = false; ///< load with --catch armed (sh_catch_armed, sh_catch_irq = 1)
  bool holder_ = false; ///< load with bcast_wait's holder state (sh_bcast_hold = 1)
  bool steal_ = false; ///< and the steal clock read (sh_catch_steal = 1; needs the host's clock)
  schedhot_bpf* skel_ = nullptr;
};

/// The handlers with the gap state on (abi.h sh_gap_slot).
class GapState : public Handlers {
 protected:
  GapState() { gaps_ = true; }

  /// What record writes for a 6.12 kernel with 64-byte lines: gap_routes() of every probe,
  /// written into the route map; index: each gap line's Meta::gap_lines index.
  struct Routed {
    schedhot::Meta meta;
    schedhot::CoherenceLayout layout;
    schedhot::GapRoutes routes;
    std::map<schedhot::LineKey, uint32_t> index;
  };
  Routed route_all() {
    using namespace schedhot;
    Routed r{make_meta(HostInfo{}, static_cast<uint32_t>(ncpus_), std::vector<ProbeStatus>(SH_NPROBES)),
             assumed_layout("6.12.0", 64), {}, {}};
    r.routes = gap_routes(LinePlan(r.meta, r.layout));
    for (const auto& [key, rt] : r.routes.routes)
      EXPECT_EQ(bpf_map_update_elem(bpf_map__fd(skel_->maps.sh_gap_routes), &key, &rt, BPF_ANY), 0);
    for (size_t i = 0; i < r.routes.lines.size(); ++i)
      r.index[{r.routes.lines[i].object, r.routes.lines[i].line}] = uint32_t(i);
    return r;
  }
  /// One counted event as the replay takes it: counter `word` of `probe` on cpu at ts.
  struct Ev {
    uint64_t ts;
    int cpu, probe;
    uint16_t word;
  };
  static constexpr uint16_t kCalls = offsetof(sh_cpupri_set_slot, f.calls) / 8,
                            kNoop = offsetof(sh_cpupri_set_slot, noop) / 8,
                            kVecSet = offsetof(sh_cpupri_set_slot, vec_set) / 8,
                            kVecClear = offsetof(sh_cpupri_set_slot, vec_clear) / 8,
                            kWorked = offsetof(sh_nohz_exit_slot, worked) / 8,
                            kKickCalls = offsetof(sh_nohz_kick_slot, f.calls) / 8,
                            kIdleTicks = offsetof(sh_nohz_kick_slot, idle_ticks) / 8;
};

TEST_F(Handlers, FunctionTimingBucketsExactly) {
  // cpupri_find: entry at t, exit at t + d, return value 1 for the even ones.
  const uint64_t durations[] = {5, 15, 16, 425, 1915, 6619, 13200, 999'999, 10'000'000'000ull};
  uint64_t t = 1'000'000;
  for (size_t i = 0; i < std::size(durations); ++i) {
    run(skel_->progs.test_cpupri_find, {0, t, 0});
    run(skel_->progs.test_cpupri_find, {1, t + durations[i], i % 2 == 0 ? 1ull : 0ull});
    t += 20'000'000'000ull;
  }
  auto s = slot<sh_cpupri_find_slot>(skel_->maps.cpupri_find_slots, 0);
  EXPECT_EQ(s.f.calls, std::size(durations));
  EXPECT_EQ(s.found, 5u);
  EXPECT_EQ(s.f.nested, 0u);
  EXPECT_EQ(s.f.orphan_exits, 0u);
  EXPECT_EQ(total(s.f.lat), std::size(durations));
  uint64_t sum = 0;
  for (uint64_t d : durations) {
    sum += d;
    EXPECT_GE(bucket(s.f.lat, d), 1u) << "duration " << d << " not in bucket " << sh_hist_index(d);
  }
  EXPECT_EQ(s.f.lat.sum_ns, sum);
  EXPECT_EQ(s.f.lat.max_ns, 10'000'000'000ull);
  EXPECT_EQ(s.f.lat.bucket[5], 1u) << "5 ns is exact";
  EXPECT_EQ(s.f.lat.bucket[16], 1u) << "16 ns opens the first log group";
}

TEST_F(Handlers, NestedCallsAndOrphanExits) {
  auto* p = skel_->progs.test_nohz_kick;
  run(p, {0, 100, 0});
  run(p, {0, 200, 1});  // an interrupt's call nests inside
  run(p, {1, 260, 0});  // inner: 60 ns
  run(p, {1, 1100, 0}); // outer: 1000 ns
  auto s = slot<sh_nohz_kick_slot>(skel_->maps.nohz_kick_slots, 0);
  EXPECT_EQ(s.f.calls, 2u);
  EXPECT_EQ(s.idle_ticks, 1u);
  EXPECT_EQ(bucket(s.f.lat, 60), 1u);
  EXPECT_EQ(bucket(s.f.lat, 1000), 1u);
  EXPECT_EQ(s.f.lat.sum_ns, 1060u);
  // Four entries whose exits were lost, then a fifth: the full stack is reset, the
  // fifth is timed by the next exit, and the stale exits that follow are orphans.
  for (int i = 0; i < 5; ++i) run(p, {0, 2000u + i, 0});
  run(p, {1, 2504, 0});  // the fifth call: 500 ns
  for (int i = 0; i < 4; ++i) run(p, {1, 3000u + i, 0});
  s = slot<sh_nohz_kick_slot>(skel_->maps.nohz_kick_slots, 0);
  EXPECT_EQ(s.f.calls, 7u);
  EXPECT_EQ(s.f.nested, 1u);
  EXPECT_EQ(total(s.f.lat), 2u + 1u);
  EXPECT_EQ(bucket(s.f.lat, 500), 1u);
  EXPECT_EQ(s.f.orphan_exits, 4u);
  // Timing works again afterwards.
  run(p, {0, 5000, 0});
  run(p, {1, 5060, 0});
  s = slot<sh_nohz_kick_slot>(skel_->maps.nohz_kick_slots, 0);
  EXPECT_EQ(total(s.f.lat), 4u);
  EXPECT_EQ(bucket(s.f.lat, 60), 2u);
}

TEST_F(Handlers, NohzExitWorkedAndProxyCounts) {
  auto* p = skel_->progs.test_nohz_exit;
  run(p, {0, 10, 1});
  run(p, {1, 90, 0});
  run(p, {0, 100, 0});
  run(p, {1, 150, 0});
  run(p, {2, 0, 1});  // proxy: a count, no timing
  run(p, {2, 0, 0});
  auto s = slot<sh_nohz_exit_slot>(skel_->maps.nohz_exit_slots, 0);
  EXPECT_EQ(s.f.calls, 4u);
  EXPECT_EQ(s.worked, 2u);
  EXPECT_EQ(total(s.f.lat), 2u);
  EXPECT_EQ(s.f.lat.sum_ns, 130u);
  EXPECT_EQ(s.f.nested, 0u) << "proxy counts must not open timing entries";
  // The tick proxy: expire_entry keeps nohz_tick_stopped, expire_exit counts when
  // rq->idle_balance is clear; an exit without its entry (attach race) counts nothing.
  run(p, {3, 0, 1});
  run(p, {4, 0, 0});  // busy tick after nohz idle: a call that worked
  run(p, {3, 0, 0});
  run(p, {4, 0, 0});  // busy tick: a call
  run(p, {3, 0, 1});
  run(p, {4, 0, 1});  // idle tick: nohz_balancer_kick() returns first
  run(p, {4, 0, 0});  // no entry seen
  s = slot<sh_nohz_exit_slot>(skel_->maps.nohz_exit_slots, 0);
  EXPECT_EQ(s.f.calls, 6u);
  EXPECT_EQ(s.worked, 3u);
  EXPECT_EQ(s.tick, 0u) << "the exit closes the tick";
  EXPECT_EQ(s.f.nested, 0u);
  auto e = slot<sh_nohz_enter_slot>(skel_->maps.nohz_enter_slots, 0);
  EXPECT_EQ(e.calls, 0u);
  run(skel_->progs.test_nohz_enter, {0});
  run(skel_->progs.test_nohz_enter, {1});
  e = slot<sh_nohz_enter_slot>(skel_->maps.nohz_enter_slots, 0);
  EXPECT_EQ(e.calls, 2u);
  EXPECT_EQ(e.first, 1u);
}

TEST_F(Handlers, CpupriTransitionsAndVectors) {
  auto* p = skel_->progs.test_cpupri_set;
  // v5.11+ (101 priorities). args: op, ts, old (converted), new (raw task prio), nr
  run(p, {0, 0, 0, 49, 101});                               // NORMAL -> RT prio 49 -> cpupri 50
  run(p, {1, 300, 0, 0, 0});
  run(p, {0, 1000, 50, 99, 101});                           // RT 50 -> NORMAL (raw 99 = MAX_RT_PRIO-1)
  run(p, {1, 1425, 0, 0, 0});
  run(p, {0, 2000, static_cast<uint64_t>(-1), 100, 101});   // INVALID -> HIGHER (deadline)
  run(p, {1, 2100, 0, 0, 0});
  run(p, {0, 3000, 0, 99, 101});                            // NORMAL -> NORMAL: no write
  run(p, {1, 3050, 0, 0, 0});
  run(p, {0, 4000, 100, static_cast<uint64_t>(-1), 101});   // HIGHER -> INVALID (CPU going offline)
  run(p, {1, 4010, 0, 0, 0});
  auto s = slot<sh_cpupri_set_slot>(skel_->maps.cpupri_set_slots, 0);
  EXPECT_EQ(s.f.calls, 5u);
  EXPECT_EQ(s.noop, 1u);
  EXPECT_EQ(s.trans[SH_CP_NORMAL * 4 + SH_CP_RT], 1u);
  EXPECT_EQ(s.trans[SH_CP_RT * 4 + SH_CP_NORMAL], 1u);
  EXPECT_EQ(s.trans[SH_CP_INVALID * 4 + SH_CP_HIGHER], 1u);
  EXPECT_EQ(s.trans[SH_CP_HIGHER * 4 + SH_CP_INVALID], 1u);
  EXPECT_EQ(s.trans[SH_CP_NORMAL * 4 + SH_CP_NORMAL], 0u) << "a no-op is not a transition";
  EXPECT_EQ(s.vec_set[50], 1u);
  EXPECT_EQ(s.vec_clear[0], 1u);
  EXPECT_EQ(s.vec_set[0], 1u);
  EXPECT_EQ(s.vec_clear[50], 1u);
  EXPECT_EQ(s.vec_set[100], 1u);
  EXPECT_EQ(s.vec_clear[100], 1u);
  uint64_t sets = 0, clears = 0;
  for (int i = 0; i < SH_CPUPRI_VECS; ++i) {
    sets += s.vec_set[i];
    clears += s.vec_clear[i];
  }
  EXPECT_EQ(sets, 3u);
  EXPECT_EQ(clears, 3u);
  EXPECT_EQ(total(s.f.lat), 5u);
  EXPECT_EQ(bucket(s.f.lat, 425), 1u);
  EXPECT_EQ(s.f.lat.max_ns, 425u);
}

TEST_F(Handlers, CpupriBeforeV511Mapping) {
  auto* p = skel_->progs.test_cpupri_set;
  // 102 priorities: MAX_PRIO (140) -> IDLE 0, normal (120) -> NORMAL 1, RT 49 -> 101-49 = 52
  run(p, {0, 0, 1, 49, 102});
  run(p, {1, 10, 0, 0, 0});
  run(p, {0, 20, 52, 140, 102});
  run(p, {1, 30, 0, 0, 0});
  run(p, {0, 40, 0, 120, 102});
  run(p, {1, 50, 0, 0, 0});
  auto s = slot<sh_cpupri_set_slot>(skel_->maps.cpupri_set_slots, 0);
  EXPECT_EQ(s.vec_set[52], 1u);
  EXPECT_EQ(s.vec_clear[1], 1u);
  EXPECT_EQ(s.vec_set[0], 1u);
  EXPECT_EQ(s.vec_clear[52], 1u);
  EXPECT_EQ(s.vec_set[1], 1u);
  EXPECT_EQ(s.vec_clear[0], 1u);
  EXPECT_EQ(s.trans[SH_CP_NORMAL * 4 + SH_CP_RT], 1u);
  EXPECT_EQ(s.trans[SH_CP_RT * 4 + SH_CP_NORMAL], 1u);
  EXPECT_EQ(s.trans[SH_CP_NORMAL * 4 + SH_CP_NORMAL], 1u) << "IDLE -> NORMAL is a write inside the NORMAL class";
}

TEST_F(Handlers, IlbKicksSentAndReceived) {
  auto* p = skel_->progs.test_ilb_kick;
  run(p, {0, 0, 0x3});   // to CPU 0 from CPU 0
  run(p, {0, 1, 0xb});
  run(p, {0, 1, 0x1b});  // flags above 0xf are masked
  run(p, {1, 0, 0});
  auto s = slot<sh_ilb_slot>(skel_->maps.ilb_kick_slots, 0);
  EXPECT_EQ(s.sent, 3u);
  EXPECT_EQ(s.sent_self, 1u);
  EXPECT_EQ(s.received, 1u);
  EXPECT_EQ(s.flags[0x3], 1u);
  EXPECT_EQ(s.flags[0xb], 2u);
}

TEST_F(Handlers, IdleResidency) {
  auto* p = skel_->progs.test_idle;
  run(p, {2, 100});
  run(p, {0xffffffffull, 600});
  run(p, {9, 1000});  // deep states fold into the last counter
  run(p, {0xffffffffull, 1000 + 123456});
  run(p, {0xffffffffull, 200000});  // exit without entry: counted, not timed
  auto s = slot<sh_idle_slot>(skel_->maps.idle_slots, 0);
  EXPECT_EQ(s.entries, 2u);
  EXPECT_EQ(s.exits, 3u);
  EXPECT_EQ(s.by_state[2], 1u);
  EXPECT_EQ(s.by_state[SH_IDLE_STATES - 1], 1u);
  EXPECT_EQ(total(s.lat), 2u);
  EXPECT_EQ(bucket(s.lat, 500), 1u);
  EXPECT_EQ(bucket(s.lat, 123456), 1u);
}

TEST_F(Handlers, ContentionFilteredByLockAddress) {
  auto* p = skel_->progs.test_bcast_wait;
  const uint64_t lock = 0xffffffff82a00040ull, other = 0xffff888012345678ull;
  run(p, {0, lock, 1000});  // address unknown yet: only all_locks
  run(p, {1, lock, 1500});
  skel_->bss->sh_bcast_lock_addr = lock;
  run(p, {0, other, 2000});
  run(p, {1, other, 2500});
  run(p, {0, lock, 3000});
  run(p, {1, lock, 3700});
  auto s = slot<sh_bcast_wait_slot>(skel_->maps.bcast_wait_slots, 0);
  EXPECT_EQ(s.all_locks, 3u);
  EXPECT_EQ(s.contentions, 1u);
  EXPECT_EQ(s.ends, 1u);
  EXPECT_EQ(total(s.lat), 1u);
  EXPECT_EQ(bucket(s.lat, 700), 1u);
  EXPECT_EQ(s.lat.max_ns, 700u);
}

TEST_F(Handlers, BroadcastSites) {
  for (uint64_t site : {0, 0, 3, 7, 8}) run(skel_->progs.test_bcast_lock, {site});
  auto s = slot<sh_bcast_lock_slot>(skel_->maps.bcast_lock_slots, 0);
  EXPECT_EQ(s.calls[0], 2u);
  EXPECT_EQ(s.calls[3], 1u);
  EXPECT_EQ(s.calls[7], 1u);
  uint64_t n = 0;
  for (auto c : s.calls) n += c;
  EXPECT_EQ(n, 4u) << "site 8 is out of range and ignored";
}

TEST_F(Handlers, EachCpuWritesOnlyItsOwnSlot) {
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  if (online < 2) GTEST_SKIP() << "needs two online CPUs";
  run(skel_->progs.test_idle, {1, 10}, 1);
  run(skel_->progs.test_idle, {0xffffffffull, 20}, 1);
  auto s0 = slot<sh_idle_slot>(skel_->maps.idle_slots, 0);
  auto s1 = slot<sh_idle_slot>(skel_->maps.idle_slots, 1);
  EXPECT_EQ(s0.entries, 0u);
  EXPECT_EQ(s1.entries, 1u);
  EXPECT_EQ(s1.exits, 1u);
  EXPECT_EQ(sizeof(sh_idle_slot) % SH_SLOT_ALIGN, 0u);
  EXPECT_EQ(bpf_map__value_size(skel_->maps.idle_slots) % SH_SLOT_ALIGN, 0u)
      << "every CPU's slot starts on its own 128-byte boundary";
}

/// The handlers with --catch armed (abi.h "Tail capture"): the rule map, the caught
/// events' perf map read by CatchReader, the interrupt rings.
class Catch : public Handlers {
 protected:
  Catch() { catch_ = true; }
  void rule(uint32_t probe, uint64_t threshold_ns, uint32_t per_sec) {
    sh_catch_rule r{};
    r.threshold_ns = threshold_ns;
    r.per_sec = per_sec;
    ASSERT_EQ(bpf_map_update_elem(bpf_map__fd(skel_->maps.sh_catch_rules), &probe, &r, BPF_ANY), 0);
  }
  /// idle from `at` for d ns (state 3) on cpu.
  void idle_for(uint64_t at, uint64_t d, int cpu = 0) {
    run(skel_->progs.test_idle, {3, at}, cpu);
    run(skel_->progs.test_idle, {0xffffffffull, at + d}, cpu);
  }
};

// Over any run of events: caught + rate drops + full drops == the histogram's count from
// the threshold's bucket on, and what the perf buffer delivers is what was caught, with
// its duration, detail, task and a stack.
TEST_F(Catch, CaughtPlusDroppedIsTheHistogramFromTheThresholdsBucket) {
  using namespace schedhot;
  const uint64_t th = round_threshold(10'000);  // 10 us, rounded up to a bucket's lower bound
  ASSERT_GE(th, 10'000u);
  ASSERT_EQ(sh_hist_lower(sh_hist_index(th)), th);
  rule(SH_P_IDLE, th, 3);
  CatchReader reader(bpf_map__fd(skel_->maps.sh_catch_events), uint32_t(ncpus_), nullptr, 1);
  // 40 residencies from 1 us to 40 us in one second (3 caught at most), then 5 long ones a
  // second later (a new rate window: 3 caught, 2 dropped).
  uint64_t t = 1'000'000'000;
  std::vector<uint64_t> over;
  for (uint64_t k = 1; k <= 40; ++k, t += 100'000) {
    idle_for(t, k * 1000);
    if (k * 1000 >= th) over.push_back(k * 1000);
  }
  t += 1'000'000'000;
  for (int k = 0; k < 5; ++k, t += 100'000) idle_for(t, 50'000), over.push_back(50'000);
  auto s = slot<sh_idle_slot>(skel_->maps.idle_slots, 0);
  uint64_t above = 0;
  for (uint32_t i = sh_hist_index(th); i < SH_HIST_BUCKETS; ++i) above += s.lat.bucket[i];
  EXPECT_EQ(above, over.size());
  EXPECT_EQ(s.c.caught, 6u) << "3 per CPU per second";
  EXPECT_EQ(s.c.caught + s.c.rate_drops + s.c.full_drops, above);
  EXPECT_EQ(s.c.full_drops, 0u);
  CatchBatch b = reader.take(UINT64_MAX);
  ASSERT_EQ(b.events.size(), 6u);
  EXPECT_EQ(b.lost, 0u);
  // The first three at or over the threshold, in time order, then three of the long ones.
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(b.events[i].dur_ns, over[i]);
  for (size_t i = 3; i < 6; ++i) EXPECT_EQ(b.events[i].dur_ns, 50'000u);
  for (const CaughtEvent& e : b.events) {
    EXPECT_EQ(e.probe, SH_P_IDLE);
    EXPECT_EQ(e.cpu, 0u);
    EXPECT_EQ(e.detail, 3u) << "idle's detail: the state entered";
    EXPECT_TRUE(e.flags & SH_CATCH_F_DETAIL);
    EXPECT_FALSE(e.comm.empty());  // the test run's task, or the one an IPI to CPU 0 interrupted
    EXPECT_GT(e.stack, 0u) << "a kernel stack (bpf_prog_test_run's)";
  }
  EXPECT_GE(b.stacks.size(), 1u);
}

// A threshold of 0 disarms; a raised one takes effect at the next event.
TEST_F(Catch, ARuleChangesLive) {
  using namespace schedhot;
  CatchReader reader(bpf_map__fd(skel_->maps.sh_catch_events), uint32_t(ncpus_), nullptr, 1);
  idle_for(1000, 5'000'000);  // no rule: nothing caught
  rule(SH_P_IDLE, round_threshold(1'000'000), 0);
  idle_for(10'000'000, 5'000'000);
  rule(SH_P_IDLE, round_threshold(8'000'000), 0);
  idle_for(20'000'000, 5'000'000);
  rule(SH_P_IDLE, 0, 0);
  idle_for(30'000'000, 50'000'000);
  auto s = slot<sh_idle_slot>(skel_->maps.idle_slots, 0);
  EXPECT_EQ(s.c.caught, 1u);
  EXPECT_EQ(reader.take(UINT64_MAX).events.size(), 1u);
}

// The interrupt time inside a caught event: hard IRQs, softirqs (with the hard IRQ inside
// them), NMIs; one open since before the event is its context, not an interruption.
TEST_F(Catch, InterruptTimeInsideTheEvent) {
  using namespace schedhot;
  rule(SH_P_IDLE, round_threshold(1000), 0);
  CatchReader reader(bpf_map__fd(skel_->maps.sh_catch_events), uint32_t(ncpus_), nullptr, 1);
  auto* irq = skel_->progs.test_irq;
  run(irq, {SH_IRQ_HARD, 0, 500, 0});     // before the event: not in it
  run(irq, {SH_IRQ_HARD, 1, 700, 0});
  run(skel_->progs.test_idle, {3, 1000});
  run(irq, {SH_IRQ_HARD, 0, 1100, 0});    // 200 ns
  run(irq, {SH_IRQ_HARD, 1, 1300, 0});
  run(irq, {SH_IRQ_SOFT, 0, 2000, 0});    // 1000 ns, a hard IRQ of 100 ns inside
  run(irq, {SH_IRQ_HARD, 0, 2400, 0});
  run(irq, {SH_IRQ_HARD, 1, 2500, 0});
  run(irq, {SH_IRQ_SOFT, 1, 3000, 0});
  run(irq, {SH_IRQ_NMI, 0, 4000, 50});    // an NMI handler of 50 ns
  run(irq, {SH_IRQ_HARD, 0, 9000, 0});    // still open at the event's end: 1000 ns
  run(skel_->progs.test_idle, {0xffffffffull, 10'000});
  CatchBatch b = reader.take(UINT64_MAX);
  ASSERT_EQ(b.events.size(), 1u);
  const CaughtEvent& e = b.events[0];
  EXPECT_TRUE(e.flags & SH_CATCH_F_IRQ);
  EXPECT_FALSE(e.flags & SH_CATCH_F_IRQ_MORE);
  EXPECT_EQ(e.irq_ns, 200u + 100u + 1000u);
  EXPECT_EQ(e.softirq_ns, 1000u);
  EXPECT_EQ(e.nmi_ns, 50u);
  EXPECT_EQ(e.dur_ns, 9000u);
}

/// --catch with a bcast_wait rule: each CPU's holder state (abi.h struct sh_bcast_holder).
class Holder : public Catch {
 protected:
  Holder() { holder_ = true; }
  static constexpr uint64_t kLock = 0xffffffff82a00040ull;
  enum Op : uint64_t { kBegin = 0, kEnd = 1, kEnter = 2, kLeave = 3 };
  void op(Op o, uint64_t arg, uint64_t ts, int cpu) { run(skel_->progs.test_bcast_wait, {o, arg, ts}, cpu); }
  sh_bcast_holder state(int cpu) { return slot<sh_bcast_holder>(skel_->maps.sh_bcast_holders, cpu); }
};

// A waiter names the CPU inside a lock-taking site and not waiting itself, its site and
// how long it had been inside; the caught wait carries it as its detail.
TEST_F(Holder, AWaiterNamesTheCpuInsideASite) {
  using namespace schedhot;
  if (sysconf(_SC_NPROCESSORS_ONLN) < 2) GTEST_SKIP() << "needs two online CPUs";
  skel_->bss->sh_bcast_lock_addr = kLock;
  skel_->bss->sh_bcast_exit_mask = 0xff;
  rule(SH_P_BCAST_WAIT, round_threshold(1000), 0);
  CatchReader reader(bpf_map__fd(skel_->maps.sh_catch_events), uint32_t(ncpus_), nullptr, 1);

  op(kEnter, 2, 1'000'000, 1);  // CPU 1 enters site 2 (tick_handle_periodic_broadcast)
  EXPECT_EQ(state(1).state, (1'000'000ull << SH_HOLD_TS_SHIFT) | 3u);
  op(kBegin, kLock, 1'000'700, 0);  // CPU 0 waits 700 ns after it
  EXPECT_TRUE(state(0).state & SH_HOLD_WAITING);
  const uint64_t f = state(0).found;
  EXPECT_EQ(SH_HOLD_D_CPU(f), 2u) << "CPU 1, + 1";
  EXPECT_EQ(SH_HOLD_D_SITE(f), 2u);
  EXPECT_EQ(SH_HOLD_D_CANDS(f), 1u);
  EXPECT_EQ(SH_HOLD_D_INSIDE_NS(f), 700u);
  op(kLeave, 0, 1'003'000, 1);
  EXPECT_EQ(state(1).state, 0u);
  op(kEnd, kLock, 1'005'000, 0);  // waited 4.3 us: caught
  EXPECT_FALSE(state(0).state & SH_HOLD_WAITING);
  CatchBatch b = reader.take(UINT64_MAX);
  ASSERT_EQ(b.events.size(), 1u);
  EXPECT_EQ(b.events[0].probe, SH_P_BCAST_WAIT);
  EXPECT_TRUE(b.events[0].flags & SH_CATCH_F_DETAIL);
  EXPECT_EQ(b.events[0].detail, f);
  EXPECT_EQ(caught_detail_text(SH_P_BCAST_WAIT, b.events[0].detail, 101), "holder CPU 1 in tick_handle_periodic_broadcast");

  // Nobody inside a site: "not seen" (CPU 0), still a detail.
  op(kBegin, kLock, 2'000'000, 0);
  op(kEnd, kLock, 2'010'000, 0);
  b = reader.take(UINT64_MAX);
  ASSERT_EQ(b.events.size(), 1u);
  EXPECT_TRUE(b.events[0].flags & SH_CATCH_F_DETAIL);
  EXPECT_EQ(SH_HOLD_D_CPU(b.events[0].detail), 0u);
  EXPECT_EQ(caught_detail_text(SH_P_BCAST_WAIT, b.events[0].detail, 101),
            "holder not seen (no other CPU inside a lock-taking site and not waiting: the lock may have just passed to a waiter)");

  // A CPU inside a site but waiting on the lock itself is no holder; so is a site whose
  // exit is not attached (its entry writes no state).
  op(kEnter, 0, 3'000'000, 1);
  op(kBegin, kLock, 3'000'100, 1);  // CPU 1 waits (inside site 0)
  op(kBegin, kLock, 3'000'200, 0);
  EXPECT_EQ(SH_HOLD_D_CPU(state(0).found), 0u);
  op(kEnd, kLock, 3'000'300, 1);   // CPU 1 got it: the holder now
  op(kEnd, kLock, 3'000'400, 0);
  op(kBegin, kLock, 3'000'500, 0);
  EXPECT_EQ(SH_HOLD_D_CPU(state(0).found), 2u);
  EXPECT_EQ(SH_HOLD_D_SITE(state(0).found), 0u);
  op(kEnd, kLock, 3'000'600, 0);
  op(kLeave, 0, 3'000'700, 1);
  skel_->bss->sh_bcast_exit_mask = 0xff & ~(1u << 5);
  op(kEnter, 5, 4'000'000, 1);
  EXPECT_EQ(state(1).state, 0u) << "site 5's exit is not attached: no state";
}

// The scan loads for 8192 possible CPUs (the verifier walks bpf_loop's callback until its
// states converge: a count it must track exactly failed from 2048 CPUs on 6.18).
TEST(HolderScan, LoadsFor8192Cpus) {
  g_log.clear();
  libbpf_set_print(capture);
  schedhot_bpf* s = schedhot_bpf__open();
  ASSERT_NE(s, nullptr);
  struct bpf_program* p;
  bpf_object__for_each_program(p, s->obj) bpf_program__set_autoload(p, std::string(bpf_program__name(p)) == "test_bcast_wait");
  bpf_map__set_max_entries(s->maps.bcast_wait_slots, libbpf_num_possible_cpus());
  bpf_map__set_max_entries(s->maps.sh_bcast_holders, 8192);
  s->rodata->sh_bcast_hold = 1;
  s->rodata->sh_bcast_ncpus = 8192;
  const int err = schedhot_bpf__load(s);
  EXPECT_EQ(err, 0) << strerror(-err) << "\n" << g_log.substr(g_log.size() > 3000 ? g_log.size() - 3000 : 0);
  schedhot_bpf__destroy(s);
}

// Without a bcast_wait rule (sh_bcast_hold 0) no state is kept and no detail is sent.
TEST_F(Catch, NoHolderStateWithoutItsRule) {
  using namespace schedhot;
  skel_->bss->sh_bcast_lock_addr = 0xffffffff82a00040ull;
  skel_->bss->sh_bcast_exit_mask = 0xff;
  rule(SH_P_BCAST_WAIT, round_threshold(1000), 0);
  CatchReader reader(bpf_map__fd(skel_->maps.sh_catch_events), uint32_t(ncpus_), nullptr, 1);
  run(skel_->progs.test_bcast_wait, {2, 0, 1000}, 0);
  run(skel_->progs.test_bcast_wait, {0, 0xffffffff82a00040ull, 2000}, 0);
  run(skel_->progs.test_bcast_wait, {1, 0xffffffff82a00040ull, 9000}, 0);
  CatchBatch b = reader.take(UINT64_MAX);
  ASSERT_EQ(b.events.size(), 1u);
  EXPECT_FALSE(b.events[0].flags & SH_CATCH_F_DETAIL);
  EXPECT_EQ(b.events[0].detail, 0u);
}

/// --catch with the steal clock read, as record loads it on this host: sh_catch_steal = 1
/// where probe/steal_clock.h finds the clock (else the object would not load: the ksym).
class CatchSteal : public Catch {
 protected:
  CatchSteal() { steal_ = schedhot::steal_clock_reason().empty(); }
};

// Without the steal clock (sh_catch_steal = 0): no event says it measured steal time, and
// its steal_ns is 0 (the reader and the report say "not kept").
TEST_F(Catch, NoStealClockNoStealTime) {
  using namespace schedhot;
  rule(SH_P_IDLE, round_threshold(1000), 0);
  rule(SH_P_NOHZ_EXIT, round_threshold(1000), 0);
  CatchReader reader(bpf_map__fd(skel_->maps.sh_catch_events), uint32_t(ncpus_), nullptr, 1);
  idle_for(1000, 50'000);
  run(skel_->progs.test_nohz_exit, {0, 100'000, 0});
  run(skel_->progs.test_nohz_exit, {1, 200'000, 0});
  CatchBatch b = reader.take(UINT64_MAX);
  ASSERT_EQ(b.events.size(), 2u);
  for (const CaughtEvent& e : b.events) {
    EXPECT_FALSE(e.flags & SH_CATCH_F_STEAL);
    EXPECT_EQ(e.steal_ns, 0u);
  }
}

// With the host's steal clock: every caught event of a timed probe (idle's residency, a
// function's entry/exit at each nesting depth) carries a measured steal time, within the
// event; the clock is the kernel's own (what it adds to /proc/stat's steal column).
TEST_F(CatchSteal, EveryCaughtEventCarriesItsStealTime) {
  using namespace schedhot;
  if (!steal_) GTEST_SKIP() << "this host keeps no steal clock: " << steal_clock_reason();
  rule(SH_P_IDLE, round_threshold(1000), 0);
  rule(SH_P_NOHZ_EXIT, round_threshold(1000), 0);
  CatchReader reader(bpf_map__fd(skel_->maps.sh_catch_events), uint32_t(ncpus_), nullptr, 1);
  idle_for(1000, 50'000);
  // nested: an outer call from 100 us to 400 us, an inner one from 150 us to 200 us
  run(skel_->progs.test_nohz_exit, {0, 100'000, 0});
  run(skel_->progs.test_nohz_exit, {0, 150'000, 0});
  run(skel_->progs.test_nohz_exit, {1, 200'000, 0});
  run(skel_->progs.test_nohz_exit, {1, 400'000, 0});
  // a long real event: its steal time is read from the clock twice, a second apart
  run(skel_->progs.test_idle, {3, 1'000'000});
  usleep(300'000);
  run(skel_->progs.test_idle, {0xffffffffull, 1'000'000 + 3'000'000'000ull});
  CatchBatch b = reader.take(UINT64_MAX);
  ASSERT_EQ(b.events.size(), 4u);
  EXPECT_EQ(b.events[0].dur_ns, 50'000u);
  EXPECT_EQ(b.events[1].dur_ns, 50'000u);   // the inner call (depth 1)
  EXPECT_EQ(b.events[2].dur_ns, 300'000u);  // the outer call (depth 0)
  for (const CaughtEvent& e : b.events) {
    EXPECT_TRUE(e.flags & SH_CATCH_F_STEAL) << "probe " << e.probe << " dur " << e.dur_ns;
    EXPECT_LE(e.steal_ns, e.dur_ns);
  }
}

/// /proc/stat's steal column of cpu, ns (USER_HZ ticks), -1 when not found.
int64_t proc_stat_steal_ns(int cpu) {
  FILE* f = fopen("/proc/stat", "r");
  if (!f) return -1;
  char line[512];
  const std::string want = "cpu" + std::to_string(cpu) + " ";
  int64_t out = -1;
  while (fgets(line, sizeof line, f)) {
    if (std::string(line).rfind(want, 0) != 0) continue;
    unsigned long long v[8] = {};
    if (sscanf(line + want.size(), "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
               &v[6], &v[7]) == 8)
      out = int64_t(v[7]) * (1'000'000'000 / sysconf(_SC_CLK_TCK));
  }
  fclose(f);
  return out;
}

// The clock the programs read is the kernel's own steal clock: on every online CPU it
// agrees with what the kernel accounted into /proc/stat's steal column from it (at each
// tick: behind by at most the steal since that CPU's last accounting, and the column's
// tick truncation). A wrong address (another per-CPU variable) would read something else,
// or nothing (version 0).
TEST_F(CatchSteal, TheClockIsTheOneProcStatCounts) {
  using namespace schedhot;
  if (!steal_) GTEST_SKIP() << "this host keeps no steal clock: " << steal_clock_reason();
  const int64_t tick = 1'000'000'000 / sysconf(_SC_CLK_TCK);
  int checked = 0;
  for (int c = 0; c < ncpus_; ++c) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(c, &set);
    const int64_t before = proc_stat_steal_ns(c);
    if (before < 0) continue;  // not online
    LIBBPF_OPTS(bpf_test_run_opts, opts, .flags = BPF_F_TEST_RUN_ON_CPU, .cpu = static_cast<__u32>(c));
    uint64_t dummy = 0;
    opts.ctx_in = &dummy;
    opts.ctx_size_in = sizeof dummy;
    if (bpf_prog_test_run_opts(bpf_program__fd(skel_->progs.test_steal), &opts) != 0) continue;  // offline
    const int64_t after = proc_stat_steal_ns(c);
    ASSERT_EQ(skel_->bss->sh_steal_test_ok, 1u) << "CPU " << c << ": the clock read";
    const int64_t v = int64_t(skel_->bss->sh_steal_test_ns);
    std::printf("CPU %d: steal clock %" PRId64 " ns, /proc/stat %" PRId64 "..%" PRId64 " ns\n", c, v, before, after);
    EXPECT_GE(v, before - tick) << "CPU " << c << ": /proc/stat counted " << before << " ns";
    EXPECT_LE(v, after + 200 * 1'000'000) << "CPU " << c << ": /proc/stat counted " << after << " ns";
    ++checked;
  }
  EXPECT_GE(checked, 1);
}

// The marks follow the timing stack: when a full stack is reset (exits lost), the entry
// that resets it takes depth 0's mark with its timing, so its event has its own steal time.
TEST_F(CatchSteal, TheTimingStacksResetKeepsTheMarks) {
  using namespace schedhot;
  if (!steal_) GTEST_SKIP() << "this host keeps no steal clock: " << steal_clock_reason();
  rule(SH_P_NOHZ_EXIT, round_threshold(1000), 0);
  CatchReader reader(bpf_map__fd(skel_->maps.sh_catch_events), uint32_t(ncpus_), nullptr, 1);
  // SH_MAX_DEPTH + 1 entries: the last finds the stack full and takes depth 0; one more
  // entry (depth 1), then two exits: the inner, then the resetting one.
  for (uint64_t k = 0; k <= SH_MAX_DEPTH; ++k) run(skel_->progs.test_nohz_exit, {0, 100'000 + k * 10'000, 0});
  run(skel_->progs.test_nohz_exit, {0, 200'000, 0});
  run(skel_->progs.test_nohz_exit, {1, 250'000, 0});
  run(skel_->progs.test_nohz_exit, {1, 900'000, 0});
  CatchBatch b = reader.take(UINT64_MAX);
  ASSERT_EQ(b.events.size(), 2u);
  EXPECT_EQ(b.events[0].dur_ns, 50'000u);
  EXPECT_EQ(b.events[1].dur_ns, 900'000u - (100'000 + SH_MAX_DEPTH * 10'000));
  for (const CaughtEvent& e : b.events) {
    EXPECT_TRUE(e.flags & SH_CATCH_F_STEAL);
    EXPECT_LE(e.steal_ns, e.dur_ns);
  }
  auto s = slot<sh_nohz_exit_slot>(skel_->maps.nohz_exit_slots, 0);
  EXPECT_EQ(s.f.nested, 1u);
}

}  // namespace

// The gap state the programs keep equals what the --exact replay builds from the same
// events (GapTracker over event_lines(): the two ways the gap model gets its histograms),
// on the routes gap_routes() writes for the Debian layout, on two CPUs.
TEST_F(GapState, EqualsTheReplayOfTheSameEvents) {
  if (sysconf(_SC_NPROCESSORS_ONLN) < 2) GTEST_SKIP() << "needs two online CPUs";
  using namespace schedhot;
  const Routed rt = route_all();
  const Meta& meta = rt.meta;
  const CoherenceLayout& layout = rt.layout;
  const auto& index = rt.index;
  ASSERT_FALSE(rt.routes.routes.empty());
  std::vector<Ev> evs;
  const uint16_t calls = kCalls, noop = kNoop, vset = kVecSet, vclr = kVecClear, worked = kWorked, kcalls = kKickCalls,
                 idle = kIdleTicks;
  // cpupri_set: NORMAL (0) <-> RT 50 (raw 49) and a no-op; nohz_exit that worked; busy
  // and idle ticks. Gaps from 300 ns to 20 ms, both CPUs on the same lines.
  uint64_t ts = 1000;
  for (int round = 0; round < 6; ++round)
    for (int cpu = 0; cpu < 2; ++cpu) {
      const uint64_t step = (round % 3 == 0 ? 300 : round % 3 == 1 ? 7000 : 20000000) + uint64_t(cpu) * 150;
      ts += step;
      run(skel_->progs.test_cpupri_set, {0, ts, 0, 49, 101}, cpu);
      run(skel_->progs.test_cpupri_set, {1, ts + 50, 0, 0, 0}, cpu);
      evs.push_back({ts, cpu, SH_P_CPUPRI_SET, calls});
      evs.push_back({ts, cpu, SH_P_CPUPRI_SET, uint16_t(vset + 50)});
      evs.push_back({ts, cpu, SH_P_CPUPRI_SET, uint16_t(vclr + 0)});
      ts += step;
      run(skel_->progs.test_cpupri_set, {0, ts, 50, 99, 101}, cpu);
      run(skel_->progs.test_cpupri_set, {1, ts + 50, 0, 0, 0}, cpu);
      evs.push_back({ts, cpu, SH_P_CPUPRI_SET, calls});
      evs.push_back({ts, cpu, SH_P_CPUPRI_SET, uint16_t(vset + 0)});
      evs.push_back({ts, cpu, SH_P_CPUPRI_SET, uint16_t(vclr + 50)});
      ts += 400;
      run(skel_->progs.test_cpupri_set, {0, ts, 0, 99, 101}, cpu);  // no-op: cpu_to_pri read only
      run(skel_->progs.test_cpupri_set, {1, ts + 50, 0, 0, 0}, cpu);
      evs.push_back({ts, cpu, SH_P_CPUPRI_SET, noop});
      ts += step / 2 + 1;
      run(skel_->progs.test_nohz_exit, {0, ts, 1}, cpu);
      run(skel_->progs.test_nohz_exit, {1, ts + 80, 0}, cpu);
      evs.push_back({ts, cpu, SH_P_NOHZ_EXIT, worked});
      ts += 900;
      run(skel_->progs.test_nohz_kick, {0, ts, uint64_t(round & 1)}, cpu);
      run(skel_->progs.test_nohz_kick, {1, ts + 40, 0}, cpu);
      evs.push_back({ts, cpu, SH_P_NOHZ_KICK, (round & 1) ? idle : kcalls});
    }
  GapTracker tr;
  for (const Ev& e : evs)
    for (const auto& [line, write] : event_lines(meta, layout, e.probe, e.word, e.cpu))
      tr.feed({e.ts, uint32_t(e.cpu), index.at(line), write});
  size_t compared = 0;
  std::map<std::pair<uint32_t, uint32_t>, CpuGaps> want;  // (line, cpu)
  for (uint32_t line : tr.lines())
    for (const CpuGaps& g : tr.take(line)) want[{line, g.cpu}] = g;
  for (int cpu = 0; cpu < 2; ++cpu) {
    auto s = slot<sh_gap_slot>(skel_->maps.sh_gap_slots, cpu);
    EXPECT_EQ(s.full, 0u);
    for (const sh_gap_line& e : s.line) {
      if (!e.id) continue;
      auto it = want.find({e.id - 1, uint32_t(cpu)});
      ASSERT_NE(it, want.end()) << "CPU " << cpu << " keeps line " << e.id - 1 << " that the replay never touched";
      for (uint32_t b = 0; b < SH_GAP_BUCKETS; ++b) {
        EXPECT_EQ(double(e.ww[b]), it->second.ww[b]) << "cpu " << cpu << " line " << e.id - 1 << " ww bucket " << b;
        EXPECT_EQ(double(e.wa[b]), it->second.wa[b]) << "cpu " << cpu << " line " << e.id - 1 << " wa bucket " << b;
        EXPECT_EQ(double(e.ra[b]), it->second.ra[b]) << "cpu " << cpu << " line " << e.id - 1 << " ra bucket " << b;
      }
      want.erase(it);
      ++compared;
    }
  }
  EXPECT_TRUE(want.empty()) << want.size() << " (line, CPU) pairs of the replay have no entry in the gap state";
  EXPECT_GE(compared, 8u) << "nohz line, idle mask, cpupri vec 0/50 counts and masks, cpu_to_pri, on two CPUs";
}

// Sampled (abi.h "Sampling"): one event in 8 arms its lines, the next access records the
// gap. Scaled by the CPU's events / samples (scale_gap_counts, as ProbeSet::take_gaps
// does), the sampled histograms must give
// the gap model's figure of every gap (the replay of the same events) within 10 % per line,
// on a long stream of bursts and long gaps from two CPUs.
TEST_F(GapState, SampledGapsGiveTheFigureOfEveryGap) {
  if (sysconf(_SC_NPROCESSORS_ONLN) < 2) GTEST_SKIP() << "needs two online CPUs";
  using namespace schedhot;
  const Routed rt = route_all();
  const Meta& meta = rt.meta;
  const CoherenceLayout& layout = rt.layout;
  const GapRoutes& routes = rt.routes;
  const auto& index = rt.index;
  constexpr uint32_t kPeriod = 8;
  for (uint32_t cpu = 0; cpu < 2; ++cpu) {
    sh_gap_slot s{};
    s.period = kPeriod;
    ASSERT_EQ(bpf_map_update_elem(bpf_map__fd(skel_->maps.sh_gap_slots), &cpu, &s, BPF_ANY), 0);
  }
  std::vector<Ev> evs;
  const uint16_t calls = kCalls, vset = kVecSet, vclr = kVecClear, worked = kWorked, kcalls = kKickCalls;
  std::mt19937_64 rng(29);
  std::exponential_distribution<double> longgap(1.0 / 200000), shortgap(1.0 / 2000);
  uint64_t ts = 1000;
  uint64_t notes = 0;
  for (int round = 0; round < 2500; ++round)
    for (int cpu = 0; cpu < 2; ++cpu) {
      // a burst: RT 50 in and out within a few us, then a nohz exit and a kick, then a long gap
      ts += 300 + uint64_t(shortgap(rng));
      run(skel_->progs.test_cpupri_set, {0, ts, 0, 49, 101}, cpu);
      run(skel_->progs.test_cpupri_set, {1, ts + 50, 0, 0, 0}, cpu);
      for (uint16_t w : {calls, uint16_t(vset + 50), uint16_t(vclr + 0)}) evs.push_back({ts, cpu, SH_P_CPUPRI_SET, w});
      ts += 300 + uint64_t(shortgap(rng));
      run(skel_->progs.test_cpupri_set, {0, ts, 50, 99, 101}, cpu);
      run(skel_->progs.test_cpupri_set, {1, ts + 50, 0, 0, 0}, cpu);
      for (uint16_t w : {calls, uint16_t(vset + 0), uint16_t(vclr + 50)}) evs.push_back({ts, cpu, SH_P_CPUPRI_SET, w});
      ts += uint64_t(shortgap(rng));
      run(skel_->progs.test_nohz_exit, {0, ts, 1}, cpu);
      run(skel_->progs.test_nohz_exit, {1, ts + 80, 0}, cpu);
      evs.push_back({ts, cpu, SH_P_NOHZ_EXIT, worked});
      ts += 100 + uint64_t(longgap(rng));
      run(skel_->progs.test_nohz_kick, {0, ts, 0}, cpu);
      run(skel_->progs.test_nohz_kick, {1, ts + 40, 0}, cpu);
      evs.push_back({ts, cpu, SH_P_NOHZ_KICK, kcalls});
      notes += 8;
    }
  const double secs = double(ts) / 1e9;
  GapTracker tr;
  for (const Ev& e : evs)
    for (const auto& [line, write] : event_lines(meta, layout, e.probe, e.word, e.cpu))
      tr.feed({e.ts, uint32_t(e.cpu), index.at(line), write});
  std::map<uint32_t, std::vector<CpuGaps>> full, sampled;  // by line, CPUs ascending
  for (uint32_t line : tr.lines()) full[line] = tr.take(line);
  uint64_t recorded = 0, all = 0;
  for (int cpu = 0; cpu < 2; ++cpu) {
    auto s = slot<sh_gap_slot>(skel_->maps.sh_gap_slots, cpu);
    EXPECT_EQ(s.events, notes / 2) << "every note of the CPU counted, sampled or not";
    EXPECT_EQ(s.full, 0u);
    uint64_t round = 29;
    for (const sh_gap_line& e : s.line) {
      if (!e.id) continue;
      const auto& want = full.at(e.id - 1);
      auto it = std::find_if(want.begin(), want.end(), [&](const CpuGaps& g) { return g.cpu == uint32_t(cpu); });
      ASSERT_NE(it, want.end());
      GapCounts c;
      for (uint32_t b = 0; b < SH_GAP_BUCKETS; ++b) {
        c.ww[b] = e.ww[b];
        c.wa[b] = e.wa[b];
        c.ra[b] = e.ra[b];
        recorded += uint64_t(e.ww[b]) + e.ra[b];
      }
      all += uint64_t(it->writes() + it->reads());
      ASSERT_GT(s.samples, 0u);
      scale_gap_counts(c, double(s.events) / double(s.samples), round);
      CpuGaps g;
      g.cpu = uint32_t(cpu);
      for (uint32_t b = 0; b < SH_GAP_BUCKETS; ++b) {
        g.ww[b] = c.ww[b];
        g.wa[b] = c.wa[b];
        g.ra[b] = c.ra[b];
      }
      sampled[e.id - 1].push_back(g);
    }
  }
  const double share = double(recorded) / double(all);
  std::printf("sampled 1 in %u: %" PRIu64 " of %" PRIu64 " gaps recorded (1 in %.1f)\n", kPeriod, recorded, all, 1 / share);
  EXPECT_GT(share, 1.0 / (2 * kPeriod));
  EXPECT_LT(share, 2.0 / kPeriod);
  const TopologyIndex topo(meta.host.topology);
  size_t compared = 0;
  for (const auto& [line, cpus] : full) {
    ASSERT_EQ(sampled[line].size(), cpus.size()) << "line " << line;
    const double want = gap_model(topo, cpus, secs).total(), got = gap_model(topo, sampled[line], secs).total();
    std::printf("line %-40s every gap %9.1f/s  sampled %9.1f/s  (x%.3f)\n", routes.lines[line].object.c_str(), want,
                got, want > 0 ? got / want : 0.0);
    if (want * secs < 100) continue;
    EXPECT_NEAR(got / want, 1.0, 0.10) << "line " << routes.lines[line].object << " " << routes.lines[line].line;
    ++compared;
  }
  EXPECT_GE(compared, 4u) << "nohz line, idle mask, cpupri vec 0/50, cpu_to_pri";
}

// An armed line the CPU does not touch again within SH_GAP_KEEP events is closed at the gap
// so far (censored), so that the CPU's later events go back to the cheap path; the events in
// between, touching other lines, read no clock and keep no entry (armed_mask).
TEST_F(GapState, AnArmedLineNotTouchedAgainIsClosedAfterKeepEvents) {
  // noop -> line 1; calls and vec_set[1] -> line 2
  const auto route = [&](uint32_t word, int32_t line) {
    const uint32_t key = SH_P_CPUPRI_SET * SH_GAP_ROUTE_WORDS + word;
    sh_gap_route r{};
    r.n = 1;
    r.t[0].mode = SH_GAP_FIXED;
    r.t[0].write = 1;
    r.t[0].id0 = line;
    ASSERT_EQ(bpf_map_update_elem(bpf_map__fd(skel_->maps.sh_gap_routes), &key, &r, BPF_ANY), 0);
  };
  route(offsetof(sh_cpupri_set_slot, noop) / 8, 1);
  route(offsetof(sh_cpupri_set_slot, f.calls) / 8, 2);
  route(offsetof(sh_cpupri_set_slot, vec_set) / 8 + 1, 2);
  const uint32_t cpu = 0;
  sh_gap_slot s0{};
  s0.period = 1u << 20;  // after the first event, no sample for a long time
  ASSERT_EQ(bpf_map_update_elem(bpf_map__fd(skel_->maps.sh_gap_slots), &cpu, &s0, BPF_ANY), 0);
  run(skel_->progs.test_cpupri_set, {0, 1000, 0, 99, 101});  // NORMAL -> NORMAL: one note, noop: sampled
  auto s = slot<sh_gap_slot>(skel_->maps.sh_gap_slots, 0);
  ASSERT_EQ(s.armed, 2u) << "a sampled write arms the access gap and the write gap";
  // INVALID -> vec 1: two notes (calls, vec_set[1]) on line 2 only, each one more event
  // while line 1 is armed, none touching it (no clock, no table: line 2 is never noted);
  // note SH_GAP_KEEP + 1 (event 513's first) closes line 1 at 514000 - 1000 ns.
  uint64_t t = 2000;
  for (uint32_t i = 0; i < SH_GAP_KEEP / 2 + 1; ++i, t += 1000)
    run(skel_->progs.test_cpupri_set, {0, t, static_cast<uint64_t>(-1), 98, 101});
  s = slot<sh_gap_slot>(skel_->maps.sh_gap_slots, 0);
  EXPECT_EQ(s.armed, 0u);
  EXPECT_EQ(s.armed_mask, 0u);
  EXPECT_EQ(s.censored, 2u) << "line 1's access and write gaps";
  EXPECT_EQ(s.events, 1u + 2 * (SH_GAP_KEEP / 2 + 1)) << "every note counted, on the cheap path too";
  ASSERT_EQ(s.line[0].id, 1u);
  const uint32_t b = sh_gap_index(514000 - 1000);
  EXPECT_EQ(s.line[0].ww[b], 1u) << "censored write gap at its length so far, bucket " << b;
  EXPECT_EQ(s.line[0].wa[b], 1u);
  EXPECT_EQ(s.line[1].id, 0u) << "line 2 never armed nor sampled: never noted, so never claimed";
}

// A CPU that touches more lines than its table holds counts the rest as full, and the
// entries it has keep their counts.
TEST_F(GapState, AFullTableCountsWhatItCouldNotKeep) {
  // One route per cpupri vec_set element, each to its own fixed line id.
  for (uint32_t v = 0; v < SH_GAP_LINES + 4; ++v) {
    const uint32_t key = SH_P_CPUPRI_SET * SH_GAP_ROUTE_WORDS + offsetof(sh_cpupri_set_slot, vec_set) / 8 + v;
    sh_gap_route r{};
    r.n = 1;
    r.t[0].mode = SH_GAP_FIXED;
    r.t[0].write = 1;
    r.t[0].id0 = int32_t(v + 1);
    ASSERT_EQ(bpf_map_update_elem(bpf_map__fd(skel_->maps.sh_gap_routes), &key, &r, BPF_ANY), 0);
  }
  for (uint64_t v = 0; v < SH_GAP_LINES + 4; ++v)
    run(skel_->progs.test_cpupri_set, {0, 1000 + 1000 * v, static_cast<uint64_t>(-1), 99 - v, 101});  // INVALID -> vec v
  auto s = slot<sh_gap_slot>(skel_->maps.sh_gap_slots, 0);
  uint32_t kept = 0;
  for (const sh_gap_line& e : s.line) kept += e.id != 0;
  EXPECT_EQ(kept, uint32_t(SH_GAP_LINES));
  EXPECT_EQ(s.full, 4u) << "the 4 lines after the table filled";
  EXPECT_EQ(s.line[0].ww[SH_GAP_BUCKETS - 1], 1u) << "a first write has no earlier one: the last bucket";
}

// The change marks (abi.h sh_cpu_marks): after every run of every probe's handlers (random
// ops on every CPU, the nested and orphan cases included), a copy of each probe's mapped
// slots that reads only what the marks say moved equals a copy that reads every word;
// a run moves the gen of its own probe only, and each histogram's chunk counts add up to
// its buckets.
TEST_F(Handlers, ACopyThatReadsOnlyMarkedWordsEqualsAFullCopyAfterEveryRun) {
  using namespace schedhot;
  const uint32_t n = static_cast<uint32_t>(ncpus_);
  const long page = sysconf(_SC_PAGESIZE);
  auto map_of = [&](int fd, size_t bytes) {
    bytes = (bytes + size_t(page) - 1) / size_t(page) * size_t(page);
    void* p = mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
    EXPECT_NE(p, MAP_FAILED) << strerror(errno);
    return p;
  };
  const auto& mods = probe_modules();
  ASSERT_EQ(mods.size(), size_t(SH_NPROBES));
  const auto* live = static_cast<const sh_cpu_marks*>(
      map_of(bpf_map__fd(skel_->maps.sh_slot_marks), sizeof(sh_cpu_marks) * n));
  std::vector<const uint64_t*> slots;
  std::vector<SlotWords> marked(SH_NPROBES), full(SH_NPROBES);
  std::vector<SlotMarks> marks(SH_NPROBES);
  for (uint32_t i = 0; i < SH_NPROBES; ++i) {
    const SlotFields& L = mods[i]->spec().slot;
    slots.push_back(static_cast<const uint64_t*>(
        map_of(bpf_map__fd(mods[i]->slots_map(skel_)), size_t(L.slot_words) * 8 * n)));
    marks[i].live = live;
    marks[i].probe = i;
  }
  const uint64_t lock = 0xffffffff82a00040ull;
  skel_->bss->sh_bcast_lock_addr = lock;
  std::mt19937_64 rng(32);
  uint64_t ts = 1000;
  for (int step = 0; step < 400; ++step) {
    const int cpu = int(rng() % n);
    ts += 100 + rng() % 20000;
    const uint64_t r = rng();
    int probe = -1;
    switch (rng() % 10) {
      case 0: run(skel_->progs.test_nohz_exit, {r % 5, ts, (r >> 8) & 1}, cpu); probe = SH_P_NOHZ_EXIT; break;
      case 1: run(skel_->progs.test_nohz_enter, {r & 1}, cpu); probe = SH_P_NOHZ_ENTER; break;
      case 2: run(skel_->progs.test_nohz_kick, {r % 2, ts, (r >> 8) & 1}, cpu); probe = SH_P_NOHZ_KICK; break;
      case 3: run(skel_->progs.test_ilb_kick, {r % 2, r % n, (r >> 8) & 15}, cpu); probe = SH_P_ILB_KICK; break;
      case 4:
        run(skel_->progs.test_cpupri_set, {r % 2, ts, (r >> 8) % 103 - 1, (r >> 16) % 140, 101}, cpu);
        probe = SH_P_CPUPRI_SET;
        break;
      case 5: run(skel_->progs.test_cpupri_find, {r % 2, ts, (r >> 8) & 1}, cpu); probe = SH_P_CPUPRI_FIND; break;
      case 6: run(skel_->progs.test_bcast_lock, {r % 8}, cpu); probe = SH_P_BCAST_LOCK; break;
      case 7: run(skel_->progs.test_bcast_wait, {r % 2, (r >> 8) & 1 ? lock : lock + 64, ts}, cpu); probe = SH_P_BCAST_WAIT; break;
      default: run(skel_->progs.test_idle, {r % 3 ? (r >> 8) % 4 : 0xffffffffull, ts}, cpu); probe = SH_P_IDLE; break;
    }
    std::vector<uint64_t> gen_before(SH_NPROBES);
    for (uint32_t i = 0; i < SH_NPROBES; ++i) gen_before[i] = marks[i].gen.empty() ? 0 : marks[i].gen[cpu];
    for (uint32_t i = 0; i < SH_NPROBES; ++i) {
      const SlotFields& L = mods[i]->spec().slot;
      copy_slots(slots[i], n, L, marked[i], nullptr, &marks[i]);
      copy_slots(slots[i], n, L, full[i]);
      if (const SlotDelta* d = marked[i].kept_delta())  // what the recording writer encodes: in order
        for (uint32_t c = 0; c < n; ++c)
          for (uint32_t e = d->first[c] + 1; e < d->first[c + 1]; ++e)
            ASSERT_LT(d->word[e - 1], d->word[e]) << "step " << step << " probe " << mods[i]->spec().name << " cpu " << c;
      ASSERT_EQ(marked[i].size(), full[i].size());
      for (uint32_t c = 0; c < n; ++c)
        for (uint32_t w = 0; w < L.slot_words; ++w)
          ASSERT_EQ(marked[i].cpu(c)[w], full[i].cpu(c)[w])
              << "step " << step << " probe " << mods[i]->spec().name << " cpu " << c << " word " << w;
      if (int(i) != probe) EXPECT_EQ(marks[i].gen[cpu], gen_before[i]) << "step " << step << ": another probe's gen moved";
      for (auto& f : L.fields) {
        if (f.kind != FieldKind::hist) continue;
        for (uint32_t c = 0; c < n; ++c)
          for (uint32_t j = 0; j < SH_MARK_CHUNKS; ++j) {
            uint64_t sum = 0;
            for (uint32_t k = 0; k < SH_MARK_CHUNK_WORDS; ++k) sum += full[i].cpu(c)[f.offset + 2 + j * SH_MARK_CHUNK_WORDS + k];
            ASSERT_EQ(uint64_t(live[c].chunk[i][j]), sum) << "probe " << mods[i]->spec().name << " cpu " << c << " chunk " << j;
          }
      }
    }
  }
  uint64_t moved = 0;
  for (uint32_t i = 0; i < SH_NPROBES; ++i)
    for (uint32_t c = 0; c < n; ++c) moved += live[c].gen[i];
  EXPECT_GT(moved, 300u) << "most runs write their slot and move its gen";
}
