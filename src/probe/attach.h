// Probe attachment, the half that touches the kernel: the libbpf BpfLoader (one BPF
// object per probe so a failing probe never stops the others) driven by attach_all
// (attacher.h), and the attached probes' per-CPU slot arrays, mapped read-only.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "probe/attacher.h"
#include "probe/kernel_facts.h"
#include "probe/loader.h"
#include "probe/status.h"
#include "sample/exact.h"
#include "sys/host.h"

namespace schedhot {

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
  /// Probes (= statuses().size()).
  size_t size() const { return probes_.size(); }
  /// Copies probe i's slots, ncpus * slot_words words CPU-major with private words zeroed,
  /// into words; false (words cleared) when it is not attached.
  bool read(size_t i, std::vector<uint64_t>& words) const;
  /// Services the modules' pollers (bcast_wait's address learner) for up to timeout_ms
  /// (sleeps that long when there is none). Returns the indices of probes whose status changed.
  std::vector<int> poll(int timeout_ms);
  /// File descriptors of every loaded BPF program of the attached probes (for their
  /// run-time statistics, bpf_obj_get_info_by_fd). Valid until detach().
  std::vector<int> program_fds() const;
  /// Detaches everything now.
  void detach();
  /// --exact (AttachOptions::exact): the reader of the probes' records, serviced by
  /// poll(); nullptr without --exact.
  ExactSource* exact() const { return exact_.get(); }

 private:
  std::unique_ptr<ExactSource> exact_;
  uint32_t ncpus_ = 0;
  std::vector<ProbeStatus> status_;
  std::unique_ptr<BpfLoader> loader_;
  std::vector<AttachedProbe> probes_;  ///< by probe id
};

}  // namespace schedhot
