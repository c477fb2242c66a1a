// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cpupri probes: cpupri_set and cpupri_find. Mirrors kernel/sched/cpupri.c.
 * Program names: <probe>__<backend>[_<role>] (see nohz.bpf.c).
 */
#include "common.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* CPUPRI_NR_PRIORITIES of the running kernel, from BTF (struct cpupri's
 * pri_to_cpu[] length): 101 since v5.11, 102 before (set by user space). */
const volatile __u32 sh_cpupri_nr_prios = 101;

SH_SLOT_MAP(cpupri_set_slots, struct sh_cpupri_set_slot);
SH_SLOT_MAP(cpupri_find_slots, struct sh_cpupri_find_slot);

/*
 * convert_prio() of kernel/sched/cpupri.c: task-prio domain -> cpupri index.
 * v5.11+: -1 -> -1 (INVALID); 0..98 -> 99-p (RT); 99 -> 0 (NORMAL); 100 -> 100 (HIGHER).
 * before: -1 -> -1; MAX_PRIO(140) -> 0 (IDLE); >= 100 -> 1 (NORMAL); p -> 101-p (RT).
 */
static __always_inline int sh_convert_prio(int prio, __u32 nr_prios)
{
	if (prio == -1)
		return -1;
	if (nr_prios == 101) {
		if (prio >= 0 && prio <= 98)
			return 99 - prio;
		if (prio == 99)
			return 0;
		return 100;
	}
	if (prio == 140)
		return 0;
	if (prio >= 100)
		return 1;
	return 101 - prio;
}

/* Class of a converted priority for the transition matrix. */
static __always_inline __u32 sh_cpupri_class(int cpupri, __u32 nr_prios)
{
	if (cpupri < 0)
		return SH_CP_INVALID;
	if (nr_prios == 101) {
		if (cpupri == 0)
			return SH_CP_NORMAL;
		if (cpupri == 100)
			return SH_CP_HIGHER;
		return SH_CP_RT;
	}
	if (cpupri <= 1) /* IDLE, NORMAL */
		return SH_CP_NORMAL;
	return SH_CP_RT;
}

/* vec[idx]++ for a cpupri vector index, ignoring -1 (invalid). */
/* Returns whether it counted (then an --exact record goes with it). */
static __always_inline bool sh_vec_inc(__u64 *vec, int idx)
{
	__u64 i = (__u32)idx;

	if (i >= SH_CPUPRI_VECS)
		return false;
	barrier_var(i);
	if (i < SH_CPUPRI_VECS) {
		SH_INC(&vec[i]);
		return true;
	}
	return false;
}

/* One cpupri_set() seen: old and new are converted priorities. timed: an
 * entry whose exit will be timed (fentry/kprobe), else a proxy count. */
static __always_inline void cpupri_set_core(void *ctx, __u64 now, int old, int new, __u32 nr_prios, bool timed)
{
	struct sh_cpupri_set_slot *s = SH_THIS_SLOT(cpupri_set_slots);
	__u32 t;

	if (!s)
		return;
	if (!now && sh_exact)
		now = bpf_ktime_get_ns();  /* a proxy: one clock read for its --exact records (the
					    * gap state reads it only for the events it samples) */
	if (timed) {
		sh_func_enter(SH_P_CPUPRI_SET, &s->f, now);
		sh_func_detail(&s->f, ((__u64)(__u16)(old + 1) << 16) | (__u16)(new + 1));
	} else {
		SH_INC(&s->f.calls);
	}
	if (old == new) {
		SH_INC(&s->noop);
		/* one record per call: noop when new == old, calls otherwise (abi.h) */
		sh_access(ctx, SH_P_CPUPRI_SET, SH_WORD(struct sh_cpupri_set_slot, noop), now);
		sh_mark(SH_P_CPUPRI_SET);
		return;
	}
	sh_access(ctx, SH_P_CPUPRI_SET, SH_WORD(struct sh_cpupri_set_slot, f.calls), now);
	t = sh_cpupri_class(old, nr_prios) * SH_CP_NCLASS + sh_cpupri_class(new, nr_prios);
	SH_INC(&s->trans[SH_BOUND(t, SH_CP_NCLASS * SH_CP_NCLASS)]);
	if (sh_vec_inc(s->vec_set, new))
		sh_access(ctx, SH_P_CPUPRI_SET, SH_WORD(struct sh_cpupri_set_slot, vec_set) + (__u16)new, now);
	if (sh_vec_inc(s->vec_clear, old))
		sh_access(ctx, SH_P_CPUPRI_SET, SH_WORD(struct sh_cpupri_set_slot, vec_clear) + (__u16)old, now);
	sh_mark(SH_P_CPUPRI_SET);
}

static __always_inline void cpupri_set_exit(void *ctx, __u64 now)
{
	struct sh_cpupri_set_slot *s = SH_THIS_SLOT(cpupri_set_slots);

	if (s) {
		sh_func_exit(ctx, SH_P_CPUPRI_SET, &s->f, now);
		sh_mark(SH_P_CPUPRI_SET);
	}
}

/* cp->cpu_to_pri[cpu]: stable here, the caller holds rq->lock. */
static __always_inline int read_cpu_to_pri(struct cpupri *cp, int cpu)
{
	int *arr = BPF_CORE_READ(cp, cpu_to_pri);
	int v = -1;

	if (arr && cpu >= 0)
		bpf_probe_read_kernel(&v, sizeof(v), arr + cpu);
	return v;
}

