// Rendering for schedhot top/replay without ncurses: the per-CPU and topology tables,
// the histogram, the probe summary, the header and the help text as lines of text with
// coloured spans. The ncurses front end (tui_term.h) only copies these to the screen,
// so every layout here is unit-tested and the batch mode (top -b) prints the same text.
//
// Every number comes from an Interval (src/model/interval.h); columns are cpu_columns()
// (src/analysis/report.h).
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/histogram.h"
#include "model/interval.h"
#include "model/lines.h"
#include "sample/sample.h"
#include "analysis/report.h"
#include "output/report_text.h"

namespace schedhot::tui {

/// What a span of text is, for colour. Terminals without colour map them to plain or
/// bold/reverse text.
enum class Role : uint8_t {
  normal,
  title,      ///< the first header line
  label,      ///< names in the header ("kernel", "interval")
  good,       ///< attached probes
  bad,        ///< unavailable probes, errors
  dim,        ///< secondary text
  head,       ///< table header line
  sort_head,  ///< the sort column's header
  bar,        ///< histogram bars
  mark,       ///< percentile markers
  status,     ///< the bottom line: messages and key hints
};

/// A coloured run of a Line: cells [col, col + len).
struct Span {
  int col = 0;
  int len = 0;
  Role role = Role::normal;
};

/// One screen line: UTF-8 text (one cell per code point) and its coloured spans.
struct Line {
  std::string text;
  std::vector<Span> spans;
  /// Appends s, coloured role unless role is normal.
  Line& add(std::string_view s, Role role = Role::normal);
  /// Width in cells.
  int width() const;
};
using Screen = std::vector<Line>;

/// Byte offset of cell `cell` in UTF-8 text (s.size() when s has fewer cells).
size_t byte_of_cell(std::string_view s, int cell);
/// Number of cells of UTF-8 text (code points; every character schedhot prints is one cell wide).
int cells(std::string_view s);
/// s cut to at most width cells, then padded with spaces to exactly width cells.
std::string fit(std::string_view s, int width);
/// Cuts a Line (and its spans) to at most width cells.
void clip(Line& l, int width);

// ---- table values ---------------------------------------------------------------

/// Cell values that are not numbers: the probe is not attached ("-"), or there is
/// nothing to show (blank: a model column, or a percentile of an interval without events).
inline constexpr double kUnavailable = -1;
inline constexpr double kBlank = -2;

/// One row of the per-CPU or topology table.
struct TableRow {
  std::string label;      ///< "3" or "LLC 2"
  std::vector<int> cpus;  ///< the CPU, or the group's CPUs
  int key = 0;            ///< order of the label column: CPU id, or the group's first CPU
  std::vector<double> v;  ///< one value per cpu_columns() entry (events/s, ns, or kUnavailable/kBlank)
};

/// For each cpu_columns() entry, the probe index whose data it shows in iv, or -1 when the
/// probe is unavailable (or the column is a model column).
std::vector<int> column_probes(const Interval& iv);
/// Value of column col over cpus: a rate (events/s) or a p99 (ns); kUnavailable for a
/// probe that is not attached (probe < 0 for rate/p99 columns), when none of cpus was
/// online in the interval (Interval::online), and for the p99 of a proxy (which times
/// nothing), kBlank for model columns and for a p99 without events.
double column_value(const Interval& iv, const CpuColumn& col, int probe, std::span<const int> cpus);

/// The model column (xfer/s) of one interval: the coherence model's transfers/s missed by
/// each CPU over every modeled line (CoherenceSummary::cpu_xfers_per_s), resolved once per
/// frame so that a row costs O(its CPUs), not O(lines x CPUs).
struct ModelColumn {
  /// Some probe whose events touch a modeled line (ProbeSpec::accesses) has data in the
  /// interval; when none has, the column is "-" (not measured), never 0.
  bool measured = false;
  std::vector<double> xfers_per_cpu;  ///< by CPU id; 0 for CPUs past its end
};
/// summary: a CoherenceAccumulator fed with iv alone (or the span the table shows).
/// O(lines x CPUs with accesses).
ModelColumn model_column(const Interval& iv, const CoherenceSummary& summary);

/// For cpu_rows/group_rows: compute every column. Otherwise `only` is a table column
/// (layout: 0 = the label, i >= 1 = cpu_columns()[i - 1]) and only its values are computed,
/// the others left kBlank until fill_rows(): on 8192 CPUs, sort on one column, then
/// compute the page shown.
inline constexpr int kEveryColumn = -1;

/// One row per CPU of cpus. model: the xfer/s column's figures (model_column() of iv);
/// nullptr leaves that column blank.
std::vector<TableRow> cpu_rows(const Interval& iv, std::span<const int> cpus, int only = kEveryColumn,
                               const ModelColumn* model = nullptr);
/// Computes every column of rows[first, first + count) (clamped to the rows there are).
void fill_rows(const Interval& iv, std::vector<TableRow>& rows, size_t first, size_t count,
               const ModelColumn* model = nullptr);

/// The topology view's label of a level (sys/host.h TopoLevel; the view cycles core, llc,
/// node, package): "CPU", "core", "LLC", "node", "package".
const char* to_string(TopoLevel l);

/// CPUs that share a core, an LLC, a NUMA node or a package.
struct CpuGroup {
  std::string label;      ///< "pkg0 core3", "LLC 2", "node 1", "pkg 1"; "unknown" for CPUs without topology
  std::vector<int> cpus;  ///< ascending
};
/// Folds cpus into groups at level from the host's topology (the recording's, or sysfs
/// for a live run), ordered by first CPU.
std::vector<CpuGroup> fold_topology(const HostInfo& h, std::span<const int> cpus, TopoLevel level);
/// One row per group: rates (and modeled transfers) summed over the group's CPUs, p99 over
/// their merged histogram.
std::vector<TableRow> group_rows(const Interval& iv, const std::vector<CpuGroup>& groups, int only = kEveryColumn,
                                 const ModelColumn* model = nullptr);

/// Table columns: 0 is the label (CPU or group), i >= 1 is cpu_columns()[i - 1].
int table_columns();
/// Header of table column i ("CPU" for 0).
std::string column_header(int i);
/// The table column named by a probe ("cpupri_set": its first column), a header
/// ("set_p99", "xfer/s") or "cpu"; -1 when none.
int find_column(std::string_view name);
/// Sorts rows by column col: the label column ascending, value columns highest first
/// (kUnavailable and kBlank last); ties by label; reverse flips the order.
void sort_rows(std::vector<TableRow>& rows, int col, bool reverse);
/// The highest value of column col (>= 1) over rows, or kBlank when none has a number.
double column_peak(const std::vector<TableRow>& rows, int col);
/// The same as column_peak(cpu_rows(iv, cpus, col, model), col), without making the rows:
/// the highest value of column col (>= 1) over the CPUs one by one, or kBlank (what `w`
/// scores each interval of a recording by: 8192 rows an interval at 8192 CPUs).
double cpu_column_peak(const Interval& iv, std::span<const int> cpus, int col, const ModelColumn* model = nullptr);
/// Text of a cell: format_rate/format_ns, "-" for kUnavailable, "" for kBlank.
std::string cell_text(const CpuColumn& col, double v);

/// How to draw a table.
struct TableStyle {
  std::string label_header = "CPU";  ///< header of the label column
  bool cpu_list = false;             ///< groups: add the CPU count and, last, the CPU list
  int sort_col = 1;
  bool reverse = false;
  int first_row = 0;                 ///< index of the first row shown
  int first_col = 0;                 ///< value columns scrolled off to the left
  int width = 80;                    ///< cells
  int height = 0;                    ///< lines including the header line; 0 = all rows
};
/// The header line and the visible rows. The value columns start at st.first_col, or
/// earlier where the columns from there on leave room (written to *first_col_shown).
std::vector<Line> render_table(const std::vector<TableRow>& rows, const TableStyle& st,
                               int* first_col_shown = nullptr);

// ---- histogram ----------------------------------------------------------------------

/// One bar of the histogram view: a run of adjacent log-linear buckets.
struct HistRow {
  uint64_t lo = 0;     ///< lowest value, ns
  uint64_t hi = 0;     ///< one past the highest value, ns
  uint64_t count = 0;
  std::string marks;   ///< "p10 p50" etc.: the percentiles (and max) that fall in this row
};
/// Bars from the lowest to the highest non-empty bucket, adjacent buckets merged so that
/// there are at most max_rows; each percentile of s (and its max) marks the row holding it.
std::vector<HistRow> hist_rows(std::span<const uint64_t> buckets, const HistSummary& s, int max_rows);
/// The histogram view: a line of percentiles, then bars. utf8 chooses block characters
/// for bars ('#' otherwise).
std::vector<Line> render_histogram(const std::string& title, std::span<const uint64_t> buckets, const HistSummary& s,
                                   int width, int height, bool utf8);

// ---- cachelines (the l view) ----------------------------------------------------------

/// One row of the lines view: a modeled line over the interval shown (LineSummary).
struct LineRow {
  std::string name;                 ///< LineSummary::name
  double reads_per_s = 0, writes_per_s = 0;
  double xfers_per_s = 0;           ///< modeled transfers/s (every CPU)
  double kb_per_s = 0;              ///< transfers x line size / 1024
  /// Share of the transfers by XferDistance (smt, llc, package, remote), %; -1 when the
  /// line has no transfers.
  std::array<double, kXferDistances> pct{};
  double stall_us_per_s = 0;        ///< stall estimate (XferCost), us per second
  std::vector<std::pair<int, double>> top;  ///< up to 3 CPUs with the most transfers/s (> 0), highest first
  int readers = 0, writers = 0;     ///< CPUs that read / wrote it
  /// With --exact records (line_rows()' exact): the exact transfers/s of the same interval
  /// and the gap model's (ExactAccumulator::traffic, gap_traffic; 0 when no record touched
  /// the line); nullopt without.
  std::optional<double> exact_per_s, gap_per_s;
};
/// The rows of s's lines, highest xfer/s first (ties in LineKey order). exact (may be
/// null): the same interval's --exact records, for each row's exact and gap figures.
std::vector<LineRow> line_rows(const CoherenceSummary& s, const XferCost& cost, const ExactAccumulator* exact = nullptr);

/// The fixes this kernel has (fixes_present() of the recorded layout): the full text
/// (to_string(FixesPresent)), or "fixes: layout not recorded" when META has no layout.
std::string fixes_text(const Meta& meta);
/// Its short form for the header: "fixes: nohz.nr_cpus present, cpupri_vec.count present,
/// bcast_lock line ?" (gone / present / ?; alone / shared / ?).
std::string fixes_short(const Meta& meta);

/// The lines view's parts, each clipped to width: the fixes line, the column header, one
/// line per LineRow (as line_rows orders them), and below them the what-if lines (one per
/// WhatIfResult) and the notes (layout notes; that the figures are a model's estimate).
/// xfer/s is the independent-arrivals model; exact (may be null: live, no --exact) adds
/// the columns exact/s and gap/s after it (LineRow::exact_per_s, gap_per_s).
struct LinesView {
  Line fixes;
  Line head;
  std::vector<Line> rows;
  std::vector<Line> tail;
};
LinesView render_lines(const Meta& meta, const CoherenceSummary& s, const XferCost& cost, int width,
                       const ExactAccumulator* exact = nullptr);

// ---- header, summary, help ------------------------------------------------------------

/// What the header shows besides the Meta.
struct HeaderInfo {
  std::string mode;         ///< "top" or "replay"
  std::string when;         ///< "live 12:34:56" or "sample 4/11 +3.0 s 2023-11-14 22:13:23 UTC"
  uint64_t interval_ns = 0;
  uint64_t lost = 0;        ///< samples missing from the schedule
  std::string cost;         ///< schedhot's own BPF cost, or why it is not known
  std::string state;        ///< "paused", "playing 4x", "recording to F: 12 samples"
};
/// How much of the probe list the header shows.
enum class ProbeFold {
  full,     ///< attached probes packed on lines, each unavailable or blind one with its reason
  compact,  ///< every probe packed several per line as "name backend" / "name unavailable" / "name blind"
  count,    ///< one line: "probes 7 attached, 1 unavailable (bcast_lock), 1 blind (bcast_wait)  p: details"
};
/// The header: host and time, the probes (folded to fold), samples lost and cost.
/// Unavailable and blind probes stay visible as such in every form.
std::vector<Line> render_header(const Meta& meta, const HeaderInfo& h, int width, ProbeFold fold);
/// The header in at most max_lines lines where it can: the full probe list when it fits,
/// else the compact one, else the one-line count (the least it takes: title, time when it
/// does not fit the title line, one probe line and the lost/cost line). max_lines <= 0:
/// no limit (full). *fold_used (when not null) is the form chosen.
std::vector<Line> render_header(const Meta& meta, const HeaderInfo& h, int width, int max_lines = 0,
                                ProbeFold* fold_used = nullptr);

/// The probe details screen (the p key): each probe with its backend, symbol and the
/// reason it is unavailable or blind, in full, wrapped to width.
std::vector<Line> render_probes(const Meta& meta, int width);

/// One line per probe: backend or unavailable reason, total, rate and percentiles over cpus.
std::vector<Line> render_summary(const Interval& iv, std::span<const int> cpus, int width);

/// The help screen's lines (keys), for live (top) or replay.
std::vector<Line> render_help(bool live, int width);

/// Smallest terminal the UI draws on.
inline constexpr int kMinWidth = 60;
inline constexpr int kMinHeight = 12;
/// The screen shown on a terminal smaller than kMinWidth x kMinHeight.
Screen render_too_small(int width, int height);

}  // namespace schedhot::tui
