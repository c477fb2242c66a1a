// The options several commands share, defined once for CLI11 (src/cli/cmd_*.cpp add them):
// the live probe options, --format/--json, top's and replay's view options, and the
// validators of a non-empty value and of a count.
#pragma once
#include <string>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "tui/app.h"

namespace schedhot::cli {

/// A value that is not empty ("--xfer-cost ''" would silently mean the defaults).
extern const CLI::Validator kNotEmpty;
/// A whole number from 0 to 1,000,000 (rows, files kept), with a short message.
extern const CLI::Validator kCount;

/// --backend, --probes, --system-map, --btf, -v, --gap-state/--no-gap-state and
/// --gap-samples (refused with --no-gap-state) into o: the live commands' probe options.
void add_probe_options(CLI::App* c, CommonProbeOptions& o);

/// --catch RULES and --catch-rate N into o (record, top, serve): tail capture.
void add_catch_options(CLI::App* c, CommonProbeOptions& o);

/// top's and replay's initial sort column and CPU filter, and the stall cost of the l view.
void add_view_options(CLI::App* c, std::string& sort, std::string& cpus, std::string& xfer_cost);

/// --format NAME, its choices the output formats of the command's document (schema) and,
/// when given, of a second kind (report --fleet's), from output/format.h's registry; and the
/// shorthand --json (--format json).
void add_format_options(CLI::App* c, FormatOptions& o, const char* schema, const char* also = nullptr,
                        const char* also_when = "");

/// Checks top's and replay's --sort, the syntax of --cpus and --xfer-cost into out (with
/// the time parser and the locale's UTF-8); prints one usage line and returns false when bad.
bool parse_view_options(const std::string& sort, const std::string& cpus, const std::string& xfer_cost,
                        tui::TuiOptions& out);

}  // namespace schedhot::cli
