// The payload codecs of a recording's per-sample frames (layouts in recording.h): SAMPLE
// (slot words as deltas), EXACT (--exact records), GAPS (gap counts), CATCH (--catch
// events with their stacks) and ONLINE (the online CPUs), each encoder next to its decoder. Decoders never trust a count or index
// from the file: each is checked against the payload's size and META before use, and a
// problem is a one-line `why` (the reader's damage reason). Internal to src/store.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sample/sample.h"

namespace schedhot {

/// Slot words of one whole sample: CPUs x the slot words of every probe of m.
uint64_t state_words(const Meta& m);

/// The damage reason of a sample at mono_ns read after one at prev_ns >= mono_ns.
std::string backwards_time(uint64_t mono_ns, uint64_t prev_ns);

// ---- SAMPLE -----------------------------------------------------------------------

/// s's SAMPLE payload (uncompressed): a keyframe when prev is null (deltas against zero),
/// else deltas against *prev (per probe, where prev has it present with the same shape).
/// Probes are those of meta; a probe s does not have present is left out. Throws
/// std::runtime_error (one line) when a present probe's words are not ncpus x slot words.
std::string encode_sample(const Sample& s, const Meta& meta, const Sample* prev);

/// Applies the SAMPLE payload raw to state in place: a keyframe replaces it, a delta adds
/// to it. valid: in, state holds the sample before this one (a delta without it is
/// refused; a keyframe rewrites, in place, only the CPUs whose words differ from whatever
/// state holds, and keeps what changed as a SlotDelta as a delta does); out, true once this sample decoded completely, false from the moment state
/// was changed (a sample that fails part-way leaves state unusable). Sets state's seq,
/// mono_ns, wall_ns and probes (not online, exact or gaps); nonzero_cpu (resized to
/// meta.ncpus; cleared on a keyframe) gets 1 for every CPU with a non-zero word. false
/// with why when the payload is malformed.
bool decode_sample(const std::string& raw, bool keyframe, const Meta& meta, Sample& state, bool& valid,
                   std::vector<char>& nonzero_cpu, std::string& why);

// ---- EXACT (1.3) ------------------------------------------------------------------

/// The EXACT payload of batch (uncompressed), its record times as gaps after since_ns (the
/// previous sample's mono_ns, 0 for none); a record earlier than the one before it is
/// stored at that earlier record's time.
std::string encode_exact(const ExactBatch& batch, uint64_t since_ns);

/// Decodes an EXACT payload (uncompressed) of the frame at mono_ns whose times count from
/// since_ns, for a recording of ncpus CPUs. false with why when malformed (a record after
/// mono_ns, a CPU >= ncpus, a probe or word over 0xffff, truncated or trailing bytes).
bool decode_exact(const std::string& raw, uint64_t since_ns, uint64_t mono_ns, uint32_t ncpus, ExactBatch& out,
                  std::string& why);

// ---- GAPS (1.4) -------------------------------------------------------------------

/// s.gaps's GAPS payload (uncompressed; s.gaps must be set). Throws std::runtime_error (one
/// line, nothing encoded) when the batch breaks the frame's rules: from_ns after s.mono_ns,
/// a CPU or line meta does not have, entries out of (cpu, line) order, more than
/// kMaxGapEntriesPerCpu entries of one CPU.
std::string encode_gaps(const Sample& s, const Meta& meta);

/// Decodes a GAPS payload (uncompressed) of the frame at mono_ns for meta. false with why
/// when it breaks the frame's rules (recording.h) or is truncated.
bool decode_gaps(const std::string& raw, uint64_t mono_ns, const Meta& meta, GapBatch& out, std::string& why);

// ---- CATCH (1.5) ------------------------------------------------------------------

/// Whether s may be a caught event's comm: at most kMaxCatchCommBytes bytes of printable
/// ASCII (0x20..0x7e).
bool valid_catch_comm(const std::string& s);
/// Whether s may be a stack frame's symbol: at most kMaxCatchSymbolBytes bytes of
/// printable ASCII ("" included: no symbol covered the address).
bool valid_catch_symbol(const std::string& s);

/// The CATCH payload of batch (uncompressed), its event times as gaps after since_ns (the
/// previous sample's mono_ns, 0 for none), the stacks' symbols in a table of the frame's
/// unique strings. Throws std::runtime_error (one line, nothing encoded) when the batch
/// breaks the frame's rules (recording.h) in a way it can tell: an event at or before
/// since_ns or before the event before it, a stack index past the stacks, a stack of more
/// than SH_CATCH_FRAMES frames, a symbol or comm that is too long or not printable. (The
/// CPU, probe and "not after its sample" rules need META and the sample: the writer
/// checks them.)
std::string encode_caught(const CatchBatch& batch, uint64_t since_ns);

/// Decodes a CATCH payload (uncompressed) of the frame at mono_ns whose times count from
/// since_ns, for a recording of ncpus CPUs and nprobes probes. false with why (one line)
/// when it breaks the frame's rules (recording.h) or is truncated; every count is bounded
/// by the payload's size before anything is allocated.
bool decode_caught(const std::string& raw, uint64_t since_ns, uint64_t mono_ns, uint32_t ncpus, size_t nprobes,
                   CatchBatch& out, std::string& why);

// ---- STEAL (1.6) ------------------------------------------------------------------

/// The STEAL payload (uncompressed) of batch's events (recording.h), "" when none of them
/// has SH_CATCH_F_STEAL (then no STEAL frame is written). Throws std::runtime_error when an
/// event's steal_ns is over its dur_ns.
std::string encode_steal(const CatchBatch& batch);

/// Applies a STEAL payload (uncompressed) to the events of the CATCH frame it follows:
/// steal_ns and SH_CATCH_F_STEAL of each event it says was measured. false with why (one
/// line, b unchanged) when it breaks the frame's rules or is truncated.
bool decode_steal(const std::string& raw, CatchBatch& b, std::string& why);

/// Where a STEAL frame stands, from the frame headers alone: catch_ns is the mono_ns of
/// the CATCH frame read since the last SAMPLE frame (none: no CATCH frame there),
/// steal_seen says a STEAL frame already followed it. "" when a STEAL frame at mono_ns is
/// in its place, else the one line of damage (`bad steal frame: ...`) that the reader's
/// decoding and its frame scan (check_all_frames) both give, so every view names the same
/// frame and words.
std::string steal_frame_misplaced(std::optional<uint64_t> catch_ns, bool steal_seen, uint64_t mono_ns);

// ---- ONLINE (1.2) -----------------------------------------------------------------

/// The ONLINE bitmap of the CPUs online (those < ncpus; others are left out).
std::string encode_online(const std::vector<int>& online, uint32_t ncpus);

/// The CPUs an ONLINE payload names, ascending, appended to cpus. false with why when it
/// is not online_bitmap_bytes(ncpus) long or names a CPU >= ncpus.
bool decode_online(const std::string& payload, uint32_t ncpus, std::vector<int>& cpus, std::string& why);

}  // namespace schedhot
