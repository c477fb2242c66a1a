/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Helpers shared by every schedhot BPF program: per-CPU slot lookup, the
 * entry/exit timing stack and the log-linear histogram update.
 *
 * Contention rule: everything here writes only the slot of the CPU the
 * program runs on (index bpf_get_smp_processor_id() of a per-probe array
 * map whose values are 128-byte aligned). Counters use atomic adds: they
 * cost a few cycles on a line this CPU already owns and keep counts exact
 * when an interrupt's program touches the same slot.
 */
#ifndef SCHEDHOT_COMMON_BPF_H
#define SCHEDHOT_COMMON_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "schedhot/abi.h"

/* One array map per probe; max_entries is set to the number of possible
 * CPUs by user space before load. */
#define SH_SLOT_MAP(name, value_type)                  \
	struct {                                       \
		__uint(type, BPF_MAP_TYPE_ARRAY);      \
		__uint(map_flags, BPF_F_MMAPABLE);     \
		__type(key, __u32);                    \
		__type(value, value_type);             \
		__uint(max_entries, 1);                \
	} name SEC(".maps")

/* This CPU's slot of map, or NULL (cpu >= max_entries cannot happen when
 * max_entries = possible CPUs; the NULL check is for the verifier). */
#define SH_THIS_SLOT(map) ({                           \
	__u32 __cpu = bpf_get_smp_processor_id();      \
	bpf_map_lookup_elem(&(map), &__cpu);           \
})

#define SH_INC(p) __sync_fetch_and_add((p), 1)

/* x & (n - 1) for a power-of-two n, computed after a compiler barrier: clang
 * otherwise drops the mask when it can prove the bound, and older verifiers
 * (6.1, 6.12) lose that proof across register copies ("math between map_value
 * pointer and register with unbounded min value"). */
#define SH_BOUND(x, n) ({                              \
	__u64 __b = (x);                               \
	barrier_var(__b);                              \
	__b & ((n) - 1);                               \
})

static __always_inline void sh_hist_add(struct sh_hist *h, __u64 v)
{
	__sync_fetch_and_add(&h->bucket[SH_BOUND(sh_hist_index(v), SH_HIST_BUCKETS)], 1);
	__sync_fetch_and_add(&h->sum_ns, v);
	if (v > h->max_ns)
		h->max_ns = v;
}

/* Function entry at time now (ns). Interrupts nest calls at most two or three
 * deep on one CPU; a full stack means exits were lost (a kretprobe out of
 * instances, an entry seen before the exit program attached), so it is reset
 * rather than left full forever: counted in 'nested', timing resumes. */
static __always_inline void sh_func_enter(struct sh_func *f, __u64 now)
{
	__u64 d = f->t.depth;

	SH_INC(&f->calls);
	if (d >= SH_MAX_DEPTH) {
		SH_INC(&f->nested);
		d = 0;
	}
	f->t.ts[SH_BOUND(d, SH_MAX_DEPTH)] = now;
	f->t.depth = d + 1;
}

/* Function exit at time now (ns): times the innermost open entry. */
static __always_inline void sh_func_exit(struct sh_func *f, __u64 now)
{
	__u64 d = f->t.depth;

	if (d == 0) {
		SH_INC(&f->orphan_exits);
		return;
	}
	d--;
	f->t.depth = d;
	if (d < SH_MAX_DEPTH) {
		__u64 start = f->t.ts[SH_BOUND(d, SH_MAX_DEPTH)];
		if (now >= start)
			sh_hist_add(&f->lat, now - start);
	}
}

/*
 * This CPU's struct rq without the runqueues per-CPU symbol (absent from
 * kallsyms without CONFIG_KALLSYMS_ALL): current->se.cfs_rq is the task's
 * cfs_rq on this CPU (set for every task, the idle task included, by
 * set_task_rq()); cfs_rq->rq exists with CONFIG_FAIR_GROUP_SCHED, otherwise
 * the cfs_rq is the one embedded in struct rq.
 */
static __always_inline struct rq *sh_current_rq(void)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	struct cfs_rq *cfs = BPF_CORE_READ(t, se.cfs_rq);

	if (!cfs)
		return NULL;
	if (bpf_core_field_exists(cfs->rq))
		return BPF_CORE_READ(cfs, rq);
	return (struct rq *)((char *)cfs - bpf_core_field_offset(struct rq, cfs));
}

