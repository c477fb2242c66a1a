// Subcommands that work on recording files: info and export (options parsed here, run by
// command/info.h info_command() and command/export.h export_command()), and the --from/--to and
// record's rotation options. Exit status as in commands.h: 0 success, 1 runtime failure,
// 2 bad usage; every failure is one line on stderr.
#include <iostream>
#include <stdexcept>

#include <fmt/format.h>

#include "cli/commands.h"
#include "sys/cpulist.h"
#include "command/diff.h"
#include "output/diff_text.h"
#include "command/export.h"
#include "analysis/info.h"
#include "output/info_text.h"
#include "command/info.h"
#include "command/report.h"
#include "output/report_text.h"

namespace schedhot::cli {

int parse_window(const std::string& from, const std::string& to, double& from_s, double& to_s, const char* side) {
  from_s = to_s = -1;
  const std::string from_name = side ? fmt::format("{} FROM", side) : "--from";
  const std::string to_name = side ? fmt::format("{} TO", side) : "--to";
  try {
    if (!from.empty()) from_s = static_cast<double>(parse_duration_ns(from, from_name.c_str())) / 1e9;
    if (!to.empty()) to_s = static_cast<double>(parse_duration_ns(to, to_name.c_str())) / 1e9;
  } catch (const std::exception& e) {
    return usage_error(e.what());
  }
  if (from_s >= 0 && to_s >= 0 && to_s <= from_s) {
    return usage_error(fmt::format("{} must be later than {}", to_name, from_name));
  }
  return 0;
}

int parse_rotation(const std::string& max_size, int rotate, const std::string& output, RotateOptions& out) {
  out = RotateOptions{};
  if (max_size.empty()) {
    if (rotate >= 0) {
      return usage_error("--rotate needs --max-size SIZE");
    }
    return 0;
  }
  if (rotate < 0) {
    return usage_error("--max-size needs --rotate N (closed files to keep as FILE.1 .. FILE.N; 0 keeps none)");
  }
  if (rotate > 1000) {
    return usage_error("--rotate: at most 1000 closed files");
  }
  if (output == "-") {
    return usage_error("--max-size: rotation needs -o FILE, not stdout");
  }
  try {
    out.max_bytes = parse_size_bytes(max_size, "--max-size");
  } catch (const std::exception& e) {
    return usage_error(e.what());
  }
  if (out.max_bytes < (64u << 10)) {
    return usage_error(fmt::format("--max-size {}: at least 64K (a file holds the metadata and at least one sample)", max_size));
  }
  out.keep = static_cast<unsigned>(rotate);
  return 0;
}

int run_info(const InfoCmd& o) {
  if (o.file.empty()) {
    return usage_error("info needs a recording FILE");
  }
  InfoRequest req;
  req.file = o.file;
  req.format = o.out.chosen();
  req.stop = &g_stop;
  return print_output(info_command(req));
}

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
    if (!o.cpus.empty()) req.cpus = parse_cpulist(o.cpus);
  } catch (const std::exception& e) {
    return usage_error(e.what());
  }
  if (int rc = parse_window(o.from, o.to, req.opts.from_s, req.opts.to_s)) return rc;
  req.opts.stop = &g_stop;
  req.file = o.file;
  req.output = o.output;
  req.force = o.force;
  req.from = o.from;
  req.to = o.to;
  return print_output(export_command(req, std::cout));
}

namespace {

/// "FROM:TO" (either side may be empty) into side's window; 2 after a usage error.
int parse_side_window(const char* opt, const std::string& w, DiffSide& side) {
  const auto colon = w.find(':');
  if (colon == std::string::npos) {
    return usage_error(fmt::format("{} {}: a window FROM:TO, e.g. 0:60s or 60s: (either part may be empty)", opt, w));
  }
  side.window = w;
  return parse_window(w.substr(0, colon), w.substr(colon + 1), side.from_s, side.to_s, opt);
}

}  // namespace

int run_diff(const DiffCmd& o) {
  if (o.files.empty() || o.files.size() > 2) {
    return usage_error("diff needs A.shot B.shot, or one file with --a FROM:TO --b FROM:TO");
  }
  const std::string format = o.out.chosen();
  DiffRequest req;
  try {
    if (!o.by.empty()) req.by = parse_diff_by(o.by);
  } catch (const std::exception& e) {
    return usage_error(e.what());
  }
  req.a.file = o.files[0];
  req.b.file = o.files.size() == 2 ? o.files[1] : o.files[0];
  if (o.files.size() == 1 && (o.a.empty() || o.b.empty())) {
    return usage_error("diff of one file needs two windows: --a FROM:TO --b FROM:TO");
  }
  if (o.files.size() == 2 && (!o.a.empty() || !o.b.empty())) {
    return usage_error("--a/--b pick two windows of one file; with two files, --from/--to is the window of both");
  }
  if ((!o.from.empty() || !o.to.empty()) && (!o.a.empty() || !o.b.empty())) {
    return usage_error("--from/--to apply to both files; with --a/--b give each side its window");
  }
  if (!o.from.empty() || !o.to.empty()) {
    if (int rc = parse_window(o.from, o.to, req.a.from_s, req.a.to_s)) return rc;
    req.a.window = fmt::format("{}:{}", o.from, o.to);
    req.b.from_s = req.a.from_s;
    req.b.to_s = req.a.to_s;
    req.b.window = req.a.window;
  }
  if (!o.a.empty())
    if (int rc = parse_side_window("--a", o.a, req.a)) return rc;
  if (!o.b.empty())
    if (int rc = parse_side_window("--b", o.b, req.b)) return rc;
  req.stop = &g_stop;
  return print_output(diff_command(req, format));
}

}  // namespace schedhot::cli
