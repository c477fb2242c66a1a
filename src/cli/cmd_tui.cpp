// schedhot top and schedhot replay: one UI (src/tui/app.h) over two feeds, the live
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
#include "tui/app.h"
#include "tui/replay_feed.h"
#include "tui/live_feed.h"
#include "tui/terminal.h"

namespace schedhot::cli {

namespace {

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
  tui::LiveFeed feed(*sess);
  tui::TuiApp app(feed, opts);
  std::string wrote;
  try {
    const bool counted = tui::run_ui(app, feed, o.iterations, g_stop);
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
    tui::run_ui(app, *feed, 0, g_stop);
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
