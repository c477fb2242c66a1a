// Coherence traffic of one shared cacheline: how many times per second the line moves
// between CPUs, how far, and at what estimated stall cost. Two ways to count (issue 11):
//
//  * coherence_model(): from each CPU's read and write rates over an
//    interval, the expected transfers under independent arrivals (formulas below).
//  * ExactCoherence: the same ownership machine run over traced (time, CPU, line, r/w)
//    accesses in time order.
//
// Both use the same line-state machine and the same source rules, so on a stream that
// really is Poisson with iid marks the model is the exact machine's expectation.
//
// ---------------------------------------------------------------------------------------
// The ownership machine (one line; MESI-like, states collapsed to "the set of holders")
//   - a write by c: holders := {c}   (the others are invalidated)
//   - a read by c:  holders := holders + {c}
//   A write by c is a *write transfer* unless holders == {c} (it must fetch the line or
//   invalidate other copies: an RFO or an upgrade). A read by c is a *read transfer*
//   unless c is a holder. The *source* (what the distance is measured to) is:
//   - read transfer:  the line's last writer (the dirty owner: M, or O in MOESI terms)
//   - write transfer: the most recent access by any other CPU (a holder in every case)
//   Cold misses are not counted: the first access to a line, and a read of a line that
//   no CPU has written yet (clean data replicates; in the model a line with no writes has
//   no transfers at all). E/S are not distinguished, nor is an upgrade from a fetch.
//
// The model (independent arrivals)
//   Input per CPU c: r_c reads/s, w_c writes/s. L = sum_j (r_j + w_j). The merged stream
//   is taken as a Poisson process with iid marks (cpu, r/w): the next access is a read by
//   c with probability pr_c = r_c/L, a write by c with pw_c = w_c/L; p_c = pr_c + pw_c,
//   W_-c = sum_{j!=c} pw_j. By the iid marks, the accesses before a given access are
//   independent of it, so the line state it meets is found by scanning its past backwards
//   (stationary: the past is long, so some write is always found; with no writes at all
//   nothing misses):
//   - Write by c hits iff holders == {c} iff, scanning back, the first access that is not
//     a read by c is a write by c (c's own reads keep holders == {c}; any other CPU's
//     access adds or makes another holder). Reads by c are skipped, so
//       P(hit) = pw_c / (1 - pr_c),  write transfers/s = w_c * (1 - pw_c / (1 - pr_c))
//                                                      = w_c * (L - r_c - w_c) / (L - r_c).
//     Given a miss, the first non-c access scanning back is by d with probability
//     p_d / (1 - p_c): the source is d.
//   - Read by c hits iff c is a holder iff, scanning back, an access by c comes before a
//     write by another CPU (reads by others do not matter), so
//       P(hit) = p_c / (p_c + W_-c),  read transfers/s = r_c * W_-c / (p_c + W_-c)
//                                                    = r_c * (Wt - w_c) / (r_c + Wt),
//     with Wt = sum_j w_j. Given a miss the first relevant access back is a write by
//     j != c with probability pw_j / W_-c: j is the last writer, the source.
//   Each CPU's transfers are split by xfer_distance(c, source) with per-group sums of
//   pw (reads) or p (writes), so the model is O(n) in the number of active CPUs.
//   (Checked against ExactCoherence on seeded Poisson streams of 2..1024 CPUs:
//   tests/unit/test_coherence.cpp.)
//
// Assumptions: independent Poisson arrivals with rates constant over the interval
// (stationarity), one line in isolation (no eviction, no false-sharing neighbours beyond
// what the caller folds into the rates), no prefetch, E state and cold misses ignored,
// one transfer per miss (an invalidation of many sharers counts once, to the most recent
// one), and an access completes before the next (no in-flight queueing, no barrier cost).
// Where it breaks:
//   - bursts: a CPU that does k back-to-back accesses misses at most on the first read
//     and the first write of each; the model spreads them out and over-counts (k = 4,
//     30 % writes, 16 CPUs: model 2.5x exact);
//   - correlated CPUs: b reading right after each write of a (a flag handed over) misses
//     every time, and a's next write finds b holding the line; the model expects half of
//     each (model 0.5x exact; 0.87x with 14 independent CPUs around them);
//   - a CPU that reads right after its own write always hits; the model may put another
//     CPU's write in between (the test's mix: reads +9 %, writes -12 %, total +2 %).
//   test_coherence.cpp measures and prints these errors.
// ---------------------------------------------------------------------------------------
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "sys/host.h"

