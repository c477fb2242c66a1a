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

size_t ExactReader::default_pages(uint32_t ncpus) {
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  const size_t per_cpu = std::clamp<size_t>((size_t(64) << 20) / std::max<uint32_t>(ncpus, 1), size_t(1) << 20,
                                            size_t(4) << 20);
  size_t pages = 1;
  while (pages * 2 * page <= per_cpu) pages *= 2;  // a power of two, at most per_cpu bytes
  return pages;
}

ExactReader::ExactReader(int map_fd, uint32_t ncpus, size_t pages, int fails_fd)
    : pages_(pages ? pages : default_pages(ncpus)), fails_fd_(fails_fd), pending_(ncpus) {
  // perf_buffer__new() wakes the reader at every record (wakeup_events = 1): an irq_work
  // per record, most of --exact's cost. Here the kernel wakes the reader thread only when
  // a buffer is a quarter full, and the thread drains every buffer each kDrainMs anyway
  // (a wakeup late or lost costs no record while the buffer holds kDrainMs of them).
  perf_event_attr attr{};
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_BPF_OUTPUT;
  attr.sample_type = PERF_SAMPLE_RAW;
  attr.sample_period = 1;
  attr.watermark = 1;
  attr.wakeup_watermark = static_cast<uint32_t>(pages_ * size_t(sysconf(_SC_PAGESIZE)) / 4);
  LIBBPF_OPTS(perf_buffer_raw_opts, ro);
  pb_ = perf_buffer__new_raw(map_fd, pages_, &attr, &ExactReader::event, this, &ro);
  if (!pb_) throw std::runtime_error(fmt::format("--exact: cannot open the perf buffers: {}", strerror(errno)));
  auto fail = [&](const char* what) {
    const int e = errno;
    if (epoll_fd_ >= 0) close(epoll_fd_);
    if (stop_fd_ >= 0) close(stop_fd_);
    perf_buffer__free(pb_);
    throw std::runtime_error(fmt::format("--exact: {}: {}", what, strerror(e)));
  };
  // The thread's own epoll set: every buffer's perf event fd (data: its index) and the
  // eventfd stop() writes.
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  stop_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (epoll_fd_ < 0 || stop_fd_ < 0) fail("cannot make the reader's epoll set");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = UINT64_MAX;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, stop_fd_, &ev) < 0) fail("cannot make the reader's epoll set");
  for (size_t i = 0, n = perf_buffer__buffer_cnt(pb_); i < n; ++i) {
    ev.data.u64 = i;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, perf_buffer__buffer_fd(pb_, i), &ev) < 0)
      fail("cannot add a perf buffer to the reader's epoll set");
  }
  // Signals stay with the other threads (SIGINT/SIGTERM set the recording's stop flag
  // there): blocked while the thread is made, so it starts with all of them blocked.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  try {
    thread_ = std::thread([this] { run(); });
  } catch (const std::system_error&) {
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    fail("cannot start the reader thread");
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

ExactReader::~ExactReader() {
  stop();
  close(epoll_fd_);
  close(stop_fd_);
  perf_buffer__free(pb_);
}

void ExactReader::stop() {
  if (!thread_.joinable()) return;
  const uint64_t one = 1;
  while (write(stop_fd_, &one, sizeof one) < 0 && errno == EINTR) {
  }
  thread_.join();
}

void ExactReader::run() {
  pthread_setname_np(pthread_self(), "schedhot-exact");
  epoll_event evs[16];
  for (;;) {
    const int n = epoll_wait(epoll_fd_, evs, 16, kDrainMs);
    if (n < 0 && errno != EINTR) return;  // not expected: the thread's own epoll fd
    for (int i = 0; i < n; ++i)
      if (evs[i].data.u64 == UINT64_MAX) return;
    // Every buffer, not only the ones that woke it: a buffer under its watermark is
    // drained as well (the wakeups are an early start, the period the guarantee).
    std::lock_guard lk(mu_);
    perf_buffer__consume(pb_);
  }
}

void ExactReader::on_sample(void* ctx, int cpu, void* data, uint32_t size) {
  auto* self = static_cast<ExactReader*>(ctx);
  if (size < sizeof(sh_exact_rec)) return;
  sh_exact_rec r;
  std::memcpy(&r, data, sizeof r);
  // The buffer's CPU is the writer's (BPF_F_CURRENT_CPU); the record says the same.
  size_t c = cpu >= 0 ? size_t(cpu) : size_t(r.cpu);
  if (c >= self->pending_.size()) self->pending_.resize(c + 1);
  self->pending_[c].push_back({r.ts, r.cpu, r.probe, r.word});
  ++self->received_;
}

enum bpf_perf_event_ret ExactReader::event(void* ctx, int cpu, struct perf_event_header* e) {
  if (e->type == PERF_RECORD_SAMPLE) {
    // PERF_SAMPLE_RAW: u32 size, then the record
    const auto* p = reinterpret_cast<const uint8_t*>(e + 1);
    uint32_t size;
    std::memcpy(&size, p, sizeof size);
    on_sample(ctx, cpu, const_cast<uint8_t*>(p + sizeof size), size);
  } else if (e->type == PERF_RECORD_LOST) {
    // header, u64 id, u64 lost
    uint64_t lost;
    std::memcpy(&lost, reinterpret_cast<const uint8_t*>(e + 1) + sizeof(uint64_t), sizeof lost);
    on_lost(ctx, cpu, lost);
  }
  return LIBBPF_PERF_EVENT_CONT;
}

void ExactReader::on_lost(void* ctx, int, unsigned long long cnt) {
  auto* self = static_cast<ExactReader*>(ctx);
  self->lost_ += cnt;
  self->lost_total_ += cnt;
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
    perf_buffer__consume(pb_);
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
