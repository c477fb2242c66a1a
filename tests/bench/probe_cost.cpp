// Kernel-side cost of schedhot's probe handlers on this machine: the handlers of
// tests/bench/probe_cost/handlers.bpf.c (schedhot's own slot updates from
// bpf/common.bpf.h and bpf/cpupri.bpf.c, and funclatency's usual global histogram) are
// attached as raw_tp programs on raw_syscalls:sys_enter/sys_exit, and a tight loop of
// getppid() fires them. Each variant is timed with no program, the empty program (the tgid
// filter alone), and each handler; with one thread and with one thread per online CPU
// (pinned). Runs are interleaved (every variant once per run, the order rotated) and each
// figure is the median over the runs with its min-max, in thread CPU time per call (the
// BPF program runs in the syscall, on the thread's clock; time stolen by other processes
// is not counted). Needs root. Not a test of speed: nothing is asserted about the
// figures; it fails (exit 1) only when it cannot load or attach the programs or a
// handler did not see the calls.
//
// --exact: the same object is loaded a second time with sh_exact = 1 (as `record --exact`
// loads it) and the variants marked "+ --exact" run from it, with schedhot's own
// ExactReader (src/probe/exact_reader.h) draining the per-CPU perf buffers on a reader
// thread as `record` does; the records it received and lost are printed.
//
// Gap state (issue 29): the object is loaded a third time with sh_gaps = 1 (as
// `record --gap-state` loads it; without the option it is 0, as the first object here), its routes are
// the ones schedhot writes (gap_routes() of LinePlan on assumed_layout("6.12.0", 64)),
// and the real handlers of nohz_enter, ilb_kick, bcast_lock and cpupri_set (the
// sched_switch proxy: untimed, the gap state reads the clock) and of nohz_exit and
// cpupri_set (timed, fentry + fexit: the clock is the entry's) run from both objects.
// "gap on - off" is what the gap state adds to each, with the min-max of the
// per-run differences (on and off run in the same run, interleaved). The gap state
// samples (abi.h "Sampling"): by default each CPU's period is the one schedhot sets at
// this loop's event rate (src/probe/attacher.h gap_period() at kGapSamplesPerS, from the
// rate of a program-free loop, printed); --gap-period 1 notes every event (the exact
// gaps, the cost of every note).
//
// --prog-time: also the programs' own run time per event, from the kernel's BPF run-time
// statistics (BPF_ENABLE_STATS, on for the whole system while the benchmark runs: every
// program run then reads the clock twice more, so the thread times above grow by that):
// bpf_prog_info run_time_ns / run_cnt of the variant's programs around each timed loop.
// Without the syscall around it, this resolves differences of a few ns that the thread
// time's noise hides on a shared machine. Other processes' syscalls run the programs too
// (their filter only); the share of such runs is printed.
//
// usage: schedhot_bench_probe_cost [--short] [--runs N] [--calls N] [--prog-time] [--gap-period N]
//   --short: 3 runs of 50000 calls (CI: a few seconds); default 7 runs of 2000000.
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <barrier>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstddef>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>

#include "schedhot/abi.h"  // before the skeleton: it names struct sh_hist
#include "probe_cost.skel.h"
#include "model/lines.h"
#include "probe/attacher.h"
#include "probe/catch_reader.h"
#include "probe/exact_reader.h"
#include "probe/steal_clock.h"
#include "sample/sample.h"


