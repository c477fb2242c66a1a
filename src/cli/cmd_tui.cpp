// schedhot top and schedhot replay: one UI (src/view/tui_app.h) over two feeds, the live
// kernel (LiveFeed below, on LiveSource) and a recording (tui::ReplayFeed, on
// RecordingReader). When stdout is not a full-screen terminal, both print a plain table
// per interval instead.
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "cli/commands.h"
#include "sample/sampler.h"
#include "store/driver.h"
#include "store/recording.h"
#include "sys/cpulist.h"
#include "view/tui_app.h"
#include "view/tui_replay.h"
#include "view/tui_term.h"

namespace schedhot::cli {

namespace {

/// Intervals + and - step through, ns.
constexpr uint64_t kIntervals[] = {100'000'000, 200'000'000, 500'000'000, 1'000'000'000,
                                   2'000'000'000, 5'000'000'000, 10'000'000'000};

/// The live TuiFeed: samples polled from a live session (recorded when --record, rotating
/// with --max-size, with the BPF programs' own run time for the header), the two of the
/// interval shown kept (and frozen while paused).
class LiveFeed : public tui::TuiFeed {
 public:
  explicit LiveFeed(LiveSession& sess) : sess_(sess) {}

  const Meta& meta() const override { return sess_.meta(); }
  bool live() const override { return true; }
  const Sample* first() const override { return shown_n() >= 2 ? &shown(0).s : nullptr; }
  const Sample* last() const override { return shown_n() >= 1 ? &shown(1).s : nullptr; }

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
    return tui::cost_text(shown(0).cost, shown(1).cost, double(last()->mono_ns - first()->mono_ns) / 1e9);
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
    Taken t;
    const bool got = sess_.poll(t.s);
    const bool changed = !sess_.take_status_changes().empty();
    if (sess_.error()) throw std::runtime_error(*sess_.error());
    if (!got) return changed;
    t.cost = sess_.run_totals();
    taken_[0] = std::move(taken_[1]);
    taken_[1] = std::move(t);
    ++n_;
    return changed || !paused_;
  }

  void toggle_pause() override {
    paused_ = !paused_;
    if (paused_) {
      frozen_[0] = taken_[0];
      frozen_[1] = taken_[1];
      frozen_n_ = n_;
    }
  }

  std::string adjust(int dir) override {
    const uint64_t cur = sess_.interval();
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
  struct Taken {
    Sample s;
    BpfRunTotals cost;  ///< the programs' totals right after the sample
  };
  size_t shown_n() const { return paused_ ? frozen_n_ : n_; }
  /// i = 0: the earlier, 1: the later sample of the interval shown.
  const Taken& shown(int i) const { return paused_ ? frozen_[i] : taken_[i]; }

  LiveSession& sess_;
  Taken taken_[2], frozen_[2];
  size_t n_ = 0, frozen_n_ = 0;
  bool paused_ = false;
};

/// Checks --sort, the syntax of --cpus and --xfer-cost; prints one line and returns false when bad.
bool parse_view_options(const std::string& sort, const std::string& cpus, const std::string& xfer_cost,
                        tui::TuiOptions& out) {
  out.sort_col = tui::find_column(sort);
  if (out.sort_col < 0) {
    std::string names = "cpu";
    for (auto& c : cpu_columns()) names += fmt::format(", {}", c.header);
    usage_error(fmt::format("--sort: no column '{}' (a probe name or one of: {})", sort, names));
    return false;
  }
  try {
    out.filter = cpus.empty() ? std::vector<int>{} : parse_cpulist(cpus);
  } catch (const std::invalid_argument& e) {
    usage_error(fmt::format("--cpus: {}", e.what()));
    return false;
  }
  try {
    if (!xfer_cost.empty()) out.xfer_cost = parse_xfer_cost(xfer_cost);
  } catch (const std::invalid_argument& e) {
    usage_error(e.what());
    return false;
  }
  out.parse_time = [](const std::string& s) { return parse_duration_ns(s, "time"); };
  out.utf8 = tui::utf8_locale();
  return true;
}

/// Checks the --cpus filter: every CPU must be one of online (ascending; empty: any CPU of
/// the metadata). top passes the CPUs online now; replay the CPUs online at some point of
/// the recording (recorded says which, for the message).
bool check_filter(const std::vector<int>& filter, const Meta& meta, const std::vector<int>& online,
                  const std::string& text, bool recorded) {
  for (int c : filter) {
    bool ok = c < static_cast<int>(meta.ncpus) && (online.empty() || std::binary_search(online.begin(), online.end(), c));
    if (!ok) {
      if (recorded)
        usage_error(fmt::format("--cpus '{}': CPU {} was never online in the recording (online at some point: {})", text, c,
                        format_cpulist(online)));
      else
        usage_error(fmt::format("--cpus '{}': CPU {} is not online (online: {})", text, c, format_cpulist(online)));
      return false;
    }
  }
  return true;
}

/// The UI on the terminal, or plain tables when stdout is not a full-screen terminal.
/// max_tables (plain mode) stops after that many tables (0 = until the feed ends or stop).
/// Returns true when it ended because max_tables were printed.
bool run_ui(tui::TuiApp& app, tui::TuiFeed& feed, int max_tables) {
  const std::string why = tui::fullscreen_unavailable();
  if (why.empty()) {
    tui::Terminal term;
    tui::run_tui(app, feed, term, g_stop);
    return false;
  }
  // On a terminal that cannot do the full screen (unknown TERM, no terminfo, TERM=dumb),
  // say why once; through a pipe or into a file plain tables are simply what is asked for.
  if (isatty(STDIN_FILENO) && isatty(STDOUT_FILENO)) err(why + ": printing plain tables (as top -b does)");
  int printed = 0;
  bool counted = false;  // max_tables printed
  // true: stop (enough tables, or stdout gone: main says why, quietly for a closed pipe)
  auto print = [&] {
    std::string text = app.render_text();
    if (text.empty()) return false;
    try {
      fmt::print("{}\n", text);
    } catch (const std::exception&) {  // fmt throws on a failed write; stdout_ok() says which
    }
    if (!stdout_ok()) return true;
    counted = max_tables && ++printed >= max_tables;
    return counted;
  };
  if (!feed.live()) {  // every interval from the start position to the end (following: on)
    while (!g_stop.load() && !print()) {
      while (!feed.step(1).empty())
        if (g_stop.load() || !feed.await_more()) return false;
    }
    return counted;
  }
  int64_t shown_seq = -1;
  while (!g_stop.load()) {
    if (feed.update() && feed.last() && int64_t(feed.last()->seq) != shown_seq) {
      shown_seq = feed.last()->seq;
      if (print()) return counted;
      continue;
    }
    usleep(static_cast<useconds_t>(std::clamp(feed.wait_ms(), 1, 100)) * 1000);
  }
  return false;
}

}  // namespace

int run_top(const TopCmd& o) {
  uint64_t iv;
  tui::TuiOptions opts;
  try {
    iv = parse_interval_ns(o.interval);
  } catch (const std::exception& e) {
    return usage_error(e.what());
  }
  // -n 0 would print no table: refused rather than taken as "until stopped" (leave -n out for that).
  if (o.iterations < 0 || (o.iterations_given && o.iterations == 0)) {
    return usage_error(fmt::format("-n/--iterations must be 1 or more, not {} (leave it out to run until stopped)", o.iterations));
  }
  if (!parse_view_options(o.sort, o.cpus, o.xfer_cost, opts)) return 2;
  if (o.record.empty() && (!o.max_size.empty() || o.rotate >= 0)) {
    return usage_error(fmt::format("{} needs --record FILE", o.max_size.empty() ? "--rotate" : "--max-size"));
  }
  if (o.record == "-") {
    return usage_error("--record -: top draws on stdout; give a file name");
  }
  RotateOptions rot;
  if (int rc = parse_rotation(o.max_size, o.rotate, o.record, rot)) return rc;
  struct stat st {};
  if (!o.record.empty() && !o.force && !rot.max_bytes && stat(o.record.c_str(), &st) == 0) {
    err(fmt::format("{} exists; choose another name or pass --force", o.record));
    return 1;
  }
  LiveOptions lo;
  lo.probes = o.common;
  lo.interval_ns = iv;
  lo.command_line = o.command_line;
  lo.recording.path = o.record;
  lo.recording.writer.compress = !o.no_compress;
  lo.recording.writer.overwrite = o.force;
  lo.recording.rotate = rot;
  lo.run_stats = true;  // on while top runs; off again when the session ends
  lo.stop = &g_stop;
  lo.warn = err;
  auto sess = std::make_unique<LiveSession>(std::move(lo));  // LiveError: main prints it
  if (!check_filter(opts.filter, sess->meta(), sess->meta().host.online, o.cpus, false)) return 2;
  LiveFeed feed(*sess);
  tui::TuiApp app(feed, opts);
  std::string wrote;
  try {
    const bool counted = run_ui(app, feed, o.iterations);
    wrote = feed.close_recording(!counted);
  } catch (const std::exception& e) {
    err(e.what());
    return 1;
  }
  if (!wrote.empty()) err(wrote);
  return 0;
}

int run_replay(const ReplayCmd& o) {
  tui::TuiOptions opts;
  if (!parse_view_options(o.sort, o.cpus, o.xfer_cost, opts)) return 2;
  uint64_t at = 0;
  try {
    if (!o.at.empty()) at = parse_duration_ns(o.at, "--at");
  } catch (const std::exception& e) {
    return usage_error(e.what());
  }
  if (o.file.empty()) {
    return usage_error("replay needs a recording FILE");
  }
  std::unique_ptr<RecordingReader> reader;
  std::unique_ptr<tui::ReplayFeed> feed;
  try {
    if (o.follow) {
      struct stat st {};
      if (stat(o.file.c_str(), &st) != 0) throw std::runtime_error(fmt::format("{}: {}", o.file, strerror(errno)));
      FollowOptions f;
      f.enabled = true;
      f.poll_ns = uint64_t(tui::ReplayFeed::kFollowPollMs) * 1'000'000;
      f.stop = &g_stop;
      reader = RecordingReader::open(o.file, f);  // waits for a header still being written
      if (g_stop.load()) return 130;
    } else {
      reader = RecordingReader::open(o.file);
    }
  } catch (const std::exception& e) {
    err(e.what());
    return 1;
  }
  try {
    feed = std::make_unique<tui::ReplayFeed>(std::move(reader), o.follow);
  } catch (const std::exception& e) {
    err(fmt::format("{}: {}", o.file, e.what()));
    return 1;
  }
  if (!check_filter(opts.filter, feed->meta(), feed->online_cpus(), o.cpus, true)) return 2;
  const std::string damaged = o.follow ? "" : feed->source_note();  // "recording damaged at byte N: ..."
  if (!o.at.empty()) {
    if (std::string why = feed->jump(at); !why.empty()) {
      return usage_error(fmt::format("--at {}: {}{}", o.at, why, damaged.find("damaged") != std::string::npos ? " (" + damaged + ")" : ""));
    }
  }
  tui::TuiApp app(*feed, opts);
  try {
    run_ui(app, *feed, 0);
  } catch (const std::exception& e) {
    err(e.what());
    return 1;
  }
  // As report and export do: a damaged file is said on stderr too (the header said it).
  if (damaged.find("damaged") != std::string::npos) err(fmt::format("{}: {}", o.file, damaged));
  if (!feed->foreign().empty()) {  // following ended on someone else's file
    err(feed->foreign());
    return 1;
  }
  return 0;
}

}  // namespace schedhot::cli
