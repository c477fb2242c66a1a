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

#include <fmt/format.h>

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

PerfDrain::PerfDrain(int map_fd, uint32_t ncpus, size_t pages, std::string what)
    : what_(std::move(what)), pages_(pages ? pages : default_pages(ncpus)) {
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
  perf_buffer__free(pb_);
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
    perf_buffer__consume(pb_);
  }
}

void PerfDrain::consume() { perf_buffer__consume(pb_); }

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
