// One reader of a BPF_MAP_TYPE_PERF_EVENT_ARRAY's per-CPU perf buffers, drained by a
// thread of its own: the kernel wakes it only when a buffer is a quarter full, and it
// drains every buffer each kDrainMs anyway (the recording loop's pauses between samples
// would otherwise decide how much a buffer must hold). --exact's records
// (probe/exact_reader.h) and --catch's caught events (probe/catch_reader.h) come this way.
#pragma once
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include <bpf/libbpf.h>

namespace schedhot {

class PerfDrain {
 public:
  /// How often the reader thread drains every buffer even without a wakeup, ms.
  static constexpr int kDrainMs = 50;
  /// The default per-CPU buffer: 4 MiB per CPU up to 16 CPUs, then 64 MiB shared, but
  /// never under 1 MiB (the pages are locked kernel memory, one buffer per possible CPU).
  static size_t default_pages(uint32_t ncpus);
  /// Per-CPU buffer pages used.
  size_t pages() const { return pages_; }
  PerfDrain(const PerfDrain&) = delete;
  PerfDrain& operator=(const PerfDrain&) = delete;

 protected:
  /// map_fd: a BPF_MAP_TYPE_PERF_EVENT_ARRAY with one entry per possible CPU; pages: per-CPU
  /// buffer pages (a power of two; 0: default_pages(ncpus)). what: the option for messages
  /// ("--exact"). Opens the buffers; start() starts the thread. Throws std::runtime_error
  /// (one line) when they cannot be opened.
  PerfDrain(int map_fd, uint32_t ncpus, size_t pages, std::string what);
  /// Stops the thread (if the derived class has not) and frees the buffers.
  virtual ~PerfDrain();
  /// Starts the reader thread (named `name`, no signals delivered to it): last in the
  /// derived class's constructor, so on_record never runs on a half-made object.
  void start(const char* name);
  /// Stops and joins the thread: first in the derived class's destructor.
  void stop();
  /// Reads what the kernel has written into every buffer now. Call with mu_ held.
  void consume();
  /// One record of CPU cpu's buffer (its raw bytes), and cnt records its buffer lost;
  /// called with mu_ held.
  virtual void on_record(int cpu, const void* data, uint32_t size) = 0;
  virtual void on_lost(int cpu, uint64_t cnt) = 0;
  /// Held while a buffer is read (by the thread or consume()) and for the derived class's
  /// pending records and counters.
  mutable std::mutex mu_;

 private:
  static enum bpf_perf_event_ret event(void* ctx, int cpu, struct perf_event_header* e);
  void run();
  [[noreturn]] void fail(const char* why);
  std::string what_;
  perf_buffer* pb_ = nullptr;
  size_t pages_ = 0;
  int epoll_fd_ = -1, stop_fd_ = -1;  ///< the buffers' fds and the eventfd that stop() writes
  std::thread thread_;
};

}  // namespace schedhot
