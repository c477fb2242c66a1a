// The live SampleSource: reads the attached probes' slots every interval, and once more
// at the moment it is stopped.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <vector>

#include <string>

#include "probe/status.h"
#include "sample/sample.h"
#include "sys/host.h"

namespace schedhot {

/// CLOCK_MONOTONIC / CLOCK_REALTIME now, ns.
uint64_t mono_now_ns();
uint64_t wall_now_ns();

/// Samples missing between two adjacent samples gap_ns apart when one was due every
/// interval_ns: 0 below 1.5 intervals, else round(gap / interval) - 1 (the lost samples
/// top's header, serve's schedhot_lost_samples_total and replay count).
uint64_t missed_samples(uint64_t gap_ns, uint64_t interval_ns);

/// The Meta of a live run: make_meta() (the catalog with statuses, the host, ncpus), this
/// build's version, the command line ("" for none) and the interval (ns). Start times stay
/// 0 until LiveSource takes the first sample.
Meta catalog_meta(const HostInfo& host, uint32_t ncpus, const std::vector<ProbeStatus>& statuses, uint64_t interval_ns,
               const std::string& command_line);

/// When live samples are due, CLOCK_MONOTONIC ns; no clock of its own (every time comes
/// in as an argument), so it is what the unit tests drive. The first sample starts a grid
/// of interval_ns steps (absolute deadlines, no drift) that ends with a sample at
/// start + duration_ns (0 = forever).
///
/// A late sample (the process stopped: SIGSTOP, Ctrl-Z; heavy load) is taken at once but
/// never starts a catch-up burst: the next deadline is the first grid point more than a
/// tenth of an interval after it (SampleWindow's slack), so the deadlines already missed
/// are skipped. They stay lost samples, as missed_samples() counts them from the long gap;
/// the gap after the late sample is 0.1 to 1.1 intervals and counts none.
class SampleSchedule {
 public:
  SampleSchedule(uint64_t interval_ns, uint64_t duration_ns)
      : interval_ns_(std::max<uint64_t>(interval_ns, 1)), duration_ns_(duration_ns) {}

  /// Notes a sample taken at now_ns (the first one starts the grid) and plans the next
  /// deadline: the grid point after the one this sample was due at, or a later one when
  /// now_ns is past it (see above).
  void taken(uint64_t now_ns) {
    if (!started_) {
      started_ = true;
      start_ = now_ns;
      due_ = now_ns;
    }
    last_due_ = due_;
    last_ns_ = now_ns;
    uint64_t next = due_ + interval_ns_;
    if (next <= now_ns + slack()) next += ((now_ns + slack() - next) / interval_ns_ + 1) * interval_ns_;
    due_ = clamp_to_end(next);
  }
  /// False once the run is over (the next deadline is past start + duration).
  bool more() const { return !started_ || !duration_ns_ || due_ <= start_ + duration_ns_; }
  /// The next sample's deadline, ns (0 before the first sample: due at once).
  uint64_t due() const { return due_; }
  /// Changes the interval (top's +/-) and re-plans the pending deadline at once: one new
  /// interval after the last sample's deadline, or now_ns when that is already past; the
  /// grid goes on from there.
  void set_interval(uint64_t ns, uint64_t now_ns) {
    interval_ns_ = std::max<uint64_t>(ns, 1);
    if (started_) due_ = clamp_to_end(std::max(last_due_ + interval_ns_, now_ns));
  }
  uint64_t interval() const { return interval_ns_; }

 private:
  uint64_t slack() const { return interval_ns_ / 10; }
  /// A duration that is not a multiple of the interval (or a stall) still ends with a
  /// sample at its end, unless the last one came within the slack before it.
  uint64_t clamp_to_end(uint64_t next) const {
    const uint64_t end = start_ + duration_ns_;
    return duration_ns_ && next > end && last_ns_ + slack() < end ? end : next;
  }

