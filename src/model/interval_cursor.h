// The interval cursor: samples in time order, read from any SampleSource (a live session,
// a recording, a WindowedCursor over one) or fed one by one, inside a --from/--to window,
// each handed out with the interval from the window's previous sample to it. What report,
// export, diff, fleet, replay, top and WindowedCursor::worst walk their intervals with.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>
#include <optional>

#include "model/interval.h"
#include "sample/sample.h"

namespace schedhot {

/// What an IntervalCursor does at the first sample after the window (--to).
enum class PastWindow {
  stop,     ///< ends there (export, diff)
  read_on,  ///< reads on to the source's end, counting what it reads but handing out
            ///< nothing (report: a WindowedCursor stops by itself where it can; where it
            ///< cannot, the error for a short window gives the span of all that was read)
};

struct IntervalCursorOptions {
  SampleWindow window;  ///< --from/--to, seconds since time zero (default: both open)
  /// Time zero, CLOCK_MONOTONIC ns; nullopt: the first sample read.
  std::optional<uint64_t> t0_mono_ns;
  PastWindow past = PastWindow::stop;
  /// first() keeps a copy of the window's first sample (one copy per cursor, not per sample).
  bool keep_first = false;
  /// One state (issue 32): before each read from a source that continues() from cur(),
  /// cur()'s words are let go of (SlotWords::hollow), so the source writes its state in
  /// place, and prev() is then hollow: the interval reads it from cur() and what changed.
  /// With keep_first, first() is hollow too and its words are kept sparse (window_interval()).
  /// For consumers that read prev() only through interval() (report, `w`'s walk). At the
  /// end (next() false) cur() gets its words back (SampleSource::restore); when the source
  /// cannot, next() throws std::runtime_error.
  bool one_state = false;
};

/// The window's first sample to its last (IntervalCursor::window_interval): the interval,
/// and what it reads the first sample's words from when they are kept sparse.
struct WindowInterval {
  WindowInterval(const Meta& meta, const Sample& a, const Sample& b, std::vector<std::shared_ptr<SlotDelta>> d);
  std::vector<std::shared_ptr<SlotDelta>> deltas;  ///< per probe, first() to last() (null: read the words)
  std::vector<const SlotDelta*> views;
  Interval iv;
};

/// Walks samples in time order and hands out those inside the window, each with the
/// interval from the previous one handed out (none for the window's first sample). Samples
/// before the window are read and skipped; at the first one after it the cursor ends or
/// reads on (PastWindow). A sample at the same instant as the previous one is handed out
/// (it becomes the previous sample) without an interval (interval() is null): zero-length
/// intervals are never handed out.
///
/// Owns two sample buffers and reads each sample into the one no longer needed (the
/// previous sample's once it is handed out), so a walk copies no sample (at 480 CPUs a
/// sample is ~13 MB) and allocates only while sample sizes grow. References and pointers
/// it returns stay valid until the next next()/take()/restart(). Not copyable or movable
/// (the interval refers to its buffers).
class IntervalCursor {
 public:
  /// meta: the samples' metadata (SampleSource::meta(); must outlive the cursor).
  explicit IntervalCursor(const Meta& meta, IntervalCursorOptions opts = {});
  IntervalCursor(const IntervalCursor&) = delete;
  IntervalCursor& operator=(const IntervalCursor&) = delete;

  /// Reads src up to the next sample inside the window. false at the source's end, after
  /// the window (PastWindow::stop; then on every later call) or when stop (may be null) is
  /// set after a sample was read (stopped() then says so; that sample is not handed out).
  /// Afterwards cur() is that sample and prev()/interval() lead up to it; after false,
  /// cur()/last() still hold the last sample handed out and prev() is null.
  bool next(SampleSource& src, const std::atomic<bool>* stop = nullptr);
  /// The same for a sample fed by hand: takes s's contents (swaps: s is left holding an
  /// earlier sample's buffers, contents unspecified, for the caller to read the next
  /// sample into). true when s was inside the window and is now cur().
  bool take(Sample& s);
  /// Forgets the samples handed out (the caller moved the source: a seek): the next sample
  /// handed out has no interval. Keeps time zero and the counts.
  void restart();
  /// restart(), and the samples' words let go too (last() is then null): the source's
  /// decoder can then write its state in place and reuse their blocks (a walk over the
  /// recording, ReplayFeed::jump_worst, before it seeks back).
  void release();

  /// The sample handed out last (requires last() != nullptr).
  const Sample& cur() const { return buf_[cur_]; }
  /// The window's sample before cur(); null for the window's first (and after restart()).
  const Sample* prev() const { return have_prev_ ? &buf_[1 - cur_] : nullptr; }
  /// prev() to cur(); null without prev() or when it has no length.
  const Interval* interval() const { return iv_ ? &*iv_ : nullptr; }
  /// cur()'s time, seconds since time zero.
  double t() const { return t_; }

  /// The window's first sample (IntervalCursorOptions::keep_first), null before it. With
  /// one_state its words are hollow: use window_interval().
  const Sample* first() const { return first_ ? &*first_ : nullptr; }
  /// first() to last() (keep_first; null without both or when they share a timestamp is not
  /// checked: the caller's): with one_state, what changed from the first sample's sparse
  /// words to the last's is made now (one pass over the last sample's words).
  std::unique_ptr<WindowInterval> window_interval() const;
  /// The window's last sample so far (cur()), null before its first.
  const Sample* last() const { return have_cur_ ? &buf_[cur_] : nullptr; }
  /// Samples handed out (inside the window).
  uint64_t samples() const { return n_; }
  /// Samples read, inside the window or not, and the time of the last (seconds since time
  /// zero; 0 before the first).
  uint64_t seen() const { return seen_; }
  double seen_t() const { return seen_t_; }
  /// A sample after the window was read.
  bool past_window() const { return past_; }
  /// next() ended because its stop flag was set.
  bool stopped() const { return stopped_; }
  /// Time zero, CLOCK_MONOTONIC ns (given, or the first sample's once one was read).
  std::optional<uint64_t> t0() const { return t0_; }

 private:
  enum class Fate { inside, outside, end };
  /// The buffer the next sample is read into (the previous sample's: drops prev()).
  Sample& spare();
  /// Places the sample just put into spare(): skipped, handed out, or the end.
  Fate place();
  /// first_ from cur() (one_state: hollow, its words in first_sparse_).
  void keep_first();

  const Meta& meta_;
  IntervalCursorOptions o_;
  Sample buf_[2];
  int cur_ = 0;  ///< buf_[cur_] is cur(), buf_[1 - cur_] prev() (or the spare)
  bool have_cur_ = false, have_prev_ = false, done_ = false, past_ = false, stopped_ = false;
  std::optional<Interval> iv_;
  std::optional<Sample> first_;
  /// one_state: first_'s words, per probe, as the non-zero words (a SlotDelta from zeros:
  /// grown is the word's value); null for a probe not present in it.
  std::vector<std::shared_ptr<SlotDelta>> first_sparse_;
  std::optional<uint64_t> t0_;
  double t_ = 0, seen_t_ = 0;
  uint64_t n_ = 0, seen_ = 0;
};

}  // namespace schedhot
