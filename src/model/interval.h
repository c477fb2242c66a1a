// Figures between two samples: counter deltas, rates (events/s) and histogram
// percentiles, per CPU or over all CPUs. The one place where raw cumulative samples
// become numbers; report, top and export all call it, live or recorded alike.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "model/histogram.h"
#include "sample/sample.h"

namespace schedhot {

/// A --from/--to window over a recording's samples, in seconds since its first sample
/// (from_s/to_s < 0: that side is open). An edge takes samples up to a tenth of an interval
/// (interval_ns) on its far side: a sample is taken a little after its nominal time
/// (+5.0009 s for the sixth at -i 1), so `--to 5s` includes it and `--from 2s` the one
/// at +1.9995 s. What report, export and their seeks all use.
struct SampleWindow {
  double from_s = -1, to_s = -1;
  uint64_t interval_ns = 0;
  double slack_s() const { return static_cast<double>(interval_ns) / 10e9 + 1e-9; }
  bool before(double t) const { return from_s >= 0 && t < from_s - slack_s(); }
  bool after(double t) const { return to_s >= 0 && t > to_s + slack_s(); }
  /// Where a seek to the window's start lands (ns after the first sample).
  uint64_t start_ns() const {
    const double s = from_s - slack_s();
    return s > 0 ? static_cast<uint64_t>(s * 1e9) : 0;
  }
};

/// A named field of one probe, looked up once (SlotFields::find) instead of by name per
/// value: what the hot paths of report, export and the tables hand to Interval. Points
/// into the Meta it was made from, which must outlive it. Empty (field null) when the
/// probe or field is unknown; every Interval figure of an empty ref is 0 / empty.
struct FieldRef {
  int probe = -1;
  const Field* field = nullptr;
  explicit operator bool() const { return probe >= 0 && field; }
};
/// probe's field of meta, or an empty FieldRef (probe out of range, no such field).
FieldRef field_ref(const Meta& meta, int probe, std::string_view field);

/// The span from sample a to a later sample b of the same Meta.
class Interval {
 public:
  /// a and b must outlive the Interval. b.mono_ns >= a.mono_ns. a's words may be hollow
  /// (SlotWords::hollow) when b's state was made from exactly a's (SlotWords::delta_from,
  /// or the same stamp): every figure is then read from b and that delta; a probe whose
  /// hollow words have no such delta is not present().
  Interval(const Meta& meta, const Sample& a, const Sample& b);
  /// The same with what changed from a to b given per probe (deltas[p], null: none; one per
  /// probe of meta or fewer): a's words may then be hollow for those probes (the report's
  /// window, whose first sample is kept sparse: IntervalCursor::window_interval). Each
  /// delta must be exact (b's words minus its changes are a's) and outlive the Interval.
  Interval(const Meta& meta, const Sample& a, const Sample& b, std::span<const SlotDelta* const> deltas);

  /// Length in seconds (0 when the samples share a timestamp).
  double seconds() const { return seconds_; }
  /// The probe has data in both samples.
  bool present(int probe) const;
  /// The CPU was measured in this interval: it was online at either end (Sample::online;
  /// a sample that does not know counts every CPU as online), or its slot words moved
  /// (it came online and went offline again in between). A CPU that was not is "not
  /// measured" in every view (-, null, an empty cell), never 0; its deltas are 0, so the
  /// all-CPU figures are sums over the measured CPUs. false for ids outside [0, ncpus).
  bool online(int cpu) const;
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
  /// hist() and buckets() of the same CPUs in one pass over them (the histogram view).
  HistSummary hist(int probe, std::string_view field, std::span<const int> cpus, std::vector<uint64_t>& buckets) const;

  /// The same with a resolved field (field_ref() of this interval's Meta): no lookup by name.
  uint64_t count(const FieldRef& f, int cpu = -1, int idx = -1) const;
  double rate(const FieldRef& f, int cpu = -1, int idx = -1) const;
  HistSummary hist(const FieldRef& f, int cpu = -1) const;
  uint64_t count(const FieldRef& f, std::span<const int> cpus, int idx = -1) const;
  double rate(const FieldRef& f, std::span<const int> cpus, int idx = -1) const;
  HistSummary hist(const FieldRef& f, std::span<const int> cpus) const;

  /// Deltas of chosen words of probe's slot on one CPU, for hot loops that read many
  /// fields per CPU (the coherence model): out[w] = the delta of word w (a reset reads as
  /// 0) for each w in words; other entries of out may be written too (with their words'
  /// deltas), so out holds slot_words entries. Requires present(probe), 0 <= cpu < ncpus
  /// and every w < slot_words.
  void word_deltas(int probe, int cpu, std::span<const uint32_t> words, uint64_t* out) const;

  /// probe's histogram `field` of the first sample summed over every CPU (mod 2^64, as
  /// summed_histogram()), also when its words are hollow (then b's sum minus what changed).
  /// Empty when the probe is not present or has no such histogram field.
  std::vector<uint64_t> first_summed(int probe, std::string_view field) const;

  const Meta& meta() const { return meta_; }
  /// The samples (their words: first()'s may be hollow, see the constructor).
  const Sample& first() const { return a_; }
  const Sample& last() const { return b_; }

 private:
  /// The bodies of count/buckets/hist over any range of CPU ids (iota or span).
  template <class Cpus>
  uint64_t count_over(int probe, const Field* f, const Cpus& cpus, int idx) const;
  template <class Cpus>
  std::vector<uint64_t> buckets_over(int probe, const Field* f, const Cpus& cpus) const;
  template <class Cpus>
  HistSummary hist_over(int probe, const Field* f, const Cpus& cpus, std::vector<uint64_t>* keep = nullptr) const;
  /// probe's field by name (nullptr when the probe or field is unknown).
  const Field* find(int probe, std::string_view field) const;
  /// Word w of CPU c of a's slot: read, or (a hollow) b's minus its change in the delta.
  uint64_t word_a(int probe, uint32_t c, uint32_t w) const;
  /// Whether a's words of probe are hollow (read through the delta).
  bool hollow_a(int probe) const { return hollow_[size_t(probe)]; }
  const Meta& meta_;
  const Sample& a_;
  const Sample& b_;
  double seconds_ = 0;
  std::vector<char> present_;  ///< per probe: present(), decided once
  /// per probe: what changed from a to b when b's state was made from exactly a's
  /// (SlotWords::delta_from), else null: the histograms then read only the words that grew
  std::vector<const SlotDelta*> delta_;
  std::vector<char> hollow_;    ///< per probe: a's words are hollow (present() implies a delta)
  std::shared_ptr<SlotDelta> none_;  ///< the delta of a hollow a with b's very stamp: nothing moved
  mutable std::vector<int8_t> online_;  ///< per CPU: -1 not asked yet, else online()
};

}  // namespace schedhot
