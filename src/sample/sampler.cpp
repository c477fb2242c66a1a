#include "sample/sampler.h"

#include <time.h>

#include <algorithm>

namespace schedhot {

uint64_t mono_now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

uint64_t wall_now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

LiveSource::LiveSource(ProbeSet& probes, Meta meta, uint64_t interval_ns, uint64_t duration_ns,
                       const std::atomic<bool>* stop)
    : probes_(probes), meta_(std::move(meta)), interval_ns_(interval_ns), duration_ns_(duration_ns), stop_(stop) {}

bool LiveSource::next(Sample& out) {
  if (seq_ > 0) {
    if (duration_ns_ && next_due_ > start_ + duration_ns_) return false;
    // Sleep to the deadline in short slices: stays responsive to stop and services the
    // lock-address learner.
    while (true) {
      if (stop_ && stop_->load()) return false;
      uint64_t now = mono_now_ns();
      if (now >= next_due_) break;
      uint64_t left_ms = (next_due_ - now) / 1000000;
      int slice = static_cast<int>(std::min<uint64_t>(std::max<uint64_t>(left_ms, 1), 100));
      for (int i : probes_.poll(slice)) {
        meta_.probes[i].status = probes_.statuses()[i];
        changed_.push_back(i);
      }
    }
  }
  out = make_sample(meta_);
  out.seq = seq_;
  out.mono_ns = mono_now_ns();
  out.wall_ns = wall_now_ns();
  probes_.read(out);
  if (seq_ == 0) {
    start_ = out.mono_ns;
    next_due_ = start_;
    meta_.start_mono_ns = out.mono_ns;
    meta_.start_wall_ns = out.wall_ns;
  }
  next_due_ += interval_ns_;
  // A duration that is not a multiple of the interval still ends with a sample at its end.
  const uint64_t end = start_ + duration_ns_;
  if (duration_ns_ && next_due_ > end && out.mono_ns + 1000000 < end) next_due_ = end;
  ++seq_;
  return true;
}

std::vector<int> LiveSource::take_status_changes() {
  std::vector<int> v;
  v.swap(changed_);
  return v;
}

}  // namespace schedhot
