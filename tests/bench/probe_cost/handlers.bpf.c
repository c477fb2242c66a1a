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
 *   pc_count_gap               pc_count plus the gap state the gap model of the coherence
 *                              estimate needs (src/model/gaps.h, issue 29), as a probe would
 *                              keep it: a clock read (an untimed probe has none), the
 *                              event's lines from a route map, for each line this CPU's
 *                              entry in its gap table found by tag, and the gap histograms
 *                              updated (a write: since its last write and last access)
 *   pc_timed_gap_enter / _exit pc_timed plus the same gap state at entry (the clock is
 *                              the entry's): what a timed probe would pay
 *   pc_cpupri_gap              pc_cpupri plus the gap state of its two lines (vec[old]
 *                              and vec[new]), with a clock read
 *   The gap state is a prototype measured here, not yet in the probes (bpf/).
 *
 * cpupri.bpf.c is included whole so that pc_cpupri runs its code, not a copy; the driver
 * loads only the pc_* programs.
 */
#include "cpupri.bpf.c"

const volatile __u32 pc_tgid = 0;

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

/* Gap state prototype (see the header comment): per CPU, a table of PC_GAP_LINES entries,
 * each one line's last access and write times and three u32 gap histograms (abi.h
 * sh_gap_index geometry); a route per counter word names up to 2 lines. */
#include "gap_proto.h"
SH_SLOT_MAP(pc_gap_slots, struct pc_gap_slot);

struct pc_gap_route {
	__u32 id[2];    /* line ids + 1, 0 none */
	__u32 write;    /* bit i: target i is written */
	__u32 pad;
};
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct pc_gap_route);
	__uint(max_entries, 1024);
} pc_gap_routes SEC(".maps");

static __always_inline void pc_gap_line_note(struct pc_gap_slot *g, __u32 tag, bool write, __u64 now)
{
	struct pc_gap_line *l = NULL;
	int i;

	for (i = 0; i < PC_GAP_LINES; i++) {
		if (g->line[i].tag == tag) {
			l = &g->line[i];
			break;
		}
		if (g->line[i].tag == 0) {  /* first free entry: claim it */
			g->line[i].tag = tag;
			l = &g->line[i];
			break;
		}
	}
	if (!l)
		return;  /* table full: this line stays on the independent-arrivals model */
	if (write) {
		l->ww[SH_BOUND(l->last_w ? sh_gap_index(now - l->last_w) : SH_GAP_BUCKETS - 1, 64) % SH_GAP_BUCKETS]++;
		l->wa[SH_BOUND(l->last_a ? sh_gap_index(now - l->last_a) : SH_GAP_BUCKETS - 1, 64) % SH_GAP_BUCKETS]++;
		l->last_w = now;
	} else {
		l->ra[SH_BOUND(l->last_a ? sh_gap_index(now - l->last_a) : SH_GAP_BUCKETS - 1, 64) % SH_GAP_BUCKETS]++;
	}
	l->last_a = now;
}

/* One counted event (counter `word`) at now (0: read the clock). */
static __always_inline void pc_gap_note(__u32 word, __u64 now)
{
	struct pc_gap_slot *g = SH_THIS_SLOT(pc_gap_slots);
	struct pc_gap_route *r = bpf_map_lookup_elem(&pc_gap_routes, &word);

	if (!g || !r || !r->id[0])
		return;
	if (!now)
		now = bpf_ktime_get_ns();
	pc_gap_line_note(g, r->id[0], r->write & 1, now);
	if (r->id[1])
		pc_gap_line_note(g, r->id[1], r->write & 2, now);
}

/* Alternates NORMAL (0) and RT (50) on this CPU: every call is a transition that counts
 * trans[], vec_set[] and vec_clear[], as a real priority change does. false: no slot. */
static __always_inline bool pc_cpupri_transition(void *ctx)
{
	struct sh_cpupri_set_slot *s = SH_THIS_SLOT(cpupri_set_slots);
	int old, new;

	if (!s)
		return false;
	old = (s->f.calls & 1) ? 50 : 0;
	new = (s->f.calls & 1) ? 0 : 50;
	cpupri_set_core(ctx, 0, old, new, sh_cpupri_nr_prios, false);
	return true;
}

/* The tgid filter of every program. */
#define PC_FILTER()                                                    \
	do {                                                           \
		if ((bpf_get_current_pid_tgid() >> 32) != pc_tgid)     \
			return 0;                                      \
	} while (0)

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
int pc_count_gap(void *ctx)
{
	struct sh_func *f;

	PC_FILTER();
	f = SH_THIS_SLOT(pc_count_slots);
	if (f) {
		SH_INC(&f->calls);
		pc_gap_note(0, 0);  /* route 0: one written line */
	}
	return 1;
}

SEC("raw_tp/sys_enter")
int pc_timed_gap_enter(void *ctx)
{
	struct sh_func *f;
	__u64 now;

	PC_FILTER();
	f = SH_THIS_SLOT(pc_timed_slots);
	if (f) {
		now = bpf_ktime_get_ns();
		sh_func_enter(f, now);
		pc_gap_note(0, now);
	}
	return 1;
}

SEC("raw_tp/sys_enter")
int pc_cpupri_gap(void *ctx)
{
	PC_FILTER();
	if (pc_cpupri_transition(ctx))
		pc_gap_note(1, 0);  /* route 1: two written lines (vec[old], vec[new]) */
	return 1;
}

SEC("raw_tp/sys_enter")
int pc_timed_enter(void *ctx)
{
	struct sh_func *f;

	PC_FILTER();
	f = SH_THIS_SLOT(pc_timed_slots);
	if (f)
		sh_func_enter(f, bpf_ktime_get_ns());
	return 1;
}

SEC("raw_tp/sys_exit")
int pc_timed_exit(void *ctx)
{
	struct sh_func *f;

	PC_FILTER();
	f = SH_THIS_SLOT(pc_timed_slots);
	if (f)
		sh_func_exit(f, bpf_ktime_get_ns());
	return 1;
}

SEC("raw_tp/sys_enter")
int pc_cpupri(void *ctx)
{
	PC_FILTER();
	pc_cpupri_transition(ctx);
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
		sh_hist_add(&pc_global_hist, now - *start);
	bpf_map_delete_elem(&pc_starts, &tid);
	return 1;
}
