// schedhot: eBPF observability for the kernel's nohz, cpupri and tick-broadcast hot paths.
// Command-line front end only: every subcommand lives in commands.cpp.
#include <fcntl.h>
#include <unistd.h>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <algorithm>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.h"
#include "docgen/docgen.h"
#include "output/format.h"

#ifndef SCHEDHOT_VERSION
#define SCHEDHOT_VERSION "dev"
#endif

using namespace schedhot::cli;
using schedhot::format_choices_text;
using schedhot::format_names;
namespace schema = schedhot::schema;

namespace {

void add_probe_options(CLI::App* c, CommonProbeOptions& o) {
  c->add_option("--backend", o.backend,
                 "auto (fentry, then kprobe, then a tracepoint proxy) | fentry | kprobe | proxy (stand-ins only)")
      ->check(CLI::IsMember({"auto", "fentry", "kprobe", "proxy"}));
  c->add_option("--probes", o.probes, "comma-separated probes to attach, or all (the default)");
  c->add_option("--system-map", o.system_map, "System.map of the running kernel, for tick_broadcast_lock's address");
  c->add_option("--btf", o.btf,
                "vmlinux BTF of the running kernel (raw BTF or an ELF vmlinux), when not at /sys/kernel/btf/vmlinux");
  c->add_flag("-v,--verbose", o.verbose, "print libbpf and verifier messages");
  CLI::Option* on = c->add_flag_callback("--gap-state", [&o] { o.gap_state = true; },
                                         "the probes keep per-CPU gap histograms, sampled, for the cacheline figures' "
                                         "gap model (the default)");
  c->add_flag_callback("--no-gap-state", [&o] { o.gap_state = false; },
                       "no gap state: the cacheline figures are the independent-arrivals model's")
      ->excludes(on);
  c->add_option("--gap-samples", o.gap_samples,
                "gap samples per second per CPU the gap state aims at (default 4000; 0: every event, the exact "
                "gaps at the full cost per event)")
      ->check(CLI::Range(0, 1'000'000));
  // --gap-samples without a gap state would be silently ignored: refused instead
  c->parse_complete_callback([c, &o] {
    if (!o.gap_state && c->count("--gap-samples"))
      throw CLI::ValidationError("--gap-samples", "has no effect with --no-gap-state");
  });
}

/// A value that is not empty ("--xfer-cost ''" would silently mean the defaults).
const CLI::Validator kNotEmpty([](std::string& s) -> std::string { return s.empty() ? "must not be empty" : ""; }, "",
                               "not empty");

/// top's and replay's initial sort column and CPU filter, and the stall cost of the l view.
void add_view_options(CLI::App* c, std::string& sort, std::string& cpus, std::string& xfer_cost) {
  c->add_option("--sort", sort, "initial sort column: a probe or column name, or cpu (default idle)");
  c->add_option("--cpus", cpus, "initial CPU filter, e.g. 0-7,16 (default: all)");
  c->add_option("--xfer-cost", xfer_cost, "ns per cacheline transfer by distance, e.g. smt=15,llc=40,package=80,remote=150")->check(kNotEmpty);
}

/// A whole number from 0 to 1,000,000 (rows, files kept), with a short message.
const CLI::Validator kCount(
    [](std::string& s) -> std::string {
      long long v = -1;
      size_t used = 0;
      try {
        v = std::stoll(s, &used);
      } catch (...) {
        used = 0;
      }
      if (used != s.size() || v < 0 || v > 1'000'000) return "must be a whole number from 0 to 1000000, not '" + s + "'";
      return "";
    },
    "N");

std::string join_args(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) s += (i ? " " : "") + std::string(argv[i]);
  return s;
}

