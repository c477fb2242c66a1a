// The report's "cachelines" section: the coherence model's figures per hot line (what
// shares it, reads and writes, transfers/s and bytes/s by distance, stall estimate, top
// CPUs, the probes that cause them), the fixes this kernel has, and the seed patches'
// what-ifs. JSON first (schema in README "Cachelines"); the text view renders it.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "model/lines.h"

namespace schedhot {

/// The section's JSON for summary s over the probes of meta: {"model", "line_bytes",
/// "layout": {source, notes}, "fixes", "lines": [...], "what_if": [...], "cost_ns"}.
/// top: CPUs listed per line (highest transfers first). Rates in events/s, transfers/s,
/// bytes/s; stall in ns per second.
/// exact (the window had --exact records): each line also gets "exact": {xfers_per_s,
/// read_xfers_per_s, write_xfers_per_s, by_distance, lost, lower_bound (lost > 0),
/// ratio (model / exact, null when exact is 0)}, and the section "exact": {records, lost,
/// seconds, skipped, by_probe: {probe: {counter or counter[i]: records}}}; both absent without.
nlohmann::json cachelines_json(const Meta& meta, const CoherenceSummary& s, const XferCost& cost, int top = 3,
                               const ExactAccumulator* exact = nullptr);

/// The "fixes" object of report, probes and info JSON: each hot object's fix under its
/// key (Fix::key: nohz_nr_cpus_removed, cpupri_count_removed, bcast_lock_own_line): true |
/// false | null (unknown), and "text": to_string(f). Where a layout was read, one line for
/// `probes` and `info`: layout_source_text() (probe/layout.h).
nlohmann::json fixes_json(const FixesPresent& f);

/// The fixes a recording's kernel has: fixes_present() of its layout, or, for a recording
/// without one (made before layouts were recorded), every fix unknown: "layout not recorded".
FixesPresent recording_fixes(const Meta& meta);

/// The text view of cachelines_json's object ("" for null).
std::string cachelines_text(const nlohmann::json& c);

}  // namespace schedhot
