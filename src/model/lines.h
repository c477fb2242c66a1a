// The hot shared cachelines of an interval: which CPU reads and writes which line how
// often, built from the probes' counters and the traced kernel's layout. Each probe module
// declares the kernel fields every counted event touches (ProbeSpec::accesses, e.g. a
// nohz_balance_exit_idle() that found the tick stopped writes nohz.idle_cpus_mask[cpu] and
// nohz.nr_cpus); the layout (probe/layout.h, from BTF) says which line each field lives in.
// The coherence model (model/coherence.h) turns these rates into transfers.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/coherence.h"
#include "model/gaps.h"
#include "model/interval.h"
#include "probe/layout.h"

namespace schedhot {

class ProbeModule;

/// A cacheline: line `line` (0-based, line_bytes each) of a kernel object ("nohz",
/// "root_domain", "nohz.idle_cpus_mask", "cpupri.pri_to_cpu[3].mask", "cpupri.cpu_to_pri",
/// "tick_broadcast_lock").
struct LineKey {
  std::string object;
  int64_t line = 0;
  auto operator<=>(const LineKey&) const = default;
};

/// One probe's accesses to a line from one CPU, events/s. An event that touches the line
/// several times (a load then a store, two fields of it) counts once: as a write if any of
/// its accesses writes.
struct LineCpuRate {
  int cpu = -1;
  int probe = -1;
  double reads = 0, writes = 0;
};

/// A modeled line over one interval.
struct LineAccesses {
  LineKey key;
  std::string family;               ///< "nohz", "cpupri", "tick_broadcast_lock": what-if groups
  std::string name;                 ///< shown: "nohz", "root_domain line 2 (cpupri vec 0)"
  std::vector<std::string> fields;  ///< kernel fields accessed in it ("nohz.nr_cpus")
  std::vector<std::string> assumptions;  ///< of its accesses and its placement, one line each
  std::vector<LineCpuRate> rates;   ///< by (cpu, probe); only non-zero entries
};

/// The seed patches the model can replay (the hot objects' what-ifs that replay, by rank):
/// nohz.nr_cpus removed, cpupri_vec.count removed.
const std::vector<WhatIf>& what_ifs();
/// Whether w applies to layout: the kernel still has the field it removes (its object's
/// what_if_reason() is "").
bool what_if_applies(const WhatIf& w, const CoherenceLayout& layout);
/// layout with the what-if's field removed and the struct re-laid out (later members move
/// down to their natural alignment), as the patched kernel would have it (its object's
/// HotObject::apply()). Unchanged when the field is already absent.
CoherenceLayout apply_what_if(const CoherenceLayout& layout, const WhatIf& w);

/// The target of kernel field `field` ("#" already replaced by the element; "[cpu]" marks
/// a per-CPU element) in `layout`, on a machine of ncpus possible CPUs; nullopt when the
/// kernel has no such field (nohz.nr_cpus on 7.0+, cpupri_vec.count once removed). The
/// hot object whose field it is answers (HotObject::field_target()).
std::optional<FieldTarget> field_target(const std::string& field, int ncpus, const CoherenceLayout& layout);

/// line_accesses' work resolved once for a Meta and a layout: every probe's declared
/// accesses (per element of a counter array) with their counters, bounds and targets, the
/// slot words each probe's accesses read, and a dense id for every line they can reach
/// (with its key, family and LineKey rank). compute() then costs O(measured CPUs x
/// declared accesses) per interval, with no lookup by name, no string and, once its
/// buffers have grown, no allocation. Not thread-safe: compute() reuses buffers of the plan.
class LinePlan {
 public:
  /// meta must outlive the plan.
  LinePlan(const Meta& meta, const CoherenceLayout& layout);
  /// As line_accesses(iv, layout); iv must be of this plan's Meta.
  std::vector<LineAccesses> accesses(const Interval& iv) const;
  const CoherenceLayout& layout() const { return layout_; }
  const Meta& meta() const { return *meta_; }

