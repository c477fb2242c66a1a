// `schedhot export`'s entry point: a recording's window streamed by output/export.h to
// stdout or to a file replaced whole.
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "command/command.h"
#include "output/export.h"

namespace schedhot {

/// One `schedhot export`, parsed.
struct ExportRequest {
  /// format, from_s/to_s and stop as parsed; export_command() sets t0_mono_ns and cpus.
  ExportOptions opts;
  std::vector<int> cpus;   ///< --cpus; empty: the CPUs online at some point of the window
  std::string file;        ///< the recording
  std::string output;      ///< -o: "-" for stdout, else a path (not empty: the CLI checks)
  bool force = false;      ///< --force: an existing regular file may be replaced
  std::string from;        ///< --from as given (for messages)
  std::string to;          ///< --to as given (for messages)
  /// --lines: "" (not given: the CSV's per-CPU line columns unless they would be more than
  /// kCsvLineCellsMax cells an interval, then left out with a note in errors and status 0),
  /// "cpu" (always) or "none" (never).
  std::string lines;
};

/// `schedhot export`: opens req.file, reads it through a WindowedCursor
/// (store/window.h) and streams export_samples() to stdout_stream (output "-") or to
/// req.output: a device or FIFO is written in place, anything else through a temporary
/// file renamed over the destination at the end (through dangling symlinks to their last
/// target; an existing file only with force, keeping its mode and owner), so a failed
/// export leaves nothing half-written. Errors are values, one line each: status 2 for an
/// option that does not fit the recording or the destination (a CPU not in it or never
/// online in the window, -o a directory or the recording itself), 1 for a runtime failure
/// (cannot open or write, no samples, nothing after --from, fewer than two samples in the
/// window, the destination exists without force; a reader of stdout leaving is 1 without
/// a message), 130 interrupted. A damaged file's export succeeds with one message about it.
CommandOutput export_command(const ExportRequest& req, std::ostream& stdout_stream);

}  // namespace schedhot
