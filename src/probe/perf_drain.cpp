#include "probe/perf_drain.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <stdexcept>

#include <linux/perf_event.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <fmt/format.h>

#include "sys/host.h"

namespace schedhot {

size_t PerfDrain::default_pages(uint32_t ncpus) {
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  const size_t per_cpu = std::clamp<size_t>((size_t(64) << 20) / std::max<uint32_t>(ncpus, 1), size_t(1) << 20,
                                            size_t(4) << 20);
  size_t pages = 1;
  while (pages * 2 * page <= per_cpu) pages *= 2;  // a power of two, at most per_cpu bytes
  return pages;
}

void PerfDrain::fail(const char* why) {
  const int e = errno;
  if (epoll_fd_ >= 0) close(epoll_fd_);
  if (stop_fd_ >= 0) close(stop_fd_);
  perf_buffer__free(pb_);
  epoll_fd_ = stop_fd_ = -1;
  pb_ = nullptr;
  throw std::runtime_error(fmt::format("{}: {}: {}", what_, why, strerror(e)));
}

PerfDrain::PerfDrain(int map_fd, uint32_t ncpus, size_t pages, std::string what, int fails_fd)
    : what_(std::move(what)), pages_(pages ? pages : default_pages(ncpus)), map_fd_(map_fd), fails_fd_(fails_fd),
      ncpus_(ncpus),
      cpu_state_(ncpus, kNone), reopened_pb_(ncpus, nullptr) {
  // libbpf opens a buffer for each CPU online now (the same file read here, just before).
  for (int c : read_online_cpus())
    if (c >= 0 && uint32_t(c) < ncpus) cpu_state_[size_t(c)] = kLive;
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
  attr_ = attr;
  LIBBPF_OPTS(perf_buffer_raw_opts, ro);
  pb_ = perf_buffer__new_raw(map_fd, pages_, &attr, &PerfDrain::event, this, &ro);
  if (!pb_) fail("cannot open the perf buffers");
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
}

void PerfDrain::start(const char* name) {
  // Signals stay with the other threads (SIGINT/SIGTERM set the recording's stop flag
  // there): blocked while the thread is made, so it starts with all of them blocked.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  try {
    thread_ = std::thread([this, name] {
      pthread_setname_np(pthread_self(), name);
      run();
    });
  } catch (const std::system_error&) {
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    fail("cannot start the reader thread");
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

PerfDrain::~PerfDrain() {
  stop();
  if (epoll_fd_ >= 0) close(epoll_fd_);
  if (stop_fd_ >= 0) close(stop_fd_);
  for (perf_buffer* b : reopened_pb_) perf_buffer__free(b);
  perf_buffer__free(pb_);
}

uint64_t PerfDrain::reopened() const {
  std::lock_guard lk(mu_);
  return reopened_;
}

void PerfDrain::follow_hotplug() {
  std::vector<uint8_t> online(ncpus_, 0);
  for (int c : read_online_cpus())
    if (c >= 0 && uint32_t(c) < ncpus_) online[size_t(c)] = 1;
  std::vector<uint64_t> fails;
  if (read_fails(fails))
    for (size_t c = 0; c < fails.size() && c < ncpus_; ++c)
      if (fails[c] != fails_seen_[c]) {
        fails_seen_[c] = fails[c];
        if (cpu_state_[c] == kLive) cpu_state_[c] = kDead;
      }
  std::vector<uint32_t> opened;
  for (uint32_t c = 0; c < ncpus_; ++c) {
    uint8_t& st = cpu_state_[c];
    if (!online[c]) {
      if (st == kLive) st = kDead;
      continue;
    }
    if (st == kLive) continue;
    // Its old single-CPU buffer first: drained, then freed (which deletes the map's entry
    // for the CPU, so it must go before the new one is put there).
    if (perf_buffer* old = reopened_pb_[c]) {
      perf_buffer__consume(old);
      perf_buffer__free(old);
      reopened_pb_[c] = nullptr;
    }
    int cpu = int(c), key = int(c);
    LIBBPF_OPTS(perf_buffer_raw_opts, ro, .cpu_cnt = 1, .cpus = &cpu, .map_keys = &key);
    perf_buffer* b = perf_buffer__new_raw(map_fd_, pages_, &attr_, &PerfDrain::event, this, &ro);
    if (!b) continue;  // offline again already, or out of locked memory: tried at the next drain
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = c;
    (void)epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, perf_buffer__buffer_fd(b, 0), &ev);  // if not: drained each kDrainMs
    reopened_pb_[c] = b;
    st = kLive;
    ++reopened_;
    opened.push_back(c);
  }
  // The outputs refused while a CPU had no buffer (between the old one's free and the new
  // one's open) moved its count: taken as seen, or the next drain would reopen it again.
  if (!opened.empty() && read_fails(fails))
    for (uint32_t c : opened)
      if (c < fails.size()) fails_seen_[c] = fails[c];
}

bool PerfDrain::read_fails(std::vector<uint64_t>& v) {
  if (fails_fd_ < 0) return false;
  const int n = libbpf_num_possible_cpus();  // a per-CPU array's value: one u64 per possible CPU
  if (n <= 0) return false;
  v.assign(size_t(n), 0);
  const uint32_t key = 0;
  if (bpf_map_lookup_elem(fails_fd_, &key, v.data()) != 0) return false;
  fails_seen_.resize(v.size(), 0);
  return true;
}

void PerfDrain::consume_all() {
  perf_buffer__consume(pb_);
  for (perf_buffer* b : reopened_pb_)
    if (b) perf_buffer__consume(b);
}

void PerfDrain::stop() {
  if (!thread_.joinable()) return;
  const uint64_t one = 1;
  while (write(stop_fd_, &one, sizeof one) < 0 && errno == EINTR) {
  }
  thread_.join();
}

void PerfDrain::run() {
  epoll_event evs[16];
  for (;;) {
    const int n = epoll_wait(epoll_fd_, evs, 16, kDrainMs);
    if (n < 0 && errno != EINTR) return;  // not expected: the thread's own epoll fd
    for (int i = 0; i < n; ++i)
      if (evs[i].data.u64 == UINT64_MAX) return;
    // Every buffer, not only the ones that woke it: a buffer under its watermark is
    // drained as well (the wakeups are an early start, the period the guarantee).
    std::lock_guard lk(mu_);
    consume_all();
    follow_hotplug();
  }
}

void PerfDrain::consume() { consume_all(); }

enum bpf_perf_event_ret PerfDrain::event(void* ctx, int cpu, struct perf_event_header* e) {
  auto* self = static_cast<PerfDrain*>(ctx);
  if (e->type == PERF_RECORD_SAMPLE) {
    // PERF_SAMPLE_RAW: u32 size, then the record
    const auto* p = reinterpret_cast<const uint8_t*>(e + 1);
    uint32_t size;
    std::memcpy(&size, p, sizeof size);
    self->on_record(cpu, p + sizeof size, size);
  } else if (e->type == PERF_RECORD_LOST) {
    // header, u64 id, u64 lost
    uint64_t lost;
    std::memcpy(&lost, reinterpret_cast<const uint8_t*>(e + 1) + sizeof(uint64_t), sizeof lost);
    self->on_lost(cpu, lost);
  }
  return LIBBPF_PERF_EVENT_CONT;
}

}  // namespace schedhot