namespace {

/// The object a variant runs from: sh_exact / sh_gaps = 1, or --catch armed with a rule
/// on pc_timed's probe id that never fires (a 1 s threshold) or fires at every event (1 ns,
/// no rate limit: the stack walk, the interrupt rings and the perf output each time).
/// kCatchStealIdleObj: the not-firing rule with the steal clock read at each entry and exit
/// (sh_catch_steal = 1, where this host keeps one: probe/steal_clock.h).
/// kNoMarksObj: the change marks off (sh_marks = 0; every other object has them, as schedhot
/// loads its probes: abi.h sh_cpu_marks).
enum Obj { kPlain, kExactObj, kGapsObj, kCatchIdleObj, kCatchFireObj, kCatchStealIdleObj, kNoMarksObj };

struct Variant {
  const char* name;
  std::vector<const char*> progs;  ///< programs attached together
  int base;                        ///< index of the empty variant it is compared with (-1: none)
  Obj obj = kPlain;
};

// 1 and 2: the empty baselines for one program (sys_enter) and for an entry/exit pair.
const std::vector<Variant> kVariants = {
    {"no program", {}, -1},
    {"empty (tgid filter)", {"pc_empty"}, -1},
    {"empty enter+exit", {"pc_empty", "pc_empty_exit"}, -1},
    {"count (sh_func.calls++)", {"pc_count"}, 1},
    {"cpupri_set transitions", {"pc_cpupri"}, 1},
    {"2x bpf_ktime_get_ns only", {"pc_ktime_enter", "pc_ktime_exit"}, 2},
    {"timed + sh_hist (per-CPU)", {"pc_timed_enter", "pc_timed_exit"}, 2},
    {"usual: hash ts + global hist", {"pc_usual_enter", "pc_usual_exit"}, 2},
    {"count + --exact record", {"pc_count_exact"}, 1, kExactObj},
    {"cpupri_set + --exact (3 rec)", {"pc_cpupri"}, 1, kExactObj},
    {"nohz_enter (first stop)", {"pc_nohz_enter"}, 1},
    {"nohz_enter + gap state", {"pc_nohz_enter"}, 1, kGapsObj},
    {"ilb_kick received", {"pc_ilb_recv"}, 1},
    {"ilb_kick received + gap state", {"pc_ilb_recv"}, 1, kGapsObj},
    {"bcast_lock site", {"pc_bcast_site"}, 1},
    {"bcast_lock site + gap state", {"pc_bcast_site"}, 1, kGapsObj},
    {"cpupri_set + gap state", {"pc_cpupri"}, 1, kGapsObj},
    {"nohz_exit timed", {"pc_nohz_exit_enter", "pc_nohz_exit_exit"}, 2},
    {"nohz_exit timed + gap state", {"pc_nohz_exit_enter", "pc_nohz_exit_exit"}, 2, kGapsObj},
    {"cpupri_set timed", {"pc_cpupri_timed_enter", "pc_cpupri_timed_exit"}, 2},
    {"cpupri_set timed + gap state", {"pc_cpupri_timed_enter", "pc_cpupri_timed_exit"}, 2, kGapsObj},
    {"timed + --catch, not firing", {"pc_timed_enter", "pc_timed_exit"}, 2, kCatchIdleObj},
    {"timed + --catch, every event", {"pc_timed_enter", "pc_timed_exit"}, 2, kCatchFireObj},
    {"timed + --catch + steal, idle", {"pc_timed_enter", "pc_timed_exit"}, 2, kCatchStealIdleObj},
    {"nohz_enter, no marks", {"pc_nohz_enter"}, 1, kNoMarksObj},
    {"nohz_exit timed, no marks", {"pc_nohz_exit_enter", "pc_nohz_exit_exit"}, 2, kNoMarksObj},
    {"cpupri_set timed, no marks", {"pc_cpupri_timed_enter", "pc_cpupri_timed_exit"}, 2, kNoMarksObj},
};
constexpr int kCount = 3, kCpupri = 4, kKtime = 5, kTimed = 6, kUsual = 7, kCountExact = 8, kCpupriExact = 9;
constexpr int kCatchIdle = 21, kCatchFire = 22, kCatchStealIdle = 23;

/// The gap state's pairs: the same handler from the plain object and from the sh_gaps = 1 one.
struct GapPair {
  const char* name;
  int off, on;
  const char* clock;  ///< "untimed": the gap state reads the clock; "timed": the entry's
  /// The (probe, slot word) events one call notes: their routes' targets are printed.
  std::vector<std::pair<uint32_t, uint32_t>> events;
};
#define PC_W(T, m) uint32_t(offsetof(T, m) / 8)
const std::vector<GapPair> kGapPairs = {
    {"nohz_enter", 10, 11, "untimed",
     {{SH_P_NOHZ_ENTER, PC_W(sh_nohz_enter_slot, calls)}, {SH_P_NOHZ_ENTER, PC_W(sh_nohz_enter_slot, first)}}},
    {"ilb_kick", 12, 13, "untimed", {{SH_P_ILB_KICK, PC_W(sh_ilb_slot, received)}}},
    {"bcast_lock", 14, 15, "untimed", {{SH_P_BCAST_LOCK, PC_W(sh_bcast_lock_slot, calls)}}},
    {"cpupri_set proxy", kCpupri, 16, "untimed",
     {{SH_P_CPUPRI_SET, PC_W(sh_cpupri_set_slot, f.calls)},
      {SH_P_CPUPRI_SET, PC_W(sh_cpupri_set_slot, vec_set) + 50},
      {SH_P_CPUPRI_SET, PC_W(sh_cpupri_set_slot, vec_clear)}}},
    {"nohz_exit", 17, 18, "timed", {{SH_P_NOHZ_EXIT, PC_W(sh_nohz_exit_slot, worked)}}},
    {"cpupri_set", 19, 20, "timed",
     {{SH_P_CPUPRI_SET, PC_W(sh_cpupri_set_slot, f.calls)},
      {SH_P_CPUPRI_SET, PC_W(sh_cpupri_set_slot, vec_set) + 50},
      {SH_P_CPUPRI_SET, PC_W(sh_cpupri_set_slot, vec_clear)}}},
};
#undef PC_W

/// The change marks' pairs: the same handler from the object without them and with them.
struct MarkPair {
  const char* name;
  int off, on;
};
const std::vector<MarkPair> kMarkPairs = {
    {"nohz_enter (gen)", 24, 10}, {"nohz_exit timed (gen, chunk)", 25, 17}, {"cpupri_set timed (gen, chunk)", 26, 19}};

std::string g_log;
int capture(enum libbpf_print_level, const char* fmt, va_list ap) {
  char buf[2048];
  vsnprintf(buf, sizeof buf, fmt, ap);
  if (g_log.size() < (1u << 20)) g_log += buf;
  return 0;
}

double thread_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e9 + double(ts.tv_nsec);
}

