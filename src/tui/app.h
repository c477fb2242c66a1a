// The top/replay UI without the terminal: view state, key handling and the screen built
// from layout.h. A TuiFeed supplies the interval shown (live samples or a recording);
// tui_term.h reads keys and draws the Screen. Tests drive a TuiApp with keys and read
// its Screen directly.
#pragma once
#include <memory>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "analysis/tails.h"
#include "model/interval.h"
#include "probe/run_stats.h"
#include "sample/sample.h"
#include "tui/screen.h"

namespace schedhot::tui {

/// Keys: printable ASCII as themselves, the others as these codes.
enum Key : int {
  kNoKey = -1,
  kKeyEnter = '\n',
  kKeyEsc = 27,
  kKeyBackspace = 127,
  kKeyUp = 0x10000,
  kKeyDown,
  kKeyLeft,
  kKeyRight,
  kKeyPgUp,
  kKeyPgDn,
  kKeyHome,
  kKeyEnd,
  kKeyF6,
  kKeyResize,
};

/// --catch: the caught events from the start to the sample shown (the tails view).
struct TailsSoFar {
  const Sample* start = nullptr;         ///< the run's (the recording's) first sample
  const TailAccumulator* acc = nullptr;  ///< the CATCH batches of every sample after it, up to last()
};

/// Where the UI's samples come from: the live kernel (top) or a recording (replay). The
/// interval shown is always between two adjacent samples.
class TuiFeed {
 public:
  virtual ~TuiFeed() = default;
  virtual const Meta& meta() const = 0;
  virtual bool live() const = 0;
  /// Earlier and later sample of the interval shown; nullptr until there are two.
  virtual const Sample* first() const = 0;
  virtual const Sample* last() const = 0;
  /// Header: "live 12:34:56" or "sample 4/11 +3.0 s 2023-11-14 22:13:23 UTC".
  virtual std::string when() const = 0;
  /// Samples missing from the schedule so far (live) or in the whole recording.
  virtual uint64_t lost() const = 0;
  /// schedhot's own BPF cost over the interval shown, or why it is not known.
  virtual std::string cost() const = 0;
  /// "paused", "playing 4x", "recording to F: 12 samples"...; "" when nothing to say.
  virtual std::string state() const = 0;
  /// The part of state() that plain output (not interactive) keeps: "file 2 after
  /// rotation" while following; "" when nothing.
  virtual std::string plain_state() const { return ""; }
  /// What holds of the source whatever the UI does, for plain output too (a damaged or
  /// unclosed recording); "" when nothing.
  virtual std::string source_note() const { return ""; }
  /// CPUs online at some point of the source, ascending (replay: the whole recording;
  /// live: at least the metadata's and the shown samples' online CPUs; TuiApp adds every
  /// sample it has seen). Empty when nothing says: every CPU. The default: META
  /// host.online plus first() and last()'s Sample::online.
  virtual std::vector<int> online_cpus() const;
  /// Current sampling interval (live) or the recording's interval, ns.
  virtual uint64_t interval_ns() const = 0;
  /// Milliseconds until update() has work (a due sample, the next playing step); -1 = none.
  virtual int wait_ms() const = 0;
  /// Does the work that is due. True when the interval shown changed. Throws
  /// std::runtime_error on a fatal error (e.g. the recording being written fails).
  virtual bool update() = 0;
  /// Space. Live: freezes the interval shown while sampling (and recording) go on.
  /// Replay: plays or pauses.
  virtual void toggle_pause() = 0;
  /// + (dir 1) / - (dir -1). Live: next longer/shorter interval; replay: faster/slower
  /// playing. Returns a one-line message for the status line.
  virtual std::string adjust(int dir) = 0;

