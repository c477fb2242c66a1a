// The probe table: for each probe, what it targets, how it may attach (candidate
// symbols, inline hosts, tracepoint programs, proxy), and the fields of its per-CPU
// slot (include/schedhot/abi.h) as named fields. Each entry is a probe module's spec
// (src/probe/module.h, src/probe/modules/*.cpp); everything that needs to know "what
// probes exist" reads this table or the modules.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "schedhot/abi.h"

namespace schedhot {

/// How a probe is attached. tracepoint covers tp_btf and raw_tp programs.
enum class Backend { none, fentry, kprobe, tracepoint };
const char* to_string(Backend b);

/// Kinds of words in a per-CPU slot.
enum class FieldKind {
  counter,        ///< one cumulative u64
  counter_array,  ///< nwords cumulative u64s
  hist,           ///< struct sh_hist: sum_ns, max_ns, SH_HIST_BUCKETS buckets
  priv,           ///< BPF-private state; zeroed by the sampler, never recorded
};
const char* to_string(FieldKind k);

/// A named run of u64 words inside a slot.
struct Field {
  std::string name;
  uint32_t offset = 0;  ///< in u64 words from the slot start
  uint32_t nwords = 1;
  FieldKind kind = FieldKind::counter;
  std::string doc;
  /// A counter the program bumps after the rest of an event's words (the --catch counts,
  /// after the histogram's add): the sampler reads it before a CPU's slot and again with
  /// it, and copies the slot again when it moved, so a sample never holds an event in
  /// this counter and not in the words written before it (copy_slots).
  bool witness = false;
};

/// The fields of one probe's per-CPU BPF slot (bpf/*.bpf.c's struct sh_*_slot): its size
/// in 8-byte words and each counter, array and histogram by word offset.
struct SlotFields {
  uint32_t slot_words = 0;  ///< sizeof(slot) / 8, a multiple of SH_SLOT_ALIGN / 8
  std::vector<Field> fields;
  const Field* find(std::string_view name) const;
};

/// A BPF program of a tracepoint-driven probe and the tracepoint it needs (the program
/// itself is the module's: ProbeModule::program(skel, tracepoint, tracepoint, index)).
struct TpProgram {
  std::string tracepoint;  ///< tracepoint name (as in btf_trace_<name>)
  bool raw = false;        ///< raw_tp (untyped args) rather than tp_btf
  std::string since;       ///< first kernel with it, for messages ("6.5")
};

/// A tracepoint stand-in for a function that fentry and kprobes cannot reach.
struct ProxySpec {
  std::vector<TpProgram> programs;
  std::string label;  ///< what it counts, shown as the probe's backend
  std::string error;  ///< its known error against the real function
  std::vector<std::string> unseen;  ///< counters it cannot observe: reported null/"-", never 0
};

enum class ProbeKind {
  function,    ///< entry (and exit if timed) of one function
  sites,       ///< entry of each of several functions (kBcastSites)
  tracepoint,  ///< tracepoint programs only
};

/// What a per-CPU table column of a probe shows.
enum class ColumnKind {
  rate,  ///< events/s of a counter field
  p99,   ///< p99 of a histogram field, ns
};

/// A column the probe contributes to the per-CPU table (report's table and JSON rows,
/// top's table), as data: the view resolves field once per interval and evaluates it.
struct TableColumn {
  std::string header;  ///< table header, "nohz_exit/s"; also the JSON key of rate columns
  std::string field;   ///< counter field (rate) or histogram field (p99) of the probe's slot
  ColumnKind kind = ColumnKind::rate;
  std::string key;     ///< JSON key when it is not header ("cpupri_set_p99_ns"), else ""
};

/// One kind of access to a kernel field that every counted event of a probe makes: the
/// coherence model's input (src/model/lines.h). The events of an interval are the delta of
/// `counter` (minus that of `minus`), per CPU; for a counter_array, `element` picks one
/// element, kEachElement gives each element its own events with "#" in `field` replaced by
/// the element's index (cpupri vector i), and `element_bits` sums the elements whose index
/// has any of those bits (ILB kicks with BALANCE). "[cpu]" in `field` is the event's CPU
/// (its bit of a cpumask, its cpu_to_pri[] entry). Fields the traced kernel does not have
/// (nohz.nr_cpus from 7.0) are dropped when lines are built from its layout. One event
/// touches a line once (as a write if any of its accesses there writes): accesses of one
/// counter selection on a line are one access, and the events of all selections sharing a
/// `bound` are at most that counter's delta (nohz_enter's calls bound its first calls).
struct FieldAccess {
  static constexpr int kEachElement = -2;
  std::string counter;       ///< slot field whose delta counts the events
  std::string minus;         ///< subtracted counter ("" none): busy ticks = calls - idle_ticks
  int element = -1;          ///< -1 the whole field (sum), >= 0 one element, kEachElement
  uint32_t element_bits = 0; ///< != 0: the elements whose index & element_bits != 0
  std::string field;         ///< "nohz.nr_cpus", "cpupri.pri_to_cpu[#].count", "cpupri.cpu_to_pri[cpu]"
  bool write = false;        ///< store or atomic read-modify-write; else a load
  std::string source;        ///< the kernel code that makes it ("fair.c nohz_balance_exit_idle(): atomic_dec")
  std::string assumption;    ///< "" when the counter counts exactly these accesses, else what is assumed
  std::string bound;         ///< counter bounding these events per line ("" the probe's primary)
};

/// How fleet's text table shows a probe (its JSON and CSV have every probe).
enum class FleetShow {
  none,      ///< not in the text table
  rate,      ///< its rate column
  rate_p99,  ///< its rate and p99 columns
};

/// One probe of the catalog.
struct ProbeSpec {
  sh_probe_id id;
  std::string name;                        ///< "nohz_exit"
  std::string target;                      ///< what it observes, "nohz_balance_exit_idle"
  std::string what;                        ///< one line: what is counted per CPU
  ProbeKind kind = ProbeKind::function;
  std::vector<std::string> symbols;        ///< function names to try, in order
  std::vector<std::string> inline_hosts;   ///< callers to use when every symbol is inlined
  bool timed = false;                      ///< has exit programs (fexit/kretprobe)
  std::vector<TpProgram> tp_programs;      ///< ProbeKind::tracepoint
  std::optional<ProxySpec> proxy;
  SlotFields slot;                         ///< the per-CPU BPF slot's fields
  std::string primary;                     ///< counter the rate is computed from
  std::vector<std::string> secondary;      ///< other counters shown with rates
  std::string hist;                        ///< histogram field name, "" if none
  /// What the histogram measures, in words: "runtime" (entry to exit, the default),
  /// "wait time" (bcast_wait), "residency" (idle); diff's commit-message blocks say it.
  std::string hist_what = "runtime";
  /// The histogram's metric name part (serve: schedhot_<probe>_<this>_seconds); "" the
  /// field name ("lat"). idle's is "residency": its histogram holds no latency.
  std::string hist_metric;
  bool default_hist = false;               ///< top shows this probe's histogram first
  std::vector<TableColumn> columns;        ///< its per-CPU table columns, in display order
  /// Where its columns stand in the per-CPU table: by rank, then sh_probe_id (idle's -1
  /// puts its column, the default sort, first).
  int table_rank = 0;
  /// The report's details list every element of its counter arrays, zeros too (bcast_lock:
  /// each site, called or not); else only the non-zero ones.
  bool details_list_zeros = false;
  std::vector<FieldAccess> accesses;       ///< the modeled kernel fields each event touches
  FleetShow fleet = FleetShow::none;       ///< its columns in fleet's text table (catalog order)
  /// The lock whose contention its histogram times ("tick_broadcast_lock" for bcast_wait):
  /// fleet adds the wait (histogram mean x count per second) to a host's severity, flags it
  /// as contended, and reports it as "<probe>_ns_per_s". "" none.
  std::string wait_lock;
};

/// Functions that take tick_broadcast_lock (kernel/time/tick-broadcast.c), the order
/// of struct sh_bcast_lock_slot.calls[]. Colder sites (install, update_freq,
/// suspend/resume) are left out.
extern const std::array<const char*, SH_BCAST_SITES> kBcastSites;

/// The catalog (every module's spec), indexed by sh_probe_id.
const std::vector<ProbeSpec>& probe_catalog();
/// The probe whose histogram top shows first (ProbeSpec::default_hist: cpupri_set), "" if none.
std::string_view default_hist_probe();
/// A probe by name, or nullptr.
const ProbeSpec* find_probe(std::string_view name);
/// Whether a counter of probe `name` is observed by the backend in use: false for the
/// counters a proxy cannot see (ProxySpec::unseen, e.g. cpupri_set's noop, or the timing
/// stack's nested/orphan_exits) when `proxy` is true; true otherwise.
bool counter_observed(std::string_view name, bool proxy, std::string_view field);

}  // namespace schedhot
