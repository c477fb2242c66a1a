// `schedhot report --fleet DIR`: one row per host of a fleet run (schedhot-fleet's
// DIR/<host>/recording.shot and DIR/<host>/state.json, or loose DIR/*.shot files), ranked
// by a severity score, grouped by kernel and hardware, with fleet-wide percentiles merged
// exactly from the hosts' histograms. Each host's figures are its `schedhot report` in
// brief (ReportSummary, analysis/report.h: the report's own figures, typed, computed by the
// same code as its document), so a host's row says what `report` says of its file.
//
// Severity (README "report --fleet"): the modeled coherence stall of the hot lines (the
// coherence model's stall_ns_per_s summed over lines, model/lines.h) plus the time CPUs
// waited for tick_broadcast_lock (bcast_wait's wait histogram: sum of waits / seconds),
// divided by the host's online CPUs: microseconds lost per CPU-second. A host with no
// figures has no severity and is listed after the ranked ones with why.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>
#include "analysis/report.h"
#include "probe/catalog.h"
#include "probe/layout.h"

namespace schedhot {

/// The probes the text table shows (ProbeSpec::fleet: rate, and p99 where timed); JSON
/// and CSV have all. In catalog order.
const std::vector<const ProbeSpec*>& table_probes();
/// The probe whose histogram is a lock's wait (ProbeSpec::wait_lock: bcast_wait), whose
/// wait goes into the severity; nullptr when none.
const ProbeSpec* wait_probe();
/// The row key of the wait probe's wait ("bcast_wait_ns_per_s").
std::string wait_key();
/// The seed-patch fixes, one per hot object (their keys, subjects, flagged probes): what
/// the rows' "fixes" and the FIX column list.
const std::vector<Fix>& fix_kinds();
/// The kernel series of a release: "6.12.117+deb12-cloud-amd64" -> "6.12".
std::string kernel_series(const std::string& rel);

/// One `schedhot report --fleet`, parsed.
struct FleetRequest {
  std::string dir;
  int top = -1;                  ///< ranked rows shown (< 0: all); partial and failed hosts are always listed
  double p99_flag_ns = 10'000;   ///< flag "fix absent and p99 above this" (ns)
  XferCost xfer_cost;            ///< as report --xfer-cost
  /// --every-interval: read every sample and model the lines on each interval, as `report
  /// FILE` does. Default: the first and last samples only, the lines modeled once on the
  /// recording's mean rates (README: measured difference and speed).
  bool every_interval = false;
  /// Without every_interval: the recording is cut into this many spans of equal sample
  /// counts (their boundary samples decoded and copied), each modeled on its mean rates.
  unsigned spans = 4;
  /// Hosts read at once (--jobs; threads). Each holds up to three decoded samples, ~13 MB
  /// each at 480 CPUs (~28 KB per CPU), so memory is about jobs x 3 x that.
  unsigned jobs = 1;
  const std::atomic<bool>* stop = nullptr;  ///< Ctrl-C: status 130
};

/// The fleet document (schema "schedhot.fleet-report/1", README): "dir", "severity"
/// (formula, unit), "hosts" (ranked first, then partial-without-figures and failed),
/// "groups", "fleet_latency", "shown" and "hosts_total". Throws std::runtime_error when
/// DIR cannot be read or holds no host (one line).
nlohmann::json fleet_document(const FleetRequest& req);


}  // namespace schedhot