  // Replay only (a live feed answers "only in replay"). Each returns a one-line message
  // for the status line: "" or what happened on success, why not on failure.
  /// t (-1) / T (+1): the previous / next interval.
  virtual std::string step(int delta);
  /// j: the interval ending at the first sample at or after t_ns since the first sample.
  virtual std::string jump(uint64_t t_ns);
  /// w: the interval with the highest score (score < 0: nothing to compare).
  virtual std::string jump_worst(const std::function<double(const Interval&)>& score);
  /// The tails view's "since start": the caught events from the first sample to last();
  /// {} when not known (no --catch rules, no interval yet, the recording unreadable).
  /// Replay reads the recording up to the sample shown (from its start again after a step
  /// back); live adds each sample's as it comes.
  virtual TailsSoFar tails_so_far() { return {}; }
  /// --catch rules as armed now (top's editor changes their thresholds): META's by default.
  virtual const std::vector<CatchRule>& catch_rules() const { return meta().catch_rules; }
  /// When rule i (catch_rules()) was last re-armed by the editor, CLOCK_MONOTONIC ns; 0: never.
  virtual uint64_t rule_edited_ns(size_t) const { return 0; }
  /// Recording what is shown (top --record): an edit then says META keeps the start's rules.
  virtual bool recording() const { return false; }
  /// A (top's live rule editor): re-arms probe's rule at ns (rounded up to a bucket's lower
  /// bound). A one-line message for the status line: what was armed, or why not.
  virtual std::string set_catch_threshold(const std::string& probe, uint64_t ns);

  /// Plain output of a recording being followed, at its last sample: waits up to one
  /// poll for samples written since. false when no more will come (not following, the
  /// writer closed the file without rotating it, or a stop was requested).
  virtual bool await_more() { return false; }
};

/// The views: per-CPU table, histogram, topology table, per-probe summary, cachelines (l),
/// the --catch tails (a).
enum class View { cpus, hist, topo, summary, lines, tails };

/// Screens drawn over a view until a key closes them: the keys (?) and the probe details (p).
/// Taller than the terminal, they scroll with the arrows, PgUp/PgDn, Home/End.
enum class Overlay { none, help, probes };

/// Rows of the table (CPUs, groups, histogram bars, summary lines) that every view keeps on
/// any terminal of at least kMinWidth x kMinHeight: the header's probe list folds
/// (ProbeFold) to leave room for them and the key line.
inline constexpr int kMinTableRows = 3;

/// How the UI starts.
struct TuiOptions {
  int sort_col = 1;               ///< table column (layout.h table_columns()); 1 = idle/s
  bool reverse = false;
  std::vector<int> filter;        ///< CPUs shown; empty = every CPU online at some point
  bool utf8 = true;               ///< block characters for histogram bars
  XferCost xfer_cost;             ///< per-distance stall estimate of one transfer (the l view)
  /// Parses j's time ("30", "2.5s", "1m") to ns; throws std::invalid_argument with a
  /// one-line message.
  std::function<uint64_t(const std::string&)> parse_time;
};

/// View state and key handling.
class TuiApp {
 public:
  TuiApp(TuiFeed& feed, TuiOptions opts);
  /// Handles one key; false when the UI should quit.
  bool on_key(int key);
  /// A prompt (filter, jump) is taking text: keys are characters, not commands.
  bool in_prompt() const { return prompt_ != Prompt::none; }
  /// The screen for a terminal of width x height cells (exactly height lines).
  Screen render(int width, int height);
  /// Plain text of the header and the whole table (every row and column; the per-CPU
  /// view unless the topology view is on), for top's batch mode. "" until two samples.
  std::string render_text();

