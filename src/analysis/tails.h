// The caught tail events (--catch, issue 31) of a window, summarized per rule for the
// report's "tails" (README "Report JSON"): the rule's slot counters checked against its
// histogram, and what the received events say (durations, stacks, tasks, interrupts, the
// probe's own detail). Memory stays bounded over any window: stacks and tasks are
// counted by content, durations kept in a reservoir of at most kMaxDurations.
// Also the folded stacks of `export --format folded` (FoldedStacks).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/interval.h"
#include "probe/module.h"
#include "probe/records.h"
#include "sample/sample.h"

namespace schedhot {

/// A stack frame as the report shows it: "sym+0xoff", "[unknown]+0xoff" without a symbol.
std::string frame_text(const StackFrame& f);

/// The name of probe id (enum sh_probe_id) in this build's catalog, "probe<id>" when unknown.
std::string caught_probe_name(uint16_t id);

/// A caught event's detail word in words, as probe id `probe`'s module reads it
/// (ProbeModule::caught_detail_text): the cpupri transition ("RT->NORMAL") for
/// cpupri_set, "state 2" for idle, the holder ("holder CPU 3 in
/// __tick_broadcast_oneshot_control") for bcast_wait, the number for any other probe.
/// nr_prios: cpupri_nr_prios(meta).
std::string caught_detail_text(uint16_t probe, uint64_t detail, int nr_prios);

/// cpupri's pri_to_cpu[] length in meta's layout (101 when not recorded: since v5.11).
int cpupri_nr_prios(const Meta& meta);

/// How a run's caught events' detail words read (each probe module's caught_detail_*),
/// made once from the run's META: report's tails, top's tails view, export's Perfetto args.
class CaughtDetails {
 public:
  explicit CaughtDetails(const Meta& meta);
  /// Whether e's detail is shown: it carries one (SH_CATCH_F_DETAIL) and its probe's
  /// detail says something in this run (bcast_wait's holder: only where bcast_lock kept
  /// each CPU's holder state).
  bool shown(const CaughtEvent& e) const;
  /// e's detail in words; "" when not shown.
  std::string text(const CaughtEvent& e) const;
  /// e's detail as fields of a per-event document (an object: bcast_wait's holder_cpu,
  /// holder_site, holder_candidates, holder_inside_ns); empty when not shown or none.
  nlohmann::json fields(const CaughtEvent& e) const;

 private:
  CaughtRun run_;           ///< without status: what the words need after construction
  std::vector<char> kept_;  ///< by probe id: caught_detail_kept() in this run
};
/// A rule's steal figures (its JSON "steal", null: not kept) in one sentence, after
/// "steal: ": "of 9 caught, 2 had steal inside, 4.4us total (3 % of their time): the vCPU
/// waited for the host", or why there is none. The report's text and top's tails view.
std::string steal_sentence(const nlohmann::json& steal);

/// A stack as one line, innermost frame first: "cpupri_set+0x10 <- enqueue_task_rt+0x80".
std::string stack_text(const std::vector<StackFrame>& frames);

/// Summarizes the caught events of a window's intervals, per rule of the Meta it was made
/// with (events of a probe without a rule are not kept).
class TailAccumulator {
 public:
  /// Durations kept per rule for the percentiles; beyond it they are a uniform reservoir.
  static constexpr size_t kMaxDurations = 1'000'000;
  /// Distinct stacks (and tasks) counted per rule; events of others go to other_stacks
  /// (other_tasks). A stack's key is at most SH_CATCH_FRAMES frames: ~1 KB, ~10 MB at most.
  static constexpr size_t kMaxKeys = 10'000;

  explicit TailAccumulator(const Meta& meta);
  /// The events of one interval inside the window.
  void add(const CatchBatch& b);
  /// Batches added (0: the window has no catch batches).
  uint64_t batches() const { return batches_; }
  /// One interval of the window (iv, from sample prev), for the percentile rules' check:
  /// the threshold a live run armed after each sample is percentile_threshold() of that
  /// sample's running histogram (live/session.cpp), so over the interval after prev the
  /// rule had first the threshold of the sample before prev (until the re-arm that
  /// follows prev) and then prev's own; caught + dropped lies between the histogram's
  /// interval counts above the higher and above the lower of the two. The first interval
  /// of a window is checked only when prev is the run's baseline (seq 0: nothing armed
  /// before it); otherwise the threshold before prev is not known and the interval is left
  /// out of the check (intervals_checked says so).
  void add_interval(const Meta& meta, const Sample& prev, const Interval& iv);
  /// The report's "tails" array over the window iv (its first to last sample): one entry
  /// per rule of meta, in its order. top: stacks and tasks listed at most. rules: the
  /// rules as armed now when they differ from meta's (top's live rule editor changes a
  /// threshold; same probes, same order), nullptr: meta.catch_rules.
  nlohmann::json json(const Meta& meta, const Interval& iv, size_t top = 10,
                      const std::vector<CatchRule>* rules = nullptr) const;
  /// The name of an event's detail (SH_CATCH_F_DETAIL) as the report counts it: "RT->NORMAL"
  /// for cpupri_set, "state 2" for idle, the number otherwise; "" without the flag.
  std::string detail_of(const CaughtEvent& e) const;
  /// Events of rule `rule` (its index in Meta::catch_rules) with the stack frames
  /// (frame_text, innermost first; as json()'s "frames"); 0 when none or out of range.
  uint64_t stack_count(size_t rule, const std::vector<std::string>& frames) const;
  /// Events of rule `rule` whose stack found no room among the counted ones (other_stacks).
  uint64_t other_stacks(size_t rule) const { return rule < rules_.size() ? rules_[rule].other_stacks : 0; }
  /// The rule (index in Meta::catch_rules) whose events probe id `probe` (enum sh_probe_id)
  /// gives, -1 when none: the events add() keeps (analysis/tails_exact.h joins the same).
  int rule_of(uint16_t probe) const { return probe < rule_of_probe_.size() ? rule_of_probe_[probe] : -1; }

