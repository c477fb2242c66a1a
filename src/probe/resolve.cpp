#include "probe/resolve.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

namespace schedhot {

BackendPref parse_backend_pref(const std::string& s) {
  if (s == "auto") return BackendPref::automatic;
  if (s == "fentry") return BackendPref::fentry;
  if (s == "kprobe") return BackendPref::kprobe;
  if (s == "proxy") return BackendPref::proxy;
  throw std::invalid_argument(fmt::format("--backend must be auto, fentry, kprobe or proxy, not '{}'", s));
}

namespace {

bool kallsyms_usable(const KernelFacts& f) { return !f.kallsyms.empty() && f.kallsyms_error.empty(); }

/// A text symbol exists in the running kernel (kallsyms, or BTF when kallsyms is unusable).
bool has_function(const KernelFacts& f, const std::string& name) {
  if (!f.kallsyms.empty()) {
    const Symbol* s = f.kallsyms.find(name);
    if (s) return s->is_text();
    if (kallsyms_usable(f) || f.kallsyms.addresses_hidden()) return false;
  }
  return f.btf_funcs.count(name) > 0;
}

/// Why a program type that the kernel checks against its own BTF cannot load (!kernel_btf).
std::string no_kernel_btf(const char* what) {
  return fmt::format("{} needs the kernel's own BTF ({} not present; BTF from a file serves symbol lookup and "
                     "CO-RE only)",
                     what, kSysfsVmlinuxBtf);
}

/// fentry and kprobe candidates for one resolved function symbol.
void add_function_candidates(Plan& p, const KernelFacts& f, BackendPref pref, const std::string& sym,
                             const std::string& via) {
  if (pref == BackendPref::proxy) return;
  if (pref != BackendPref::kprobe) {
    if (!f.btf)
      p.skipped.push_back({Backend::fentry, sym, f.btf_error});
    else if (!f.kernel_btf)
      p.skipped.push_back({Backend::fentry, sym, no_kernel_btf("fentry")});
    else if (!f.btf_funcs.count(sym))
      p.skipped.push_back({Backend::fentry, sym, fmt::format("fentry: no BTF function {} (pahole emits none for clones with a changed signature)", sym)});
    else
      p.candidates.push_back({Backend::fentry, sym, {}, {}, via});
  }
  if (pref != BackendPref::fentry) {
    if (!f.kprobes)
      p.skipped.push_back({Backend::kprobe, sym, f.kprobes_reason});
    else
      p.candidates.push_back({Backend::kprobe, sym, {}, {}, via});
  }
}

std::string missing_tracepoint(const KernelFacts& f, const std::vector<TpProgram>& progs) {
  // The tracepoint list comes from BTF's btf_trace_X typedefs: without BTF it is unknown.
  if (!f.btf && !progs.empty()) return "tracepoint programs need vmlinux BTF (tp_btf, and CO-RE for raw_tp)";
  for (auto& t : progs)
    if (!f.tracepoints.count(t.tracepoint))
      return t.since.empty() ? fmt::format("tracepoint {} not in this kernel", t.tracepoint)
                             : fmt::format("tracepoint {} not in this kernel (added in {})", t.tracepoint, t.since);
  if (!f.kernel_btf)
    for (auto& t : progs)
      if (!t.raw) return no_kernel_btf("tp_btf");
  return "";
}

void resolve_function(Plan& p, const ProbeSpec& spec, const KernelFacts& f, BackendPref pref) {
  if (!kallsyms_usable(f))
    p.notes.push_back(fmt::format("{}: symbols checked against BTF only",
                                  f.kallsyms_error.empty() ? "no /proc/kallsyms" : f.kallsyms_error));
  bool found = false;
  for (auto& sym : spec.symbols) {
    bool exact = has_function(f, sym);
    auto clones = f.kallsyms.clones(sym);
    for (auto* cold : f.kallsyms.cold_parts(sym))
      p.notes.push_back(fmt::format("{} has a split-off cold part {}: durations cover calls that stay in the hot part", sym, cold->name));
    if (!exact && clones.empty()) {
      p.skipped.push_back({Backend::none, sym, fmt::format("{} not in kallsyms (inlined or not built)", sym)});
      continue;
    }
    found = true;
    if (exact) add_function_candidates(p, f, pref, sym, "");
    for (auto* c : clones)
      add_function_candidates(p, f, pref, c->name, fmt::format("(compiler clone {} of {})", c->name, sym));
    if (!exact && !clones.empty()) p.via = fmt::format("(compiler clone {} of {})", clones.front()->name, sym);
    break;
  }
  if (!found) {
    for (auto& host : spec.inline_hosts) {
      if (!has_function(f, host)) continue;
      found = true;
      // "not in kallsyms" is explained by the via label now.
      std::erase_if(p.skipped, [](const AttachTry& t) { return t.backend == Backend::none; });
      p.via = fmt::format("via {} ({} inlined)", host, spec.target);
      add_function_candidates(p, f, pref, host, p.via);
      break;
    }
  }
  if (spec.proxy && (pref == BackendPref::automatic || pref == BackendPref::proxy)) {
    std::string miss = missing_tracepoint(f, spec.proxy->programs);
    if (!miss.empty()) {
      p.skipped.push_back({Backend::tracepoint, "", "proxy: " + miss});
    } else {
      Candidate c;
      c.backend = Backend::tracepoint;
      c.programs = spec.proxy->programs;
      c.proxy = true;
      c.proxy_label = spec.proxy->label;
      c.proxy_error = spec.proxy->error;
      p.candidates.push_back(c);
    }
  }
}

void resolve_sites(Plan& p, const ProbeSpec& spec, const KernelFacts& f, BackendPref pref) {
  std::vector<std::string>& sites = p.sites;
  for (auto& s : spec.symbols) {
    std::string sym;
    if (has_function(f, s)) {
      sym = s;
    } else if (auto clones = f.kallsyms.clones(s); !clones.empty()) {
      sym = clones.front()->name;
    }
    sites.push_back(sym);
  }
  bool any = std::any_of(sites.begin(), sites.end(), [](auto& s) { return !s.empty(); });
  if (!any) {
    p.skipped.push_back({Backend::none, "", "none of the functions that take the lock are in kallsyms"});
    return;
  }
  if (pref == BackendPref::proxy) {
    p.skipped.push_back({Backend::tracepoint, "", "no tracepoint proxy for the lock-taking functions"});
    return;
  }
  if (pref != BackendPref::kprobe) {
    if (!f.btf) {
      p.skipped.push_back({Backend::fentry, "", f.btf_error});
    } else if (!f.kernel_btf) {
      p.skipped.push_back({Backend::fentry, "", no_kernel_btf("fentry")});
    } else {
      Candidate c;
      c.backend = Backend::fentry;
      for (auto& s : sites) c.sites.push_back(f.btf_funcs.count(s) ? s : "");
      p.candidates.push_back(c);
    }
  }
  if (pref != BackendPref::fentry) {
    if (!f.kprobes) {
      p.skipped.push_back({Backend::kprobe, "", f.kprobes_reason});
    } else {
      Candidate c;
      c.backend = Backend::kprobe;
      c.sites = sites;
      p.candidates.push_back(c);
    }
  }
}

}  // namespace

Plan resolve_probe(const ProbeSpec& spec, const KernelFacts& f, BackendPref pref) {
  Plan p;
  p.spec = &spec;
  switch (spec.kind) {
    case ProbeKind::function: resolve_function(p, spec, f, pref); break;
    case ProbeKind::sites: resolve_sites(p, spec, f, pref); break;
    case ProbeKind::tracepoint: {
      if (!f.btf) {
        p.skipped.push_back({Backend::tracepoint, "", f.btf_error});
        break;
      }
      std::string miss = missing_tracepoint(f, spec.tp_programs);
      if (!miss.empty()) {
        p.skipped.push_back({Backend::tracepoint, "", miss});
        break;
      }
      Candidate c;
      c.backend = Backend::tracepoint;
      c.programs = spec.tp_programs;
      p.candidates.push_back(c);
      break;
    }
  }
  return p;
}

DataAddress resolve_data_symbol(const std::string& name, const KernelFacts& f) {
  DataAddress d;
  if (kallsyms_usable(f)) {
    if (const Symbol* s = f.kallsyms.find(name); s && s->addr) {
      d.addr = s->addr;
      d.source = "kallsyms";
      return d;
    }
  }
  // Listed with address 0 (hidden from this reader) is not the same as not listed (data
  // symbols left out: CONFIG_KALLSYMS_ALL=n).
  const Symbol* listed = f.kallsyms.find(name);
  std::string why_not_kallsyms =
      !kallsyms_usable(f) ? f.kallsyms_error
      : listed            ? fmt::format("{} is in /proc/kallsyms with address 0 (hidden from this reader)", name)
                          : fmt::format("{} not in /proc/kallsyms (CONFIG_KALLSYMS_ALL=n)", name);
  if (f.system_map) {
    const Symbol* s = f.system_map->find(name);
    if (!s) {
      d.source = fmt::format("{}; {} not in {}", why_not_kallsyms, name, f.system_map_path);
      return d;
    }
    if (!kallsyms_usable(f)) {
      d.source = fmt::format("{}; cannot measure the KASLR offset for {}", why_not_kallsyms, f.system_map_path);
      return d;
    }
    // KASLR: every text symbol moves by the same offset. Vote over shared symbols.
    std::map<int64_t, int> votes;
    int checked = 0;
    for (const char* anchor : {"_stext", "_text", "startup_64", "schedule", "cpupri_set", "do_idle",
                               "nohz_balance_exit_idle", "tick_broadcast_control", "printk", "kfree"}) {
      const Symbol* a = f.kallsyms.find(anchor);
      const Symbol* b = f.system_map->find(anchor);
      if (!a || !b || !a->addr) continue;
      ++checked;
      ++votes[static_cast<int64_t>(a->addr - b->addr)];
    }
    if (checked < 2 || votes.size() != 1) {
      d.source = fmt::format("{}; {} does not match the running kernel ({} shared symbols, {} different offsets)",
                             why_not_kallsyms, f.system_map_path, checked, votes.size());
      return d;
    }
    int64_t off = votes.begin()->first;
    d.addr = s->addr + static_cast<uint64_t>(off);
    d.source = fmt::format("System.map {} (KASLR offset {:#x}, checked on {} symbols)", f.system_map_path,
                           static_cast<uint64_t>(off), checked);
    return d;
  }
  d.source = why_not_kallsyms + "; no --system-map given";
  return d;
}

LockAddressPlan plan_lock_address(const KernelFacts& f) {
  LockAddressPlan p;
  DataAddress a = resolve_data_symbol("tick_broadcast_lock", f);
  if (a.addr) {
    p.addr = a.addr;
    p.note = fmt::format("tick_broadcast_lock at {:#x} from {}", a.addr, a.source);
  } else if (kallsyms_usable(f)) {
    p.learn = true;
    p.note = fmt::format("{} ({}): learning it from contention stacks whose first non-lock frame is a "
                         "tick-broadcast function",
                         kLockAddrUnknownNote, a.source);
  } else {
    p.note = fmt::format("{} ({}): {} without symbol addresses; bcast_wait is blind", kLockAddrUnknownNote, a.source,
                         kLockAddrUnlearnable);
  }
  return p;
}

}  // namespace schedhot
