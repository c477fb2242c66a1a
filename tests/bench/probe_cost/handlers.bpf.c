// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Probe cost benchmark (tests/bench/probe_cost.cpp): schedhot's real handler logic,
 * attached as raw_tp programs on raw_syscalls:sys_enter / sys_exit, fired by a tight
 * loop of getppid() in the benchmark. Every program first filters on the benchmark's
 * own tgid (pc_tgid, set before load) so that the rest of the system does not pay;
 * the filter is the same in every variant, the empty one included, so that
 * "ns above empty" is the handler alone.
 *
 *   pc_empty / pc_empty_exit   filter only (the baseline for one / two programs)
 *   pc_ktime_enter / _exit     bpf_ktime_get_ns() alone at entry and exit (what the
 *                              two timestamps of a timed probe cost by themselves)
 *   pc_count                   sh_func calls++ on this CPU's slot (a counting probe)
 *   pc_timed_enter / _exit     sh_func_enter / sh_func_exit on this CPU's slot: entry
 *                              timestamp, then the log-linear sh_hist update (a timed
 *                              probe, as fentry + fexit)
 *   pc_cpupri                  cpupri.bpf.c's cpupri_set_core (untimed, as the
 *                              sched_switch proxy): a class transition every call
 *   pc_count_exact             pc_count plus the --exact record a counting probe sends
 *                              (sh_exact_emit: a no-op unless the object was loaded
 *                              with sh_exact = 1, as `record --exact` loads it)
 *   pc_usual_enter / _exit     "the usual way", as libbpf-tools' funclatency: start time
 *                              in a hash map keyed by thread id, one global histogram
 *                              (the same sh_hist geometry) updated with atomics from
 *                              every CPU
 *
 *   pc_cpupri_timed_enter /    cpupri_set_core (timed, as fentry + fexit) and cpupri_set_exit:
 *     pc_cpupri_timed_exit     the entry's clock serves the gap state
 *
 *   The gap state (bpf/gaps.bpf.c, issue 29) is the real one: this object is linked with
 *   gaps.bpf.c and loaded once more with sh_gaps = 1, where every sh_access() of the
 *   handlers calls sh_gap_note() on the routes schedhot writes (the driver writes
 *   gap_routes() of a 6.12 layout). pc_nohz.bpf.c and pc_bcast.bpf.c have the nohz,
 *   ilb_kick and tick_broadcast_lock handlers.
 *
 * cpupri.bpf.c is included whole so that pc_cpupri runs its code, not a copy; the driver
 * loads only the pc_* programs.
 */
#include "cpupri.bpf.c"
#include "pc_common.h"

SH_SLOT_MAP(pc_count_slots, struct sh_func);
SH_SLOT_MAP(pc_timed_slots, struct sh_func);

/* funclatency: start times by tid, one histogram shared by every CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 10240);
	__type(key, __u32);
	__type(value, __u64);
} pc_starts SEC(".maps");

struct sh_hist pc_global_hist = {};

/* Alternates NORMAL (0) and RT (50) on this CPU: every call is a transition that counts
 * trans[], vec_set[] and vec_clear[], as a real priority change does. now: the entry's
 * clock (timed), or 0 (the sched_switch proxy, untimed). false: no slot. */
static __always_inline bool pc_cpupri_transition(void *ctx, __u64 now, bool timed)
{
	struct sh_cpupri_set_slot *s = SH_THIS_SLOT(cpupri_set_slots);
	int old, new;

	if (!s)
		return false;
	old = (s->f.calls & 1) ? 50 : 0;
	new = (s->f.calls & 1) ? 0 : 50;
	cpupri_set_core(ctx, now, old, new, sh_cpupri_nr_prios, timed);
	return true;
}

SEC("raw_tp/sys_enter")
int pc_empty(void *ctx)
{
	PC_FILTER();
	return 1;  /* differs from the filtered-out path: keeps the compare */
}

SEC("raw_tp/sys_exit")
int pc_empty_exit(void *ctx)
{
	PC_FILTER();
	return 1;
}

SEC("raw_tp/sys_enter")
int pc_ktime_enter(void *ctx)
{
	PC_FILTER();
	return bpf_ktime_get_ns() ? 1 : 2;  /* the value is used: the call stays */
}

SEC("raw_tp/sys_exit")
int pc_ktime_exit(void *ctx)
{
	PC_FILTER();
	return bpf_ktime_get_ns() ? 1 : 2;
}

SEC("raw_tp/sys_enter")
int pc_count(void *ctx)
{
	struct sh_func *f;

	PC_FILTER();
	f = SH_THIS_SLOT(pc_count_slots);
	if (f)
		SH_INC(&f->calls);
	return 1;
}

SEC("raw_tp/sys_enter")
int pc_count_exact(void *ctx)
{
	struct sh_func *f;

	PC_FILTER();
	f = SH_THIS_SLOT(pc_count_slots);
	if (f) {
		SH_INC(&f->calls);
		sh_exact_emit(ctx, SH_P_NOHZ_ENTER, SH_WORD(struct sh_func, calls), 0);
	}
	return 1;
}

SEC("raw_tp/sys_enter")
int pc_timed_enter(void *ctx)
{
	struct sh_func *f;

	PC_FILTER();
	f = SH_THIS_SLOT(pc_timed_slots);
	if (f)
		sh_func_enter(SH_P_NOHZ_EXIT, f, bpf_ktime_get_ns());
	return 1;
}

SEC("raw_tp/sys_exit")
int pc_timed_exit(void *ctx)
{
	struct sh_func *f;

	PC_FILTER();
	f = SH_THIS_SLOT(pc_timed_slots);
	if (f)
		sh_func_exit(ctx, SH_P_NOHZ_EXIT, f, bpf_ktime_get_ns());
	return 1;
}

SEC("raw_tp/sys_enter")
int pc_cpupri(void *ctx)
{
	PC_FILTER();
	pc_cpupri_transition(ctx, 0, false);
	return 1;
}

SEC("raw_tp/sys_enter")
int pc_cpupri_timed_enter(void *ctx)
{
	PC_FILTER();
	pc_cpupri_transition(ctx, bpf_ktime_get_ns(), true);
	return 1;
}

SEC("raw_tp/sys_exit")
int pc_cpupri_timed_exit(void *ctx)
{
	PC_FILTER();
	cpupri_set_exit(ctx, bpf_ktime_get_ns());
	return 1;
}

SEC("raw_tp/sys_enter")
int pc_usual_enter(void *ctx)
{
	__u32 tid;
	__u64 now;

	PC_FILTER();
	tid = (__u32)bpf_get_current_pid_tgid();
	now = bpf_ktime_get_ns();
	bpf_map_update_elem(&pc_starts, &tid, &now, BPF_ANY);
	return 1;
}

SEC("raw_tp/sys_exit")
int pc_usual_exit(void *ctx)
{
	__u32 tid;
	__u64 *start, now;

	PC_FILTER();
	tid = (__u32)bpf_get_current_pid_tgid();
	start = bpf_map_lookup_elem(&pc_starts, &tid);
	if (!start)
		return 1;
	now = bpf_ktime_get_ns();
	if (now >= *start)
		sh_hist_add(SH_NPROBES, &pc_global_hist, now - *start);  /* no marks: not a probe */
	bpf_map_delete_elem(&pc_starts, &tid);
	return 1;
}
