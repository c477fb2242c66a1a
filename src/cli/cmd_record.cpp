// `schedhot record`: the options checked, then live/record.h's record().
#include <unistd.h>

#include <memory>

#include "cli/commands.h"
#include "cli/options.h"
#include "cli/registry.h"
#include "live/record.h"
#include "sample/sampler.h"

namespace schedhot::cli {

namespace {

struct RecordCmd {
  CommonProbeOptions common;
  std::string duration = "10";
  std::string interval = "1";
  std::string output;
  bool force = false;
  bool no_compress = false;
  bool quiet = false;
  std::string max_size;    ///< --max-size: rotate when a file would grow past it ("" = no limit)
  int rotate = -1;         ///< --rotate N: closed files kept, FILE.1..FILE.N (-1 = not given)
  std::string flight;      ///< --flight DURATION: -o is a DIR of [firing - D, firing + D] recordings ("" = off)
  int flight_max = 100;    ///< --flight-max N
  std::string flight_mem;  ///< --flight-mem SIZE ("" = 1 GiB)
  bool duration_given = false;
  std::string start_at;    ///< --start-at EPOCH|@ALIGN: the baseline sample's wall-clock instant ("" = at once)
  std::string command_line;
};

int run_record(const RecordCmd& o) {
  RecordRequest r;
  try {
    r.duration_ns = parse_duration_ns(o.duration, "-d/--duration");
    r.interval_ns = parse_interval_ns(o.interval);
    if (!o.start_at.empty()) r.start_at_ns = parse_start_at_ns(o.start_at, wall_now_ns());
  } catch (const std::exception& e) {
    return usage_error(e.what());
  }
  if (!o.flight.empty()) {
    try {
      r.flight_ns = parse_duration_ns(o.flight, "--flight");
    } catch (const std::exception& e) {
      return usage_error(e.what());
    }
    if (!r.flight_ns) return usage_error("--flight needs a duration above 0, e.g. 30s");
    if (o.common.catch_rules.empty()) return usage_error("--flight needs --catch RULES: the rules whose firings it keeps");
    if (o.output.empty() || o.output == "-") return usage_error("--flight needs -o DIR, a directory (not stdout)");
    if (!o.max_size.empty() || o.rotate >= 0) return usage_error("--flight writes its own files: no --max-size or --rotate");
    if (o.force) return usage_error("--flight never replaces a file: no --force");
    if (!o.duration_given) r.duration_ns = 0;  // a flight recorder runs until stopped
    r.flight_max = unsigned(o.flight_max);
    if (!o.flight_mem.empty()) {
      try {
        r.flight_mem = parse_size_bytes(o.flight_mem, "--flight-mem");
      } catch (const std::exception& e) {
        return usage_error(e.what());
      }
      if (r.flight_mem < (1u << 20)) return usage_error("--flight-mem " + o.flight_mem + " is below 1M");
    }
  }
  if (!r.flight_ns && o.flight_max != 100) return usage_error("--flight-max needs --flight");
  if (!r.flight_ns && !o.flight_mem.empty()) return usage_error("--flight-mem needs --flight");
  const std::string dur_text = r.flight_ns && !o.duration_given ? "0" : o.duration;
  if (!covers_an_interval(r.duration_ns, r.interval_ns, dur_text, o.interval, true)) return 2;
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

CommandCall define(CLI::App& c) {
  auto o = std::make_shared<RecordCmd>();
  RecordCmd& rec = *o;
  add_probe_options(&c, rec.common);
  add_catch_options(&c, rec.common);
  CLI::Option* dur =
      c.add_option("-d,--duration", rec.duration, "how long, e.g. 10, 2.5s, 5m (default 10 s; with --flight until stopped); 0 = until stopped");
  c.add_option("-i,--interval", rec.interval, "sample interval, e.g. 1, 250ms (default 1 s)");
  // FILE arguments are checked by the commands, not marked required: CLI11 reports a
  // missing required argument before an unknown flag, which hid the real mistake.
  c.add_option("-o,--output", rec.output, "recording file, - for stdout (required)");
  c.add_flag("-f,--force", rec.force, "overwrite FILE if it exists");
  c.add_flag("--no-compress", rec.no_compress, "store samples without zstd");
  c.add_flag("--exact", rec.common.exact,
             "also record every modeled cacheline access (per-CPU perf buffers) for exact transfer counts");
  c.add_flag("-q,--quiet", rec.quiet, "no progress messages");
  c.add_option("--start-at", rec.start_at,
               "start at this wall-clock instant: EPOCH seconds (e.g. 1764650000) or @ALIGN, the next multiple "
               "of ALIGN since the epoch (e.g. @60); probes attach first");
  c.add_option("--max-size", rec.max_size, "rotate when FILE would grow past SIZE (e.g. 64M); needs --rotate");
  c.add_option("--rotate", rec.rotate, "closed files to keep as FILE.1 (newest) .. FILE.N; the oldest is dropped")
      ->check(kCount);
  c.add_option("--flight", rec.flight,
               "flight recorder: hold the last DURATION of samples and write DIR/<UTC time>-<probe>.shot covering "
               "[firing - DURATION, firing + DURATION] each time a --catch rule fires; -o names the DIR");
  c.add_option("--flight-max", rec.flight_max, "--flight: files in total, at most (default 100; then the run goes on "
                                               "without writing)")
      ->check(CLI::Range(1, 1'000'000));
  c.add_option("--flight-mem", rec.flight_mem,
               "--flight: memory for the held samples, at most (e.g. 512M; default 1G); past it the oldest go and "
               "a file starts less than DURATION before its firing");
  return [o, dur](const CommandLine& cl) {
    o->command_line = cl.text();
    o->duration_given = dur->count() > 0;
    return run_record(*o);
  };
}

const RegisterCommand record_cmd{{"record", "record per-CPU samples to a file", 20, define}};

}  // namespace

}  // namespace schedhot::cli
