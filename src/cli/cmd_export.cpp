// `schedhot export`: the options checked, then command/export.h's export_command().
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/options.h"
#include "cli/registry.h"
#include "command/export.h"
#include "sys/cpulist.h"

namespace schedhot::cli {

namespace {

/// `schedhot export FILE --format csv|json|perfetto|folded [-o OUT] [--from T --to T] [--cpus LIST]`.
struct ExportCmd {
  std::string file;
  std::string format = "csv";
  std::string output = "-";   ///< "-" = stdout
  std::string from, to;       ///< window, time since the recording's first sample
  std::string cpus;           ///< CPU list ("0-3,8"), "" = the recording's online CPUs
  bool force = false;         ///< replace an existing regular file
  std::string lines;          ///< --lines cpu|none, "" = not given (CSV only)
};

int run_export(const ExportCmd& o) {
  if (o.file.empty()) {
    return usage_error("export needs a recording FILE");
  }
  if (o.output.empty()) {
    return usage_error("-o: an empty path (- is stdout)");
  }
  ExportRequest req;
  try {
    req.opts.format = parse_export_format(o.format);
  } catch (const std::exception& e) {
    return usage_error(e.what());
  }
  try {
    if (!o.cpus.empty()) req.cpus = parse_cpulist(o.cpus);
  } catch (const std::exception& e) {
    return usage_error(std::string("--cpus: ") + e.what());  // as top's and replay's
  }
  if (int rc = parse_window(o.from, o.to, req.opts.from_s, req.opts.to_s)) return rc;
  if (!o.lines.empty() && req.opts.format != ExportFormat::csv)
    return usage_error("--lines: only --format csv has per-CPU line columns");
  req.lines = o.lines;
  req.opts.stop = &g_stop;
  req.file = o.file;
  req.output = o.output;
  req.force = o.force;
  req.from = o.from;
  req.to = o.to;
  return print_output(export_command(req, std::cout));
}

CommandCall define(CLI::App& c) {
  auto o = std::make_shared<ExportCmd>();
  ExportCmd& exp = *o;
  c.add_option("file", exp.file, "recording file");
  c.add_option("--format", exp.format,
               "csv (default), json (schema schedhot.export/1), perfetto, or folded (the --catch events' stacks, "
               "one 'probe;outermost;...;innermost COUNT' line each: flamegraph.pl, inferno, speedscope)")
      ->check(CLI::IsMember({"csv", "json", "perfetto", "folded"}));
  c.add_option("-o,--output", exp.output, "output file (default - for stdout); a device or FIFO is written in place");
  c.add_flag("-f,--force", exp.force, "replace FILE if it exists");
  c.add_option("--from", exp.from, "window start, time since the recording's start (e.g. 30s)");
  c.add_option("--to", exp.to, "window end, time since the recording's start");
  c.add_option("--cpus", exp.cpus, "CPUs to export, e.g. 0-3,8 (default: the recording's online CPUs)")->check(kNotEmpty);
  c.add_option("--lines", exp.lines,
               "CSV: the per-CPU line columns (xfers_per_s:LINE...): cpu (every row has them; the default unless "
               "CPUs x lines is over 65536 an interval, then left out, said on stderr), none (no line columns)")
      ->check(CLI::IsMember({"cpu", "none"}));
  return [o](const CommandLine&) { return run_export(*o); };
}

const RegisterCommand export_cmd{
    {"export", "per-CPU rates and percentiles of every interval as CSV, JSON or a Perfetto trace; caught stacks folded", 60, define}};

}  // namespace

}  // namespace schedhot::cli
