// What the probes produce besides their slot words, as user space holds it: the --exact
// records (and their source interface: ProbeSet's ExactReader in schedhot, a fake in the
// unit tests; the time-order merge of per-CPU streams) and the gap state's counts of an
// interval. Samples (sample/sample.h) carry both.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "probe/catalog.h"
#include "probe/slot_words.h"
#include "schedhot/abi.h"

namespace schedhot {

/// One --exact record (include/schedhot/abi.h struct sh_exact_rec): counter word `word` of
/// probe `probe`'s slot was incremented on `cpu` at CLOCK_MONOTONIC ts_ns.
struct ExactRecord {
  uint64_t ts_ns = 0;
  uint32_t cpu = 0;
  uint16_t probe = 0;
  uint16_t word = 0;
  bool operator==(const ExactRecord&) const = default;
};

/// The --exact records of one interval in time order, and the records the kernel lost
/// (perf buffer full) in it.
struct ExactBatch {
  std::vector<ExactRecord> records;
  uint64_t lost = 0;
  bool operator==(const ExactBatch&) const = default;
};

/// The probes' gap state (include/schedhot/abi.h struct sh_gap_slot, issue 29) over one
/// interval: what CPU `cpu` added to the three gap histograms of line `line` (an index into
/// Meta::gap_lines) since the previous sample. Bucket geometry: abi.h sh_gap_index.
struct GapCounts {
  uint32_t cpu = 0;
  uint32_t line = 0;
  std::array<uint32_t, SH_GAP_BUCKETS> ww{}, wa{}, ra{};
  bool operator==(const GapCounts&) const = default;
};

/// The gap counts of one interval (from_ns, the sample's mono_ns]: only the (CPU, line)
/// pairs that moved, ascending (cpu, line).
struct GapBatch {
  uint64_t from_ns = 0;  ///< the previous sample's mono_ns (CLOCK_MONOTONIC)
  std::vector<GapCounts> counts;
  uint64_t full = 0;     ///< line accesses no CPU table had room for, summed over CPUs
  bool operator==(const GapBatch&) const = default;
};

/// One frame of a caught event's kernel stack, symbolized when it was recorded (kallsyms
/// of the traced host): function and offset into it, never the address (a recording must
/// not carry the host's KASLR base). sym "" : no symbol covered the address.
struct StackFrame {
  std::string sym;
  uint64_t off = 0;
  bool operator==(const StackFrame&) const = default;
};

/// One caught tail event (--catch; include/schedhot/abi.h struct sh_catch_rec): probe
/// `probe` on `cpu` took dur_ns >= its rule's threshold, ending at CLOCK_MONOTONIC ts_ns.
struct CaughtEvent {
  uint64_t ts_ns = 0;       ///< end of the event (exit), CLOCK_MONOTONIC ns
  uint64_t dur_ns = 0;      ///< what the probe's histogram counted, ns
  uint32_t cpu = 0;
  uint16_t probe = 0;       ///< enum sh_probe_id
  uint16_t flags = 0;       ///< abi.h SH_CATCH_F_*
  uint32_t pid = 0;         ///< thread id of the task it ran in
  uint32_t tgid = 0;        ///< its process
  std::string comm;         ///< the task's comm (at most 15 bytes)
  uint64_t detail = 0;      ///< the probe's own detail (abi.h sh_catch_rec.detail), with SH_CATCH_F_DETAIL
  uint64_t irq_ns = 0;      ///< hard-IRQ time on cpu inside [ts_ns - dur_ns, ts_ns] (SH_CATCH_F_IRQ)
  uint64_t softirq_ns = 0;  ///< softirq time there (including hard IRQs inside a softirq)
  uint64_t nmi_ns = 0;      ///< NMI time there
  uint64_t steal_ns = 0;    ///< this vCPU's steal time there, <= dur_ns (SH_CATCH_F_STEAL; else not kept)
  uint32_t stack = 0;       ///< index + 1 into CatchBatch::stacks; 0: no stack
  bool operator==(const CaughtEvent&) const = default;
};

/// The caught events of one sample interval in time order, the unique kernel stacks they
/// name (innermost frame first), and the records the perf buffers lost (the probes' slots
/// count every drop per probe as well: sh_catch.full_drops).
struct CatchBatch {
  std::vector<std::vector<StackFrame>> stacks;
  std::vector<CaughtEvent> events;
  uint64_t lost = 0;
  bool operator==(const CatchBatch&) const = default;
};

/// A --catch rule as armed (META catch_rules): events of probe `probe` whose duration is at
/// least threshold_ns, the lower bound of histogram bucket sh_hist_index(threshold_ns)
/// (the asked threshold rounded up to one, so the histogram counts exactly the events the
/// rule sees from that bucket on), at most per_sec per CPU per second. A percentile rule (`>p99`) re-arms
/// threshold_ns each interval from the running histogram; its first threshold is the
/// histogram's top.
struct CatchRule {
  std::string text;            ///< as given: "cpupri_set>20us"
  std::string probe;
  uint64_t asked_ns = 0;       ///< the threshold asked for (0 for a percentile rule)
  double percentile = 0;       ///< 0 < p < 100 for ">pNN", else 0
  uint64_t threshold_ns = 0;   ///< armed: a bucket's lower bound
  uint32_t per_sec = 0;        ///< per CPU; 0: no limit
  bool operator==(const CatchRule&) const = default;
};

/// Sampled gap counts to estimates of every gap (abi.h "Sampling"): each bucket of g
/// times scale (a CPU's events / samples over the interval), rounded up or down at random
/// in proportion (so the sum stays unbiased), at most 2^32-1. rng: a xorshift64 state,
/// not 0. scale 1: g unchanged.
void scale_gap_counts(GapCounts& g, double scale, uint64_t& rng);


/// Merges per-CPU record streams into one in time order (ts_ns; equal times keep the
/// order of the streams, then of their records: stable). Each stream is sorted first
/// when it is not in order already (a program run by an interrupt between another's
/// bpf_ktime_get_ns() and its output can put a later record first). k-way merge with a
/// heap: O(n log k) for n records in k non-empty streams. Consumes the streams.
std::vector<ExactRecord> merge_by_time(std::vector<std::vector<ExactRecord>>& streams);

/// Where --exact records come from (the recording loop takes them at every sample; the
/// source reads its buffers on its own meanwhile).
class ExactSource {
 public:
  virtual ~ExactSource() = default;
  /// Drains what the kernel has written, then returns the buffered records with
  /// ts_ns <= upto_ns in time order and the losses counted since the last take; later
  /// records stay buffered for the next call.
  virtual ExactBatch take(uint64_t upto_ns) = 0;
};

/// Copies one probe's slot array (ncpus * slot.slot_words u64 words, CPU-major, as the
/// BPF array map holds it) into words (made all-zero of that shape first when its shape
/// differs), with the private words zeroed: what ProbeSet::read does with a mapped map
/// (and the user-space benchmark with a fake). Only the blocks whose words differ (private
/// words aside) are written, each unshared first (SlotWords::mut_block): when words start
/// as a copy of the previous sample's, an idle interval compares and allocates nothing.
/// Each CPU's words are read with its witness fields (Field::witness) read before and
/// compared after: a CPU whose witnesses moved meanwhile is copied again (up to 16 tries),
/// so an event is never in a witness and missing from the words the program wrote before
/// it. between (tests): called for each CPU copied, after its witnesses' first read.
/// Returns the number of blocks written.
/// What copy_slots knows of a probe's change marks (abi.h struct sh_cpu_marks, a mapped
/// array the programs write): the array, and what it read of them for the words it wrote
/// last (per CPU the probe's gen and histogram chunk counts).
struct SlotMarks {
  const sh_cpu_marks* live = nullptr;  ///< ncpus entries, mapped; nullptr: no marks
  uint32_t probe = 0;                  ///< enum sh_probe_id: the gen and chunk row read
  std::vector<uint64_t> gen;           ///< per CPU, as read
  std::vector<uint32_t> chunk;         ///< per CPU, SH_MARK_CHUNKS each, as read
  uint64_t stamp = 0;                  ///< the words' stamp after that copy (0: none yet)
};
/// With marks (their live array set): a CPU whose gen is what marks kept for the words
/// being updated (their stamp is marks->stamp) is not read at all, and of its histogram
/// (the layout's hist field) only the chunks of SH_MARK_CHUNK_WORDS buckets whose count
/// moved are; words of another stamp are read in full. marks is updated to what was read.
/// (bpf/common.bpf.h sh_mark, sh_hist_add write the marks after the words.)
size_t copy_slots(const uint64_t* slots, uint32_t ncpus, const SlotFields& layout, SlotWords& words,
                  const std::function<void(uint32_t cpu)>* between = nullptr, SlotMarks* marks = nullptr);
/// CPUs copy_slots copied again because their witnesses moved, in this process so far.
uint64_t slot_rereads();

}  // namespace schedhot
