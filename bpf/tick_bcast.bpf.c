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
}

#define BCAST_SITE(i)                                         \
	SEC("fentry")                                         \
	int BPF_PROG(bcast_lock__fentry_##i) { bcast_site_hit(ctx, i); return 0; } \
	SEC("kprobe")                                         \
	int BPF_KPROBE(bcast_lock__kprobe_##i) { bcast_site_hit(ctx, i); return 0; }

BCAST_SITE(0)
BCAST_SITE(1)
BCAST_SITE(2)
BCAST_SITE(3)
BCAST_SITE(4)
BCAST_SITE(5)
BCAST_SITE(6)
BCAST_SITE(7)

/* ---- bcast_wait: contention on tick_broadcast_lock -------------------- */

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
		sh_access(ctx, SH_P_BCAST_WAIT, SH_WORD(struct sh_bcast_wait_slot, contentions), now);
	}
	return s;
}

static __always_inline void bcast_end_core(void *ctx, __u64 lock, __u64 now)
{
	struct sh_bcast_wait_slot *s;
	__u64 want = sh_bcast_lock_addr;

	if (!want || lock != want)
		return;
	s = SH_THIS_SLOT(bcast_wait_slots);
	if (!s || !s->ts)
		return;
	if (now >= s->ts) {
		sh_hist_add(&s->lat, now - s->ts);
		SH_INC(&s->ends);
		sh_catch_note(ctx, SH_P_BCAST_WAIT, &s->c, s->ts, now, 0);
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

/* ctx: op (0 begin, 1 end), lock address, timestamp ns */
SEC("raw_tp")
int test_bcast_wait(__u64 *ctx)
{
	if (ctx[0] == 0)
		bcast_begin_core(ctx, ctx[1], ctx[2]);
	else
		bcast_end_core(ctx, ctx[1], ctx[2]);
	return 0;
}