 private:
  struct Rule {
    uint64_t received = 0;
    std::vector<uint64_t> durs;  ///< all, or a reservoir once received > kMaxDurations
    uint64_t max_ns = 0;
    std::unordered_map<std::string, uint64_t> stacks;  ///< frames joined by '\n' (innermost first) -> events
    uint64_t other_stacks = 0;   ///< events whose stack found no room in stacks
    uint64_t no_stack = 0;       ///< events without a stack
    std::map<std::string, uint64_t> tasks;  ///< "comm\0pid\0tgid" -> events
    uint64_t other_tasks = 0;
    // Interrupts, over the events with SH_CATCH_F_IRQ:
    uint64_t irq_events = 0, irq_more = 0, irq_dur_ns = 0;
    uint64_t with[3] = {0, 0, 0};         ///< events with hard IRQ / softirq / NMI time inside
    uint64_t ns[3] = {0, 0, 0};           ///< that time, summed
    uint64_t with_dur_ns[3] = {0, 0, 0};  ///< the durations of the events that had it
    std::map<std::string, uint64_t> detail;  ///< SH_CATCH_F_DETAIL, named (RT->NORMAL, state 2)
    // Steal time, over the events with SH_CATCH_F_STEAL (a vCPU's paravirt steal clock):
    uint64_t steal_events = 0;     ///< events whose steal time was measured
    uint64_t steal_with = 0;       ///< of those, events with steal time inside
    uint64_t steal_ns = 0;         ///< that time, summed
    uint64_t steal_dur_ns = 0;     ///< the durations of the measured events
    uint64_t steal_with_dur_ns = 0;  ///< the durations of the events that had steal inside
  };
  /// A percentile rule's check over the intervals add_interval() saw (in add order).
  struct PercentileCheck {
    bool known = false;      ///< last_th holds the threshold armed after the previous interval's first sample
    uint64_t last_th = 0;    ///< 0: disarmed
    uint64_t intervals = 0, checked = 0;
    uint64_t lower = 0, upper = 0, counted = 0;  ///< summed over the checked intervals
    uint64_t min_th = 0, max_th = 0;  ///< the lowest and highest armed threshold of the checked intervals (0: none)
  };
  std::vector<PercentileCheck> pct_;  ///< like Meta::catch_rules (used for percentile rules)
  std::vector<Rule> rules_;           ///< like Meta::catch_rules
  std::vector<int> rule_of_probe_;    ///< by sh_probe_id: index into rules_, or -1
  std::vector<std::string> rule_probe_;
  uint64_t batches_ = 0;
  uint64_t lost_ = 0;                 ///< CatchBatch::lost, summed (every probe's)
  uint64_t rng_ = 0x9e3779b97f4a7c15ull;
  /// The run's detail words (a detail its probe does not keep in the run, as bcast_wait's
  /// "holder not seen" where the holder state was not kept, is not counted).
  std::optional<CaughtDetails> details_;
};

/// `export --format folded`: caught events counted by (probe, stack of function names),
/// offsets dropped so equal functions merge.
class FoldedStacks {
 public:
  /// b's events; cpus: only those of the CPUs set in it (export --cpus), nullptr: all.
  void add(const CatchBatch& b, const std::vector<char>* cpus = nullptr);
  uint64_t events() const { return events_; }
  /// One line per unique (probe, stack), sorted: "probe;outermost;...;innermost COUNT\n"
  /// (a frame without a symbol "[unknown]", an event without a stack "probe;[no stack]").
  std::string text() const;
  /// At most this many distinct lines and this many bytes of them are kept; the events of
  /// any further stack count on one "probe;[other stacks]" line (a crafted recording of
  /// many long distinct stacks would otherwise hold gigabytes).
  static constexpr size_t kMaxLines = 100'000;
  static constexpr size_t kMaxBytes = 64u << 20;

 private:
  std::map<std::string, uint64_t> lines_;
  size_t bytes_ = 0;
  uint64_t events_ = 0;
};

}  // namespace schedhot
