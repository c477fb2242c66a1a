// What the running kernel offers to the probe resolver: symbols, BTF functions and
// tracepoints, kprobe support. Tests build KernelFacts by hand from fixtures.
#pragma once
#include <optional>
#include <string>
#include <unordered_set>

#include "probe/kallsyms.h"
#include "probe/layout.h"

namespace schedhot {

/// Facts about one kernel, as the resolver needs them.
struct KernelFacts {
  std::string release;                           ///< uname -r
  bool btf = false;                              ///< vmlinux BTF loaded
  std::string btf_error;                         ///< why not, when !btf
  /// The kernel has its own BTF (kSysfsVmlinuxBtf): fentry and tp_btf programs need it.
  /// false when the BTF came from a file (--btf, or a vmlinux libbpf found) on a kernel
  /// without; kprobes and raw_tp then still work, relocated against the file.
  bool kernel_btf = true;
  std::unordered_set<std::string> btf_funcs;     ///< BTF FUNC names (fentry/fexit targets)
  std::unordered_set<std::string> tracepoints;   ///< X for every "btf_trace_X" typedef (tp_btf/raw_tp)
  int cpupri_nr_prios = 0;                       ///< length of struct cpupri.pri_to_cpu[], 0 unknown
  bool kprobes = false;                          ///< kprobe PMU or tracefs kprobe_events present
  std::string kprobes_reason;                    ///< why kprobes are unusable, when !kprobes
  SymbolTable kallsyms;                          ///< /proc/kallsyms (may be empty or hidden)
  std::string kallsyms_error;                    ///< why kallsyms is unusable, "" if usable
  std::optional<SymbolTable> system_map;         ///< --system-map, if given
  std::string system_map_path;
  /// --btf FILE: the BTF read from it, also given to libbpf for CO-RE relocation
  /// (bpf_object_open_opts.btf_custom_path); "" = libbpf's search (/sys/kernel/btf/vmlinux...).
  std::string btf_path;
  /// The hot lines' layout (probe/layout.h) from this BTF and symbol table (the System.map
  /// when given, else kallsyms), for the cacheline size of cpu0's L1d (sysfs
  /// coherency_line_size, 64 when unreadable).
  CoherenceLayout layout;
};

/// Where the running kernel exposes its own BTF (CONFIG_DEBUG_INFO_BTF).
inline constexpr const char* kSysfsVmlinuxBtf = "/sys/kernel/btf/vmlinux";

/// The one-line btf_error when libbpf's btf__load_vmlinux_btf() fails with err (a positive
/// errno; ESRCH is libbpf's "no file found"), given whether kSysfsVmlinuxBtf exists and the
/// kernel's release (uname -r; "" when unknown): why, that nothing can attach without it
/// (every program is CO-RE), and what --btf FILE must be (the BTF of exactly that release,
/// e.g. pahole's from the vmlinux with debug info).
std::string describe_vmlinux_btf_error(int err, bool sysfs_present, const std::string& release);

/// Reads the live kernel's facts: /proc/kallsyms, vmlinux BTF (from btf_path when not
/// empty, else libbpf's search path), kprobe support, and the System.map at
/// system_map_path if not empty. Throws std::runtime_error with a one-line message when
/// system_map_path or btf_path cannot be read (or btf_path holds no BTF).
KernelFacts read_kernel_facts(const std::string& system_map_path = "", const std::string& btf_path = "");

}  // namespace schedhot