  View view() const { return view_; }
  Overlay overlay() const { return overlay_; }
  int sort_col() const { return sort_col_; }
  bool reverse() const { return reverse_; }
  TopoLevel level() const { return level_; }
  /// Probe index (Meta::probes) of the histogram view.
  int hist_probe() const { return hist_probe_; }
  const std::vector<int>& filter() const { return filter_; }
  /// The status line's message ("" when none).
  const std::string& message() const { return message_; }
  void set_message(std::string m) { message_ = std::move(m); }
  /// CPUs shown: the filter, or every CPU online at some point (TuiFeed::online_cpus(),
  /// plus every CPU online in a sample shown so far).
  std::vector<int> shown_cpus() const;
  /// Every CPU online at some point so far (what shown_cpus() shows without a filter, and
  /// what the filter may name): ascending, all CPUs when nothing says.
  std::vector<int> ever_online() const;
  /// Score for w: the sort column's highest value over the shown CPUs in iv (-1 when
  /// the sort column is the CPU column or has no numbers).
  double worst_score(const Interval& iv) const;

 private:
  enum class Prompt { none, filter, jump, rule };
  bool on_prompt_key(int key);
  void commit_prompt();
  void cycle_hist(int dir);
  /// The header; interactive adds the feed's state (paused, playing...). max_lines > 0:
  /// the probe list folds to keep it within that many lines (render_header()).
  std::vector<Line> header(int width, bool interactive, int max_lines = 0) const;
  /// The overlay's screen: its lines from overlay_top_, and a last line that says how to
  /// scroll and close it.
  Screen render_overlay(int width, int height);
  std::vector<Line> body(int width, int height);
  /// The coherence model of iv alone (a CoherenceAccumulator fed with it), for the xfer/s
  /// column and the lines view: computed once per interval (kept while the same two
  /// samples are shown, so keys that only redraw do not recompute it).
  const CoherenceSummary& model_of(const Interval& iv) const;
  /// The --exact records of iv (ExactAccumulator::interval(): the later sample's records,
  /// after the earlier sample's), for the lines view's exact and gap columns; nullptr when
  /// iv has none (live, or a recording made without --exact). Cached as model_of().
  const ExactAccumulator* exact_of(const Interval& iv) const;
  std::vector<Line> table_body(const Interval& iv, int width, int height, const ModelColumn* model);
  std::vector<Line> lines_body(const Interval& iv, int width, int height);
  std::vector<Line> tails_body(const Interval& iv, int width, int height);

  TuiFeed& feed_;
  TuiOptions opts_;
  /// model_of()'s last interval (its samples' seq and mono_ns) and its model.
  struct ModelCache {
    bool valid = false;
    uint32_t a_seq = 0, b_seq = 0;
    uint64_t a_mono = 0, b_mono = 0;
    CoherenceSummary summary;
    std::unique_ptr<CoherenceAccumulator> model;  ///< kept: its plans are resolved once per Meta
    bool exact_valid = false;                     ///< exact holds this interval's records (or it has none)
    bool has_exact = false;
    std::unique_ptr<ExactAccumulator> exact;      ///< kept as model
  };
  mutable ModelCache model_cache_;
  View view_ = View::cpus;
  Overlay overlay_ = Overlay::none;
  int overlay_top_ = 0;    ///< first line of the overlay shown
  int overlay_page_ = 1;   ///< overlay lines per page at the last render
  int overlay_lines_ = 0;  ///< overlay lines at the last render
  int sort_col_ = 1;
  bool reverse_ = false;
  std::vector<int> filter_;
  std::string filter_text_;
  mutable std::vector<char> seen_online_;  ///< per CPU: online in a sample shown so far
  TopoLevel level_ = TopoLevel::llc;
  int hist_probe_ = -1;
  int first_row_ = 0;
  int first_col_ = 0;
  int page_ = 1;       ///< rows per page at the last render
  int row_count_ = 0;  ///< rows at the last render
  Prompt prompt_ = Prompt::none;
  std::string input_;
  std::string message_;
};

/// "BPF 1.23 ms/s (0.123% of one CPU), 4.5k runs/s, 270 ns/run" for the programs' totals
/// taken seconds apart (top's header); "-" when seconds <= 0.
std::string cost_text(const BpfRunTotals& a, const BpfRunTotals& b, double seconds);

}  // namespace schedhot::tui
