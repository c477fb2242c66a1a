// --catch RULES: which timed probes' tail events are caught (probe/records.h CatchRule,
// include/schedhot/abi.h "Tail capture").
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "probe/records.h"
#include "probe/status.h"

namespace schedhot {

/// Default --catch-rate: caught events per CPU per second, per rule.
inline constexpr uint32_t kCatchPerSec = 100;

/// Parses "PROBE>DURATION[,PROBE>pNN...]" (DURATION as -i takes it: 20us, 1.5ms; pNN a
/// percentile 0 < NN < 100 of the probe's running histogram, e.g. p99, p99.9). Each
/// threshold is rounded up to a histogram bucket's lower bound (round_threshold), so the
/// rule catches exactly the events the histogram counts from that bucket on. per_sec: the
/// rate limit of every rule. Throws std::invalid_argument with a one-line message: an
/// unknown probe, a probe without a duration histogram, a rule given twice, a bad number.
std::vector<CatchRule> parse_catch_rules(const std::string& text, uint32_t per_sec);

/// The smallest histogram bucket lower bound (sh_hist_lower) at or above ns; the last
/// bucket's lower bound for anything above it. 0 stays 0 (no rule).
uint64_t round_threshold(uint64_t ns);

/// Why rule r cannot catch on a probe with status st ("" when it can): not attached, or
/// a proxy (a tracepoint stand-in: it counts the function's calls but cannot time them).
std::string catch_unusable(const CatchRule& r, const ProbeStatus& st);

/// The threshold (a bucket's lower bound, ns) of a percentile rule from the probe's
/// histogram summed over CPUs (bucket counts, SH_HIST_BUCKETS of them): the lower bound of
/// the bucket holding the nearest-rank percentile; 0 (the rule stays off) until the
/// histogram has counted enough events for kPercentileMinAbove of them to lie above the
/// percentile (1,000 for p99, 100 for p90).
inline constexpr uint64_t kPercentileMinAbove = 10;

/// The start of the status note top's rule editor leaves on the probe (a NOTE in a
/// recording): report does not check such a rule against its histogram, whose threshold
/// changed mid-run.
inline constexpr const char* kCatchEditedNote = "--catch rule edited live:";
uint64_t percentile_threshold(const std::vector<uint64_t>& buckets, double percentile);

}  // namespace schedhot
