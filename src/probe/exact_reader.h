// The --exact records' reader: the per-CPU perf buffers of the BPF map sh_exact_events
// (bpf/common.bpf.h), opened with libbpf's perf_buffer. Records are kept per CPU as they
// arrive and handed out per sample interval in time order (sample/exact.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sample/exact.h"

#include <bpf/libbpf.h>


namespace schedhot {

class ExactReader : public ExactSource {
 public:
  /// map_fd: a BPF_MAP_TYPE_PERF_EVENT_ARRAY with one entry per possible CPU. pages: per-CPU
  /// buffer size in pages (a power of two). Throws std::runtime_error (one line) when the
  /// buffers cannot be opened.
  ExactReader(int map_fd, uint32_t ncpus, size_t pages = 256);
  ~ExactReader() override;
  ExactReader(const ExactReader&) = delete;
  ExactReader& operator=(const ExactReader&) = delete;

  /// perf_buffer__poll for up to timeout_ms (0: what is there, no wait).
  void service(int timeout_ms) override;
  ExactBatch take(uint64_t upto_ns) override;
  /// Records received and lost since open.
  uint64_t received() const { return received_; }
  uint64_t lost_total() const { return lost_total_; }

 private:
  static void on_sample(void* ctx, int cpu, void* data, uint32_t size);
  static void on_lost(void* ctx, int cpu, unsigned long long cnt);
  static enum bpf_perf_event_ret event(void* ctx, int cpu, struct perf_event_header* e);
  perf_buffer* pb_ = nullptr;
  std::vector<std::vector<ExactRecord>> pending_;  ///< per CPU, arrival order
  uint64_t lost_ = 0, lost_total_ = 0, received_ = 0;
};

}  // namespace schedhot
