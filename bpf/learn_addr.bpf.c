// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Address learning (src/probe/learn_addr.h): never attached. User space runs
 * it once per online CPU with BPF_PROG_TEST_RUN and BPF_F_TEST_RUN_ON_CPU
 * (raw_tp test runs: v5.10+) and reads its .bss after each run. It takes this
 * CPU's struct rq (sh_current_rq(): the runqueues per-CPU symbol is not in
 * kallsyms without CONFIG_KALLSYMS_ALL, so a __ksym fails to load on such
 * kernels), reads rq->rd (CO-RE) and then the u64 words at rd +
 * sh_learn_off[i]: the BTF offsets (set by user space) of every
 * rd->cpupri.pri_to_cpu[i].mask pointer (CONFIG_CPUMASK_OFFSTACK=y) and of
 * rd->cpupri.cpu_to_pri (kernel/sched/cpupri.c cpupri_init()). Reads go
 * through bpf_probe_read_kernel. Also, when user space knows &nohz (kallsyms
 * with KALLSYMS_ALL), the u64 at sh_learn_abs: &nohz.idle_cpus_mask, the
 * pointer to its OFFSTACK bitmap (kernel/sched/fair.c nohz_init(): zalloc).
 * One run at a time, one writer: nothing here is shared hot state.
 */
#include "common.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define SH_LEARN_MAX 128

const volatile __u32 sh_learn_nwords = 0;
const volatile __u32 sh_learn_off[SH_LEARN_MAX] = {};

__u32 sh_learn_cpu = 0;             /* the CPU it ran on */
__u64 sh_learn_rd = 0;              /* this_rq()->rd */
__u64 sh_learn_word[SH_LEARN_MAX] = {};
__u32 sh_learn_ok = 0;              /* words read without error */
const volatile __u64 sh_learn_abs = 0;  /* an absolute kernel address to read, 0 none */
__u64 sh_learn_abs_word = 0;
__u32 sh_learn_abs_ok = 0;

SEC("raw_tp")
int learn_addr(void *ctx)
{
	struct rq *rq = sh_current_rq();
	__u64 rd = rq ? (__u64)BPF_CORE_READ(rq, rd) : 0;
	__u32 ok = 0;

	sh_learn_cpu = bpf_get_smp_processor_id();
	sh_learn_rd = rd;
	for (__u32 i = 0; i < SH_LEARN_MAX; i++) {
		if (i >= sh_learn_nwords || !rd)
			break;
		__u64 w = 0;
		if (bpf_probe_read_kernel(&w, sizeof(w), (const void *)(rd + sh_learn_off[i])) == 0)
			ok++;
		sh_learn_word[i] = w;
	}
	sh_learn_ok = ok;
	if (sh_learn_abs) {
		__u64 w = 0;
		sh_learn_abs_ok = bpf_probe_read_kernel(&w, sizeof(w), (const void *)sh_learn_abs) == 0;
		sh_learn_abs_word = w;
	}
	return 0;
}
