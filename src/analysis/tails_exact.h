// With --exact and --catch both on (issue 31): each caught tail event next to the
// coherence transfers it suffered, read from the report's own --exact replay
// (ExactAccumulator, through ExactObserver: no second replay). For a caught event of CPU c
// over its window [ts - dur, ts] (both ends included: the probes stamp a call's --exact
// records with its entry time, which is the window's start):
//   (a) the transfers c took inside: its accesses that the ownership machine counted as
//       transfers (another CPU had the line);
//   (b) the other CPUs' accesses inside the window to the lines c accessed inside it.
// Summed per rule (README "Report JSON", tails[].exact), with the lines that had most.
// Cost: the replay's accesses of the current and the previous interval are kept (an event
// ends in the interval its batch belongs to and may start in the one before), indexed by
// CPU and by line; an event costs a binary search in its CPU's accesses, a pass over those
// inside its window, and two binary searches per line they reached. A crafted recording
// (a million overlapping events on one CPU) is bounded: an interval's events scan at most
// 16 accesses per access buffered (at least 1 Mi, at most kMaxScanPerInterval); past it the
// interval's remaining events are not looked at (counted: "not_looked_at").
#pragma once
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/tails.h"
#include "model/lines.h"
#include "probe/records.h"

namespace schedhot {

/// Joins each interval's caught events (CatchBatch) with the accesses the ExactAccumulator
/// it observes replayed up to the end of that interval.
class TailExactJoin : public ExactObserver {
 public:
  /// Lines listed per rule in json() (most transfers first).
  static constexpr size_t kTopLines = 5;
  /// Accesses an interval's events may scan in all (their CPUs' accesses inside their windows).
  static constexpr uint64_t kMaxScanPerInterval = uint64_t(64) << 20;
  /// tails decides each event's rule (TailAccumulator::rule_of()); it must outlive the
  /// join. rules: the number of rules (Meta::catch_rules.size()).
  /// max_scan: the most an interval's events may scan whatever it holds (tests lower it;
  /// the cap is also at least 1 Mi and at most 16 per access buffered).
  TailExactJoin(const TailAccumulator& tails, size_t rules, uint64_t max_scan = kMaxScanPerInterval);

  /// ExactObserver: one replayed access (time order), buffered for the events.
  void access(uint64_t ts_ns, uint32_t cpu, uint32_t line, bool write, bool transfer) override;

  /// One interval, after the observed ExactAccumulator::add() of its batch: exact is that
  /// batch (null: the sample has no EXACT frame; its events are then not looked at),
  /// caught its events (null: none). Events whose window starts before the previous
  /// interval's first access see only what is buffered (an event longer than an interval).
  void add(const ExactBatch* exact, const CatchBatch* caught);

  /// tails[rule]["exact"] of the report: {"events", "with_accesses", "with_transfers",
  /// "transfers", "other_accesses", "lines": [{"name", "object", "line", "transfers",
  /// "other_accesses"}] (at most kTopLines), "window_transfers", "lost", "lower_bound",
  /// "not_looked_at" (events past kMaxScanPerInterval)}
  /// (README); null when acc has no batch (no EXACT frame in the window). acc: the
  /// accumulator observed (it names the lines). rule out of range: null.
  nlohmann::json json(size_t rule, const ExactAccumulator& acc) const;

 private:
  struct Access {
    uint64_t ts_ns;
    uint32_t line : 31;
    uint32_t transfer : 1;
  };
  struct Rule {
    uint64_t events = 0, with_accesses = 0, with_transfers = 0, transfers = 0, other = 0, lost = 0, skipped = 0;
    std::vector<std::pair<uint64_t, uint64_t>> lines;  ///< per line id: (transfers, other accesses)
  };
  /// One interval's replayed accesses, by CPU and by line (each in time order).
  struct Gen {
    std::vector<std::vector<Access>> by_cpu;
    std::vector<std::vector<uint64_t>> by_line;  ///< access times
    void clear();
  };
  const TailAccumulator& tails_;
  std::vector<Rule> rules_;
  Gen gen_[2];                   ///< the current interval's and the previous one's
  int cur_ = 0;                  ///< gen_[cur_] is the current interval's
  std::vector<uint64_t> stamp_;  ///< per line id: the serial of the last event whose CPU accessed it
  std::vector<uint64_t> own_;    ///< per line id: that event's CPU's accesses to it inside
  std::vector<uint32_t> touched_;  ///< the lines of the event being joined
  uint64_t serial_ = 0;
  uint64_t max_scan_;
  uint64_t transfers_ = 0;       ///< every transfer the replay counted (all CPUs, all lines)
};

/// The text report's line for a tails entry's "exact" (json() above), two spaces indented,
/// ending in a newline; "" when it is null or absent:
/// "  exact: of 412 caught, 37 took coherence transfers inside (61 in all: LINE 40, LINE 21);
/// other CPUs touched their lines 233 times inside".
std::string tail_exact_text(const nlohmann::json& tail);

}  // namespace schedhot
