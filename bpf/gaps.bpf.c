// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The gap state (include/schedhot/abi.h struct sh_gap_slot, issue 29): per CPU, per line it
 * touches, its last access and write times and the histograms of the gaps before its
 * accesses. sh_gap_note() is a global function: the verifier checks it once, whatever the
 * number of call sites (bpf/common.bpf.h sh_access).
 */
#include "common.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Bucket of the gap from `last` (0: no access yet: the last bucket) to now. */
static __always_inline __u32 gap_bucket(__u64 last, __u64 now)
{
	if (!last)
		return SH_GAP_BUCKETS - 1;
	if (now < last)
		return 0;
	return sh_gap_index(now - last);
}

/* One access of this CPU to line id (+1) at now into its table: the line's entry, or
 * the first free one (claimed for the run); none left: counted in full. A global function
 * of its own: the verifier checks its 16-entry search once, not once per target of every
 * route (inlined into sh_gap_note's target loop, the two nested loops took the verifier
 * 200-285 ms per program on the development host and over a minute per attach under TCG). */
__noinline int sh_gap_line_note(__u32 cpu, __u32 id, __u32 write, __u64 now)
{
	struct sh_gap_slot *g = bpf_map_lookup_elem(&sh_gap_slots, &cpu);
	struct sh_gap_line *l = NULL;
	__u32 i;

	if (!g)
		return 0;
	for (i = 0; i < SH_GAP_LINES; i++) {
		struct sh_gap_line *e = &g->line[i];

		if (e->id == id || e->id == 0) {
			e->id = id;
			l = e;
			break;
		}
	}
	if (!l) {
		g->full += 1;
		return 0;
	}
	if (write) {
		l->ww[SH_BOUND(gap_bucket(l->last_w, now), 64) % SH_GAP_BUCKETS] += 1;
		l->wa[SH_BOUND(gap_bucket(l->last_a, now), 64) % SH_GAP_BUCKETS] += 1;
		l->last_w = now;
	} else {
		l->ra[SH_BOUND(gap_bucket(l->last_a, now), 64) % SH_GAP_BUCKETS] += 1;
	}
	l->last_a = now;
	return 0;
}

__noinline int sh_gap_note(__u32 probe, __u32 word, __u64 now)
{
	__u32 key = probe * SH_GAP_ROUTE_WORDS + word, cpu = bpf_get_smp_processor_id();
	struct sh_gap_route *r;
	__u32 i;

	if (probe >= SH_NPROBES || word >= SH_GAP_ROUTE_WORDS)
		return 0;
	r = bpf_map_lookup_elem(&sh_gap_routes, &key);
	if (!r || !r->n)
		return 0;
	for (i = 0; i < SH_GAP_TARGETS; i++) {
		struct sh_gap_target *t = &r->t[i];
		__u64 off = 0;
		__u32 id;
		bool w;

		if (i >= r->n)
			break;
		if (cpu >= t->skip_lo && cpu < t->skip_hi)
			continue;
		if (t->mode == SH_GAP_BIT)
			off = t->base + (__u64)(cpu / 64) * 8;
		else if (t->mode == SH_GAP_INT32)
			off = t->base + (__u64)cpu * 4;
		w = t->write || (cpu >= t->up_lo && cpu < t->up_hi);
		id = (__u32)(t->id0 + (__s32)(off >> (t->shift & 63)));
		if (id)
			sh_gap_line_note(cpu, id, w, now);
	}
	return 0;
}
