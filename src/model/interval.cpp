#include "model/interval.h"

#include <algorithm>
#include <cstring>
#include <ranges>

#include "schedhot/abi.h"

namespace schedhot {

namespace {

/// A slot word's growth from x to y: counters only grow, so a reset reads as 0.
inline uint64_t grown(uint64_t x, uint64_t y) { return y >= x ? y - x : 0; }

/// The most CPUs whose histogram hist_over merges from a delta's entries rather than
/// summing densely (a topology group; an LLC is 16 CPUs on the benchmark's machine).
constexpr size_t kSparseGroup = 64;

/// A histogram field's entries on one CPU of a SlotDelta: its buckets' entries [lo, hi)
/// and sum_ns's growth. Every bucket that moved counts, as in the dense compare
/// (buckets_over), sum_ns or not.
struct HistEntries {
  uint32_t lo = 0, hi = 0;
  uint64_t sum = 0;
};
HistEntries hist_entries(const SlotDelta& d, uint32_t cpu, uint32_t offset) {
  const uint32_t at = offset + 2, i1 = d.first[size_t(cpu) + 1];
  HistEntries h;
  uint32_t i = d.first[size_t(cpu)];
  for (; i < i1 && d.word[i] < at; ++i)
    if (d.word[i] == offset) h.sum = d.grown[i];
  h.lo = h.hi = i;
  while (h.hi < i1 && d.word[h.hi] - at < SH_HIST_BUCKETS) ++h.hi;
  return h;
}

/// s (summarized with max_ns, 0 = not known) capped at the cumulative maximum max_b.
HistSummary capped(HistSummary s, uint64_t max_ns, uint64_t max_b) {
  if (max_ns == 0 && s.count && max_b && s.max_ns > max_b) {
    // The cumulative maximum bounds every value of the interval: percentiles too.
    s.max_ns = max_b;
    for (double* p : {&s.p10, &s.p50, &s.p90, &s.p98, &s.p99}) *p = std::min(*p, double(max_b));
  }
  return s;
}

}  // namespace

namespace {

/// CPU ids for the single-CPU overloads: one CPU, all CPUs (cpu < 0), or none when out of range.
auto cpu_range(int cpu, uint32_t ncpus) {
  const int n = static_cast<int>(ncpus);
  if (cpu < 0) return std::views::iota(0, n);
  return cpu < n ? std::views::iota(cpu, cpu + 1) : std::views::iota(0, 0);
}

}  // namespace

FieldRef field_ref(const Meta& meta, int probe, std::string_view field) {
  if (probe < 0 || probe >= static_cast<int>(meta.probes.size())) return {};
  const Field* f = meta.probes[size_t(probe)].slot.find(field);
  return f ? FieldRef{probe, f} : FieldRef{};
}

const Field* Interval::find(int probe, std::string_view field) const {
  if (probe < 0 || probe >= static_cast<int>(meta_.probes.size())) return nullptr;
  return meta_.probes[size_t(probe)].slot.find(field);
}

Interval::Interval(const Meta& meta, const Sample& a, const Sample& b) : Interval(meta, a, b, {}) {}

Interval::Interval(const Meta& meta, const Sample& a, const Sample& b, std::span<const SlotDelta* const> deltas)
    : meta_(meta), a_(a), b_(b) {
  seconds_ = b.mono_ns > a.mono_ns ? static_cast<double>(b.mono_ns - a.mono_ns) / 1e9 : 0.0;
  present_.resize(meta_.probes.size());
  hollow_.assign(meta_.probes.size(), 0);
  delta_.assign(meta_.probes.size(), nullptr);
  for (size_t p = 0; p < meta_.probes.size(); ++p) {
    if (p >= a_.probes.size() || p >= b_.probes.size()) continue;
    const auto& pa = a_.probes[p];
    const auto& pb = b_.probes[p];
    const uint32_t sw = meta_.probes[p].slot.slot_words;
    present_[p] = pa.present && pb.present && sw && meta_.ncpus && pa.words.shaped(meta_.ncpus, sw) &&
                  pb.words.shaped(meta_.ncpus, sw) && !pb.words.is_hollow();
    if (!present_[p]) continue;
    const SlotDelta* d = p < deltas.size() ? deltas[p] : pb.words.delta_from(pa.words);
    if (!d && pa.words.is_hollow() && pa.words.stamp() && pa.words.stamp() == pb.words.stamp()) {
      // The same state: nothing moved.
      if (!none_) {
        none_ = std::make_shared<SlotDelta>();
        none_->first.assign(size_t(meta_.ncpus) + 1, 0);
      }
      d = none_.get();
    }
    if (d && d->first.size() == size_t(meta_.ncpus) + 1) delta_[p] = d;
    hollow_[p] = pa.words.is_hollow();
    if (hollow_[p] && !delta_[p]) present_[p] = 0;  // a's words are nowhere to be read
  }
}

uint64_t Interval::word_a(int probe, uint32_t c, uint32_t w) const {
  const uint64_t now = b_.probes[size_t(probe)].words.cpu(c)[w];
  if (!hollow_[size_t(probe)]) return a_.probes[size_t(probe)].words.cpu(c)[w];
  const SlotDelta& d = *delta_[size_t(probe)];
  for (uint32_t i = d.first[c], e = d.first[size_t(c) + 1]; i < e && d.word[i] <= w; ++i) {
    if (d.word[i] == w) return now - d.change(i);
  }
  return now;  // unchanged
}

std::vector<uint64_t> Interval::first_summed(int probe, std::string_view field) const {
  const Field* f = present(probe) ? find(probe, field) : nullptr;
  if (!f || f->kind != FieldKind::hist) return {};
  if (!hollow_a(probe)) return summed_histogram(meta_, a_, probe, std::string(field));
  std::vector<uint64_t> out = summed_histogram(meta_, b_, probe, std::string(field));
  if (out.size() != SH_HIST_BUCKETS) return out;
  // Minus every bucket's change (new - old mod 2^64, so the sum is exact mod 2^64 as the
  // dense sum of a's buckets is).
  const SlotDelta& d = *delta_[size_t(probe)];
  const uint32_t at = f->offset + 2;
  for (size_t i = 0; i < d.word.size(); ++i)
    if (d.word[i] - at < SH_HIST_BUCKETS && d.grown[i]) out[d.word[i] - at] -= d.grown[i];
  for (const auto& [i, change] : d.shrunk)
    if (i < d.word.size() && d.word[i] - at < SH_HIST_BUCKETS) out[d.word[i] - at] -= change;
  return out;
}

bool Interval::present(int probe) const {
  return probe >= 0 && static_cast<size_t>(probe) < present_.size() && present_[size_t(probe)];
}

bool Interval::online(int cpu) const {
  if (cpu < 0 || cpu >= static_cast<int>(meta_.ncpus)) return false;
  if (a_.online.empty() && b_.online.empty()) return true;  // nothing known: as before hotplug was recorded
  if (online_.size() != meta_.ncpus) online_.assign(meta_.ncpus, -1);
  int8_t& v = online_[size_t(cpu)];
  if (v >= 0) return v;
  auto in = [cpu](const std::vector<int>& s) { return s.empty() || std::binary_search(s.begin(), s.end(), cpu); };
  bool on = in(a_.online) || in(b_.online);
  for (size_t p = 0; !on && p < meta_.probes.size(); ++p) {
    if (!present(static_cast<int>(p))) continue;
    if (hollow_[p]) {  // a delta's entries are the words that changed
      on = delta_[p]->first[size_t(cpu)] != delta_[p]->first[size_t(cpu) + 1];
      continue;
    }
    const size_t sw = meta_.probes[p].slot.slot_words;
    const uint64_t* wa = a_.probes[p].words.cpu(uint32_t(cpu));
    const uint64_t* wb = b_.probes[p].words.cpu(uint32_t(cpu));
    on = wa != wb && !std::equal(wa, wa + sw, wb);  // a shared block: equal
  }
  v = on ? 1 : 0;
  return on;
}

template <class Cpus>
uint64_t Interval::count_over(int probe, const Field* f, const Cpus& cpus, int idx) const {
  if (!present(probe)) return 0;
  if (!f || f->kind == FieldKind::priv || f->kind == FieldKind::hist) return 0;
  uint32_t lo = f->offset, hi = f->offset + f->nwords;
  if (f->kind == FieldKind::counter_array && idx >= 0) {
    if (static_cast<uint32_t>(idx) >= f->nwords) return 0;
    lo = f->offset + idx;
    hi = lo + 1;
  }
  uint64_t sum = 0;
  if (const SlotDelta* d = delta_[size_t(probe)]) {  // consecutive states: only the words that moved
    for (int c : cpus) {
      if (c < 0 || c >= static_cast<int>(meta_.ncpus)) continue;
      for (uint32_t i = d->first[size_t(c)], e = d->first[size_t(c) + 1]; i < e && d->word[i] < hi; ++i)
        if (d->word[i] >= lo) sum += d->grown[i];
    }
    return sum;
  }
  // Plain pointers: this runs per CPU and field in the coherence model's inner loop.
  const SlotWords& wa = a_.probes[size_t(probe)].words;
  const SlotWords& wb = b_.probes[size_t(probe)].words;
  for (int c : cpus) {
    if (c < 0 || c >= static_cast<int>(meta_.ncpus)) continue;
    const uint64_t* pa = wa.cpu(uint32_t(c));
    const uint64_t* pb = wb.cpu(uint32_t(c));
    if (pa == pb) continue;  // a block both samples share: every delta 0
    for (uint32_t w = lo; w < hi; ++w) sum += grown(pa[w], pb[w]);
  }
  return sum;
}

void Interval::word_deltas(int probe, int cpu, std::span<const uint32_t> words, uint64_t* out) const {
  if (const SlotDelta* d = delta_[size_t(probe)]) {  // consecutive states: only the words that moved
    for (uint32_t w : words) out[w] = 0;
    for (uint32_t i = d->first[size_t(cpu)], e = d->first[size_t(cpu) + 1]; i < e; ++i) out[d->word[i]] = d->grown[i];
    return;
  }
  const uint64_t* pa = a_.probes[size_t(probe)].words.cpu(uint32_t(cpu));
  const uint64_t* pb = b_.probes[size_t(probe)].words.cpu(uint32_t(cpu));
  if (pa == pb) {  // a block both samples share
    for (uint32_t w : words) out[w] = 0;
    return;
  }
  for (uint32_t w : words) out[w] = grown(pa[w], pb[w]);
}

template <class Cpus>
std::vector<uint64_t> Interval::buckets_over(int probe, const Field* f, const Cpus& cpus) const {
  std::vector<uint64_t> out(SH_HIST_BUCKETS, 0);
  if (!present(probe)) return out;
  if (!f || f->kind != FieldKind::hist) return out;
  // The hot loop of every percentile (8192 CPUs x 512 buckets for a whole-machine
  // histogram): plain pointers so that it vectorizes.
  const uint32_t at = f->offset + 2;
  uint64_t* o = out.data();
  if (const SlotDelta* d = delta_[size_t(probe)]) {  // consecutive states: only the words that moved
    for (int c : cpus) {
      if (c < 0 || c >= static_cast<int>(meta_.ncpus)) continue;
      const HistEntries h = hist_entries(*d, uint32_t(c), f->offset);
      for (uint32_t i = h.lo; i < h.hi; ++i) o[d->word[i] - at] += d->grown[i];
    }
    return out;
  }
  const SlotWords& wa = a_.probes[probe].words;
  const SlotWords& wb = b_.probes[probe].words;
  for (int c : cpus) {
    if (c < 0 || c >= static_cast<int>(meta_.ncpus)) continue;
    const uint64_t* pa = wa.cpu(uint32_t(c));
    const uint64_t* pb = wb.cpu(uint32_t(c));
    if (pa == pb) continue;  // a block both samples share: every delta 0
    pa += at;
    pb += at;
    // Every bucket that grew counts, also when sum_ns did not move: the programs add to the
    // bucket before sum_ns, and a sample read between the two is the only place where that
    // value shows (the next interval sees sum_ns move without it). An idle CPU's histogram
    // is one compare.
    if (std::memcmp(pa, pb, SH_HIST_BUCKETS * sizeof(uint64_t)) == 0) continue;
    for (uint32_t b = 0; b < SH_HIST_BUCKETS; ++b) o[b] += grown(pa[b], pb[b]);
  }
  return out;
}

template <class Cpus>
HistSummary Interval::hist_over(int probe, const Field* f, const Cpus& cpus, std::vector<uint64_t>* keep) const {
  if (keep) keep->assign(SH_HIST_BUCKETS, 0);
  if (!present(probe)) return {};
  if (!f || f->kind != FieldKind::hist) return {};
  const SlotWords& wa = a_.probes[probe].words;
  const SlotWords& wb = b_.probes[probe].words;
  const SlotDelta* d = delta_[size_t(probe)];
  // One CPU or a few of consecutive states (a per-CPU p99 column, 8192 of them a frame; a
  // topology group's): their moved buckets merged, without a dense histogram.
  if (d && !keep && std::ranges::size(cpus) <= kSparseGroup) {
    thread_local std::vector<std::pair<uint32_t, uint64_t>> moved;
    moved.clear();
    uint64_t sum = 0, max_a = 0, max_b = 0;
    for (int c : cpus) {
      if (c < 0 || c >= static_cast<int>(meta_.ncpus)) continue;
      const HistEntries h = hist_entries(*d, uint32_t(c), f->offset);
      sum += h.sum;
      for (uint32_t i = h.lo; i < h.hi; ++i) moved.emplace_back(d->word[i] - (f->offset + 2), d->grown[i]);
      max_a = std::max(max_a, word_a(probe, uint32_t(c), f->offset + 1));
      max_b = std::max(max_b, wb.cpu(uint32_t(c))[f->offset + 1]);
    }
    std::sort(moved.begin(), moved.end());
    uint32_t index[SH_HIST_BUCKETS];
    uint64_t count[SH_HIST_BUCKETS];
    size_t n = 0;
    for (const auto& [bucket, g] : moved) {
      if (n && index[n - 1] == bucket) {
        count[n - 1] += g;
      } else {
        index[n] = bucket;
        count[n++] = g;
      }
    }
    const uint64_t max_ns = max_b > max_a ? max_b : 0;
    return capped(summarize_sparse({index, n}, {count, n}, sum, max_ns), max_ns, max_b);
  }
  auto b = buckets_over(probe, f, cpus);
  if (keep) *keep = b;
  uint64_t sum = 0, max_a = 0, max_b = 0;
  for (int c : cpus) {
    if (c < 0 || c >= static_cast<int>(meta_.ncpus)) continue;
    const uint64_t* pb = wb.cpu(uint32_t(c)) + f->offset;
    if (hollow_[size_t(probe)]) {
      const uint64_t a0 = word_a(probe, uint32_t(c), f->offset), a1 = word_a(probe, uint32_t(c), f->offset + 1);
      sum += grown(a0, pb[0]);
      max_a = std::max(max_a, a1);
    } else {
      const uint64_t* pa = wa.cpu(uint32_t(c)) + f->offset;
      sum += grown(pa[0], pb[0]);
      max_a = std::max(max_a, pa[1]);
    }
    max_b = std::max(max_b, pb[1]);
  }
  uint64_t max_ns = 0;  // unknown: summarize() falls back to the top bucket's bound
  if (max_b > max_a) max_ns = max_b;
  return capped(summarize(b, sum, max_ns), max_ns, max_b);
}

uint64_t Interval::count(int probe, std::string_view field, int cpu, int idx) const {
  return count_over(probe, find(probe, field), cpu_range(cpu, meta_.ncpus), idx);
}

uint64_t Interval::count(int probe, std::string_view field, std::span<const int> cpus, int idx) const {
  return count_over(probe, find(probe, field), cpus, idx);
}

double Interval::rate(int probe, std::string_view field, int cpu, int idx) const {
  return seconds_ > 0 ? static_cast<double>(count(probe, field, cpu, idx)) / seconds_ : 0.0;
}

double Interval::rate(int probe, std::string_view field, std::span<const int> cpus, int idx) const {
  return seconds_ > 0 ? static_cast<double>(count(probe, field, cpus, idx)) / seconds_ : 0.0;
}

std::vector<uint64_t> Interval::buckets(int probe, std::string_view field, int cpu) const {
  return buckets_over(probe, find(probe, field), cpu_range(cpu, meta_.ncpus));
}

std::vector<uint64_t> Interval::buckets(int probe, std::string_view field, std::span<const int> cpus) const {
  return buckets_over(probe, find(probe, field), cpus);
}

HistSummary Interval::hist(int probe, std::string_view field, int cpu) const {
  return hist_over(probe, find(probe, field), cpu_range(cpu, meta_.ncpus));
}

HistSummary Interval::hist(int probe, std::string_view field, std::span<const int> cpus) const {
  return hist_over(probe, find(probe, field), cpus);
}

HistSummary Interval::hist(int probe, std::string_view field, std::span<const int> cpus,
                           std::vector<uint64_t>& buckets) const {
  return hist_over(probe, find(probe, field), cpus, &buckets);
}

uint64_t Interval::count(const FieldRef& f, int cpu, int idx) const {
  return f ? count_over(f.probe, f.field, cpu_range(cpu, meta_.ncpus), idx) : 0;
}

uint64_t Interval::count(const FieldRef& f, std::span<const int> cpus, int idx) const {
  return f ? count_over(f.probe, f.field, cpus, idx) : 0;
}

double Interval::rate(const FieldRef& f, int cpu, int idx) const {
  return seconds_ > 0 ? static_cast<double>(count(f, cpu, idx)) / seconds_ : 0.0;
}

double Interval::rate(const FieldRef& f, std::span<const int> cpus, int idx) const {
  return seconds_ > 0 ? static_cast<double>(count(f, cpus, idx)) / seconds_ : 0.0;
}

HistSummary Interval::hist(const FieldRef& f, int cpu) const {
  return f ? hist_over(f.probe, f.field, cpu_range(cpu, meta_.ncpus)) : HistSummary{};
}

HistSummary Interval::hist(const FieldRef& f, std::span<const int> cpus) const {
  return f ? hist_over(f.probe, f.field, cpus) : HistSummary{};
}

}  // namespace schedhot
