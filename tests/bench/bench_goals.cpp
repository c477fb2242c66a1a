// Issue 32's goals table, every row, at 8192 and 480 possible CPUs, busy (every probe busy
// on every CPU) and idle (1 CPU in 64 busy), with the goal next to each figure: the
// measurement base of "cost proportional to what changed". No kernel: synthetic
// recordings (tests/bench/synthetic.h), written once per machine into a temporary
// directory and removed after. The rows:
//   frames   every top/replay view (tests/bench/tui_views.h): TuiApp::render + the ncurses
//            draw into /dev/null, median of the runs; the slowest view named
//   w        `w` (jump to the worst sample) over the recording, sorted by set_p99; checked
//            to land on the sample where the worst value was planted
//   report   the real `schedhot report FILE` as a child process: wall time and peak RSS
//            (wait4's ru_maxrss)
//   sampling LiveSource taking a sample from fake BPF maps + `record`'s write_sample of it,
//            CPU ms per interval (tests/bench/fake_slots.h, as bench_scale), as % of a core
//            at 1 s
//   export   the real `schedhot export --format perfetto FILE` as a child: wall time; with
//            --export-samples N (for a slow machine: 100 at 8192 busy took 52-147 s) only the
//            first N samples (--to) and the time scaled to 100 by the intervals (99 / (N-1)),
//            said in the row
//   serve    a scrape with --per-cpu (the bare flag: the counters per CPU; =all and no
//            --per-cpu printed beside it): render_metrics() (src/output/metrics.*) of a
//            MetricsState of the machine, in this process. The real `schedhot serve` needs
//            root and BPF and samples the running kernel's CPUs, so it cannot serve a
//            synthetic machine: the row is the renderer alone (no HTTP), said in the row
// Goals: issue 32's table at 8192 CPUs; at 480 CPUs a tenth of each; idle: as fast as
// today (this run is that base; the row also says whether it meets the busy goal).
// Nothing about speed is asserted; exit 1 only when a step fails (a child's exit status,
// `w` landing elsewhere).
//
// usage: schedhot_bench_goals [--short] [--schedhot PATH] [--cpus N,M] [--samples N]
//                             [--export-samples N] [--sampler-intervals N] [--only busy|idle]
//                             [--rows LIST] [--tmp DIR]
//   --rows: some of frames,w,report,sampling,export,serve (default all; for a profiler)
//   --sampler-intervals N: the sampling row's intervals (for a profiler: the steady state)
//   default 8192,480 CPUs, 100 samples, 5 frame runs (20 at 480), 10 sampler intervals;
//   --short (CI): 1024,480 CPUs, 10 samples, 3 runs, 3 intervals (1024: no goal at that
//   size, the 8192 goal shown). Without --schedhot the report and export rows are skipped.
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "bench/fake_slots.h"
#include "bench/synthetic.h"
#include "bench/tui_views.h"
#include "model/lines.h"
#include "output/metrics.h"
#include "tui/app.h"
#include "tui/replay_feed.h"
#include "tui/terminal.h"

using namespace schedhot;
using namespace schedhot::tui;
using namespace schedhot::bench;
namespace fs = std::filesystem;

namespace {

/// --sampler-intervals: the sampling row's intervals (0: 10, 3 with --short); more for a
/// profiler, so that the steady state outweighs the first intervals' page faults.
int g_sampler_intervals = 0;

// Issue 32's goals at 8192 possible CPUs.
constexpr double kFrameMs = 10, kWorstS = 0.5, kReportS = 2, kReportMB = 300, kSamplePct = 2, kExportS = 10,
                 kScrapeMs = 100;

char g_tmp[256];  ///< the temporary directory, removed on exit and on SIGINT/SIGTERM

void on_signal(int sig) {
  std::error_code ec;
  if (g_tmp[0]) fs::remove_all(g_tmp, ec);
  _exit(128 + sig);
}

/// What the goals are scaled by at n CPUs: 1 at 8192, a tenth at 480, 0 (no goal) else.
double goal_scale(uint32_t n) { return n == 8192 ? 1 : n == 480 ? 0.1 : 0; }

std::string fmt_ms(double ms) {
  if (ms >= 1000) return fmt::format("{:.2f} s", ms / 1e3);
  if (ms >= 10) return fmt::format("{:.1f} ms", ms);
  return fmt::format("{:.2f} ms", ms);
}
std::string fmt_s(double s) { return fmt_ms(s * 1e3); }

struct Row {
  std::string key;       ///< the figure's name in the summary table
  std::string measured;  ///< the figure, with what qualifies it
  std::string goal;      ///< the goal at this size
  std::string verdict;   ///< ok / MISSED / base / -
  std::string brief;     ///< the figure in the summary table (measured without its notes)
};

struct Case {
  uint32_t ncpus = 0;
  bool idle = false;
  std::vector<Row> rows;
};

class Bench {
 public:
  Bench(FILE* out, std::string schedhot, std::string tmp, int samples, int export_samples, bool short_mode)
      : out_(out), schedhot_(std::move(schedhot)), tmp_(std::move(tmp)), samples_(samples),
        export_samples_(export_samples), short_(short_mode) {}

