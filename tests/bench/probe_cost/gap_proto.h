/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The gap state prototype of tests/bench/probe_cost/handlers.bpf.c, shared with the
 * benchmark's driver (tests/bench/probe_cost.cpp), which reads the tables back. */
#ifndef SCHEDHOT_BENCH_GAP_PROTO_H
#define SCHEDHOT_BENCH_GAP_PROTO_H
#include "schedhot/abi.h"

#define PC_GAP_LINES 16
struct pc_gap_line {
	__u32 tag;  /* line id + 1, 0 free */
	__u32 pad;
	__u64 last_a, last_w;
	__u32 ww[SH_GAP_BUCKETS], wa[SH_GAP_BUCKETS], ra[SH_GAP_BUCKETS];
};
struct pc_gap_slot {
	struct pc_gap_line line[PC_GAP_LINES];
} __attribute__((aligned(SH_SLOT_ALIGN)));
#endif
