// The --exact records' reader: the per-CPU perf buffers of the BPF map sh_exact_events
// (bpf/common.bpf.h), drained by a thread of its own (probe/perf_drain.h). Records are
// kept per CPU as they arrive and handed out per sample interval in time order
// (probe/records.h).
#pragma once
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "probe/perf_drain.h"
#include "probe/records.h"

#include <bpf/libbpf.h>


namespace schedhot {

class ExactReader : public ExactSource, public PerfDrain {
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

  ExactBatch take(uint64_t upto_ns) override;
  /// Records received and lost since open.
  uint64_t received() const;
  uint64_t lost_total() const;

 private:
  void on_record(int cpu, const void* data, uint32_t size) override;
  void on_lost(int cpu, uint64_t cnt) override;
  int fails_fd_ = -1;
  uint64_t fails_seen_ = 0;  ///< sh_exact_fails summed over CPUs at the last take()
  /// Records the perf map refused since the last call (sh_exact_fails' growth).
  uint64_t new_fails();
  std::vector<std::vector<ExactRecord>> pending_;  ///< per CPU, arrival order
  uint64_t lost_ = 0, lost_total_ = 0, received_ = 0;
};

}  // namespace schedhot
