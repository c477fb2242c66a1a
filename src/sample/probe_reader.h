// The SlotReader of a ProbeSet: what LiveSource (sampler.h) reads the attached probes
// through in schedhot. Apart from sampler.h so that LiveSource builds without BPF.
#pragma once
#include <vector>

#include "probe/attach.h"
#include "sample/sampler.h"

namespace schedhot {

/// Forwards every call to a ProbeSet, which must outlive it.
class ProbeSetReader : public SlotReader {
 public:
  explicit ProbeSetReader(ProbeSet& p) : p_(p) {}
  const std::vector<ProbeStatus>& statuses() const override { return p_.statuses(); }
  /// Each probe's slots into s.probes[i] (present when attached), and the gap state's
  /// counts since the previous read into s.gaps (ProbeSet::take_gaps; s.mono_ns is set).
  void read(Sample& s) const override {
    for (size_t i = 0; i < p_.size() && i < s.probes.size(); ++i) s.probes[i].present = p_.read(i, s.probes[i].words);
    s.gaps = p_.take_gaps(s.mono_ns);
  }
  std::vector<int> poll(int timeout_ms) override { return p_.poll(timeout_ms); }

 private:
  ProbeSet& p_;
};

}  // namespace schedhot