  int status = 0;
  std::string rows;  ///< --rows: a comma-separated list of the rows to run; empty: all

  bool want(const char* row) const {
    if (rows.empty()) return true;
    const std::string r = "," + rows + ",";
    return r.find(std::string(",") + row + ",") != std::string::npos;
  }

  Case run(uint32_t n, bool idle) {
    Case c{n, idle, {}};
    const int busy_every = idle ? 64 : 1;
    const double g = goal_scale(n);
    const int worst_k = samples_ * 2 / 3;
    auto t0 = Clock::now();
    const std::string path = write_recording(n, samples_, idle ? "goals-idle" : "goals-busy", worst_k, busy_every, tmp_);
    fmt::print(out_, "\n== {} CPUs, {}: {} samples written in {:.1f} s ({:.1f} MB) to {}\n", n,
               idle ? "idle (1 CPU in 64 busy)" : "busy (every probe busy on every CPU)", samples_, ms_since(t0) / 1e3,
               double(fs::file_size(path)) / 1e6, tmp_);
    fmt::print(out_, "  {:<44} {:<64} {:<16} {}\n", "figure", "measured", "goal", "");
    fflush(out_);
    auto row = [&](const std::string& key, const std::string& figure, const std::string& measured,
                   const std::string& brief, double value, double goal8192, const std::string& goal_text) {
      Row r{key, measured, "", "", brief};
      if (g > 0) {
        r.goal = goal_text;
        const char* v = verdict(value, goal8192 * g);
        r.verdict = idle ? fmt::format("base (busy goal {}: {})", goal_text, v) : std::string(v);
        if (idle) r.goal = "as today";
      } else {
        r.goal = "(none at " + std::to_string(n) + ")";
        r.verdict = "-";
      }
      fmt::print(out_, "  {:<44} {:<64} {:<16} {}\n", figure, r.measured, r.goal, r.verdict);
      fflush(out_);
      c.rows.push_back(std::move(r));
    };
    auto goal_ms = [&](double ms8192) { return fmt_ms(ms8192 * (g > 0 ? g : 1)); };

    // ---- every top/replay view ----
    if (want("frames")) {
      TuiOptions o;
      o.utf8 = true;
      ReplayFeed feed(RecordingReader::open(path));
      TuiApp app(feed, o);
      Terminal term;
      const int runs = short_ ? 3 : n > 2048 ? 5 : 20;
      double worst = 0;
      std::string worst_name, views;
      for (const BenchView& v : all_views(feed.meta())) {
        for (char k : v.keys) app.on_key(k);
        std::vector<double> total;
        for (int r = 0; r < runs; ++r) {
          auto b0 = Clock::now();
          Screen s = app.render(160, 50);
          term.draw(s);
          total.push_back(ms_since(b0));
        }
        const double t = median(total);
        if (t > worst) worst = t, worst_name = v.name;
        views += fmt::format("{}{} {:.2f}", views.empty() ? "" : "; ", v.name, t);
      }
      row("every top/replay view (slowest)", "every top/replay view, slowest",
          fmt::format("{} ({}; median of {})", fmt_ms(worst), worst_name, runs),
          fmt::format("{} ({})", fmt_ms(worst), worst_name), worst, kFrameMs, goal_ms(kFrameMs));
      fmt::print(out_, "    each view, ms (build + draw): {}\n", views);
    }

    // ---- w over the samples ----
    if (want("w")) {
      const WRun wr = time_w_key(path, worst_k, samples_);
      const double w_ms = wr.ms;
      const bool found = wr.found;
      if (!found) status = 1;
      const double per100 = w_ms * 100.0 / samples_;
      row("`w` over 100 samples", "`w` over 100 samples",
          (samples_ == 100 ? fmt_ms(w_ms) : fmt::format("{} ({} samples: {}, x{:g})", fmt_ms(per100), samples_,
                                                        fmt_ms(w_ms), 100.0 / samples_)) +
              (found ? "" : " [did not land on the planted worst sample]"),
          samples_ == 100 ? fmt_ms(w_ms) : fmt::format("{} (x{:g})", fmt_ms(per100), 100.0 / samples_), per100 / 1e3, kWorstS, goal_ms(kWorstS * 1e3));
    }

    // ---- report of the samples (child) ----
    if (!schedhot_.empty() && want("report")) {
      const ChildRun r = run_child({schedhot_, "report", path});
      if (r.status != 0) {
        fmt::print(stderr, "schedhot: bench_goals: `schedhot report` exited with {}\n", r.status);
        status = 1;
      }
      const double per100 = r.wall_s * 100.0 / samples_;
      std::string m = samples_ == 100 ? fmt_s(r.wall_s)
                                      : fmt::format("{} ({} samples: {}, x{:g})", fmt_s(per100), samples_,
                                                    fmt_s(r.wall_s), 100.0 / samples_);
      m += fmt::format(", {:.0f} MB peak RSS{}", r.peak_mb, samples_ == 100 ? "" : " (not scaled)");
      // Both halves against their goals: the worse verdict.
      const double gs = g > 0 ? g : 1;
      const bool ok = per100 <= kReportS * gs && r.peak_mb <= kReportMB * gs;
      const std::string brief = fmt::format("{}{}, {:.0f} MB", fmt_s(per100),
                                            samples_ == 100 ? "" : fmt::format(" (x{:g})", 100.0 / samples_), r.peak_mb);
      row("`report` of 100 samples", "`report` of 100 samples (child)", m, brief, ok ? 0 : 1, 0.5,
          fmt::format("{}, {:.0f} MB", fmt_s(kReportS * gs), kReportMB * gs));
    }

    // ---- sampling + record's write ----
    if (want("sampling")) {
      const Meta m = big_meta(n);
      const int intervals = g_sampler_intervals ? g_sampler_intervals : short_ ? 3 : 10;
      const SamplerCost cost = sampler_cost(m, intervals, busy_every, tmp_);
      if (!cost.ok) {
        fmt::print(stderr, "schedhot: bench_goals: the live source gave no sample\n");
        status = 1;
      }
      const double pct = (cost.take + cost.write) / 10;  // ms per 1000 ms, in %
      row("sampling + `record`'s write per 1 s", "sampling + `record`'s write per 1 s",
          fmt::format("{:.2f} % of a core (take {} + write {}, CPU, median of {})", pct, fmt_ms(cost.take),
                      fmt_ms(cost.write), intervals),
          fmt::format("{:.2f} %", pct), pct, kSamplePct, fmt::format("{:g} %", kSamplePct * (g > 0 ? g : 1)));
    }

    // ---- export --format perfetto (child) ----
    if (!schedhot_.empty() && want("export")) {
      int k = samples_;
      if (export_samples_ > 0) k = std::min(export_samples_, samples_);
      std::vector<std::string> args{schedhot_, "export", "--format", "perfetto", path};
      if (k < samples_) {
        args.push_back("--to");
        args.push_back(fmt::format("{}s", k - 1));  // samples 0..k-1, one a second
      }
      const ChildRun r = run_child(args);
      if (r.status != 0) {
        fmt::print(stderr, "schedhot: bench_goals: `schedhot export --format perfetto` exited with {}\n", r.status);
        status = 1;
      }
      const double per100 = r.wall_s * 99.0 / (k - 1);
      row("`export --format perfetto` of 100 samples", "`export --format perfetto` of 100 (child)",
          k == 100 ? fmt_s(r.wall_s)
                   : fmt::format("{} ({} samples: {}, x99/{} intervals)", fmt_s(per100), k, fmt_s(r.wall_s), k - 1),
          k == 100 ? fmt_s(r.wall_s) : fmt::format("{} (x{:.3g})", fmt_s(per100), 99.0 / (k - 1)), per100, kExportS, fmt_s(kExportS * (g > 0 ? g : 1)));
    }

    // ---- serve scrape with --per-cpu (the renderer) ----
    if (want("serve")) {
      const Meta m = big_meta(n);
      Sample prev = make_sample(m);
      advance(m, prev, 0, busy_every);
      Sample last = prev;
      advance(m, last, 1, busy_every);
      MetricsState st;
      st.meta = m;
      {
        CoherenceAccumulator acc(m);
        LineTransferTotals totals(m);
        totals.add(acc.of(Interval(m, prev, last)));
        st.lines = totals.totals();
      }
      st.last = std::move(last);
      prev = Sample{};
      st.samples = 2;
      st.bpf_run_ns = 123456789;
      st.bpf_runs = 4242;
      // The bare --per-cpu (the counters per CPU) is the row; =all (histograms and counter
      // arrays per CPU too, hundreds of series a CPU) and no --per-cpu are printed beside it.
      MetricsOptions per_cpu{false, parse_per_cpu("counters")}, all{false, parse_per_cpu("all")}, summed{false, {}};
      const int runs = short_ ? 3 : 5;
      auto series_in = [](const std::string& text) {
        size_t n = 0;
        for (size_t i = 0; i < text.size();) {
          size_t e = text.find('\n', i);
          if (e == std::string::npos) e = text.size();
          if (e > i && text[i] != '#') ++n;
          i = e + 1;
        }
        return n;
      };
      std::vector<double> with, with_all, without;
      size_t bytes = 0, series = 0, bytes_all = 0, series_all = 0, bytes_without = 0;
      for (int r = 0; r < runs; ++r) {
        auto s0 = Clock::now();
        const std::string text = render_metrics(st, per_cpu);
        with.push_back(ms_since(s0));
        bytes = text.size();
        if (r == 0) series = series_in(text);
        auto a0 = Clock::now();
        const std::string text_all = render_metrics(st, all);
        with_all.push_back(ms_since(a0));
        bytes_all = text_all.size();
        if (r == 0) series_all = series_in(text_all);
        auto u0 = Clock::now();
        bytes_without = render_metrics(st, summed).size();
        without.push_back(ms_since(u0));
      }
      const double t = median(with);
      row("`serve` scrape with `--per-cpu`", "`serve` scrape with `--per-cpu` (renderer)",
          fmt::format("{} (render_metrics in process, no HTTP: serve needs root + BPF; the counters per CPU: {:.1f} MB, "
                      "{} series; --per-cpu=all {}, {:.1f} MB, {} series; without --per-cpu {}, {:.2f} MB)",
                      fmt_ms(t), double(bytes) / 1e6, series, fmt_ms(median(with_all)), double(bytes_all) / 1e6,
                      series_all, fmt_ms(median(without)), double(bytes_without) / 1e6),
          fmt::format("{} (renderer)", fmt_ms(t)), t, kScrapeMs, goal_ms(kScrapeMs));
    }
    std::remove(path.c_str());
    return c;
  }

