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

/* One array map per probe (and the shared gap state and change marks, declared
 * __weak); max_entries is set to the number of possible CPUs by user space before load. */
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
/* A per-CPU array of one value (each CPU its own copy): scratch space and per-CPU
 * state no other CPU reads. */
#define SH_PERCPU_ONE(name, value_type)                \
	struct {                                       \
		__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);\
		__type(key, __u32);                    \
		__type(value, value_type);             \
		__uint(max_entries, 1);                \
	} name SEC(".maps") __weak

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

/*
 * Change marks (abi.h struct sh_cpu_marks): .rodata sh_marks 1 when user space shares the
 * map (src/probe/attach.cpp); 0 and the verifier drops every mark (a test's object).
 */
const volatile __u32 sh_marks __weak = 0;
SH_SLOT_MAP(sh_slot_marks, struct sh_cpu_marks) __weak;

static __always_inline struct sh_cpu_marks *sh_this_marks(void)
{
	__u32 cpu = bpf_get_smp_processor_id();

	return sh_marks ? bpf_map_lookup_elem(&sh_slot_marks, &cpu) : NULL;
}

/* A mark's add, ordered after every write before it: a fetch add (BPF_FETCH, its result
 * kept live) is fully ordered in the JITs (x86 lock xadd; arm64 LDADDAL, or LDXR/STLXR and
 * DMB without LSE), where a plain or non-fetch add could be seen by another CPU before the
 * slot's words it marks (arm64, ppc64le). */
#define SH_MARK_ADD(p) ({                              \
	__typeof__(*(p)) __old = __sync_fetch_and_add((p), 1); \
	barrier_var(__old);                            \
})

/* After a program wrote probe's slot on this CPU (its last write): gen[probe] moves. */
static __always_inline void sh_mark(__u32 probe)
{
	struct sh_cpu_marks *m = sh_this_marks();

	if (m)
		SH_MARK_ADD(&m->gen[SH_BOUND(probe, SH_MARK_GENS)]);
}

/* Adds v (ns) to probe's histogram h on this CPU; the bucket's chunk count moves after it
 * (the caller's sh_mark follows). */
static __always_inline void sh_hist_add(__u32 probe, struct sh_hist *h, __u64 v)
{
	__u64 i = SH_BOUND(sh_hist_index(v), SH_HIST_BUCKETS);
	struct sh_cpu_marks *m;

	__sync_fetch_and_add(&h->bucket[i], 1);
	__sync_fetch_and_add(&h->sum_ns, v);
	if (v > h->max_ns)
		h->max_ns = v;
	m = sh_this_marks();
	if (m && probe < SH_NPROBES)
		SH_MARK_ADD(&m->chunk[probe][SH_BOUND(i / SH_MARK_CHUNK_WORDS, SH_MARK_CHUNKS)]);
}

/*
 * --catch (abi.h "Tail capture"): .rodata sh_catch_armed 1 when a rule may be armed (0:
 * the verifier drops sh_catch_note as dead code: no cost); sh_catch_irq 1 when the irq
 * programs (bpf/catch.bpf.c) keep sh_irq_rings. The rules, the perf map and the rings
 * are one map each, created by user space and shared by every object (weak, as
 * sh_exact_events); the scratch record is each object's own.
 */
const volatile __u32 sh_catch_armed __weak = 0;
const volatile __u32 sh_catch_irq __weak = 0;
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct sh_catch_rule);
	__uint(max_entries, SH_NPROBES);
} sh_catch_rules SEC(".maps") __weak;
struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} sh_catch_events SEC(".maps") __weak;
SH_PERCPU_ONE(sh_irq_rings, struct sh_irq_ring);
SH_PERCPU_ONE(sh_catch_scratch, struct sh_catch_rec);
/* Caught events bpf_perf_event_output() refused for another reason than a full buffer
 * (no perf event on this CPU: it went offline and came back, or was offline when the
 * buffers were opened), per CPU: user space (probe/perf_drain.h) opens a new buffer for a
 * CPU whose count moved. Also counted in full_drops. Shared, as sh_exact_fails. */
SH_PERCPU_ONE(sh_catch_fails, __u64);

