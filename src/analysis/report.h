// schedhot report's document: per-probe totals, rates, peak interval, percentiles and a
// per-CPU table, from any SampleSource (a recording or live), built as JSON (schema
// "schedhot.report/1", documented in README) by ReportBuilder; output/report_text.h
// renders it as text, command/report.h is the command's entry point.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/histogram.h"
#include "model/interval.h"
#include "model/interval_cursor.h"
#include "model/lines.h"
#include "probe/layout.h"  // FixesPresent
#include "sample/sample.h"
#include "analysis/tails.h"
#include "analysis/tails_exact.h"
#include "sys/units.h"  // format_utc_time(), for the views that show times

namespace schedhot {

class RecordingReader;

/// Report options.
struct ReportOptions {
  double from_s = -1;       ///< window start, seconds since the first sample (<0: start)
  double to_s = -1;         ///< window end, seconds since the first sample (<0: end)
  bool all_cpus = false;    ///< per-CPU table for every CPU, not the top 10
  int top = 10;             ///< rows of the per-CPU table without all_cpus
  std::string sort = "idle";  ///< per-CPU sort column (a probe name or a column header)
  XferCost xfer_cost;       ///< --xfer-cost: per-distance stall estimate of one transfer
};

/// The per-CPU table's column (its JSON key, e.g. "cpupri_set/s") that --sort NAME
/// picks: a probe's first column, or the column with that header; "" when none matches.
std::string report_sort_key(const std::string& name);

/// Extra facts about where the samples came from, shown in the report.
struct SourceInfo {
  std::string file;         ///< "" for live
  std::string format;       ///< "1.0"
  bool complete = true;     ///< END frame seen
  std::optional<std::string> damage;  ///< "at byte N: reason"
};

/// The report in brief, from the builder's own figures rather than its JSON document:
/// what `report --fleet` ranks a host by (analysis/fleet.h). Each field holds the value
/// of the report document's field named beside it (build() and summary() compute both
/// through the same code), typed.
struct ReportSummary {
  struct Host {
    std::string hostname;        ///< host.hostname
    std::string kernel_release;  ///< host.kernel_release
    std::string hypervisor;      ///< host.hypervisor: the vendor's signature, "yes" without one, "" on bare metal
    size_t online_count = 0;     ///< host.online_count: the CPUs online when recording began
    uint32_t possible_cpus = 0;  ///< host.possible_cpus
  };
  struct Window {
    uint64_t samples = 0;  ///< window.samples
    double seconds = 0;    ///< window.seconds
    std::string start;     ///< window.start (UTC)
  };
  struct Probe {
    std::string name;      ///< name
    bool attached = false; ///< status == "attached"
    std::string backend;   ///< backend ("" when unavailable)
    std::string reason;    ///< reason (why it is unavailable)
    std::string blind;     ///< blind: why an attached probe measures nothing; "" when it measures
    bool proxy = false;    ///< proxy
    std::string primary;   ///< primary: its primary counter ("" when unknown to this build)
    /// counters[primary].rate_per_s; nullopt where the report has none (no figures, or a
    /// proxy that cannot see the counter).
    std::optional<double> rate_per_s;
    /// latency_ns; nullopt where the report's is null (no histogram, no figures, no event).
    std::optional<HistSummary> latency;
  };
  struct Line {
    std::string name;           ///< cachelines.lines[].name
    double xfers_per_s = 0;     ///< cachelines.lines[].xfers_per_s
    double stall_ns_per_s = 0;  ///< cachelines.lines[].stall_ns_per_s
  };
  Host host;
  Window window;
  std::vector<Probe> probes;  ///< probes, in the META's order
  FixesPresent fixes;         ///< cachelines.fixes
  std::vector<Line> lines;    ///< cachelines.lines, in the report's order
};

/// Consumes samples one by one (only the window's first sample and the latest one are
/// kept, so memory does not grow with the recording's length).
class ReportBuilder {
 public:
  ReportBuilder(const Meta& meta, ReportOptions opts);
  /// Feeds the next sample in time order (copied).
  void add(const Sample& s);
  /// The same without the copy: takes s's contents and leaves s holding an earlier
  /// sample's buffers (contents unspecified), for the caller to decode the next sample
  /// into. With 480 CPUs a sample is ~13 MB, so this saves a 13 MB copy per sample.
  void take(Sample& s);
  /// Feeds every sample of src (in time order), read into the builder's own two buffers
  /// (IntervalCursor): no copy and no buffer of the caller's. false when stop (may be null)
  /// was set after a sample was read (that sample and the rest are not fed).
  bool read(SampleSource& src, const std::atomic<bool>* stop = nullptr);
  /// Number of samples inside the window.
  uint64_t samples() const { return ic_.samples(); }
  /// Samples fed, inside the window or not, and the seconds from the first to the last.
  uint64_t seen() const { return ic_.seen(); }
  /// The window's first and last samples (null before the first inside it).
  const Sample* window_first() const { return ic_.first(); }
  /// The window's first sample to its last (null before two samples): window_first()'s
  /// words are kept sparse (hollow), so its figures are read through this.
  std::unique_ptr<WindowInterval> window_interval() const { return ic_.window_interval(); }
  const Sample* window_last() const { return ic_.last(); }
  double seen_span_s() const { return ic_.seen_t(); }
  /// The report document. meta may differ from the constructor's by status changes.
  nlohmann::json build(const Meta& meta, const SourceInfo& src) const;
  /// The same report in brief (ReportSummary), without building the document (no per-CPU
  /// table, no JSON); nullopt with fewer than two samples in the window (the document's
  /// "error": no figures).
  std::optional<ReportSummary> summary(const Meta& meta) const;

