// The live SampleSource: reads the attached probes' slots every interval.
#pragma once
#include <atomic>
#include <cstdint>
#include <vector>

#include "probe/attach.h"
#include "sample/sample.h"

namespace schedhot {

/// CLOCK_MONOTONIC / CLOCK_REALTIME now, ns.
uint64_t mono_now_ns();
uint64_t wall_now_ns();

/// Live samples from a ProbeSet: the first next() returns the baseline at once, then one
/// sample per interval (absolute deadlines, no drift) until duration (0 = forever) or
/// stop is set (e.g. by SIGINT). Status changes (a learned lock address) update meta()
/// and are listed by take_status_changes().
class LiveSource : public SampleSource {
 public:
  LiveSource(ProbeSet& probes, Meta meta, uint64_t interval_ns, uint64_t duration_ns,
             const std::atomic<bool>* stop);
  const Meta& meta() const override { return meta_; }
  bool next(Sample& out) override;
  /// Probe indices whose status changed since the last call.
  std::vector<int> take_status_changes();
  /// Changes the interval from the next sample on (top's +/-).
  void set_interval(uint64_t ns) { interval_ns_ = ns; }
  uint64_t interval() const { return interval_ns_; }

 private:
  ProbeSet& probes_;
  Meta meta_;
  uint64_t interval_ns_;
  uint64_t duration_ns_;
  const std::atomic<bool>* stop_;
  uint64_t start_ = 0;
  uint64_t next_due_ = 0;
  uint32_t seq_ = 0;
  std::vector<int> changed_;
};

}  // namespace schedhot
