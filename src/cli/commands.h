// The subcommands behind src/cli/main.cpp. Each returns the process exit status:
// 0 success, 1 runtime failure (one-line message on stderr), 2 bad usage.
#pragma once
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "live/session.h"
#include "probe/attach.h"
#include "sample/sample.h"
#include "probe/kernel_facts.h"
#include "store/rotate.h"
#include "sys/console.h"
#include "sys/host.h"
#include "sys/units.h"
#include "output/metrics.h"

namespace schedhot {
struct CommandOutput;
}

namespace schedhot::cli {

/// Set by SIGINT/SIGTERM; every loop checks it.
extern std::atomic<bool> g_stop;
void install_signal_handlers();

// Option values (sys/units.h): durations, intervals, sizes; std::invalid_argument on bad input.
using schedhot::parse_duration_ns;
using schedhot::parse_interval_ns;
using schedhot::parse_size_bytes;

/// The probe options of the live commands (live/session.h).
using CommonProbeOptions = LiveProbeOptions;

/// Prints "schedhot: MSG" on stderr (sys/console.h say()).
void err(const std::string& msg);

/// Names the command being run ("serve"; main sets it after parsing), for usage_hint().
void set_usage_command(const std::string& name);
/// "(see schedhot COMMAND --help)", or "(see schedhot --help)" before a command is known.
std::string usage_hint();
/// A usage error: prints "schedhot: MSG (see schedhot COMMAND --help)", as CLI11's parse
/// errors end, and returns 2 (the exit status of a usage error).
int usage_error(const std::string& msg);

/// Prints what a command's entry point below src/cli returned (command/command.h
/// CommandOutput): its stdout text, then each error with err(). Returns its exit status.
int print_output(const CommandOutput& res);

using schedhot::g_stdout_errno;
using schedhot::stdout_ok;

/// Prints a live session's error (live/session.h): a usage error (status 2) with its
/// --help pointer, else the line. Returns its exit status.
int print_live_error(const LiveError& e);

/// --format NAME (an output format of the command's document, output/format.h) and its
/// shorthands --json and, for report --fleet, --csv, as given.
struct FormatOptions {
  std::string format;  ///< --format ("" when not given)
  bool json = false;   ///< --json: --format json
  bool csv = false;    ///< --csv: --format csv
  /// The format they name ("text" when none). Throws UsageError ("--json and --format
  /// markdown: pick one") when two of them name different formats.
  std::string chosen() const;
};

struct ProbesCmd {
  CommonProbeOptions common;
  FormatOptions out;
};
int run_probes(const ProbesCmd& o);

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
  std::string start_at;    ///< --start-at EPOCH|@ALIGN: the baseline sample's wall-clock instant ("" = at once)
  std::string command_line;
};
int run_record(const RecordCmd& o);

/// `schedhot serve` (cmd_serve.cpp): metrics for Prometheus over HTTP and/or a textfile.
struct ServeCmd {
  CommonProbeOptions common;
  std::string listen = "127.0.0.1:9870";  ///< ADDRESS:PORT, [IPv6]:PORT or :PORT ("" = no HTTP)
  std::string interval = "1";
  std::string textfile;                    ///< --textfile DIR ("" = none)
  PerCpu per_cpu;                          ///< --per-cpu[=LIST] (output/metrics.h)
  int max_connections = 2048;              ///< open connections at most (libmicrohttpd's limit); head-pending ones evicted oldest first past 7/8, or a quarter per address
  int timeout_ms = 2000;                   ///< ms for the request head; idle timeout after (rounded up to s)
  std::string web_config;                  ///< --web-config FILE: TLS and basic auth (sys/web_config.h; "" = none)
  bool quiet = false;
  std::string command_line;
};
int run_serve(const ServeCmd& o);

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
};
int run_report(const ReportCmd& o);

/// schedhot top (src/cli/cmd_tui.cpp): the live per-CPU UI, or a plain table per
/// interval when stdout is not a full-screen terminal.
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
int run_top(const TopCmd& o);

/// schedhot replay (src/cli/cmd_tui.cpp): a recording in top's UI.
struct ReplayCmd {
  std::string file;
  std::string at;            ///< start time since the first sample ("" = first interval)
  std::string sort = "idle";
  std::string cpus;
  std::string xfer_cost;     ///< --xfer-cost, as top's
  bool follow = false;       ///< keep up with a recording being written (tail -f)
};
int run_replay(const ReplayCmd& o);

// Recording files (cmd_store.cpp).

/// `schedhot info FILE [--json | --format text|json]`: metadata and integrity summary (schema schedhot.info/1).
struct InfoCmd {
  std::string file;
  FormatOptions out;
};
int run_info(const InfoCmd& o);

/// `schedhot export FILE --format csv|json|perfetto [-o OUT] [--from T --to T] [--cpus LIST]`.
struct ExportCmd {
  std::string file;
  std::string format = "csv";
  std::string output = "-";   ///< "-" = stdout
  std::string from, to;       ///< window, time since the recording's first sample
  std::string cpus;           ///< CPU list ("0-3,8"), "" = the recording's online CPUs
  bool force = false;         ///< replace an existing regular file
};
int run_export(const ExportCmd& o);

/// `schedhot diff A.shot [B.shot] [--a FROM:TO] [--b FROM:TO] [--from T] [--to T]
/// [--json | --format text|markdown|patch|json]`. One file: --a and --b are two windows
/// of it. Exit 0 no significant change, 3 significant, 1 runtime, 2 usage.
struct DiffCmd {
  std::vector<std::string> files;  ///< one or two recordings
  std::string a, b;                ///< windows "FROM:TO" (either part may be empty)
  std::string from, to;            ///< window of both sides (two files)
  FormatOptions out;
  std::string by;                  ///< --by cpu|core|llc|node ("": lines in total only)
};
int run_diff(const DiffCmd& o);

/// Parses a --from/--to window (times since the first sample) to seconds, -1 where not
/// given. Returns 0, or 2 after a one-line usage error (bad time, --to not after --from).
/// side (diff's "--a"/"--b") names the option in errors as "--a FROM"/"--a TO".
int parse_window(const std::string& from, const std::string& to, double& from_s, double& to_s,
                 const char* side = nullptr);

/// Checks --max-size/--rotate (record's, and top's with --record FILE) for output FILE
/// and fills the rotation settings (max_bytes 0: none). Returns 0, or 2 after printing a
/// one-line usage error.
int parse_rotation(const std::string& max_size, int rotate, const std::string& output, RotateOptions& out);

}  // namespace schedhot::cli
