/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * schedhot ABI: the one header shared by the BPF programs (bpf/NAME.bpf.c) and the
 * C++ front end. Fixed-width types only; every struct here is the value of a
 * BPF array map with one element per possible CPU (index = CPU id), mapped
 * read-only into user space with BPF_F_MMAPABLE.
 *
 * Rule: a probe writes only the element of the CPU it runs on. Every per-CPU
 * slot is aligned (and therefore sized) to SH_SLOT_ALIGN bytes, so two CPUs
 * never write the same cacheline (128 B also keeps the adjacent-line
 * prefetcher of Intel cores from pairing two CPUs' slots).
 *
 * Every counter is a cumulative __u64 that only grows while the programs are
 * attached; user space derives rates from two adjacent samples.
 */
#ifndef SCHEDHOT_ABI_H
#define SCHEDHOT_ABI_H

#ifdef __bpf__
/* vmlinux.h provides __u64 and friends */
#else
#include <linux/types.h>
#endif

#define SH_ABI_VERSION 1
#define SH_SLOT_ALIGN 128

/* Probe ids: index of the probe table (src/probe/catalog.cpp) and of the maps. */
enum sh_probe_id {
	SH_P_NOHZ_EXIT = 0,      /* nohz_balance_exit_idle() */
	SH_P_NOHZ_ENTER = 1,     /* nohz_balance_enter_idle() */
	SH_P_NOHZ_KICK = 2,      /* nohz_balancer_kick() (inlined: its caller) */
	SH_P_ILB_KICK = 3,       /* csd:csd_queue_cpu / csd_function_entry, func == nohz_csd_func */
	SH_P_CPUPRI_SET = 4,     /* cpupri_set() */
	SH_P_CPUPRI_FIND = 5,    /* cpupri_find_fitness() */
	SH_P_BCAST_LOCK = 6,     /* functions that take tick_broadcast_lock */
	SH_P_BCAST_WAIT = 7,     /* lock:contention_begin/end on tick_broadcast_lock */
	SH_P_IDLE = 8,           /* power:cpu_idle */
	SH_NPROBES = 9,
};

/*
 * Latency histogram geometry: log-linear, HdrHistogram-like.
 * Values 0..15 ns have one bucket each. A value v >= 16 with most significant
 * bit m (2^m <= v < 2^(m+1)) goes to group g = m - 4, sub-bucket
 * s = (v >> g) & 15, index 16 + 16*g + s. Bucket (g, s) covers
 * [(16+s) << g, (17+s) << g): its width is at most 1/16 of its lower bound.
 * Groups run to m = 34, so buckets cover 0 ns .. 2^35 ns (34.4 s); larger
 * values are clamped into the last bucket (max_ns keeps the true maximum).
 * A percentile reported as the midpoint of its bucket is within +-1/32
 * (3.125 %) of the exact nearest-rank value (see src/model/histogram.h).
 */
#define SH_HIST_SUB_BITS 4
#define SH_HIST_SUB (1u << SH_HIST_SUB_BITS)
#define SH_HIST_MAX_MSB 34
#define SH_HIST_GROUPS (SH_HIST_MAX_MSB - SH_HIST_SUB_BITS + 1)
#define SH_HIST_BUCKETS (SH_HIST_SUB + SH_HIST_GROUPS * SH_HIST_SUB) /* 512 */

/* Latency histogram, ns. */
struct sh_hist {
	__u64 sum_ns;                   /* sum of all recorded values, ns */
	__u64 max_ns;                   /* largest value recorded, ns */
	__u64 bucket[SH_HIST_BUCKETS];  /* counts per log-linear bucket */
};

/*
 * Change marks (issue 32: a sample costs what changed). One struct per possible CPU in a
 * mapped array (bpf/common.bpf.h sh_slot_marks, created by user space and shared by every
 * object), written only by the CPU it belongs to: after a program writes a probe's slot it
 * adds 1 to gen[probe] (sh_mark), and a histogram add adds 1 to chunk[probe][bucket / 8]
 * after the bucket (sh_hist_add). The sampler (src/probe/records.h copy_slots) keeps what
 * it read of them with the words it copied: a CPU whose gen did not move is not read at
 * all, and of a histogram only the chunks whose count moved are (plus sum_ns, max_ns).
 * Both are written after the words they mark, by fully ordered atomic adds (sh_mark), so a
 * mark seen unmoved means none of those words was written, and a mark seen moved, that
 * they were. A u32 chunk count wraps after 2^32 adds between two samples; the sampler then
 * reads every chunk (gen moved at least that much too).
 */
#define SH_MARK_CHUNK_WORDS 8                                      /* buckets per chunk */
#define SH_MARK_CHUNKS (SH_HIST_BUCKETS / SH_MARK_CHUNK_WORDS)     /* 64 */
#define SH_MARK_GENS 16                                            /* >= SH_NPROBES, one 128-byte line */
struct sh_cpu_marks {
	__u64 gen[SH_MARK_GENS];                /* per probe: programs that wrote its slot */
	__u32 chunk[SH_NPROBES][SH_MARK_CHUNKS];  /* per probe: adds to its histogram's chunk */
} __attribute__((aligned(SH_SLOT_ALIGN)));

/* Most significant set bit of v (v > 0), without __builtin_clzll: Debian
 * 12's clang-14 crashes lowering clz for -target bpf. */
static inline __u32 sh_msb64(__u64 v)
{
	__u32 r = 0;
	if (v >> 32) { v >>= 32; r += 32; }
	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8) { v >>= 8; r += 8; }
	if (v >> 4) { v >>= 4; r += 4; }
	if (v >> 2) { v >>= 2; r += 2; }
	if (v >> 1) { r += 1; }
	return r;
}

