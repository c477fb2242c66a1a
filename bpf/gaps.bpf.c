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

/* The bucket of a recorded gap into h. */
#define SH_GAP_ADD(h, last, now) ((h)[SH_BOUND(gap_bucket((last), (now)), 64) % SH_GAP_BUCKETS] += 1)

/* One access's gap into h (flags f of its entry; returns them updated): the line's first
 * access of this kind (no `seen` yet) in the last bucket when the event is sampled (how
 * bit 1); else, when `arm` is set, the gap since last, the armed gap closing (`clear` off,
 * the CPU's armed count down). */
static __always_inline __u32 gap_close(struct sh_gap_slot *g, __u32 *h, __u64 last, __u32 f, __u32 seen, __u32 arm,
				       __u32 clear, __u32 how, __u64 now)
{
	if (!(f & seen)) {
		if (how & 2)
			SH_GAP_ADD(h, 0, now);
	} else if (f & arm) {
		SH_GAP_ADD(h, last, now);
		f &= ~clear;
		g->armed -= 1;
	}
	return f;
}

/* Entry i of this CPU's table (holding the line) takes one access at now; how: bit 0 a
 * write, bit 1 a sampled event (abi.h "Sampling"). An armed gap closes here; the line's
 * first access, and first write, go to the last bucket (as the replay counts them) when
 * the event is sampled, so that they too weigh 1/period before the scaling; a sampled
 * access arms the line. A global function of its own, apart from the search: the
 * verifier checks its branches once, not once per entry the search can stop at. */
__noinline int sh_gap_entry_note(__u32 cpu, __u32 i, __u32 how, __u64 now)
{
	struct sh_gap_slot *g = bpf_map_lookup_elem(&sh_gap_slots, &cpu);
	struct sh_gap_line *l;
	__u32 f;

	if (!g)
		return 0;
	l = &g->line[i & (SH_GAP_LINES - 1)];
	f = l->flags;
	if (how & 1) {
		f = gap_close(g, l->ww, l->last_w, f, SH_GAP_SEEN_W, SH_GAP_ARM_W, SH_GAP_ARM_W, how, now);
		f = gap_close(g, l->wa, l->last_a, f, SH_GAP_SEEN_A, SH_GAP_ARM_A, SH_GAP_ARM_A | SH_GAP_ARM_AW, how, now);
		f |= SH_GAP_SEEN_W;
	} else {
		f = gap_close(g, l->ra, l->last_a, f, SH_GAP_SEEN_A, SH_GAP_ARM_A, SH_GAP_ARM_A | SH_GAP_ARM_AW, how, now);
	}
	f |= SH_GAP_SEEN_A;
	if (how & 2) {
		f |= SH_GAP_ARM_A;
		g->armed += 1;
		g->armed_mask |= 1ull << (l->id & 63);
		l->last_a = now;
		if (how & 1) {
			f |= SH_GAP_ARM_AW;
			if (!(f & SH_GAP_ARM_W))
				g->armed += 1;
			f |= SH_GAP_ARM_W;
			l->last_w = now;
		}
	}
	l->flags = f;
	if (!g->armed)
		g->armed_mask = 0;
	return 0;
}

/* One access of this CPU to line id (+1) at now (how: as sh_gap_entry_note) into its
 * table: the line's entry, or the first free one (claimed for the run); none left:
 * counted in full. A global function of its own: the verifier checks its 16-entry search
 * once, not once per target of every route (inlined into sh_gap_note's target loop, the
 * two nested loops took the verifier 200-285 ms per program on the development host and
 * over a minute per attach under TCG). */
__noinline int sh_gap_line_note(__u32 cpu, __u32 id, __u32 how, __u64 now)
{
	struct sh_gap_slot *g = bpf_map_lookup_elem(&sh_gap_slots, &cpu);
	__u32 i;

	if (!g)
		return 0;
	for (i = 0; i < SH_GAP_LINES; i++) {
		struct sh_gap_line *e = &g->line[i];

		if (e->id == id || e->id == 0) {
			e->id = id;
			return sh_gap_entry_note(cpu, i, how, now);
		}
	}
	g->full += 1;
	return 0;
}

/* Entry i's armed gaps closed at now, their length so far (a lower bound), each counted
 * in censored; the access gap as a write when the sampled access wrote. A global function
 * of its own, so that the verifier checks its branches once, not in each of the sweep's
 * 16 iterations (inlined there, they made a program's verification take seconds). */