  uint64_t interval_ns_;
  uint64_t duration_ns_;
  bool started_ = false;
  uint64_t start_ = 0;
  uint64_t due_ = 0;       ///< the next deadline
  uint64_t last_due_ = 0;  ///< the deadline the last sample was taken for
  uint64_t last_ns_ = 0;   ///< when the last sample was taken
};

/// What LiveSource reads the probes through: ProbeSet (ProbeSetReader, probe_reader.h) in schedhot,
/// a fake in the unit tests (tests/unit/test_sampler.cpp), so the sampling loop runs
/// without BPF.
class SlotReader {
 public:
  virtual ~SlotReader() = default;
  /// Status of every probe, in catalog order (ProbeSet::statuses).
  virtual const std::vector<ProbeStatus>& statuses() const = 0;
  /// Copies the probes' slots into s (ProbeSet::read): s's words hold the previous
  /// sample's (LiveSource shares them), and every word that differs is written (the
  /// blocks that differ unshared, copy_slots), so an idle interval copies nothing; its
  /// words cleared for a probe that is not read.
  virtual void read(Sample& s) const = 0;
  /// Waits up to timeout_ms, servicing the lock-address learner; returns the probes whose
  /// status changed (ProbeSet::poll). A signal ends the wait early.
  virtual std::vector<int> poll(int timeout_ms) = 0;
};

/// What a consumer of live samples reads them through (RecordingDriver, store/driver.h):
/// LiveSource in schedhot, a fake in the unit tests. Either blocking (next(), the record
/// loop) or polled from an event loop (poll(), top's UI loop); status changes (a learned
/// lock address) update meta() and are listed by take_status_changes().
class LiveCursor : public SampleSource {
 public:
  /// Non-blocking: true with out filled when a sample is due now (the baseline on the
  /// first call, a deadline that has passed, or the final sample of a stop); otherwise
  /// services what waits meanwhile (the lock learner) without sleeping and returns false
  /// with out untouched. Also false once ended().
  virtual bool poll(Sample& out) = 0;
  /// The final sample, taken now, for a caller that ends without the stop flag (top's q)
  /// or stops polling once it is set. False, out untouched, when there is nothing to
  /// finish: no baseline yet, the final sample already taken, or the run's end reached.
  virtual bool finish(Sample& out) = 0;
  /// Probe indices whose status changed since the last call (meta() already has them).
  virtual std::vector<int> take_status_changes() = 0;
};

/// Live samples from a SlotReader: the first next() returns the baseline at once, then one
/// sample per deadline of a SampleSchedule until duration (0 = forever; the last sample is
/// at its end) or stop is set (e.g. by SIGINT or SIGTERM). A stop takes one final sample at
/// once, at the moment it is seen, so the samples cover the run up to the stop and not
/// only to the last deadline; the next call then returns false. Status changes (a learned
/// lock address) update meta() and are listed by take_status_changes().
class LiveSource : public LiveCursor {
 public:
  /// reader and stop (may be null: never stopped) must outlive the source.
  LiveSource(SlotReader& reader, Meta meta, uint64_t interval_ns, uint64_t duration_ns,
             const std::atomic<bool>* stop);
  const Meta& meta() const override { return meta_; }
  /// Blocking: sleeps to the next deadline in slices of at most 100 ms, servicing the
  /// lock learner (SlotReader::poll); false once ended().
  bool next(Sample& out) override;
  /// Non-blocking next(): the sample when one is due now, else SlotReader::poll(0) and
  /// false (LiveCursor::poll).
  bool poll(Sample& out) override;
  /// The final sample, taken now (what next() and poll() do when they see the stop).
  bool finish(Sample& out) override;
  std::vector<int> take_status_changes() override;
  /// True once no sample will come: the final sample is taken, or the duration's end.
  bool ended() const { return seq_ > 0 && (finished_ || !sched_.more()); }
  /// Changes the interval (top's +/-): SampleSchedule::set_interval at CLOCK_MONOTONIC now.
  void set_interval(uint64_t ns);
  uint64_t interval() const { return sched_.interval(); }
  /// The next sample's deadline, CLOCK_MONOTONIC ns: next() sleeps until then (top's
  /// feed waits for keys meanwhile, poll() returning nothing).
  uint64_t due() const { return sched_.due(); }

 private:
  /// Reads a sample now into out and notes it in the schedule.
  void take(Sample& out);
  /// Takes the sample due now (baseline, stop, passed deadline) into out and returns
  /// true; else services the reader for up to wait_ms and returns false.
  bool step(Sample& out, int wait_ms);
  bool stopped() const { return stop_ && stop_->load(); }

  SlotReader& reader_;
  Meta meta_;
  const std::atomic<bool>* stop_;
  SampleSchedule sched_;
  uint32_t seq_ = 0;
  /// Each probe's words of the last sample taken (blocks shared with it): the next
  /// sample starts from them, so the blocks that did not change are shared, not copied.
  std::vector<SlotWords> last_words_;
  bool finished_ = false;  ///< the final sample is taken: next() returns false
  std::vector<int> changed_;
};

}  // namespace schedhot