 private:
  FILE* out_;
  std::string schedhot_, tmp_;
  int samples_, export_samples_;
  bool short_;
};

/// The summary: one row per figure, a column per machine (and the goal next to each busy one).
void print_summary(FILE* out, const std::vector<Case>& cases) {
  std::vector<std::string> keys;
  for (const Case& c : cases)
    for (const Row& r : c.rows)
      if (std::find(keys.begin(), keys.end(), r.key) == keys.end()) keys.push_back(r.key);
  fmt::print(out, "\nissue 32 goals, summary (idle: the goal is as fast as today, this run being today; xN: "
                  "fewer samples, scaled; report's RSS is not scaled; serve: render_metrics alone, see above)\n");
  std::string head = "| figure |", rule = "|---|";
  for (const Case& c : cases) {
    head += fmt::format(" {} {} |", c.ncpus, c.idle ? "idle" : "busy");
    rule += "---|";
    if (!c.idle) head += " goal |", rule += "---|";
  }
  fmt::print(out, "{}\n{}\n", head, rule);
  for (const std::string& k : keys) {
    std::string line = "| " + k + " |";
    for (const Case& c : cases) {
      const Row* r = nullptr;
      for (const Row& x : c.rows)
        if (x.key == k) r = &x;
      line += " " + (r ? r->brief : std::string("-")) + " |";
      if (!c.idle) line += " " + (r ? r->goal + (r->verdict == "MISSED" ? " MISSED" : r->verdict == "ok" ? " ok" : "") : "-") + " |";
    }
    fmt::print(out, "{}\n", line);
  }
}

int usage() {
  fmt::print(stderr, "usage: schedhot_bench_goals [--short] [--schedhot PATH] [--cpus N,M] [--samples N] "
                     "[--export-samples N] [--sampler-intervals N] [--only busy|idle] [--rows LIST] [--tmp DIR]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  start_spawner();  // children spawned from a small process: their own peak RSS
  std::vector<uint32_t> sizes;
  int samples = 100, export_samples = 0;
  bool short_mode = false;
  std::string schedhot, only, rows, tmp_parent = "/tmp";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--short") {
      short_mode = true;
    } else if (a == "--schedhot" && i + 1 < argc) {
      schedhot = argv[++i];
    } else if (a == "--cpus" && i + 1 < argc) {
      std::string v = argv[++i];
      for (size_t p = 0; p < v.size();) {
        size_t e = v.find(',', p);
        if (e == std::string::npos) e = v.size();
        sizes.push_back(uint32_t(std::strtoul(v.substr(p, e - p).c_str(), nullptr, 10)));
        p = e + 1;
      }
    } else if (a == "--samples" && i + 1 < argc) {
      samples = std::atoi(argv[++i]);
    } else if (a == "--export-samples" && i + 1 < argc) {
      export_samples = std::atoi(argv[++i]);
    } else if (a == "--sampler-intervals" && i + 1 < argc) {
      g_sampler_intervals = std::atoi(argv[++i]);
      if (g_sampler_intervals < 1) return usage();
    } else if (a == "--rows" && i + 1 < argc) {
      rows = argv[++i];
    } else if (a == "--only" && i + 1 < argc) {
      only = argv[++i];
    } else if (a == "--tmp" && i + 1 < argc) {
      tmp_parent = argv[++i];
    } else {
      return usage();
    }
  }
  if (short_mode && samples == 100) samples = 10;
  if (sizes.empty()) sizes = short_mode ? std::vector<uint32_t>{1024, 480} : std::vector<uint32_t>{8192, 480};
  if (samples < 4 || (export_samples != 0 && export_samples < 2)) return usage();
  for (uint32_t n : sizes)
    if (n < 128) return usage();

