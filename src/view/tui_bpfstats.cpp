#include "view/tui_bpfstats.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <bpf/bpf.h>
#include <fmt/format.h>

#include "probe/status.h"
#include "view/report.h"

namespace schedhot::tui {

BpfRunStats::BpfRunStats() {
  fd_ = bpf_enable_stats(BPF_STATS_RUN_TIME);
  if (fd_ < 0) {
    int e = errno;
    fd_ = -1;
    error_ = fmt::format("BPF_ENABLE_STATS failed: {} ({})", errno_name(e), strerror(e));
  }
}

BpfRunStats::~BpfRunStats() {
  if (fd_ >= 0) close(fd_);
}

BpfRunTotals BpfRunStats::read(const std::vector<int>& prog_fds) {
  BpfRunTotals t;
  for (int fd : prog_fds) {
    struct bpf_prog_info info {};
    __u32 len = sizeof info;
    if (bpf_obj_get_info_by_fd(fd, &info, &len) != 0) continue;
    t.run_ns += info.run_time_ns;
    t.runs += info.run_cnt;
  }
  return t;
}

std::string cost_text(const BpfRunTotals& a, const BpfRunTotals& b, double seconds) {
  if (seconds <= 0) return "-";
  const uint64_t ns = b.run_ns >= a.run_ns ? b.run_ns - a.run_ns : 0;
  const uint64_t runs = b.runs >= a.runs ? b.runs - a.runs : 0;
  const double ms_per_s = double(ns) / 1e6 / seconds;
  return fmt::format("BPF {:.3f} ms/s ({:.3f}% of one CPU), {} runs/s, {} ns/run", ms_per_s, ms_per_s / 10.0,
                     format_rate(double(runs) / seconds), runs ? fmt::format("{:.0f}", double(ns) / double(runs)) : "-");
}

}  // namespace schedhot::tui
