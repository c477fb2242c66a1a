// One reader of a BPF_MAP_TYPE_PERF_EVENT_ARRAY's per-CPU perf buffers, drained by a
// thread of its own: the kernel wakes it only when a buffer is a quarter full, and it
// drains every buffer each kDrainMs anyway (the recording loop's pauses between samples
// would otherwise decide how much a buffer must hold). --exact's records
// (probe/exact_reader.h) and --catch's caught events (probe/catch_reader.h) come this way.
//
// CPU hotplug: a CPU's perf event is dead once the CPU went offline (the kernel removes
// it from the CPU's context; bpf_perf_event_output then fails there with EOPNOTSUPP), and
// libbpf opens none for a CPU offline at the start. The thread reads the online CPUs at
// each drain and opens a new buffer for a CPU that came (back) online, so within about
// kDrainMs its events arrive again. A CPU that goes offline and back inside one drain
// period is found by the programs' own per-CPU count of refused outputs (fails_fd:
// sh_exact_fails, sh_catch_fails): a CPU whose count moved gets a new buffer too. The
// events in between are counted (lost, or full drops), never silent.
#pragma once
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <bpf/libbpf.h>
#include <linux/perf_event.h>

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
  /// Buffers opened for CPUs that came (back) online since the start (hotplug).
  uint64_t reopened() const;
  PerfDrain(const PerfDrain&) = delete;
  PerfDrain& operator=(const PerfDrain&) = delete;

 protected:
  /// map_fd: a BPF_MAP_TYPE_PERF_EVENT_ARRAY with one entry per possible CPU; pages: per-CPU
  /// buffer pages (a power of two; 0: default_pages(ncpus)). what: the option for messages
  /// ("--exact"). fails_fd: the programs' per-CPU count of outputs the map refused other
  /// than for a full buffer (a BPF_MAP_TYPE_PERCPU_ARRAY of one u64), -1 for none. Opens
  /// the buffers; start() starts the thread. Throws std::runtime_error (one line) when
  /// they cannot be opened.
  PerfDrain(int map_fd, uint32_t ncpus, size_t pages, std::string what, int fails_fd = -1);
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
  /// Opens a buffer for each CPU online now whose buffer is dead or missing (see the
  /// file's comment); with mu_ held. A CPU whose open fails is tried again next time.
  void follow_hotplug();
  /// fails_fd's per-CPU counts into v (one per possible CPU); false without the map.
  bool read_fails(std::vector<uint64_t>& v);
  /// perf_buffer__consume of every buffer; with mu_ held.
  void consume_all();
  [[noreturn]] void fail(const char* why);
  std::string what_;
  perf_buffer* pb_ = nullptr;
  size_t pages_ = 0;
  int map_fd_ = -1, fails_fd_ = -1;
  uint32_t ncpus_ = 0;
  std::vector<uint64_t> fails_seen_;  ///< per CPU, fails_fd's count at the last look
  perf_event_attr attr_{};
  /// Per CPU: kLive (its buffer works), kDead (seen offline since its buffer was opened),
  /// kNone (offline when the buffers were opened: no buffer yet).
  enum : uint8_t { kNone, kLive, kDead };
  std::vector<uint8_t> cpu_state_;
  /// Per CPU: the single-CPU buffer opened after a hotplug (nullptr: none; its events are
  /// in pb_'s buffer). Freed (after a last drain) before the next one for that CPU.
  std::vector<perf_buffer*> reopened_pb_;
  uint64_t reopened_ = 0;
  int epoll_fd_ = -1, stop_fd_ = -1;  ///< the buffers' fds and the eventfd that stop() writes
  std::thread thread_;
};

}  // namespace schedhot
