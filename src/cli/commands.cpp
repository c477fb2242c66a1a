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
#include "probe/learn_addr.h"
#include "sample/probe_reader.h"
#include "sample/sampler.h"
#include "store/recording.h"
#include "store/driver.h"
#include "store/rotate.h"
#include "sys/privileges.h"
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

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> v;
  size_t pos = 0;
  while (pos <= s.size() && !s.empty()) {
    size_t c = s.find(',', pos);
    std::string item = s.substr(pos, c == std::string::npos ? std::string::npos : c - pos);
    if (!item.empty()) v.push_back(item);
    if (c == std::string::npos) break;
    pos = c + 1;
  }
  return v;
}

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

std::unique_ptr<Attached> attach(const CommonProbeOptions& o, int& status) {
  status = 1;
  if (std::string m = missing_privileges(); !m.empty()) {
    err(m);
    return nullptr;
  }
  AttachOptions ao;
  try {
    ao.pref = parse_backend_pref(o.backend);
  } catch (const std::exception& e) {
    usage_error(e.what());
    status = 2;
    return nullptr;
  }
  ao.only = split_commas(o.probes);
  ao.exact = o.exact;
  ao.gaps = o.gap_state;
  ao.gap_samples_per_s = o.gap_samples;
  if (!o.probes.empty() && ao.only.empty()) {
    usage_error(fmt::format("--probes '{}' names no probe (leave it out for all)", o.probes));
    status = 2;
    return nullptr;
  }
  if (ao.only == std::vector<std::string>{"all"}) ao.only.clear();  // a unit's default (/etc/default/schedhot)
  for (auto& n : ao.only)
    if (!find_probe(n)) {
      std::string all;
      for (auto& p : probe_catalog()) all += (all.empty() ? "" : ", ") + p.name;
      usage_error(fmt::format("--probes: no probe named '{}' (probes: {})", n, all));
      status = 2;
      return nullptr;
    }
  ao.verbose = o.verbose;
  if (std::string w = raise_memlock(); !w.empty() && o.verbose) err(w);
  auto a = std::make_unique<Attached>();
  try {
    a->facts = read_kernel_facts(o.system_map, o.btf);
    a->host = read_host_info();
    // The addresses of cpupri's separate allocations (probe/learn_addr.h): a note either way.
    if (o.btf.empty())
      learn_addresses(a->facts.layout, a->host.online, a->host.possible_cpus);
    else
      a->facts.layout.notes.push_back("addresses not learned: the layout is from --btf " + o.btf +
                                      ", not the running kernel's; separate allocations stay on an assumption");
    a->probes = std::make_unique<ProbeSet>(a->facts, a->host, ao);
  } catch (const std::exception& e) {
    err(e.what());
    return nullptr;
  }
  status = 0;
  return a;
}

Meta live_meta(const Attached& a, uint64_t interval_ns, const std::string& command_line) {
  Meta m = schedhot::live_meta(a.host, a.probes->ncpus(), a.probes->statuses(), interval_ns, command_line);
  m.layout = a.facts.layout;
  // The gap state's routes, before the baseline sample: from the lines this Meta models.
  if (a.probes->gaps()) {
    const GapRoutes r = gap_routes(LinePlan(m, *m.layout));
    a.probes->set_gap_routes(r.routes);
    m.gap_lines = r.lines;
    m.gap_samples_per_s = a.probes->gap_samples_per_s();
  }
  return m;
}

namespace {

int count_attached(const std::vector<ProbeStatus>& st) {
  int n = 0;
  for (auto& s : st) n += s.attached;
  return n;
}

}  // namespace

std::unique_ptr<Attached> attach_some(const CommonProbeOptions& o, int& status) {
  auto a = attach(o, status);
  if (a && count_attached(a->probes->statuses()) == 0) {
    const std::string cause = common_failure(a->probes->statuses());
    err(cause.empty() ? "no probe could attach; `schedhot probes` says why"
                      : fmt::format("no probe could attach: {} (`schedhot probes` says more)", cause));
    status = 1;
    return nullptr;
  }
  return a;
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
  int status = 0;
  auto a = attach(o.common, status);
  if (!a) return status;
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
  int n = count_attached(st);
  fmt::print("{} of {} probes attached\n", n, st.size());
  return 0;
}

// ---- record ----------------------------------------------------------------------

namespace {

uint64_t wall_now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

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
  int status = 0;
  auto a = attach_some(o.common, status);
  if (!a) return status;
  const auto& statuses = a->probes->statuses();
  int n = count_attached(statuses);
  ProbeSetReader reader(*a->probes);
  LiveSource src(reader, live_meta(*a, iv, o.command_line), iv, dur, &g_stop);  // SIGINT/SIGTERM: a final sample, then the end
  WriterOptions wo;
  wo.compress = !o.no_compress;
  wo.overwrite = o.force;
  wo.prepared = prepared.get();
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
  RecordingDriver rec(src, RecordingTarget{o.output, wo, rot, a->probes->exact()});
  Sample s;
  if (!rec.next(s)) {  // the baseline; the file is created with it
    err(rec.error().value_or("no sample"));
    return 1;
  }
  if (!o.quiet) {
    int proxies = 0;
    for (auto& s2 : statuses) proxies += s2.attached && s2.proxy;
    err(fmt::format("recording {} of {} probes{} to {} {} every {:.3f} s ({})", n, statuses.size(),
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
  while (rec.next(s)) {
  }
  if (!rec.stop(true)) {  // the stop's final sample is taken by next(); this closes the file
    err(*rec.error());
    return 1;
  }
  if (!o.quiet)
    err(rec.summary() + (g_stop.load() ? " (stopped by signal)" : ""));
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
    int status = 0;
    auto a = attach_some(o.common, status);
    if (!a) return status;
    Meta meta = live_meta(*a, iv, "");
    ProbeSetReader reader(*a->probes);
    LiveSource src(reader, meta, iv, dur, &g_stop);  // Ctrl-C: reported up to the stop
    return report_from(src, o, nullptr);
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
