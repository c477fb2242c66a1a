/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Minimal CO-RE kernel type definitions for schedhot's BPF programs.
 *
 * Where this comes from: written by hand and checked in, on purpose. It is
 * NOT generated from /sys/kernel/btf/vmlinux, so the build never depends on
 * the build machine's kernel. Every struct carries preserve_access_index:
 * libbpf relocates each field access against the running kernel's BTF at
 * load time, so only the field NAMES used here must exist in the target
 * kernel (checked on 6.1, 6.12, 6.18 and 7.3). A field missing from a kernel
 * makes only the probe that reads it fail to load, with libbpf's CO-RE error.
 *
 * UAPI constants (map types, flags) come from the system's <linux/bpf.h>.
 * Registers (kprobe arguments) per architecture, as libbpf's bpf_tracing.h
 * reads them for -D__TARGET_ARCH_x86, -D__TARGET_ARCH_arm64 or
 * -D__TARGET_ARCH_powerpc (CMake picks one from CMAKE_SYSTEM_PROCESSOR): x86-64's
 * struct pt_regs, arm64's UAPI struct user_pt_regs, which the kernel's arm64 pt_regs
 * begins with, or powerpc's UAPI pt_regs layout, which the kernel's begins with.
 */
#ifndef __VMLINUX_H__
#define __VMLINUX_H__

#include <linux/types.h>
#include <linux/bpf.h>

typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __u64 u64;
typedef __s32 s32;
typedef __s64 s64;
typedef _Bool bool;
enum { false = 0, true = 1 };

#if defined(__TARGET_ARCH_arm64)
/* arch/arm64/include/uapi/asm/ptrace.h: a fixed UAPI layout (no relocation needed);
 * bpf_tracing.h casts the kprobe context to it (regs[0] is the first argument). */
struct user_pt_regs {
	__u64 regs[31];
	__u64 sp;
	__u64 pc;
	__u64 pstate;
};
struct pt_regs; /* the kprobe context type; only pointed to */
#elif defined(__TARGET_ARCH_powerpc)
/* arch/powerpc/include/uapi/asm/ptrace.h (64-bit): the kernel's struct pt_regs begins with
 * this layout (its user_pt_regs); bpf_tracing.h reads gpr[3..7] (arguments), nip and link
 * through it, fixed offsets (no relocation needed). */
struct pt_regs {
	unsigned long gpr[32];
	unsigned long nip, msr, orig_gpr3, ctr, link, xer, ccr, softe, trap, dar, dsisr, result;
};
#elif !defined(__TARGET_ARCH_x86)
#error "bpf/vmlinux.h: define __TARGET_ARCH_x86, __TARGET_ARCH_arm64 or __TARGET_ARCH_powerpc"
#endif

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

#if defined(__TARGET_ARCH_x86)
/* arch/x86/include/asm/ptrace.h (x86-64) */
struct pt_regs {
	unsigned long r15, r14, r13, r12, bp, bx, r11, r10, r9, r8;
	unsigned long ax, cx, dx, si, di, orig_ax, ip, cs, flags, sp, ss;
};
#endif

typedef struct { int counter; } atomic_t;

/* kernel/sched/cpupri.h */
struct cpupri {
	int *cpu_to_pri;
};

/* kernel/sched/sched.h */
struct root_domain {
	struct cpupri cpupri;
};

struct rq;

struct cfs_rq {
	struct rq *rq; /* CONFIG_FAIR_GROUP_SCHED only; else container_of */
};

struct rq {
	unsigned int nr_running;
	unsigned int ttwu_pending;
	unsigned int nohz_tick_stopped;
	atomic_t nohz_flags;
	struct cfs_rq cfs;
	struct root_domain *rd;
	unsigned char idle_balance;
	int cpu;
};

/* include/linux/sched.h */
struct sched_entity {
	struct cfs_rq *cfs_rq;
};

struct task_struct {
	int pid;
	struct sched_entity se;
};

/* include/linux/smp_types.h, include/linux/smp.h */
struct __call_single_data {
	void *info;
};

/* include/linux/hrtimer_types.h */
struct hrtimer {
	void *function;
};

#pragma clang attribute pop

#endif /* __VMLINUX_H__ */
