// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * tick_broadcast_lock probes (kernel/time/tick-broadcast.c):
 *  - bcast_lock: calls of the functions that take the lock, one program per
 *    site (site i's symbol is chosen by user space, catalog kBcastSites);
 *  - bcast_wait: lock:contention_begin/end filtered by the lock's address,
 *    with the wait time; the address is learned from contention stacks when
 *    neither kallsyms (CONFIG_KALLSYMS_ALL) nor a System.map gives it.
 * The wait timestamp lives in this CPU's slot: a spinning waiter has
 * preemption disabled (the same scheme as perf lock contention's tstamp_cpu).
 */
#include "common.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Written by user space at run time through the mmapped .bss. */
__u64 sh_bcast_lock_addr = 0;   /* &tick_broadcast_lock, 0 = unknown */
__u32 sh_bcast_learn = 0;       /* 1: send stacks of contentions to learn it */

/* bcast_wait's holder (abi.h struct sh_bcast_holder): .rodata sh_bcast_hold 1 when user
 * space created the shared state map (a bcast_wait rule at start; 0: the verifier drops
 * all of it), sh_bcast_ncpus its entries. .bss sh_bcast_exit_mask: the sites whose exit
 * program is attached (written after attach): only they write a state, which their exit
 * clears again. */
const volatile __u32 sh_bcast_hold = 0;
const volatile __u32 sh_bcast_ncpus = 1;
__u32 sh_bcast_exit_mask = 0;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct sh_bcast_holder);
	__uint(max_entries, 1);
} sh_bcast_holders SEC(".maps");

static __always_inline struct sh_bcast_holder *bcast_my_holder(void)
{
	__u32 cpu = bpf_get_smp_processor_id();

	return bpf_map_lookup_elem(&sh_bcast_holders, &cpu);
}

/* Per-CPU cap on stacks sent while learning. */
#define SH_LEARN_CAP 4096

SH_SLOT_MAP(bcast_lock_slots, struct sh_bcast_lock_slot);
SH_SLOT_MAP(bcast_wait_slots, struct sh_bcast_wait_slot);

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} bcast_learn_events SEC(".maps");

/* ---- bcast_lock: one counter per lock-taking site --------------------- */

static __always_inline void bcast_site_hit(void *ctx, __u32 site)
{
	struct sh_bcast_lock_slot *s = SH_THIS_SLOT(bcast_lock_slots);
	__u64 i = site;

	if (!s || i >= SH_BCAST_SITES)
		return;
	SH_INC(&s->calls[SH_BOUND(i, SH_BCAST_SITES)]);
	sh_access(ctx, SH_P_BCAST_LOCK, SH_WORD(struct sh_bcast_lock_slot, calls) + (__u16)SH_BOUND(i, SH_BCAST_SITES), 0);
	sh_mark(SH_P_BCAST_LOCK);
}

/* The holder state at site i's entry (now: 0 reads the clock) and exit. */
static __always_inline void bcast_site_enter(__u32 site, __u64 now)
{
	struct sh_bcast_holder *h;

	if (!sh_bcast_hold || site >= SH_BCAST_SITES || !(sh_bcast_exit_mask & (1u << site)))
		return;
	h = bcast_my_holder();
	if (h)
		h->state = ((now ? now : bpf_ktime_get_ns()) << SH_HOLD_TS_SHIFT) | (site + 1);
}

/* The entry time for the holder state, read first (before the site's counting and gap
 * state), so it is as close to the call as the program can be; 0 without the state. */
static __always_inline __u64 bcast_site_clock(void)
{
	return sh_bcast_hold ? bpf_ktime_get_ns() : 0;
}

static __always_inline void bcast_site_exit(void)
{
	struct sh_bcast_holder *h;

	if (!sh_bcast_hold)
		return;
	h = bcast_my_holder();
	if (h)
		h->state = 0;
}

