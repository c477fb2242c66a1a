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
    : probes_(probes), meta_(std::move(meta)), stop_(stop), sched_(interval_ns, duration_ns) {}

void LiveSource::set_interval(uint64_t ns) { sched_.set_interval(ns, mono_now_ns()); }

bool LiveSource::next(Sample& out) {
  if (seq_ > 0) {
    if (!sched_.more()) return false;
    // Sleep to the deadline in short slices: stays responsive to stop and services the
    // lock-address learner.
    while (true) {
      if (stop_ && stop_->load()) return false;
      uint64_t now = mono_now_ns();
      if (now >= sched_.due()) break;
      uint64_t left_ms = (sched_.due() - now) / 1000000;
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
  out.online = read_online_cpus();
  if (seq_ == 0) {
    meta_.start_mono_ns = out.mono_ns;
    meta_.start_wall_ns = out.wall_ns;
  }
  sched_.taken(out.mono_ns);
  ++seq_;
  return true;
}

std::vector<int> LiveSource::take_status_changes() {
  std::vector<int> v;
  v.swap(changed_);
  return v;
}

}  // namespace schedhot