/// ns of thread CPU time per getppid() for calls calls on each of the CPUs cpus (one
/// pinned thread each), averaged over the threads.
double time_loop(const std::vector<int>& cpus, long calls) {
  std::vector<double> per(cpus.size());
  std::barrier sync(static_cast<std::ptrdiff_t>(cpus.size()));
  std::vector<std::thread> ts;
  for (size_t i = 0; i < cpus.size(); ++i)
    ts.emplace_back([&, i] {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpus[i], &set);
      pthread_setaffinity_np(pthread_self(), sizeof set, &set);
      for (long k = 0; k < calls / 20; ++k) syscall(SYS_getppid);  // warm up
      sync.arrive_and_wait();
      const double t0 = thread_ns();
      for (long k = 0; k < calls; ++k) syscall(SYS_getppid);
      per[i] = (thread_ns() - t0) / double(calls);
    });
  for (auto& t : ts) t.join();
  double sum = 0;
  for (double v : per) sum += v;
  return sum / double(per.size());
}

uint64_t sum_calls(struct bpf_map* map, int ncpus) {
  uint64_t n = 0;
  for (int c = 0; c < ncpus; ++c) {
    __u32 key = __u32(c);
    sh_func v{};
    if (bpf_map_lookup_elem(bpf_map__fd(map), &key, &v) == 0) n += v.calls;
  }
  return n;
}

struct Stats {
  double median, min, max;
};
Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.front(), v.back()};
}

