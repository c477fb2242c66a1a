// What the commands of src/cli share once their options are parsed (each command is its own
// cli/cmd_<name>.cpp, registered through cli/registry.h): the stop flag, the error printers,
// the --format choice and the checks of options that several commands take. A command's call
// returns the process exit status: 0 success, 1 runtime failure (one-line message on
// stderr), 2 bad usage.
#pragma once
#include <atomic>
#include <string>

#include "live/session.h"
#include "store/rotate.h"
#include "sys/console.h"
#include "sys/units.h"

namespace schedhot {
struct CommandOutput;
}

namespace schedhot::cli {

/// Set by SIGINT/SIGTERM; every loop checks it.
extern std::atomic<bool> g_stop;
/// SIGINT, SIGTERM and SIGHUP set g_stop (no SA_RESTART); SIGPIPE is ignored.
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

/// Parses a --from/--to window (times since the first sample) to seconds, -1 where not
/// given. Returns 0, or 2 after a one-line usage error (bad time, --to not after --from).
/// side (diff's "--a"/"--b") names the option in errors as "--a FROM"/"--a TO".
int parse_window(const std::string& from, const std::string& to, double& from_s, double& to_s,
                 const char* side = nullptr);

/// Checks --max-size/--rotate (record's, and top's with --record FILE) for output FILE
/// and fills the rotation settings (max_bytes 0: none). Returns 0, or 2 after printing a
/// one-line usage error.
int parse_rotation(const std::string& max_size, int rotate, const std::string& output, RotateOptions& out);

/// -d must allow a second sample (0 = until stopped); else one line and false.
/// -d covers at least one interval; or, where until_stopped (record), -d is written as 0.
/// A positive -d that rounds to 0 ns (1e-10) is short, not "until stopped".
/// (check_covers_an_interval, sys/units.h, with its message printed.)
bool covers_an_interval(uint64_t dur_ns, uint64_t iv_ns, const std::string& d, const std::string& i,
                        bool until_stopped);

}  // namespace schedhot::cli
