// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * nohz idle-load-balancer probes: nohz_exit, nohz_enter, nohz_kick, ilb_kick.
 * Mirrors kernel/sched/fair.c (nohz_balance_exit_idle, nohz_balance_enter_idle,
 * nohz_balancer_kick/kick_ilb) and kernel/smp.c (csd tracepoints).
 *
 * Program names are <probe>__<backend>[_<role>]; user space (src/probe/attach.cpp)
 * picks programs by that name and enables only the backend it resolved.
 * test_* programs wrap the same handler cores for BPF_PROG_TEST_RUN.
 */
#include "common.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Filled by user space before load (src/probe/attach.cpp). */
const volatile __u64 sh_nohz_csd_func = 0;   /* &nohz_csd_func from kallsyms */
const volatile __u64 sh_tick_fn[2] = {};     /* tick_nohz_handler / tick_sched_timer */

SH_SLOT_MAP(nohz_exit_slots, struct sh_nohz_exit_slot);
SH_SLOT_MAP(nohz_enter_slots, struct sh_nohz_enter_slot);
SH_SLOT_MAP(nohz_kick_slots, struct sh_nohz_kick_slot);
SH_SLOT_MAP(ilb_kick_slots, struct sh_ilb_slot);

/* ---- nohz_exit: nohz_balance_exit_idle(struct rq *rq) ---------------- */

/* timed: an fentry/kprobe entry whose exit follows; else a proxy count. */
static __always_inline void nohz_exit_enter(void *ctx, __u64 now, __u64 tick_stopped, bool timed)
{
	struct sh_nohz_exit_slot *s = SH_THIS_SLOT(nohz_exit_slots);

	if (!s)
		return;
	if (timed)
		sh_func_enter(SH_P_NOHZ_EXIT, &s->f, now);
	else
		SH_INC(&s->f.calls);
	if (tick_stopped) {
		SH_INC(&s->worked);
		sh_access(ctx, SH_P_NOHZ_EXIT, SH_WORD(struct sh_nohz_exit_slot, worked), now);
	}
	sh_mark(SH_P_NOHZ_EXIT);
}

static __always_inline void nohz_exit_exit(void *ctx, __u64 now)
{
	struct sh_nohz_exit_slot *s = SH_THIS_SLOT(nohz_exit_slots);

	if (s) {
		sh_func_exit(ctx, SH_P_NOHZ_EXIT, &s->f, now);
		sh_mark(SH_P_NOHZ_EXIT);
	}
}

SEC("fentry")
int BPF_PROG(nohz_exit__fentry, struct rq *rq)
{
	nohz_exit_enter(ctx, bpf_ktime_get_ns(), BPF_CORE_READ(rq, nohz_tick_stopped), true);
	return 0;
}

SEC("fexit")
int BPF_PROG(nohz_exit__fexit, struct rq *rq)
{
	nohz_exit_exit(ctx, bpf_ktime_get_ns());
	return 0;
}

SEC("kprobe")
int BPF_KPROBE(nohz_exit__kprobe, struct rq *rq)
{
	nohz_exit_enter(ctx, bpf_ktime_get_ns(), BPF_CORE_READ(rq, nohz_tick_stopped), true);
	return 0;
}

SEC("kretprobe")
int BPF_KRETPROBE(nohz_exit__kretprobe)
{
	nohz_exit_exit(ctx, bpf_ktime_get_ns());
	return 0;
}

/*
 * Proxy: the tick. sched_tick() (kernel/sched/core.c) sets
 * rq->idle_balance = idle_cpu(cpu) and sched_balance_trigger() ->
 * nohz_balancer_kick() (kernel/sched/fair.c) returns when it is set, else
 * calls nohz_balance_exit_idle(rq): so a tick timer that leaves
 * rq->idle_balance clear stands for one call. Read at hrtimer_expire_exit,
 * after the callback: the kernel's own idle_cpu() verdict of this tick, a
 * field only this CPU writes (sched_tick, nohz_csd_func), so every program on
 * the tracepoint reads the same value (reading idle_cpu()'s inputs at the entry
 * raced remote wakeups: two programs differed by 2 %). rq->nohz_tick_stopped,
 * which the call clears, is kept from hrtimer_expire_entry in the slot's
 * private word (SH_TICK_OPEN marks it: an exit without its entry, the attach
 * race, counts nothing). Counts only, no duration.
 */
static __always_inline __u64 current_rq_tick_stopped(void)
{
	struct rq *rq = sh_current_rq();

	return rq ? BPF_CORE_READ(rq, nohz_tick_stopped) : 1;
}

static __always_inline bool is_tick_timer(struct hrtimer *timer)
{
	__u64 fn = (__u64)BPF_CORE_READ(timer, function);

	return fn && (fn == sh_tick_fn[0] || fn == sh_tick_fn[1]);
}

