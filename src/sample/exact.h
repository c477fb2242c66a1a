// --exact mode's records between the probes' per-CPU perf buffers and the recording: the
// source interface (ProbeSet's ExactReader in schedhot, a fake in the unit tests) and the
// time-order merge of per-CPU streams.
#pragma once
#include <cstdint>
#include <vector>

#include "sample/sample.h"

namespace schedhot {

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

}  // namespace schedhot