static __always_inline void cpupri_set_entry(void *ctx, struct cpupri *cp, int cpu, int newpri)
{
	int old = read_cpu_to_pri(cp, cpu);

	cpupri_set_core(ctx, bpf_ktime_get_ns(), old, sh_convert_prio(newpri, sh_cpupri_nr_prios),
			sh_cpupri_nr_prios, true);
}

SEC("fentry")
int BPF_PROG(cpupri_set__fentry, struct cpupri *cp, int cpu, int newpri)
{
	cpupri_set_entry(ctx, cp, cpu, newpri);
	return 0;
}

SEC("fexit")
int BPF_PROG(cpupri_set__fexit)
{
	cpupri_set_exit(ctx, bpf_ktime_get_ns());
	return 0;
}

SEC("kprobe")
int BPF_KPROBE(cpupri_set__kprobe, struct cpupri *cp, int cpu, int newpri)
{
	cpupri_set_entry(ctx, cp, cpu, newpri);
	return 0;
}

SEC("kretprobe")
int BPF_KRETPROBE(cpupri_set__kretprobe)
{
	cpupri_set_exit(ctx, bpf_ktime_get_ns());
	return 0;
}

/*
 * Proxy: at every context switch, compare this CPU's cpu_to_pri[cpu] in its
 * root domain with the value seen at the previous switch; a change means at
 * least one cpupri_set() ran in between (a lower bound: a change and its
 * undo between two switches are invisible). No duration.
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(cpupri_set__tp_switch, bool preempt, struct task_struct *prev)
{
	struct sh_cpupri_set_slot *s = SH_THIS_SLOT(cpupri_set_slots);
	struct rq *rq = sh_current_rq();
	struct root_domain *rd;
	__u64 last;
	int cur;

	if (!s || !rq)
		return 0;
	rd = BPF_CORE_READ(rq, rd);
	if (!rd)
		return 0;
	cur = read_cpu_to_pri(&rd->cpupri, BPF_CORE_READ(rq, cpu));
	last = s->last_pri;
	s->last_pri = (__u64)(cur + 2);
	if (last == 0 || last == (__u64)(cur + 2))
		return 0;
	cpupri_set_core(ctx, 0, (int)last - 2, cur, sh_cpupri_nr_prios, false);
	return 0;
}

/* ---- cpupri_find: cpupri_find_fitness(cp, p, lowest_mask, fitness_fn) -- */

static __always_inline void cpupri_find_entry(void *ctx, __u64 now)
{
	struct sh_cpupri_find_slot *s = SH_THIS_SLOT(cpupri_find_slots);

	if (!s)
		return;
	sh_func_enter(SH_P_CPUPRI_FIND, &s->f, now);
	sh_access(ctx, SH_P_CPUPRI_FIND, SH_WORD(struct sh_cpupri_find_slot, f.calls), now);
	sh_mark(SH_P_CPUPRI_FIND);
}

static __always_inline void cpupri_find_exit(void *ctx, __u64 now, __u64 ret)
{
	struct sh_cpupri_find_slot *s = SH_THIS_SLOT(cpupri_find_slots);

	if (!s)
		return;
	sh_func_exit(ctx, SH_P_CPUPRI_FIND, &s->f, now);
	if (ret)
		SH_INC(&s->found);
	sh_mark(SH_P_CPUPRI_FIND);
}

SEC("fentry")
int BPF_PROG(cpupri_find__fentry)
{
	cpupri_find_entry(ctx, bpf_ktime_get_ns());
	return 0;
}

/* bpf_get_func_ret: the same program serves cpupri_find_fitness (4 args)
 * and cpupri_find (3 args, kernels before v5.7). */
SEC("fexit")
int BPF_PROG(cpupri_find__fexit)
{
	__u64 ret = 0;

	bpf_get_func_ret(ctx, &ret);
	cpupri_find_exit(ctx, bpf_ktime_get_ns(), (int)ret != 0);
	return 0;
}

SEC("kprobe")
int BPF_KPROBE(cpupri_find__kprobe)
{
	cpupri_find_entry(ctx, bpf_ktime_get_ns());
	return 0;
}

SEC("kretprobe")
int BPF_KRETPROBE(cpupri_find__kretprobe, int ret)
{
	cpupri_find_exit(ctx, bpf_ktime_get_ns(), ret != 0);
	return 0;
}

/* ---- BPF_PROG_TEST_RUN wrappers (tests/bpf) --------------------------- */

/* ctx: op (0 entry, 1 exit), timestamp ns, old converted prio, new RAW
 * (task-domain) prio, nr_prios. The entry converts like the fentry program. */
SEC("raw_tp")
int test_cpupri_set(__u64 *ctx)
{
	__u32 nr = (__u32)ctx[4];

	if (ctx[0] == 0)
		cpupri_set_core(ctx, ctx[1], (int)ctx[2], sh_convert_prio((int)ctx[3], nr), nr, true);
	else
		cpupri_set_exit(ctx, ctx[1]);
	return 0;
}

/* ctx: op (0 entry, 1 exit), timestamp ns, return value */
SEC("raw_tp")
int test_cpupri_find(__u64 *ctx)
{
	if (ctx[0] == 0)
		cpupri_find_entry(ctx, ctx[1]);
	else
		cpupri_find_exit(ctx, ctx[1], ctx[2]);
	return 0;
}
