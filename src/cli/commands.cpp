#include "cli/commands.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <time.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <memory>
#include <thread>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/interval.h"
#include "model/lines.h"
#include "probe/attach.h"
#include "probe/kernel_facts.h"
#include "sample/sampler.h"
#include "store/recording.h"
#include "store/driver.h"
#include "store/rotate.h"
#include "live/record.h"
#include "analysis/cachelines.h"
#include "analysis/probes.h"
#include "output/format.h"
#include "command/fleet.h"
#include "output/fleet_text.h"
#include "command/report.h"
#include "output/report_text.h"
#include "sys/json_text.h"

namespace schedhot::cli {

std::atomic<bool> g_stop{false};

namespace {

void on_signal(int) { g_stop.store(true); }

/// -d must allow a second sample (0 = until stopped); else one line and false.
/// -d covers at least one interval; or, where until_stopped (record), -d is written as 0.
/// A positive -d that rounds to 0 ns (1e-10) is short, not "until stopped".
/// (check_covers_an_interval, sys/units.h, with its message printed.)
bool covers_an_interval(uint64_t dur_ns, uint64_t iv_ns, const std::string& d, const std::string& i,
                        bool until_stopped) {
  try {
    check_covers_an_interval(dur_ns, iv_ns, d, i, until_stopped);
    return true;
  } catch (const std::invalid_argument& e) {
    usage_error(e.what());
    return false;
  }
}

/// The command main is running ("serve"), for usage_error()'s pointer.
std::string g_usage_command;

}  // namespace

void set_usage_command(const std::string& name) { g_usage_command = name; }

std::string usage_hint() {
  return g_usage_command.empty() ? "(see schedhot --help)" : fmt::format("(see schedhot {} --help)", g_usage_command);
}

int usage_error(const std::string& msg) {
  err(fmt::format("{} {}", msg, usage_hint()));
  return 2;
}

void err(const std::string& msg) { say(msg); }

std::string FormatOptions::chosen() const {
  std::string name = format, by = "--format " + format;  // the format so far, and the option that named it
  for (const auto& [given, flag] : {std::pair{json, "json"}, std::pair{csv, "csv"}}) {
    if (!given) continue;
    if (!name.empty() && name != flag) throw UsageError(fmt::format("{} and --{}: pick one", by, flag));
    name = flag;
    by = fmt::format("--{}", flag);
  }
  return name.empty() ? "text" : name;
}

int print_output(const CommandOutput& res) {
  fmt::print("{}", res.out);
  for (size_t i = 0; i < res.errors.size(); ++i)  // status 2: an option that does not fit; its line points to --help
    err(res.status == 2 && i + 1 == res.errors.size() ? fmt::format("{} {}", res.errors[i], usage_hint()) : res.errors[i]);
  return res.status;
}

int print_live_error(const LiveError& e) {
  if (e.status() == 2) return usage_error(e.what());
  err(e.what());
  return e.status();
}

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: sleeps and reads return early
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

// ---- probes ----------------------------------------------------------------------

int run_probes(const ProbesCmd& o) {
  const std::string format = o.out.chosen();
  const std::unique_ptr<Attached> a = attach_probes(o.common, err);  // LiveError: main prints it
  fmt::print("{}", render_document(probes_document(*a), format));
  return 0;
}

// ---- record ----------------------------------------------------------------------

int run_record(const RecordCmd& o) {
  RecordRequest r;
  try {
    r.duration_ns = parse_duration_ns(o.duration, "-d/--duration");
    r.interval_ns = parse_interval_ns(o.interval);
    if (!o.start_at.empty()) r.start_at_ns = parse_start_at_ns(o.start_at, wall_now_ns());
  } catch (const std::exception& e) {
    return usage_error(e.what());
  }
  if (!covers_an_interval(r.duration_ns, r.interval_ns, o.duration, o.interval, true)) return 2;
  if (o.output.empty()) {
    return usage_error("record needs -o FILE (or -o - for stdout)");
  }
  if (int rc = parse_rotation(o.max_size, o.rotate, o.output, r.rotate)) return rc;
  if (o.output == "-" && isatty(STDOUT_FILENO)) {
    return usage_error("-o -: stdout is a terminal; redirect it to a file or a pipe");
  }
  r.probes = o.common;
  r.start_at = o.start_at;
  r.output = o.output;
  r.force = o.force;
  r.compress = !o.no_compress;
  r.quiet = o.quiet;
  r.command_line = o.command_line;
  r.stop = &g_stop;
  return record(r);
}

// ---- report ----------------------------------------------------------------------

namespace {

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

}  // namespace

namespace {

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

}  // namespace

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
  ReportRequest req;
  if (int rc = report_request(o, req)) return rc;
  return print_output(report_file_command(req));
}

}  // namespace schedhot::cli
