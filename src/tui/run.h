// top's and replay's runs: open the feed (a LiveSession, or a recording, followed while it
// is written), check the CPU filter against it, run the UI (tui/live_feed.h run_ui()) until
// q, the end or a stop, and say what ended it. cli/cmd_top.cpp and cli/cmd_replay.cpp parse the options.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "live/session.h"
#include "tui/app.h"

namespace schedhot::tui {

/// One `schedhot top`, parsed and checked.
struct TopRequest {
  LiveOptions live;            ///< probes, interval, the recording target (path "" = none), stop
  TuiOptions view;             ///< sort, filter, xfer cost, time parser
  std::string cpus_text;       ///< --cpus as given, for the filter's message
  int iterations = 0;          ///< plain mode: tables to print (0: until stopped)
  bool batch = false;          ///< -b: plain tables even on a terminal (top -b)
  std::function<void(const std::string&)> say;  ///< one line on stderr
};

/// Runs top. 0 after q, the iterations or a stop (the recording closed; "wrote ..." said);
/// 1 with one line said when the UI or the recording fails. Throws LiveError (no probe
/// attached, ...) and UsageError (a --cpus CPU not online) before the UI starts.
int top(const TopRequest& req);

/// One `schedhot replay`, parsed and checked.
struct ReplayRequest {
  std::string file;            ///< the recording (not empty)
  bool follow = false;         ///< --follow: keep up with a recording being written
  std::string at_text;         ///< --at as given ("" = the first interval)
  uint64_t at_ns = 0;          ///< --at, ns since the first sample
  TuiOptions view;
  std::string cpus_text;       ///< --cpus as given
  const std::atomic<bool>* stop = nullptr;
  std::function<void(const std::string&)> say;
};

/// Runs replay. 0 after q or the end; 1 with one line said when the file cannot be read
/// (or following ended on another run's file); 130 when stopped while waiting for a header.
/// Throws UsageError for a --cpus CPU never online in the recording or an --at outside it.
int replay(const ReplayRequest& req);

}  // namespace schedhot::tui
