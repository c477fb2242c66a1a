// `schedhot replay`: the options checked, then tui/run.h's replay() (a recording in top's UI).
#include <memory>

#include "cli/commands.h"
#include "cli/options.h"
#include "cli/registry.h"
#include "tui/run.h"

namespace schedhot::cli {

namespace {

using tui::ReplayRequest;

struct ReplayCmd {
  std::string file;
  std::string at;            ///< start time since the first sample ("" = first interval)
  std::string sort = "idle";
  std::string cpus;
  std::string xfer_cost;     ///< --xfer-cost, as top's
  bool follow = false;       ///< keep up with a recording being written (tail -f)
};

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
  ReplayRequest req;
  req.file = o.file;
  req.follow = o.follow;
  req.at_text = o.at;
  req.at_ns = at;
  req.view = std::move(opts);
  req.cpus_text = o.cpus;
  req.stop = &g_stop;
  req.say = err;
  return tui::replay(req);  // UsageError: main prints it
}

CommandCall define(CLI::App& c) {
  auto o = std::make_shared<ReplayCmd>();
  ReplayCmd& replay = *o;
  c.add_option("file", replay.file, "recording file");
  c.add_option("--at", replay.at, "start at this time since the first sample, e.g. 30s (default: the first interval)");
  c.add_flag("--follow", replay.follow,
             "FILE is still being written: show the newest interval as samples arrive, through rotations (like tail -f)");
  add_view_options(&c, replay.sort, replay.cpus, replay.xfer_cost);
  return [o](const CommandLine&) { return run_replay(*o); };
}

const RegisterCommand replay_cmd{{"replay", "a recording in top's UI: step, jump, play, worst sample", 90, define}};

}  // namespace

}  // namespace schedhot::cli
