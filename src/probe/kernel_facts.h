// What the running kernel offers to the probe resolver: symbols, BTF functions and
// tracepoints, kprobe support. Tests build KernelFacts by hand from fixtures.
#pragma once
#include <optional>
#include <string>
#include <unordered_set>

#include "probe/kallsyms.h"

namespace schedhot {

/// Facts about one kernel, as the resolver needs them.
struct KernelFacts {
  std::string release;                           ///< uname -r
  bool btf = false;                              ///< vmlinux BTF loaded
  std::string btf_error;                         ///< why not, when !btf
  std::unordered_set<std::string> btf_funcs;     ///< BTF FUNC names (fentry/fexit targets)
  std::unordered_set<std::string> tracepoints;   ///< X for every "btf_trace_X" typedef (tp_btf/raw_tp)
  int cpupri_nr_prios = 0;                       ///< length of struct cpupri.pri_to_cpu[], 0 unknown
  bool kprobes = false;                          ///< kprobe PMU or tracefs kprobe_events present
  std::string kprobes_reason;                    ///< why kprobes are unusable, when !kprobes
  SymbolTable kallsyms;                          ///< /proc/kallsyms (may be empty or hidden)
  std::string kallsyms_error;                    ///< why kallsyms is unusable, "" if usable
  std::optional<SymbolTable> system_map;         ///< --system-map, if given
  std::string system_map_path;
};

/// Reads the live kernel's facts: /proc/kallsyms, vmlinux BTF (libbpf's search path),
/// kprobe support, and the System.map at system_map_path if not empty. Throws
/// std::runtime_error with a one-line message when system_map_path cannot be read.
KernelFacts read_kernel_facts(const std::string& system_map_path = "");

}  // namespace schedhot
