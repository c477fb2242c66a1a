#include "store/window.h"

#include "store/recording.h"

namespace schedhot {

WindowedCursor::WindowedCursor(SampleSource& src, RecordingReader* reader, const SampleWindow& window,
                               WindowCheck check, const std::atomic<bool>* stop)
    : src_(src), reader_(reader), w_(window), check_(check), stop_(stop) {}

WindowProblem WindowedCursor::read_t0() {
  if (tried_t0_) return t0_ ? WindowProblem{} : WindowProblem{WindowError::no_samples, {}};
  tried_t0_ = true;
  Sample s;
  if (!src_.next(s)) return {WindowError::no_samples, {}};
  t0_ = s.mono_ns;
  first_ = std::move(s);
  return {};
}

WindowProblem WindowedCursor::seek_start() {
  if (started_) return {};
  started_ = true;
  if (!tried_t0_) read_t0();
  if (!t0_) return {};
  const uint64_t start_ns = w_.start_ns();
  const bool check = reader_ && (check_ == WindowCheck::any_edge ? (w_.from_s > 0 || w_.to_s >= 0) : start_ns > 0);
  if (check) {
    reader_->check_all_frames();
    bounded_ = !reader_->damage();
  }
  if (bounded_ && start_ns > 0) {
    if (!reader_->seek_time(*t0_ + start_ns)) {
      done_ = true;  // only the first sample is left
      WindowProblem p{WindowError::none_after_from, {}};
      Sample last;
      if (!(stop_ && stop_->load()) && reader_->seek_sample(reader_->sample_count() - 1) && reader_->next(last))
        p.span_s = static_cast<double>(last.mono_ns - *t0_) / 1e9;
      return p;
    }
  } else if (moved_ && reader_) {
    // Back to right after the first sample: decode it again and drop it.
    Sample again;
    if (!reader_->seek_sample(0) || !reader_->next(again)) {
      done_ = true;
      return {WindowError::none_after_from, {}};
    }
  }
  return {};
}

bool WindowedCursor::next(Sample& out) {
  if (!tried_t0_ && read_t0()) return false;
  if (first_) {  // time zero first; the seek (if any) happens after it is returned
    out = std::move(*first_);
    first_.reset();
    if (!w_.before(0) && !w_.after(0)) ++inside_;
    return true;
  }
  if (!started_) seek_start();
  if (done_ || !t0_ || !src_.next(out)) return false;
  const double t = static_cast<double>(out.mono_ns - *t0_) / 1e9;
  if (!w_.before(t) && !w_.after(t)) ++inside_;
  // Past --to with an interval in hand: stop. With fewer than two samples inside, read
  // on: the consumer's error then gives the recording's whole span.
  if (bounded_ && inside_ >= 2 && w_.after(t)) done_ = true;
  return true;
}

}  // namespace schedhot
