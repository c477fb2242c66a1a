// --catch's steal time (issue 31): whether this machine keeps a paravirt steal clock the
// BPF programs can read (bpf/common.bpf.h sh_steal_read: the per-CPU kvm_steal_time of a
// KVM guest), so the loader sets the .rodata sh_catch_steal only where it exists, and
// where the programs find it (sh_steal_rq_delta).
#pragma once
#include <cstdint>
#include <string>

namespace schedhot {

/// What a report says when no caught event carries a steal time (abi.h SH_CATCH_F_STEAL).
inline constexpr const char* kStealNotKept = "not kept on this machine (no paravirt steal clock)";

/// The paravirt steal clock as the programs read it.
struct StealClock {
  std::string reason;      ///< "" when kept and found, else why not (one line)
  int64_t rq_delta = 0;    ///< &steal_time - &runqueues on every CPU (bytes), when kept
};

/// The running kernel's steal clock. It is kept when the kernel runs as a KVM guest whose
/// hypervisor offers KVM_FEATURE_STEAL_TIME (CPUID leaf KVM_CPUID_FEATURES, found as
/// arch/x86/kernel/kvm.c finds it: the "KVMKVMKVM" signature in 0x40000000..0x4000ff00),
/// which kvm_guest_init() checks before it registers each CPU's steal_time with
/// MSR_KVM_STEAL_TIME; and the programs find it when the kernel's BTF (btf_path, "" for
/// the running kernel's) places the per-CPU variables steal_time and runqueues in its
/// .data..percpu section (their offsets there give rq_delta: a per-CPU variable's address
/// is the CPU's base plus its offset). x86-64 only. The programs still check the clock at
/// each read (version 0: never written, as under a hypervisor that does not keep it).
StealClock find_steal_clock(const std::string& btf_path = "");

/// find_steal_clock().reason.
std::string steal_clock_reason();

/// The reason from its parts (for tests): arch_ok: x86-64; has_kvm: the KVM CPUID
/// signature seen; has_feature: its KVM_FEATURE_STEAL_TIME bit; has_vars: steal_time and
/// runqueues in the BTF's .data..percpu.
std::string steal_clock_reason(bool arch_ok, bool has_kvm, bool has_feature, bool has_vars);

}  // namespace schedhot