  const std::string templ = tmp_parent + "/schedhot-goals-XXXXXX";
  std::snprintf(g_tmp, sizeof g_tmp, "%s", templ.c_str());
  if (!mkdtemp(g_tmp)) {
    fmt::print(stderr, "schedhot: bench_goals: cannot make a directory in {}: {}\n", tmp_parent, std::strerror(errno));
    return 1;
  }
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);

  // ncurses draws into /dev/null; the figures go to the original stdout.
  FILE* out = fdopen(dup(STDOUT_FILENO), "w");
  const int devnull = open("/dev/null", O_WRONLY);
  dup2(devnull, STDOUT_FILENO);
  setenv("TERM", "xterm-256color", 1);
  fmt::print(out, "schedhot: issue 32's goals, synthetic recordings of {} samples, {}{}\n", samples,
             short_mode ? "short mode (CI): 1024 CPUs stand for 8192 (no goal at that size)" : "full mode",
             schedhot.empty() ? "; no --schedhot: report and export skipped" : "");
  fmt::print(out, "goals: issue 32 at 8192 CPUs, a tenth at 480; idle (1 CPU in 64 busy): as fast as today\n");
  fflush(out);
  auto t0 = Clock::now();
  Bench b(out, schedhot, g_tmp, samples, export_samples, short_mode);
  b.rows = rows;
  std::vector<Case> cases;
  for (uint32_t n : sizes)
    for (bool idle : {false, true}) {
      if ((only == "busy" && idle) || (only == "idle" && !idle)) continue;
      cases.push_back(b.run(n, idle));
    }
  print_summary(out, cases);
  fmt::print(out, "\nbench_goals: {:.1f} s in all\n", ms_since(t0) / 1e3);
  fclose(out);
  std::error_code ec;
  fs::remove_all(g_tmp, ec);
  return b.status;
}
