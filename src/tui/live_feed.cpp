#include "tui/live_feed.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

#include "sys/console.h"
#include "tui/terminal.h"

namespace schedhot::tui {

bool run_ui(TuiApp& app, TuiFeed& feed, int max_tables, const std::atomic<bool>& stop, bool batch) {
  const std::string why = batch ? "" : fullscreen_unavailable();
  if (!batch && why.empty()) {
    Terminal term;
    run_tui(app, feed, term, stop);
    return false;
  }
  // On a terminal that cannot do the full screen (unknown TERM, no terminfo, TERM=dumb),
  // say why once; through a pipe or into a file plain tables are simply what is asked for.
  if (!batch && isatty(STDIN_FILENO) && isatty(STDOUT_FILENO)) say(why + ": printing plain tables (as top -b does)");
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
    while (!stop.load() && !print()) {
      while (!feed.step(1).empty())
        if (stop.load() || !feed.await_more()) return false;
    }
    return counted;
  }
  int64_t shown_seq = -1;
  while (!stop.load()) {
    if (feed.update() && feed.last() && int64_t(feed.last()->seq) != shown_seq) {
      shown_seq = feed.last()->seq;
      if (print()) return counted;
      continue;
    }
    usleep(static_cast<useconds_t>(std::clamp(feed.wait_ms(), 1, 100)) * 1000);
  }
  return false;
}


}  // namespace schedhot::tui