/// Opens and loads the benchmark object (only its pc_* programs; slot maps sized to ncpus),
/// with sh_exact = 1 (kExactObj) or sh_gaps = 1 (kGapsObj); the gap object gets routes.
/// nullptr after a one-line error on stderr.
probe_cost_bpf* open_load(int ncpus, Obj obj, const std::vector<std::pair<uint32_t, sh_gap_route>>& routes) {
  probe_cost_bpf* skel = probe_cost_bpf__open();
  if (!skel) {
    fmt::print(stderr, "schedhot: probe_cost: cannot open the BPF object\n");
    return nullptr;
  }
  struct bpf_program* prog;
  bpf_object__for_each_program(prog, skel->obj) {
    bpf_program__set_autoload(prog, std::string(bpf_program__name(prog)).rfind("pc_", 0) == 0);
  }
  struct bpf_map* map;
  bpf_object__for_each_map(map, skel->obj) {
    std::string n = bpf_map__name(map);
    if (n.size() > 6 && n.compare(n.size() - 6, 6, "_slots") == 0) bpf_map__set_max_entries(map, __u32(ncpus));
    if (n == "sh_slot_marks") bpf_map__set_max_entries(map, __u32(ncpus));
  }
  skel->rodata->pc_tgid = __u32(getpid());
  skel->rodata->sh_marks = obj == kNoMarksObj ? 0 : 1;  // the change marks, as schedhot loads every object
  skel->rodata->sh_cpupri_nr_prios = 101;
  skel->rodata->sh_exact = obj == kExactObj ? 1 : 0;
  skel->rodata->sh_gaps = obj == kGapsObj ? 1 : 0;
  skel->rodata->sh_catch_armed = obj == kCatchIdleObj || obj == kCatchFireObj || obj == kCatchStealIdleObj ? 1 : 0;
  skel->rodata->sh_catch_irq = obj == kCatchFireObj ? 1 : 0;
  const schedhot::StealClock sc = schedhot::find_steal_clock();
  skel->rodata->sh_catch_steal = obj == kCatchStealIdleObj && sc.reason.empty() ? ~0u : 0;  // every probe has a rule
  skel->rodata->sh_steal_rq_delta = sc.rq_delta;
  if (int err = probe_cost_bpf__load(skel)) {
    fmt::print(stderr, "schedhot: probe_cost: loading the programs failed ({}): needs root and raw_tp\n{}",
               strerror(-err), g_log.substr(g_log.size() > 3000 ? g_log.size() - 3000 : 0));
    probe_cost_bpf__destroy(skel);
    return nullptr;
  }
  if (obj == kCatchIdleObj || obj == kCatchFireObj || obj == kCatchStealIdleObj) {
    sh_catch_rule rule{};
    rule.threshold_ns = obj == kCatchFireObj ? 1 : 1'000'000'000;
    const __u32 key = SH_P_NOHZ_EXIT;  // pc_timed_exit's probe id
    if (bpf_map_update_elem(bpf_map__fd(skel->maps.sh_catch_rules), &key, &rule, BPF_ANY) != 0) {
      fmt::print(stderr, "schedhot: probe_cost: cannot set the catch rule: {}\n", strerror(errno));
      probe_cost_bpf__destroy(skel);
      return nullptr;
    }
  }
  if (obj == kGapsObj)
    for (const auto& [key, r] : routes)
      if (bpf_map_update_elem(bpf_map__fd(skel->maps.sh_gap_routes), &key, &r, BPF_ANY) != 0) {
        fmt::print(stderr, "schedhot: probe_cost: cannot set the gap routes: {}\n", strerror(errno));
        probe_cost_bpf__destroy(skel);
        return nullptr;
      }
  return skel;
}

/// The gap state's counts over every CPU: histogram entries and events a full table dropped.
struct GapCounts {
  uint64_t noted = 0, full = 0;
  int lines = 0;  ///< most table entries in use on one CPU
};
GapCounts gap_counts(struct bpf_map* map, int ncpus) {
  GapCounts n;
  std::vector<sh_gap_slot> v(1);
  for (int c = 0; c < ncpus; ++c) {
    __u32 key = __u32(c);
    if (bpf_map_lookup_elem(bpf_map__fd(map), &key, v.data()) != 0) continue;
    n.full += v[0].full;
    int used = 0;
    for (const auto& l : v[0].line) {
      used += l.id != 0;
      for (uint32_t b = 0; b < SH_GAP_BUCKETS; ++b) n.noted += uint64_t(l.ww[b]) + l.wa[b] + l.ra[b];
    }
    n.lines = std::max(n.lines, used);
  }
  return n;
}

