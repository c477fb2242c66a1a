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
// usage: schedhot_bench_probe_cost [--short] [--runs N] [--calls N]
//   --short: 3 runs of 100000 calls (CI: a few seconds); default 7 runs of 2000000.
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
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>

#include "schedhot/abi.h"  // before the skeleton: it names struct sh_hist
#include "probe_cost.skel.h"
#include "probe_cost/gap_proto.h"
#include "probe/exact_reader.h"


namespace {

struct Variant {
  const char* name;
  std::vector<const char*> progs;  ///< programs attached together
  int base;                        ///< index of the empty variant it is compared with (-1: none)
  bool exact = false;              ///< run from the object loaded with sh_exact = 1
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
    {"count + --exact record", {"pc_count_exact"}, 1, true},
    {"cpupri_set + --exact (3 rec)", {"pc_cpupri"}, 1, true},
    {"count + gap state (1 line)", {"pc_count_gap"}, 1},
    {"timed + gap state (1 line)", {"pc_timed_gap_enter", "pc_timed_exit"}, 2},
    {"cpupri_set + gap state (2 lines)", {"pc_cpupri_gap"}, 1},
};
constexpr int kCount = 3, kCpupri = 4, kKtime = 5, kTimed = 6, kUsual = 7, kCountExact = 8, kCpupriExact = 9,
              kCountGap = 10, kTimedGap = 11, kCpupriGap = 12;

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
/// with sh_exact = exact. nullptr after a one-line error on stderr.
probe_cost_bpf* open_load(int ncpus, bool exact) {
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
  }
  skel->rodata->pc_tgid = __u32(getpid());
  skel->rodata->sh_cpupri_nr_prios = 101;
  skel->rodata->sh_exact = exact ? 1 : 0;
  if (int err = probe_cost_bpf__load(skel)) {
    fmt::print(stderr, "schedhot: probe_cost: loading the programs failed ({}): needs root and raw_tp\n{}",
               strerror(-err), g_log.substr(g_log.size() > 3000 ? g_log.size() - 3000 : 0));
    probe_cost_bpf__destroy(skel);
    return nullptr;
  }
  // The gap state's routes: word 0 writes one line (id 1), word 1 two (ids 2 and 3).
  const struct {
    __u32 word;
    __u32 id0, id1, write;
  } routes[] = {{0, 1, 0, 1}, {1, 2, 3, 3}};
  for (const auto& r : routes) {
    __u32 v[4] = {r.id0, r.id1, r.write, 0};
    if (bpf_map_update_elem(bpf_map__fd(skel->maps.pc_gap_routes), &r.word, v, BPF_ANY) != 0) {
      fmt::print(stderr, "schedhot: probe_cost: cannot set the gap routes: {}\n", strerror(errno));
      probe_cost_bpf__destroy(skel);
      return nullptr;
    }
  }
  return skel;
}

/// Writes counted into the gap tables of every CPU (the prototype's histograms saw the calls).
uint64_t sum_gap_writes(struct bpf_map* map, int ncpus) {
  uint64_t n = 0;
  std::vector<pc_gap_slot> v(1);
  for (int c = 0; c < ncpus; ++c) {
    __u32 key = __u32(c);
    if (bpf_map_lookup_elem(bpf_map__fd(map), &key, v.data()) != 0) continue;
    for (const auto& l : v[0].line)
      for (auto x : l.ww) n += x;
  }
  return n;
}

int usage() {
  fmt::print(stderr, "usage: schedhot_bench_probe_cost [--short] [--runs N] [--calls N]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 7;
  long calls = 2'000'000;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--short") {
      runs = 3;
      calls = 100'000;
    } else if (a == "--runs" && i + 1 < argc) {
      runs = std::atoi(argv[++i]);
    } else if (a == "--calls" && i + 1 < argc) {
      calls = std::atol(argv[++i]);
    } else {
      return usage();
    }
  }
  if (runs < 1 || calls < 100) return usage();

  libbpf_set_print(capture);
  const int ncpus = libbpf_num_possible_cpus();
  probe_cost_bpf* skel = open_load(ncpus, false);
  probe_cost_bpf* skelx = skel ? open_load(ncpus, true) : nullptr;
  if (!skel || !skelx) return 1;
  // The reader of --exact records, as record runs it: its own thread reads the buffers, a
  // take() of all due every 50 ms (record's takes are one per sample).
  std::unique_ptr<schedhot::ExactReader> reader;
  try {
    reader = std::make_unique<schedhot::ExactReader>(bpf_map__fd(skelx->maps.sh_exact_events), uint32_t(ncpus));
  } catch (const std::exception& e) {
    fmt::print(stderr, "schedhot: probe_cost: {}\n", e.what());
    return 1;
  }
  // A jthread: any return below stops and joins it before the reader goes.
  std::jthread drain([&](std::stop_token st) {
    while (!st.stop_requested()) {
      usleep(50000);
      (void)reader->take(UINT64_MAX);
    }
    (void)reader->take(UINT64_MAX);
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
  const int nv = int(kVariants.size());
  for (int r = 0; r < runs; ++r) {
    for (size_t m = 0; m < modes.size(); ++m) {
      for (int j = 0; j < nv; ++j) {
        const int v = (j + r) % nv;  // rotated order: no variant always runs first
        std::vector<bpf_link*> links;
        for (const char* p : kVariants[v].progs) {
          struct bpf_program* bp = bpf_object__find_program_by_name((kVariants[v].exact ? skelx : skel)->obj, p);
          bpf_link* l = bp ? bpf_program__attach(bp) : nullptr;
          if (!l) {
            fmt::print(stderr, "schedhot: probe_cost: cannot attach {}: {}\n", p, strerror(errno));
            return 1;
          }
          links.push_back(l);
        }
        const bool counted = v == kCount || v == kCountExact;
        struct bpf_map* slots = (v == kCountExact ? skelx : skel)->maps.pc_count_slots;
        const uint64_t before = counted ? sum_calls(slots, ncpus) : 0;
        res[m][v].push_back(time_loop(modes[m].cpus, calls));
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
  const uint64_t gap_writes = sum_gap_writes(skel->maps.pc_gap_slots, ncpus);
  if (gap_writes == 0) {
    fmt::print(stderr, "schedhot: probe_cost: the gap state prototype counted nothing\n");
    return 1;
  }
  for (size_t m = 0; m < modes.size(); ++m) {
    const auto med = [&](int v) { return stats(res[m][v]).median; };
    fmt::print("{:>7}  gap state (prototype) adds {:+.1f} ns to a counting probe (with its clock read), {:+.1f} ns to a "
               "timed one, {:+.1f} ns to cpupri_set (2 lines); {} gap-histogram writes counted\n",
               modes[m].name, med(kCountGap) - med(kCount), med(kTimedGap) - med(kTimed), med(kCpupriGap) - med(kCpupri),
               gap_writes);
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
  probe_cost_bpf__destroy(skelx);
  probe_cost_bpf__destroy(skel);
  return 0;
}
