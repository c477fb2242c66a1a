// The replay TuiFeed: a recording shown one interval (two adjacent samples) at a time,
// with stepping, jumping to a time or to the worst sample, and playing at 1x..16x.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <map>
#include <optional>

#include "model/interval_cursor.h"
#include "store/recording.h"
#include "store/window.h"
#include "tui/app.h"

namespace schedhot::tui {

/// Plays a recording, read through a WindowedCursor over the whole recording (no
/// window): its positions, seeks and worst interval. Positions are sample numbers: position k shows the interval from
/// sample k - 1 to sample k (1 <= k < samples()).
///
/// Following (replay --follow, like tail -f) a recording that is still being written:
/// the feed looks for new samples every kFollowPollMs and, while the newest interval is
/// shown, moves on to the next newest; stepping back stops that until the last sample is
/// shown again. When the writer closes the file and a new one appears at the same path
/// (record --rotate), it goes on in the new file. The reader should be opened with
/// following enabled (FollowOptions) so that its scan waits at a half-written frame.
class ReplayFeed : public TuiFeed {
 public:
  static constexpr int kFollowPollMs = 100;
  /// How long a followed recording closed by its writer is watched for a rotation, ms.
  static constexpr int kRotateGraceMs = 2000;

  /// Takes an open reader and shows its first interval (following: its newest, or none
  /// until there are two samples). Throws std::runtime_error with a one-line message when
  /// a recording not followed has fewer than two readable samples.
  explicit ReplayFeed(std::unique_ptr<RecordingReader> reader, bool follow = false);

  /// Shows the interval ending at sample k. false (nothing changes) when k is out of
  /// range or the recording cannot be read there.
  bool seek(size_t k);
  /// Sample number of the later sample shown.
  size_t position() const { return k_; }
  /// Readable samples in the recording.
  size_t samples() const { return pos_.size(); }
  /// Seconds from the first sample to sample k.
  double seconds_at(size_t k) const;
  bool playing() const { return playing_; }
  int speed() const { return speed_; }

  bool following() const { return follow_; }
  /// Files followed so far (1 + rotations seen).
  int files() const { return files_; }

  const Meta& meta() const override { return r_->meta(); }
  bool live() const override { return false; }
  const Sample* first() const override { return k_ ? pair_->prev() : nullptr; }
  const Sample* last() const override { return k_ ? pair_->last() : nullptr; }
  std::string when() const override;
  uint64_t lost() const override { return lost_; }
  std::string cost() const override { return "not recorded"; }
  std::string state() const override;
  std::string plain_state() const override;
  /// Following stopped because FILE was replaced by another run's recording: why ("" if not).
  const std::string& foreign() const { return foreign_; }
  std::string source_note() const override;
  /// CPUs online at some point of the recording (RecordingReader::online_cpus(), read
  /// when the feed opens), plus those of the samples shown since (following).
  std::vector<int> online_cpus() const override;
  uint64_t interval_ns() const override { return meta().interval_ns; }
  int wait_ms() const override;
  bool update() override;
  void toggle_pause() override;
  std::string adjust(int dir) override;
  std::string step(int delta) override;
  std::string jump(uint64_t t_ns) override;
  std::string jump_worst(const std::function<double(const Interval&)>& score) override;
  bool await_more() override;
  /// Reads the recording from its first sample (or from where the last call stopped, when
  /// the position moved on) up to the sample shown.
  TailsSoFar tails_so_far() override;

 private:
  using Clock = std::chrono::steady_clock;
  /// Wall time until the next playing step at the current speed.
  Clock::duration step_gap() const;
  /// Following: when a poll is due, takes the samples written since (or the rotated
  /// file's). True when the recording grew, was closed or was replaced.
  bool poll_growth();
  /// Adds the cursor's sample positions from pos_.size() on, counting missed samples.
  void take_positions();
  /// Sets closed_ (and when) the first time the file shows it was closed by its writer: an
  /// END frame, an index read at open, or damage. True when that changed the state.
  bool note_if_closed();
  /// A cursor over the whole of *r_ and the interval cursor over it (replace those over
  /// the previous file).
  void open_cursor();
  /// Following has ended: the writer closed the file and no new one came within the grace.
  bool follow_ended() const;

  std::unique_ptr<RecordingReader> r_;
  std::unique_ptr<WindowedCursor> cur_;  ///< over *r_: every sample is read through it
  /// Over *cur_: the interval shown, sample k_ - 1 to sample k_ (prev() and cur()).
  std::unique_ptr<IntervalCursor> pair_;
  std::vector<RecordingReader::SamplePos> pos_;
  std::vector<int> online_;  ///< RecordingReader::online_cpus() at open
  size_t k_ = 0;
  bool reader_after_k_ = false;  ///< the cursor's next() returns sample k_ + 1
  bool playing_ = false;
  int speed_ = 1;
  Clock::time_point stepped_at_{};
  uint64_t lost_ = 0;
  bool closed_ = false;  ///< the writer is done with the file (END frame, index or damage)
  bool follow_ = false;
  int files_ = 1;
  Clock::time_point next_poll_{};
  Clock::time_point closed_seen_{};  ///< following: when END was first seen
  bool ended_shown_ = false;          ///< update() has reported follow_ended() (a redraw)
  std::string foreign_;               ///< following: FILE was replaced by another run's recording
  // tails_so_far(): sample 0 of file tails_file_ and the batches of samples 1..tails_next_ - 1.
  Sample tails_start_;
  std::optional<TailAccumulator> tails_;
  size_t tails_next_ = 0;
  int tails_file_ = 0;
  /// Copies of tails_ as it stood before sample n (n a multiple of kTailsCheckpoint, at most
  /// kTailsCheckpoints of them): a step back restarts from the nearest one at or before the
  /// sample, not from the file's start (a 1 h recording's step back read all of it).
  static constexpr size_t kTailsCheckpoint = 64, kTailsCheckpoints = 256;
  std::map<size_t, TailAccumulator> tails_ckpt_;
};

}  // namespace schedhot::tui
