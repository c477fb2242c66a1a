// bcast_wait's holder scan (bpf/tick_bcast.bpf.c bcast_holder_scan, abi.h struct
// sh_bcast_holder): what a waiter's contention_begin on tick_broadcast_lock costs with a
// bcast_wait rule, against the number of possible CPUs it reads. The real handler core in
// the kernel (the test_bcast_wait raw_tp wrapper, BPF_PROG_TEST_RUN on CPU 0), the holder
// map sized for N CPUs, one of them inside a site (the scan's worst case reads every
// element: each is looked at). Cache-warm on this 2-CPU machine: a real machine adds a
// cache miss for each element whose CPU wrote it since the last scan. Figures only.
// usage: schedhot_bench_holder_scan [--short]  (root)
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "schedhot.skel.h"
#include "schedhot/abi.h"

namespace {

constexpr uint64_t kLock = 0xffffffff82a00040ull;

/// ns per begin+end pair with the holder map of n CPUs (hold: the scan on), over `runs` pairs.
double pair_ns(uint32_t n, bool hold, int runs) {
  schedhot_bpf* s = schedhot_bpf__open();
  if (!s) throw std::runtime_error("cannot open the BPF object");
  struct bpf_program* p;
  bpf_object__for_each_program(p, s->obj) bpf_program__set_autoload(p, std::string(bpf_program__name(p)) == "test_bcast_wait");
  const int ncpus = libbpf_num_possible_cpus();
  bpf_map__set_max_entries(s->maps.bcast_wait_slots, ncpus);
  bpf_map__set_max_entries(s->maps.sh_bcast_holders, n);
  s->rodata->sh_bcast_hold = hold ? 1 : 0;
  s->rodata->sh_bcast_ncpus = n;
  if (int e = schedhot_bpf__load(s)) {
    schedhot_bpf__destroy(s);
    throw std::runtime_error(fmt::format("load: {} (root needed)", strerror(-e)));
  }
  s->bss->sh_bcast_lock_addr = kLock;
  // The last CPU inside site 0 since t = 1000 (the scan keeps it as the holder).
  sh_bcast_holder h{};
  h.state = (1000ull << SH_HOLD_TS_SHIFT) | 1;
  uint32_t last = n - 1;
  if (n > 1) bpf_map_update_elem(bpf_map__fd(s->maps.sh_bcast_holders), &last, &h, BPF_ANY);
  const int fd = bpf_program__fd(s->progs.test_bcast_wait);
  auto run = [&](uint64_t op, uint64_t ts) {
    uint64_t args[3] = {op, kLock, ts};
    LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = args, .ctx_size_in = sizeof args, .flags = BPF_F_TEST_RUN_ON_CPU, .cpu = 0);
    bpf_prog_test_run_opts(fd, &o);
  };
  for (int i = 0; i < 200; ++i) run(0, 2000 + i), run(1, 2100 + i);  // warm
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < runs; ++i) run(0, 10'000 + 2ull * i), run(1, 10'001 + 2ull * i);
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / runs;
  schedhot_bpf__destroy(s);
  return ns;
}

}  // namespace

int main(int argc, char** argv) {
  const bool short_mode = argc > 1 && std::string(argv[1]) == "--short";
  const int runs = short_mode ? 2000 : 20000;
  try {
    const double base = pair_ns(1, false, runs);
    fmt::print("bcast_wait contention_begin+end through BPF_PROG_TEST_RUN, {} pairs each (syscalls included)\n", runs);
    fmt::print("{:>8}  {:>14}  {:>16}  {:>12}\n", "CPUs", "ns per pair", "scan adds (ns)", "ns per CPU");
    fmt::print("{:>8}  {:>14.0f}  {:>16}  {:>12}\n", "no rule", base, "-", "-");
    for (uint32_t n : {4u, 64u, 480u, 2048u, 8192u}) {
      const double t = pair_ns(n, true, n >= 2048 && short_mode ? runs / 4 : runs);
      fmt::print("{:>8}  {:>14.0f}  {:>16.0f}  {:>12.2f}\n", n, t, t - base, (t - base) / n);
    }
    fmt::print("cache-warm: on a real machine each element a CPU wrote since the last scan adds a miss\n");
  } catch (const std::exception& e) {
    fmt::print(stderr, "schedhot_bench_holder_scan: {}\n", e.what());
    return 1;
  }
  return 0;
}
