// `schedhot serve` / `--textfile`: the live figures as Prometheus metrics. One renderer,
// two exposition formats: OpenMetrics 1.0 text and the Prometheus 0.0.4 text format.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sample/sample.h"

namespace schedhot {

/// One modeled line's transfers over the sampler's last interval.
struct LineRate {
  std::string family, name;
  double xfers_per_s = 0;
};

/// What a scrape renders: an immutable snapshot the sampler publishes after each sample
/// (the HTTP thread only reads it, so a scrape never blocks the sampler).
struct MetricsState {
  Meta meta;
  /// The latest sample: cumulative slot words as read from the BPF maps (counters count
  /// from attach, so a missed scrape loses nothing). present=false probes are skipped.
  Sample last;
  std::vector<LineRate> lines;  ///< empty until two samples exist
  uint64_t lost_samples = 0;    ///< deadlines the sampler missed (sampler stalls)
  uint64_t samples = 0;         ///< samples taken
  /// schedhot's BPF programs' run time and runs (bpf_prog_info run_time_ns / run_cnt);
  /// nullopt when kernel.bpf_stats_enabled is off (then the metric is absent).
  std::optional<uint64_t> bpf_run_ns, bpf_runs;
};

struct MetricsOptions {
  bool openmetrics = false;  ///< OpenMetrics 1.0 text (ends with "# EOF"); else Prometheus 0.0.4
  bool per_cpu = false;      ///< a cpu label on every per-probe series (online CPUs of `last`)
};

/// The reduced histogram bounds, ns: the powers of two 2^6 (64 ns) .. 2^30 (1.07 s). Each is
/// a lower bound of a log-linear bucket (include/schedhot/abi.h), so the cumulative count
/// at `le` is exact: every bucket below it lies wholly under it.
std::vector<uint64_t> metric_bounds_ns();

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