namespace schedhot {

/// How far a line moves between two CPUs, nearest first. Index into by_distance[] and
/// XferCost::ns[].
enum class XferDistance : uint8_t {
  smt = 0,      ///< SMT siblings: same package, NUMA node, LLC id and core id
  llc = 1,      ///< same last-level cache (same package and node), other core
  package = 2,  ///< same package and NUMA node, another LLC
  remote = 3,   ///< another package or another NUMA node, or a package that is unknown
};
inline constexpr int kXferDistances = 4;
/// "smt", "llc", "package", "remote".
const char* to_string(XferDistance d);

/// The distance between CPUs a and b (CpuTopology ids as read from sysfs, -1 unknown).
/// Unknown fields are never taken as shared: a level is shared only when both CPUs report
/// the same known id at it and at every level that contains it. Hence:
///   - package unknown on either: remote;
///   - nodes are compared as values (-1 == -1: machines without NUMA information are one
///     node); different nodes in one package (sub-NUMA clustering) are remote;
///   - LLC unknown on either: not llc, at most package (the line stays in the package);
///   - core unknown on either: not smt; SMT siblings must also have the same LLC id
///     (both unknown counts as the same) so that every SMT pair is inside its LLC.
/// die is not used (the LLC decides the cost). xfer_distance(a, a) is smt when a's
/// package and core are known.
XferDistance xfer_distance(const CpuTopology& a, const CpuTopology& b);

/// CPU id -> dense group ids for the three nested levels of xfer_distance, built once:
/// core group within LLC group within package group (group of -1: the level is unknown
/// for that CPU, it shares it with no one). distance(a, b) == xfer_distance() on their
/// CpuTopology. CPU ids not in the topology (or negative entries) have every group -1:
/// remote to every CPU.
class TopologyIndex {
 public:
  TopologyIndex() = default;
  explicit TopologyIndex(const std::vector<CpuTopology>& topo);

  /// Highest CPU id in the topology + 1 (0 when empty).
  uint32_t size() const { return static_cast<uint32_t>(core_.size()); }
  int core_group(uint32_t cpu) const { return cpu < size() ? core_[cpu] : -1; }
  int llc_group(uint32_t cpu) const { return cpu < size() ? llc_[cpu] : -1; }
  int package_group(uint32_t cpu) const { return cpu < size() ? pkg_[cpu] : -1; }
  /// Number of groups at each level (ids are 0..n-1).
  int core_groups() const { return ncore_; }
  int llc_groups() const { return nllc_; }
  int package_groups() const { return npkg_; }
  XferDistance distance(uint32_t a, uint32_t b) const;

 private:
  std::vector<int> core_, llc_, pkg_;
  int ncore_ = 0, nllc_ = 0, npkg_ = 0;
};

/// One CPU's accesses to one line over an interval (per second).
struct CpuAccessRate {
  uint32_t cpu = 0;
  double reads_per_s = 0;
  double writes_per_s = 0;
};

/// Transfers of one line caused by one CPU (the CPU that misses; it stalls).
struct CpuXfers {
  uint32_t cpu = 0;
  double read_xfers_per_s = 0;   ///< reads that found the line not held
  double write_xfers_per_s = 0;  ///< writes that found it held elsewhere
  std::array<double, kXferDistances> by_distance{};  ///< read + write, by XferDistance
  double total() const { return read_xfers_per_s + write_xfers_per_s; }
};

/// Transfers of one line: per CPU (ascending cpu; one entry per CPU of the input, or
/// per CPU with a transfer for ExactCoherence) and summed over CPUs. Transfers/s, not
/// bytes: bytes/s = transfers x the line size (HostInfo::cacheline_bytes), the caller's.
struct LineTraffic {
  std::vector<CpuXfers> cpus;
  double read_xfers_per_s = 0;
  double write_xfers_per_s = 0;
  std::array<double, kXferDistances> by_distance{};
  double total() const { return read_xfers_per_s + write_xfers_per_s; }
};

/// The model's expected transfers of one line (formulas in the header comment). rates:
/// the CPUs with accesses, any order; a CPU listed twice has its rates added; all-zero
/// entries are kept (with zero transfers). O(n) for n entries in ascending cpu order
/// (O(n log n) to sort them otherwise) (group sums over the index's groups; scratch of the index's group counts).
/// Throws std::invalid_argument for a negative or non-finite rate.
LineTraffic coherence_model(const TopologyIndex& topo, std::span<const CpuAccessRate> rates);
/// The same into out (its previous contents replaced; its cpus vector's capacity reused):
/// what a caller modeling many lines per interval calls to allocate nothing once warm.
void coherence_model(const TopologyIndex& topo, std::span<const CpuAccessRate> rates, LineTraffic& out);

/// coherence_model()'s split by distance for transfers counted another way (the gap
/// model, model/gaps.h): given[i] = (read, write) transfers/s of rates[i]'s CPU replace the
/// formulas; each is then split over the distances as the model splits its own (a read's
/// source in proportion to the other CPUs' writes, a write's to their accesses). A CPU's
/// read (write) transfers are dropped when no other CPU writes (accesses): nothing could
/// have taken the line. rates: ascending cpu, each CPU once; empty given = coherence_model().
/// Throws std::invalid_argument on a size mismatch, unsorted or repeated CPUs, a bad rate.
void coherence_split(const TopologyIndex& topo, std::span<const CpuAccessRate> rates,
                     std::span<const std::pair<double, double>> given, LineTraffic& out);

/// Estimated cost of one transfer by distance, ns of stall for the CPU that misses.
/// Defaults are typical x86 load-to-use latencies of a line held modified in another
/// cache (SMT sibling ~15 ns, same LLC ~40 ns, another LLC of the package ~80 ns,
/// another socket ~150 ns): round figures from public latency measurements, not measured
/// on this machine; an estimate, overridable with --xfer-cost.
struct XferCost {
  std::array<double, kXferDistances> ns{15, 40, 80, 150};
};

/// Parses a --xfer-cost override "smt=15,llc=40,package=90,remote=200": comma-separated
/// key=ns pairs, any subset and order (unnamed distances keep base's figure), spaces
/// around items allowed. Throws std::invalid_argument with a one-line message naming
/// --xfer-cost: empty, an item without '=', an unknown or repeated key, a value that is
/// not a finite non-negative number.
XferCost parse_xfer_cost(std::string_view s, const XferCost& base = {});

/// Estimated stall, ns per second (summed over the line's CPUs, or for one CPU):
/// sum over distances of transfers/s x cost.ns. An estimate (see XferCost).
double stall_ns_per_s(const LineTraffic& t, const XferCost& cost);
double stall_ns_per_s(const CpuXfers& t, const XferCost& cost);

/// One traced access: what the probes' per-CPU ring buffers carry in --exact mode.
struct LineAccess {
  uint64_t ts_ns = 0;  ///< monotonic time
  uint32_t cpu = 0;
  uint32_t line = 0;   ///< index of the modeled line, 0..lines-1
  bool write = false;  ///< a store or an atomic read-modify-write
};

/// Exact counts of one line's transfers caused by one CPU.
struct CpuXferCounts {
  uint32_t cpu = 0;
  uint64_t read_xfers = 0;
  uint64_t write_xfers = 0;
  std::array<uint64_t, kXferDistances> by_distance{};
};

/// The ownership machine run over traced accesses (rules in the header comment), per
/// line. Holders per line are a bitset of the CPU range plus the list of its set bits
/// (membership O(1), a write clears in O(holders)): memory ~ncpus/8 bytes per line plus
/// per-CPU counters of the CPUs that miss.
class ExactCoherence {
 public:
  /// ncpus: CPU ids accepted are 0..ncpus-1 (0: topo.size()); CPU ids outside the
  /// topology are remote to all. topo must outlive the object.
  ExactCoherence(const TopologyIndex& topo, uint32_t lines, uint32_t ncpus = 0);

