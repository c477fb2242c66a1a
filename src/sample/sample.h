// Samples: raw cumulative per-CPU slot words of every probe at one instant, plus the
// metadata that gives them meaning. Live sampling and recordings produce the same
// Sample; every view computes from two of them (design: one pipeline, two sources).
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "probe/catalog.h"
#include "probe/layout.h"
#include "probe/records.h"
#include "probe/slot_words.h"
#include "probe/status.h"
#include "sys/host.h"

namespace schedhot {

/// One probe's slots at one instant: ncpus * slot.slot_words u64 words, CPU-major, in
/// copy-on-write blocks (SlotWords): a copy of a sample shares them, and two samples
/// share the blocks that did not change between them. Private words are zero. present
/// is false for a probe that is not attached (words then empty).
struct ProbeSample {
  bool present = false;
  SlotWords words;
};

/// All probes at one instant.
struct Sample {
  uint32_t seq = 0;       ///< 0 for the baseline taken right after attach
  uint64_t mono_ns = 0;   ///< CLOCK_MONOTONIC, ns
  uint64_t wall_ns = 0;   ///< CLOCK_REALTIME, ns since the epoch
  std::vector<ProbeSample> probes;  ///< indexed like Meta::probes
  /// CPUs online at this instant (/sys/devices/system/cpu/online), ascending. Empty: not
  /// known (a hand-made sample), and every CPU counts as online. A CPU's slot words keep
  /// their values while it is offline (BPF per-CPU maps survive hotplug), so an interval
  /// measures a CPU that was online at either end (Interval::online).
  std::vector<int> online;
  /// --exact: the records with ts_ns in (previous sample's mono_ns, mono_ns], in time order.
  /// nullopt when the run was not recorded with --exact (or for the baseline).
  std::optional<ExactBatch> exact;
  /// The probes' gap counts over (gaps->from_ns, mono_ns]; nullopt when the run kept no
  /// gap state (without --gap-state, a recording made before it existed) or for the baseline.
  std::optional<GapBatch> gaps;
  /// --catch: the events caught in (previous sample's mono_ns, mono_ns]; nullopt when the
  /// run armed no rule (or for the baseline).
  std::optional<CatchBatch> caught;
};

/// What a probe was in the recording (or live run): its slot fields and attach status.
struct ProbeMeta {
  std::string name;
  SlotFields slot;  ///< its per-CPU BPF slot's fields
  ProbeStatus status;
  std::vector<std::string> labels;  ///< names of counter_array elements where meaningful (bcast sites)
};

/// Metadata of a run: host, probes, timing. Stored as JSON in a recording's META frame.
struct Meta {
  std::string tool_version;
  std::string command;          ///< command line that made it
  HostInfo host;
  uint32_t ncpus = 0;           ///< slots per probe (possible CPUs)
  uint64_t start_wall_ns = 0;
  uint64_t start_mono_ns = 0;
  uint64_t interval_ns = 0;
  uint32_t hist_sub_bits = SH_HIST_SUB_BITS;
  uint32_t hist_max_msb = SH_HIST_MAX_MSB;
  std::vector<ProbeMeta> probes;
  /// The traced kernel's hot-line layout (probe/layout.h), read at attach; absent in
  /// recordings made before it was recorded (format 1.2 files of schedhot <= 0.1.0).
  std::optional<CoherenceLayout> layout;
  /// The lines the probes' gap state names (GapCounts::line indexes this; the BPF entries
  /// hold index + 1): the object and line of each, as model/lines.h LineKey. Empty when the
  /// run kept no gap state.
  struct GapLine {
    std::string object;
    int64_t line = 0;
    bool operator==(const GapLine&) const = default;
  };
  std::vector<GapLine> gap_lines;
  /// The gap state's sampling target (AttachOptions::gap_samples_per_s, abi.h "Sampling"):
  /// > 0, the GAPS counts are estimates of every gap from a sample (scale_gap_counts(),
  /// applied as they are taken: the model reads them as they are); 0 (recordings before
  /// it, or every event noted): the counts are every gap.
  uint32_t gap_samples_per_s = 0;
  static constexpr size_t kMaxGapLines = 1u << 20;  ///< what a reader accepts
  /// --catch rules as armed at the start (probe/records.h CatchRule), at most one per
  /// probe; empty: none. A probe's slot fields name its catch counters (caught,
  /// catch_rate_drops, catch_full_drops) only when it has a rule (apply_catch_rules).
  std::vector<CatchRule> catch_rules;
  /// The rule of probe `name`, or null.
  const CatchRule* catch_rule(std::string_view name) const;

