// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Probe cost benchmark (tests/bench/probe_cost.cpp): nohz.bpf.c's real handler code on
 * raw_syscalls:sys_enter / sys_exit (see handlers.bpf.c). nohz.bpf.c is included whole;
 * the driver loads only the pc_* programs.
 *
 *   pc_nohz_enter              nohz_enter_hit (untimed): a first stop of the tick, so the
 *                              calls and first counters, two gap state accesses (the nohz
 *                              line and the idle mask word of this CPU), a clock read
 *                              when the gap state samples
 *   pc_nohz_exit_enter / _exit nohz_exit_enter / nohz_exit_exit (timed, as fentry +
 *                              fexit): the entry's clock serves the gap state of `worked`
 *   pc_ilb_recv                ilb_received (untimed): one access (a clock read when sampled)
 */
#include "nohz.bpf.c"
#include "pc_common.h"

SEC("raw_tp/sys_enter")
int pc_nohz_enter(void *ctx)
{
	PC_FILTER();
	nohz_enter_hit(ctx, 0);
	return 1;
}

SEC("raw_tp/sys_enter")
int pc_nohz_exit_enter(void *ctx)
{
	PC_FILTER();
	nohz_exit_enter(ctx, bpf_ktime_get_ns(), 1, true);
	return 1;
}

SEC("raw_tp/sys_exit")
int pc_nohz_exit_exit(void *ctx)
{
	PC_FILTER();
	nohz_exit_exit(ctx, bpf_ktime_get_ns());
	return 1;
}

SEC("raw_tp/sys_enter")
int pc_ilb_recv(void *ctx)
{
	PC_FILTER();
	ilb_received(ctx);
	return 1;
}
