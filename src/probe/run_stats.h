// schedhot's own cost: the kernel's BPF run-time statistics (run_time_ns, run_cnt per
// program), switched on only while a live session that asks for them runs (top's header,
// serve's schedhot_bpf_run_seconds_total).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace schedhot {

/// Sums of the kernel's per-program BPF statistics.
struct BpfRunTotals {
  uint64_t run_ns = 0;  ///< time spent in the programs, ns
  uint64_t runs = 0;    ///< program runs
};

/// Keeps the kernel's BPF run-time statistics on (BPF_ENABLE_STATS with
/// BPF_STATS_RUN_TIME) while it lives. The kernel counts such fds: closing ours (the
/// destructor) turns the statistics back off unless the sysctl kernel.bpf_stats_enabled
/// or another holder keeps them on, so the machine is left as it was.
class BpfRunStats {
 public:
  BpfRunStats();
  ~BpfRunStats();
  BpfRunStats(const BpfRunStats&) = delete;
  BpfRunStats& operator=(const BpfRunStats&) = delete;

  /// The statistics are on.
  bool on() const { return fd_ >= 0; }
  /// Why they could not be turned on ("" when on): "BPF_ENABLE_STATS failed: EPERM (...)".
  const std::string& error() const { return error_; }
  /// Sums run_time_ns and run_cnt over the programs (bpf_obj_get_info_by_fd); programs
  /// whose info cannot be read are skipped.
  static BpfRunTotals read(const std::vector<int>& prog_fds);

 private:
  int fd_ = -1;
  std::string error_;
};

}  // namespace schedhot