static __always_inline int sh_current_pid(void)
{
	return (int)(bpf_get_current_pid_tgid() & 0xffffffff);
}


/*
 * --exact (abi.h struct sh_exact_rec): weak definitions, one in every .bpf.c
 * that includes this; bpftool gen object links them into one flag and one
 * map. sh_exact is .rodata: when 0 the verifier drops every sh_exact_emit()
 * as dead code.
 */
const volatile __u32 sh_exact __weak = 0;
struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} sh_exact_events SEC(".maps") __weak;

/* Records bpf_perf_event_output() refused for another reason than a full buffer (which
 * the ring counts as lost itself): no perf event on this CPU, as after the CPU went
 * offline and came back (the kernel does not re-add a CPU's event), or none opened for
 * it. A per-CPU array: each CPU adds to its own copy; user space adds them to the lost. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 1);
} sh_exact_fails SEC(".maps") __weak;

/*
 * Gap state (abi.h struct sh_gap_slot): .rodata sh_gaps = 1 keeps it (the default; 0 and
 * the verifier drops sh_gap_note as dead code). The slots and the routes are one map each,
 * created by user space and shared by every object (weak definitions, as sh_exact_events).
 */
const volatile __u32 sh_gaps __weak = 0;
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct sh_gap_slot);
	__uint(max_entries, 1);
} sh_gap_slots SEC(".maps") __weak;
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct sh_gap_route);
	__uint(max_entries, SH_NPROBES * SH_GAP_ROUTE_WORDS);
} sh_gap_routes SEC(".maps") __weak;

/* The counted event (probe, word) on this CPU at now (0: the clock is read if needed)
 * into the gap state, when sampled or while lines are armed (abi.h "Sampling"): each line of
 * its route once, as a write when any of its targets there writes (the --exact replay
 * counts a record so: model/lines.h event_lines). A global function (bpf/gaps.bpf.c),
 * verified once rather than at every call site. */
extern int sh_gap_note(__u32 probe, __u32 word, __u64 now);

/* Word offset of member in slot struct T (abi.h): struct sh_exact_rec.word. */
#define SH_WORD(T, member) ((__u16)(__builtin_offsetof(T, member) / 8))

#define SH_ENOSPC 28  /* ENOSPC: no errno.h for BPF */

/* Sends one --exact record: counter `word` of probe `probe` was incremented on
 * this CPU at now (0: read the clock). ctx: the program's context (any tracing program type). */
static __always_inline void sh_exact_emit(void *ctx, __u16 probe, __u16 word, __u64 now)
{
	struct sh_exact_rec r;
	long e;

	if (!sh_exact)
		return;
	r.ts = now ? now : bpf_ktime_get_ns();
	r.cpu = bpf_get_smp_processor_id();
	r.probe = probe;
	r.word = word;
	e = bpf_perf_event_output(ctx, &sh_exact_events, BPF_F_CURRENT_CPU, &r, sizeof(r));
	if (e == 0 || e == -SH_ENOSPC)
		return;  /* sent, or counted lost by the ring itself */
	{
		__u32 k = 0;
		__u64 *n = bpf_map_lookup_elem(&sh_exact_fails, &k);

		if (n)
			*n += 1;
	}
}

/* A counted event that touches modeled lines (ProbeSpec::accesses): counter `word` of
 * probe `probe` was incremented on this CPU at now (0: not known; --exact reads the clock
 * once for both, the gap state only for the events it samples). Keeps the gap state and
 * sends the --exact record, each when enabled; with both off the verifier drops it all. */
static __always_inline void sh_access(void *ctx, __u16 probe, __u16 word, __u64 now)
{
	if (!sh_gaps && !sh_exact)
		return;
	if (!now && sh_exact)
		now = bpf_ktime_get_ns();
	if (sh_gaps) {
		/* The gap state's cheap path, inline (abi.h "Sampling"): count the event and
		 * step the countdown; only a sampled event, or one while lines are armed,
		 * calls sh_gap_note (the clock, the route, the table). */
		__u32 cpu = bpf_get_smp_processor_id();
		struct sh_gap_slot *g = bpf_map_lookup_elem(&sh_gap_slots, &cpu);

		if (g) {
			g->events += 1;
			if (g->countdown > 1 && !g->armed)
				g->countdown -= 1;
			else
				sh_gap_note(probe, word, now);
		}
	}
	sh_exact_emit(ctx, probe, word, now);
}

#endif /* SCHEDHOT_COMMON_BPF_H */
