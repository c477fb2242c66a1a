// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Probe cost benchmark (tests/bench/probe_cost.cpp): tick_bcast.bpf.c's real handler code
 * on raw_syscalls:sys_enter (see handlers.bpf.c); included whole, the driver loads only
 * the pc_* programs.
 *
 *   pc_bcast_site   bcast_site_hit (untimed): site 0's count, one gap state access (the
 *                   tick_broadcast_lock line) with its clock read
 */
#include "tick_bcast.bpf.c"
#include "pc_common.h"

SEC("raw_tp/sys_enter")
int pc_bcast_site(void *ctx)
{
	PC_FILTER();
	bcast_site_hit(ctx, 0);
	return 1;
}
