#include "cli/commands.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <time.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <memory>
#include <thread>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/interval.h"
#include "model/lines.h"
#include "probe/attach.h"
#include "probe/kernel_facts.h"
#include "sample/sampler.h"
#include "store/recording.h"
#include "store/driver.h"
#include "store/rotate.h"
#include "view/cachelines.h"
#include "view/fleet.h"
#include "view/report.h"
#include "sys/json_text.h"

namespace schedhot::cli {

std::atomic<bool> g_stop{false};
int g_stdout_errno = 0;

bool stdout_ok() {
  if (std::fflush(stdout) == 0 && !std::ferror(stdout)) return true;
  if (!g_stdout_errno) g_stdout_errno = errno ? errno : EIO;
  return false;
}

namespace {

void on_signal(int) { g_stop.store(true); }

/// -d must allow a second sample (0 = until stopped); else one line and false.
/// -d covers at least one interval; or, where until_stopped (record), -d is written as 0.
/// A positive -d that rounds to 0 ns (1e-10) is short, not "until stopped".
/// (check_covers_an_interval, sys/units.h, with its message printed.)
bool covers_an_interval(uint64_t dur_ns, uint64_t iv_ns, const std::string& d, const std::string& i,
                        bool until_stopped) {
  try {
    check_covers_an_interval(dur_ns, iv_ns, d, i, until_stopped);
    return true;
  } catch (const std::invalid_argument& e) {
    usage_error(e.what());
    return false;
  }
}

/// The command main is running ("serve"), for usage_error()'s pointer.
std::string g_usage_command;

}  // namespace

void set_usage_command(const std::string& name) { g_usage_command = name; }

std::string usage_hint() {
  return g_usage_command.empty() ? "(see schedhot --help)" : fmt::format("(see schedhot {} --help)", g_usage_command);
}

int usage_error(const std::string& msg) {
  err(fmt::format("{} {}", msg, usage_hint()));
  return 2;
}

void err(const std::string& msg) {
  // write(2), not stdio: never throws, and a failing stderr (2>/dev/full, a closed pipe)
  // must not stop a recording.
  // One line, whatever the message quotes (a path with a newline, an ESC in an option value).
  const std::string line = "schedhot: " + scrub_controls(msg) + "\n";
  ssize_t n = ::write(STDERR_FILENO, line.data(), line.size());
  (void)n;
}

int print_output(const CommandOutput& res) {
  fmt::print("{}", res.out);
  for (size_t i = 0; i < res.errors.size(); ++i)  // status 2: an option that does not fit; its line points to --help
    err(res.status == 2 && i + 1 == res.errors.size() ? fmt::format("{} {}", res.errors[i], usage_hint()) : res.errors[i]);
  return res.status;
}

int print_live_error(const LiveError& e) {
  if (e.status() == 2) return usage_error(e.what());
  err(e.what());
  return e.status();
}

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: sleeps and reads return early
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

// ---- probes ----------------------------------------------------------------------

int run_probes(const ProbesCmd& o) {
  std::unique_ptr<Attached> a;
  try {
    a = attach_probes(o.common, err);
  } catch (const LiveError& e) {
    return print_live_error(e);
  }
  const auto& st = a->probes->statuses();
  const CoherenceLayout& layout = a->facts.layout;
  const FixesPresent fixes = fixes_present(layout);
  if (o.json) {
    nlohmann::json j = {{"schema", "schedhot.probes/1"},
                        {"kernel", a->host.kernel_release},
                        {"btf", a->facts.btf},
                        {"kprobes", a->facts.kprobes},
                        {"kallsyms", a->facts.kallsyms_error.empty() ? "ok" : a->facts.kallsyms_error},
                        {"layout", layout},
                        {"fixes", fixes_json(fixes)},
                        {"probes", st}};
    fmt::print("{}\n", json_text(j, 2));
    return 0;
  }
  fmt::print("kernel {}  BTF {}  kprobes {}  kallsyms {}\n", a->host.kernel_release,
             !a->facts.btf ? "no" : a->facts.btf_path.empty() ? "yes" : "yes (--btf " + a->facts.btf_path + ")",
             a->facts.kprobes ? "yes" : "no", a->facts.kallsyms_error.empty() ? "ok" : a->facts.kallsyms_error);
  // The hot lines' layout (what the coherence model uses) and the seed-patch fixes it shows.
  const std::string symbols = a->facts.system_map ? a->facts.system_map_path
                              : a->facts.kallsyms_error.empty() ? std::string("/proc/kallsyms")
                                                                : "none (" + a->facts.kallsyms_error + ")";
  fmt::print("layout {}; symbols {}\n", layout_source_text(layout), symbols);
  for (const std::string& n : layout.notes) fmt::print("  {}\n", n);
  fmt::print("{}\n", to_string(fixes));
  for (const ProbeStatus& s : st) {
    if (s.attached) {
      fmt::print("{:<12} attached     {}\n", s.probe, s.proxy ? s.proxy_label : std::string(to_string(s.backend)));
      fmt::print("{:<12}   target {}, {} {}\n", "", s.target, s.proxy ? "tracepoint" : "symbol", symbol_with_via(s.symbol, s.via));
      if (s.proxy) fmt::print("{:<12}   known error: {}\n", "", s.proxy_error);
    } else {
      fmt::print("{:<12} UNAVAILABLE  {}\n", s.probe, s.reason);
      fmt::print("{:<12}   target {}{}\n", "", s.target, s.via.empty() ? "" : ", resolved " + s.via);
    }
    for (auto& amb : s.ambiguous) fmt::print("{:<12}   {}\n", "", describe_ambiguity(amb));
    for (auto& c : s.copies)
      fmt::print("{:<12}   copy {:<34} {}\n", "", c.addr ? fmt::format("{} at {:#x}", c.symbol, c.addr) : c.symbol,
                 c.attached ? fmt::format("attached ({})", to_string(c.backend)) : "unavailable: " + c.error);
    bool same = !s.sites.empty();
    for (auto& site : s.sites) same = same && !site.attached && site.error == s.sites.front().error;
    if (same)
      fmt::print("{:<12}   all {} sites unavailable: {}\n", "", s.sites.size(), s.sites.front().error);
    else
      for (auto& site : s.sites)
        fmt::print("{:<12}   site {:<34} {}\n", "", site.site,
                   site.attached ? fmt::format("attached ({} {})", to_string(site.backend), site.symbol) : "unavailable: " + site.error);
    if (s.attached)
      for (auto& t : s.tried)
        fmt::print("{:<12}   not used: {}{}{}\n", "", t.backend == Backend::none ? "" : to_string(t.backend),
                   t.symbol.empty() ? "" : " " + t.symbol, (t.backend == Backend::none && t.symbol.empty() ? "" : ": ") + t.error);
    for (auto& n : s.notes) fmt::print("{:<12}   note: {}\n", "", n);
  }
  const auto n = std::count_if(st.begin(), st.end(), [](const ProbeStatus& s) { return s.attached; });
  fmt::print("{} of {} probes attached\n", n, st.size());
  return 0;
}

// ---- record ----------------------------------------------------------------------

namespace {

/// Sleeps until CLOCK_REALTIME reaches at_ns (ns since the epoch), in slices of at most
/// 100 ms so a stop (g_stop) is seen; the last slice is an absolute clock_nanosleep.
/// False when stopped before the instant.
bool sleep_until_wall(uint64_t at_ns) {
  for (;;) {
    if (g_stop.load()) return false;
    const uint64_t now = wall_now_ns();
    if (now >= at_ns) return true;
    const uint64_t until = std::min<uint64_t>(at_ns, now + 100'000'000ull);
    timespec ts{static_cast<time_t>(until / 1'000'000'000ull), static_cast<long>(until % 1'000'000'000ull)};
    clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, nullptr);  // EINTR: the loop looks again
  }
}

}  // namespace