 private:
  // The steps of build():
  /// The report's "window" from its first sample a to its last b (with two or more).
  nlohmann::json window_json(const Meta& meta, const Sample& a, const Sample& b, const Interval& iv) const;
  /// The CPUs of the per-CPU rows: those online in some sample of the window
  /// (Sample::online; the metadata's online CPUs when a sample does not say), and any other
  /// that counted something in the window (online between two samples), so the rows add up
  /// to the totals. have: the window has an interval.
  std::vector<int> row_cpus(const Meta& meta, const Interval& iv, bool have) const;
  /// Probe p in brief (its ReportSummary::Probe) and whether the report shows its figures
  /// (counters, latency, per-CPU): what probe_json and summary() both say of it.
  struct ProbeBrief {
    ReportSummary::Probe brief;
    bool figures = false;
  };
  ProbeBrief probe_brief(const Meta& meta, const Interval& iv, int p, bool have) const;
  /// Probe p's object in "probes": status, counters, arrays, latency, its module's
  /// section and per-CPU figures (null figures when unavailable, blind or without data).
  nlohmann::json probe_json(const Meta& meta, const Interval& iv, int p, bool have, const std::vector<int>& cpus,
                            const std::vector<double>& secs) const;
  /// The per-CPU table (cpu_columns()) as r's "cpus", sorted by opts_.sort, with
  /// "cpus_sorted_by" and "cpus_total".
  void add_cpu_table(const Meta& meta, const Interval& iv, bool have, const std::vector<int>& cpus,
                     const CoherenceSummary& coh, const std::vector<double>& secs, nlohmann::json& r) const;

  const Meta& meta_;
  ReportOptions opts_;
  /// The window's samples and intervals (--from/--to from opts_; reads on after --to,
  /// counting what it reads; keeps the window's first sample).
  IntervalCursor ic_;
  /// Accounts the sample ic_ just handed out and the interval to it.
  void account();

  struct Peak {
    double rate = -1;
    double at_s = 0;
  };
  std::vector<Peak> peak_;  ///< per probe: highest primary-counter rate over one interval
  std::vector<FieldRef> primary_;  ///< per probe: its primary counter (empty: unknown to this build)
  std::vector<char> known_;        ///< per probe: known to this build (find_probe(), looked up once)
  std::unique_ptr<CoherenceAccumulator> coh_;  ///< the coherence model over the window's intervals
  std::unique_ptr<ExactAccumulator> exact_;    ///< --exact records over the window's intervals
  std::unique_ptr<TailAccumulator> tails_;     ///< --catch events over the window's intervals
  /// The caught events joined with exact_'s replay (its observer, with rules only).
  std::unique_ptr<TailExactJoin> tail_exact_;
  std::vector<char> online_;  ///< per CPU: online in some sample of the window
  /// Time each CPU was measured (Interval::online) in the window's intervals, ns: every
  /// CPU's all_online_ns_ (intervals with every CPU online, or a side that does not say)
  /// plus its own online_ns_ (empty until an interval with a CPU offline at both ends).
  uint64_t all_online_ns_ = 0;
  std::vector<uint64_t> online_ns_;
  /// Per CPU id: the seconds its per-CPU rates are over: iv's (the window's) for a CPU
  /// measured in every interval, else its measured time.
  std::vector<double> cpu_seconds(const Meta& meta, const Interval& iv) const;
  bool online_unknown_ = false;  ///< a window sample did not say which CPUs were online
};

/// Thrown by a document builder when its stop flag is set (Ctrl-C).
struct Interrupted {};

/// The facts of a recording for a report or export: file (as given), format, END seen,
/// damage ("at byte N: reason").
SourceInfo recording_source_info(const RecordingReader& r, const std::string& file);

/// What a per-CPU column shows.
enum class CpuColumnKind {
  rate,   ///< events/s of a counter field (Interval::rate)
  p99,    ///< p99 of a histogram field, ns (Interval::hist)
  model,  ///< the coherence model's transfers/s missed by the CPU (model/lines.h)
};

/// The per-CPU table's columns, in display order: report's table and JSON rows and
/// top's table all read this one list, built once from the modules' ProbeSpec::columns
/// (ordered by ProbeSpec::table_rank, then sh_probe_id) and the blank model column xfer/s.
struct CpuColumn {
  const char* header;  ///< table header; also the JSON key of rate columns ("idle/s")
  const char* probe;   ///< probe name ("" for model columns)
  const char* field;   ///< counter field (rate) or histogram field (p99)
  CpuColumnKind kind = CpuColumnKind::rate;
  const char* key = nullptr;  ///< JSON key when it is not header ("cpupri_set_p99_ns")
  /// The column's key in the report JSON.
  const char* json_key() const { return key ? key : header; }
};
const std::vector<CpuColumn>& cpu_columns();


}  // namespace schedhot
