// The sampler without a kernel (bench_scale.cpp, bench_goals.cpp): a SlotReader whose
// per-probe arrays stand for the BPF maps, and the CPU time per interval of LiveSource
// taking a sample from it plus `record`'s RecordingWriter::write_sample of that sample.
#pragma once
#include <cstdio>
#include <string>
#include <vector>

#include "bench/synthetic.h"
#include "sample/sampler.h"

namespace schedhot::bench {

/// The BPF maps of a machine, as a SlotReader: one CPU-major array per probe that
/// advance() changes between samples, with the change marks the programs would write,
/// copied out like ProbeSet::read copies the mapped maps.
class FakeSlots : public SlotReader {
 public:
  explicit FakeSlots(const Meta& m) : meta_(m), maps_(make_sample(m)) {
    for (const ProbeMeta& p : m.probes) statuses_.push_back(p.status);
    marks_.resize(m.ncpus);
    for (size_t i = 0; i < m.probes.size() && i < SH_NPROBES; ++i) {
      seen_.emplace_back();
      seen_.back().live = marks_.data();
      seen_.back().probe = static_cast<uint32_t>(i);
    }
    flatten();
  }
  const std::vector<ProbeStatus>& statuses() const override { return statuses_; }
  void read(Sample& s) const override {
    for (size_t i = 0; i < s.probes.size() && i < maps_.probes.size(); ++i) {
      s.probes[i].present = maps_.probes[i].present;
      if (s.probes[i].present)
        copy_slots(flat_[i].data(), meta_.ncpus, meta_.probes[i].slot, s.probes[i].words, nullptr,
                   i < seen_.size() ? &seen_[i] : nullptr);
      else
        s.probes[i].words.clear();
    }
  }
  std::vector<int> poll(int) override { return {}; }
  /// One interval of activity on every busy_every-th CPU (the dense map arrays updated
  /// too, not counted as the sampler's time).
  void advance(int k, int busy_every) {
    bench::advance(meta_, maps_, k, busy_every);
    flatten();
  }

 private:
  /// maps_ as the BPF maps hold it: one dense CPU-major array per probe.
  /// With the change marks the programs would write (abi.h sh_cpu_marks): a CPU's gen moves
  /// when any of its words did, a histogram chunk's count by what its buckets gained.
  void flatten() {
    flat_.resize(maps_.probes.size());
    for (size_t i = 0; i < maps_.probes.size(); ++i) {
      const SlotWords& w = maps_.probes[i].words;
      const uint32_t sw = w.slot_words();
      const bool fresh = flat_[i].size() != w.size();
      flat_[i].resize(w.size());
      uint32_t hb = 0;
      for (const Field& f : meta_.probes[i].slot.fields)
        if (f.kind == FieldKind::hist) hb = f.offset + 2;
      for (uint32_t c = 0; c < w.ncpus(); ++c) {
        uint64_t* d = flat_[i].data() + size_t(c) * sw;
        if (!fresh && i < SH_NPROBES && !std::equal(d, d + sw, w.cpu(c))) {
          marks_[c].gen[i] += 1;
          if (hb)
            for (uint32_t j = 0; j < SH_MARK_CHUNKS; ++j)
              for (uint32_t k = 0; k < SH_MARK_CHUNK_WORDS; ++k) {
                const uint32_t x = hb + j * SH_MARK_CHUNK_WORDS + k;
                marks_[c].chunk[i][j] += static_cast<uint32_t>(w.cpu(c)[x] - d[x]);
              }
        }
        std::copy_n(w.cpu(c), sw, d);
      }
    }
  }
  const Meta& meta_;
  Sample maps_;
  std::vector<std::vector<uint64_t>> flat_;
  std::vector<sh_cpu_marks> marks_;        ///< per CPU, as the programs keep them
  mutable std::vector<SlotMarks> seen_;    ///< per probe, as ProbeSet::read keeps them
  std::vector<ProbeStatus> statuses_;
};

/// CPU ms per interval (medians), of taking a sample and of writing it.
struct SamplerCost {
  double take = 0, write = 0;
  bool ok = false;  ///< false when the live source gave no sample
};

/// intervals intervals (after a first, not counted: its allocations) of LiveSource::poll
/// over FakeSlots advanced on every busy_every-th CPU, each sample written by a
/// RecordingWriter to a file in dir (removed after).
inline SamplerCost sampler_cost(const Meta& m, int intervals, int busy_every, const std::string& dir = "/tmp") {
  SamplerCost r;
  FakeSlots slots(m);
  LiveSource live(slots, m, 1, 0, nullptr);  // a 1 ns interval: every poll takes a sample
  const std::string rpath = fmt::format("{}/schedhot-bench-sampler-{}.shot", dir, getpid());
  std::remove(rpath.c_str());
  RecordingWriter w(rpath, m);
  std::vector<double> take, write;
  Sample s;
  for (int k = 0; k <= intervals; ++k) {
    slots.advance(k, busy_every);
    const double c0 = cpu_ms();
    if (!live.poll(s)) {
      std::remove(rpath.c_str());
      return r;
    }
    const double c1 = cpu_ms();
    w.write_sample(s);
    const double c2 = cpu_ms();
    if (k == 0) continue;
    take.push_back(c1 - c0);
    write.push_back(c2 - c1);
  }
  w.close();
  std::remove(rpath.c_str());
  r.take = median(take);
  r.write = median(write);
  r.ok = true;
  return r;
}

}  // namespace schedhot::bench
