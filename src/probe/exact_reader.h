// The --exact records' reader: the per-CPU perf buffers of the BPF map sh_exact_events
// (bpf/common.bpf.h), opened with libbpf's perf_buffer and drained by a thread of its own
// (the recording loop's pauses between samples would otherwise decide how much a buffer
// must hold). Records are kept per CPU as they arrive and handed out per sample interval in
// time order (probe/records.h).
#pragma once
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "probe/records.h"

#include <bpf/libbpf.h>


namespace schedhot {

class ExactReader : public ExactSource {
 public:
  /// map_fd: a BPF_MAP_TYPE_PERF_EVENT_ARRAY with one entry per possible CPU. pages: per-CPU
  /// buffer size in pages (a power of two; 0: default_pages(ncpus)). Starts the reader
  /// thread (no signals delivered to it). Throws std::runtime_error (one line) when the
  /// buffers cannot be opened or the thread not started.
  /// fails_fd: the per-CPU array of records the perf map refused (bpf/common.bpf.h
  /// sh_exact_fails; -1 none): take() counts them as lost.
  ExactReader(int map_fd, uint32_t ncpus, size_t pages = 0, int fails_fd = -1);
  /// Stops and joins the reader thread, then frees the buffers.
  ~ExactReader() override;
  ExactReader(const ExactReader&) = delete;
  ExactReader& operator=(const ExactReader&) = delete;

  ExactBatch take(uint64_t upto_ns) override;
  /// Records received and lost since open.
  uint64_t received() const;
  uint64_t lost_total() const;
  /// Per-CPU buffer pages used.
  size_t pages() const { return pages_; }
  /// The default per-CPU buffer: 4 MiB per CPU up to 16 CPUs, then 64 MiB shared, but
  /// never under 1 MiB (the pages are locked kernel memory, one buffer per possible CPU).
  static size_t default_pages(uint32_t ncpus);
  /// How often the reader thread drains every buffer even without a wakeup, ms.
  static constexpr int kDrainMs = 50;

 private:
  static void on_sample(void* ctx, int cpu, void* data, uint32_t size);
  static void on_lost(void* ctx, int cpu, unsigned long long cnt);
  static enum bpf_perf_event_ret event(void* ctx, int cpu, struct perf_event_header* e);
  void run();
  void stop();
  perf_buffer* pb_ = nullptr;
  size_t pages_ = 0;
  int fails_fd_ = -1;
  uint64_t fails_seen_ = 0;  ///< sh_exact_fails summed over CPUs at the last take()
  /// Records the perf map refused since the last call (sh_exact_fails' growth).
  uint64_t new_fails();
  int epoll_fd_ = -1, stop_fd_ = -1;  ///< the buffers' fds and the eventfd that stops run()
  std::thread thread_;
  /// Held while a buffer is read (by run() or take()) and for pending_ and the counters.
  mutable std::mutex mu_;
  std::vector<std::vector<ExactRecord>> pending_;  ///< per CPU, arrival order
  uint64_t lost_ = 0, lost_total_ = 0, received_ = 0;
};

}  // namespace schedhot
