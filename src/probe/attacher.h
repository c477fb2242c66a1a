// Probe attachment as a generic loop over the modules, the kernel behind a BpfLoader
// (loader.h): per probe, the module's check, then its plan's candidates tried in order
// (function probes: every copy of the target; sites probes: each site on its own, then
// one object with every site that worked), the slots mapped and the module's notes. No
// libbpf here: tests/unit/test_attach.cpp drives it with a fake loader.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "probe/kernel_facts.h"
#include "probe/loader.h"
#include "probe/resolve.h"
#include "probe/status.h"
#include "sys/host.h"

namespace schedhot {

/// The gap state's default sampling target: gap samples per second per CPU. At most
/// about this many events per second per CPU pay the gap state's full cost (a clock read
/// and a table search, 100-170 ns on a kvm-clock host: README "Benchmarks"), whatever
/// the event rate, as perf's default sampling frequency bounds its cost.
inline constexpr uint32_t kGapSamplesPerS = 4000;

/// The sampling period that keeps a CPU noting events_per_s near samples_per_s gap
/// samples per second: ceil(events_per_s / samples_per_s), from 1 (every event) to 2^20
/// (bpf/gaps.bpf.c's bound); 1 when samples_per_s is 0 or the rate is not a number.
uint32_t gap_period(double events_per_s, uint32_t samples_per_s);

/// What to attach and how.
struct AttachOptions {
  BackendPref pref = BackendPref::automatic;
  std::vector<std::string> only;  ///< probe names to attach; empty = all
  bool verbose = false;           ///< libbpf and verifier messages to stderr
  /// --exact: every object gets sh_exact = 1 and shares one sh_exact_events perf map
  /// (ProbeSet::exact() reads it).
  bool exact = false;
  /// The gap state (include/schedhot/abi.h sh_gap_slot, on unless --no-gap-state): every
  /// object gets sh_gaps = 1 and shares one slot map and one route map
  /// (ProbeSet::set_gap_routes, take_gaps).
  bool gaps = false;
  /// The gap state's sampling target, gap samples per second per CPU (abi.h "Sampling",
  /// gap_period()); 0: every event (the exact gaps, at full cost).
  uint32_t gap_samples_per_s = kGapSamplesPerS;
  /// --catch: every object gets sh_catch_armed = 1 and shares the rule map, the caught
  /// events' perf map and the interrupt rings (bpf/catch.bpf.c's programs attached, when
  /// they load: sh_catch_irq = 1); ProbeSet::set_catch_rule arms a probe's rule.
  bool catch_armed = false;
  /// A bcast_wait rule at start (--catch): bcast_lock's sites attach their exit programs
  /// too, and every object shares the holder state (abi.h struct sh_bcast_holder), so a
  /// caught wait names the CPU and site that held tick_broadcast_lock.
  bool bcast_holder = false;
  /// The probes with a --catch rule at start, 1 << enum sh_probe_id each: only their events
  /// read the paravirt steal clock (bpf/common.bpf.h sh_catch_steal).
  uint32_t catch_probes = 0;
};

/// A backend refused for good (fentry or kprobes EPERM/EACCES at load: lockdown, an LSM):
/// later tries of it, for any probe, are skipped with the same reason.
struct Refusals {
  std::string fentry;
  std::string kprobe;
  /// The refusal slot of b, nullptr for backends never refused globally (tracepoint).
  std::string* of(Backend b);
};

/// One probe's attach outcome.
struct AttachedProbe {
  ProbeStatus status;
  /// Loaded objects: [0] owns the slots map, the others are further copies of the
  /// function sharing it. Empty when not attached.
  std::vector<LoadHandle> handles;
  const uint64_t* slots = nullptr;       ///< mapped slots of handles[0]
  std::unique_ptr<ProbePoller> poller;   ///< the module's work after attach, or null
};

/// A sites probe's first step, for site i (spec.symbols[i], resolved as plan.sites[i]):
/// tried alone in a throwaway object (released at once), fentry then kprobe; a backend
/// refused for good is skipped with its refusal, and a new policy refusal is recorded in
/// refused. Returns the site's status (backend, or why no backend worked: its own errors,
/// then the probe's function failures, else nothing_to_try); worked is the program that
/// attached, for the final object, or empty. Each backend's error enters failures once.
SiteStatus try_site(const ProbeModule& m, const Plan& plan, size_t i, BpfLoader& loader, Refusals& refused,
                    std::vector<AttachTry>& failures, const std::string& nothing_to_try,
                    std::optional<ProgRequest>& worked);

/// A sites probe's second step: one object with every program that worked alone (progs),
/// fentry and kprobe programs together, each attached on its own (LoadRequest::partial).
/// A site whose program fails there, or every attached site when the object does not
/// load, is marked unattached in sites with describe_attach_error's text. An exit program
/// (ProgRole::exit) that fails to attach leaves its site attached, with exit_error;
/// exit_attached is set for each site whose exit attached. Returns the object, or kNoLoad
/// when progs is empty or the load failed.
LoadHandle load_sites_object(const ProbeModule& m, const std::vector<ProgRequest>& progs, BpfLoader& loader,
                             std::vector<SiteStatus>& sites);

/// A sites probe's last step, from out.status.sites: attached when some site is and kept
/// is loaded (backend fentry if any site uses it, symbol "N of M functions", via
/// "(fentry and kprobe mixed)" when both are used; kept joins out.handles); else kept is
/// released and status.reason is the first resolved site's error, else the failures,
/// else nothing_to_try or "no function that takes the lock could be probed".
void conclude_sites(LoadHandle kept, BpfLoader& loader, const std::vector<AttachTry>& failures,
                    const std::string& nothing_to_try, AttachedProbe& out);

/// The exit programs (ProgRole::exit, kretprobe for kprobe sites) of a sites probe's
/// entries, first, then the entries: an exit attached before its entry never misses the
/// end of a call it saw begin.
std::vector<ProgRequest> with_site_exits(const std::vector<ProgRequest>& entries);

/// Sites probe (ProbeKind::sites): try_site for each site, load_sites_object with every
/// site that worked, conclude_sites. Fills out.status (sites, backend, symbol, reason) and out.handles;
/// failures gets each backend's error once. exits (AttachOptions::bcast_holder): the
/// object also has each site's exit program (SiteStatus::exit_attached); when that object
/// does not load, the entries alone are loaded as without exits (and exit_error says why).
void attach_sites(const ProbeModule& m, const Plan& plan, BpfLoader& loader, Refusals& refused,
                  std::vector<AttachTry>& failures, const std::string& nothing_to_try, AttachedProbe& out,
                  bool exits = false);

/// Function and tracepoint probes: every copy of the target tried with its own
/// candidates, best first, each copy that attaches kept (sharing the first's slots);
/// the copy-less candidates (tracepoint programs, the proxy) only when no copy attached.
void attach_function(const ProbeModule& m, const Plan& plan, BpfLoader& loader, Refusals& refused,
                     std::vector<AttachTry>& failures, const std::string& nothing_to_try, AttachedProbe& out);

/// The failures, fentry first then kprobe then tracepoint (stable), each once, as st.tried.
void record_tried(std::vector<AttachTry> failures, ProbeStatus& st);

/// One probe: selection (--probes), resolution, the module's check, the attach, the
/// slots mapping; not after_attach. Handles of a probe that ends unattached are released.
AttachedProbe attach_probe(const ProbeModule& m, const KernelFacts& facts, const AttachOptions& opts,
                           BpfLoader& loader, Refusals& refused);

/// Every module, in catalog order, then each attached module's after_attach. The result
/// is indexed by sh_probe_id.
std::vector<AttachedProbe> attach_all(const KernelFacts& facts, const HostInfo& host, const AttachOptions& opts,
                                      BpfLoader& loader);

}  // namespace schedhot
