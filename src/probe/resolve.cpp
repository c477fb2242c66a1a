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
    auto all = f.kallsyms.find_all(name);
    if (!all.empty()) return std::any_of(all.begin(), all.end(), [](const Symbol* s) { return s->is_text(); });
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

/// How many copies of plan p carry this symbol name (same-name static functions or clones).
size_t same_name(const Plan& p, const std::string& sym) {
  return static_cast<size_t>(std::count_if(p.copies.begin(), p.copies.end(), [&](const CodeCopy& c) { return c.symbol == sym; }));
}

/// fentry and kprobe candidates for copy k of p. A name shared by several copies is
/// attached by address with kprobes; fentry attaches by name (the kernel picks one of
/// them), so it is used for such a name only when kprobes cannot be, and on its first copy.
void add_function_candidates(Plan& p, const KernelFacts& f, BackendPref pref, int k, const std::string& via) {
  if (pref == BackendPref::proxy) return;
  const CodeCopy& cp = p.copies[size_t(k)];
  const std::string& sym = cp.symbol;
  const size_t n = same_name(p, sym);
  const bool first_of_name = std::find_if(p.copies.begin(), p.copies.end(), [&](const CodeCopy& c) { return c.symbol == sym; }) ==
                             p.copies.begin() + k;
  const bool kprobe_ok = pref != BackendPref::fentry && f.kprobes && (n == 1 || cp.addr);
  if (pref != BackendPref::kprobe) {
    if (!f.btf)
      p.skipped.push_back({Backend::fentry, sym, f.btf_error});
    else if (!f.kernel_btf)
      p.skipped.push_back({Backend::fentry, sym, no_kernel_btf("fentry")});
    else if (!f.btf_funcs.count(sym))
      p.skipped.push_back({Backend::fentry, sym, fmt::format("fentry: no BTF function {} (pahole emits none for clones with a changed signature)", sym)});
    else if (n > 1 && (kprobe_ok || !first_of_name))
      p.skipped.push_back({Backend::fentry, sym, fmt::format("fentry: {} has {} addresses and fentry attaches by name (the kernel picks one)", sym, n)});
    else {
      Candidate c{Backend::fentry, sym, {}, {}, via};
      c.copy = k;
      p.candidates.push_back(c);
    }
  }
  if (pref != BackendPref::fentry) {
    if (!f.kprobes) {
      p.skipped.push_back({Backend::kprobe, sym, f.kprobes_reason});
    } else if (!f.btf) {  // the kprobe programs are CO-RE too: libbpf loads none without BTF
      p.skipped.push_back({Backend::kprobe, sym, f.btf_error});
    } else if (!kprobe_ok) {
      p.skipped.push_back({Backend::kprobe, sym, fmt::format("kprobe: {} has {} entries and kallsyms hides their addresses", sym, n)});
    } else {
      Candidate c{Backend::kprobe, sym, {}, {}, via};
      c.addr = n > 1 ? cp.addr : 0;
      c.copy = k;
      p.candidates.push_back(c);
    }
  }
}

/// The copies of function sym in this kernel: its text entries (several for same-name
/// static functions) and its whole clones (.isra/.constprop/.llvm); its partial clones
/// (.part.N) only when there is nothing else. Empty when sym is not in this kernel.
std::vector<CodeCopy> find_copies(const KernelFacts& f, const std::string& sym, std::vector<std::string>& notes) {
  std::vector<CodeCopy> v;
  if (has_function(f, sym)) {
    for (auto* s : f.kallsyms.find_all(sym))
      if (s->is_text()) v.push_back({s->name, s->addr});
    if (v.empty()) v.push_back({sym, 0});  // known from BTF only
  }
  std::vector<CodeCopy> parts;
  for (auto* c : f.kallsyms.clones(sym)) (is_partial_clone(c->name) ? parts : v).push_back({c->name, c->addr});
  if (v.empty()) return parts;
  for (auto& pc : parts)
    notes.push_back(fmt::format("{} is a split-off part of {} (partial inlining), not a copy: not probed, so calls from "
                                "callers that inlined {}'s head and went on into the part are not seen",
                                pc.symbol, sym, sym));
  return v;
}

AmbiguousSymbol ambiguity(const Plan& p) {
  AmbiguousSymbol a{p.copies_of, {}, "kallsyms"};
  for (auto& c : p.copies) a.addrs.push_back(c.addr);
  return a;
}

}  // namespace

