// Probe attachment, the half that touches the kernel: the libbpf BpfLoader (one BPF
// object per probe so a failing probe never stops the others) driven by attach_all
// (attacher.h), and the attached probes' per-CPU slot arrays, mapped read-only.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "probe/attacher.h"
#include "probe/catch_reader.h"
#include "probe/kernel_facts.h"
#include "probe/loader.h"
#include "probe/status.h"
#include "probe/records.h"
#include "schedhot/abi.h"
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
  /// into words, writing only the blocks that differ from what words holds (copy_slots);
  /// with the change marks mapped, a CPU whose marks did not move since the read that made
  /// words is not read, nor a histogram chunk whose count did not (abi.h sh_cpu_marks):
  /// one caller at a time (what was read of the marks is kept here, per probe).
  /// false (words cleared) when it is not attached.
  bool read(size_t i, SlotWords& words) const;
  /// Services the modules' pollers (bcast_wait's address learner) for up to timeout_ms
  /// (sleeps that long when there is none). Returns the indices of probes whose status changed.
  std::vector<int> poll(int timeout_ms);
  /// Adds a note to probe i's status (e.g. top's live edit of its --catch rule); the next
  /// poll() lists i as changed, so a recording writes it as a NOTE. i out of range: ignored.
  void add_note(size_t i, std::string note);
  /// File descriptors of every loaded BPF program of the attached probes (for their
  /// run-time statistics, bpf_obj_get_info_by_fd). Valid until detach().
  std::vector<int> program_fds() const;
  /// Detaches everything now.
  void detach();
  /// --exact (AttachOptions::exact): the reader of the probes' records, serviced by
  /// poll(); nullptr without --exact.
  ExactSource* exact() const { return exact_.get(); }

  /// --catch (AttachOptions::catch_armed): the reader of the caught events; nullptr
  /// without. Its stacks are symbolized with the KernelFacts' kallsyms.
  CatchSource* caught() const { return catch_.get(); }
  /// Arms (threshold_ns > 0) or disarms (0) probe `probe`'s rule (abi.h sh_catch_rule):
  /// every CPU sees it at its next event. threshold_ns should be a histogram bucket's lower
  /// bound (sh_hist_lower). Throws std::runtime_error without --catch or when the map
  /// refuses the update.
  void set_catch_rule(uint32_t probe, uint64_t threshold_ns, uint32_t per_sec);
  /// Why the interrupt accounting of caught events is off ("" when on; only with --catch).
  const std::string& catch_irq_reason() const { return catch_irq_reason_; }
  /// Why caught events carry no steal time ("" when the programs read the paravirt steal
  /// clock; only with --catch): probe/steal_clock.h.
  const std::string& catch_steal_reason() const { return catch_steal_reason_; }

  /// The gap state (AttachOptions::gaps) is kept: its maps exist and are mapped.
  bool gaps() const { return gap_slots_ != nullptr; }
  /// The gap state's sampling target, samples per second per CPU (0: every event).
  uint32_t gap_samples_per_s() const { return gap_samples_per_s_; }
  /// Writes the routes of the gap state: (index probe * SH_GAP_ROUTE_WORDS + slot word,
  /// route) pairs; every other index touches no line. Call before the baseline sample.
  /// Throws std::runtime_error when the map refuses an update.
  void set_gap_routes(const std::vector<std::pair<uint32_t, sh_gap_route>>& routes);
  /// What every CPU's gap table gained since the previous call: the (cpu, line) pairs
  /// that moved (ascending), over (previous mono_ns, mono_ns]. nullopt on the first call
  /// (the baseline: it only keeps the counts) and without the gap state. Cost: one pass
  /// over ncpus x SH_GAP_LINES entries (the entries in use are compared). Also sets each
  /// CPU's sampling period for the next interval from its events in this one
  /// (gap_period(), AttachOptions::gap_samples_per_s). A CPU's counts are its sampled gaps
  /// scaled by its events / samples of the interval (rounded at random, so without bias):
  /// estimates of every gap, which the model takes as they are.
  std::optional<GapBatch> take_gaps(uint64_t mono_ns);

 private:
  std::unique_ptr<ExactSource> exact_;
  std::unique_ptr<CatchSource> catch_;
  int catch_rules_fd_ = -1;
  std::string catch_irq_reason_;
  std::string catch_steal_reason_;
  LoadHandle catch_irq_handle_ = kNoLoad;  ///< the interrupt programs' object
  sh_gap_slot* gap_slots_ = nullptr;         ///< ncpus slots, mapped (user space writes only `period`)
  size_t gap_bytes_ = 0;
  const sh_cpu_marks* marks_live_ = nullptr;  ///< the change marks, ncpus, mapped read-only; null without
  size_t marks_bytes_ = 0;
  mutable std::vector<SlotMarks> marks_;     ///< per probe: what read() last saw of them (copy_slots)
  int gap_routes_fd_ = -1;
  std::vector<sh_gap_line> gap_prev_;        ///< per CPU x SH_GAP_LINES: the counts at the last take
  std::vector<uint64_t> gap_full_prev_;      ///< per CPU: `full` at the last take
  std::vector<uint64_t> gap_events_prev_;    ///< per CPU: `events` at the last take
  std::vector<uint64_t> gap_samples_prev_;   ///< per CPU: `samples` at the last take
  uint64_t gap_round_ = 0x9e3779b97f4a7c15ull;  ///< xorshift state of the scaled counts' rounding
  uint32_t gap_samples_per_s_ = 0;           ///< AttachOptions::gap_samples_per_s
  bool gap_started_ = false;
  uint64_t gap_last_ns_ = 0;
  uint32_t ncpus_ = 0;
  std::vector<ProbeStatus> status_;
  std::vector<int> noted_;  ///< add_note()'s probes, listed by the next poll()
  std::unique_ptr<BpfLoader> loader_;
  std::vector<AttachedProbe> probes_;  ///< by probe id
};

}  // namespace schedhot
