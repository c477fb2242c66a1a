#include "probe/kernel_facts.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>

namespace schedhot {

namespace {

void read_btf(KernelFacts& f) {
  struct btf* btf = btf__load_vmlinux_btf();
  if (!btf) {
    f.btf = false;
    f.btf_error = fmt::format("no vmlinux BTF ({}); the kernel needs CONFIG_DEBUG_INFO_BTF", strerror(errno));
    return;
  }
  f.btf = true;
  const unsigned n = btf__type_cnt(btf);
  for (unsigned id = 1; id < n; ++id) {
    const struct btf_type* t = btf__type_by_id(btf, id);
    if (!t) continue;
    const char* name = btf__name_by_offset(btf, t->name_off);
    if (!name || !*name) continue;
    if (btf_is_func(t)) {
      f.btf_funcs.insert(name);
    } else if (btf_is_typedef(t) && strncmp(name, "btf_trace_", 10) == 0) {
      f.tracepoints.insert(name + 10);
    }
  }
  int cp = btf__find_by_name_kind(btf, "cpupri", BTF_KIND_STRUCT);
  if (cp > 0) {
    const struct btf_type* t = btf__type_by_id(btf, cp);
    const struct btf_member* m = btf_members(t);
    for (int i = 0; i < btf_vlen(t); ++i, ++m) {
      const char* mn = btf__name_by_offset(btf, m->name_off);
      if (!mn || strcmp(mn, "pri_to_cpu") != 0) continue;
      const struct btf_type* at = btf__type_by_id(btf, m->type);
      if (at && btf_is_array(at)) f.cpupri_nr_prios = static_cast<int>(btf_array(at)->nelems);
    }
  }
  btf__free(btf);
}

void read_kprobes(KernelFacts& f) {
  if (access("/sys/bus/event_source/devices/kprobe/type", R_OK) == 0 ||
      access("/sys/kernel/tracing/kprobe_events", F_OK) == 0 ||
      access("/sys/kernel/debug/tracing/kprobe_events", F_OK) == 0) {
    f.kprobes = true;
    return;
  }
  f.kprobes = false;
  f.kprobes_reason =
      "kprobes not built into this kernel (CONFIG_KPROBES=n: no kprobe PMU in "
      "/sys/bus/event_source/devices, no kprobe_events in tracefs)";
}

}  // namespace

KernelFacts read_kernel_facts(const std::string& system_map_path) {
  KernelFacts f;
  struct utsname u {};
  if (uname(&u) == 0) f.release = u.release;
  libbpf_print_fn_t old = libbpf_set_print(nullptr);
  read_btf(f);
  libbpf_set_print(old);
  read_kprobes(f);
  std::string err;
  auto ks = SymbolTable::load("/proc/kallsyms", &err);
  if (!ks) {
    f.kallsyms_error = err;
  } else {
    f.kallsyms = std::move(*ks);
    if (f.kallsyms.addresses_hidden())
      f.kallsyms_error = "/proc/kallsyms addresses are hidden (kernel.kptr_restrict, or not root)";
  }
  if (!system_map_path.empty()) {
    auto sm = SymbolTable::load(system_map_path, &err);
    if (!sm) throw std::runtime_error(fmt::format("--system-map: {}", err));
    f.system_map = std::move(*sm);
    f.system_map_path = system_map_path;
  }
  return f;
}

}  // namespace schedhot