  /// One interval's lines as compute() leaves them: line ids of this plan, the rates and
  /// the accesses of each. Reused from interval to interval (its vectors keep their capacity).
  struct Lines {
    std::vector<uint32_t> ids;  ///< the lines with a non-zero rate, in LineKey order
    /// Per line id: (cpu, probe) rates as LineAccesses::rates (sorted by cpu, then probe);
    /// valid for the ids above.
    std::vector<std::vector<LineCpuRate>> rates;
    /// Per line id: the resolved() accesses that reached it (a counted event on some CPU),
    /// ascending; valid for the ids above.
    std::vector<std::vector<uint32_t>> used;
    std::vector<uint32_t> touched;  ///< ids written this interval (cleared by the next compute)
  };
  /// The lines of iv into out (what accesses() returns, by line id). iv must be of this
  /// plan's Meta. family >= 0 (family_id()): only the lines of that family (the others'
  /// accesses are skipped: a line's rates depend on its own accesses only).
  void compute(const Interval& iv, Lines& out, int family = -1) const;
  /// The id of a family of lines ("nohz", "cpupri", ...) for compute(); -1 when no line of
  /// this plan is of it.
  int family_id(const std::string& family) const;
  /// Number of line ids (every line a declared access can reach on ncpus CPUs).
  size_t line_count() const { return keys_.size(); }
  /// Line id's key, family (LineAccesses::family) and shown name (computed once, on first use).
  const LineKey& key(uint32_t id) const { return keys_[id]; }
  const std::string& family(uint32_t id) const { return objects_[line_obj_[id]].family; }
  const std::string& name(uint32_t id) const;
  /// Line id's place in LineKey order (rank(a) < rank(b) iff key(a) < key(b)).
  uint32_t rank(uint32_t id) const { return rank_[id]; }

  /// One declared access of one element, resolved.
  struct Resolved {
    int probe = -1;
    FieldRef counter, minus;
    int elem = -1;            ///< counter_array element, -1 the field (or the element_bits sum)
    uint32_t bits = 0;        ///< element_bits
    bool write = false;
    int bound = -1;           ///< index into bounds_
    int kind = -1;            ///< same counter, minus and element: one kind of event
    std::string field;        ///< with "#" replaced
    std::string assumption;   ///< FieldAccess::assumption
    FieldTarget target;
    /// Slot words [lo, hi) summed for the counter (its element) and the minus counter
    /// (empty when none); and the family's id (family_id()).
    uint32_t counter_lo = 0, counter_hi = 0, minus_lo = 0, minus_hi = 0;
    int family = -1;
  };
  const std::vector<Resolved>& resolved() const { return res_; }
  /// event_lines() of this plan's Meta and layout.
  std::vector<std::pair<LineKey, bool>> event_lines(int probe, uint32_t word, int cpu) const;
  /// The resolved accesses (indices into resolved()) that an event of counter word `word`
  /// of probe `probe` makes, as event_lines() applies them (a minus counter's record: the
  /// base counter's accesses without a minus). Empty: no access uses the word.
  std::vector<size_t> event_accesses(int probe, uint32_t word) const;
  /// The dense id range of resolved access i's object: first id and first line.
  std::pair<uint32_t, int64_t> object_ids(size_t i) const {
    const Object& o = objects_[res_obj_[i]];
    return {o.first_id, o.min_line};
  }

 private:
  /// The line ids access i touches from cpu, appended to out.
  void line_ids(size_t i, int cpu, std::vector<uint32_t>& out) const;

