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
  /// The estimate label: "gap_model" (the intervals whose gap counts modeled the line) or
  /// "independent_arrivals" (the others); a line can have a counter of each.
  std::string estimate = "independent_arrivals";
};

/// Sums each line's modeled transfers over the intervals serve models, so the exported
/// figure is a counter (rate() over any range) rather than the last interval's rate.
class LineTransferTotals {
 public:
  LineTransferTotals() = default;
  /// Seeded with every line the attached, not blind probes of meta can touch (their
  /// declared accesses on meta's layout, possible_lines(meta, layout_of(meta))), each at 0
  /// in LineKey order: a line's series is there from the first scrape, not from its first
  /// modeled transfer (absent is not zero to rate() and alerts). Its estimate: gap_model
  /// when the probes keep gap state for it (Meta::gap_lines), else independent_arrivals.
  explicit LineTransferTotals(const Meta& meta);
  /// Adds one interval's model (each line's transfers/s times s.seconds, to the counter of
  /// its estimate: LineSummary::estimate "gap model..." to gap_model, else
  /// independent_arrivals) and returns every (line, estimate)'s total so far: the seeded
  /// ones, then any other in the order first seen. Never decreases.
  const std::vector<LineTotal>& add(const CoherenceSummary& s);
  const std::vector<LineTotal>& totals() const { return totals_; }

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
  std::vector<LineTotal> lines;  ///< LineTransferTotals::totals(): every line from the first sample on
  uint64_t lost_samples = 0;    ///< deadlines the sampler missed (sampler stalls)
  uint64_t samples = 0;         ///< samples taken
  /// schedhot's BPF programs' run time and runs (bpf_prog_info run_time_ns / run_cnt);
  /// nullopt when kernel.bpf_stats_enabled is off (then the metric is absent).
  std::optional<uint64_t> bpf_run_ns, bpf_runs;
};

/// serve --per-cpu[=counters|all|LIST]: which per-probe metric families carry a cpu label (one
/// series per online CPU of `last`, and no unlabelled one); the others stay summed over CPUs.
struct PerCpu {
  bool on = false;
  /// The bare flag: the counters (FieldKind::counter, one series a CPU each), not the
  /// histograms (28 series a CPU each) or counter arrays (one a CPU and element: cpupri_set's
  /// 202), which stay summed: node_exporter's per-CPU choice, a scrape of tens of series a CPU.
  bool counters_only = false;
  /// Probe names (every family of the probe) and metric family names, with or without
  /// the _total of a counter's samples; empty with on: every per-probe family (of the
  /// counters only with counters_only).
  std::vector<std::string> families;
  /// Whether family `base` (schedhot_idle_exits, schedhot_idle_residency_seconds), of field
  /// kind `kind`, of probe `probe` is labelled per CPU.
  bool covers(std::string_view probe, std::string_view base, FieldKind kind) const;
};

/// --per-cpu's value: "counters" (the bare flag) for every per-probe counter family, "all"
/// for every per-probe family (histograms and counter arrays too), else a comma-separated
/// list of probe names and metric family names (as scraped: schedhot_<probe>_<field>, with _total
/// for a counter's or counter array's samples).
/// Throws std::invalid_argument, one line naming the unknown item, for anything else.
PerCpu parse_per_cpu(std::string_view spec);

/// The --per-cpu value to parse, from serve's arguments and the value CLI11 parsed: CLI11
/// hands an empty "--per-cpu=" on as the flag's default ("counters"), which would silently label
/// every family, so an argument "--per-cpu=" (before any "--") gives "" (parse_per_cpu()
/// refuses it); else `parsed`.
std::string per_cpu_spec(const std::vector<std::string>& args, const std::string& parsed);


struct MetricsOptions {
  bool openmetrics = false;  ///< OpenMetrics 1.0 text (ends with "# EOF"); else Prometheus 0.0.4
  PerCpu per_cpu;            ///< --per-cpu: the families with a cpu label
};

/// The histogram bounds, ns: 2^k - 1 for k = 6..30 (63 ns .. 1.073741823 s). Durations
/// are whole nanoseconds and every 2^k is the lower bound of a log-linear bucket
/// (include/schedhot/abi.h), so the buckets wholly below 2^k hold exactly the values
/// <= 2^k - 1: each cumulative `le` count is exactly "value <= le", as Prometheus means it.
std::vector<uint64_t> metric_bounds_ns();

/// The start-up line of serve --per-cpu, counted from what render_metrics(st) renders with
/// per_cpu and without it (the same code, so it cannot drift): the series a scrape
/// carries, how many of them per CPU on st.last's online CPUs, and the count without
/// --per-cpu ("--per-cpu: 588 series a scrape (286 per CPU x 2 CPUs), 302 without it;
/// --per-cpu=LIST labels ..."). With a LIST, the items that label nothing in this run
/// are named with why ("nothing per CPU from nohz_kick (not attached: ...)").
std::string per_cpu_notice(const MetricsState& st, const PerCpu& per_cpu);

/// The elements of counter array `field` of probe pm that stand for something in this
/// kernel: an array whose elements the probe module's declared accesses map to a kernel
/// array ("cpupri.pri_to_cpu[#].mask[cpu]") has its slot padded past that array
/// (SH_CPUPRI_VECS 104 for a kernel's 101 cpupri vectors): its elements are those of the
/// kernel's array, as the layout says (layout_of(meta); `schedhot probes`: "101 vectors").
/// Any other array: every element.
uint32_t array_elements(const Meta& meta, const ProbeMeta& pm, const Field& field);

/// Content-Type of the format: "application/openmetrics-text; version=1.0.0; charset=utf-8"
/// or "text/plain; version=0.0.4; charset=utf-8".
const char* metrics_content_type(bool openmetrics);

/// True when an Accept header value prefers OpenMetrics text (what Prometheus sends first):
/// an application/openmetrics-text range of version 1.0.0, 0.0.1 or none, with q > 0 and
/// at least the q of text/plain (version 0.0.4 or none); q=0 refuses a range (RFC 9110).
bool wants_openmetrics(const std::string& accept);

/// The whole exposition text of s (README "serve" lists every metric). Probes that are
/// not attached or blind (blind_reason) get only their schedhot_probe_info series; a
/// proxy's unseen counters are left out (not measured is absent, never 0).
std::string render_metrics(const MetricsState& s, const MetricsOptions& o);

}  // namespace schedhot