/* Bucket index of a value in ns: [0, SH_HIST_BUCKETS). */
static inline __u32 sh_hist_index(__u64 v)
{
	__u32 m, g;
	if (v < SH_HIST_SUB)
		return (__u32)v;
	m = sh_msb64(v);
	if (m > SH_HIST_MAX_MSB)
		return SH_HIST_BUCKETS - 1;
	g = m - SH_HIST_SUB_BITS;
	return SH_HIST_SUB + g * SH_HIST_SUB + (__u32)((v >> g) & (SH_HIST_SUB - 1));
}

/* Lowest value (ns) that falls into bucket i. */
static inline __u64 sh_hist_lower(__u32 i)
{
	__u32 g, s;
	if (i < SH_HIST_SUB)
		return i;
	g = (i - SH_HIST_SUB) / SH_HIST_SUB;
	s = (i - SH_HIST_SUB) % SH_HIST_SUB;
	return ((__u64)(SH_HIST_SUB + s)) << g;
}

/* Width (ns) of bucket i: 1 below 16 ns, then 2^g. */
static inline __u64 sh_hist_width(__u32 i)
{
	if (i < SH_HIST_SUB)
		return 1;
	return 1ull << ((i - SH_HIST_SUB) / SH_HIST_SUB);
}

/*
 * Gap histogram geometry (the gap model of the coherence estimate, issue 29):
 * the time between one CPU's consecutive accesses to one line, two buckets per
 * octave. Bucket 0 holds gaps below 256 ns; a gap v >= 256 with most
 * significant bit m (8 <= m <= 35) goes to 1 + 2*(m-8) + bit m-1 of v, so
 * bucket b >= 1 covers [2^m + s*2^(m-1), 2^m + (s+1)*2^(m-1)) with
 * m = 8 + (b-1)/2, s = (b-1)%2 (a width of 1/2 or 1/3 of its lower bound);
 * gaps of 2^36 ns (68.7 s) and more go to the last bucket.
 */
#define SH_GAP_MIN_MSB 8
#define SH_GAP_MAX_MSB 35
#define SH_GAP_BUCKETS (2 + 2 * (SH_GAP_MAX_MSB - SH_GAP_MIN_MSB + 1)) /* 58 */

/* Gap bucket of v ns: [0, SH_GAP_BUCKETS). */
static inline __u32 sh_gap_index(__u64 v)
{
	__u32 m;
	if (v < (1ull << SH_GAP_MIN_MSB))
		return 0;
	m = sh_msb64(v);
	if (m > SH_GAP_MAX_MSB)
		return SH_GAP_BUCKETS - 1;
	return 1 + 2 * (m - SH_GAP_MIN_MSB) + (__u32)((v >> (m - 1)) & 1);
}

