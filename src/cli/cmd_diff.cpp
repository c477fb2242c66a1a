// `schedhot diff`: the options checked, then command/diff.h's diff_command().
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "cli/registry.h"
#include "command/diff.h"
#include "output/format.h"

namespace schedhot::cli {

namespace {

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

/// "FROM:TO" (either side may be empty) into side's window; 2 after a usage error.
int parse_side_window(const char* opt, const std::string& w, DiffSide& side) {
  const auto colon = w.find(':');
  if (colon == std::string::npos) {
    return usage_error(fmt::format("{} {}: a window FROM:TO, e.g. 0:60s or 60s: (either part may be empty)", opt, w));
  }
  side.window = w;
  return parse_window(w.substr(0, colon), w.substr(colon + 1), side.from_s, side.to_s, opt);
}

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

CommandCall define(CLI::App& c) {
  auto o = std::make_shared<DiffCmd>();
  DiffCmd& diff = *o;
  c.add_option("files", diff.files, "A.shot [B.shot]");
  c.add_option("--a", diff.a, "one file: A's window FROM:TO (e.g. 0:60s)");
  c.add_option("--b", diff.b, "one file: B's window FROM:TO (e.g. 60s:120s)");
  c.add_option("--from", diff.from, "two files: window start of both");
  c.add_option("--to", diff.to, "two files: window end of both");
  add_format_options(&c, diff.out, schema::diff);
  c.add_option("--by", diff.by, "per-line transfers by cpu, core, llc or node")
      ->check(CLI::IsMember({"cpu", "core", "llc", "node"}));
  return [o](const CommandLine&) { return run_diff(*o); };
}

const RegisterCommand diff_cmd{
    {"diff", "two recordings (or two windows of one) compared: percentiles, rates, B/A and a bootstrap verdict", 70, define}};

}  // namespace

}  // namespace schedhot::cli