int run_record(const RecordCmd& o) {
  uint64_t dur, iv, start_at = 0;
  try {
    dur = parse_duration_ns(o.duration, "-d/--duration");
    iv = parse_interval_ns(o.interval);
    if (!o.start_at.empty()) start_at = parse_start_at_ns(o.start_at, wall_now_ns());
  } catch (const std::exception& e) {
    return usage_error(e.what());
  }
  if (!covers_an_interval(dur, iv, o.duration, o.interval, true)) return 2;
  if (o.output.empty()) {
    return usage_error("record needs -o FILE (or -o - for stdout)");
  }
  RotateOptions rot;
  if (int rc = parse_rotation(o.max_size, o.rotate, o.output, rot)) return rc;
  if (o.output == "-" && isatty(STDOUT_FILENO)) {
    return usage_error("-o -: stdout is a terminal; redirect it to a file or a pipe");
  }
  struct stat st {};
  if (o.output != "-" && !o.force && !rot.max_bytes && stat(o.output.c_str(), &st) == 0) {
    err(fmt::format("{} exists; choose another name or pass --force", o.output));
    return 1;
  }
  // The file is opened now, before attaching and before --start-at: a symlink planted at
  // the path while the probes attach or while waiting for the instant is never followed
  // (the samples are written from the start on; a file created here is removed again if
  // nothing is recorded). A rotating recording opens its FILE after rotating the old one.
  std::unique_ptr<PreparedOutput> prepared;
  if (o.output != "-" && !rot.max_bytes) {
    try {
      prepared = std::make_unique<PreparedOutput>(o.output, o.force);
    } catch (const std::exception& e) {
      err(e.what());
      return 1;
    }
  }
  LiveOptions lo;
  lo.probes = o.common;
  lo.interval_ns = iv;
  lo.duration_ns = dur;
  lo.command_line = o.command_line;
  lo.recording.path = o.output;
  lo.recording.writer.compress = !o.no_compress;
  lo.recording.writer.overwrite = o.force;
  lo.recording.writer.prepared = prepared.get();
  lo.recording.rotate = rot;
  lo.stop = &g_stop;  // SIGINT/SIGTERM: a final sample, then the end
  lo.warn = err;
  std::unique_ptr<LiveSession> sess;
  try {
    sess = std::make_unique<LiveSession>(std::move(lo));
  } catch (const LiveError& e) {
    return print_live_error(e);
  }
  if (start_at) {  // probes attached first: attaching takes no time of the window
    const uint64_t now = wall_now_ns();
    if (now > start_at) {
      err(fmt::format("--start-at {}: attaching the probes took until {:.3f} s past it; starting now", o.start_at,
                      (now - start_at) / 1e9));
    } else {
      if (!o.quiet) err(fmt::format("waiting {:.3f} s for --start-at {} ({})", (start_at - now) / 1e9, o.start_at,
                                    format_utc_time(start_at)));
      if (!sleep_until_wall(start_at)) {
        err("stopped before --start-at; nothing recorded");
        return 130;
      }
    }
  }
  Sample s;
  if (!sess->next(s)) {  // the baseline; the file is created with it
    err(sess->error().value_or("no sample"));
    return 1;
  }
  if (!o.quiet) {
    const auto& statuses = sess->statuses();
    const size_t proxies = sess->proxy_count();
    err(fmt::format("recording {} of {} probes{} to {} {} every {:.3f} s ({})", sess->attached_count(), statuses.size(),
                    proxies ? fmt::format(" ({} through tracepoint proxies: schedhot probes says what each counts)", proxies)
                            : std::string(),
                    o.output,
                    dur ? fmt::format("for {:.1f} s", dur / 1e9) : std::string("until stopped"), iv / 1e9,
                    dur ? "Ctrl-C stops early" : "Ctrl-C or SIGTERM stops it"));
    for (auto& s2 : statuses)
      if (!s2.attached) err(fmt::format("  {} unavailable: {}", s2.probe, s2.reason));
    if (rot.max_bytes)
      err(fmt::format("  files of at most {} bytes; closed ones kept as {}.1 .. {}.{}", rot.max_bytes, o.output, o.output,
                      rot.keep));
  }
  while (sess->next(s)) {
  }
  std::string wrote;
  try {
    wrote = sess->close(true);  // the stop's final sample is taken by next(); this closes the file
  } catch (const LiveError& e) {
    return print_live_error(e);
  }
  if (!o.quiet)
    err(wrote + (g_stop.load() ? " (stopped by signal)" : ""));
  return 0;
}

