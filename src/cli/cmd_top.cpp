// `schedhot top`: the options checked, then tui/run.h's top() (the live per-CPU UI, or a
// plain table per interval when stdout is not a full-screen terminal).
#include <sys/stat.h>

#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "cli/registry.h"
#include "tui/run.h"

namespace schedhot::cli {

namespace {

using tui::TopRequest;

struct TopCmd {
  CommonProbeOptions common;
  std::string interval = "1";
  int iterations = 0;        ///< plain mode: tables to print (-n, 1 or more); 0 when not given: until stopped
  bool batch = false;        ///< -b/--batch: plain tables even on a terminal
  bool iterations_given = false;  ///< -n was given (then 0 is a usage error: it would print nothing)
  std::string record;        ///< also record to this file ("" = no)
  bool force = false;        ///< overwrite the recording
  bool no_compress = false;
  std::string max_size;      ///< --max-size: rotate the recording as record does ("" = no limit)
  int rotate = -1;           ///< --rotate N: closed files kept (-1 = not given)
  std::string sort = "idle"; ///< initial sort column: a probe, a column header or "cpu"
  std::string cpus;          ///< initial CPU filter ("" = all)
  std::string xfer_cost;     ///< --xfer-cost for the l view's stall estimate ("" = the defaults)
  std::string command_line;
};

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

CommandCall define(CLI::App& c) {
  auto o = std::make_shared<TopCmd>();
  TopCmd& top = *o;
  add_probe_options(&c, top.common);
  add_catch_options(&c, top.common);
  c.add_option("-i,--interval", top.interval, "sample interval, e.g. 1, 250ms (default 1 s; +/- change it)");
  auto* top_n = c.add_option("-n,--iterations", top.iterations,
                             "plain mode: print this many tables (1 or more), then exit (default: until stopped)");
  c.add_flag("-b,--batch", top.batch, "plain tables, one per interval, even on a terminal (as top -b; piped output is plain anyway)");
  c.add_option("--record", top.record, "also record the samples to FILE");
  c.add_flag("-f,--force", top.force, "with --record: overwrite FILE if it exists");
  c.add_flag("--no-compress", top.no_compress, "with --record: store samples without zstd");
  c.add_option("--max-size", top.max_size, "with --record: rotate when FILE would grow past SIZE (e.g. 64M); needs --rotate");
  c.add_option("--rotate", top.rotate, "with --record: closed files to keep as FILE.1 (newest) .. FILE.N")
      ->check(kCount);
  add_view_options(&c, top.sort, top.cpus, top.xfer_cost);
  return [o, top_n](const CommandLine& cl) {
    o->command_line = cl.text();
    o->iterations_given = top_n->count() > 0;
    return run_top(*o);
  };
}

const RegisterCommand top_cmd{
    {"top", "live per-CPU rates and percentiles in a top-like UI (plain tables when not a terminal)", 80, define}};

}  // namespace

}  // namespace schedhot::cli
