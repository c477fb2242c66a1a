// `schedhot report`: a recording's (or a live run's) report, or with --fleet a fleet's
// ranking; the options checked, then command/report.h's or command/fleet.h's entry point.
#include <algorithm>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "analysis/report.h"
#include "analysis/schema.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/registry.h"
#include "command/fleet.h"
#include "command/report.h"

namespace schedhot::cli {

namespace {

struct ReportCmd {
  std::string file;
  bool live = false;
  std::string duration = "5";
  std::string interval = "1";
  CommonProbeOptions common;
  FormatOptions out;  ///< --format/--json, and --csv (with --fleet)
  bool all_cpus = false;
  int top = 10;
  std::string sort = "idle";
  std::string xfer_cost;  ///< --xfer-cost smt=15,llc=40,package=80,remote=150 (ns)
  std::string from, to;
  bool duration_given = false, interval_given = false;  ///< -d/-i on the command line
  std::string fleet;           ///< --fleet DIR: one row per host (command/fleet.h)
  bool every_interval = false; ///< --every-interval (with --fleet)
  unsigned jobs = 0;           ///< --jobs (with --fleet; 0: the CPUs, at most 4)
  unsigned spans = 4;          ///< --spans (with --fleet)
  std::string p99_flag = "10us";  ///< --p99-flag (with --fleet)
  bool top_given = false, sort_given = false, p99_flag_given = false, jobs_given = false, spans_given = false;
  std::string probe_option_given;  ///< the first of --backend, --probes... given ("" none): for --live only
};

/// The request report's options give (window, per-CPU table, --xfer-cost, format); 0, or
/// 2 after a usage error.
int report_request(const ReportCmd& o, ReportRequest& req) {
  if (int rc = parse_window(o.from, o.to, req.opts.from_s, req.opts.to_s)) return rc;
  req.opts.all_cpus = o.all_cpus;
  req.opts.top = o.top;
  req.opts.sort = o.sort;
  if (!o.xfer_cost.empty()) {
    try {
      req.opts.xfer_cost = parse_xfer_cost(o.xfer_cost);
    } catch (const std::invalid_argument& e) {
      return usage_error(e.what());
    }
  }
  req.file = o.file;
  req.from = o.from;
  req.to = o.to;
  req.format = o.out.chosen();
  req.stop = &g_stop;
  return 0;
}

/// report --fleet DIR: command/fleet.h fleet_command(), printed.
int report_fleet(const ReportCmd& o) {
  const char* given = !o.file.empty() ? "a FILE"
                      : o.live        ? "--live"
                      : o.all_cpus    ? "--all-cpus"
                      : o.sort_given  ? "--sort"
                      : !o.from.empty() ? "--from"
                      : !o.to.empty()   ? "--to"
                      : o.duration_given ? "-d"
                      : o.interval_given ? "-i"
                                         : nullptr;
  if (given) {
    return usage_error(fmt::format("--fleet DIR reads every host's whole recording: {} does not go with it (FILE, --live, "
                                   "--from/--to, --sort, --all-cpus, -d and -i are for one recording)", given));
  }
  const CommonProbeOptions& c = o.common;
  if (c.backend != "auto" || !c.probes.empty() || !c.system_map.empty() || !c.btf.empty() || c.verbose) {
    return usage_error("--fleet DIR reads recordings: --backend, --probes, --system-map, --btf and -v are for --live");
  }
  FleetRequest req;
  req.dir = o.fleet;
  req.every_interval = o.every_interval;
  if (o.spans_given && o.every_interval) {
    return usage_error("--spans and --every-interval: pick one");
  }
  req.spans = o.spans;
  req.jobs = o.jobs ? o.jobs : std::clamp(std::thread::hardware_concurrency(), 1u, 4u);
  req.top = o.top_given ? o.top : -1;
  try {
    req.p99_flag_ns = static_cast<double>(parse_duration_ns(o.p99_flag, "--p99-flag"));
    if (!o.xfer_cost.empty()) req.xfer_cost = parse_xfer_cost(o.xfer_cost);
  } catch (const std::exception& e) {
    return usage_error(e.what());
  }
  req.stop = &g_stop;
  return print_output(fleet_command(req, o.out.chosen()));
}

int run_report(const ReportCmd& o) {
  if (!o.fleet.empty()) return report_fleet(o);
  if (o.out.chosen() == "csv") {
    return usage_error(fmt::format("{} is for --fleet (a recording's CSV: schedhot export --format csv)",
                                   o.out.csv ? "--csv" : "--format csv"));
  }
  if (o.p99_flag_given || o.every_interval || o.jobs_given || o.spans_given) {
    return usage_error(fmt::format("{} is for --fleet", o.p99_flag_given  ? "--p99-flag"
                                         : o.every_interval ? "--every-interval"
                                         : o.jobs_given     ? "--jobs"
                                                            : "--spans"));
  }
  if (report_sort_key(o.sort).empty()) {
    std::string names;
    for (auto& c : cpu_columns())
      names += fmt::format("{}{}", names.empty() ? "" : ", ", c.header);
    return usage_error(fmt::format("--sort: no column '{}' (a probe name or one of: cpu, {})", o.sort, names));
  }
  if (o.live) {
    if (!o.file.empty()) {
      return usage_error("report: give a FILE or --live, not both");
    }
    uint64_t dur, iv;
    try {
      dur = parse_duration_ns(o.duration, "-d/--duration");
      iv = parse_interval_ns(o.interval);
    } catch (const std::exception& e) {
      return usage_error(e.what());
    }
    if (!covers_an_interval(dur, iv, o.duration, o.interval, false)) return 2;
    LiveOptions lo;
    lo.probes = o.common;
    lo.interval_ns = iv;
    lo.duration_ns = dur;
    lo.stop = &g_stop;  // Ctrl-C: reported up to the stop
    lo.warn = err;
    ReportRequest req;
    if (int rc = report_request(o, req)) return rc;
    return print_output(report_live_command(std::move(lo), req));  // LiveError: main prints it
  }
  if (o.file.empty()) {
    return usage_error("report needs a recording FILE (or --live)");
  }
  if (o.duration_given || o.interval_given) {
    return usage_error("report FILE: -d/-i apply to --live only (a recording has its own; --from/--to pick a window)");
  }
  if (!o.probe_option_given.empty()) {  // a recording has its probes: silently ignored before
    return usage_error(fmt::format("{} needs --live (a recording has its own probes)", o.probe_option_given));
  }
  ReportRequest req;
  if (int rc = report_request(o, req)) return rc;
  return print_output(report_file_command(req));
}

CommandCall define(CLI::App& c) {
  auto o = std::make_shared<ReportCmd>();
  ReportCmd& rep = *o;
  c.add_option("file", rep.file, "recording file");
  c.add_flag("--live", rep.live, "sample the running kernel instead of reading a file");
  auto* rep_d = c.add_option("-d,--duration", rep.duration, "with --live: how long (default 5 s)");
  auto* rep_i = c.add_option("-i,--interval", rep.interval, "with --live: sample interval (default 1 s)");
  add_probe_options(&c, rep.common);
  add_format_options(&c, rep.out, schema::report, schema::fleet, "with --fleet");
  c.add_flag("--all-cpus", rep.all_cpus, "per-CPU table for every CPU, not the top 10");
  auto* rep_top = c.add_option("--top", rep.top, "rows of the per-CPU table (default 10); with --fleet: ranked hosts (default all)")
                      ->check(kCount);
  auto* rep_sort = c.add_option("--sort", rep.sort, "per-CPU sort: a probe name, a column header (set_p99, ilb_recv/s) or cpu (default idle)");
  c.add_option("--from", rep.from, "window start, time since the recording's start (e.g. 30s)");
  c.add_option("--to", rep.to, "window end, time since the recording's start");
  c.add_option("--fleet", rep.fleet, "a fleet run's DIR (schedhot-fleet -o DIR, or *.shot files): one ranked row per host")
      ->check(kNotEmpty);
  c.add_flag("--csv", rep.out.csv, "with --fleet: CSV, one row per host; --format csv");
  auto* rep_jobs = c.add_option("--jobs", rep.jobs, "with --fleet: hosts read at once (default: the CPUs, at most 4)")
                       ->check(CLI::Range(1, 256));
  auto* rep_spans =
      c.add_option("--spans", rep.spans, "with --fleet: spans of each recording modeled on their mean rates (default 4)")
          ->check(CLI::Range(1, 100000));
  c.add_flag("--every-interval", rep.every_interval,
             "with --fleet: model the lines on every interval as report FILE does (slower; default: --spans 4)");
  auto* rep_p99 = c.add_option("--p99-flag", rep.p99_flag, "with --fleet: flag a fix absent with its probe's p99 above this (default 10us)")
      ->check(kNotEmpty);
  c.add_option("--xfer-cost", rep.xfer_cost, "ns per cacheline transfer by distance, e.g. smt=15,llc=40,package=80,remote=150")->check(kNotEmpty);
  return [=, app = &c](const CommandLine&) {
    o->duration_given = rep_d->count() > 0;
    o->interval_given = rep_i->count() > 0;
    o->top_given = rep_top->count() > 0;
    o->sort_given = rep_sort->count() > 0;
    o->p99_flag_given = rep_p99->count() > 0;
    o->jobs_given = rep_jobs->count() > 0;
    o->spans_given = rep_spans->count() > 0;
    o->probe_option_given.clear();
    for (const char* name : {"--backend", "--probes", "--system-map", "--btf", "--verbose", "--gap-state", "--no-gap-state",
                             "--gap-samples"})
      if (o->probe_option_given.empty() && app->count(name) > 0) o->probe_option_given = name;
    return run_report(*o);
  };
}

const RegisterCommand report_cmd{{"report", "totals, rates, percentiles and a per-CPU table from a recording", 40, define}};

}  // namespace

}  // namespace schedhot::cli
