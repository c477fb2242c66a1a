// `schedhot serve` / `--textfile`: the live figures as Prometheus metrics. One renderer,
// two exposition formats: OpenMetrics 1.0 text and the Prometheus 0.0.4 text format.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/lines.h"
#include "sample/sample.h"

namespace schedhot {

/// One modeled line's estimated coherence transfers since serve started: the counter
/// schedhot_line_transfers_total.
struct LineTotal {
  std::string family, name;
  double xfers = 0;  ///< sum over the modeled intervals of transfers/s x the interval's seconds
};

/// Sums each line's modeled transfers over the intervals serve models, so the exported
/// figure is a counter (rate() over any range) rather than the last interval's rate.
class LineTransferTotals {
 public:
  /// Adds one interval's model (each line's transfers/s times s.seconds) and returns every
  /// line's total so far, in the order lines were first seen. Never decreases.
  const std::vector<LineTotal>& add(const CoherenceSummary& s);

 private:
  std::vector<LineTotal> totals_;
};

/// What a scrape renders: an immutable snapshot the sampler publishes after each sample
/// (the HTTP thread only reads it, so a scrape never blocks the sampler).
struct MetricsState {
  Meta meta;
  /// The latest sample: cumulative slot words as read from the BPF maps (counters count
  /// from attach, so a missed scrape loses nothing). present=false probes are skipped.
  Sample last;
  std::vector<LineTotal> lines;  ///< empty until two samples exist
  uint64_t lost_samples = 0;    ///< deadlines the sampler missed (sampler stalls)
  uint64_t samples = 0;         ///< samples taken
  /// schedhot's BPF programs' run time and runs (bpf_prog_info run_time_ns / run_cnt);
  /// nullopt when kernel.bpf_stats_enabled is off (then the metric is absent).
  std::optional<uint64_t> bpf_run_ns, bpf_runs;
};

/// serve --per-cpu[=LIST]: which per-probe metric families carry a cpu label (one series
/// per online CPU of `last`, and no unlabelled one); the others stay summed over CPUs.
struct PerCpu {
  bool on = false;
  /// Probe names (every family of the probe) and metric family names, with or without
  /// the _total of a counter's samples; empty with on: every per-probe family.
  std::vector<std::string> families;
  /// Whether family `base` (schedhot_idle_exits, schedhot_idle_residency_seconds) of
  /// probe `probe` is labelled per CPU.
  bool covers(std::string_view probe, std::string_view base) const;
};

/// --per-cpu's value: "all" (the bare flag) for every per-probe family, else a
/// comma-separated list of probe names and metric family names (per_cpu_family_names()).
/// Throws std::invalid_argument, one line naming the unknown item, for anything else.
PerCpu parse_per_cpu(std::string_view spec);

/// Every per-probe metric family the catalog can export (schedhot_<probe>_<counter>,
/// schedhot_<probe>_<hist>_seconds), in catalog order: what --per-cpu=LIST may name.
std::vector<std::string> per_cpu_family_names();

struct MetricsOptions {
  bool openmetrics = false;  ///< OpenMetrics 1.0 text (ends with "# EOF"); else Prometheus 0.0.4
  PerCpu per_cpu;            ///< --per-cpu: the families with a cpu label
};

/// The histogram bounds, ns: 2^k - 1 for k = 6..30 (63 ns .. 1.073741823 s). Durations
/// are whole nanoseconds and every 2^k is the lower bound of a log-linear bucket
/// (include/schedhot/abi.h), so the buckets wholly below 2^k hold exactly the values
/// <= 2^k - 1: each cumulative `le` count is exactly "value <= le", as Prometheus means it.
std::vector<uint64_t> metric_bounds_ns();

/// The start-up line of serve --per-cpu: the series one scrape carries on the online CPUs
/// (meta.host.online, else every possible CPU), how many of them are per CPU, and the
/// count without --per-cpu ("--per-cpu: 9184 series a scrape (286 per CPU x 32 online
/// CPUs), 330 without it; --per-cpu=LIST labels fewer families (README ...)").
std::string per_cpu_notice(const Meta& meta, const PerCpu& per_cpu);

/// Content-Type of the format: "application/openmetrics-text; version=1.0.0; charset=utf-8"
/// or "text/plain; version=0.0.4; charset=utf-8".
const char* metrics_content_type(bool openmetrics);

/// True when an Accept header value asks for OpenMetrics text (what Prometheus sends first).
bool wants_openmetrics(const std::string& accept);

/// The whole exposition text of s (README "serve" lists every metric). Probes that are
/// not attached or blind (blind_reason) get only their schedhot_probe_info series; a
/// proxy's unseen counters are left out (not measured is absent, never 0).
std::string render_metrics(const MetricsState& s, const MetricsOptions& o);

}  // namespace schedhot