/*
 * Gap state (issue 29): per CPU, per cacheline it touches, the time of its last access
 * and last write and three histograms of the gaps before its accesses, what the gap
 * model (src/model/gaps.h) turns into transfers. Kept by every probe at the places that
 * send --exact records (bpf/common.bpf.h sh_access), in one shared per-CPU array
 * (sh_gap_slots, BPF_F_MMAPABLE, each CPU writes only its own slot). A counted event
 * (probe, slot word) reaches its lines through a route that user space writes before
 * the baseline sample (sh_gap_routes, src/probe/gap_state.h): up to SH_GAP_TARGETS
 * targets, each a line id base plus the CPU's offset (a cpumask word, an int per CPU).
 * A line's entry is claimed at its first access and kept for the run; a CPU that
 * touches more than SH_GAP_LINES lines counts the rest in `full` (those lines are
 * modeled as independent arrivals for it).
 */
#define SH_GAP_LINES 16
#define SH_GAP_TARGETS 6
#define SH_GAP_ROUTE_WORDS 1024   /* route index: probe * SH_GAP_ROUTE_WORDS + slot word */

/* sh_gap_line.flags (private to BPF) */
#define SH_GAP_SEEN_A 1u  /* this CPU has accessed the line */
#define SH_GAP_SEEN_W 2u  /* it has written it */
#define SH_GAP_ARM_A  4u  /* last_a is a sampled access: its next access records the gap */
#define SH_GAP_ARM_W  8u  /* last_w is a sampled write: its next write records the gap */
#define SH_GAP_ARM_AW 16u /* the armed access (ARM_A) wrote */

struct sh_gap_line {
	__u32 id;       /* line id + 1 (Meta gap_lines index + 1); 0: free */
	__u32 flags;    /* private: SH_GAP_SEEN_* | SH_GAP_ARM_* */
	__u64 last_a;   /* private: this CPU's last sampled access to the line, ns */
	__u64 last_w;   /* private: its last sampled write, ns */
	__u32 ww[SH_GAP_BUCKETS];  /* writes by the gap since this CPU's previous write */
	__u32 wa[SH_GAP_BUCKETS];  /* writes by the gap since its previous access */
	__u32 ra[SH_GAP_BUCKETS];  /* reads by the gap since its previous access */
};

/*
 * Sampling (issue 29's cost goal): an event is sampled with probability 1/period (a
 * per-CPU countdown reloaded at random from [1, 2 period - 1], so no alternation of
 * events aliases with it); a sampled access arms its lines and the CPU's next access
 * to each line records the gap before it (each access's gap is recorded with the
 * probability its predecessor was sampled: 1/period, whatever its kind). Only a sampled
 * event, or one that touches an armed line (armed_mask: bit id % 64 of each), reads the
 * clock and searches the table; while lines are armed the other events compute their
 * route's line ids to tell, the rest cost a lookup and a decrement. An armed line this
 * CPU does not touch again within SH_GAP_KEEP events is closed at the gap so far (a
 * lower bound, counted in `censored`). period 0 or 1: every event, the gaps exact.
 * User space sets period from the CPU's rate of events (src/probe/attacher.h gap_period).
 */
#define SH_GAP_KEEP 1024

struct sh_gap_slot {
	__u64 full;     /* line accesses not kept: every entry held another line */
	__u32 period;   /* written by user space: 1 event in period sampled (0, 1: all) */
	__u32 countdown;/* private: events to the next sample */
	__u32 rng;      /* private: xorshift32 state */
	__u32 armed;    /* private: armed gaps (SH_GAP_ARM_* flags set) */
	__u32 slow;     /* private: events while armed since the last sample */
	__u32 pad;
	__u64 events;   /* events noted (sampled or not): user space's rate */
	__u64 censored; /* armed gaps closed at their lower bound after SH_GAP_KEEP events */
	__u64 armed_mask; /* private: bit (id % 64) of each armed line (0 when none) */
	__u64 samples;  /* events sampled: user space scales the counts by events / samples */
	struct sh_gap_line line[SH_GAP_LINES];
} __attribute__((aligned(SH_SLOT_ALIGN)));

