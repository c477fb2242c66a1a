// What the probes produce besides their slot words, as user space holds it: the --exact
// records (and their source interface: ProbeSet's ExactReader in schedhot, a fake in the
// unit tests; the time-order merge of per-CPU streams) and the gap state's counts of an
// interval. Samples (sample/sample.h) carry both.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "probe/catalog.h"
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
/// BPF array map holds it) into words, resized to fit, with the private words zeroed:
/// what ProbeSet::read does with a mapped map (and the user-space benchmark with a fake).
void copy_slots(const uint64_t* slots, uint32_t ncpus, const SlotFields& layout, std::vector<uint64_t>& words);

}  // namespace schedhot
