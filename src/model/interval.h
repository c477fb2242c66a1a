// Figures between two samples: counter deltas, rates (events/s) and histogram
// percentiles, per CPU or over all CPUs. The one place where raw cumulative samples
// become numbers; report, top and export all call it, live or recorded alike.
#pragma once
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "model/histogram.h"
#include "sample/sample.h"

namespace schedhot {

/// The span from sample a to a later sample b of the same Meta.
class Interval {
 public:
  /// a and b must outlive the Interval. b.mono_ns >= a.mono_ns.
  Interval(const Meta& meta, const Sample& a, const Sample& b);

  /// Length in seconds (0 when the samples share a timestamp).
  double seconds() const { return seconds_; }
  /// The probe has data in both samples.
  bool present(int probe) const;
  /// Delta of a counter on one CPU (cpu >= 0) or summed over all CPUs (cpu < 0). For a
  /// counter_array, idx selects an element, idx < 0 sums the array. 0 for unknown
  /// fields or absent probes.
  uint64_t count(int probe, std::string_view field, int cpu = -1, int idx = -1) const;
  /// count() / seconds(), events/s.
  double rate(int probe, std::string_view field, int cpu = -1, int idx = -1) const;
  /// Delta histogram buckets of a hist field, one CPU or all.
  std::vector<uint64_t> buckets(int probe, std::string_view field, int cpu = -1) const;
  /// Percentiles of the delta histogram. max_ns is exact when the maximum grew inside
  /// the interval, else the upper bound of the highest non-empty bucket.
  HistSummary hist(int probe, std::string_view field, int cpu = -1) const;

  /// The same over a set of CPUs (a topology group, a CPU filter): ids outside
  /// [0, ncpus) are skipped; an empty set counts nothing.
  uint64_t count(int probe, std::string_view field, std::span<const int> cpus, int idx = -1) const;
  double rate(int probe, std::string_view field, std::span<const int> cpus, int idx = -1) const;
  std::vector<uint64_t> buckets(int probe, std::string_view field, std::span<const int> cpus) const;
  HistSummary hist(int probe, std::string_view field, std::span<const int> cpus) const;

  const Meta& meta() const { return meta_; }
  const Sample& first() const { return a_; }
  const Sample& last() const { return b_; }

 private:
  uint64_t word_delta(int probe, int cpu, uint32_t word) const;
  /// The bodies of count/buckets/hist over any range of CPU ids (iota or span).
  template <class Cpus>
  uint64_t count_over(int probe, std::string_view field, const Cpus& cpus, int idx) const;
  template <class Cpus>
  std::vector<uint64_t> buckets_over(int probe, std::string_view field, const Cpus& cpus) const;
  template <class Cpus>
  HistSummary hist_over(int probe, std::string_view field, const Cpus& cpus) const;
  const Meta& meta_;
  const Sample& a_;
  const Sample& b_;
  double seconds_ = 0;
};

}  // namespace schedhot
