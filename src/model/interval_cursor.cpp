#include "model/interval_cursor.h"

#include <utility>

namespace schedhot {

IntervalCursor::IntervalCursor(const Meta& meta, IntervalCursorOptions opts)
    : meta_(meta), o_(std::move(opts)), t0_(o_.t0_mono_ns) {}

Sample& IntervalCursor::spare() {
  iv_.reset();
  have_prev_ = false;
  // Let go of its words before the source makes the next sample: a recording's decoder
  // then reuses their blocks instead of copying (SlotWords::begin_next).
  Sample& s = buf_[1 - cur_];
  for (ProbeSample& p : s.probes) p.words.clear();
  return s;
}

IntervalCursor::Fate IntervalCursor::place() {
  const Sample& s = buf_[1 - cur_];
  if (!t0_) t0_ = s.mono_ns;
  ++seen_;
  const double t = static_cast<double>(static_cast<int64_t>(s.mono_ns - *t0_)) / 1e9;
  seen_t_ = t;
  if (o_.window.before(t)) return Fate::outside;
  if (o_.window.after(t)) {
    past_ = true;
    if (o_.past == PastWindow::read_on) return Fate::outside;
    done_ = true;
    return Fate::end;
  }
  have_prev_ = have_cur_;
  have_cur_ = true;
  cur_ = 1 - cur_;
  t_ = t;
  if (have_prev_) {
    iv_.emplace(meta_, buf_[1 - cur_], buf_[cur_]);
    if (iv_->seconds() <= 0) iv_.reset();
  }
  if (o_.keep_first && !first_) first_ = buf_[cur_];
  ++n_;
  return Fate::inside;
}

bool IntervalCursor::next(SampleSource& src, const std::atomic<bool>* stop) {
  if (done_) return false;
  while (src.next(spare())) {
    if (stop && stop->load()) {
      stopped_ = done_ = true;
      return false;
    }
    switch (place()) {
      case Fate::inside: return true;
      case Fate::outside: continue;
      case Fate::end: return false;
    }
  }
  return false;
}

bool IntervalCursor::take(Sample& s) {
  if (done_) return false;
  std::swap(spare(), s);
  return place() == Fate::inside;
}

void IntervalCursor::restart() {
  iv_.reset();
  have_prev_ = have_cur_ = done_ = stopped_ = false;
}

void IntervalCursor::release() {
  restart();
  buf_[0] = Sample{};
  buf_[1] = Sample{};
}

}  // namespace schedhot
