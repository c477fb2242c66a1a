// The gap model of a line's coherence transfers (issue 29): what the independent-arrivals
// model (coherence.h) gets wrong on the real paths is that one CPU's accesses to a line
// come in bursts (the lock at idle entry and again at exit, the enter/exit pairs of nohz),
// and an access right after the CPU's own previous one finds the line still there. The
// probes see that with per-CPU state only: each keeps, per line it touches, the time of
// its last access and of its last write, and histograms of the gaps (bpf/common.bpf.h
// sh_gap_note, include/schedhot/abi.h struct sh_gap_line).
//
// The ownership machine (coherence.h) decides each access from the CPU's own last access:
//   - a write by c hits iff no other CPU accessed the line since c's last write;
//   - a read by c hits iff no other CPU wrote the line since c's last access.
// So an access after a gap g misses with probability 1 - P(no other CPU's access, resp.
// write, in a window of length g). The other CPUs are taken as independent of c and of
// each other, each a stationary renewal process with its own measured gaps: for CPU d with
// rate lambda_d and gap survival S_d(u) = P(gap > u), the probability that a window of
// length g placed at random holds none of d's accesses is
//     Q_d(g) = 1 - lambda_d * integral_0^g S_d(u) du         (Palm inversion)
// (exp(-lambda_d g) for a Poisson d; for d's accesses in pairs, the pairs' rate counts,
// not the accesses'). c's expected transfers over the interval are then
//     sum over c's writes of 1 - prod_{d != c} Q^A_d(gap since c's last write)
//   + sum over c's reads  of 1 - prod_{d != c} Q^W_d(gap since c's last access)
// with Q^A from d's gaps between any two accesses and Q^W from those between writes. On
// Poisson streams this is exactly coherence_model(); it sees bursts and self-correlation
// of every CPU (c's own and the others'); it does not see correlation between CPUs (b
// reading right after a's writes, one CPU waking another that then takes the same lock).
// Gaps within a bucket are taken as uniform (4-point rule for c's own, exact integral for
// the others'); a gap in the last bucket (68.7 s and more, or no earlier access since the
// probes attached) misses whenever another CPU touched the line in the interval.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "model/coherence.h"
#include "schedhot/abi.h"

namespace schedhot {

inline constexpr uint32_t kGapBuckets = SH_GAP_BUCKETS;
/// Bucket b's gap range [gap_lower(b), gap_upper(b)) in ns (abi.h sh_gap_index); the last
/// bucket's upper bound is +infinity.
double gap_lower(uint32_t b);
double gap_upper(uint32_t b);

/// One CPU's accesses to one line over an interval as gap histograms (counts, or counts
/// scaled by a sampling weight).
struct CpuGaps {
  uint32_t cpu = 0;
  std::array<double, kGapBuckets> ww{};  ///< writes, by the gap since this CPU's previous write
  std::array<double, kGapBuckets> wa{};  ///< writes, by the gap since its previous access
  std::array<double, kGapBuckets> ra{};  ///< reads, by the gap since its previous access
  double writes() const;
  double reads() const;
};

/// The gap model's transfers of one line over an interval of `seconds` (> 0): per CPU
/// (ascending) and in total, split by distance as coherence_model() splits (coherence_split).
/// cpus: ascending cpu, each once. Cost O(n x kGapBuckets) for n CPUs. Throws
/// std::invalid_argument for unsorted or repeated CPUs, a negative or non-finite count,
/// or seconds <= 0.
void gap_model(const TopologyIndex& topo, std::span<const CpuGaps> cpus, double seconds, LineTraffic& out);
LineTraffic gap_model(const TopologyIndex& topo, std::span<const CpuGaps> cpus, double seconds);

/// The probes' per-CPU gap state (bpf/common.bpf.h sh_gap_note) kept in user space over a
/// stream of accesses: per (line, CPU) the last access and last write times and the three
/// histograms. What the unit tests and the replay of --exact records feed to gap_model()
/// to check the model apart from the probes. Accesses of one CPU must come in time order
/// (the CPUs' streams may interleave in any order).
class GapTracker {
 public:
  /// One access; ts_ns 0 is taken as a time like any other.
  void feed(const LineAccess& a);
  /// The histograms of `line` gathered since the last take (CPUs with accesses, ascending),
  /// and forgets them (the last times are kept: the next gaps continue from them).
  std::vector<CpuGaps> take(uint32_t line);
  /// The lines fed since the last take of each (ascending).
  std::vector<uint32_t> lines() const;

 private:
  struct State {
    bool any = false, wrote = false;
    uint64_t last_a = 0, last_w = 0;
    bool pending = false;
    CpuGaps h;
  };
  std::map<uint32_t, std::map<uint32_t, State>> lines_;  // line -> cpu -> state
};

}  // namespace schedhot
