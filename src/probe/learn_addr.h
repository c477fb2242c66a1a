// Address learning: the real addresses of struct cpupri's root_domain and separate
// allocations (kernel/sched/cpupri.c cpupri_init(): pri_to_cpu[i].mask bitmaps with
// CONFIG_CPUMASK_OFFSTACK=y, cpu_to_pri[]), read from the running kernel by a BPF program
// (bpf/learn_addr.bpf.c) that is never attached: it runs once per online CPU through
// BPF_PROG_TEST_RUN (BPF_F_TEST_RUN_ON_CPU, raw_tp: v5.10+) and reads this_rq()->rd and
// the pointers at rd + BTF offsets. With the addresses, two kmalloc'd objects in one slab
// line are modeled as one line (separate_groups(), probe/layout.h).
#pragma once
#include <string>
#include <vector>

#include "probe/layout.h"

namespace schedhot {

/// Fills layout.learned and adds one note saying what was learned and from where (or, on
/// failure, why not and which lines then stay on an assumption). layout.cpupri must be
/// set (else only the note). cpus: the online CPUs to run on (one run each); nr_cpu_ids:
/// highest possible CPU + 1 (cpumask_size() = BITS_TO_LONGS(nr_cpu_ids) * 8 with
/// OFFSTACK; cpu_to_pri[] = nr_cpu_ids ints). Several root domains (cpusets): the one of
/// the lowest CPU is modeled, the others are counted and said in the note. Needs
/// CAP_BPF + CAP_PERFMON (root); never throws: a failure is a note.
void learn_addresses(CoherenceLayout& layout, const std::vector<int>& cpus, int nr_cpu_ids);


}  // namespace schedhot
