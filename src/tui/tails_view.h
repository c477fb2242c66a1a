// The tails view of top/replay (key a): per --catch rule (issue 31) its threshold, caught and
// dropped over the interval shown and since the start, the interrupt share, the last events
// of the interval and the top stacks and tasks since the start. The figures are
// TailAccumulator::json()'s (src/analysis/tails.h, the report's "tails"): this only lays
// them out as lines, so the layout is unit-tested like the other views.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "probe/records.h"
#include "tui/screen.h"

namespace schedhot::tui {

/// What the tails view shows of one interval.
struct TailsFrame {
  const std::vector<CatchRule>* rules = nullptr;  ///< as armed now (TuiFeed::catch_rules())
  double iv_seconds = 0;      ///< the interval shown
  nlohmann::json iv;          ///< TailAccumulator::json over the interval (its batch alone)
  double since_seconds = 0;   ///< from the first sample to the interval's end
  nlohmann::json since;       ///< the same from the first sample; null when not known
  const CatchBatch* batch = nullptr;  ///< the interval's events (Sample::caught); nullptr: none
  uint64_t t0_mono_ns = 0;    ///< the first sample's CLOCK_MONOTONIC time: events at "+s"
  uint64_t iv_start_mono_ns = 0;  ///< the interval's earlier sample
  /// The detail of an event, named as the report counts it (TailAccumulator::detail_of).
  std::function<std::string(const CaughtEvent&)> detail;
  std::vector<uint64_t> edited_ns;  ///< per rule: last edit, CLOCK_MONOTONIC ns (0: never)
  bool recording = false;     ///< the run is being recorded (an edit then leaves META behind)
  size_t last_events = 5;     ///< the interval's newest events listed per rule
  size_t top = 5;             ///< stacks and tasks listed per rule
  int frames = 3;             ///< innermost frames of an event's stack
};

/// The line shown instead when the run has no rules.
inline constexpr const char* kNoCatchRules = "no --catch rules in this run (record/top/serve --catch 'idle>1ms' or 'cpupri_set>20us')";

/// The view's lines after its title: one block per rule, each line cut to width.
std::vector<Line> render_tails(const TailsFrame& f, int width);

}  // namespace schedhot::tui