  const Meta* meta_;
  CoherenceLayout layout_;
  std::vector<Resolved> res_;            ///< grouped by probe, in probe order
  std::vector<FieldRef> bounds_;         ///< the bounding counters
  std::vector<std::pair<size_t, size_t>> probe_res_;  ///< per probe: [begin, end) of res_
  /// Per probe: the slot words its accesses read (counters, minus counters, bounds), sorted;
  /// its bounds (indices into bounds_, in first use order); its module (for blind_reason).
  std::vector<std::vector<uint32_t>> words_;
  std::vector<std::vector<int>> probe_bounds_;
  std::vector<const ProbeModule*> mods_;
  std::vector<uint32_t> probe_families_;  ///< per probe: bit f set when an access reaches family f
  std::vector<std::string> families_;     ///< family ids' names
  std::vector<std::pair<uint32_t, uint32_t>> bound_words_;  ///< per bound: its slot words [lo, hi)
  /// Per probe: its accesses whose counter is one slot word, as (word, access) by word (an
  /// element of a counter array: skipped at once when the word did not move), and the others.
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> by_word_;
  std::vector<std::vector<uint32_t>> other_res_;
  size_t max_slot_words_ = 0;
  /// Line ids: per object a dense run of its lines [min_line, min_line + count).
  struct Object {
    std::string name, family;
    int64_t min_line = 0, max_line = -1;
    uint32_t first_id = 0;
  };
  std::vector<Object> objects_;
  std::vector<uint32_t> res_obj_;        ///< per resolved access: its object
  std::vector<LineKey> keys_;            ///< per line id
  std::vector<uint32_t> line_obj_;       ///< per line id: its object
  std::vector<uint32_t> rank_;           ///< per line id: its place in LineKey order
  mutable std::vector<std::string> names_;  ///< per line id: line_name(), "" until asked
  // compute()'s buffers.
  struct Entry {
    uint32_t line;
    int bound, kind;
    double r, w;
  };
  mutable std::vector<Entry> ents_;
  mutable std::vector<uint64_t> d_, caps_;
  mutable std::vector<uint32_t> ids_;
  mutable std::vector<uint32_t> last_line_;  ///< per resolved access: the line it last registered in used
};

/// The lines every present probe's declared accesses touch over iv, per CPU and probe
/// (rates in events/s), in LineKey order. Fields the layout lacks are skipped; a field
/// whose placement is not known (a separate allocation: an OFFSTACK cpumask, cpu_to_pri[])
/// is modeled as its own line-aligned object, said in the line's assumptions. Cost:
/// O(probes x accesses x measured CPUs); idle CPUs add nothing.
std::vector<LineAccesses> line_accesses(const Interval& iv, const CoherenceLayout& layout);

/// A line that line_accesses() can return for a recording, whatever its counts.
struct PossibleLine {
  LineKey key;
  std::string family;       ///< as LineAccesses::family
  std::string name;         ///< as LineAccesses::name
  std::vector<int> probes;  ///< the probes (index into Meta::probes) whose declared accesses reach it, ascending
};

/// Every line line_accesses(iv, layout) can return for an Interval of a recording with
/// meta: the declared accesses of every probe of meta (attached or not: the same list for
/// every file of a run) over every element of their counters and the possible CPUs
/// 0..ncpus-1, in LineKey order. Cost: O(probes x accesses x elements x ncpus), once.
std::vector<PossibleLine> possible_lines(const Meta& meta, const CoherenceLayout& layout);

/// Natural order of names: runs of digits compare as numbers ("vec[2]" < "vec[10]"), the
/// rest byte by byte. A strict weak order.
bool natural_less(const std::string& a, const std::string& b);

/// The lines one --exact record touches (include/schedhot/abi.h sh_exact_rec: counter word
/// `word` of probe `probe`'s slot, in the recording's layout, was incremented on cpu), with
/// whether the event writes each (a write if any of its accesses there writes), in LineKey
/// order. The accesses are the module's declarations of that counter (an element of a
/// counter array selects like line_accesses(): element, kEachElement, element_bits); a
/// record of a `minus` counter (idle_ticks, noop) stands for the base counter's event in
/// that case: the base counter's accesses without a minus apply, the others not. Fields are
/// mapped to lines as line_accesses() does (same code). Empty: a word no access uses, a
/// probe index or word out of range, or an unknown probe.
std::vector<std::pair<LineKey, bool>> event_lines(const Meta& meta, const CoherenceLayout& layout, int probe,
                                                  uint32_t word, int cpu);

/// The gap state's routes for the BPF programs (include/schedhot/abi.h sh_gap_route, issue
/// 29) and the lines they name: for every (probe, counter word) whose event touches modeled
/// lines, the targets event_lines() would map it to on any CPU (a fixed line, or a
/// cpumask word / an int per CPU), as (probe * SH_GAP_ROUTE_WORDS + word, route) pairs;
/// the line ids in the routes are indices + 1 into `lines`, which are this plan's line ids
/// (LineKey of each). A line that some event reaches through more targets than a route
/// holds (a scan of a cpumask over more than SH_GAP_TARGETS lines) is left out of every
/// route: no CPU keeps gap state for it, and it stays on independent arrivals. Empty when
/// the line size is not a power of two.
struct GapRoutes {
  std::vector<std::pair<uint32_t, sh_gap_route>> routes;
  std::vector<Meta::GapLine> lines;
};
GapRoutes gap_routes(const LinePlan& plan);

/// The layout a recording's lines are modeled on: its own (Meta::layout) or, when it has
/// none, assumed_layout() of its kernel release (probe/layout.h).
CoherenceLayout layout_of(const Meta& meta);

/// One line over a span of intervals: time-averaged access rates and modeled transfers.
struct LineSummary {
  LineKey key;
  std::string family, name;
  std::vector<std::string> fields, assumptions;
  double reads_per_s = 0, writes_per_s = 0;
  int readers = 0, writers = 0;  ///< CPUs that read / wrote the line in some interval of the span
  LineTraffic traffic;  ///< modeled transfers/s, per CPU (ascending) and in total
  /// Transfers/s by the probe whose access missed (index into Meta::probes): a CPU's
  /// misses shared out by its probes' share of its reads and writes of the line.
  std::vector<std::pair<int, double>> by_probe;
  /// Which estimate traffic is (estimate_name()): "gap model" (the probes' gap counts in
  /// every interval of the span that reached the line), "independent arrivals" (in none),
  /// "gap model, N% of the time" (time-weighted, in some).
  std::string estimate = kIndependentArrivals;
  static constexpr const char* kIndependentArrivals = "independent arrivals";
  static constexpr const char* kGapModel = "gap model";
};

/// The estimate of a figure modeled by the gap model for gap_s of its total_s seconds and
/// by independent arrivals for the rest: "gap model", "independent arrivals" (gap_s 0 or
/// total_s 0) or "gap model, N% of the time" (N in 1..99).
std::string estimate_name(double gap_s, double total_s);

/// A seed patch replayed on this run's accesses.
struct WhatIfResult {
  WhatIf what;
  bool applies = false;      ///< the kernel still has the field the patch removes
  std::string reason;        ///< when it does not apply: "this kernel has it (nohz.nr_cpus absent)"
  double before_xfers_per_s = 0, after_xfers_per_s = 0;  ///< the family's lines, summed
  double before_stall_ns_per_s = 0, after_stall_ns_per_s = 0;
  /// Which estimate before and after are (both the same one): "independent arrivals", or,
  /// when the family's before figure used the probes' gap counts, "gap model[, N% of the
  /// time]; after: independent arrivals x the before figure's gap/independent-arrivals
  /// ratio per interval" (the patched layout's lines have no gap counts).
  std::string estimate = LineSummary::kIndependentArrivals;
};

/// The model over a span: every line, the what-ifs, and the notes on the layout used.
struct CoherenceSummary {
  double seconds = 0;
  int line_bytes = 64;
  std::vector<LineSummary> lines;  ///< LineKey order
  std::vector<WhatIfResult> what_if;
  std::vector<std::string> notes;  ///< layout notes (what was read, what is assumed)
  /// Which estimate the span's figures are, as LineSummary::estimate, time-weighted over its
  /// intervals: an interval counts as "gap model" when its gap counts (Sample::gaps) modeled
  /// some line. Each line says its own.
  std::string estimate = LineSummary::kIndependentArrivals;
  /// Line accesses the probes' gap state could not keep (GapBatch::full, summed over the
  /// intervals whose gap batch covers exactly the interval; saturating): a CPU's table of
  /// SH_GAP_LINES lines was full, and its accesses to the lines left out are modeled from its
  /// rates. 0 without gap state.
  uint64_t gap_full = 0;
  /// Transfers/s missed by one CPU over every line (0 when it has none). O(1) once
  /// summary() filled cpu_totals.
  double cpu_xfers_per_s(int cpu) const;
  std::vector<double> cpu_totals;  ///< per CPU id: the same, filled by CoherenceAccumulator::summary()
};

/// Adds the model of consecutive intervals, each weighted by its length: the span's
/// figures are time averages of the per-interval model (which is not linear in the rates,
/// so this differs from the model of the span's average rates when rates change).
///
/// The model of a line in one interval: the gap model (model/gaps.h) when the interval's
/// later sample has gap counts (Sample::gaps) that cover exactly the interval (from_ns ==
/// the earlier sample's mono_ns) and some CPU has counts for the line (Meta::gap_lines);
/// a CPU that accessed the line (its counter rates) without counts (its table was full,
/// the event's route was not kept) is given the histograms of a Poisson stream of its
/// rates (poisson_gaps()). Else the independent-arrivals model (coherence_model()).
class CoherenceAccumulator {
 public:
  /// meta must outlive the accumulator. cost: the per-distance stall estimate.
  CoherenceAccumulator(const Meta& meta, XferCost cost = {});
  void add(const Interval& iv);
  CoherenceSummary summary() const;
  /// The model of iv alone (forgets what was added; the resolved plans are kept, so a view
  /// that models one interval at a time does not re-resolve them each time).
  CoherenceSummary of(const Interval& iv);
  const Meta& meta() const { return meta_; }
  const CoherenceLayout& layout() const { return layout_; }
  const XferCost& cost() const { return cost_; }

