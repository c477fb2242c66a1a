// The live SampleSource: reads the attached probes' slots every interval.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <vector>

#include "probe/attach.h"
#include "sample/sample.h"

namespace schedhot {

/// CLOCK_MONOTONIC / CLOCK_REALTIME now, ns.
uint64_t mono_now_ns();
uint64_t wall_now_ns();

/// When live samples are due, CLOCK_MONOTONIC ns; no clock of its own (every time comes
/// in as an argument), so it is what the unit tests drive. The first sample starts a grid
/// of interval_ns steps (absolute deadlines, no drift) that ends with a sample at
/// start + duration_ns (0 = forever).
class SampleSchedule {
 public:
  SampleSchedule(uint64_t interval_ns, uint64_t duration_ns)
      : interval_ns_(interval_ns), duration_ns_(duration_ns) {}

  /// Notes a sample taken at now_ns (the first one starts the grid) and plans the next deadline.
  void taken(uint64_t now_ns) {
    if (!started_) {
      started_ = true;
      start_ = now_ns;
      due_ = now_ns;
    }
    due_ += interval_ns_;
    const uint64_t end = start_ + duration_ns_;
    if (duration_ns_ && due_ > end && now_ns + 1000000 < end) due_ = end;
  }
  /// False once the run is over (the next deadline is past start + duration).
  bool more() const { return !started_ || !duration_ns_ || due_ <= start_ + duration_ns_; }
  /// The next sample's deadline, ns (0 before the first sample: due at once).
  uint64_t due() const { return due_; }
  /// Changes the interval from the next sample on.
  void set_interval(uint64_t ns, uint64_t now_ns) {
    (void)now_ns;
    interval_ns_ = ns;
  }
  uint64_t interval() const { return interval_ns_; }
  /// The first sample's time, ns (0 before it).
  uint64_t start() const { return start_; }
  /// Deadlines skipped so far because a sample came too late for them.
  uint64_t skipped() const { return skipped_; }

 private:
  uint64_t interval_ns_;
  uint64_t duration_ns_;
  bool started_ = false;
  uint64_t start_ = 0;
  uint64_t due_ = 0;
  uint64_t skipped_ = 0;
};

/// Live samples from a ProbeSet: the first next() returns the baseline at once, then one
/// sample per deadline of a SampleSchedule until duration (0 = forever) or stop is set
/// (e.g. by SIGINT). Status changes (a learned lock address) update meta() and are listed
/// by take_status_changes().
class LiveSource : public SampleSource {
 public:
  LiveSource(ProbeSet& probes, Meta meta, uint64_t interval_ns, uint64_t duration_ns,
             const std::atomic<bool>* stop);
  const Meta& meta() const override { return meta_; }
  bool next(Sample& out) override;
  /// Probe indices whose status changed since the last call.
  std::vector<int> take_status_changes();
  /// Changes the interval (top's +/-): SampleSchedule::set_interval at CLOCK_MONOTONIC now.
  void set_interval(uint64_t ns);
  uint64_t interval() const { return sched_.interval(); }
  /// The next sample's deadline, CLOCK_MONOTONIC ns: next() returns once it has passed.
  uint64_t due() const { return sched_.due(); }

 private:
  ProbeSet& probes_;
  Meta meta_;
  const std::atomic<bool>* stop_;
  SampleSchedule sched_;
  uint32_t seq_ = 0;
  std::vector<int> changed_;
};

}  // namespace schedhot