std::string describe_copies(const Plan& p) {
  if (p.copies.size() < 2) return "";
  size_t named = same_name(p, p.copies_of);
  size_t clones = p.copies.size() - named;
  std::string what;
  if (named == 0)
    what = "compiler clones";
  else if (clones == 0)
    what = fmt::format("{} functions of this name", named);
  else
    what = fmt::format("{}, {} compiler clone{}", named == 1 ? "the function" : fmt::format("{} functions of this name", named),
                       clones, clones == 1 ? "" : "s");
  return fmt::format("{} copies of {} ({})", p.copies.size(), p.copies_of, what);
}

namespace {

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
    for (auto* cold : f.kallsyms.cold_parts(sym))
      p.notes.push_back(fmt::format("{} has a split-off cold part {}: durations cover calls that stay in the hot part", sym, cold->name));
    std::vector<CodeCopy> copies = find_copies(f, sym, p.notes);
    if (copies.empty()) {
      p.skipped.push_back({Backend::none, sym, fmt::format("{} not in kallsyms (inlined or not built)", sym)});
      continue;
    }
    found = true;
    p.copies = std::move(copies);
    p.copies_of = sym;
    for (size_t k = 0; k < p.copies.size(); ++k) {
      const std::string& name = p.copies[k].symbol;
      add_function_candidates(p, f, pref, int(k), name == sym ? "" : fmt::format("(compiler clone {} of {})", name, sym));
    }
    if (p.copies.size() > 1) {
      p.via = "(" + describe_copies(p) + ")";
      p.ambiguous.push_back(ambiguity(p));
    }
    else if (p.copies[0].symbol != sym)
      p.via = fmt::format("(compiler clone {} of {})", p.copies[0].symbol, sym);
    break;
  }
  if (!found) {
    for (auto& host : spec.inline_hosts) {
      if (!has_function(f, host)) continue;
      found = true;
      // "not in kallsyms" is explained by the via label now.
      std::erase_if(p.skipped, [](const AttachTry& t) { return t.backend == Backend::none; });
      p.via = fmt::format("via {} ({} inlined)", host, spec.target);
      const Symbol* hs = f.kallsyms.find(host);
      p.copies = {{host, hs ? hs->addr : 0}};
      p.copies_of = host;
      add_function_candidates(p, f, pref, 0, p.via);
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
    std::vector<std::string> unused;
    std::vector<CodeCopy> copies = find_copies(f, s, unused);
    sites.push_back(copies.empty() ? "" : copies.front().symbol);
    if (copies.size() > 1) {
      // One slot word per site and one program each: the first copy is the site.
      Plan one;
      one.copies = copies;
      one.copies_of = s;
      p.ambiguous.push_back(ambiguity(one));
      std::string rest;
      for (size_t k = 1; k < copies.size(); ++k) rest += (k > 1 ? ", " : "") + copies[k].symbol;
      p.notes.push_back(fmt::format("{}: site {} is probed at {} only; calls to {} are missed", describe_copies(one), s,
                                    copies[0].symbol, rest));
    }
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
    } else if (!f.btf) {  // CO-RE programs: none loads without BTF
      p.skipped.push_back({Backend::kprobe, "", f.btf_error});
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
  // Two variables of one name (static in different files): the lock is one of them, and
  // filtering contentions on the wrong one would count another lock. No guess.
  auto ambiguous = [&](const SymbolTable& t, const std::string& where, int64_t shift) {
    auto all = t.find_all(name);
    if (all.size() < 2) return false;
    std::string list;
    for (auto* s : all) {
      d.ambiguous.push_back(s->addr + static_cast<uint64_t>(shift));
      list += fmt::format("{}{:#x}", list.empty() ? "" : ", ", d.ambiguous.back());
    }
    d.addr = 0;
    d.ambiguous_in = where;
    d.source = fmt::format("{} is ambiguous: {} addresses ({}) in {}; not filtering on a guess", name, all.size(), list, where);
    return true;
  };
  if (kallsyms_usable(f) && ambiguous(f.kallsyms, "kallsyms", 0)) return d;
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
      auto ka = f.kallsyms.find_all(anchor);
      auto kb = f.system_map->find_all(anchor);
      if (ka.size() != 1 || kb.size() != 1) continue;  // absent, or several: no anchor
      const Symbol* a = ka[0];
      const Symbol* b = kb[0];
      if (!a->addr) continue;
      ++checked;
      ++votes[static_cast<int64_t>(a->addr - b->addr)];
    }
    if (checked < 2 || votes.size() != 1) {
      d.source = fmt::format("{}; {} does not match the running kernel ({} shared symbols, {} different offsets)",
                             why_not_kallsyms, f.system_map_path, checked, votes.size());
      return d;
    }
    int64_t off = votes.begin()->first;
    if (ambiguous(*f.system_map, f.system_map_path, off)) return d;
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
  p.ambiguous = a.ambiguous;
  p.ambiguous_in = a.ambiguous_in;
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