#define SH_ENOSPC 28  /* ENOSPC: no errno.h for BPF */

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

/*
 * --catch's steal time (abi.h sh_steal_marks): .rodata sh_catch_steal, a mask of probe ids
 * (1 << enum sh_probe_id: the probes with a rule at start; a constant at each inlined call,
 * so a probe without a rule pays nothing), non-zero when the loader
 * found a paravirt steal clock (probe/steal_clock.h: KVM's per-CPU steal_time, registered
 * by arch/x86/kernel/kvm.c with MSR_KVM_STEAL_TIME when the hypervisor offers
 * KVM_FEATURE_STEAL_TIME). Not a typed ksym: without CONFIG_KALLSYMS_ALL the kernel cannot
 * resolve a per-CPU variable's address, and the load fails even where the read is dead
 * code. Instead this CPU's steal_time is found from its struct rq (the per-CPU runqueues,
 * sh_current_rq) and sh_steal_rq_delta, &steal_time - &runqueues on every CPU (their
 * offsets in the BTF's .data..percpu section), once per CPU (cached in the marks). With
 * sh_catch_steal 0, or sh_catch_armed 0, the verifier drops every read.
 */
const volatile __u32 sh_catch_steal __weak = 0;
const volatile __s64 sh_steal_rq_delta __weak = 0;
SH_PERCPU_ONE(sh_steal_marks, struct sh_steal_marks);

/* arch/x86/include/uapi/asm/kvm_para.h struct kvm_steal_time's start (a fixed ABI): the
 * host adds the time the vCPU waited to run at each entry, version odd while it writes. */
struct sh_kvm_steal_time {
	__u64 steal;
	__u32 version;
	__u32 flags;
};

/* This CPU's steal_time address (m: its marks, which cache it), 0 when not found. */
static __always_inline __u64 sh_steal_addr(struct sh_steal_marks *m)
{
	struct rq *rq;
	__u64 a = m->addr;
	int cpu = -1;

	if (a)
		return a;
	rq = sh_current_rq();
	if (!rq)
		return 0;
	if (bpf_core_read(&cpu, sizeof(cpu), &rq->cpu) || cpu != (int)bpf_get_smp_processor_id())
		return 0;
	a = (__u64)rq + sh_steal_rq_delta;
	m->addr = a;
	return a;
}

/* This CPU's steal clock into *out: steal and version in one read. The kernel's
 * kvm_steal_clock() reads version, steal, version (a seqcount); one read is enough here
 * because this CPU reads its own steal_time, which the host writes only while this vCPU
 * is not running (arch/x86/kvm/x86.c record_steal_time() at vCPU entry). A read that
 * straddles a deschedule sees the old steal with the new version: the steal of that
 * deschedule, which fell inside the event being timed, is then counted in it, as it
 * should be. 0 when not readable: the version is odd (a host writing, which this vCPU
 * cannot observe unless the host is broken) or 0 (a hypervisor that does not keep the
 * clock, as QEMU's TCG), or this CPU's steal_time was not found. */
static __always_inline int sh_steal_read(struct sh_steal_marks *m, __u64 *out)
{
	struct sh_kvm_steal_time st;
	__u64 a = sh_steal_addr(m);

	if (!a || bpf_probe_read_kernel(&st, sizeof(st), (void *)a) || !st.version || (st.version & 1))
		return 0;
	*out = st.steal;
	return 1;
}

/* The start (ts) of an event of probe at timing depth d on this CPU: its steal clock, for
 * sh_steal_take at the end. Only when --catch is armed and the clock kept. */
static __always_inline void sh_steal_mark(__u32 probe, __u64 d, __u64 ts)
{
	struct sh_steal_marks *m;
	__u64 steal = 0;
	__u32 z = 0;

	if (!sh_catch_armed || probe >= 32 || !(sh_catch_steal & (1u << probe)))
		return;
	m = bpf_map_lookup_elem(&sh_steal_marks, &z);
	if (!m || probe >= SH_NPROBES)
		return;
	{
		struct sh_steal_mark *k = &m->m[probe][SH_BOUND(d, SH_MAX_DEPTH)];

		k->ts = sh_steal_read(m, &steal) ? ts : 0;
		k->steal = steal;
	}
}

