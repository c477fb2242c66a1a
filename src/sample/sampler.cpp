#include "sample/sampler.h"

#include <time.h>

#include <algorithm>
#include <cmath>

namespace schedhot {

uint64_t mono_now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

uint64_t missed_samples(uint64_t gap_ns, uint64_t interval_ns) {
  if (!interval_ns || gap_ns * 2 < interval_ns * 3) return 0;
  return static_cast<uint64_t>(std::llround(double(gap_ns) / double(interval_ns))) - 1;
}

uint64_t wall_now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

#ifndef SCHEDHOT_VERSION
#define SCHEDHOT_VERSION "dev"
#endif

Meta catalog_meta(const HostInfo& host, uint32_t ncpus, const std::vector<ProbeStatus>& statuses, uint64_t interval_ns,
               const std::string& command_line) {
  Meta meta = make_meta(host, ncpus, statuses);
  meta.tool_version = SCHEDHOT_VERSION;
  meta.command = command_line;
  meta.interval_ns = interval_ns;
  return meta;
}

LiveSource::LiveSource(SlotReader& reader, Meta meta, uint64_t interval_ns, uint64_t duration_ns,
                       const std::atomic<bool>* stop)
    : reader_(reader), meta_(std::move(meta)), stop_(stop), sched_(interval_ns, duration_ns) {}

void LiveSource::set_interval(uint64_t ns) { sched_.set_interval(ns, mono_now_ns()); }

bool LiveSource::next(Sample& out) {
  // Sleep to the deadline in short slices: stays responsive to stop and services the
  // lock-address learner. A stop takes the final sample now: the calls since the last
  // deadline are in it (before, they were lost: up to an interval of them).
  while (!ended()) {
    const uint64_t now = mono_now_ns(), due = sched_.due();
    const uint64_t left_ms = due > now ? (due - now) / 1000000 : 0;
    if (step(out, static_cast<int>(std::min<uint64_t>(std::max<uint64_t>(left_ms, 1), 100)))) return true;
  }
  return false;
}

bool LiveSource::poll(Sample& out) { return !ended() && step(out, 0); }

bool LiveSource::step(Sample& out, int wait_ms) {
  if (seq_ == 0) {
    take(out);
    return true;
  }
  if (stopped()) return finish(out);
  if (mono_now_ns() >= sched_.due()) {
    take(out);
    return true;
  }
  for (int i : reader_.poll(wait_ms)) {
    meta_.probes[i].status = reader_.statuses()[i];
    changed_.push_back(i);
  }
  return false;
}

bool LiveSource::finish(Sample& out) {
  if (seq_ == 0 || finished_ || !sched_.more()) return false;
  finished_ = true;
  take(out);
  return true;
}

void LiveSource::take(Sample& out) {
  reshape_sample(meta_, out);  // the caller's buffers
  // Start from the last sample's blocks, moved (not shared) into out: read() writes only
  // the blocks that changed, in place where no one else holds them (a caller that let go
  // of the last sample, or kept only its stamp: RecordingWriter), else unshared first, so
  // the two samples share the rest.
  last_words_.resize(out.probes.size());
  for (size_t i = 0; i < out.probes.size(); ++i)
    if (out.probes[i].present && last_words_[i].shaped(out.probes[i].words.ncpus(), out.probes[i].words.slot_words()))
      out.probes[i].words = std::move(last_words_[i]);
  out.seq = seq_;
  out.mono_ns = mono_now_ns();
  out.wall_ns = wall_now_ns();
  reader_.read(out);
  for (size_t i = 0; i < out.probes.size(); ++i) last_words_[i] = out.probes[i].words;
  out.online = read_online_cpus();
  if (seq_ == 0) {
    meta_.start_mono_ns = out.mono_ns;
    meta_.start_wall_ns = out.wall_ns;
  }
  sched_.taken(out.mono_ns);
  ++seq_;
}

std::vector<int> LiveSource::take_status_changes() {
  std::vector<int> v;
  v.swap(changed_);
  return v;
}

}  // namespace schedhot
