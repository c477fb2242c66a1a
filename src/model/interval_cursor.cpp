#include "model/interval_cursor.h"

#include <stdexcept>
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
  if (o_.keep_first && !first_) keep_first();
  ++n_;
  return Fate::inside;
}

namespace {

/// The words of w that differ from `from` (a sparse state: a SlotDelta from zeros whose
/// grown is each non-zero word's value; null: all zeros), as a delta from it: one pass
/// over w's words, shared zero blocks skipped where `from` has nothing. With from null
/// this is w's non-zero words, the sparse form of w itself.
std::shared_ptr<SlotDelta> words_from(const SlotDelta* from, const SlotWords& w) {
  auto d = std::make_shared<SlotDelta>();
  d->first.resize(size_t(w.ncpus()) + 1);
  const uint32_t sw = w.slot_words();
  for (uint32_t c = 0; c < w.ncpus(); ++c) {
    d->first[c] = uint32_t(d->word.size());
    uint32_t i = from ? from->first[c] : 0;
    const uint32_t e = from ? from->first[size_t(c) + 1] : 0;
    if (i == e && w.zero_block(c >> SlotWords::kBlockShift)) continue;  // zero on both sides
    const uint64_t* x = w.cpu(c);
    for (uint32_t k = 0; k < sw; ++k) {
      uint64_t old = 0;
      if (i < e && from->word[i] == k) old = from->grown[i++];
      if (old != x[k]) d->add(k, old, x[k]);
    }
  }
  d->first[w.ncpus()] = uint32_t(d->word.size());
  return d;
}

std::vector<const SlotDelta*> views_of(const std::vector<std::shared_ptr<SlotDelta>>& d) {
  std::vector<const SlotDelta*> v(d.size());
  for (size_t p = 0; p < d.size(); ++p) v[p] = d[p].get();
  return v;
}

}  // namespace

void IntervalCursor::keep_first() {
  first_ = buf_[cur_];
  if (!o_.one_state) return;
  // The first sample's non-zero words only (the window's first sample of a busy 8192-CPU
  // machine is 225 MB dense; its words are mostly zero histogram buckets).
  first_sparse_.assign(first_->probes.size(), nullptr);
  for (size_t p = 0; p < first_->probes.size(); ++p) {
    SlotWords& w = first_->probes[p].words;
    if (!first_->probes[p].present || w.empty() || w.is_hollow()) continue;
    first_sparse_[p] = words_from(nullptr, w);
    w.hollow();
  }
}

WindowInterval::WindowInterval(const Meta& meta, const Sample& a, const Sample& b,
                               std::vector<std::shared_ptr<SlotDelta>> d)
    : deltas(std::move(d)), views(views_of(deltas)), iv(meta, a, b, views) {}

std::unique_ptr<WindowInterval> IntervalCursor::window_interval() const {
  if (!first_ || !have_cur_) return nullptr;
  const Sample& b = buf_[cur_];
  std::vector<std::shared_ptr<SlotDelta>> deltas;
  if (!first_sparse_.empty()) {
    // From each probe's sparse first words to the last sample's: the words that differ.
    deltas.assign(meta_.probes.size(), nullptr);
    for (size_t p = 0; p < first_sparse_.size() && p < b.probes.size(); ++p) {
      const SlotWords& w = b.probes[p].words;
      if (first_sparse_[p] && b.probes[p].present && !w.is_hollow() &&
          w.shaped(first_->probes[p].words.ncpus(), first_->probes[p].words.slot_words()))
        deltas[p] = words_from(first_sparse_[p].get(), w);
    }
  }
  return std::make_unique<WindowInterval>(meta_, *first_, b, std::move(deltas));
}

bool IntervalCursor::next(SampleSource& src, const std::atomic<bool>* stop) {
  if (done_) return false;
  for (;;) {
    Sample& s = spare();
    // one_state: cur()'s words let go of while the source makes the next sample from them.
    bool lent = false;
    if (o_.one_state && have_cur_ && src.continues(buf_[cur_])) {
      for (ProbeSample& p : buf_[cur_].probes)
        if (p.present) p.words.hollow();  // (an absent probe's words are not read: left as they are)
      lent = true;
    }
    if (!src.next(s)) {
      if (lent && !src.restore(buf_[cur_]))
        throw std::runtime_error("the last sample's words could not be read back after the recording's end");
      return false;
    }
    if (lent) {
      // The sample must follow from cur()'s state (the source said it would).
      const Sample& c = buf_[cur_];
      for (size_t p = 0; p < c.probes.size(); ++p)
        if (c.probes[p].present && c.probes[p].words.is_hollow() &&
            (p >= s.probes.size() || !c.probes[p].words.refillable_from(s.probes[p].words)))
          throw std::logic_error("a sample that does not follow from the one before (one_state)");
    }
    if (stop && stop->load()) {
      stopped_ = done_ = true;
      if (lent) refill_hollow(buf_[cur_], s);
      return false;
    }
    switch (place()) {
      case Fate::inside: return true;
      case Fate::outside:
        // Not handed out: cur() is still the last sample, and gets its words back.
        if (lent && !refill_hollow(buf_[cur_], s)) throw std::runtime_error("the window's last sample could not be kept");
        continue;
      case Fate::end:
        if (lent && !refill_hollow(buf_[cur_], s)) throw std::runtime_error("the window's last sample could not be kept");
        return false;
    }
  }
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
