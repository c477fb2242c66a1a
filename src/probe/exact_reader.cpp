#include "probe/exact_reader.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <linux/perf_event.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <fmt/format.h>

#include "schedhot/abi.h"

namespace schedhot {

ExactReader::ExactReader(int map_fd, uint32_t ncpus, size_t pages) : pending_(ncpus) {
  // perf_buffer__new() wakes the reader at every record (wakeup_events = 1): an irq_work
  // per record, most of --exact's cost. Here the kernel wakes it only when a buffer is a
  // quarter full; take() drains the buffers at every sample anyway (perf_buffer__consume).
  perf_event_attr attr{};
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_BPF_OUTPUT;
  attr.sample_type = PERF_SAMPLE_RAW;
  attr.sample_period = 1;
  attr.watermark = 1;
  attr.wakeup_watermark = static_cast<uint32_t>(pages * size_t(sysconf(_SC_PAGESIZE)) / 4);
  LIBBPF_OPTS(perf_buffer_raw_opts, ro);
  pb_ = perf_buffer__new_raw(map_fd, pages, &attr, &ExactReader::event, this, &ro);
  if (!pb_) throw std::runtime_error(fmt::format("--exact: cannot open the perf buffers: {}", strerror(errno)));
}

ExactReader::~ExactReader() {
  if (pb_) perf_buffer__free(pb_);
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

void ExactReader::service(int timeout_ms) {
  if (pb_) perf_buffer__poll(pb_, timeout_ms);
}

ExactBatch ExactReader::take(uint64_t upto_ns) {
  if (pb_) perf_buffer__consume(pb_);
  std::vector<std::vector<ExactRecord>> due(pending_.size());
  for (size_t c = 0; c < pending_.size(); ++c) {
    auto& p = pending_[c];
    auto keep = std::stable_partition(p.begin(), p.end(), [&](const ExactRecord& r) { return r.ts_ns <= upto_ns; });
    due[c].assign(p.begin(), keep);
    p.erase(p.begin(), keep);
  }
  ExactBatch b;
  b.records = merge_by_time(due);
  b.lost = lost_;
  lost_ = 0;
  return b;
}

}  // namespace schedhot
