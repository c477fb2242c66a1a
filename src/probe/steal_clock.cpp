#include "probe/steal_clock.h"

#include <cstring>
#include <optional>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace schedhot {

std::string steal_clock_reason(bool arch_ok, bool has_kvm, bool has_feature, bool has_vars) {
  if (!arch_ok) return "no paravirt steal clock: read on x86-64 KVM guests only";
  if (!has_kvm) return "no paravirt steal clock: not a KVM guest";
  if (!has_feature) return "no paravirt steal clock: the hypervisor does not offer KVM_FEATURE_STEAL_TIME";
  if (!has_vars)
    return "no paravirt steal clock: the kernel's BTF places no steal_time and runqueues in .data..percpu";
  return "";
}

namespace {

/// rq_delta from the BTF's .data..percpu section, nullopt when either variable is not there.
std::optional<int64_t> percpu_delta(const struct btf* btf) {
  const int sec = btf__find_by_name_kind(btf, ".data..percpu", BTF_KIND_DATASEC);
  if (sec <= 0) return std::nullopt;
  const struct btf_type* t = btf__type_by_id(btf, static_cast<__u32>(sec));
  const struct btf_var_secinfo* v = btf_var_secinfos(t);
  std::optional<int64_t> steal, rq;
  for (unsigned i = 0; i < btf_vlen(t); ++i, ++v) {
    const struct btf_type* var = btf__type_by_id(btf, v->type);
    if (!var || !btf_is_var(var)) continue;
    const char* name = btf__name_by_offset(btf, var->name_off);
    if (!name) continue;
    if (std::strcmp(name, "steal_time") == 0) steal = v->offset;
    if (std::strcmp(name, "runqueues") == 0) rq = v->offset;
  }
  if (!steal || !rq) return std::nullopt;
  return *steal - *rq;
}

}  // namespace

StealClock find_steal_clock(const std::string& btf_path) {
  StealClock c;
#if defined(__x86_64__)
  unsigned a = 0, b = 0, cx = 0, d = 0;
  bool kvm = false, feature = false;
  __cpuid(1, a, b, cx, d);
  if (cx & (1u << 31)) {  // X86_FEATURE_HYPERVISOR: the hypervisor leaves exist
    for (unsigned base = 0x40000000; base < 0x40010000; base += 0x100) {
      __cpuid(base, a, b, cx, d);
      char sig[12];
      std::memcpy(sig, &b, 4);
      std::memcpy(sig + 4, &cx, 4);
      std::memcpy(sig + 8, &d, 4);
      if (std::memcmp(sig, "KVMKVMKVM\0\0\0", 12) == 0) {
        kvm = true;
        __cpuid(base | 1, a, b, cx, d);  // KVM_CPUID_FEATURES
        feature = a & (1u << 5);         // KVM_FEATURE_STEAL_TIME
        break;
      }
    }
  }
  std::optional<int64_t> delta;
  if (kvm && feature) {
    struct btf* btf = btf_path.empty() ? btf__load_vmlinux_btf() : btf__parse(btf_path.c_str(), nullptr);
    if (btf) {
      delta = percpu_delta(btf);
      btf__free(btf);
    }
  }
  c.reason = steal_clock_reason(true, kvm, feature, delta.has_value());
  if (delta) c.rq_delta = *delta;
#else
  (void)btf_path;
  c.reason = steal_clock_reason(false, false, false, false);
#endif
  return c;
}

std::string steal_clock_reason() { return find_steal_clock().reason; }

}  // namespace schedhot