/* One target of a route: the line of an access from CPU c is
 *   fixed: id0;  bit: id0 + ((base + (c / 64) * 8) >> shift);  int32: id0 + ((base + 4c) >> shift)
 * (line ids + 1, as sh_gap_line.id). An event touches each line once, as a write if any
 * of its targets there writes (model/lines.h event_lines): where a per-CPU target lands on
 * the line of an earlier target of the route, user space says so by CPU range, so the
 * program needs no comparison: CPUs in [skip_lo, skip_hi) skip this target, CPUs in
 * [up_lo, up_hi) note it as a write (a later target of the same line writes). */
enum sh_gap_mode { SH_GAP_FIXED = 0, SH_GAP_BIT = 1, SH_GAP_INT32 = 2 };
struct sh_gap_target {
	__s32 id0;
	__u8 mode;      /* enum sh_gap_mode */
	__u8 write;     /* 1: the event writes the line */
	__u8 shift;     /* log2 of the cacheline size */
	__u8 pad;
	__u32 skip_lo, skip_hi;
	__u32 up_lo, up_hi;
	__u32 pad2;
	__u64 base;     /* byte offset of the field in its object (bit, int32) */
};
struct sh_gap_route {
	__u32 n;        /* targets in use, 0: the event touches no modeled line */
	__u32 pad;
	struct sh_gap_target t[SH_GAP_TARGETS];
};

/*
 * Entry/exit pairing state of a traced function on one CPU. Private to BPF
 * (user space ignores it): a small stack so that a call nested by an
 * interrupt on the same CPU (e.g. nohz_balance_exit_idle from the tick while
 * the hotplug thread is inside it) is timed separately.
 */
#define SH_MAX_DEPTH 4
struct sh_timing {
	__u64 depth;
	__u64 ts[SH_MAX_DEPTH];
	__u64 detail[SH_MAX_DEPTH];  /* --catch: the entry's sh_catch_rec.detail */
};

/*
 * Tail capture (issue 31, --catch). A rule per timed probe (user space writes
 * sh_catch_rules[probe], every CPU only reads it): an event whose duration is
 * at least threshold_ns is "caught" - a struct sh_catch_rec with its kernel
 * stack sent through the per-CPU perf buffers of sh_catch_events - unless this
 * CPU already sent per_sec of them in the current second (a rate drop) or the
 * buffer is full (a full drop). threshold_ns is a histogram bucket's lower
 * bound (user space rounds the asked threshold), so over any window
 *   caught + rate_drops + full_drops == the histogram's count in buckets
 *                                       >= sh_hist_index(threshold_ns)
 * exactly (tests/bpf). The counts are in the probe's slot (struct sh_catch),
 * so they are sampled, recorded and exported like its other counters.
 * With the .rodata sh_catch_armed 0 (no --catch) the verifier drops it all.
 */
#define SH_CATCH_FRAMES 24      /* kernel stack frames kept per caught event */
struct sh_catch_rule {
	__u64 threshold_ns;     /* 0: no rule for this probe */
	__u32 per_sec;          /* caught events per CPU per second, at most; 0: no limit */
	__u32 pad;
};
struct sh_catch {
	__u64 caught;           /* events at or over the threshold sent */
	__u64 rate_drops;       /* not sent: over the rule's per_sec on this CPU */
	__u64 full_drops;       /* not sent: the perf buffer refused (full) */
	__u64 win_ns;           /* private: start of this CPU's current rate second */
	__u64 win_sent;         /* private: events sent in it */
};
/* sh_catch_rec.flags */
#define SH_CATCH_F_IRQ       1   /* irq/softirq/nmi accounting was on: the *_ns are measured */
#define SH_CATCH_F_IRQ_MORE  2   /* more interrupts in the window than the ring kept: the
				  * *_ns are lower bounds */
#define SH_CATCH_F_DETAIL    4   /* detail holds the probe's own value (below) */
#define SH_CATCH_F_STEAL     8   /* steal_ns is measured (the paravirt steal clock read at the
				  * event's start and end); else it is 0 and means "not kept" */
/* sh_catch_rec.detail by probe: cpupri_set: (old + 1) << 16 | (new + 1), converted
 * priorities (0: invalid); idle: the idle state index; bcast_wait (with the holder
 * state, struct sh_bcast_holder): the SH_HOLD_D_* fields below; others: 0 (no flag). */
