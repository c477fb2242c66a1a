// A --from/--to window over a sample source, read through one cursor: what report,
// export and replay (and what comes next: diff, fleet report) use instead of seeking a
// recording themselves. Errors come back as values; the caller words and prints them.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "model/interval.h"
#include "sample/sample.h"
#include "store/recording.h"

namespace schedhot {

/// Why a window has nothing to read.
enum class WindowError {
  none,
  no_samples,        ///< the source gave no sample at all (read_t0)
  none_after_from,   ///< the seek to --from found no sample at or after it (seek_start)
};

/// What read_t0()/seek_start() found.
struct WindowProblem {
  WindowError error = WindowError::none;
  /// none_after_from: seconds from the first to the last sample of the recording, when
  /// they could be read (and no stop was asked); the message gives "+0..+X s".
  std::optional<double> span_s;
  explicit operator bool() const { return error != WindowError::none; }
};

/// When the cursor CRC-checks every frame of a recording before it seeks (a seek must not
/// jump over a bad frame: a damaged file is read from its start, as without a window).
enum class WindowCheck {
  any_edge,  ///< when --from (> 0) or --to is given (report: also lets it stop after --to)
  seek,      ///< only when there is a seek to --from (export: a file read to --to is not
             ///< checked, so its "complete" stays what reading saw)
};

/// Samples of src for a window (SampleWindow: seconds since the first sample, with the
/// edges' slack). next() returns first the recording's first sample (time zero; the
/// consumer needs it and applies the window to each sample itself), then, when the
/// source is a clean recording and the window starts later, the samples from the
/// window's start (RecordingReader::seek_time with the slack), and it ends after the first
/// sample past --to once two samples fell inside the window. Any other source is read
/// from its start to its end, unchanged.
///
/// A recording can also be read at any position (replay): seek_index(), seek_time() and
/// index_at() over positions(), and worst() for the interval with the highest score.
///
/// A sample's gaps (Sample::gaps) are kept only when they start at the sample next()
/// returned just before it: the first sample after time zero's jump to --from, or after
/// a seek, has none (its interval began at a sample the consumer did not get).
class WindowedCursor : public SampleSource {
 public:
  /// reader: src itself when it is a recording (it can seek), else nullptr. stop (may be
  /// null): when set, seek_start() does not read the recording's span for the error.
  /// src, reader and stop must outlive the cursor.
  WindowedCursor(SampleSource& src, RecordingReader* reader, const SampleWindow& window,
                 WindowCheck check = WindowCheck::any_edge, const std::atomic<bool>* stop = nullptr);

  /// Reads the first sample (time zero; next() returns it first). no_samples when there is
  /// none. Called by next() when not called before.
  WindowProblem read_t0();
  /// Time zero, CLOCK_MONOTONIC ns (after a successful read_t0()).
  std::optional<uint64_t> t0() const { return t0_; }
  /// The caller moved the reader (RecordingReader::online_cpus): seek_start() puts it
  /// back right after the first sample.
  void reader_moved() { moved_ = true; }
  /// Reads time zero when read_t0() was not called, checks the frames (per WindowCheck)
  /// and seeks to the window's start.
  /// none_after_from when no sample is at or after it (next() then returns the first
  /// sample only); none when there is no sample at all. Called by next() when not called
  /// before.
  WindowProblem seek_start();
  /// Frames were checked and are clean, so the cursor seeks and stops at the window's edges.
  bool bounded() const { return bounded_; }
  /// CRC-checks every frame of the recording now, without decoding them
  /// (RecordingReader::check_all_frames: afterwards the positions stop at the first bad
  /// frame, as reading from the start does); bounded() then says whether all are clean.
  /// seek_start() calls it per WindowCheck. Nothing for a source that is not a recording.
  void check_frames();
  /// The CPUs online at some point of the window, ascending (RecordingReader::online_cpus
  /// from the window's start to its end, with the edges' slack; the whole recording
  /// without a window). Needs time zero (read_t0()); moves the reader, which seek_start()
  /// then puts back (as after reader_moved()). Empty when the source is not a recording or
  /// nothing says (RecordingReader::online_cpus).
  std::vector<int> online_cpus();

  /// Every sample's position in the recording (RecordingReader::sample_positions: when
  /// following, each call adds those written since); empty for a source that is not a
  /// recording.
  const std::vector<RecordingReader::SamplePos>& positions();
  /// The number of the first sample of positions() at or after CLOCK_MONOTONIC mono_ns;
  /// nullopt when there is none (or the source is not a recording).
  std::optional<size_t> index_at(uint64_t mono_ns);
  /// The highest score(Interval(meta(), sample i - 1, sample i)) over samples 0..n-1:
  /// the i of the first interval with it, 0 when no interval scores >= 0, nullopt when
  /// sample 0 cannot be read. Leaves the cursor after the samples read: seek afterwards.
  std::optional<size_t> worst(size_t n, const std::function<double(const Interval&)>& score);

  const Meta& meta() const override { return src_.meta(); }
  bool next(Sample& out) override;
  /// The source's, while next() reads on from it (not time zero's sample kept for next(),
  /// not before the seek to the window's start).
  bool continues(const Sample& s) const override { return !first_ && started_ && !done_ && src_.continues(s); }
  bool restore(Sample& s) override { return src_.restore(s); }
  /// Makes the next next() return sample number i of the recording (0-based), time zero
  /// read first when it was not (from sample 0, wherever the reader was left); from there next() reads on as after seek_start() (a
  /// bounded window still ends after --to). false when the source is not a recording or
  /// there is no such sample; next() then returns nothing until a seek succeeds.
  bool seek_index(size_t i) override;
  /// Like seek_index() for the first sample with mono_ns >= t (CLOCK_MONOTONIC ns).
  bool seek_time(uint64_t mono_ns) override;
  std::vector<int> take_status_changes() override { return src_.take_status_changes(); }

 private:
  /// seek_index()/seek_time()'s common part: time zero, then seek(reader).
  bool seek_with(const std::function<bool(RecordingReader&)>& seek);
  /// out is handed out: its gaps dropped unless they start at the last sample handed out.
  void returning(Sample& out);

  SampleSource& src_;
  RecordingReader* reader_;
  SampleWindow w_;
  WindowCheck check_;
  const std::atomic<bool>* stop_;
  std::optional<uint64_t> t0_;
  std::optional<Sample> first_;  ///< read by read_t0(), not returned yet
  bool tried_t0_ = false, started_ = false, moved_ = false, bounded_ = false, done_ = false;
  uint32_t inside_ = 0;  ///< samples returned inside the window
  std::optional<uint64_t> returned_ns_;  ///< mono_ns of the last sample next() returned
};

}  // namespace schedhot