int usage() {
  fmt::print(stderr, "usage: schedhot_bench_probe_cost [--short] [--runs N] [--calls N] [--prog-time] [--gap-period N]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 7;
  long calls = 2'000'000;
  bool prog_time = false;
  long gap_period = 0;  // 0: schedhot's at this loop's rate
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--short") {
      runs = 3;
      calls = 50'000;
    } else if (a == "--prog-time") {
      prog_time = true;
    } else if (a == "--runs" && i + 1 < argc) {
      runs = std::atoi(argv[++i]);
    } else if (a == "--calls" && i + 1 < argc) {
      calls = std::atol(argv[++i]);
    } else if (a == "--gap-period" && i + 1 < argc) {
      gap_period = std::atol(argv[++i]);
      if (gap_period < 1 || gap_period > (1 << 20)) return usage();
    } else {
      return usage();
    }
  }
  if (runs < 1 || calls < 100) return usage();

  libbpf_set_print(capture);
  int stats_fd = -1;
  if (prog_time && (stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME)) < 0) {
    fmt::print(stderr, "schedhot: probe_cost: cannot enable BPF run-time statistics: {}\n", strerror(errno));
    return 1;
  }
  const int ncpus = libbpf_num_possible_cpus();
  // The routes schedhot writes at start (src/cli/commands.cpp live_meta) for a 6.12 kernel
  // with 64-byte lines, every probe in the catalog.
  const schedhot::Meta meta =
      schedhot::make_meta(schedhot::HostInfo{}, uint32_t(ncpus), std::vector<schedhot::ProbeStatus>(SH_NPROBES));
  const schedhot::GapRoutes routes = schedhot::gap_routes(schedhot::LinePlan(meta, schedhot::assumed_layout("6.12.0", 64)));
  std::map<uint32_t, sh_gap_route> route_of(routes.routes.begin(), routes.routes.end());
  for (const GapPair& p : kGapPairs)
    for (const auto& [probe, word] : p.events)
      if (!route_of.count(probe * SH_GAP_ROUTE_WORDS + word)) {
        fmt::print(stderr, "schedhot: probe_cost: gap_routes() has no route for {} (probe {} word {})\n", p.name,
                   probe, word);
        return 1;
      }
  probe_cost_bpf* skel = open_load(ncpus, kPlain, routes.routes);
  probe_cost_bpf* skelx = skel ? open_load(ncpus, kExactObj, routes.routes) : nullptr;
  probe_cost_bpf* skelg = skelx ? open_load(ncpus, kGapsObj, routes.routes) : nullptr;
  probe_cost_bpf* skelci = skelg ? open_load(ncpus, kCatchIdleObj, routes.routes) : nullptr;
  probe_cost_bpf* skelcf = skelci ? open_load(ncpus, kCatchFireObj, routes.routes) : nullptr;
  probe_cost_bpf* skelcs = skelcf ? open_load(ncpus, kCatchStealIdleObj, routes.routes) : nullptr;
  probe_cost_bpf* skelnm = skelcs ? open_load(ncpus, kNoMarksObj, routes.routes) : nullptr;
  if (!skel || !skelx || !skelg || !skelci || !skelcf || !skelcs || !skelnm) return 1;
  {
    // The gap state's sampling period on every CPU, as ProbeSet::take_gaps sets it.
    const double ns_per_call = time_loop({0}, 200'000);
    const double rate = ns_per_call > 0 ? 1e9 / ns_per_call : 0;
    const uint32_t period = gap_period ? uint32_t(gap_period) : schedhot::gap_period(rate, schedhot::kGapSamplesPerS);
    fmt::print("gap state: sampling period {} ({}; a program-free loop runs {:.0f} calls/s per thread)\n", period,
               gap_period ? "--gap-period" : fmt::format("schedhot's at that rate, {} samples/s", schedhot::kGapSamplesPerS),
               rate);
    for (int c = 0; c < ncpus; ++c) {
      sh_gap_slot g{};
      g.period = period;
      const __u32 key = __u32(c);
      if (bpf_map_update_elem(bpf_map__fd(skelg->maps.sh_gap_slots), &key, &g, BPF_ANY) != 0) {
        fmt::print(stderr, "schedhot: probe_cost: cannot set the gap state's period: {}\n", strerror(errno));
        return 1;
      }
    }
  }
  probe_cost_bpf* const objs[] = {skel, skelx, skelg, skelci, skelcf, skelcs, skelnm};
  // The reader of --exact records, as record runs it: its own thread reads the buffers, a
  // take() of all due every 50 ms (record's takes are one per sample).
  std::unique_ptr<schedhot::ExactReader> reader;
  try {
    reader = std::make_unique<schedhot::ExactReader>(bpf_map__fd(skelx->maps.sh_exact_events), uint32_t(ncpus));
  } catch (const std::exception& e) {
    fmt::print(stderr, "schedhot: probe_cost: {}\n", e.what());
    return 1;
  }
  // The caught events of the firing variant, read as record reads them (symbolized).
  std::unique_ptr<schedhot::CatchReader> catcher;
  const std::optional<schedhot::SymbolTable> kallsyms = schedhot::SymbolTable::load("/proc/kallsyms", nullptr);
  try {
    catcher = std::make_unique<schedhot::CatchReader>(bpf_map__fd(skelcf->maps.sh_catch_events), uint32_t(ncpus),
                                                      kallsyms ? &*kallsyms : nullptr);
  } catch (const std::exception& e) {
    fmt::print(stderr, "schedhot: probe_cost: {}\n", e.what());
    return 1;
  }
  uint64_t caught_received = 0, caught_lost = 0;
  auto take_caught = [&] {
    const schedhot::CatchBatch b = catcher->take(UINT64_MAX);
    caught_received += b.events.size();
    caught_lost += b.lost;
  };
  // A jthread: any return below stops and joins it before the readers go.
  std::jthread drain([&](std::stop_token st) {
    while (!st.stop_requested()) {
      usleep(50000);
      (void)reader->take(UINT64_MAX);
      take_caught();
    }
    (void)reader->take(UINT64_MAX);
    take_caught();
  });

  std::vector<int> online;
  {
    cpu_set_t set;
    CPU_ZERO(&set);
    sched_getaffinity(0, sizeof set, &set);
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) online.push_back(c);
  }
  struct Mode {
    std::string name;
    std::vector<int> cpus;
  };
  std::vector<Mode> modes = {{"1", {online.front()}}};
  if (online.size() > 1) modes.push_back({fmt::format("{}", online.size()), online});

  // results[mode][variant] = ns per call of each run
  std::vector<std::vector<std::vector<double>>> res(modes.size(),
                                                     std::vector<std::vector<double>>(kVariants.size()));
  auto prog = res;  // --prog-time: the programs' run time per event, ns
  uint64_t prog_runs = 0, prog_ours = 0;  // runs of the programs, and those of our calls
  const int nv = int(kVariants.size());
  for (int r = 0; r < runs; ++r) {
    for (size_t m = 0; m < modes.size(); ++m) {
      for (int j = 0; j < nv; ++j) {
        const int v = (j + r) % nv;  // rotated order: no variant always runs first
        std::vector<bpf_link*> links;
        std::vector<int> fds;
        for (const char* p : kVariants[v].progs) {
          struct bpf_program* bp = bpf_object__find_program_by_name(objs[kVariants[v].obj]->obj, p);
          bpf_link* l = bp ? bpf_program__attach(bp) : nullptr;
          if (!l) {
            fmt::print(stderr, "schedhot: probe_cost: cannot attach {}: {}\n", p, strerror(errno));
            return 1;
          }
          links.push_back(l);
          fds.push_back(bpf_program__fd(bp));
        }
        const bool counted = v == kCount || v == kCountExact;
        struct bpf_map* slots = (v == kCountExact ? skelx : skel)->maps.pc_count_slots;
        const uint64_t before = counted ? sum_calls(slots, ncpus) : 0;
        std::vector<bpf_prog_info> pbefore(links.size());
        const auto info = [&](size_t i) {
          bpf_prog_info pi{};
          __u32 len = sizeof pi;
          bpf_obj_get_info_by_fd(fds[i], &pi, &len);
          return pi;
        };
        if (prog_time)
          for (size_t i = 0; i < links.size(); ++i) pbefore[i] = info(i);
        res[m][v].push_back(time_loop(modes[m].cpus, calls));
        if (prog_time) {
          uint64_t ns = 0, cnt = 0;
          for (size_t i = 0; i < links.size(); ++i) {
            const bpf_prog_info after = info(i);
            ns += after.run_time_ns - pbefore[i].run_time_ns;
            if (i == 0) cnt = after.run_cnt - pbefore[i].run_cnt;
          }
          prog[m][v].push_back(cnt ? double(ns) / double(cnt) : 0.0);
          if (cnt) {
            prog_runs += cnt;
            prog_ours += uint64_t(calls + calls / 20) * modes[m].cpus.size();
          }
        }
        if (counted) {
          const uint64_t seen = sum_calls(slots, ncpus) - before;
          if (seen < uint64_t(calls) * modes[m].cpus.size()) {
            fmt::print(stderr, "schedhot: probe_cost: the count program saw {} of {} calls\n", seen,
                       uint64_t(calls) * modes[m].cpus.size());
            return 1;
          }
        }
        for (bpf_link* l : links) bpf_link__destroy(l);
      }
    }
  }
  const uint64_t timed_events = sum_calls(skel->maps.pc_timed_slots, ncpus);
  uint64_t usual_events = 0;
  for (auto b : skel->bss->pc_global_hist.bucket) usual_events += b;

  fmt::print("schedhot probe cost: raw_tp on raw_syscalls:sys_enter/sys_exit, getppid() loop,\n"
             "{} calls per thread x {} interleaved runs; thread CPU time, ns per call\n",
             calls, runs);
  fmt::print("{:>7}  {:<30} {:>9} {:>17} {:>11} {:>9}\n", "threads", "variant", "median", "min-max", "above empty",
             "x none");
  for (size_t m = 0; m < modes.size(); ++m) {
    const double none = stats(res[m][0]).median;
    for (int v = 0; v < nv; ++v) {
      const Stats s = stats(res[m][v]);
      std::string above = kVariants[v].base < 0 ? "" : fmt::format("{:+.1f}", s.median - stats(res[m][kVariants[v].base]).median);
      fmt::print("{:>7}  {:<30} {:>9.1f} {:>17} {:>11} {:>9.2f}\n", modes[m].name, kVariants[v].name, s.median,
                 fmt::format("{:.1f}-{:.1f}", s.min, s.max), above, s.median / none);
    }
    const double timed = stats(res[m][kTimed]).median - stats(res[m][2]).median;
    const double usual = stats(res[m][kUsual]).median - stats(res[m][2]).median;
    const double stamps = stats(res[m][kKtime]).median - stats(res[m][2]).median;
    fmt::print("{:>7}  above empty: usual/timed {:.2f}; of timed's {:.1f} ns, {:.1f} are the two bpf_ktime_get_ns()\n",
               modes[m].name, timed > 0 ? usual / timed : 0.0, timed, stamps);
  }
  fmt::print("events seen: timed {} (per-CPU histograms), usual {} (global histogram)\n", timed_events,
             usual_events);
  const GapCounts gc = gap_counts(skelg->maps.sh_gap_slots, ncpus);
  if (gc.noted == 0) {
    fmt::print(stderr, "schedhot: probe_cost: the gap state counted nothing\n");
    return 1;
  }
  fmt::print("gap state (bpf/gaps.bpf.c, sh_gaps = 1) on gap_routes() of a 6.12 layout, 64-byte lines; targets per "
             "route:");
  for (size_t i = 0; i < kGapPairs.size(); ++i) {
    const GapPair& p = kGapPairs[i];
    fmt::print(" {} {}", p.name, p.clock);
    const char* sep = " ";
    for (const auto& [probe, word] : p.events) {
      fmt::print("{}{}", sep, route_of.at(probe * SH_GAP_ROUTE_WORDS + word).n);
      sep = "+";
    }
    fmt::print("{}", i + 1 == kGapPairs.size() ? "\n" : ";");
  }
  fmt::print("  {} gap-histogram counts, at most {} lines in one CPU's table, {} dropped (table full)\n", gc.noted,
             gc.lines, gc.full);
  // A pair's columns: off, on (medians), on - off, and the min-max of the per-run differences.
  auto on_off = [&](const auto& at, size_t m, int off_v, int on_v) {
    std::vector<double> d;
    for (int r = 0; r < runs; ++r) d.push_back(at[m][on_v][r] - at[m][off_v][r]);
    const Stats sd = stats(d);
    const double off = stats(at[m][off_v]).median, on = stats(at[m][on_v]).median;
    return fmt::format("{:>9.1f} {:>9.1f} {:>13} {:>15}", off, on, fmt::format("{:+.1f}", on - off),
                       fmt::format("{:+.1f}..{:+.1f}", sd.min, sd.max));
  };
  fmt::print("{:>7}  {:<20} {:<8} {:>9} {:>9} {:>13} {:>15}\n", "threads", "gap state of", "clock", "off", "on",
             "on - off", "min-max of runs");
  for (size_t m = 0; m < modes.size(); ++m)
    for (const GapPair& p : kGapPairs)
      fmt::print("{:>7}  {:<20} {:<8} {}\n", modes[m].name, p.name, p.clock, on_off(res, m, p.off, p.on));
  if (prog_time) {
    fmt::print("--prog-time: the programs' own run time per event (BPF run-time statistics), ns; {:.2f} % of the "
               "runs were other processes' syscalls (filter only)\n",
               prog_runs ? 100.0 * double(prog_runs - std::min(prog_runs, prog_ours)) / double(prog_runs) : 0.0);
    fmt::print("{:>7}  {:<30} {:>9} {:>17}\n", "threads", "variant", "median", "min-max");
    for (size_t m = 0; m < modes.size(); ++m)
      for (int v = 1; v < nv; ++v) {
        const Stats s = stats(prog[m][v]);
        fmt::print("{:>7}  {:<30} {:>9.1f} {:>17}\n", modes[m].name, kVariants[v].name, s.median,
                   fmt::format("{:.1f}-{:.1f}", s.min, s.max));
      }
    fmt::print("{:>7}  {:<20} {:<8} {:>9} {:>9} {:>13} {:>15}\n", "threads", "gap state of", "clock", "off", "on",
               "on - off", "min-max of runs");
    for (size_t m = 0; m < modes.size(); ++m)
      for (const GapPair& p : kGapPairs)
        fmt::print("{:>7}  {:<20} {:<8} {}\n", modes[m].name, p.name, p.clock, on_off(prog, m, p.off, p.on));
  }
  drain.request_stop();
  drain.join();
  for (size_t m = 0; m < modes.size(); ++m) {
    const double cnt = stats(res[m][kCountExact]).median - stats(res[m][kCount]).median;
    const double cp = stats(res[m][kCpupriExact]).median - stats(res[m][kCpupri]).median;
    fmt::print("{:>7}  --exact adds {:+.1f} ns to a counting probe (1 record), {:+.1f} ns to cpupri_set (3 records)\n",
               modes[m].name, cnt, cp);
  }
  fmt::print("--exact records: {} received, {} lost (perf buffers of {} pages per CPU, read by ExactReader's thread)\n",
             reader->received(), reader->lost_total(), reader->pages());
  for (size_t m = 0; m < modes.size(); ++m) {
    const double timed = stats(res[m][kTimed]).median;
    fmt::print("{:>7}  --catch adds {:+.1f} ns to a timed probe armed and not firing (goal +5), {:+.1f} ns per caught "
               "event (stack walk, interrupt rings, perf output)\n",
               modes[m].name, stats(res[m][kCatchIdle]).median - timed, stats(res[m][kCatchFire]).median - timed);
  }
  const std::string steal_why = schedhot::steal_clock_reason();
  for (size_t m = 0; m < modes.size(); ++m)
    fmt::print("{:>7}  --catch's steal clock adds {:+.1f} ns to a timed probe armed and not firing ({:+.1f} ns in all; {})\n",
               modes[m].name, stats(res[m][kCatchStealIdle]).median - stats(res[m][kCatchIdle]).median,
               stats(res[m][kCatchStealIdle]).median - stats(res[m][kTimed]).median,
               steal_why.empty() ? "read at each entry (the end's read is a caught event's): this host keeps a paravirt steal clock"
                                 : "not read here, " + steal_why);
  fmt::print("--catch events: {} received, {} lost (perf buffers of {} pages per CPU, read and symbolized by "
             "CatchReader's thread)\n", caught_received, caught_lost, catcher->pages());
  // The change marks (sh_mark's fetch add of the probe's gen; a histogram add's of its chunk).
  for (int pass = 0; pass < (prog_time ? 2 : 1); ++pass) {
    const auto& at = pass ? prog : res;
    fmt::print("{:>7}  {:<30} {:>9} {:>9} {:>13} {:>15}  ({})\n", "threads", "change marks of", "off", "on", "on - off",
               "min-max of runs", pass ? "--prog-time: the programs' run time" : "thread CPU time per call");
    for (size_t m = 0; m < modes.size(); ++m)
      for (const MarkPair& p : kMarkPairs)
        fmt::print("{:>7}  {:<30} {}\n", modes[m].name, p.name, on_off(at, m, p.off, p.on));
  }
  probe_cost_bpf__destroy(skelnm);
  probe_cost_bpf__destroy(skelcs);
  probe_cost_bpf__destroy(skelcf);
  probe_cost_bpf__destroy(skelci);
  if (stats_fd >= 0) close(stats_fd);
  probe_cost_bpf__destroy(skelg);
  probe_cost_bpf__destroy(skelx);
  probe_cost_bpf__destroy(skel);
  return 0;
}
