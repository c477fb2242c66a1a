// top's feed: the live TuiFeed over a LiveSession (live/session.h), and the loop that runs
// a TuiApp on the terminal or prints plain tables (top and replay).
#pragma once
#include <atomic>
#include <optional>
#include <cstdint>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "live/session.h"
#include "model/interval_cursor.h"
#include "sample/sampler.h"
#include "sys/units.h"
#include "tui/app.h"

namespace schedhot::tui {

/// Intervals top's + and - step through, ns.
inline constexpr uint64_t kIntervals[] = {100'000'000, 200'000'000, 500'000'000, 1'000'000'000,
                                          2'000'000'000, 5'000'000'000, 10'000'000'000};

/// The live TuiFeed: samples polled from a live session (recorded when --record, rotating
/// with --max-size, with the BPF programs' own run time for the header), the two of the
/// interval shown kept (and frozen while paused).
class LiveFeed : public TuiFeed {
 public:
  explicit LiveFeed(LiveSession& sess) : sess_(sess), pair_(sess.meta()) {}

  const Meta& meta() const override { return sess_.meta(); }
  bool live() const override { return true; }
  const Sample* first() const override { return shown_n() >= 2 ? &shown(0) : nullptr; }
  const Sample* last() const override { return shown_n() >= 1 ? &shown(1) : nullptr; }

  std::string when() const override {
    if (!last()) return "live, first sample";
    time_t t = static_cast<time_t>(last()->wall_ns / 1'000'000'000ull);
    struct tm tm {};
    localtime_r(&t, &tm);
    char buf[32];
    strftime(buf, sizeof buf, "%H:%M:%S", &tm);
    return fmt::format("live {}", buf);
  }
  uint64_t lost() const override { return sess_.lost_samples(); }
  std::string cost() const override {
    if (!sess_.run_stats_on()) return "unknown: " + sess_.run_stats_error();
    if (!first()) return "-";
    return cost_text(shown_cost(0), shown_cost(1), double(last()->mono_ns - first()->mono_ns) / 1e9);
  }
  std::string state() const override {
    std::string s = paused_ ? "paused (space resumes; sampling goes on)" : "";
    const RecordingDriver& rec = sess_.recording();
    if (rec.recording() && n_ > 0)
      s += fmt::format("{}recording to {}: {} samples, {} KiB{}", s.empty() ? "" : "  ", rec.path(), rec.samples(),
                       rec.bytes() / 1024,
                       rec.rotations() ? fmt::format(" ({} rotation{})", rec.rotations(), rec.rotations() == 1 ? "" : "s")
                                       : "");
    return s;
  }
  uint64_t interval_ns() const override { return sess_.interval(); }
  int wait_ms() const override {
    if (n_ == 0) return 0;
    const uint64_t now = mono_now_ns(), due = sess_.due();
    return now >= due ? 0 : static_cast<int>((due - now) / 1'000'000) + 1;
  }

  /// Polls the session (never blocks): a status change or a new sample is a change. Throws
  /// std::runtime_error with the session's one-line error when recording failed.
  bool update() override {
    const bool got = sess_.poll(in_);
    const bool changed = !sess_.take_status_changes().empty();
    if (sess_.error()) throw std::runtime_error(*sess_.error());
    if (!got) return changed;
    pair_.take(in_);  // in_ gets the oldest sample back, its words let go (the next poll shares the last's)
    if (!meta().catch_rules.empty()) {  // the tails view's "since start"
      if (n_ == 0) {
        start_ = pair_.cur();
        tails_.emplace(meta());
      } else if (pair_.cur().caught) {
        tails_->add(*pair_.cur().caught);
      }
    }
    cost_[0] = cost_[1];
    cost_[1] = sess_.run_totals();
    ++n_;
    return changed || !paused_;
  }

  void toggle_pause() override {
    paused_ = !paused_;
    if (paused_) {
      frozen_[0] = n_ >= 2 ? *pair_.prev() : Sample{};
      frozen_[1] = n_ >= 1 ? pair_.cur() : Sample{};
      frozen_cost_[0] = cost_[0];
      frozen_cost_[1] = cost_[1];
      frozen_n_ = n_;
      frozen_tails_ = tails_;
    }
  }

  std::string adjust(int dir) override {
    const uint64_t cur = sess_.interval();
    // A recording has one interval, its META's: replay and report count lost samples
    // against it, so a change would read as samples lost (or look like a shorter one).
    if (recording())
      return fmt::format("interval {:.3g} s is fixed while recording to {} (set it with -i)", double(cur) / 1e9,
                         sess_.recording().path());
    uint64_t next = cur;
    if (dir > 0) {
      for (uint64_t v : kIntervals)
        if (v > cur) {
          next = v;
          break;
        }
    } else {
      for (uint64_t v : kIntervals)
        if (v < cur) next = v;
    }
    if (next == cur) return fmt::format("interval {:.3g} s is the {}", double(cur) / 1e9, dir > 0 ? "longest" : "shortest");
    sess_.set_interval(next);  // re-plans the pending wait too
    return fmt::format("interval {:.3g} s from the next sample on", double(next) / 1e9);
  }

  TailsSoFar tails_so_far() override {
    const std::optional<TailAccumulator>& t = paused_ ? frozen_tails_ : tails_;
    if (!t || !first()) return {};
    return {&start_, &*t};
  }
  const std::vector<CatchRule>& catch_rules() const override { return sess_.catch_rules(); }
  uint64_t rule_edited_ns(size_t i) const override { return i < edited_.size() ? edited_[i] : 0; }
  bool recording() const override { return sess_.recording().recording(); }
  std::string set_catch_threshold(const std::string& probe, uint64_t ns) override {
    uint64_t th = 0;
    try {
      th = sess_.set_catch_threshold(probe, ns);
    } catch (const std::exception& e) {
      return e.what();
    }
    const auto& rules = sess_.catch_rules();
    edited_.resize(rules.size(), 0);
    for (size_t i = 0; i < rules.size(); ++i)
      if (rules[i].probe == probe) edited_[i] = mono_now_ns();
    return fmt::format("{} re-armed at >= {}{}", probe, format_ns_unit(double(th)),
                       recording() ? "; the recording's META keeps the start's threshold: report's check holds before "
                                     "this edit only"
                                   : "");
  }

  /// Closes the recording (INDEX and END), after one final sample taken now when
  /// final_sample (a stop: q, Ctrl-C, SIGTERM) so the recording covers the run up to it;
  /// not after -n's last table, which is the last sample asked for. Returns "wrote N
  /// samples, B bytes to F[ (R rotations)]", or "" when not recording. Throws
  /// std::runtime_error with the driver's one-line error when that failed.
  std::string close_recording(bool final_sample) {
    if (!sess_.recording().recording()) return "";
    return sess_.close(final_sample);
  }

 private:
  size_t shown_n() const { return paused_ ? frozen_n_ : n_; }
  /// i = 0: the earlier, 1: the later sample of the interval shown (requires shown_n() > 1 - i).
  const Sample& shown(int i) const {
    if (paused_) return frozen_[i];
    return i ? pair_.cur() : *pair_.prev();
  }
  /// The programs' totals right after shown(i).
  const BpfRunTotals& shown_cost(int i) const { return paused_ ? frozen_cost_[i] : cost_[i]; }

  LiveSession& sess_;
  IntervalCursor pair_;  ///< the two latest samples (prev(), cur()): no window, no copies
  Sample in_;            ///< polled into
  BpfRunTotals cost_[2], frozen_cost_[2];
  Sample frozen_[2];     ///< copies of the two shown when paused
  size_t n_ = 0, frozen_n_ = 0;
  Sample start_;                                 ///< the first sample (--catch: the tails' start)
  std::optional<TailAccumulator> tails_, frozen_tails_;  ///< --catch: every batch since start_
  std::vector<uint64_t> edited_;                 ///< per rule: its last edit (A), CLOCK_MONOTONIC ns
  bool paused_ = false;
};

/// The UI on the terminal (run_tui), or plain tables when stdout is not a full-screen
/// terminal (said once on stderr when it is a terminal that cannot): a table per new
/// interval, or, for a recording, every interval from the start position to the end.
/// max_tables (plain mode) stops after that many tables (0 = until the feed ends or stop).
/// batch (top -b): plain tables even on a terminal that could show the UI, said nowhere.
/// Returns true when it ended because max_tables were printed; stdout failing ends it
/// (stdout_ok(): the caller says why).
bool run_ui(TuiApp& app, TuiFeed& feed, int max_tables, const std::atomic<bool>& stop, bool batch = false);

}  // namespace schedhot::tui