 private:
  /// One line over the intervals added: plan_'s line id indexes acc_.
  struct Acc {
    bool live = false;                 ///< some interval since the last reset reached it
    std::vector<const std::string*> fields, assumptions;  ///< into plan_'s resolved accesses
    std::vector<uint32_t> merged;      ///< resolved accesses whose strings are in, ascending
    double reads = 0, writes = 0;      ///< x seconds
    std::vector<CpuXfers> cpus;        ///< x seconds, ascending cpu
    std::vector<std::pair<int, double>> by_probe;   ///< x seconds, ascending probe
    std::vector<std::pair<uint32_t, uint8_t>> rw;   ///< CPUs that accessed it (1 read, 2 wrote), ascending
    double seconds = 0, gap_seconds = 0;  ///< intervals that reached it; of them, by the gap model
  };
  /// Meta::gap_lines -> plan_ line ids (-1: not a line of the plan), made on first use.
  void map_gap_lines();
  /// The gap model of lines_'s k-th line from the interval's counts into gap_traffic_[k];
  /// false (nothing written) when no CPU of the line has counts.
  bool gap_line(size_t k, double secs);
  /// Forgets what was added (keeps every buffer's capacity).
  void reset();
  const Meta& meta_;
  CoherenceLayout layout_;
  XferCost cost_;
  TopologyIndex topo_;
  LinePlan plan_;
  std::vector<LinePlan> what_if_plans_;  ///< per what_ifs()
  std::vector<char> what_if_applies_;    ///< per what_ifs(): the kernel still has the field
  double seconds_ = 0;
  std::vector<Acc> acc_;                 ///< per plan_ line id
  std::vector<uint32_t> live_;           ///< the ids of acc_ that are live
  // add()'s buffers: one interval's lines and their model, and a what-if's.
  LinePlan::Lines lines_;
  std::vector<LinePlan::Lines> what_if_lines_;  ///< per what_ifs()
  std::vector<LineTraffic> traffic_, what_if_traffic_;
  std::vector<std::pair<double, double>> what_if_;  // per what_ifs(): before, after transfers x s
  std::vector<std::pair<double, double>> what_if_stall_;
  // The gap model: gap_id_ per Meta::gap_lines index; per plan line id, the interval's
  // counts of it (cpu ascending) and the ids that have some; per lines_ entry, whether the
  // gap model gave its figure (then gap_traffic_[k], else traffic_[k]).
  bool gap_mapped_ = false;
  std::vector<int32_t> gap_id_;
  std::vector<std::vector<const GapCounts*>> gap_counts_;
  std::vector<uint32_t> gap_touched_;
  std::vector<char> use_gap_;
  std::vector<LineTraffic> gap_traffic_;
  std::vector<CpuGaps> cpu_gaps_;
  double gap_seconds_ = 0;                ///< intervals whose gap counts modeled some line
  uint64_t gap_full_ = 0;                 ///< CoherenceSummary::gap_full so far
  double traffic_seconds_ = 0;  ///< seconds of the intervals where some line had accesses
  std::vector<double> what_if_gap_s_;     ///< per what_ifs(): intervals whose before used gap counts
};

/// The gap histograms of a Poisson stream of reads_per_s and writes_per_s over seconds: its
/// reads r x seconds and writes w x seconds spread over the buckets by the exponential CDF
/// of the gap since the CPU's previous access (rate r + w) and previous write (rate w) at
/// gap_lower / gap_upper (a rate of 0: every count in the last bucket). What a CPU without
/// gap counts is modeled as next to CPUs with them.
CpuGaps poisson_gaps(uint32_t cpu, double reads_per_s, double writes_per_s, double seconds);


/// What ExactAccumulator::add() replays, one line access at a time (set_observer()): how
/// another analysis (the caught tails' transfers, analysis/tails_exact.h) reads the same
/// replay instead of running its own.
class ExactObserver {
 public:
  virtual ~ExactObserver() = default;
  /// One record's access to one line as it was fed to the line's ExactCoherence, in time
  /// order (ts_ns never decreases across calls: records out of order are skipped before):
  /// ts_ns CLOCK_MONOTONIC, line the accumulator's dense id (ExactAccumulator::line_key()),
  /// write as event_lines() says, transfer whether the ownership machine counted it one
  /// (the CPU missed because another CPU had the line; ExactCoherence::feed()).
  virtual void access(uint64_t ts_ns, uint32_t cpu, uint32_t line, bool write, bool transfer) = 0;
};

/// --exact: the ownership machine (ExactCoherence) of every line the window's records
/// touch (event_lines() on the recording's layout, layout_of()), fed in time order.
class ExactAccumulator {
 public:
  /// meta must outlive the accumulator. what_ifs: the records are also replayed, exactly
  /// and by the gap model, on the layout of every seed patch the kernel lacks (what_if());
  /// each replay costs as much as the accumulator itself, so only report asks for them.
  explicit ExactAccumulator(const Meta& meta, bool what_ifs = false);
  /// The same on `layout` instead of the recording's, without what-ifs (what a what-if
  /// replays on).
  ExactAccumulator(const Meta& meta, const CoherenceLayout& layout);
  ~ExactAccumulator();
  const Meta& meta() const { return meta_; }
  /// One interval's records (in time order, after the previous batch's) and its length.
  /// A record out of time order or naming a CPU out of range is skipped (counted in skipped()).
  /// seconds <= 0: the records only move the state (owners, last access times), as the
  /// records before a window do; the gap figures then count from the next add().
  void add(double seconds, const ExactBatch& b);
  /// Forgets the figures (transfers, gap figures, seconds, records, lost, skipped,
  /// by_word) but keeps the state the records so far left: each line's owners and each
  /// CPU's last access and write. The next add()s are counted as they follow them.
  void restart();
  /// Forgets everything, state too (the resolved plan is kept).
  void clear();
  /// The figures of one interval alone, as replay's lines view and export show them: its
  /// records b (the interval's, Sample::exact of its later sample) over seconds, run after
  /// `before` (the previous interval's, Sample::exact of its earlier sample; may be null),
  /// which set the state only (owners, last access times). The same figure for an
  /// interval whatever window or view shows it. Replaces what was added.
  void interval(const ExactBatch* before, double seconds, const ExactBatch& b);
  /// Some interval had a batch (the recording has EXACT frames in the window).
  bool any() const { return batches_ > 0; }
  uint64_t records() const { return records_; }
  uint64_t lost() const { return lost_; }
  uint64_t skipped() const { return skipped_; }
  double seconds() const { return seconds_; }
  /// The line's exact transfers over seconds(); nullopt when no record touched it.
  std::optional<LineTraffic> traffic(const LineKey& k) const;
  /// Records per (probe index, slot word).
  const std::map<std::pair<int, uint32_t>, uint64_t>& by_word() const { return by_word_; }
  /// The gap model (model/gaps.h) of the line over seconds(), per CPU (ascending) and in
  /// total: each interval's records
  /// turned into the per-CPU gap histograms the probes would keep (GapTracker), modeled per
  /// interval and time-averaged like the independent-arrivals figure; nullopt when no record
  /// touched the line. What the default figure would be with per-CPU gap state, checked
  /// here against the exact count of the same accesses.
  std::optional<LineTraffic> gap_traffic(const LineKey& k) const;
  /// A seed patch replayed on the records: the family's transfers/s summed over its lines,
  /// exact and by the gap model, on this kernel's layout (before) and the patched one
  /// (after). nullopt when the what-if does not apply (this kernel lacks the field).
  struct WhatIfCounts {
    double before_exact = 0, after_exact = 0, before_gap = 0, after_gap = 0;
  };
  std::optional<WhatIfCounts> what_if(const std::string& id) const;
  /// Calls obs (null: none; it must outlive its use) for every line access add() replays
  /// from now on (not the what-if replays'). Costs one virtual call per access.
  void set_observer(ExactObserver* obs) { observer_ = obs; }
  /// The line of an ExactObserver::access() id (ids are dense from 0, in first-access order,
  /// kept across restart() and clear()); its shown name ("cpupri.cpu_to_pri line 0", as the
  /// report's cachelines name it). Throws std::out_of_range for an id never handed out.
  const LineKey& line_key(uint32_t id) const { return gap_keys_.at(id); }
  std::string line_name(uint32_t id) const;

 private:
  const Meta& meta_;
  CoherenceLayout layout_;
  TopologyIndex topo_;
  LinePlan plan_;
  std::map<LineKey, ExactCoherence> lines_;
  std::map<uint64_t, std::vector<std::pair<LineKey, bool>>> cache_;  // (probe, word, cpu) -> event_lines
  std::map<std::pair<int, uint32_t>, uint64_t> by_word_;
  GapTracker gaps_;
  std::map<LineKey, uint32_t> gap_ids_;
  std::vector<LineKey> gap_keys_;
  std::map<LineKey, LineTraffic> gap_x_;  ///< gap model transfers x seconds, summed over intervals
  /// The family's exact and gap transfers/s over seconds().
  std::pair<double, double> family_totals(const std::string& family) const;
  /// Per what_ifs() entry that applies: the records replayed on its layout.
  std::vector<std::pair<std::string, std::unique_ptr<ExactAccumulator>>> what_ifs_;
  uint64_t records_ = 0, lost_ = 0, skipped_ = 0, batches_ = 0, last_ts_ = 0;
  double seconds_ = 0;
  ExactObserver* observer_ = nullptr;
};

}  // namespace schedhot