/* r's steal time: the clock now less its mark at the event's start (the mark of probe
 * whose ts is start), at most r->dur_ns; SH_CATCH_F_STEAL when both reads were good. */
static __always_inline void sh_steal_take(struct sh_catch_rec *r, __u32 probe, __u64 start)
{
	struct sh_steal_marks *m;
	__u64 now, was = 0, d;
	__u32 z = 0, i;
	int found = 0;

	m = bpf_map_lookup_elem(&sh_steal_marks, &z);
	if (!m || probe >= SH_NPROBES || !start)
		return;
	for (i = 0; i < SH_MAX_DEPTH; i++) {
		struct sh_steal_mark *k = &m->m[probe][i];

		if (k->ts == start) {
			was = k->steal;
			k->ts = 0;
			found = 1;
			break;
		}
	}
	if (!found || !sh_steal_read(m, &now) || now < was)
		return;
	d = now - was;
	r->steal_ns = d < r->dur_ns ? d : r->dur_ns;
	r->flags |= SH_CATCH_F_STEAL;
}

#define SH_CATCH_DETAIL_SET (1ull << 63)  /* a detail word that holds one (sh_timing.detail) */

/* Adds to r the hard-IRQ, softirq and NMI time of this CPU inside [start, end]: the
 * finished spans of the ring (newest first; they end in order, so the walk stops at the
 * first that ended before start) and the open ones. */
static __always_inline void sh_irq_overlap(struct sh_catch_rec *r, __u64 start, __u64 end)
{
	__u32 z = 0, i;
	struct sh_irq_ring *g = bpf_map_lookup_elem(&sh_irq_rings, &z);
	__u64 head, hard = 0, soft = 0, nmi = 0, a;

	if (!g)
		return;
	r->flags |= SH_CATCH_F_IRQ;
	head = g->head;
	for (i = 0; i < SH_IRQ_RING; i++) {
		struct sh_irq_span *sp;
		__u64 b, k;

		if (i >= head)
			break;
		sp = &g->span[SH_BOUND(head - 1 - i, SH_IRQ_RING)];
		a = sp->start;
		b = sp->end;
		k = sp->kind;
		if (b <= start)
			break;
		if (i == SH_IRQ_RING - 1)
			r->flags |= SH_CATCH_F_IRQ_MORE;  /* older spans may overlap too */
		if (a < start)
			a = start;
		if (b > end)
			b = end;
		if (b <= a)
			continue;
		if (k == SH_IRQ_HARD)
			hard += b - a;
		else if (k == SH_IRQ_SOFT)
			soft += b - a;
		else
			nmi += b - a;
	}
	/* interrupts still open that began inside the event (one open since before it is
	 * the context the event runs in, not an interruption) */
	a = g->open[SH_IRQ_HARD];
	if (a > start && a < end)
		hard += end - a;
	a = g->open[SH_IRQ_SOFT];
	if (a > start && a < end)
		soft += end - a;
	a = g->open[SH_IRQ_NMI];
	if (a > start && a < end)
		nmi += end - a;
	r->irq_ns = hard;
	r->softirq_ns = soft;
	r->nmi_ns = nmi;
}

/* An event of probe `probe` timed on this CPU from start to now (ns), counted in the
 * probe's histogram: caught (a record with its stack to sh_catch_events), or counted as
 * a rate or full drop in c, when its rule's threshold is at most its duration. detail:
 * the probe's own value with SH_CATCH_DETAIL_SET, or 0. ctx: the program's context. */
