#include "probe/attach.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstring>
#include <stdexcept>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>

#include "probe/learn.h"
#include "schedhot.skel.h"

namespace schedhot {

namespace {

// ---- libbpf log capture -------------------------------------------------------

thread_local std::string* g_log = nullptr;
bool g_verbose = false;

int libbpf_print(enum libbpf_print_level level, const char* fmt, va_list args) {
  char buf[4096];
  va_list copy;
  va_copy(copy, args);
  vsnprintf(buf, sizeof buf, fmt, copy);
  va_end(copy);
  if (g_log && g_log->size() < (1u << 20)) *g_log += buf;
  if (g_verbose && level != LIBBPF_DEBUG) fputs(buf, stderr);
  return 0;
}

/// The most telling line of a failed load's log: the verifier's last complaint.
std::string log_hint(const std::string& log) {
  std::string best;
  size_t pos = 0;
  while (pos < log.size()) {
    size_t eol = log.find('\n', pos);
    std::string line = log.substr(pos, eol == std::string::npos ? std::string::npos : eol - pos);
    pos = eol == std::string::npos ? log.size() : eol + 1;
    if (line.find("-- END") != std::string::npos) break;
    if (line.empty() || line.rfind("libbpf:", 0) == 0 || line.rfind("processed ", 0) == 0) continue;
    best = line;
  }
  if (best.size() > 160) best = best.substr(0, 157) + "...";
  return best;
}

// ---- skeleton configuration -----------------------------------------------------

struct Config {
  uint32_t ncpus = 0;
  uint64_t nohz_csd_func = 0;
  uint64_t tick_fn[2] = {0, 0};
  uint32_t cpupri_nr_prios = 101;
  std::string btf_custom_path;  ///< --btf FILE for CO-RE relocation, "" = the kernel's own BTF
};

struct SkelDeleter {
  void operator()(schedhot_bpf* s) const { schedhot_bpf__destroy(s); }
};
using SkelPtr = std::unique_ptr<schedhot_bpf, SkelDeleter>;

/// A fresh skeleton with every program off and only keep_map sized for all CPUs.
SkelPtr open_configured(const Config& cfg, const std::string& keep_map, std::string& err) {
  // --btf: libbpf relocates CO-RE accesses against FILE instead of /sys/kernel/btf/vmlinux.
  LIBBPF_OPTS(bpf_object_open_opts, open_opts,
              .btf_custom_path = cfg.btf_custom_path.empty() ? nullptr : cfg.btf_custom_path.c_str());
  SkelPtr skel(schedhot_bpf__open_opts(&open_opts));
  if (!skel) {
    err = fmt::format("cannot open the BPF object: {}", strerror(errno));
    return nullptr;
  }
  skel->rodata->sh_nohz_csd_func = cfg.nohz_csd_func;
  skel->rodata->sh_tick_fn[0] = cfg.tick_fn[0];
  skel->rodata->sh_tick_fn[1] = cfg.tick_fn[1];
  skel->rodata->sh_cpupri_nr_prios = cfg.cpupri_nr_prios;
  struct bpf_program* prog;
  bpf_object__for_each_program(prog, skel->obj) bpf_program__set_autoload(prog, false);
  struct bpf_map* map;
  bpf_object__for_each_map(map, skel->obj) {
    std::string name = bpf_map__name(map);
    if (name.size() > 6 && name.compare(name.size() - 6, 6, "_slots") == 0)
      bpf_map__set_max_entries(map, name == keep_map ? cfg.ncpus : 1);
    else if (bpf_map__type(map) == BPF_MAP_TYPE_PERF_EVENT_ARRAY)
      bpf_map__set_max_entries(map, keep_map == "bcast_wait_slots" ? cfg.ncpus : 1);
  }
  return skel;
}

struct bpf_program* program(schedhot_bpf* skel, const std::string& name) {
  return bpf_object__find_program_by_name(skel->obj, name.c_str());
}

/// Result of one try.
struct TryResult {
  SkelPtr skel;
  std::vector<struct bpf_link*> links;
  int err = 0;          ///< positive errno when failed
  std::string error;    ///< one line when failed
  bool at_load = false; ///< failed while loading (verifier/policy) rather than attaching
};

void destroy_links(std::vector<struct bpf_link*>& links) {
  for (auto* l : links) bpf_link__destroy(l);
  links.clear();
}

/// One program to enable: name, and for function backends the target symbol.
struct ProgSel {
  std::string name;
  std::string target;  ///< fentry/kprobe target; "" for tracepoints
  bool retprobe = false;
  uint64_t addr = 0;   ///< kprobe at this address (func_name NULL) rather than by target name
};

/// Loads a skeleton with exactly progs enabled and attaches them. With reuse_map_fd >= 0
/// the skeleton's keep_map is that existing map (another copy of the same probe).
TryResult try_load_attach(const Config& cfg, const std::string& keep_map, Backend b, const std::vector<ProgSel>& progs,
                          const std::string& what, int reuse_map_fd = -1) {
  TryResult r;
  std::string log;
  g_log = &log;
  std::string err;
  r.skel = open_configured(cfg, keep_map, err);
  if (!r.skel) {
    g_log = nullptr;
    r.err = EINVAL;
    r.error = err;
    return r;
  }
  if (reuse_map_fd >= 0) {
    struct bpf_map* m = bpf_object__find_map_by_name(r.skel->obj, keep_map.c_str());
    int e = m ? bpf_map__reuse_fd(m, reuse_map_fd) : -ENOENT;
    if (e) {
      g_log = nullptr;
      r.err = -e;
      r.error = fmt::format("cannot share the {} map with another copy: {}", keep_map, errno_name(-e));
      r.skel.reset();
      return r;
    }
  }
  for (auto& p : progs) {
    struct bpf_program* prog = program(r.skel.get(), p.name);
    if (!prog) {
      g_log = nullptr;
      r.err = ENOENT;
      r.error = fmt::format("internal: no BPF program {}", p.name);
      return r;
    }
    bpf_program__set_autoload(prog, true);
    if (b == Backend::fentry) {
      int e = bpf_program__set_attach_target(prog, 0, p.target.c_str());
      if (e) {
        g_log = nullptr;
        r.err = -e;
        r.error = describe_attach_error(b, -e, p.target);
        return r;
      }
    }
  }
  int e = schedhot_bpf__load(r.skel.get());
  if (e) {
    g_log = nullptr;
    r.err = -e;
    r.at_load = true;
    std::string hint = log.find("BEGIN PROG LOAD LOG") != std::string::npos ? log_hint(log) : "";
    if (!hint.empty() && r.err != EPERM)
      r.error = fmt::format("{} program for {} rejected by the verifier ({}): {}", to_string(b), what,
                            errno_name(r.err), hint);
    else
      r.error = describe_attach_error(b, -e, what);
    r.skel.reset();
    return r;
  }
  for (auto& p : progs) {
    struct bpf_program* prog = program(r.skel.get(), p.name);
    struct bpf_link* link = nullptr;
    if (b == Backend::kprobe && p.addr) {
      // A name with several addresses: by address (perf kprobe PMU: kprobe_addr).
      LIBBPF_OPTS(bpf_kprobe_opts, ko, .offset = static_cast<size_t>(p.addr), .retprobe = p.retprobe);
      link = bpf_program__attach_kprobe_opts(prog, nullptr, &ko);
    } else if (b == Backend::kprobe)
      link = bpf_program__attach_kprobe(prog, p.retprobe, p.target.c_str());
    else
      link = bpf_program__attach(prog);
    if (!link) {
      int ae = errno ? errno : EINVAL;
      r.err = ae;
      r.error = describe_attach_error(b, ae, p.target.empty() ? what : p.target);
      destroy_links(r.links);
      r.skel.reset();
      g_log = nullptr;
      return r;
    }
    r.links.push_back(link);
  }
  g_log = nullptr;
  return r;
}

// Programs attach in this order, the exit first: an entry seen before its exit program
// is attached would never be closed, and four of them on a CPU leave that CPU's timing
// stack full, so every later call counts as "nested" and none is timed (seen on 6.1 in
// the VM tests). An exit seen before the entry program is only an orphan_exit.
std::vector<ProgSel> function_progs(const ProbeSpec& spec, Backend b, const std::string& sym, uint64_t addr) {
  std::vector<ProgSel> v;
  if (b == Backend::fentry) {
    if (spec.timed) v.push_back({spec.name + "__fexit", sym});
    v.push_back({spec.name + "__fentry", sym});
  } else {
    if (spec.timed) v.push_back({spec.name + "__kretprobe", sym, true, addr});
    v.push_back({spec.name + "__kprobe", sym, false, addr});
  }
  return v;
}

std::vector<ProgSel> tp_progs(const std::vector<TpProgram>& tps) {
  std::vector<ProgSel> v;
  for (auto& t : tps) v.push_back({t.program, ""});
  return v;
}

std::string tp_names(const std::vector<TpProgram>& tps) {
  std::string s;
  for (auto& t : tps) s += (s.empty() ? "" : ", ") + std::string(t.raw ? "raw_tp/" : "tp_btf/") + t.tracepoint;
  return s;
}

/// A backend refused globally (fentry EPERM, kprobes EPERM): later tries skip it.
struct Refusals {
  std::string fentry;
  std::string kprobe;
};

bool policy_refusal(const TryResult& r) { return r.at_load && (r.err == EPERM || r.err == EACCES); }

/// Appends e to a "; "-joined list of errors unless it is there already.
void add_error(std::string& list, const std::string& e) {
  if (list.find(e) == std::string::npos) list += (list.empty() ? "" : "; ") + e;
}


}  // namespace

LoadedProbe::~LoadedProbe() {
  for (auto* l : links) bpf_link__destroy(l);
  links.clear();
  if (slots) munmap(const_cast<uint64_t*>(slots), map_bytes);
  for (auto* s : more_skels) schedhot_bpf__destroy(s);
  more_skels.clear();
  if (skel) schedhot_bpf__destroy(skel);
}

ProbeSet::ProbeSet(const KernelFacts& facts, const HostInfo& host, const AttachOptions& opts)
    : facts_(facts), host_(host), opts_(opts) {
  g_verbose = opts.verbose;
  libbpf_set_print(libbpf_print);
  int n = libbpf_num_possible_cpus();
  if (n <= 0) throw std::runtime_error(fmt::format("cannot count possible CPUs: {}", strerror(-n)));
  ncpus_ = static_cast<uint32_t>(n);

  Config cfg;
  cfg.ncpus = ncpus_;
  cfg.cpupri_nr_prios = facts.cpupri_nr_prios ? static_cast<uint32_t>(facts.cpupri_nr_prios) : 101;
  cfg.btf_custom_path = facts.btf_path;
  auto text_addr = [&](const char* name) -> uint64_t {
    const Symbol* s = facts.kallsyms.find(name);
    return (s && s->is_text()) ? s->addr : 0;
  };
  // A filter address: one of several would be a guess.
  cfg.nohz_csd_func = facts.kallsyms.find_all("nohz_csd_func").size() == 1 ? text_addr("nohz_csd_func") : 0;
  cfg.tick_fn[0] = text_addr("tick_nohz_handler");
  cfg.tick_fn[1] = text_addr("tick_sched_timer");

  const auto& cat = probe_catalog();
  status_.resize(cat.size());
  loaded_.resize(cat.size());
  Refusals refused;

  for (const ProbeSpec& spec : cat) {
    ProbeStatus& st = status_[spec.id];
    st.probe = spec.name;
    st.target = spec.target;
    if (!opts.only.empty() && std::find(opts.only.begin(), opts.only.end(), spec.name) == opts.only.end()) {
      st.reason = "not selected (--probes)";
      continue;
    }
    Plan plan = resolve_probe(spec, facts, opts.pref);
    // When nothing could even be tried: the user's --backend choice, or the kernel.
    const std::string nothing_to_try =
        opts.pref == BackendPref::proxy ? "--backend proxy: this probe has no tracepoint proxy" : "";
    st.notes = plan.notes;
    st.ambiguous = plan.ambiguous;
    std::vector<AttachTry> failures = plan.skipped;

    // Missing addresses the BPF side needs.
    if (spec.id == SH_P_ILB_KICK && !cfg.nohz_csd_func) {
      plan.candidates.clear();
      auto all = facts.kallsyms.find_all("nohz_csd_func");
      if (all.size() > 1) {
        AmbiguousSymbol a{"nohz_csd_func", {}, "kallsyms"};
        for (auto* x : all) a.addrs.push_back(x->addr);
        st.ambiguous.push_back(a);
        failures.push_back({Backend::tracepoint, "",
                            fmt::format("nohz_csd_func is ambiguous: {} addresses in kallsyms; not filtering on a guess", all.size())});
      } else {
        failures.push_back({Backend::tracepoint, "",
                            fmt::format("nohz_csd_func's address is unknown ({})",
                                        facts.kallsyms_error.empty() ? "not in /proc/kallsyms" : facts.kallsyms_error)});
      }
    }

    auto kept = std::make_unique<LoadedProbe>();
    kept->spec = &spec;

    if (spec.kind == ProbeKind::sites) {
      // Each site on its own: fentry, else kprobe. Trials in throwaway objects, then one
      // object with every site that worked.
      const Candidate* fc = nullptr;
      const Candidate* kc = nullptr;
      for (auto& c : plan.candidates) (c.backend == Backend::fentry ? fc : kc) = &c;
      std::vector<ProgSel> final_progs;
      std::vector<Backend> final_backend;
      // the probe's own list of failed attempts: each backend's error once, not per site
      auto note_failure = [&](Backend b, const std::string& sym, const std::string& err) {
        if (std::none_of(failures.begin(), failures.end(),
                         [&](const AttachTry& f) { return f.backend == b && f.error == err; }))
          failures.push_back({b, sym, err});
      };
      for (size_t i = 0; i < spec.symbols.size(); ++i) {
        SiteStatus ss;
        ss.site = spec.symbols[i];
        ss.symbol = i < plan.sites.size() ? plan.sites[i] : "";
        if (ss.symbol.empty()) {
          ss.error = fmt::format("{} not in this kernel", ss.site);
          st.sites.push_back(ss);
          continue;
        }
        std::vector<std::string> errs;
        for (Backend b : {Backend::fentry, Backend::kprobe}) {
          const Candidate* c = b == Backend::fentry ? fc : kc;
          if (!c || i >= c->sites.size() || c->sites[i].empty()) continue;
          std::string& ref = b == Backend::fentry ? refused.fentry : refused.kprobe;
          if (!ref.empty()) {
            errs.push_back(ref);
            note_failure(b, c->sites[i], ref);
            continue;
          }
          ProgSel ps{fmt::format("bcast_lock__{}_{}", b == Backend::fentry ? "fentry" : "kprobe", i), c->sites[i]};
          TryResult r = try_load_attach(cfg, spec.map, b, {ps}, c->sites[i]);
          if (r.skel) {
            destroy_links(r.links);
            ss.backend = b;
            ss.attached = true;
            final_progs.push_back(ps);
            final_backend.push_back(b);
            break;
          }
          if (policy_refusal(r)) ref = r.error;
          errs.push_back(r.error);
          note_failure(b, c->sites[i], r.error);
        }
        if (!ss.attached) {
          for (auto& f : failures)
            if (f.backend == Backend::kprobe || f.backend == Backend::fentry) errs.push_back(f.error);
          ss.error = errs.empty() ? (nothing_to_try.empty() ? "no backend available" : nothing_to_try) : errs.front();
          for (size_t k = 1; k < errs.size(); ++k)
            if (ss.error.find(errs[k]) == std::string::npos) ss.error += "; " + errs[k];
        }
        st.sites.push_back(ss);
      }
      if (!final_progs.empty()) {
        // One object holding every site that worked: fentry and kprobe programs differ in
        // type, so load them together and attach each with its own backend.
        std::string err;
        std::string log;
        g_log = &log;
        SkelPtr skel = open_configured(cfg, spec.map, err);
        bool ok = static_cast<bool>(skel);
        for (size_t k = 0; ok && k < final_progs.size(); ++k) {
          auto* prog = program(skel.get(), final_progs[k].name);
          bpf_program__set_autoload(prog, true);
          if (final_backend[k] == Backend::fentry && bpf_program__set_attach_target(prog, 0, final_progs[k].target.c_str()))
            ok = false;
        }
        int le = ok ? schedhot_bpf__load(skel.get()) : -EINVAL;
        g_log = nullptr;
        if (le == 0) {
          for (size_t k = 0; k < final_progs.size(); ++k) {
            auto* prog = program(skel.get(), final_progs[k].name);
            struct bpf_link* l = final_backend[k] == Backend::kprobe
                                     ? bpf_program__attach_kprobe(prog, false, final_progs[k].target.c_str())
                                     : bpf_program__attach(prog);
            for (auto& ss : st.sites)
              if (ss.symbol == final_progs[k].target && !l) {
                ss.attached = false;
                ss.error = describe_attach_error(final_backend[k], errno, ss.symbol);
              }
            if (l) kept->links.push_back(l);
          }
          kept->skel = skel.release();
        } else {
          for (auto& ss : st.sites) {
            if (!ss.attached) continue;
            ss.attached = false;
            ss.error = describe_attach_error(ss.backend, -le, ss.symbol);
          }
        }
      }
      int nat = 0;
      bool any_f = false, any_k = false;
      for (auto& ss : st.sites) {
        if (!ss.attached) continue;
        ++nat;
        (ss.backend == Backend::fentry ? any_f : any_k) = true;
        if (st.symbol.empty()) st.symbol = ss.symbol;
      }
      if (nat > 0 && kept->skel) {
        st.attached = true;
        st.backend = any_f ? Backend::fentry : Backend::kprobe;
        st.symbol = fmt::format("{} of {} functions", nat, st.sites.size());
        if (any_f && any_k) st.via = "(fentry and kprobe mixed)";
      } else {
        std::string why;
        for (auto& ss : st.sites)
          if (!ss.symbol.empty() && !ss.error.empty()) {
            why = ss.error;
            break;
          }
        if (why.empty())
          for (auto& f : failures) why += (why.empty() ? "" : "; ") + f.error;
        st.reason = why.empty() ? (nothing_to_try.empty() ? "no function that takes the lock could be probed" : nothing_to_try) : why;
      }
    } else {
      // Function probes: every copy of the target (compiler clones, same-name functions)
      // is tried with its own candidates, best first; each copy that attaches is kept in
      // its own object using the first one's slots map. The proxy only when none did.
      std::vector<CopyStatus> copies;
      for (auto& cp : plan.copies) copies.push_back({cp.symbol, cp.addr});
      int map_fd = -1;
      auto try_one = [&](const Candidate& c, CopyStatus* cs) {
        std::string* ref = c.backend == Backend::fentry ? &refused.fentry
                           : c.backend == Backend::kprobe ? &refused.kprobe
                                                          : nullptr;
        auto fail = [&](const std::string& e) {
          failures.push_back({c.backend, c.symbol, e});
          if (cs) add_error(cs->error, e);
        };
        if (ref && !ref->empty()) {
          fail(*ref);
          return false;
        }
        std::vector<ProgSel> progs = c.backend == Backend::tracepoint ? tp_progs(c.programs)
                                                                      : function_progs(spec, c.backend, c.symbol, c.addr);
        std::string what = c.backend == Backend::tracepoint ? tp_names(c.programs)
                           : c.addr ? fmt::format("{} at {:#x}", c.symbol, c.addr)
                                    : c.symbol;
        TryResult r = try_load_attach(cfg, spec.map, c.backend, progs, what, map_fd);
        if (!r.skel) {
          if (ref && policy_refusal(r)) *ref = r.error;
          fail(r.error);
          return false;
        }
        if (!kept->skel) {
          kept->skel = r.skel.release();
          map_fd = bpf_map__fd(bpf_object__find_map_by_name(kept->skel->obj, spec.map.c_str()));
          st.attached = true;
          st.backend = c.backend;
          st.symbol = c.backend == Backend::tracepoint ? what : c.symbol;
          st.via = c.via;
          st.proxy = c.proxy;
          st.proxy_label = c.proxy_label;
          st.proxy_error = c.proxy_error;
        } else {
          kept->more_skels.push_back(r.skel.release());
        }
        kept->links.insert(kept->links.end(), r.links.begin(), r.links.end());
        if (cs) {
          cs->attached = true;
          cs->backend = c.backend;
          cs->error.clear();
        }
        return true;
      };
      for (size_t k = 0; k < copies.size(); ++k) {
        // Reasons the plan ruled out a backend for this copy, in case nothing attaches.
        for (auto& sk : plan.skipped)
          if (sk.symbol == copies[k].symbol && sk.backend != Backend::none) add_error(copies[k].error, sk.error);
        for (const Candidate& c : plan.candidates)
          if (c.copy == int(k) && try_one(c, &copies[k])) break;
      }
      if (!kept->skel)
        for (const Candidate& c : plan.candidates)
          if (c.copy < 0 && try_one(c, nullptr)) break;
      if (copies.size() > 1) summarize_copies(st, copies, describe_copies(plan), plan.via);
      if (!st.attached) {
        std::string why;
        std::stable_sort(failures.begin(), failures.end(),
                         [](const AttachTry& a, const AttachTry& b) { return a.backend < b.backend; });
        for (auto& f : failures) {
          std::string line = f.error;
          if (why.find(line) == std::string::npos) why += (why.empty() ? "" : "; ") + line;
        }
        st.reason = why.empty() ? (nothing_to_try.empty() ? "no way to attach on this kernel" : nothing_to_try) : why;
      }
    }
    // Keep the attempts that failed before the one that worked (or all of them), in the
    // order of resolution: fentry, kprobe, tracepoint (a backend ruled out up front, such
    // as kprobes not built in, was added first).
    std::stable_sort(failures.begin(), failures.end(),
                     [](const AttachTry& a, const AttachTry& b) { return a.backend < b.backend; });
    // Copies of one name repeat the plan's reasons: each once.
    for (auto& f : failures)
      if (std::none_of(st.tried.begin(), st.tried.end(), [&](const AttachTry& t) {
            return t.backend == f.backend && t.symbol == f.symbol && t.error == f.error;
          }))
        st.tried.push_back(f);
    if (!st.attached && st.via.empty()) st.via = plan.via;

    if (st.attached && kept->skel) {
      struct bpf_map* map = bpf_object__find_map_by_name(kept->skel->obj, spec.map.c_str());
      size_t bytes = size_t(bpf_map__value_size(map)) * bpf_map__max_entries(map);
      long page = sysconf(_SC_PAGESIZE);
      bytes = (bytes + page - 1) / page * page;
      void* m = mmap(nullptr, bytes, PROT_READ, MAP_SHARED, bpf_map__fd(map), 0);
      if (m == MAP_FAILED) {
        st.attached = false;
        st.reason = fmt::format("cannot map the {} slots: {}", spec.name, strerror(errno));
        kept.reset();
        continue;
      }
      kept->slots = static_cast<const uint64_t*>(m);
      kept->map_bytes = bytes;
      loaded_[spec.id] = std::move(kept);
    }
  }

  // Notes that depend on the machine, not on the attach.
  ProbeStatus& bl = status_[SH_P_BCAST_LOCK];
  if (bl.attached) {
    std::vector<std::string> why;
    if (host.broadcast_device == "<NULL>") why.push_back("no tick broadcast device");
    if (host.arat) why.push_back("ARAT present (the local APIC timer keeps running in deep idle states)");
    if (!why.empty()) {
      std::string s = "attached, path not in use on this machine: ";
      for (size_t i = 0; i < why.size(); ++i) s += (i ? ", " : "") + why[i];
      bl.notes.push_back(s);
    }
  }
  ProbeStatus& ik = status_[SH_P_ILB_KICK];
  if (ik.attached)
    ik.notes.push_back("counts queued kicks; a kick while one is pending, or with no idle CPU to kick, is not queued and not seen");
  ProbeStatus& bw = status_[SH_P_BCAST_WAIT];
  if (bw.attached) {
    LockAddressPlan a = plan_lock_address(facts);
    schedhot_bpf* skel = loaded_[SH_P_BCAST_WAIT]->skel;
    bw.notes.push_back(a.note);
    if (!a.ambiguous.empty()) bw.ambiguous.push_back({"tick_broadcast_lock", a.ambiguous, a.ambiguous_in});
    if (a.addr) {
      skel->bss->sh_bcast_lock_addr = a.addr;
    } else if (a.learn) {
      skel->bss->sh_bcast_learn = 1;
      learner_ = std::make_unique<LockLearner>(skel, facts.kallsyms);
      if (!learner_->ok()) {
        bw.notes.push_back("learning unavailable: " + learner_->error());
        learner_.reset();
      }
    }
    bw.notes.push_back("contention_begin visibility: " + spinlock_blind_spot(host));
  }
}

ProbeSet::~ProbeSet() { detach(); }

void ProbeSet::detach() {
  learner_.reset();
  for (auto& p : loaded_) p.reset();
}

std::vector<int> ProbeSet::program_fds() const {
  std::vector<int> fds;
  for (auto& lp : loaded_) {
    if (!lp || !lp->skel) continue;
    std::vector<schedhot_bpf*> objs{lp->skel};
    objs.insert(objs.end(), lp->more_skels.begin(), lp->more_skels.end());
    for (schedhot_bpf* o : objs) {
      struct bpf_program* prog;
      bpf_object__for_each_program(prog, o->obj) {
        int fd = bpf_program__fd(prog);
        if (fd >= 0) fds.push_back(fd);
      }
    }
  }
  return fds;
}

void ProbeSet::read(Sample& s) const {
  for (size_t i = 0; i < loaded_.size() && i < s.probes.size(); ++i) {
    const LoadedProbe* lp = loaded_[i].get();
    ProbeSample& ps = s.probes[i];
    if (!lp || !lp->slots) {
      ps.present = false;
      ps.words.clear();
      continue;
    }
    const SlotLayout& L = lp->spec->layout;
    const size_t n = size_t(ncpus_) * L.slot_words;
    ps.present = true;
    ps.words.resize(n);
    std::memcpy(ps.words.data(), lp->slots, n * sizeof(uint64_t));
    for (auto& f : L.fields) {
      if (f.kind != FieldKind::priv) continue;
      for (uint32_t c = 0; c < ncpus_; ++c)
        std::memset(ps.words.data() + size_t(c) * L.slot_words + f.offset, 0, f.nwords * sizeof(uint64_t));
    }
  }
}

std::vector<int> ProbeSet::poll(int timeout_ms) {
  std::vector<int> changed;
  if (!learner_) {
    if (timeout_ms > 0) usleep(static_cast<useconds_t>(timeout_ms) * 1000);
    return changed;
  }
  learner_->poll(timeout_ms);
  if (auto found = learner_->take_result()) {
    schedhot_bpf* skel = loaded_[SH_P_BCAST_WAIT]->skel;
    skel->bss->sh_bcast_lock_addr = found->addr;
    skel->bss->sh_bcast_learn = 0;
    ProbeStatus& bw = status_[SH_P_BCAST_WAIT];
    for (auto& n : bw.notes)
      if (n.rfind(kLockAddrUnknownNote, 0) == 0)
        n = fmt::format("tick_broadcast_lock at {:#x} learned from {} contention stacks (first non-lock frame {})",
                        found->addr, found->votes, found->frame);
    changed.push_back(SH_P_BCAST_WAIT);
    learner_.reset();
  }
  return changed;
}

}  // namespace schedhot
