#include "model/interval.h"

#include "schedhot/abi.h"

namespace schedhot {

Interval::Interval(const Meta& meta, const Sample& a, const Sample& b) : meta_(meta), a_(a), b_(b) {
  seconds_ = b.mono_ns > a.mono_ns ? static_cast<double>(b.mono_ns - a.mono_ns) / 1e9 : 0.0;
}

bool Interval::present(int probe) const {
  if (probe < 0 || probe >= static_cast<int>(meta_.probes.size())) return false;
  if (static_cast<size_t>(probe) >= a_.probes.size() || static_cast<size_t>(probe) >= b_.probes.size()) return false;
  const auto& pa = a_.probes[probe];
  const auto& pb = b_.probes[probe];
  size_t need = size_t(meta_.ncpus) * meta_.probes[probe].layout.slot_words;
  return pa.present && pb.present && pa.words.size() == need && pb.words.size() == need;
}

uint64_t Interval::word_delta(int probe, int cpu, uint32_t word) const {
  size_t i = size_t(cpu) * meta_.probes[probe].layout.slot_words + word;
  uint64_t x = a_.probes[probe].words[i], y = b_.probes[probe].words[i];
  return y >= x ? y - x : 0;  // counters only grow; a reset reads as 0
}

uint64_t Interval::count(int probe, std::string_view field, int cpu, int idx) const {
  if (!present(probe)) return 0;
  const Field* f = meta_.probes[probe].layout.find(field);
  if (!f || f->kind == FieldKind::priv || f->kind == FieldKind::hist) return 0;
  uint32_t lo = f->offset, hi = f->offset + f->nwords;
  if (f->kind == FieldKind::counter_array && idx >= 0) {
    if (static_cast<uint32_t>(idx) >= f->nwords) return 0;
    lo = f->offset + idx;
    hi = lo + 1;
  }
  uint64_t sum = 0;
  int c0 = cpu < 0 ? 0 : cpu, c1 = cpu < 0 ? static_cast<int>(meta_.ncpus) : cpu + 1;
  if (c1 > static_cast<int>(meta_.ncpus)) return 0;
  for (int c = c0; c < c1; ++c)
    for (uint32_t w = lo; w < hi; ++w) sum += word_delta(probe, c, w);
  return sum;
}

double Interval::rate(int probe, std::string_view field, int cpu, int idx) const {
  return seconds_ > 0 ? static_cast<double>(count(probe, field, cpu, idx)) / seconds_ : 0.0;
}

std::vector<uint64_t> Interval::buckets(int probe, std::string_view field, int cpu) const {
  std::vector<uint64_t> out(SH_HIST_BUCKETS, 0);
  if (!present(probe)) return out;
  const Field* f = meta_.probes[probe].layout.find(field);
  if (!f || f->kind != FieldKind::hist) return out;
  int c0 = cpu < 0 ? 0 : cpu, c1 = cpu < 0 ? static_cast<int>(meta_.ncpus) : cpu + 1;
  if (c1 > static_cast<int>(meta_.ncpus)) return out;
  for (int c = c0; c < c1; ++c)
    for (uint32_t b = 0; b < SH_HIST_BUCKETS; ++b) out[b] += word_delta(probe, c, f->offset + 2 + b);
  return out;
}

HistSummary Interval::hist(int probe, std::string_view field, int cpu) const {
  if (!present(probe)) return {};
  const Field* f = meta_.probes[probe].layout.find(field);
  if (!f || f->kind != FieldKind::hist) return {};
  auto b = buckets(probe, field, cpu);
  uint64_t sum = 0, max_a = 0, max_b = 0;
  const uint32_t sw = meta_.probes[probe].layout.slot_words;
  int c0 = cpu < 0 ? 0 : cpu, c1 = cpu < 0 ? static_cast<int>(meta_.ncpus) : cpu + 1;
  for (int c = c0; c < c1; ++c) {
    sum += word_delta(probe, c, f->offset);
    max_a = std::max(max_a, a_.probes[probe].words[size_t(c) * sw + f->offset + 1]);
    max_b = std::max(max_b, b_.probes[probe].words[size_t(c) * sw + f->offset + 1]);
  }
  uint64_t max_ns = 0;  // unknown: summarize() falls back to the top bucket's bound
  if (max_b > max_a) max_ns = max_b;
  HistSummary s = summarize(b, sum, max_ns);
  if (max_ns == 0 && s.count && max_b && s.max_ns > max_b) s.max_ns = max_b;
  return s;
}

}  // namespace schedhot
