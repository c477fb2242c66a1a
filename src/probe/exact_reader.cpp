#include "probe/exact_reader.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <bpf/libbpf.h>
#include <fmt/format.h>

#include "schedhot/abi.h"

namespace schedhot {

ExactReader::ExactReader(int map_fd, uint32_t ncpus, size_t pages) : pending_(ncpus) {
  pb_ = perf_buffer__new(map_fd, pages, &ExactReader::on_sample, &ExactReader::on_lost, this, nullptr);
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