static __always_inline void nohz_exit_tick_entry(__u64 tick_stopped)
{
	struct sh_nohz_exit_slot *s = SH_THIS_SLOT(nohz_exit_slots);

	if (s)
		s->tick = SH_TICK_OPEN | !!tick_stopped;
}

static __always_inline void nohz_exit_tick_exit(void *ctx, __u64 idle_balance)
{
	struct sh_nohz_exit_slot *s = SH_THIS_SLOT(nohz_exit_slots);
	__u64 open;

	if (!s)
		return;
	open = s->tick;
	s->tick = 0;
	if (!(open & SH_TICK_OPEN) || idle_balance)
		return; /* idle_cpu(): nohz_balancer_kick() returned before the call */
	nohz_exit_enter(ctx, 0, open & 1, false);
}

SEC("tp_btf/hrtimer_expire_entry")
int BPF_PROG(nohz_exit__tp_tick, struct hrtimer *timer, void *now)
{
	if (is_tick_timer(timer))
		nohz_exit_tick_entry(current_rq_tick_stopped());
	return 0;
}

SEC("tp_btf/hrtimer_expire_exit")
int BPF_PROG(nohz_exit__tp_tick_exit, struct hrtimer *timer)
{
	struct rq *rq;

	if (!is_tick_timer(timer))
		return 0;
	rq = sh_current_rq();
	if (!rq)
		return 0;
	if (bpf_core_field_exists(rq->idle_balance))
		nohz_exit_tick_exit(ctx, BPF_CORE_READ(rq, idle_balance));
	else /* a kernel without it: idle_cpu() evaluated here (racy against remote wakeups) */
		nohz_exit_tick_exit(ctx, sh_current_pid() == 0 && BPF_CORE_READ(rq, nr_running) == 0 &&
					 !(bpf_core_field_exists(rq->ttwu_pending) && BPF_CORE_READ(rq, ttwu_pending)));
	return 0;
}

/* ---- nohz_enter: nohz_balance_enter_idle(int cpu) -------------------- */

static __always_inline void nohz_enter_hit(void *ctx, __u64 tick_stopped)
{
	struct sh_nohz_enter_slot *s = SH_THIS_SLOT(nohz_enter_slots);
	/* one clock read for both --exact records; the gap state reads it only when it samples */
	__u64 now = sh_exact ? bpf_ktime_get_ns() : 0;

	if (!s)
		return;
	SH_INC(&s->calls);
	sh_access(ctx, SH_P_NOHZ_ENTER, SH_WORD(struct sh_nohz_enter_slot, calls), now);
	if (!tick_stopped) {
		SH_INC(&s->first);
		sh_access(ctx, SH_P_NOHZ_ENTER, SH_WORD(struct sh_nohz_enter_slot, first), now);
	}
	sh_mark(SH_P_NOHZ_ENTER);
}

SEC("fentry")
int BPF_PROG(nohz_enter__fentry, int cpu)
{
	nohz_enter_hit(ctx, current_rq_tick_stopped());
	return 0;
}

SEC("kprobe")
int BPF_KPROBE(nohz_enter__kprobe, int cpu)
{
	nohz_enter_hit(ctx, current_rq_tick_stopped());
	return 0;
}

/*
 * Proxy: timer:tick_stop(success=1) on the idle task. tick_nohz_idle_stop_tick()
 * emits it right before it calls nohz_balance_enter_idle() (kernel/time/tick-sched.c).
 */
SEC("tp_btf/tick_stop")
int BPF_PROG(nohz_enter__tp_tick_stop, int success, int dependency)
{
	if (success != 1 || sh_current_pid() != 0)
		return 0;
	nohz_enter_hit(ctx, current_rq_tick_stopped());
	return 0;
}

/* ---- nohz_kick: nohz_balancer_kick(struct rq *rq), usually inlined --- */

static __always_inline void nohz_kick_enter(void *ctx, __u64 now, __u64 idle_balance)
{
	struct sh_nohz_kick_slot *s = SH_THIS_SLOT(nohz_kick_slots);

	if (!s)
		return;
	sh_func_enter(SH_P_NOHZ_KICK, &s->f, now);
	if (idle_balance)
		SH_INC(&s->idle_ticks);
	/* one record per call: idle_ticks on an idle tick, calls on a busy one (abi.h) */
	sh_access(ctx, SH_P_NOHZ_KICK, idle_balance ? SH_WORD(struct sh_nohz_kick_slot, idle_ticks)
						    : SH_WORD(struct sh_nohz_kick_slot, f.calls), now);
	sh_mark(SH_P_NOHZ_KICK);
}

static __always_inline void nohz_kick_exit(void *ctx, __u64 now)
{
	struct sh_nohz_kick_slot *s = SH_THIS_SLOT(nohz_kick_slots);

	if (s) {
		sh_func_exit(ctx, SH_P_NOHZ_KICK, &s->f, now);
		sh_mark(SH_P_NOHZ_KICK);
	}
}

SEC("fentry")
int BPF_PROG(nohz_kick__fentry, struct rq *rq)
{
	nohz_kick_enter(ctx, bpf_ktime_get_ns(), BPF_CORE_READ(rq, idle_balance));
	return 0;
}