/// --format NAME, its choices the output formats of the command's document (schema) and,
/// when given, of a second kind (report --fleet's), from output/format.h's registry; and the
/// shorthand --json (--format json).
void add_format_options(CLI::App* c, FormatOptions& o, const char* schema, const char* also = nullptr,
                        const char* also_when = "") {
  std::vector<std::string> names = format_names(schema);
  std::string help = format_choices_text(schema);
  if (also) {
    for (const std::string& n : format_names(also))
      if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
    help += fmt::format("; {}: {}", also_when, format_choices_text(also));
  }
  c->add_option("--format", o.format, help)->check(CLI::IsMember(names));
  c->add_flag("--json", o.json, fmt::format("JSON output (schema {}{}); --format json", schema, also ? fmt::format(", {} {}", also_when, also) : ""));
}

}  // namespace

int main(int argc, char** argv) {
  // A closed stdin, stdout or stderr (`>&-`) is held by a read-only /dev/null: otherwise the
  // next open() (a recording, a BPF map) would take its number and get the tables or the
  // error lines written into it. Writes then fail with EBADF and are said as such.
  for (int fd = 0; fd <= 2; ++fd)
    if (::fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
      int n = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (n >= 0 && n != fd) {
        ::dup2(n, fd);
        ::close(n);
      }
    }
  CLI::App app{"schedhot: per-CPU rates and latency percentiles for the scheduler's "
               "nohz, cpupri and tick-broadcast hot paths"};
  app.set_version_flag("--version", SCHEDHOT_VERSION);
  app.require_subcommand(1);
  app.fallthrough();

  ProbesCmd probes;
  auto* cp = app.add_subcommand("probes", "attach every probe for real and say how each attached, or why not");
  add_probe_options(cp, probes.common);
  add_format_options(cp, probes.out, schema::probes);

  RecordCmd rec;
  auto* cr = app.add_subcommand("record", "record per-CPU samples to a file");
  add_probe_options(cr, rec.common);
  cr->add_option("-d,--duration", rec.duration, "how long, e.g. 10, 2.5s, 5m (default 10 s); 0 = until stopped");
  cr->add_option("-i,--interval", rec.interval, "sample interval, e.g. 1, 250ms (default 1 s)");
  // FILE arguments are checked by the commands, not marked required: CLI11 reports a
  // missing required argument before an unknown flag, which hid the real mistake.
  cr->add_option("-o,--output", rec.output, "recording file, - for stdout (required)");
  cr->add_flag("-f,--force", rec.force, "overwrite FILE if it exists");
  cr->add_flag("--no-compress", rec.no_compress, "store samples without zstd");
  cr->add_flag("--exact", rec.common.exact,
               "also record every modeled cacheline access (per-CPU perf buffers) for exact transfer counts");
  cr->add_flag("-q,--quiet", rec.quiet, "no progress messages");
  cr->add_option("--start-at", rec.start_at,
                 "start at this wall-clock instant: EPOCH seconds (e.g. 1764650000) or @ALIGN, the next multiple "
                 "of ALIGN since the epoch (e.g. @60); probes attach first");
  cr->add_option("--max-size", rec.max_size, "rotate when FILE would grow past SIZE (e.g. 64M); needs --rotate");
  cr->add_option("--rotate", rec.rotate, "closed files to keep as FILE.1 (newest) .. FILE.N; the oldest is dropped")
      ->check(kCount);

  ServeCmd srv;
  auto* csv = app.add_subcommand("serve", "live metrics for Prometheus: GET /metrics (OpenMetrics or 0.0.4 text), or --textfile");
  add_probe_options(csv, srv.common);
  csv->add_option("--listen", srv.listen, "ADDRESS:PORT to listen on: 127.0.0.1:9870 (default), [::1]:9870, localhost:9870 (127.0.0.1), :9870 (every address); '' = no HTTP");
  csv->add_option("-i,--interval", srv.interval, "sample interval, e.g. 1, 250ms (default 1 s)");
  csv->add_option("--textfile", srv.textfile, "also write DIR/schedhot.prom every interval (tmp + rename; removed when serve stops)")
      ->type_name("DIR");
  std::string per_cpu;
  auto* srv_per_cpu =
      csv->add_flag("--per-cpu{all}", per_cpu,
                    "a cpu label on every per-probe series (hundreds a CPU: serve prints the count), or with =LIST only on "
                    "these probes' and metric families' (e.g. --per-cpu=idle,schedhot_cpupri_set_calls_total)")
          ->check(CLI::Validator(
              [](std::string& s) -> std::string {
                try {
                  schedhot::parse_per_cpu(s);
                } catch (const std::invalid_argument& e) {
                  const std::string w = e.what();  // CLI11 names the option itself
                  return w.rfind("--per-cpu: ", 0) == 0 ? w.substr(11) : w;
                }
                return "";
              },
              "all|LIST"));
  csv->add_option("--max-connections", srv.max_connections, "open connections at most (default 2048); past all but a reserve (1/8, at most 256), or past a quarter from one client address, the oldest still sending its request head is cut");
  csv->add_option("--timeout-ms", srv.timeout_ms, "ms a connection has to send its request head, and without a byte either way after (default 2000)");
  csv->add_option("--web-config", srv.web_config,
                  "Prometheus's web config YAML, as exporters' --web.config.file: tls_server_config (HTTPS on --listen, "
                  "client certificates), basic_auth_users (bcrypt), http_server_config.headers")
      ->type_name("FILE")
      ->check(kNotEmpty);
  csv->add_flag("-q,--quiet", srv.quiet, "no progress messages");

  ReportCmd rep;
  auto* cq = app.add_subcommand("report", "totals, rates, percentiles and a per-CPU table from a recording");
  cq->add_option("file", rep.file, "recording file");
  cq->add_flag("--live", rep.live, "sample the running kernel instead of reading a file");
  auto* rep_d = cq->add_option("-d,--duration", rep.duration, "with --live: how long (default 5 s)");
  auto* rep_i = cq->add_option("-i,--interval", rep.interval, "with --live: sample interval (default 1 s)");
  add_probe_options(cq, rep.common);
  add_format_options(cq, rep.out, schema::report, schema::fleet, "with --fleet");
  cq->add_flag("--all-cpus", rep.all_cpus, "per-CPU table for every CPU, not the top 10");
  auto* rep_top = cq->add_option("--top", rep.top, "rows of the per-CPU table (default 10); with --fleet: ranked hosts (default all)")
                      ->check(kCount);
  auto* rep_sort = cq->add_option("--sort", rep.sort, "per-CPU sort: a probe name, a column header (set_p99, ilb_recv/s) or cpu (default idle)");
  cq->add_option("--from", rep.from, "window start, time since the recording's start (e.g. 30s)");
  cq->add_option("--to", rep.to, "window end, time since the recording's start");
  cq->add_option("--fleet", rep.fleet, "a fleet run's DIR (schedhot-fleet -o DIR, or *.shot files): one ranked row per host")
      ->check(kNotEmpty);
  cq->add_flag("--csv", rep.out.csv, "with --fleet: CSV, one row per host; --format csv");
  auto* rep_jobs = cq->add_option("--jobs", rep.jobs, "with --fleet: hosts read at once (default: the CPUs, at most 4)")
                       ->check(CLI::Range(1, 256));
  auto* rep_spans =
      cq->add_option("--spans", rep.spans, "with --fleet: spans of each recording modeled on their mean rates (default 4)")
          ->check(CLI::Range(1, 100000));
  cq->add_flag("--every-interval", rep.every_interval,
               "with --fleet: model the lines on every interval as report FILE does (slower; default: --spans 4)");
  auto* rep_p99 = cq->add_option("--p99-flag", rep.p99_flag, "with --fleet: flag a fix absent with its probe's p99 above this (default 10us)")
      ->check(kNotEmpty);
  cq->add_option("--xfer-cost", rep.xfer_cost, "ns per cacheline transfer by distance, e.g. smt=15,llc=40,package=80,remote=150")->check(kNotEmpty);

  InfoCmd info;
  auto* ci = app.add_subcommand("info", "a recording's metadata and integrity: frames, samples, time span, damage");
  ci->add_option("file", info.file, "recording file");
  add_format_options(ci, info.out, schema::info);

  ExportCmd exp;
  auto* ce = app.add_subcommand("export", "per-CPU rates and percentiles of every interval as CSV, JSON or a Perfetto trace");
  ce->add_option("file", exp.file, "recording file");
  ce->add_option("--format", exp.format, "csv (default), json (schema schedhot.export/1) or perfetto")
      ->check(CLI::IsMember({"csv", "json", "perfetto"}));
  ce->add_option("-o,--output", exp.output, "output file (default - for stdout); a device or FIFO is written in place");
  ce->add_flag("-f,--force", exp.force, "replace FILE if it exists");
  ce->add_option("--from", exp.from, "window start, time since the recording's start (e.g. 30s)");
  ce->add_option("--to", exp.to, "window end, time since the recording's start");
  ce->add_option("--cpus", exp.cpus, "CPUs to export, e.g. 0-3,8 (default: the recording's online CPUs)");

  DiffCmd diff;
  auto* cd = app.add_subcommand("diff", "two recordings (or two windows of one) compared: percentiles, rates, B/A and a bootstrap verdict");
  cd->add_option("files", diff.files, "A.shot [B.shot]");
  cd->add_option("--a", diff.a, "one file: A's window FROM:TO (e.g. 0:60s)");
  cd->add_option("--b", diff.b, "one file: B's window FROM:TO (e.g. 60s:120s)");
  cd->add_option("--from", diff.from, "two files: window start of both");
  cd->add_option("--to", diff.to, "two files: window end of both");
  add_format_options(cd, diff.out, schema::diff);
  cd->add_option("--by", diff.by, "per-line transfers by cpu, core, llc or node")
      ->check(CLI::IsMember({"cpu", "core", "llc", "node"}));

  TopCmd top;
  auto* ct = app.add_subcommand("top", "live per-CPU rates and percentiles in a top-like UI (plain tables when not a terminal)");
  add_probe_options(ct, top.common);
  ct->add_option("-i,--interval", top.interval, "sample interval, e.g. 1, 250ms (default 1 s; +/- change it)");
  auto* top_n = ct->add_option("-n,--iterations", top.iterations,
                               "plain mode: print this many tables (1 or more), then exit (default: until stopped)");
  ct->add_flag("-b,--batch", top.batch, "plain tables, one per interval, even on a terminal (as top -b; piped output is plain anyway)");
  ct->add_option("--record", top.record, "also record the samples to FILE");
  ct->add_flag("-f,--force", top.force, "with --record: overwrite FILE if it exists");
  ct->add_flag("--no-compress", top.no_compress, "with --record: store samples without zstd");
  ct->add_option("--max-size", top.max_size, "with --record: rotate when FILE would grow past SIZE (e.g. 64M); needs --rotate");
  ct->add_option("--rotate", top.rotate, "with --record: closed files to keep as FILE.1 (newest) .. FILE.N")
      ->check(kCount);
  add_view_options(ct, top.sort, top.cpus, top.xfer_cost);

  ReplayCmd replay;
  auto* cy = app.add_subcommand("replay", "a recording in top's UI: step, jump, play, worst sample");
  cy->add_option("file", replay.file, "recording file");
  cy->add_option("--at", replay.at, "start at this time since the first sample, e.g. 30s (default: the first interval)");
  cy->add_flag("--follow", replay.follow,
               "FILE is still being written: show the newest interval as samples arrive, through rotations (like tail -f)");
  add_view_options(cy, replay.sort, replay.cpus, replay.xfer_cost);

  // The build writes the man page and the shell completions from the definitions above
  // (src/docgen/docgen.h); not a command, so not in --help.
  if (argc >= 2 && std::string(argv[1]) == "--docgen") return schedhot::docgen(app, argc - 2, argv + 2);
  {
    std::string names;
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands({})) {
      known |= argc > 1 && sub->get_name() == argv[1];
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    const std::string first = argc > 1 ? argv[1] : "";
    if (argc < 2) {
      err(fmt::format("a command is needed (one of: {}; see schedhot --help)", names));
      return 2;
    }
    if (first[0] != '-' && !known) {
      err(fmt::format("unknown command '{}' (one of: {}; see schedhot --help)", first, names));
      return 2;
    }
    if (first[0] == '-' && first != "-h" && first != "--help" && first != "--help-all" && first != "--version") {
      err(fmt::format("'{}' before the command: options follow it (schedhot COMMAND [OPTIONS]; commands: {})", first,
                      names));
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // The subcommand's own --help lists its options and their choices.
    std::string help = "schedhot --help";
    for (const CLI::App* sub : app.get_subcommands())
      if (sub->parsed()) help = fmt::format("schedhot {} --help", sub->get_name());
    err(fmt::format("{} (see {})", e.what(), help));
    return 2;
  }
  install_signal_handlers();
  for (const CLI::App* sub : app.get_subcommands())
    if (sub->parsed()) set_usage_command(sub->get_name());  // usage errors after parsing point to its --help
  int rc = 2;
  try {
    if (cp->parsed()) {
      rc = run_probes(probes);
    } else if (cr->parsed()) {
      rec.command_line = join_args(argc, argv);
      rc = run_record(rec);
    } else if (csv->parsed()) {
      srv.command_line = join_args(argc, argv);
      if (srv_per_cpu->count() > 0) {
        try {
          srv.per_cpu = schedhot::parse_per_cpu(schedhot::per_cpu_spec(std::vector<std::string>(argv + 1, argv + argc), per_cpu));
        } catch (const std::invalid_argument& e) {
          return usage_error(e.what());  // "--per-cpu=": CLI11 gave it the flag's default
        }
      }
      rc = run_serve(srv);
    } else if (cq->parsed()) {
      rep.duration_given = rep_d->count() > 0;
      rep.interval_given = rep_i->count() > 0;
      rep.top_given = rep_top->count() > 0;
      rep.sort_given = rep_sort->count() > 0;
      rep.p99_flag_given = rep_p99->count() > 0;
      rep.jobs_given = rep_jobs->count() > 0;
      rep.spans_given = rep_spans->count() > 0;
      rc = run_report(rep);
    } else if (ct->parsed()) {
      top.command_line = join_args(argc, argv);
      top.iterations_given = top_n->count() > 0;
      rc = run_top(top);
    } else if (cy->parsed()) {
      rc = run_replay(replay);
    } else if (ci->parsed()) {
      rc = run_info(info);
    } else if (ce->parsed()) {
      rc = run_export(exp);
    } else if (cd->parsed()) {
      rc = run_diff(diff);
    }
  } catch (const schedhot::UsageError& e) {  // an option that does not fit, found while running
    rc = usage_error(e.what());
  } catch (const schedhot::LiveError& e) {  // a live session that could not start or go on
    rc = print_live_error(e);
  } catch (const std::exception& e) {
    if (!std::ferror(stdout)) err(e.what());  // stdout failing mid-output (fmt throws) is said below
    rc = -1;
  }
  // Output that could not be written is an error, not a silent exit 0 (a closed pipe,
  // the reader gone, stays quiet as with SIGPIPE). A command that returned non-zero has
  // already said what failed: one line, not two.
  if (!stdout_ok()) {
    if (g_stdout_errno != EPIPE && rc <= 0) err(fmt::format("cannot write to stdout: {}", std::strerror(g_stdout_errno)));
    return rc > 0 ? rc : 1;
  }
  if (rc < 0) rc = 1;
  return rc;
}
