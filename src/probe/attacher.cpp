#include "probe/attacher.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

namespace schedhot {

uint32_t gap_period(double events_per_s, uint32_t samples_per_s) {
  if (samples_per_s == 0 || !(events_per_s > 0) || !std::isfinite(events_per_s)) return 1;
  const double p = std::ceil(events_per_s / samples_per_s);
  return p >= double(1u << 20) ? 1u << 20 : std::max(1u, static_cast<uint32_t>(p));
}

std::string* Refusals::of(Backend b) {
  return b == Backend::fentry ? &fentry : b == Backend::kprobe ? &kprobe : nullptr;
}

namespace {

bool policy_refusal(const LoadResult& r) { return r.at_load && (r.err == EPERM || r.err == EACCES); }

/// Appends e to a "; "-joined list of errors unless it is there already.
void add_error(std::string& list, const std::string& e) {
  if (list.find(e) == std::string::npos) list += (list.empty() ? "" : "; ") + e;
}

bool by_backend(const AttachTry& a, const AttachTry& b) { return a.backend < b.backend; }

// Programs attach in this order, the exit first: an entry seen before its exit program
// is attached would never be closed, and four of them on a CPU leave that CPU's timing
// stack full, so every later call counts as "nested" and none is timed (seen on 6.1 in
// the VM tests). An exit seen before the entry program is only an orphan_exit.
std::vector<ProgRequest> function_requests(const ProbeSpec& spec, Backend b, const std::string& sym, uint64_t addr) {
  std::vector<ProgRequest> v;
  const bool kp = b == Backend::kprobe;
  if (spec.timed) v.push_back({b, ProgRole::exit, 0, sym, kp, kp ? addr : 0});
  v.push_back({b, ProgRole::entry, 0, sym, false, kp ? addr : 0});
  return v;
}

std::vector<ProgRequest> tp_requests(const std::vector<TpProgram>& tps) {
  std::vector<ProgRequest> v;
  for (size_t i = 0; i < tps.size(); ++i) v.push_back({Backend::tracepoint, ProgRole::tracepoint, int(i), ""});
  return v;
}

std::string tp_names(const std::vector<TpProgram>& tps) {
  std::string s;
  for (auto& t : tps) s += (s.empty() ? "" : ", ") + std::string(t.raw ? "raw_tp/" : "tp_btf/") + t.tracepoint;
  return s;
}

void release_all(BpfLoader& loader, std::vector<LoadHandle>& handles) {
  // The copies first: they use the first object's slots map.
  for (size_t i = handles.size(); i-- > 0;) loader.release(handles[i]);
  handles.clear();
}

}  // namespace

namespace {

/// Adds (b, sym, err) to failures unless b already failed with err: a sites probe's
/// failed attempts list each backend's error once, not once per site.
void note_failure_once(std::vector<AttachTry>& failures, Backend b, const std::string& sym, const std::string& err) {
  if (std::none_of(failures.begin(), failures.end(),
                   [&](const AttachTry& f) { return f.backend == b && f.error == err; }))
    failures.push_back({b, sym, err});
}

}  // namespace

SiteStatus try_site(const ProbeModule& m, const Plan& plan, size_t i, BpfLoader& loader, Refusals& refused,
                    std::vector<AttachTry>& failures, const std::string& nothing_to_try,
                    std::optional<ProgRequest>& worked) {
  const ProbeSpec& spec = m.spec();
  worked.reset();
  SiteStatus ss;
  ss.site = spec.symbols.at(i);
  ss.symbol = i < plan.sites.size() ? plan.sites[i] : "";
  if (ss.symbol.empty()) {
    ss.error = fmt::format("{} not in this kernel", ss.site);
    return ss;
  }
  const Candidate* fc = nullptr;
  const Candidate* kc = nullptr;
  for (auto& c : plan.candidates) (c.backend == Backend::fentry ? fc : kc) = &c;
  std::vector<std::string> errs;
  for (Backend b : {Backend::fentry, Backend::kprobe}) {
    const Candidate* c = b == Backend::fentry ? fc : kc;
    if (!c || i >= c->sites.size() || c->sites[i].empty()) continue;
    std::string& ref = *refused.of(b);
    if (!ref.empty()) {
      errs.push_back(ref);
      note_failure_once(failures, b, c->sites[i], ref);
      continue;
    }
    ProgRequest ps{b, ProgRole::site, int(i), c->sites[i]};
    LoadResult r = loader.load_attach({&m, {ps}, c->sites[i]});
    if (r.ok()) {
      loader.release(r.handle);
      ss.backend = b;
      ss.attached = true;
      worked = ps;
      return ss;
    }
    if (policy_refusal(r)) ref = r.error;
    errs.push_back(r.error);
    note_failure_once(failures, b, c->sites[i], r.error);
  }
  for (auto& f : failures)
    if (f.backend == Backend::kprobe || f.backend == Backend::fentry) errs.push_back(f.error);
  ss.error = errs.empty() ? (nothing_to_try.empty() ? "no backend available" : nothing_to_try) : errs.front();
  for (size_t k = 1; k < errs.size(); ++k)
    if (ss.error.find(errs[k]) == std::string::npos) ss.error += "; " + errs[k];
  return ss;
}

LoadHandle load_sites_object(const ProbeModule& m, const std::vector<ProgRequest>& progs, BpfLoader& loader,
                             std::vector<SiteStatus>& sites) {
  if (progs.empty()) return kNoLoad;
  // fentry and kprobe programs differ in type: load them together and attach each with
  // its own backend.
  LoadRequest req{&m, progs, m.spec().name};
  req.partial = true;
  LoadResult r = loader.load_attach(req);
  if (!r.ok()) {
    for (auto& ss : sites) {
      if (!ss.attached) continue;
      ss.attached = false;
      ss.error = describe_attach_error(ss.backend, r.err, ss.symbol);
    }
    return kNoLoad;
  }
  for (size_t k = 0; k < progs.size(); ++k) {
    int e = k < r.attach_errs.size() ? r.attach_errs[k] : 0;
    const bool exit = progs[k].role == ProgRole::exit;
    for (auto& ss : sites) {
      if (ss.symbol != progs[k].target) continue;
      if (exit) {
        // An exit that failed leaves the site counted, without a holder state.
        ss.exit_attached = !e;
        ss.exit_error = e ? describe_attach_error(progs[k].backend, e, ss.symbol) : "";
      } else if (e) {
        ss.attached = false;
        ss.error = describe_attach_error(progs[k].backend, e, ss.symbol);
      }
    }
  }
  for (auto& ss : sites)
    if (!ss.attached) ss.exit_attached = false;
  return r.handle;
}

void conclude_sites(LoadHandle kept, BpfLoader& loader, const std::vector<AttachTry>& failures,
                    const std::string& nothing_to_try, AttachedProbe& out) {
  ProbeStatus& st = out.status;
  int nat = 0;
  bool any_f = false, any_k = false;
  for (auto& ss : st.sites) {
    if (!ss.attached) continue;
    ++nat;
    (ss.backend == Backend::fentry ? any_f : any_k) = true;
    if (st.symbol.empty()) st.symbol = ss.symbol;
  }
  if (nat > 0 && kept != kNoLoad) {
    st.attached = true;
    st.backend = any_f ? Backend::fentry : Backend::kprobe;
    st.symbol = fmt::format("{} of {} functions", nat, st.sites.size());
    if (any_f && any_k) st.via = "(fentry and kprobe mixed)";
    out.handles.push_back(kept);
    return;
  }
  if (kept != kNoLoad) loader.release(kept);
  std::string why;
  for (auto& ss : st.sites)
    if (!ss.symbol.empty() && !ss.error.empty()) {
      why = ss.error;
      break;
    }
  if (why.empty())
    for (auto& f : failures) why += (why.empty() ? "" : "; ") + f.error;
  st.reason = why.empty() ? (nothing_to_try.empty() ? "no function that takes the lock could be probed" : nothing_to_try)
                          : why;
}

std::vector<ProgRequest> with_site_exits(const std::vector<ProgRequest>& entries) {
  std::vector<ProgRequest> v;
  for (const ProgRequest& p : entries) {
    ProgRequest x = p;
    x.role = ProgRole::exit;
    x.retprobe = p.backend == Backend::kprobe;
    v.push_back(x);
  }
  v.insert(v.end(), entries.begin(), entries.end());
  return v;
}

void attach_sites(const ProbeModule& m, const Plan& plan, BpfLoader& loader, Refusals& refused,
                  std::vector<AttachTry>& failures, const std::string& nothing_to_try, AttachedProbe& out,
                  bool exits) {
  std::vector<ProgRequest> worked_alone;
  for (size_t i = 0; i < m.spec().symbols.size(); ++i) {
    std::optional<ProgRequest> worked;
    out.status.sites.push_back(try_site(m, plan, i, loader, refused, failures, nothing_to_try, worked));
    if (worked) worked_alone.push_back(*worked);
  }
  LoadHandle kept = kNoLoad;
  if (exits && !worked_alone.empty()) {
    const std::vector<SiteStatus> before = out.status.sites;
    kept = load_sites_object(m, with_site_exits(worked_alone), loader, out.status.sites);
    if (kept == kNoLoad) {
      // The exit programs must not cost the counts: the entries alone, as without them.
      const std::string why = out.status.sites.empty() ? "" : out.status.sites.front().error;
      out.status.sites = before;
      for (auto& ss : out.status.sites)
        if (ss.attached) ss.exit_error = "the object with the exit programs did not load: " + why;
    }
  }
  if (kept == kNoLoad) kept = load_sites_object(m, worked_alone, loader, out.status.sites);
  conclude_sites(kept, loader, failures, nothing_to_try, out);
}

namespace {

/// One try of a function or tracepoint probe: candidate c loaded and attached (for copy
/// cs of the target, or copy-less when cs is null: tracepoint programs, the proxy),
/// sharing the slots of the probe's first object when it has one. A backend refused for
/// good is not tried; a new policy refusal is recorded in refused. The first success
/// fills out.status (backend, symbol, via, proxy); each success joins out.handles and
/// marks cs attached; a failure joins failures and cs->error. True when it attached.
bool try_candidate(const ProbeModule& m, const Candidate& c, CopyStatus* cs, BpfLoader& loader, Refusals& refused,
                   std::vector<AttachTry>& failures, AttachedProbe& out) {
  ProbeStatus& st = out.status;
  std::string* ref = refused.of(c.backend);
  auto fail = [&](const std::string& e) {
    failures.push_back({c.backend, c.symbol, e});
    if (cs) add_error(cs->error, e);
  };
  if (ref && !ref->empty()) {
    fail(*ref);
    return false;
  }
  LoadRequest req{&m};
  req.progs = c.backend == Backend::tracepoint ? tp_requests(c.programs)
                                               : function_requests(m.spec(), c.backend, c.symbol, c.addr);
  req.what = c.backend == Backend::tracepoint ? tp_names(c.programs)
             : c.addr                         ? fmt::format("{} at {:#x}", c.symbol, c.addr)
                                              : c.symbol;
  req.share_slots = out.handles.empty() ? kNoLoad : out.handles.front();
  LoadResult r = loader.load_attach(req);
  if (!r.ok()) {
    if (ref && policy_refusal(r)) *ref = r.error;
    fail(r.error);
    return false;
  }
  if (out.handles.empty()) {
    st.attached = true;
    st.backend = c.backend;
    st.symbol = c.backend == Backend::tracepoint ? req.what : c.symbol;
    st.via = c.via;
    st.proxy = c.proxy;
    st.proxy_label = c.proxy_label;
    st.proxy_error = c.proxy_error;
  }
  out.handles.push_back(r.handle);
  if (cs) {
    cs->attached = true;
    cs->backend = c.backend;
    cs->error.clear();
  }
  return true;
}

}  // namespace

void attach_function(const ProbeModule& m, const Plan& plan, BpfLoader& loader, Refusals& refused,
                     std::vector<AttachTry>& failures, const std::string& nothing_to_try, AttachedProbe& out) {
  ProbeStatus& st = out.status;
  std::vector<CopyStatus> copies;
  for (auto& cp : plan.copies) copies.push_back({cp.symbol, cp.addr});
  for (size_t k = 0; k < copies.size(); ++k) {
    // Reasons the plan ruled out a backend for this copy, in case nothing attaches.
    for (auto& sk : plan.skipped)
      if (sk.symbol == copies[k].symbol && sk.backend != Backend::none) add_error(copies[k].error, sk.error);
    for (const Candidate& c : plan.candidates)
      if (c.copy == int(k) && try_candidate(m, c, &copies[k], loader, refused, failures, out)) break;
  }
  if (out.handles.empty())
    for (const Candidate& c : plan.candidates)
      if (c.copy < 0 && try_candidate(m, c, nullptr, loader, refused, failures, out)) break;
  if (copies.size() > 1) summarize_copies(st, copies, describe_copies(plan), plan.via);
  if (!st.attached) {
    std::string why;
    std::stable_sort(failures.begin(), failures.end(), by_backend);
    for (auto& f : failures)
      if (why.find(f.error) == std::string::npos) why += (why.empty() ? "" : "; ") + f.error;
    st.reason = why.empty() ? (nothing_to_try.empty() ? "no way to attach on this kernel" : nothing_to_try) : why;
  }
}

void record_tried(std::vector<AttachTry> failures, ProbeStatus& st) {
  // The attempts that failed before the one that worked (or all of them), in the order
  // of resolution: fentry, kprobe, tracepoint (a backend ruled out up front, such as
  // kprobes not built in, was added first).
  std::stable_sort(failures.begin(), failures.end(), by_backend);
  // Copies of one name repeat the plan's reasons: each once.
  for (auto& f : failures)
    if (std::none_of(st.tried.begin(), st.tried.end(), [&](const AttachTry& t) {
          return t.backend == f.backend && t.symbol == f.symbol && t.error == f.error;
        }))
      st.tried.push_back(f);
}

AttachedProbe attach_probe(const ProbeModule& m, const KernelFacts& facts, const AttachOptions& opts,
                           BpfLoader& loader, Refusals& refused) {
  const ProbeSpec& spec = m.spec();
  AttachedProbe out;
  ProbeStatus& st = out.status;
  st.probe = spec.name;
  st.target = spec.target;
  if (!opts.only.empty() && std::find(opts.only.begin(), opts.only.end(), spec.name) == opts.only.end()) {
    st.reason = "not selected (--probes)";
    return out;
  }
  Plan plan = resolve_probe(spec, facts, opts.pref);
  // When nothing could even be tried: the user's --backend choice, or the kernel.
  const std::string nothing_to_try =
      opts.pref == BackendPref::proxy ? "--backend proxy: this probe has no tracepoint proxy" : "";
  st.notes = plan.notes;
  st.ambiguous = plan.ambiguous;
  std::vector<AttachTry> failures = plan.skipped;
  if (!m.check(facts, plan, st, failures)) plan.candidates.clear();

  if (spec.kind == ProbeKind::sites)
    attach_sites(m, plan, loader, refused, failures, nothing_to_try, out, opts.bcast_holder);
  else
    attach_function(m, plan, loader, refused, failures, nothing_to_try, out);
  record_tried(std::move(failures), st);
  if (!st.attached && st.via.empty()) st.via = plan.via;

  if (st.attached && !out.handles.empty()) {
    SlotMapping map = loader.map_slots(out.handles.front());
    if (!map.words) {
      st.attached = false;
      st.reason = fmt::format("cannot map the {} slots: {}", spec.name, strerror(map.err));
      release_all(loader, out.handles);
      return out;
    }
    out.slots = map.words;
  }
  if (!st.attached) release_all(loader, out.handles);
  return out;
}

std::vector<AttachedProbe> attach_all(const KernelFacts& facts, const HostInfo& host, const AttachOptions& opts,
                                      BpfLoader& loader) {
  std::vector<AttachedProbe> v;
  Refusals refused;
  for (const ProbeModule* m : probe_modules()) v.push_back(attach_probe(*m, facts, opts, loader, refused));
  // Notes that depend on the machine, not on the attach; BPF state to set (after every
  // probe is loaded, as before).
  for (const ProbeModule* m : probe_modules()) {
    AttachedProbe& a = v[m->spec().id];
    if (!a.status.attached) continue;
    AttachContext ctx{a.status, facts, host, loader.object(a.handles.front()), &a.poller};
    m->after_attach(ctx);
  }
  return v;
}

}  // namespace schedhot
