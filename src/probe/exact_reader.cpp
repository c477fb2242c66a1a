#include "probe/exact_reader.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <stdexcept>

#include <bpf/bpf.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <fmt/format.h>

#include "schedhot/abi.h"

namespace schedhot {

ExactReader::ExactReader(int map_fd, uint32_t ncpus, size_t pages, int fails_fd)
    : PerfDrain(map_fd, ncpus, pages, "--exact", fails_fd), fails_fd_(fails_fd), pending_(ncpus) {
  start("schedhot-exact");
}

ExactReader::~ExactReader() { stop(); }

void ExactReader::on_record(int cpu, const void* data, uint32_t size) {
  if (size < sizeof(sh_exact_rec)) return;
  sh_exact_rec r;
  std::memcpy(&r, data, sizeof r);
  // The buffer's CPU is the writer's (BPF_F_CURRENT_CPU); the record says the same.
  size_t c = cpu >= 0 ? size_t(cpu) : size_t(r.cpu);
  if (c >= pending_.size()) pending_.resize(c + 1);
  pending_[c].push_back({r.ts, r.cpu, r.probe, r.word});
  ++received_;
}

void ExactReader::on_lost(int, uint64_t cnt) {
  lost_ += cnt;
  lost_total_ += cnt;
}

uint64_t ExactReader::received() const {
  std::lock_guard lk(mu_);
  return received_;
}

uint64_t ExactReader::lost_total() const {
  std::lock_guard lk(mu_);
  return lost_total_;
}

uint64_t ExactReader::new_fails() {
  if (fails_fd_ < 0) return 0;
  const int n = libbpf_num_possible_cpus();
  if (n <= 0) return 0;
  std::vector<uint64_t> v(size_t(n), 0);  // a per-CPU array's value: one u64 per possible CPU
  const uint32_t key = 0;
  if (bpf_map_lookup_elem(fails_fd_, &key, v.data()) != 0) return 0;
  uint64_t sum = 0;
  for (uint64_t x : v) sum += x;
  const uint64_t d = sum >= fails_seen_ ? sum - fails_seen_ : 0;
  fails_seen_ = sum;
  return d;
}

ExactBatch ExactReader::take(uint64_t upto_ns) {
  std::vector<std::vector<ExactRecord>> due;
  ExactBatch b;
  {
    // What the kernel has written by now is read here too: a record of the interval
    // still in a buffer would otherwise go to the next one.
    std::lock_guard lk(mu_);
    consume();
    due.resize(pending_.size());
    for (size_t c = 0; c < pending_.size(); ++c) {
      auto& p = pending_[c];
      auto keep = std::stable_partition(p.begin(), p.end(), [&](const ExactRecord& r) { return r.ts_ns <= upto_ns; });
      due[c].assign(p.begin(), keep);
      p.erase(p.begin(), keep);
    }
    const uint64_t refused = new_fails();
    lost_total_ += refused;
    b.lost = lost_ + refused;
    lost_ = 0;
  }
  b.records = merge_by_time(due);  // outside the lock: the thread goes on reading
  return b;
}

}  // namespace schedhot