  /// Runs one access. Accesses must come in time order (equal times allowed, taken in
  /// feed order). Throws std::invalid_argument (and changes nothing) when ts_ns is before
  /// the previous access's, or cpu or line is out of range. Returns whether the access was
  /// counted as a transfer (a read or write transfer; cold misses and hits are not).
  bool feed(const LineAccess& a);

  /// Records lost by the tracer (ring buffer full). A run with losses is approximate:
  /// every lost access takes its own transfer with it, so the counts are usually low
  /// (a lower bound in the usual case), though a lost write can also turn a later hit into
  /// a miss (see test LostWriteCanAddATransfer): say so when lost() > 0.
  void add_lost(uint64_t n) { lost_ = n > UINT64_MAX - lost_ ? UINT64_MAX : lost_ + n; }  ///< saturates
  uint64_t lost() const { return lost_; }
  /// Forgets the counts (transfers, accesses, cold misses, lost) but keeps each line's
  /// state (holders, last writer, last accessors) and the time order: the accesses fed
  /// next are counted as they follow the ones before.
  void clear_counts();

  uint32_t lines() const { return static_cast<uint32_t>(lines_.size()); }
  uint32_t ncpus() const { return ncpus_; }
  /// Accesses fed to the line; of them, cold misses (see the header comment).
  uint64_t accesses(uint32_t line) const;
  uint64_t cold(uint32_t line) const;
  /// Number of CPUs holding the line now.
  uint32_t holders(uint32_t line) const;
  /// The line's per-CPU counts, ascending cpu, only CPUs with a transfer.
  std::vector<CpuXferCounts> counts(uint32_t line) const;
  /// The counts as rates over `seconds` (> 0; else the counts as they are), in the
  /// model's shape, to compare with coherence_model().
  LineTraffic traffic(uint32_t line, double seconds) const;

 private:
  struct Line {
    std::vector<uint64_t> bits;      // holders bitset (ncpus bits)
    std::vector<uint32_t> members;   // the set bits, unordered
    int64_t last_writer = -1;
    int64_t last_cpu = -1;           // most recent accessor
    int64_t prev_cpu = -1;           // most recent accessor other than last_cpu
    uint64_t accesses = 0, cold = 0;
    std::vector<int32_t> slot;       // cpu -> index in counts (lazy; -1 none)
    std::vector<CpuXferCounts> counts;
  };
  CpuXferCounts& counts_of(Line& l, uint32_t cpu);

  const TopologyIndex& topo_;
  uint32_t ncpus_;
  std::vector<Line> lines_;
  uint64_t last_ts_ = 0;
  uint64_t lost_ = 0;
};

}  // namespace schedhot
