// The replay TuiFeed: a recording shown one interval (two adjacent samples) at a time,
// with stepping, jumping to a time or to the worst sample, and playing at 1x..16x.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>

#include "store/recording.h"
#include "view/tui_app.h"

namespace schedhot::tui {

/// Samples missing between two adjacent samples gap_ns apart when one was due every
/// interval_ns: 0 below 1.5 intervals, else round(gap / interval) - 1.
uint64_t missed_samples(uint64_t gap_ns, uint64_t interval_ns);

/// Plays a recording. Positions are sample numbers: position k shows the interval from
/// sample k - 1 to sample k (1 <= k < samples()).
class ReplayFeed : public TuiFeed {
 public:
  /// Takes an open reader and shows its first interval. Throws std::runtime_error with a
  /// one-line message when the recording has fewer than two readable samples.
  explicit ReplayFeed(std::unique_ptr<RecordingReader> reader);

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

  const Meta& meta() const override { return r_->meta(); }
  bool live() const override { return false; }
  const Sample* first() const override { return &a_; }
  const Sample* last() const override { return &b_; }
  std::string when() const override;
  uint64_t lost() const override { return lost_; }
  std::string cost() const override { return "not recorded"; }
  std::string state() const override;
  std::string source_note() const override;
  uint64_t interval_ns() const override { return meta().interval_ns; }
  int wait_ms() const override;
  bool update() override;
  void toggle_pause() override;
  std::string adjust(int dir) override;
  std::string step(int delta) override;
  std::string jump(uint64_t t_ns) override;
  std::string jump_worst(const std::function<double(const Interval&)>& score) override;

 private:
  using Clock = std::chrono::steady_clock;
  /// Wall time until the next playing step at the current speed.
  Clock::duration step_gap() const;

  std::unique_ptr<RecordingReader> r_;
  std::vector<RecordingReader::SamplePos> pos_;
  Sample a_, b_;
  size_t k_ = 0;
  bool reader_after_k_ = false;  ///< the reader's next() returns sample k_ + 1
  bool playing_ = false;
  int speed_ = 1;
  Clock::time_point stepped_at_{};
  uint64_t lost_ = 0;
  bool closed_ = false;  ///< the recording ends with an END frame
};

}  // namespace schedhot::tui