struct sh_catch_rec {
	__u64 ts;               /* CLOCK_MONOTONIC ns at the event's end */
	__u64 dur_ns;           /* the duration the histogram counted */
	__u64 detail;
	__u64 irq_ns;           /* hard-IRQ time on this CPU inside [ts - dur_ns, ts] */
	__u64 softirq_ns;       /* softirq time (with the hard IRQs inside it) */
	__u64 nmi_ns;           /* NMI time */
	__u64 steal_ns;         /* SH_CATCH_F_STEAL: this vCPU's steal time inside the window (KVM's
				 * steal_time.steal: waiting for the host to run it), at most dur_ns */
	__u32 cpu;
	__u32 pid;              /* the task's thread id (kernel pid) */
	__u32 tgid;
	__u16 probe;            /* enum sh_probe_id */
	__u16 flags;            /* SH_CATCH_F_* */
	__s32 stack_bytes;      /* bpf_get_stack()'s result: bytes of stack[], or < 0 (error) */
	__u32 pad;
	char comm[16];
	__u64 stack[SH_CATCH_FRAMES];
};
/* --catch's steal clock (bpf/common.bpf.h sh_steal_mark): the steal clock read at the start
 * of each open timed event of this CPU, by probe and timing depth (sh_timing's; idle and
 * bcast_wait time one event at a time: depth 0). ts is the event's start (0: not read, or
 * the clock was being updated), so the end finds the mark of its own event. Per-CPU scratch,
 * private to BPF; only with sh_catch_armed and sh_catch_steal. */
struct sh_steal_mark {
	__u64 ts;
	__u64 steal;
};
struct sh_steal_marks {
	struct sh_steal_mark m[SH_NPROBES][SH_MAX_DEPTH];
	__u64 addr;     /* this CPU's steal_time, found at its first read (0: not yet) */
};
/* The interrupt windows of one CPU (irq/softirq/nmi tracepoints, attached only
 * with a rule armed): a ring of the last SH_IRQ_RING finished ones and the
 * start of the open one of each kind. Written only by its CPU. */
#define SH_IRQ_RING 16
enum sh_irq_kind { SH_IRQ_HARD = 0, SH_IRQ_SOFT = 1, SH_IRQ_NMI = 2, SH_IRQ_KINDS = 3 };
struct sh_irq_span {
	__u64 start, end;
	__u64 kind;
};
struct sh_irq_ring {
	__u64 head;                         /* spans written (the next goes at head % SH_IRQ_RING) */
	__u64 open[SH_IRQ_KINDS];           /* start of the open span of each kind, 0: none */
	struct sh_irq_span span[SH_IRQ_RING];
} __attribute__((aligned(SH_SLOT_ALIGN)));

/* A traced function on one CPU: counts and its duration histogram. */
struct sh_func {
	__u64 calls;         /* entries seen */
	__u64 nested;        /* entries that found SH_MAX_DEPTH open entries (exits lost):
			      * the timing stack was reset */
	__u64 orphan_exits;  /* exits seen without an entry (attach raced a call) */
	struct sh_timing t;  /* private */
	struct sh_hist lat;  /* entry-to-exit time, ns */
	struct sh_catch c;   /* --catch counts */
};

/* nohz_balance_exit_idle(struct rq *rq) on one CPU. */
struct sh_nohz_exit_slot {
	struct sh_func f;
	/* calls that found rq->nohz_tick_stopped == 1: the ones that clear the
	 * CPU from nohz.idle_cpus_mask (lock btr) and decrement nohz.nr_cpus,
	 * i.e. that write the nohz cacheline. */
	__u64 worked;
	/* private to the tick proxy: SH_TICK_OPEN | rq->nohz_tick_stopped, from the tick
	 * timer's expire_entry to its expire_exit on this CPU; 0 outside. */
	__u64 tick;
} __attribute__((aligned(SH_SLOT_ALIGN)));

#define SH_TICK_OPEN 2ULL  /* sh_nohz_exit_slot.tick: an entry was seen */

/* nohz_balance_enter_idle(int cpu) on one CPU. */
struct sh_nohz_enter_slot {
	__u64 calls;
	/* calls that found rq->nohz_tick_stopped == 0: they set the CPU in
	 * nohz.idle_cpus_mask (lock bts); every call writes nohz.has_blocked. */
	__u64 first;
} __attribute__((aligned(SH_SLOT_ALIGN)));

