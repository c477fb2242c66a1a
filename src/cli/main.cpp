// schedhot: eBPF observability for the kernel's nohz, cpupri and tick-broadcast hot paths.
// Command-line front end only: every subcommand lives in commands.cpp.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.h"

#ifndef SCHEDHOT_VERSION
#define SCHEDHOT_VERSION "dev"
#endif

using namespace schedhot::cli;

namespace {

void add_probe_options(CLI::App* c, CommonProbeOptions& o) {
  c->add_option("--backend", o.backend, "fentry | kprobe | auto (fentry, then kprobe, then a tracepoint proxy)")
      ->check(CLI::IsMember({"auto", "fentry", "kprobe"}));
  c->add_option("--probes", o.probes, "comma-separated probes to attach (default: all)");
  c->add_option("--system-map", o.system_map, "System.map of the running kernel, for tick_broadcast_lock's address");
  c->add_flag("-v,--verbose", o.verbose, "print libbpf and verifier messages");
}

std::string join_args(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) s += (i ? " " : "") + std::string(argv[i]);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"schedhot: per-CPU rates, coherence-miss estimates and latency percentiles for the scheduler's "
               "nohz, cpupri and tick-broadcast hot paths"};
  app.set_version_flag("--version", SCHEDHOT_VERSION);
  app.require_subcommand(1);
  app.fallthrough();

  ProbesCmd probes;
  auto* cp = app.add_subcommand("probes", "attach every probe for real and say how each attached, or why not");
  add_probe_options(cp, probes.common);
  cp->add_flag("--json", probes.json, "JSON output (schema schedhot.probes/1)");

  RecordCmd rec;
  auto* cr = app.add_subcommand("record", "record per-CPU samples to a file");
  add_probe_options(cr, rec.common);
  cr->add_option("-d,--duration", rec.duration, "how long, e.g. 10, 2.5s, 5m (default 10 s)");
  cr->add_option("-i,--interval", rec.interval, "sample interval, e.g. 1, 250ms (default 1 s)");
  cr->add_option("-o,--output", rec.output, "recording file, - for stdout")->required();
  cr->add_flag("-f,--force", rec.force, "overwrite FILE if it exists");
  cr->add_flag("--no-compress", rec.no_compress, "store samples without zstd");
  cr->add_flag("-q,--quiet", rec.quiet, "no progress messages");

  ReportCmd rep;
  auto* cq = app.add_subcommand("report", "totals, rates, percentiles and a per-CPU table from a recording");
  cq->add_option("file", rep.file, "recording file");
  cq->add_flag("--live", rep.live, "sample the running kernel instead of reading a file");
  cq->add_option("-d,--duration", rep.duration, "with --live: how long (default 5 s)");
  cq->add_option("-i,--interval", rep.interval, "with --live: sample interval (default 1 s)");
  add_probe_options(cq, rep.common);
  cq->add_flag("--json", rep.json, "JSON output (schema schedhot.report/1)");
  cq->add_flag("--all-cpus", rep.all_cpus, "per-CPU table for every CPU, not the top 10");
  cq->add_option("--top", rep.top, "rows of the per-CPU table (default 10)")->check(CLI::NonNegativeNumber);
  cq->add_option("--sort", rep.sort, "per-CPU sort: a probe name (default idle)");
  cq->add_option("--from", rep.from, "window start, time since the recording's start (e.g. 30s)");
  cq->add_option("--to", rep.to, "window end, time since the recording's start");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "schedhot: {} (see schedhot --help)\n", e.what());
    return 2;
  }
  install_signal_handlers();
  if (cp->parsed()) return run_probes(probes);
  if (cr->parsed()) {
    rec.command_line = join_args(argc, argv);
    return run_record(rec);
  }
  if (cq->parsed()) return run_report(rep);
  return 2;
}
