// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * idle probe: power:cpu_idle (drivers/cpuidle/cpuidle.c cpuidle_enter_state,
 * kernel/sched/idle.c default_idle_call). state = idle state index on entry,
 * PWR_EVENT_EXIT (-1) on exit. The rate of idle entries and exits is what
 * drives nohz_balance_enter_idle / nohz_balance_exit_idle and, on machines
 * without ARAT, tick_broadcast_lock.
 */
#include "common.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SH_SLOT_MAP(idle_slots, struct sh_idle_slot);

#define PWR_EVENT_EXIT 0xffffffffu

static __always_inline void idle_event(void *ctx, __u32 state, __u64 now)
{
	struct sh_idle_slot *s = SH_THIS_SLOT(idle_slots);

	if (!s)
		return;
	if (state != PWR_EVENT_EXIT) {
		SH_INC(&s->entries);
		SH_INC(&s->by_state[SH_BOUND(state < SH_IDLE_STATES ? state : SH_IDLE_STATES - 1, SH_IDLE_STATES)]);
		s->ts = now;
		if (sh_catch_armed)
			s->state = state;
		sh_steal_mark(SH_P_IDLE, 0, now);
		sh_mark(SH_P_IDLE);
		return;
	}
	SH_INC(&s->exits);
	if (s->ts && now >= s->ts) {
		sh_hist_add(SH_P_IDLE, &s->lat, now - s->ts);
		sh_catch_note(ctx, SH_P_IDLE, &s->c, s->ts, now, s->state | SH_CATCH_DETAIL_SET);
	}
	s->ts = 0;
	sh_mark(SH_P_IDLE);
}

SEC("tp_btf/cpu_idle")
int BPF_PROG(idle__tp_cpu_idle, unsigned int state, unsigned int cpu_id)
{
	idle_event(ctx, state, bpf_ktime_get_ns());
	return 0;
}

/* ctx: state, timestamp ns */
SEC("raw_tp")
int test_idle(__u64 *ctx)
{
	idle_event(ctx, (__u32)ctx[0], ctx[1]);
	return 0;
}