// ---- report ----------------------------------------------------------------------

namespace {

/// report over src (reader: src when it is a recording): view/report.h report_command(),
/// printed.
int report_from(SampleSource& src, const ReportCmd& o, RecordingReader* reader) {
  ReportRequest req;
  if (int rc = parse_window(o.from, o.to, req.opts.from_s, req.opts.to_s)) return rc;
  req.opts.all_cpus = o.all_cpus;
  req.opts.top = o.top;
  req.opts.sort = o.sort;
  if (!o.xfer_cost.empty()) {
    try {
      req.opts.xfer_cost = parse_xfer_cost(o.xfer_cost);
    } catch (const std::invalid_argument& e) {
      return usage_error(e.what());
    }
  }
  req.file = o.file;
  req.from = o.from;
  req.to = o.to;
  req.json = o.json;
  req.stop = &g_stop;
  return print_output(report_command(src, reader, req));
}

}  // namespace

namespace {

/// report --fleet DIR: view/fleet.h fleet_command(), printed.
int report_fleet(const ReportCmd& o) {
  if (!o.file.empty() || o.live || o.all_cpus || o.sort_given || !o.from.empty() || !o.to.empty() || o.duration_given ||
      o.interval_given) {
    return usage_error("--fleet DIR reads every host's whole recording: no FILE, --live, --from/--to, --sort or --all-cpus with it");
  }
  const CommonProbeOptions& c = o.common;
  if (c.backend != "auto" || !c.probes.empty() || !c.system_map.empty() || !c.btf.empty() || c.verbose) {
    return usage_error("--fleet DIR reads recordings: --backend, --probes, --system-map, --btf and -v are for --live");
  }
  if (o.json && o.csv) {
    return usage_error("--json and --csv: pick one");
  }
  FleetRequest req;
  req.dir = o.fleet;
  req.every_interval = o.every_interval;
  if (o.spans_given && o.every_interval) {
    return usage_error("--spans and --every-interval: pick one");
  }
  req.spans = o.spans;
  req.jobs = o.jobs ? o.jobs : std::clamp(std::thread::hardware_concurrency(), 1u, 4u);
  req.format = o.json ? FleetFormat::json : o.csv ? FleetFormat::csv : FleetFormat::text;
  req.top = o.top_given ? o.top : -1;
  try {
    req.p99_flag_ns = static_cast<double>(parse_duration_ns(o.p99_flag, "--p99-flag"));
    if (!o.xfer_cost.empty()) req.xfer_cost = parse_xfer_cost(o.xfer_cost);
  } catch (const std::exception& e) {
    return usage_error(e.what());
  }
  req.stop = &g_stop;
  return print_output(fleet_command(req));
}

}  // namespace

