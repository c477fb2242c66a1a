#include "tui/replay_feed.h"

#include <cmath>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "sample/sampler.h"
#include "analysis/report.h"
#include "output/report_text.h"

namespace schedhot::tui {

void ReplayFeed::open_cursor() {
  cur_.reset();
  pair_.reset();
  cur_ = std::make_unique<WindowedCursor>(*r_, r_.get(), SampleWindow{});
  pair_ = std::make_unique<IntervalCursor>(r_->meta());
}

ReplayFeed::ReplayFeed(std::unique_ptr<RecordingReader> reader, bool follow) : r_(std::move(reader)), follow_(follow) {
  open_cursor();
  if (follow_) {
    take_positions();
    note_if_closed();
    next_poll_ = Clock::now() + std::chrono::milliseconds(kFollowPollMs);
    online_ = r_->online_cpus();
    if (pos_.size() >= 2 && !seek(pos_.size() - 1))
      throw std::runtime_error("cannot read the recording's newest two samples");
    return;
  }
  // Every frame CRC-checked once (not decoded), index or not: the samples are those before
  // the first bad frame, as a reading from the start gives (the index would jump over a bad
  // frame in the middle), and the reader knows whether the file was closed (END frame).
  cur_->check_frames();
  take_positions();
  if (pos_.size() < 2)
    throw std::runtime_error(fmt::format("the recording has {} readable sample{}: replay needs two for rates", pos_.size(),
                                         pos_.size() == 1 ? "" : "s"));
  closed_ = r_->saw_end();
  online_ = r_->online_cpus();
  if (!seek(1)) throw std::runtime_error("cannot read the recording's first two samples");
}

std::vector<int> ReplayFeed::online_cpus() const {
  std::vector<int> v = online_;
  for (const Sample* s : {first(), last()})
    if (s) v.insert(v.end(), s->online.begin(), s->online.end());
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

void ReplayFeed::take_positions() {
  const auto& v = cur_->positions();
  for (size_t i = pos_.size(); i < v.size(); ++i) {
    if (i > 0) lost_ += missed_samples(v[i].mono_ns - v[i - 1].mono_ns, meta().interval_ns);
    pos_.push_back(v[i]);
  }
}

bool ReplayFeed::poll_growth() {
  if (!follow_ || Clock::now() < next_poll_) return false;
  next_poll_ = Clock::now() + std::chrono::milliseconds(kFollowPollMs);
  if (closed_ && r_->path_replaced()) {
    // Rotated: FILE is a new recording. Opened without waiting: a file that has no
    // complete header yet is tried again at the next poll.
    std::unique_ptr<RecordingReader> next;
    try {
      next = RecordingReader::open(r_->path());
    } catch (const std::exception&) {
      return false;
    }
    // A rotation's next file is the same run's: same host and kernel, and its first sample
    // is the closed file's last one (RotatingWriter writes it again). Anything else moved
    // there (another host's, another run's, a restart) ends following, said in the note,
    // instead of being shown as "file 2 after rotation". No sample yet: look again later.
    next->set_follow(r_->follow());
    const auto& first = next->sample_positions();
    if (first.empty()) return false;
    const Meta& a = r_->meta();
    const Meta& b = next->meta();
    if (b.host.hostname != a.host.hostname || b.host.kernel_release != a.host.kernel_release || pos_.empty() ||
        first.front().mono_ns != pos_.back().mono_ns) {
      foreign_ = fmt::format("{} was replaced by a recording of another run ({}, {}): following stopped", r_->path(),
                             b.host.hostname, format_utc_time(b.start_wall_ns));
      follow_ = false;
      return true;
    }
    r_ = std::move(next);
    open_cursor();
    pos_.clear();
    k_ = 0;
    reader_after_k_ = false;
    closed_ = false;
    ++files_;
    ended_shown_ = false;
    take_positions();
    note_if_closed();  // a follower that lagged behind finds the next file already closed
    return true;
  }
  const size_t before = pos_.size();
  take_positions();
  return (pos_.size() != before) | note_if_closed();
}

bool ReplayFeed::note_if_closed() {
  // An index is written only at close and, read at open, spares the reader the scan that
  // would meet the END frame: either says the writer is done with this file.
  if (closed_ || !(r_->saw_end() || r_->index().has_value() || r_->damage())) return false;
  closed_ = true;
  closed_seen_ = Clock::now();
  return true;
}

bool ReplayFeed::follow_ended() const {
  return !follow_ || (closed_ && Clock::now() - closed_seen_ >= std::chrono::milliseconds(kRotateGraceMs));
}

bool ReplayFeed::await_more() {
  if (follow_ended()) return false;
  const auto* stop = r_->follow().stop;
  while (Clock::now() < next_poll_) {
    if (stop && stop->load()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  poll_growth();
  return !(stop && stop->load());
}

double ReplayFeed::seconds_at(size_t k) const {
  if (k >= pos_.size()) return 0;
  return double(pos_[k].mono_ns - pos_[0].mono_ns) / 1e9;
}

bool ReplayFeed::seek(size_t k) {
  if (k < 1 || k >= pos_.size()) return false;
  const bool next_one = k == k_ + 1 && reader_after_k_;
  if (!next_one) pair_->restart();
  if ((next_one || (cur_->seek_index(k - 1) && pair_->next(*cur_))) && pair_->next(*cur_)) {
    k_ = k;
    reader_after_k_ = true;
    return true;
  }
  // Unreadable there: show sample k_'s interval again (the cursor no longer has it).
  const size_t back = k_;
  k_ = 0;
  reader_after_k_ = false;
  if (back) seek(back);
  return false;
}

std::string ReplayFeed::when() const {
  if (!k_) return fmt::format("following {}: {} sample{} so far", r_->path(), pos_.size(), pos_.size() == 1 ? "" : "s");
  return fmt::format("sample {}/{}  +{:.2f} s  {}", k_ + 1, pos_.size(), seconds_at(k_), format_utc_time(last()->wall_ns));
}

std::string ReplayFeed::state() const {
  if (playing_) return fmt::format("playing {}x", speed_);
  if (!follow_) return "paused (space plays)";
  std::string file = files_ > 1 ? fmt::format(" (file {} after rotation)", files_) : "";
  if (follow_ended()) return "followed to the writer's close" + file;
  if (k_ && k_ + 1 < pos_.size()) return "following; showing an older sample (T to the last resumes)" + file;
  return "following the writer" + file;
}

std::string ReplayFeed::plain_state() const {
  return follow_ && files_ > 1 ? fmt::format("file {} after rotation", files_) : "";
}

std::string ReplayFeed::source_note() const {
  if (!foreign_.empty()) return foreign_;
  if (follow_ && !closed_) return "";  // being written: not closed yet is expected
  if (const auto& d = r_->damage()) return fmt::format("recording damaged at byte {}: {}; shown up to there", d->offset, d->reason);
  if (!closed_) return "recording not closed by its writer";
  return "";
}

ReplayFeed::Clock::duration ReplayFeed::step_gap() const {
  if (k_ + 1 >= pos_.size()) return Clock::duration::zero();
  auto ns = std::chrono::nanoseconds((pos_[k_ + 1].mono_ns - pos_[k_].mono_ns) / uint64_t(speed_));
  return std::chrono::duration_cast<Clock::duration>(ns);
}

int ReplayFeed::wait_ms() const {
  int wait = -1;
  if (playing_) {
    auto left = stepped_at_ + step_gap() - Clock::now();
    wait = static_cast<int>(std::max<int64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(left).count(), 0));
  }
  if (follow_ && !follow_ended()) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(next_poll_ - Clock::now()).count();
    int poll = static_cast<int>(std::max<int64_t>(left, 0));
    wait = wait < 0 ? poll : std::min(wait, poll);
  }
  return wait;
}

bool ReplayFeed::update() {
  // Following: the newest interval stays shown as samples arrive (unless the user moved
  // to an older one, or is playing).
  const bool at_newest = k_ == 0 || k_ + 1 == pos_.size();
  bool grew = poll_growth();
  if (follow_ && follow_ended() && !ended_shown_) {  // the state line turns to "followed to the writer's close"
    ended_shown_ = true;
    grew = true;
  }
  if (grew && at_newest && !playing_ && pos_.size() >= 2 && k_ + 1 < pos_.size()) seek(pos_.size() - 1);
  if (!playing_ || Clock::now() < stepped_at_ + step_gap()) return grew;
  if (k_ + 1 >= pos_.size() || !seek(k_ + 1)) {
    if (follow_ && !follow_ended()) return grew;  // at the newest: wait for the writer
    playing_ = false;
    return true;  // the state line changes to paused
  }
  stepped_at_ += step_gap();
  if (Clock::now() > stepped_at_ + std::chrono::seconds(1)) stepped_at_ = Clock::now();  // do not race to catch up
  return true;
}

void ReplayFeed::toggle_pause() {
  playing_ = !playing_;
  if (playing_ && k_ + 1 >= pos_.size()) seek(1);  // at the end, play starts over
  stepped_at_ = Clock::now();
}

std::string ReplayFeed::adjust(int dir) {
  speed_ = std::clamp(dir > 0 ? speed_ * 2 : speed_ / 2, 1, 16);
  return fmt::format("speed {}x", speed_);
}

std::string ReplayFeed::step(int delta) {
  long target = static_cast<long>(k_) + delta;
  if (target < 1) return "at the first sample";
  if (target >= static_cast<long>(pos_.size())) return "at the last sample";
  if (!seek(size_t(target))) return fmt::format("cannot read sample {}", target + 1);
  stepped_at_ = Clock::now();
  return "";
}

std::string ReplayFeed::jump(uint64_t t_ns) {
  if (pos_.size() < 2) return "no interval yet: the recording has fewer than two samples";
  const std::optional<size_t> at = cur_->index_at(pos_[0].mono_ns + t_ns);
  if (!at || *at >= pos_.size())  // (following: samples the feed has not taken yet are not shown)
    return fmt::format("+{:.2f} s is after the last sample (+{:.2f} s)", double(t_ns) / 1e9, seconds_at(pos_.size() - 1));
  const size_t i = *at;
  if (!seek(std::max<size_t>(i, 1))) return fmt::format("cannot read sample {}", i + 1);
  stepped_at_ = Clock::now();
  return "";
}

std::string ReplayFeed::jump_worst(const std::function<double(const Interval&)>& score) {
  // The shown pair is let go for the walk (it is read again after): at 8192 busy CPUs its
  // two samples would keep the decoder from rewriting its state in place, so the walk's
  // first samples would take about 400 MB of new blocks.
  pair_->release();
  const std::optional<size_t> at = cur_->worst(pos_.size(), score);
  reader_after_k_ = false;
  if (!at) {
    const size_t back = k_;
    k_ = 0;
    if (back) seek(back);
    return "cannot read the recording";
  }
  if (*at == 0) {
    if (!seek(k_)) seek(1);
    return "the sort column has no values in this recording";
  }
  seek(*at);
  stepped_at_ = Clock::now();
  return fmt::format("worst is sample {}/{} (+{:.2f} s)", *at + 1, pos_.size(), seconds_at(*at));
}

TailsSoFar ReplayFeed::tails_so_far() {
  if (meta().catch_rules.empty() || !k_) return {};
  if (!tails_ || tails_file_ != files_) {  // a new file: from the start
    tails_.emplace(meta());
    tails_next_ = 0;
    tails_file_ = files_;
    tails_ckpt_.clear();
  } else if (tails_next_ > k_ + 1) {  // a step back: from the nearest checkpoint at or before k_
    auto it = tails_ckpt_.upper_bound(k_);
    if (it == tails_ckpt_.begin()) {
      tails_.emplace(meta());
      tails_next_ = 0;
    } else {
      --it;
      tails_.emplace(it->second);
      tails_next_ = it->first;
    }
  }
  if (tails_next_ <= k_) {
    reader_after_k_ = false;  // the cursor moves: the next seek() seeks
    // The first sample read after a seek has no CATCH frame (recording.h): read on from
    // the last sample read, again.
    const size_t from = tails_next_ ? tails_next_ - 1 : 0;
    Sample s;
    if (!cur_->seek_index(from) || (tails_next_ && !cur_->next(s))) {
      tails_.reset();
      return {};
    }
    for (; tails_next_ <= k_; ++tails_next_) {
      if (!cur_->next(s)) {
        tails_.reset();
        return {};
      }
      if (tails_next_ == 0)
        tails_start_ = s;
      else if (s.caught)
        tails_->add(*s.caught);
      const size_t n = tails_next_ + 1;  // tails_ now holds the batches before sample n
      if (n % kTailsCheckpoint == 0 && tails_ckpt_.size() < kTailsCheckpoints && !tails_ckpt_.count(n))
        tails_ckpt_.emplace(n, *tails_);
    }
  }
  return {&tails_start_, &*tails_};
}

}  // namespace schedhot::tui