SEC("fexit")
int BPF_PROG(nohz_kick__fexit, struct rq *rq)
{
	nohz_kick_exit(ctx, bpf_ktime_get_ns());
	return 0;
}

SEC("kprobe")
int BPF_KPROBE(nohz_kick__kprobe, struct rq *rq)
{
	nohz_kick_enter(ctx, bpf_ktime_get_ns(), BPF_CORE_READ(rq, idle_balance));
	return 0;
}

SEC("kretprobe")
int BPF_KRETPROBE(nohz_kick__kretprobe)
{
	nohz_kick_exit(ctx, bpf_ktime_get_ns());
	return 0;
}

/* ---- ilb_kick: csd:csd_queue_cpu / csd:csd_function_entry ------------ */

static __always_inline void ilb_sent(void *ctx, __u32 target, __u32 this_cpu, __u64 flags)
{
	struct sh_ilb_slot *s = SH_THIS_SLOT(ilb_kick_slots);

	if (!s)
		return;
	SH_INC(&s->sent);
	if (target == this_cpu)
		SH_INC(&s->sent_self);
	SH_INC(&s->flags[SH_BOUND(flags, SH_ILB_FLAGS)]);
	sh_access(ctx, SH_P_ILB_KICK, SH_WORD(struct sh_ilb_slot, flags) + (__u16)SH_BOUND(flags, SH_ILB_FLAGS), 0);
	sh_mark(SH_P_ILB_KICK);
}

static __always_inline void ilb_received(void *ctx)
{
	struct sh_ilb_slot *s = SH_THIS_SLOT(ilb_kick_slots);

	if (!s)
		return;
	SH_INC(&s->received);
	sh_access(ctx, SH_P_ILB_KICK, SH_WORD(struct sh_ilb_slot, received), 0);
	sh_mark(SH_P_ILB_KICK);
}

/* raw_tp, not tp_btf: the verifier refuses tp_btf reads of the func argument
 * (a function pointer). args: cpu, callsite, func, csd. csd->info is the
 * target rq (INIT_CSD(&rq->nohz_csd, nohz_csd_func, rq)). */
SEC("raw_tp/csd_queue_cpu")
int ilb_kick__tp_queue(__u64 *ctx)
{
	struct __call_single_data *csd = (void *)ctx[3];
	struct rq *rq;
	__u64 flags = 0;

	if (!sh_nohz_csd_func || ctx[2] != sh_nohz_csd_func)
		return 0;
	rq = BPF_CORE_READ(csd, info);
	if (rq)
		flags = BPF_CORE_READ(rq, nohz_flags.counter);
	ilb_sent(ctx, (__u32)ctx[0], bpf_get_smp_processor_id(), flags);
	return 0;
}

/* args: func, csd */
SEC("raw_tp/csd_function_entry")
int ilb_kick__tp_entry(__u64 *ctx)
{
	if (!sh_nohz_csd_func || ctx[0] != sh_nohz_csd_func)
		return 0;
	ilb_received(ctx);
	return 0;
}

/* ---- BPF_PROG_TEST_RUN wrappers (tests/bpf) --------------------------- */

/* ctx: op (0 entry, 1 exit, 2 proxy count, 3 tick entry, 4 tick exit), timestamp ns,
 * flag (nohz_tick_stopped; for op 4 rq->idle_balance) */
SEC("raw_tp")
int test_nohz_exit(__u64 *ctx)
{
	if (ctx[0] == 0)
		nohz_exit_enter(ctx, ctx[1], ctx[2], true);
	else if (ctx[0] == 2)
		nohz_exit_enter(ctx, ctx[1], ctx[2], false);
	else if (ctx[0] == 3)
		nohz_exit_tick_entry(ctx[2]);
	else if (ctx[0] == 4)
		nohz_exit_tick_exit(ctx, ctx[2]);
	else
		nohz_exit_exit(ctx, ctx[1]);
	return 0;
}

/* ctx: tick_stopped */
SEC("raw_tp")
int test_nohz_enter(__u64 *ctx)
{
	nohz_enter_hit(ctx, ctx[0]);
	return 0;
}

/* ctx: op (0 entry, 1 exit), timestamp ns, flag (idle_balance) */
SEC("raw_tp")
int test_nohz_kick(__u64 *ctx)
{
	if (ctx[0] == 0)
		nohz_kick_enter(ctx, ctx[1], ctx[2]);
	else
		nohz_kick_exit(ctx, ctx[1]);
	return 0;
}

/* ctx: op (0 sent, 1 received), target cpu, nohz_flags */
SEC("raw_tp")
int test_ilb_kick(__u64 *ctx)
{
	if (ctx[0] == 0)
		ilb_sent(ctx, (__u32)ctx[1], bpf_get_smp_processor_id(), ctx[2]);
	else
		ilb_received(ctx);
	return 0;
}