/* nohz_balancer_kick(struct rq *rq), or the function it is inlined into. */
struct sh_nohz_kick_slot {
	struct sh_func f;
	__u64 idle_ticks;    /* calls with rq->idle_balance set: returns at once */
} __attribute__((aligned(SH_SLOT_ALIGN)));

/* ILB kicks: csd:csd_queue_cpu / csd:csd_function_entry with func == nohz_csd_func. */
#define SH_ILB_FLAGS 16
struct sh_ilb_slot {
	__u64 sent;                     /* kicks queued by this CPU */
	__u64 received;                 /* kicks run on this CPU (it was the ILB target) */
	__u64 sent_self;                /* kicks whose target was this same CPU */
	__u64 flags[SH_ILB_FLAGS];      /* sent kicks by rq->nohz_flags & 0xf of the target
					 * (BALANCE=1 STATS=2 NEWILB=4 NEXT=8) */
} __attribute__((aligned(SH_SLOT_ALIGN)));

/* cpupri: converted priorities (the kernel's convert_prio(), v5.11+):
 * -1 invalid, 0 NORMAL, 1..99 RT, 100 HIGHER (deadline). Classes for the
 * transition matrix: */
enum sh_cpupri_class {
	SH_CP_INVALID = 0,
	SH_CP_NORMAL = 1,
	SH_CP_RT = 2,
	SH_CP_HIGHER = 3,
	SH_CP_NCLASS = 4,
};
#define SH_CPUPRI_VECS 104   /* vector indices 0..101 (102 before v5.11), padded */

/* cpupri_set(struct cpupri *cp, int cpu, int newpri) on one CPU. */
struct sh_cpupri_set_slot {
	struct sh_func f;
	__u64 noop;                                  /* calls with new == old: no write */
	__u64 trans[SH_CP_NCLASS * SH_CP_NCLASS];    /* [old class * 4 + new class] */
	__u64 vec_set[SH_CPUPRI_VECS];               /* cpumask_set_cpu on pri_to_cpu[i] */
	__u64 vec_clear[SH_CPUPRI_VECS];             /* cpumask_clear_cpu on pri_to_cpu[i] */
	__u64 last_pri;    /* private: proxy mode's last cpu_to_pri[cpu] seen, +2 (0 = none) */
} __attribute__((aligned(SH_SLOT_ALIGN)));

/* cpupri_find_fitness() (cpupri_find tail-calls it) on one CPU. */
struct sh_cpupri_find_slot {
	struct sh_func f;
	__u64 found;         /* calls returning 1 (a lowest_mask was found) */
} __attribute__((aligned(SH_SLOT_ALIGN)));

/* Functions that take tick_broadcast_lock, one counter per site (site names
 * and order: src/probe/catalog.cpp, kBcastSites). */
#define SH_BCAST_SITES 8
struct sh_bcast_lock_slot {
	__u64 calls[SH_BCAST_SITES];
} __attribute__((aligned(SH_SLOT_ALIGN)));

/* lock:contention_begin/end on tick_broadcast_lock on one CPU. */
struct sh_bcast_wait_slot {
	__u64 contentions;   /* contention_begin on the lock */
	__u64 ends;          /* contention_end on the lock, timed into lat */
	__u64 all_locks;     /* contention_begin on any lock (shows the tracepoint fires) */
	__u64 learn_sent;    /* stacks sent to user space to learn the lock's address */
	__u64 ts;            /* private: contention_begin time of the waiter on this CPU */
	struct sh_hist lat;  /* wait time begin -> end, ns */
	struct sh_catch c;   /* --catch counts */
} __attribute__((aligned(SH_SLOT_ALIGN)));

/*
 * bcast_wait's holder (--catch with a bcast_wait rule): who held tick_broadcast_lock
 * when a CPU began to wait. Each CPU keeps its own state, written only by itself: the
 * lock-taking site it is inside (bcast_lock's entry and exit programs, the exits
 * attached only for this) and whether it waits on the lock (contention_begin/end). A
 * waiter, at contention_begin on the lock, reads the other CPUs' states: the holder is
 * a CPU inside a site and not waiting (the earliest in, when several are). One array map
 * of these, one element per possible CPU, created by user space and shared by the
 * bcast_lock and bcast_wait objects.
 */
