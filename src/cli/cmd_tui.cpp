// schedhot top and schedhot replay: the options checked, then tui/run.h's top() and
// replay() (one UI, src/tui/app.h, over a live feed or a recording).
#include <sys/stat.h>

#include <fmt/format.h>

#include "cli/commands.h"
#include "sys/cpulist.h"
#include "tui/run.h"
#include "tui/terminal.h"

namespace schedhot::cli {

using tui::ReplayRequest;
using tui::TopRequest;

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
  TopRequest req;
  req.live.probes = o.common;
  req.live.interval_ns = iv;
  req.live.command_line = o.command_line;
  req.live.recording.path = o.record;
  req.live.recording.writer.compress = !o.no_compress;
  req.live.recording.writer.overwrite = o.force;
  req.live.recording.rotate = rot;
  req.live.stop = &g_stop;
  req.live.warn = err;
  req.view = std::move(opts);
  req.cpus_text = o.cpus;
  req.iterations = o.iterations;
  req.batch = o.batch;
  req.say = err;
  return tui::top(req);  // LiveError, UsageError: main prints them
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

}  // namespace schedhot::cli
