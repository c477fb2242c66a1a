#include "store/window.h"

#include <algorithm>

#include "model/interval_cursor.h"

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
  if (check) check_frames();
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

void WindowedCursor::check_frames() {
  if (!reader_) return;
  reader_->check_all_frames();
  bounded_ = !reader_->damage();
}

std::vector<int> WindowedCursor::online_cpus() {
  if (!reader_ || !t0_) return {};
  const uint64_t to_mono =
      w_.to_s < 0 ? UINT64_MAX : *t0_ + static_cast<uint64_t>((w_.to_s + w_.slack_s()) * 1e9);
  std::vector<int> online = reader_->online_cpus(*t0_ + w_.start_ns(), to_mono);
  moved_ = true;
  return online;
}

const std::vector<RecordingReader::SamplePos>& WindowedCursor::positions() {
  static const std::vector<RecordingReader::SamplePos> none;
  return reader_ ? reader_->sample_positions() : none;
}

std::optional<size_t> WindowedCursor::index_at(uint64_t mono_ns) {
  const auto& pos = positions();
  auto it = std::find_if(pos.begin(), pos.end(), [&](const RecordingReader::SamplePos& p) { return p.mono_ns >= mono_ns; });
  if (it == pos.end()) return std::nullopt;
  return static_cast<size_t>(it - pos.begin());
}

bool WindowedCursor::seek_with(const std::function<bool(RecordingReader&)>& seek) {
  if (!reader_) return false;
  // Time zero is the recording's first sample wherever the reader was left.
  if (!tried_t0_ && reader_->seek_sample(0)) read_t0();
  tried_t0_ = true;
  first_.reset();  // time zero is not returned again: the seek says what comes next
  started_ = true;  // and seek_start() does not move it
  returned_ns_.reset();
  done_ = !t0_ || !seek(*reader_);
  return !done_;
}

bool WindowedCursor::seek_index(size_t i) {
  return seek_with([i](RecordingReader& r) { return r.seek_sample(i); });
}

bool WindowedCursor::seek_time(uint64_t mono_ns) {
  return seek_with([mono_ns](RecordingReader& r) { return r.seek_time(mono_ns); });
}

std::optional<size_t> WindowedCursor::worst(size_t n, const std::function<double(const Interval&)>& score) {
  // One state: the walk reads each interval from the later sample and what changed, so the
  // decoder writes its state in place (at 8192 busy CPUs each changed word written once).
  IntervalCursorOptions o;
  o.one_state = true;
  IntervalCursor ic(meta(), o);
  if (!seek_index(0) || !ic.next(*this)) return std::nullopt;
  double best = -1;
  size_t at = 0;
  for (size_t i = 1; i < n && ic.next(*this); ++i) {
    if (!ic.interval()) continue;  // (a recording's sample times always advance)
    const double s = score(*ic.interval());
    if (s > best) {
      best = s;
      at = i;
    }
  }
  return best < 0 ? 0 : at;
}

void WindowedCursor::returning(Sample& out) {
  if (out.gaps && (!returned_ns_ || out.gaps->from_ns != *returned_ns_)) out.gaps.reset();
  returned_ns_ = out.mono_ns;
}

bool WindowedCursor::next(Sample& out) {
  if (!tried_t0_ && read_t0()) return false;
  if (first_) {  // time zero first; the seek (if any) happens after it is returned
    out = std::move(*first_);
    first_.reset();
    returning(out);
    if (!w_.before(0) && !w_.after(0)) ++inside_;
    return true;
  }
  if (!started_) seek_start();
  if (done_ || !t0_ || !src_.next(out)) return false;
  returning(out);
  const double t = static_cast<double>(out.mono_ns - *t0_) / 1e9;
  if (!w_.before(t) && !w_.after(t)) ++inside_;
  // Past --to with an interval in hand: stop. With fewer than two samples inside, read
  // on: the consumer's error then gives the recording's whole span.
  if (bounded_ && inside_ >= 2 && w_.after(t)) done_ = true;
  return true;
}

}  // namespace schedhot
