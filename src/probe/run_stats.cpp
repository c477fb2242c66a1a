#include "probe/run_stats.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <bpf/bpf.h>
#include <fmt/format.h>

#include "probe/status.h"

namespace schedhot {

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

}  // namespace schedhot
