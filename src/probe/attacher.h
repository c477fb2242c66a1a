// Probe attachment as a generic loop over the modules, the kernel behind a BpfLoader
// (loader.h): per probe, the module's check, then its plan's candidates tried in order
// (function probes: every copy of the target; sites probes: each site on its own, then
// one object with every site that worked), the slots mapped and the module's notes. No
// libbpf here: tests/unit/test_attach.cpp drives it with a fake loader.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "probe/kernel_facts.h"
#include "probe/loader.h"
#include "probe/resolve.h"
#include "probe/status.h"
#include "sys/host.h"

namespace schedhot {

/// What to attach and how.
struct AttachOptions {
  BackendPref pref = BackendPref::automatic;
  std::vector<std::string> only;  ///< probe names to attach; empty = all
  bool verbose = false;           ///< libbpf and verifier messages to stderr
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

/// Sites probe (ProbeKind::sites): each site tried alone, fentry then kprobe, in a
/// throwaway object; then one object with every site that worked (fentry and kprobe
/// programs together). Fills out.status (sites, backend, symbol, reason) and out.handles;
/// failures gets each backend's error once.
void attach_sites(const ProbeModule& m, const Plan& plan, BpfLoader& loader, Refusals& refused,
                  std::vector<AttachTry>& failures, const std::string& nothing_to_try, AttachedProbe& out);

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