#define SH_HOLD_SITE     0xfull     /* state: site + 1, 0 = inside no site */
#define SH_HOLD_WAITING  0x10ull    /* state: between contention_begin and _end on the lock */
#define SH_HOLD_TS_SHIFT 8          /* state: the site's entry time ns << SH_HOLD_TS_SHIFT */
struct sh_bcast_holder {
	__u64 state;    /* (entry ns << SH_HOLD_TS_SHIFT) | waiting | (site + 1) */
	__u64 found;    /* this CPU's last contention_begin: the detail below */
} __attribute__((aligned(SH_SLOT_ALIGN)));
/* The bcast_wait detail (sh_catch_rec.detail): holder CPU + 1 (0: no CPU was inside
 * a site and not waiting), its site (kBcastSites index), how many CPUs were (mod 2^16)
 * and how long the holder had been inside its site when the wait began (ns, at most
 * SH_HOLD_INSIDE_MAX, 268 ms). */
#define SH_HOLD_INSIDE_MAX     0xfffffffull
#define SH_HOLD_D_CPU(d)       ((d) & 0xffffull)
#define SH_HOLD_D_SITE(d)      (((d) >> 16) & 0xfull)
#define SH_HOLD_D_CANDS(d)     (((d) >> 20) & 0xffffull)
#define SH_HOLD_D_INSIDE_NS(d) ((d) >> 36)

/* power:cpu_idle on one CPU. */
#define SH_IDLE_STATES 8
struct sh_idle_slot {
	__u64 entries;
	__u64 exits;
	__u64 by_state[SH_IDLE_STATES];  /* entries by idle state index (7 = 7 and up) */
	__u64 ts;            /* private: time of the last entry */
	struct sh_hist lat;  /* idle residency entry -> exit, ns */
	struct sh_catch c;   /* --catch counts */
	__u64 state;         /* private: the idle state of the last entry */
} __attribute__((aligned(SH_SLOT_ALIGN)));

/* Record sent through the perf buffer while learning tick_broadcast_lock's
 * address from contention stacks (no KALLSYMS_ALL, no System.map). */
#define SH_LEARN_FRAMES 12
struct sh_learn_event {
	__u64 lock_addr;
	__u32 cpu;
	__u32 nframes;
	__u64 ip[SH_LEARN_FRAMES];
};


/*
 * --exact records (issue 11): with the .rodata flag sh_exact set, every place
 * where a probe increments a counter that one of its modeled field accesses
 * uses (ProbeSpec::accesses, src/probe/modules/) also sends one record
 * through the per-CPU perf buffers of sh_exact_events
 * (BPF_MAP_TYPE_PERF_EVENT_ARRAY, BPF_F_CURRENT_CPU: each CPU writes its own
 * buffer). Off (the default) the flag is a frozen .rodata constant and the
 * verifier prunes the branch: no cost.
 *
 * word: the word offset in the probe's slot of the counter that was
 * incremented; for a counter array, the element's word (base + index).
 * Counters with a `minus` (the case that makes no access) send ONE record per
 * call, whose word says which case happened:
 *   nohz_kick:  f.calls on a busy tick, idle_ticks on an idle tick
 *               (records(calls) = delta(calls) - delta(idle_ticks));
 *   cpupri_set: f.calls when the priority changed, noop when new == old
 *               (records(calls) = delta(calls) - delta(noop)).
 * So a record with a minus counter's word stands for "the base counter and the
 * minus counter were incremented": user space (model/lines.h event_lines)
 * applies the base counter's accesses that have no minus, and not those that
 * subtract it. Other counters send one record per increment (nohz_enter's
 * first call sends calls and first, two records at nearly the same time).
 */
struct sh_exact_rec {
	__u64 ts;     /* bpf_ktime_get_ns(): CLOCK_MONOTONIC ns */
	__u32 cpu;    /* bpf_get_smp_processor_id() */
	__u16 probe;  /* enum sh_probe_id */
	__u16 word;   /* counter word offset in the probe's slot (see above) */
};

#endif /* SCHEDHOT_ABI_H */