static __always_inline void sh_catch_note(void *ctx, __u32 probe, struct sh_catch *c, __u64 start, __u64 now,
					  __u64 detail)
{
	struct sh_catch_rule *rule;
	struct sh_catch_rec *r;
	__u64 th, per_sec, tgid;
	__u32 z = 0;

	if (!sh_catch_armed)
		return;
	rule = bpf_map_lookup_elem(&sh_catch_rules, &probe);
	if (!rule)
		return;
	th = rule->threshold_ns;
	if (!th || now - start < th)
		return;
	per_sec = rule->per_sec;
	if (per_sec) {
		if (now - c->win_ns >= 1000000000ull) {
			c->win_ns = now;
			c->win_sent = 0;
		}
		if (c->win_sent >= per_sec) {
			SH_INC(&c->rate_drops);
			return;
		}
	}
	r = bpf_map_lookup_elem(&sh_catch_scratch, &z);
	if (!r) {
		SH_INC(&c->full_drops);
		return;
	}
	r->ts = now;
	r->dur_ns = now - start;
	r->detail = detail & ~SH_CATCH_DETAIL_SET;
	r->flags = (detail & SH_CATCH_DETAIL_SET) ? SH_CATCH_F_DETAIL : 0;
	r->irq_ns = r->softirq_ns = r->nmi_ns = 0;
	if (sh_catch_irq)
		sh_irq_overlap(r, start, now);
	r->steal_ns = 0;
	if (probe < 32 && (sh_catch_steal & (1u << probe)))
		sh_steal_take(r, probe, start);
	r->cpu = bpf_get_smp_processor_id();
	tgid = bpf_get_current_pid_tgid();
	r->pid = (__u32)tgid;
	r->tgid = (__u32)(tgid >> 32);
	r->probe = (__u16)probe;
	r->pad = 0;
	bpf_get_current_comm(r->comm, sizeof(r->comm));
	r->stack_bytes = bpf_get_stack(ctx, r->stack, sizeof(r->stack), 0);
	{
		long e = bpf_perf_event_output(ctx, &sh_catch_events, BPF_F_CURRENT_CPU, r, sizeof(*r));

		if (e) {
			SH_INC(&c->full_drops);
			if (e != -SH_ENOSPC) {
				__u64 *n = bpf_map_lookup_elem(&sh_catch_fails, &z);

				if (n)
					*n += 1;
			}
			return;
		}
	}
	c->win_sent += 1;
	SH_INC(&c->caught);
}

/* Function entry of probe (enum sh_probe_id) at time now (ns). Interrupts nest calls at most two or three
 * deep on one CPU; a full stack means exits were lost (a kretprobe out of
 * instances, an entry seen before the exit program attached), so it is reset
 * rather than left full forever: counted in 'nested', timing resumes. */
static __always_inline void sh_func_enter(__u32 probe, struct sh_func *f, __u64 now)
{
	__u64 d = f->t.depth;

	SH_INC(&f->calls);
	if (d >= SH_MAX_DEPTH) {
		SH_INC(&f->nested);
		d = 0;
	}
	f->t.ts[SH_BOUND(d, SH_MAX_DEPTH)] = now;
	if (sh_catch_armed)
		f->t.detail[SH_BOUND(d, SH_MAX_DEPTH)] = 0;
	sh_steal_mark(probe, d, now);
	f->t.depth = d + 1;
}

/* --catch: the detail (abi.h sh_catch_rec.detail) of the innermost open entry. */
static __always_inline void sh_func_detail(struct sh_func *f, __u64 detail)
{
	__u64 d = f->t.depth;

	if (sh_catch_armed && d > 0 && d <= SH_MAX_DEPTH)
		f->t.detail[SH_BOUND(d - 1, SH_MAX_DEPTH)] = detail | SH_CATCH_DETAIL_SET;
}

/* Function exit at time now (ns): times the innermost open entry (and hands it to
 * --catch: probe is its enum sh_probe_id, ctx the program's context). */
static __always_inline void sh_func_exit(void *ctx, __u32 probe, struct sh_func *f, __u64 now)
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
		if (now >= start) {
			sh_hist_add(probe, &f->lat, now - start);
			sh_catch_note(ctx, probe, &f->c, start, now, f->t.detail[SH_BOUND(d, SH_MAX_DEPTH)]);
		}
	}
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
SH_PERCPU_ONE(sh_exact_fails, __u64);

/*
 * Gap state (abi.h struct sh_gap_slot): .rodata sh_gaps = 1 keeps it (the default; 0 and
 * the verifier drops sh_gap_note as dead code). The slots and the routes are one map each,
 * created by user space and shared by every object (weak definitions, as sh_exact_events).
 */
const volatile __u32 sh_gaps __weak = 0;
SH_SLOT_MAP(sh_gap_slots, struct sh_gap_slot) __weak;
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
