// --catch's caught events (include/schedhot/abi.h struct sh_catch_rec) as user space holds
// them: read from the per-CPU perf buffers of sh_catch_events (probe/perf_drain.h), their
// kernel stacks symbolized with the host's kallsyms as they are handed out per sample
// interval (probe/records.h CatchBatch: unique stacks, events in time order).
#pragma once
#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

#include "probe/kallsyms.h"
#include "probe/perf_drain.h"
#include "probe/records.h"

namespace schedhot {

/// Where caught events come from (the recording loop takes them at every sample).
class CatchSource {
 public:
  virtual ~CatchSource() = default;
  /// The events with ts_ns <= upto_ns in time order, their stacks, and the records the
  /// buffers lost since the last take; later events stay for the next call. An event
  /// that reached the buffer after the take its time belongs to (its program was between
  /// its clock read and its output then) is given with the earliest time of this
  /// interval (the previous upto_ns + 1): every event lies in (previous upto_ns, upto_ns].
  virtual CatchBatch take(uint64_t upto_ns) = 0;
};

/// Symbolizes kernel stacks (innermost first) with syms: "function" and the offset into
/// it, "" for an address no core-kernel text symbol covers (a module, or hidden kallsyms);
/// the address itself is never kept. Caches per address.
class StackSymbolizer {
 public:
  explicit StackSymbolizer(const SymbolTable* syms);
  std::vector<StackFrame> frames(const std::vector<uint64_t>& ips);

 private:
  const SymbolTable* syms_;
  uint64_t text_end_ = 0;  ///< _etext: the core kernel's text ends there (0: not known)
  std::unordered_map<uint64_t, StackFrame> cache_;
};

/// Drops the innermost frames of a caught event's stack that are the tracing machinery, not
/// the traced code: the BPF program itself (no symbol), bpf_trace_run*, __traceiter_*,
/// __bpf_trace_*, the BPF trampoline, kprobe and kretprobe/rethook handlers and perf's
/// tracepoint glue, up to the first other frame (perf and bpftrace show stacks so too).
void trim_tracing_frames(std::vector<StackFrame>& frames);

/// Turns raw records into a CatchBatch: events in time order, each stack once.
/// recs: per CPU in arrival order (consumed); ips: each record's stack addresses.
struct RawCaught {
  CaughtEvent ev;
  std::vector<uint64_t> ips;
};
CatchBatch make_catch_batch(std::vector<RawCaught>& recs, StackSymbolizer& sym);

/// A raw sh_catch_rec (its bytes as the BPF program sent them) to a RawCaught; false when
/// it is too short. The comm's bytes outside printable ASCII become '?' (a task names
/// itself: prctl(PR_SET_NAME) takes any bytes).
bool parse_catch_record(const void* data, uint32_t size, RawCaught& out);

class CatchReader : public CatchSource, public PerfDrain {
 public:
  /// map_fd: sh_catch_events (one entry per possible CPU); syms: the host's kallsyms for
  /// the stacks (may be null: every frame unknown); pages: per-CPU buffer pages (0:
  /// default_pages(ncpus)); fails_fd: sh_catch_fails (the per-CPU count of refused
  /// outputs, which makes the reader reopen that CPU's buffer: PerfDrain), -1 for none.
  /// Throws std::runtime_error (one line) when the buffers cannot be opened.
  CatchReader(int map_fd, uint32_t ncpus, const SymbolTable* syms, size_t pages = 0, int fails_fd = -1);
  ~CatchReader() override;
  CatchBatch take(uint64_t upto_ns) override;
  /// Most events one take() hands out (the rest of its interval count as lost): a CATCH
  /// frame of them decodes well under the reader's kMaxCatchDecodedBytes. And most events
  /// held between takes (more are dropped and counted as lost).
  static constexpr size_t kMaxPerTake = 1'000'000, kMaxPending = 2'000'000;
  /// 16 MiB of buffers over all CPUs, 1 to 64 pages each: caught events are rate-limited
  /// per CPU (the rule's per_sec), 280 bytes each.
  static size_t default_pages(uint32_t ncpus);

 private:
  void on_record(int cpu, const void* data, uint32_t size) override;
  void on_lost(int cpu, uint64_t cnt) override;
  StackSymbolizer sym_;
  std::vector<RawCaught> pending_;  ///< arrival order
  uint64_t taken_upto_ = 0;         ///< the last take()'s upto_ns
  uint64_t lost_ = 0;
};

}  // namespace schedhot
