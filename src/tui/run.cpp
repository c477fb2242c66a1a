#include "tui/run.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "store/recording.h"
#include "sys/console.h"
#include "sys/cpulist.h"
#include "tui/live_feed.h"
#include "tui/replay_feed.h"

namespace schedhot::tui {

namespace {

/// Throws UsageError unless every CPU of filter is one of online (ascending; empty: any CPU
/// of the metadata). top passes the CPUs online now; replay the CPUs online at some point of
/// the recording (recorded says which, for the message).
void check_filter(const std::vector<int>& filter, const Meta& meta, const std::vector<int>& online,
                  const std::string& text, bool recorded) {
  for (int c : filter) {
    bool ok = c < static_cast<int>(meta.ncpus) && (online.empty() || std::binary_search(online.begin(), online.end(), c));
    if (ok) continue;
    if (recorded)
      throw UsageError(fmt::format("--cpus '{}': CPU {} was never online in the recording (online at some point: {})",
                                   text, c, format_cpulist(online)));
    throw UsageError(fmt::format("--cpus '{}': CPU {} is not online (online: {})", text, c, format_cpulist(online)));
  }
}

}  // namespace

int top(const TopRequest& req) {
  LiveOptions lo = req.live;
  lo.run_stats = true;  // on while top runs; off again when the session ends
  auto sess = std::make_unique<LiveSession>(std::move(lo));  // LiveError: the caller prints it
  check_filter(req.view.filter, sess->meta(), sess->meta().host.online, req.cpus_text, false);
  LiveFeed feed(*sess);
  TuiApp app(feed, req.view);
  std::string wrote;
  try {
    const bool counted = run_ui(app, feed, req.iterations, *req.live.stop, req.batch);
    wrote = feed.close_recording(!counted);
  } catch (const std::exception& e) {
    req.say(e.what());
    return 1;
  }
  if (!wrote.empty()) req.say(wrote);
  return 0;
}

int replay(const ReplayRequest& req) {
  std::unique_ptr<RecordingReader> reader;
  std::unique_ptr<ReplayFeed> feed;
  try {
    if (req.follow) {
      struct stat st {};
      if (stat(req.file.c_str(), &st) != 0) throw std::runtime_error(fmt::format("{}: {}", req.file, strerror(errno)));
      FollowOptions f;
      f.enabled = true;
      f.poll_ns = uint64_t(ReplayFeed::kFollowPollMs) * 1'000'000;
      f.stop = req.stop;
      reader = RecordingReader::open(req.file, f);  // waits for a header still being written
      if (req.stop && req.stop->load()) return 130;
    } else {
      reader = RecordingReader::open(req.file);
    }
  } catch (const std::exception& e) {
    req.say(e.what());
    return 1;
  }
  try {
    feed = std::make_unique<ReplayFeed>(std::move(reader), req.follow);
  } catch (const std::exception& e) {
    req.say(fmt::format("{}: {}", req.file, e.what()));
    return 1;
  }
  check_filter(req.view.filter, feed->meta(), feed->online_cpus(), req.cpus_text, true);
  const std::string damaged = req.follow ? "" : feed->source_note();  // "recording damaged at byte N: ..."
  const bool is_damaged = damaged.find("damaged") != std::string::npos;
  if (!req.at_text.empty())
    if (std::string why = feed->jump(req.at_ns); !why.empty())
      throw UsageError(fmt::format("--at {}: {}{}", req.at_text, why, is_damaged ? " (" + damaged + ")" : ""));
  TuiApp app(*feed, req.view);
  try {
    static const std::atomic<bool> never{false};
    run_ui(app, *feed, 0, req.stop ? *req.stop : never);
  } catch (const std::exception& e) {
    req.say(e.what());
    return 1;
  }
  // As report and export do: a damaged file is said on stderr too (the header said it).
  if (is_damaged) req.say(fmt::format("{}: {}", req.file, damaged));
  if (!feed->foreign().empty()) {  // following ended on someone else's file
    req.say(feed->foreign());
    return 1;
  }
  return 0;
}

}  // namespace schedhot::tui
