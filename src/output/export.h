// `schedhot export`'s interval stream: CSV, JSON, Chrome trace-event JSON for the Perfetto UI
// (command/export.h is the command's entry point).
//
// Export streams samples one by one (memory does not grow with the recording) and gets
// every number from model/interval.h: an interval is two consecutive samples in the
// window, its rates are events/s over that interval and its percentiles come from the
// interval's delta histogram. A probe that is absent in an interval (unavailable, or
// not attached yet) is an empty CSV cell, a JSON null, or no trace event: never 0.
// Each interval also carries the coherence model's figures per modeled line
// (model/lines.h: one CoherenceAccumulator per interval, so their time-weighted average
// is the report's "cachelines"): CSV columns xfers_per_s:LINE per CPU, a JSON "lines"
// array per interval, a Perfetto counter track per line.
// Schemas: README "Export formats" and "Info JSON".
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/interval.h"
#include "sample/sample.h"
#include "analysis/report.h"

namespace schedhot {

class RecordingReader;

/// folded: the caught events (--catch) counted by probe and stack, one line per unique
/// (probe, stack), "probe;outermost;...;innermost COUNT" (Brendan Gregg's stackcollapse
/// format: flamegraph.pl, inferno, speedscope), analysis/tails.h FoldedStacks.
enum class ExportFormat { csv, json, perfetto, folded };
/// "csv" | "json" | "perfetto" | "folded". Throws std::invalid_argument with a one-line message.
ExportFormat parse_export_format(const std::string& s);

/// One exported number per CPU and interval.
struct ExportMetric {
  enum class Kind { rate, p50, p99 };
  int probe = -1;       ///< index in Meta::probes
  std::string field;    ///< counter (or counter array, summed) or histogram field
  FieldRef ref;         ///< field, resolved in the Meta export_metrics() was given (empty: unknown)
  Kind kind = Kind::rate;
  std::string column;   ///< "calls_per_s", "lat_p99_ns": the name within its probe
  std::string name;     ///< probe.column: "nohz_exit.calls_per_s", "cpupri_set.lat_p99_ns"
  bool unseen = false;  ///< a counter the probe's proxy cannot observe, or any metric of a blind probe
                        ///< (blind_reason()): cells stay empty/null
  const char* unit() const { return kind == Kind::rate ? "1/s" : "ns"; }
};
/// The metrics of a recording, in column order: for every probe of meta (attached or
/// not, so the columns are the same for every file of a run), its primary and secondary
/// counters as rates (events/s), then p50 and p99 of its duration histogram (ns). A probe
/// unknown to this build contributes every counter and histogram of its slot fields.
/// Each metric's ref points into meta, which must outlive the list.
std::vector<ExportMetric> export_metrics(const Meta& meta);

/// Export options.
struct ExportOptions {
  ExportFormat format = ExportFormat::csv;
  double from_s = -1;        ///< window start, s since time zero (<0: from the start)
  double to_s = -1;          ///< window end, s since time zero (<0: to the end)
  /// Time zero, CLOCK_MONOTONIC ns: the recording's first sample. Unset: the first sample
  /// read (set it when the source was sought into the window).
  std::optional<uint64_t> t0_mono_ns;
  /// CPUs to export; empty: the online CPUs of the metadata. For a recording, pass
  /// RecordingReader::online_cpus() of the window so that the rows add up to the totals.
  /// A CPU offline over an interval (Interval::online) is an empty cell / null.
  std::vector<int> cpus;
  /// When it becomes true (Ctrl-C), export_samples() throws std::runtime_error("interrupted").
  const std::atomic<bool>* stop = nullptr;
  /// CSV: the per-CPU line columns (xfers_per_s:LINE, and with --exact exact_ and
  /// gap_xfers_per_s:LINE) on every row; false: none (`--lines none`).
  bool line_columns = true;
};

/// CSV: the most per-CPU line cells (rows x modeled lines) an interval may have without
/// `--lines`: a wider export is refused (8192 CPUs x 2172 lines wrote 2 GB for 19 intervals).
inline constexpr uint64_t kCsvLineCellsMax = uint64_t(1) << 16;

/// What an export wrote.
struct ExportResult {
  uint32_t samples = 0;      ///< samples inside the window
  uint64_t intervals = 0;    ///< intervals written (consecutive sample pairs with time between them)
  uint64_t caught = 0;       ///< folded: caught events written (0: nothing was written); perfetto: tail slices
  double last_t = 0;         ///< the last sample's time inside the window, seconds since time zero
  bool past_window = false;  ///< a sample after the window (--to) was read
};

/// Streams src's samples to out in opts.format. source() is called once at the end for
/// the JSON document's "source" member (the reader knows about damage only then).
/// Throws std::runtime_error when out fails.
ExportResult export_samples(SampleSource& src, std::ostream& out, const ExportOptions& opts,
                            const std::function<SourceInfo()>& source);

}  // namespace schedhot
