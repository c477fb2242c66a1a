// Learning tick_broadcast_lock's address when neither kallsyms (no CONFIG_KALLSYMS_ALL)
// nor a System.map gives it: the BPF side sends the stack of lock:contention_begin
// events through a per-CPU perf buffer; a lock whose first frame outside the locking
// and tracing code is a tick-broadcast function is tick_broadcast_lock. (perf lock
// contention names locks by this same "first non-lock frame" rule.)
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>

#include "probe/kallsyms.h"

struct schedhot_bpf;
struct perf_buffer;

namespace schedhot {

/// The first frame of a contention stack that is not locking, tracing or BPF code,
/// as "name+0xoff"; nullopt when every frame is such code or unknown. name_out gets
/// the bare function name.
std::optional<std::string> first_non_lock_frame(const SymbolTable& syms, std::span<const uint64_t> ips,
                                                std::string* name_out = nullptr);
/// True for the functions of kernel/time/tick-broadcast.c that take tick_broadcast_lock.
bool is_tick_broadcast_function(const std::string& name);

/// Result of learning.
struct LearnedLock {
  uint64_t addr = 0;
  int votes = 0;       ///< stacks that agreed
  std::string frame;   ///< the first non-lock frame of the last one
};

/// Reads the learning perf buffer of a loaded bcast_wait skeleton.
class LockLearner {
 public:
  /// skel must stay loaded while this exists.
  LockLearner(schedhot_bpf* skel, const SymbolTable& syms);
  ~LockLearner();
  bool ok() const { return pb_ != nullptr; }
  const std::string& error() const { return error_; }
  /// Consumes events for up to timeout_ms.
  void poll(int timeout_ms);
  /// The address once two stacks agree, then nullopt again.
  std::optional<LearnedLock> take_result();
  /// Feeds one stack (also used by tests).
  void feed(uint64_t lock_addr, std::span<const uint64_t> ips);

 private:
  const SymbolTable& syms_;
  struct perf_buffer* pb_ = nullptr;
  std::string error_;
  std::map<uint64_t, int> votes_;
  std::optional<LearnedLock> result_;
  std::string last_frame_;
  static constexpr int kVotesNeeded = 2;
};

}  // namespace schedhot