int run_report(const ReportCmd& o) {
  if (!o.fleet.empty()) return report_fleet(o);
  if (o.csv) {
    return usage_error("--csv is for --fleet (a recording's CSV: schedhot export --format csv)");
  }
  if (o.p99_flag_given || o.every_interval || o.jobs_given || o.spans_given) {
    return usage_error(fmt::format("{} is for --fleet", o.p99_flag_given  ? "--p99-flag"
                                         : o.every_interval ? "--every-interval"
                                         : o.jobs_given     ? "--jobs"
                                                            : "--spans"));
  }
  if (report_sort_key(o.sort).empty()) {
    std::string names;
    for (auto& c : cpu_columns())
      names += fmt::format("{}{}", names.empty() ? "" : ", ", c.header);
    return usage_error(fmt::format("--sort: no column '{}' (a probe name or one of: cpu, {})", o.sort, names));
  }
  if (o.live) {
    if (!o.file.empty()) {
      return usage_error("report: give a FILE or --live, not both");
    }
    uint64_t dur, iv;
    try {
      dur = parse_duration_ns(o.duration, "-d/--duration");
      iv = parse_interval_ns(o.interval);
    } catch (const std::exception& e) {
      return usage_error(e.what());
    }
    if (!covers_an_interval(dur, iv, o.duration, o.interval, false)) return 2;
    LiveOptions lo;
    lo.probes = o.common;
    lo.interval_ns = iv;
    lo.duration_ns = dur;
    lo.stop = &g_stop;  // Ctrl-C: reported up to the stop
    lo.warn = err;
    try {
      LiveSession sess(std::move(lo));
      return report_from(sess, o, nullptr);
    } catch (const LiveError& e) {
      return print_live_error(e);
    }
  }
  if (o.file.empty()) {
    return usage_error("report needs a recording FILE (or --live)");
  }
  if (o.duration_given || o.interval_given) {
    return usage_error("report FILE: -d/-i apply to --live only (a recording has its own; --from/--to pick a window)");
  }
  std::unique_ptr<RecordingReader> r;
  try {
    r = RecordingReader::open(o.file);
  } catch (const std::exception& e) {
    err(e.what());
    return 1;
  }
  return report_from(*r, o, r.get());
}

}  // namespace schedhot::cli