__noinline int sh_gap_entry_close(__u32 cpu, __u32 i, __u64 now)
{
	struct sh_gap_slot *g = bpf_map_lookup_elem(&sh_gap_slots, &cpu);
	struct sh_gap_line *e;
	__u32 f;

	if (!g)
		return 0;
	e = &g->line[i & (SH_GAP_LINES - 1)];
	f = e->flags;
	if (f & SH_GAP_ARM_W) {
		SH_GAP_ADD(e->ww, e->last_w, now);
		g->censored += 1;
	}
	if (f & SH_GAP_ARM_A) {
		if (f & SH_GAP_ARM_AW)
			SH_GAP_ADD(e->wa, e->last_a, now);
		else
			SH_GAP_ADD(e->ra, e->last_a, now);
		g->censored += 1;
	}
	e->flags = f & ~(SH_GAP_ARM_A | SH_GAP_ARM_AW | SH_GAP_ARM_W);
	return 0;
}

/* SH_GAP_KEEP events went by while lines stayed armed: every armed gap is closed at its
 * length so far (sh_gap_entry_close), so that the CPU's events go back to the cheap path. */
__noinline int sh_gap_sweep(__u32 cpu, __u64 now)
{
	struct sh_gap_slot *g = bpf_map_lookup_elem(&sh_gap_slots, &cpu);
	__u32 i;

	if (!g)
		return 0;
	for (i = 0; i < SH_GAP_LINES; i++) {
		struct sh_gap_line *e = &g->line[i];

		if (e->id == 0)
			break;
		if (e->flags & (SH_GAP_ARM_A | SH_GAP_ARM_W))
			sh_gap_entry_close(cpu, i, now);
	}
	g->armed = 0;
	g->armed_mask = 0;
	g->slow = 0;
	return 0;
}

/* The sampling decision of one event on this CPU (abi.h "Sampling"; sh_access counted it
 * and took the cheap path when neither applies): 2 sampled, 1 not sampled but lines are
 * armed (the event may close them), 0 neither. */
static __always_inline __u32 gap_decide(struct sh_gap_slot *g, __u32 cpu)
{
	__u32 p, x;

	if (g->countdown > 1) {
		g->countdown -= 1;
		if (!g->armed)
			return 0;
		g->slow += 1;
		return 1;
	}
	p = g->period;
	if (p <= 1) {
		g->countdown = 1;
	} else {
		if (p > (1u << 20))
			p = 1u << 20;
		x = g->rng;
		if (!x)
			x = (cpu * 2654435761u) | 1;
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		g->rng = x;
		g->countdown = 1 + x % (2 * p - 1);
	}
	g->slow = 0;
	g->samples += 1;
	return 2;
}

__noinline int sh_gap_note(__u32 probe, __u32 word, __u64 now)
{
	__u32 key = probe * SH_GAP_ROUTE_WORDS + word, cpu = bpf_get_smp_processor_id();
	__u32 ids[SH_GAP_TARGETS] = {}, how_w[SH_GAP_TARGETS] = {};
	struct sh_gap_slot *g;
	struct sh_gap_route *r;
	__u32 i, how;
	bool hit = false;

	if (probe >= SH_NPROBES || word >= SH_GAP_ROUTE_WORDS)
		return 0;
	g = bpf_map_lookup_elem(&sh_gap_slots, &cpu);
	if (!g)
		return 0;
	how = gap_decide(g, cpu);
	if (!how)
		return 0;
	r = bpf_map_lookup_elem(&sh_gap_routes, &key);
	if (!r || !r->n)
		return 0;  /* touches no modeled line: a sample of it is lost, at random */
	/* the route's line ids (0: target skipped), and whether one may be armed */
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
		ids[i] = id;
		how_w[i] = w ? 1 : 0;
		if (id && (g->armed_mask & (1ull << (id & 63))))
			hit = true;
	}
	if (how == 1 && !hit) {
		/* no armed line here: no clock, no table; armed too long: closed */
		if (g->slow > SH_GAP_KEEP)
			sh_gap_sweep(cpu, now ? now : bpf_ktime_get_ns());
		return 0;
	}
	if (!now)
		now = bpf_ktime_get_ns();
	how = how == 2 ? 2 : 0;
	for (i = 0; i < SH_GAP_TARGETS; i++)
		if (ids[i])
			sh_gap_line_note(cpu, ids[i], how | how_w[i], now);
	return 0;
}
