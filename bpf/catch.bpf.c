// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * --catch's interrupt accounting (abi.h struct sh_irq_ring): the hard-IRQ, softirq
 * and NMI windows of each CPU, kept by the CPU itself in its copy of the per-CPU
 * map sh_irq_rings, so a caught event can say how much of its time interrupts
 * took (common.bpf.h sh_irq_overlap). Loaded and attached only when a rule is
 * armed. Mirrors kernel/irq/handle.c (irq_handler_entry/exit around each
 * action), kernel/softirq.c handle_softirqs (softirq_entry/exit around each
 * vector) and arch/x86/kernel/nmi.c nmi_handle (nmi_handler after each handler,
 * with its duration; x86 only).
 */
#include "common.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

static __always_inline struct sh_irq_ring *irq_ring(void)
{
	__u32 z = 0;

	return bpf_map_lookup_elem(&sh_irq_rings, &z);
}

/* A finished window [start, end] of kind into the ring (they finish in order). */
static __always_inline void irq_span(struct sh_irq_ring *g, __u32 kind, __u64 start, __u64 end)
{
	__u64 h = g->head;
	struct sh_irq_span *sp = &g->span[SH_BOUND(h, SH_IRQ_RING)];

	sp->start = start;
	sp->end = end;
	sp->kind = kind;
	g->head = h + 1;
}

static __always_inline void irq_open(__u32 kind, __u64 now)
{
	struct sh_irq_ring *g = irq_ring();

	if (!g)
		return;
	if (kind == SH_IRQ_HARD)
		g->open[SH_IRQ_HARD] = now;
	else
		g->open[SH_IRQ_SOFT] = now;
}

static __always_inline void irq_close(__u32 kind, __u64 now)
{
	struct sh_irq_ring *g = irq_ring();
	__u64 a;

	if (!g)
		return;
	if (kind == SH_IRQ_HARD) {
		a = g->open[SH_IRQ_HARD];
		g->open[SH_IRQ_HARD] = 0;
	} else {
		a = g->open[SH_IRQ_SOFT];
		g->open[SH_IRQ_SOFT] = 0;
	}
	if (a && now >= a)
		irq_span(g, kind, a, now);
}

SEC("tp_btf/irq_handler_entry")
int BPF_PROG(catch__irq_entry, int irq, void *action)
{
	irq_open(SH_IRQ_HARD, bpf_ktime_get_ns());
	return 0;
}

SEC("tp_btf/irq_handler_exit")
int BPF_PROG(catch__irq_exit, int irq, void *action, int ret)
{
	irq_close(SH_IRQ_HARD, bpf_ktime_get_ns());
	return 0;
}

SEC("tp_btf/softirq_entry")
int BPF_PROG(catch__softirq_entry, unsigned int vec_nr)
{
	irq_open(SH_IRQ_SOFT, bpf_ktime_get_ns());
	return 0;
}

SEC("tp_btf/softirq_exit")
int BPF_PROG(catch__softirq_exit, unsigned int vec_nr)
{
	irq_close(SH_IRQ_SOFT, bpf_ktime_get_ns());
	return 0;
}

/* nmi:nmi_handler(void *handler, s64 delta_ns, int handled): after each handler. Raw
 * (untyped args), so the object loads where the tracepoint does not exist (then this
 * program alone is not attached). */
SEC("raw_tp/nmi_handler")
int catch__nmi(__u64 *ctx)
{
	struct sh_irq_ring *g = irq_ring();
	__u64 now = bpf_ktime_get_ns(), d = ctx[1];

	if (g && d <= now)
		irq_span(g, SH_IRQ_NMI, now - d, now);
	return 0;
}

/* x86's system vectors (arch/x86/include/asm/trace/irq_vectors.h, DEFINE_IRQ_VECTOR_EVENT):
 * the local APIC timer, the rescheduling, call-function and irq_work IPIs run as hard
 * interrupts that never pass irq_handler_entry/exit (sysvec_* in arch/x86/kernel/apic/ and
 * smp.c); each calls trace_*_entry before its handler and trace_*_exit after it, inside the
 * interrupt (softirqs run after, in irq_exit_rcu). Raw, as catch__nmi: where a tracepoint
 * does not exist (other architectures) its program alone is not attached. */
#define SH_IRQ_VECTOR(name)                                                              \
	SEC("raw_tp/" #name "_entry")                                                    \
	int catch__##name##_entry(__u64 *ctx) { irq_open(SH_IRQ_HARD, bpf_ktime_get_ns()); return 0; } \
	SEC("raw_tp/" #name "_exit")                                                     \
	int catch__##name##_exit(__u64 *ctx) { irq_close(SH_IRQ_HARD, bpf_ktime_get_ns()); return 0; }

SH_IRQ_VECTOR(local_timer)
SH_IRQ_VECTOR(reschedule)
SH_IRQ_VECTOR(call_function)
SH_IRQ_VECTOR(call_function_single)
SH_IRQ_VECTOR(irq_work)

/* ---- BPF_PROG_TEST_RUN wrapper (tests/bpf) ----------------------------- */

/* ctx: kind (0 hard, 1 soft, 2 NMI), op (0 open, 1 close; NMI: a span of ctx[3] ns ending
 * at ctx[2]), timestamp ns, NMI duration */
SEC("raw_tp")
int test_irq(__u64 *ctx)
{
	struct sh_irq_ring *g;

	if (ctx[0] == SH_IRQ_NMI) {
		g = irq_ring();
		if (g && ctx[3] <= ctx[2])
			irq_span(g, SH_IRQ_NMI, ctx[2] - ctx[3], ctx[2]);
		return 0;
	}
	if (ctx[1] == 0)
		irq_open((__u32)ctx[0], ctx[2]);
	else
		irq_close((__u32)ctx[0], ctx[2]);
	return 0;
}

/* ctx: none. This CPU's steal clock (common.bpf.h sh_steal_read, as a caught event's start
 * and end read it) into sh_steal_test_ns, sh_steal_test_ok 1 when read. */
__u64 sh_steal_test_ns = 0;
__u32 sh_steal_test_ok = 0;

SEC("raw_tp")
int test_steal(__u64 *ctx)
{
	struct sh_steal_marks *m;
	__u64 v = 0;
	__u32 z = 0;

	sh_steal_test_ok = 0;
	if (!sh_catch_steal)
		return 0;
	m = bpf_map_lookup_elem(&sh_steal_marks, &z);
	if (m && sh_steal_read(m, &v)) {
		sh_steal_test_ns = v;
		sh_steal_test_ok = 1;
	}
	return 0;
}