#define BCAST_SITE(i)                                         \
	SEC("fentry")                                         \
	int BPF_PROG(bcast_lock__fentry_##i) { __u64 t = bcast_site_clock(); bcast_site_hit(ctx, i); bcast_site_enter(i, t); return 0; } \
	SEC("kprobe")                                         \
	int BPF_KPROBE(bcast_lock__kprobe_##i) { __u64 t = bcast_site_clock(); bcast_site_hit(ctx, i); bcast_site_enter(i, t); return 0; } \
	SEC("fexit")                                          \
	int BPF_PROG(bcast_lock__fexit_##i) { bcast_site_exit(); return 0; } \
	SEC("kretprobe")                                      \
	int BPF_KRETPROBE(bcast_lock__kretprobe_##i) { bcast_site_exit(); return 0; }

BCAST_SITE(0)
BCAST_SITE(1)
BCAST_SITE(2)
BCAST_SITE(3)
BCAST_SITE(4)
BCAST_SITE(5)
BCAST_SITE(6)
BCAST_SITE(7)

/* ---- bcast_wait: contention on tick_broadcast_lock -------------------- */

struct bcast_scan {
	__u32 self;
	__u32 best;       /* holder CPU + 1, 0: none yet */
	__u32 cands;
	__u32 site;
	__u64 best_ts;    /* its site entry time */
};

/* One CPU's state for bcast_holder_scan (a bpf_loop callback). */
static long bcast_scan_one(__u64 i, void *data)
{
	struct bcast_scan *sc = data;
	__u32 cpu = (__u32)i;
	struct sh_bcast_holder *h;
	__u64 st, ts;

	if (cpu == sc->self)
		return 0;
	h = bpf_map_lookup_elem(&sh_bcast_holders, &cpu);
	if (!h)
		return 1;
	st = h->state;
	if (!(st & SH_HOLD_SITE) || (st & SH_HOLD_WAITING))
		return 0;
	ts = st >> SH_HOLD_TS_SHIFT;
	/* No branch on the count, here or after the loop: a compare would make the verifier
	 * track it exactly and walk the callback once per CPU ("the sequence of 8193 jumps
	 * is too complex" at 2048 CPUs on 6.18). */
	sc->cands++;
	if (!sc->best || ts < sc->best_ts) {
		sc->best = cpu + 1;
		sc->best_ts = ts;
		sc->site = (__u32)(st & SH_HOLD_SITE) - 1;
	}
	return 0;
}

/* At contention_begin on the lock at now: marks this CPU waiting and finds the holder
 * among the other CPUs' states (one read each), kept in this CPU's found word for the
 * wait's end (the bcast_wait detail, abi.h SH_HOLD_D_*). */
static __always_inline void bcast_holder_scan(__u64 now)
{
	struct sh_bcast_holder *me;
	struct bcast_scan sc = {};
	__u64 inside = 0;

	if (!sh_bcast_hold)
		return;
	me = bcast_my_holder();
	if (!me)
		return;
	me->state |= SH_HOLD_WAITING;
	sc.self = bpf_get_smp_processor_id();
	bpf_loop(sh_bcast_ncpus, bcast_scan_one, &sc, 0);
	if (sc.best && (now << SH_HOLD_TS_SHIFT >> SH_HOLD_TS_SHIFT) > sc.best_ts)
		inside = (now << SH_HOLD_TS_SHIFT >> SH_HOLD_TS_SHIFT) - sc.best_ts;
	if (inside > SH_HOLD_INSIDE_MAX)
		inside = SH_HOLD_INSIDE_MAX;
	me->found = (__u64)sc.best | ((__u64)(sc.site & 0xf) << 16) | ((__u64)(sc.cands & 0xffff) << 20) |
		    (inside << 36);
}

/* At contention_end on the lock: this CPU no longer waits; the detail of its wait. */
static __always_inline __u64 bcast_holder_end(void)
{
	struct sh_bcast_holder *me;

	if (!sh_bcast_hold)
		return 0;
	me = bcast_my_holder();
	if (!me)
		return 0;
	me->state &= ~SH_HOLD_WAITING;
	return me->found | SH_CATCH_DETAIL_SET;
}

static __always_inline struct sh_bcast_wait_slot *bcast_begin_core(void *ctx, __u64 lock, __u64 now)
{
	struct sh_bcast_wait_slot *s = SH_THIS_SLOT(bcast_wait_slots);
	__u64 want = sh_bcast_lock_addr;

	if (!s)
		return NULL;
	SH_INC(&s->all_locks);
	if (want && lock == want) {
		SH_INC(&s->contentions);
		s->ts = now;
		sh_steal_mark(SH_P_BCAST_WAIT, 0, now);
		sh_access(ctx, SH_P_BCAST_WAIT, SH_WORD(struct sh_bcast_wait_slot, contentions), now);
		bcast_holder_scan(now);
	}
	sh_mark(SH_P_BCAST_WAIT);
	return s;
}

static __always_inline void bcast_end_core(void *ctx, __u64 lock, __u64 now)
{
	struct sh_bcast_wait_slot *s;
	__u64 want = sh_bcast_lock_addr, detail;

	if (!want || lock != want)
		return;
	detail = bcast_holder_end();
	s = SH_THIS_SLOT(bcast_wait_slots);
	if (!s || !s->ts)
		return;
	if (now >= s->ts) {
		sh_hist_add(SH_P_BCAST_WAIT, &s->lat, now - s->ts);
		SH_INC(&s->ends);
		sh_catch_note(ctx, SH_P_BCAST_WAIT, &s->c, s->ts, now, detail);
		sh_mark(SH_P_BCAST_WAIT);
	}
	s->ts = 0;
}

SEC("tp_btf/contention_begin")
int BPF_PROG(bcast_wait__tp_begin, void *lock, unsigned int flags)
{
	struct sh_bcast_wait_slot *s = bcast_begin_core(ctx, (__u64)lock, bpf_ktime_get_ns());
	struct sh_learn_event ev = {};
	long n;

	if (!s || sh_bcast_lock_addr || !sh_bcast_learn || s->learn_sent >= SH_LEARN_CAP)
		return 0;
	n = bpf_get_stack(ctx, ev.ip, sizeof(ev.ip), 0);
	if (n <= 0)
		return 0;
	ev.lock_addr = (__u64)lock;
	ev.cpu = bpf_get_smp_processor_id();
	ev.nframes = (__u32)(n / sizeof(__u64));
	SH_INC(&s->learn_sent);
	sh_mark(SH_P_BCAST_WAIT);
	bpf_perf_event_output(ctx, &bcast_learn_events, BPF_F_CURRENT_CPU, &ev, sizeof(ev));
	return 0;
}

SEC("tp_btf/contention_end")
int BPF_PROG(bcast_wait__tp_end, void *lock, int ret)
{
	bcast_end_core(ctx, (__u64)lock, bpf_ktime_get_ns());
	return 0;
}

/* ---- BPF_PROG_TEST_RUN wrappers (tests/bpf) --------------------------- */

/* ctx: site */
SEC("raw_tp")
int test_bcast_lock(__u64 *ctx)
{
	bcast_site_hit(ctx, (__u32)ctx[0]);
	return 0;
}

/* ctx: op (0 begin, 1 end, 2 enter site ctx[1], 3 leave the site), lock address or
 * site, timestamp ns */
SEC("raw_tp")
int test_bcast_wait(__u64 *ctx)
{
	if (ctx[0] == 0)
		bcast_begin_core(ctx, ctx[1], ctx[2]);
	else if (ctx[0] == 1)
		bcast_end_core(ctx, ctx[1], ctx[2]);
	else if (ctx[0] == 2)
		bcast_site_enter((__u32)ctx[1], ctx[2]);
	else
		bcast_site_exit();
	return 0;
}
