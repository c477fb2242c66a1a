// Probe attachment, the half that touches the kernel: tries each probe's candidates
// (resolve.h) for real, one BPF object per probe so a failing probe never stops the
// others, and maps each attached probe's per-CPU slot array read-only.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "probe/kernel_facts.h"
#include "probe/resolve.h"
#include "probe/status.h"
#include "sample/sample.h"
#include "sys/host.h"

struct schedhot_bpf;
struct bpf_link;

namespace schedhot {

/// What to attach and how.
struct AttachOptions {
  BackendPref pref = BackendPref::automatic;
  std::vector<std::string> only;  ///< probe names to attach; empty = all
  bool verbose = false;           ///< libbpf and verifier messages to stderr
};

class LockLearner;

/// One attached probe: its own skeleton instance, links and mapped slots.
struct LoadedProbe {
  const ProbeSpec* spec = nullptr;
  schedhot_bpf* skel = nullptr;       ///< owns the slots map (and bcast_wait's .bss)
  /// One more instance per further copy of the function (clones, same-name functions),
  /// each using skel's slots map, so the copies' counts add up in one set of slots.
  std::vector<schedhot_bpf*> more_skels;
  std::vector<::bpf_link*> links;
  const uint64_t* slots = nullptr;  ///< ncpus * slot_words words, mapped read-only
  size_t map_bytes = 0;
  ~LoadedProbe();
};

/// Every probe of the catalog, attached where possible. Destroying it detaches all
/// links (nothing stays behind: no pinning).
class ProbeSet {
 public:
  /// Resolves and attaches. A probe that fails gets an unavailable status with the
  /// reason; this throws std::runtime_error only when nothing BPF can load at all.
  ProbeSet(const KernelFacts& facts, const HostInfo& host, const AttachOptions& opts);
  ~ProbeSet();
  ProbeSet(const ProbeSet&) = delete;
  ProbeSet& operator=(const ProbeSet&) = delete;

  /// Status of every probe, in catalog order.
  const std::vector<ProbeStatus>& statuses() const { return status_; }
  /// Possible CPUs = slots per probe.
  uint32_t ncpus() const { return ncpus_; }
  /// Copies every attached probe's slots into s (shaped by make_sample()), private words zeroed.
  void read(Sample& s) const;
  /// Services the tick_broadcast_lock address learner for up to timeout_ms. Returns the
  /// indices of probes whose status changed.
  std::vector<int> poll(int timeout_ms);
  /// File descriptors of every loaded BPF program of the attached probes (for their
  /// run-time statistics, bpf_obj_get_info_by_fd). Valid until detach().
  std::vector<int> program_fds() const;
  /// Detaches everything now.
  void detach();

 private:
  const KernelFacts& facts_;
  HostInfo host_;
  AttachOptions opts_;
  uint32_t ncpus_ = 0;
  std::vector<ProbeStatus> status_;
  std::vector<std::unique_ptr<LoadedProbe>> loaded_;  ///< by probe id, null when unavailable
  std::unique_ptr<LockLearner> learner_;
};

}  // namespace schedhot
