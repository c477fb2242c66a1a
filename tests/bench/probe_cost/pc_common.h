/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Shared by the probe_cost BPF sources (handlers.bpf.c, pc_nohz.bpf.c, pc_bcast.bpf.c),
 * linked into one object: the benchmark's tgid (a weak .rodata variable, one after the
 * link, set before load) and the filter every program starts with. */
#ifndef SCHEDHOT_BENCH_PC_COMMON_H
#define SCHEDHOT_BENCH_PC_COMMON_H

const volatile __u32 pc_tgid __weak = 0;

/* The tgid filter of every program. */
#define PC_FILTER()                                                    \
	do {                                                           \
		if ((bpf_get_current_pid_tgid() >> 32) != pc_tgid)     \
			return 0;                                      \
	} while (0)

#endif