  /// Index of a probe by name in probes, or -1.
  int probe_index(std::string_view name) const;
};

/// Why probe p, though attached, cannot see its events here; "" when it can. bcast_wait:
/// a host whose spinlocks emit no contention events (virt_spin_lock), or
/// tick_broadcast_lock's address never learned (its contentions cannot be told from other
/// locks'). Report, export and the TUI show such a probe's numbers as not measured.
std::string blind_reason(const Meta& meta, int p);

/// Meta for this build's catalog with the given statuses (by catalog order), no catch
/// rule (apply_catch_rules adds them).
Meta make_meta(const HostInfo& host, uint32_t ncpus, const std::vector<ProbeStatus>& statuses);

/// Sets m.catch_rules: the catch counters (catch_field()) are named in the slot fields of
/// the probes with a rule (as the catalog has them) and of no other (make_meta names
/// none): a run that armed none records what it always did.
void apply_catch_rules(Meta& m, std::vector<CatchRule> rules);
/// Whether a slot field is one of the --catch counters (abi.h struct sh_catch).
bool catch_field(std::string_view name);

/// The heap bytes a Sample holds, about (its vectors' capacities and strings: probe words,
/// online CPUs, --exact records, gap counts, caught events and their stacks), for memory
/// caps (the flight recorder's --flight-mem). O(probes + stacks' frames). Probe words
/// count in full (8 bytes each), blocks shared with other samples too: an upper bound of
/// what dropping the sample frees.
size_t sample_bytes(const Sample& s);

/// Probe p's histogram `field` in sample s summed over every CPU: SH_HIST_BUCKETS counts,
/// cumulative since attach (the running histogram a percentile --catch rule is armed from:
/// live/session.cpp re-arms from it after each sample, analysis/tails checks against it).
/// Empty when p is not present in s or has no such histogram field.
std::vector<uint64_t> summed_histogram(const Meta& meta, const Sample& s, int p, const std::string& field);

/// Gives s's hollow probe words (SlotWords::hollow) back from later, a sample whose state
/// is s's or one step after it (SlotWords::refill; a probe later does not list keeps its
/// words there, not present): false, and s unchanged, when a hollow probe of s cannot be
/// (later is further on).
bool refill_hollow(Sample& s, const Sample& later);

/// An empty Sample shaped for meta (present from each probe's status).
Sample make_sample(const Meta& meta);
/// make_sample(meta) in s's buffers, for a loop that takes a sample each interval: the
/// probes' words of the right shape are kept as they are (not zeroed), so the caller
/// must write every word that differs (SlotReader::read does); others become zeros (shared
/// zero blocks: no words allocated).
void reshape_sample(const Meta& meta, Sample& s);


void to_json(nlohmann::json& j, const Meta& m);
/// Throws std::runtime_error on a malformed or inconsistent document (never trusts sizes);
/// its message says what is wrong, without a "bad metadata" prefix (callers add context).
void from_json(const nlohmann::json& j, Meta& m);

/// Where samples come from: a live sampler, a recording, or a window over one
/// (store/window.h). Views read only this: the one cursor of every consumer.
class SampleSource {
 public:
  virtual ~SampleSource() = default;
  /// The run's metadata, the one copy: status changes read so far are applied to it.
  virtual const Meta& meta() const = 0;
  /// The next sample; false at the end (recording) or when stopped (live).
  virtual bool next(Sample& out) = 0;
  /// Makes the next next() return sample number i (0-based, in the source). false when
  /// the source cannot seek (live) or there is no such sample.
  virtual bool seek_index(size_t i) {
    (void)i;
    return false;
  }
  /// Makes the next next() return the first sample with mono_ns >= t (CLOCK_MONOTONIC
  /// ns). false when the source cannot seek or there is none.
  virtual bool seek_time(uint64_t mono_ns) {
    (void)mono_ns;
    return false;
  }
  /// Indices (into meta().probes) of the probes whose status changed since the last
  /// call, in order; meta() already shows the new statuses. The one way status changes
  /// arrive, live or recorded.
  virtual std::vector<int> take_status_changes() { return {}; }
  /// Whether the next next() makes its sample from the state s holds, by what changed
  /// (SlotWords::delta_from holds for each probe present in both): a consumer may then let
  /// go of s's words (SlotWords::hollow) and the source writes its state in place
  /// (IntervalCursorOptions::one_state). false by default (a live source copies).
  virtual bool continues(const Sample& s) const {
    (void)s;
    return false;
  }
  /// After a next() that returned false: gives s, which continues() named, its words back
  /// when the source still holds that state (or can undo what it applied since). false
  /// when it cannot; s is then unchanged.
  virtual bool restore(Sample& s) {
    (void)s;
    return false;
  }
};

}  // namespace schedhot
