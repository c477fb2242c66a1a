// Frame cost of schedhot top/replay on big machines: for synthetic recordings of 1024 and
// 8192 CPUs (SMT2, 8 cores per LLC, 64 cores per package = NUMA node, every probe busy on
// every CPU), the time to build one frame (Interval, rows, sort, layout: TuiApp::render)
// and to draw it with ncurses (into /dev/null, TERM=xterm-256color), per view.
// Not a test: prints milliseconds per frame (median of the runs).
//
// usage: schedhot_bench_tui [CPUS...]     (default: 1024 8192)
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "data/tui_fixture.h"
#include "store/recording.h"
#include "view/tui_app.h"
#include "view/tui_replay.h"
#include "view/tui_term.h"

using namespace schedhot;
using namespace schedhot::tui;
namespace fx = schedhot::tui_fixture;
using Clock = std::chrono::steady_clock;

namespace {

Meta big_meta(uint32_t ncpus) {
  Meta m = fx::fixture_meta();
  const uint32_t cores = ncpus / 2;
  m.ncpus = ncpus;
  m.host.possible_cpus = int(ncpus);
  m.host.hostname = fmt::format("synthetic{}", ncpus);
  m.host.online.clear();
  m.host.topology.clear();
  for (uint32_t c = 0; c < ncpus; ++c) {
    const int core = int(c % cores);
    m.host.online.push_back(int(c));
    m.host.topology.push_back({int(c), core / 64, 0, core % 64, core / 8, core / 64});
  }
  return m;
}

/// Adds one interval of activity on every CPU.
void advance(const Meta& m, Sample& s, int k) {
  const int idle = m.probe_index("idle"), nx = m.probe_index("nohz_exit"), cs = m.probe_index("cpupri_set"),
            cf = m.probe_index("cpupri_find"), nk = m.probe_index("nohz_kick");
  for (int c = 0; c < int(m.ncpus); ++c) {
    const uint64_t n = 50 + uint64_t((c * 7 + k) % 200);
    fx::add_count(m, s, idle, c, "exits", n);
    fx::add_count(m, s, idle, c, "entries", n);
    fx::add_values(m, s, idle, c, "lat", 20'000 + uint64_t(c % 97) * 300, n);
    fx::add_count(m, s, nx, c, "calls", n / 2);
    fx::add_values(m, s, nx, c, "lat", 250 + uint64_t(c % 13), n / 2);
    fx::add_count(m, s, nk, c, "calls", 1000);
    fx::add_values(m, s, nk, c, "lat", 120, 1000);
    fx::add_count(m, s, cs, c, "calls", n);
    fx::add_values(m, s, cs, c, "lat", 900, n - 2);
    fx::add_values(m, s, cs, c, "lat", 30'000 + uint64_t(c % 31) * 1000, 2);
    fx::add_count(m, s, cf, c, "calls", n / 4);
    fx::add_values(m, s, cf, c, "lat", 400, n / 4);
  }
  s.seq = uint32_t(k);
  s.mono_ns = fx::kStartMono + uint64_t(k) * fx::kSecond;
  s.wall_ns = fx::kStartWall + uint64_t(k) * fx::kSecond;
}

std::string write_recording(uint32_t ncpus) {
  std::string path = fmt::format("/tmp/schedhot-bench-tui-{}-{}.shot", ncpus, getpid());
  std::remove(path.c_str());
  Meta m = big_meta(ncpus);
  RecordingWriter w(path, m);
  Sample s = make_sample(m);
  for (int k = 0; k < 3; ++k) {
    advance(m, s, k);
    w.write_sample(s);
  }
  w.close();
  return path;
}

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<uint32_t> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(uint32_t(std::strtoul(argv[i], nullptr, 10)));
  if (sizes.empty()) sizes = {1024, 8192};

  // ncurses draws into /dev/null; results go to the original stdout.
  FILE* out = fdopen(dup(STDOUT_FILENO), "w");
  int devnull = open("/dev/null", O_WRONLY);
  dup2(devnull, STDOUT_FILENO);
  setenv("TERM", "xterm-256color", 1);
  fmt::print(out, "schedhot top/replay frame cost, 160x50 terminal, median of the runs (ms per frame)\n");
  fmt::print(out, "{:>6} {:<26} {:>9} {:>9} {:>9}\n", "CPUs", "view", "build", "draw", "total");
  for (uint32_t n : sizes) {
    auto t0 = Clock::now();
    std::string path = write_recording(n);
    const double write_ms = ms_since(t0);
    ReplayFeed feed(RecordingReader::open(path));
    TuiOptions o;
    o.utf8 = true;
    TuiApp app(feed, o);
    Terminal term;
    struct View {
      const char* name;
      const char* keys;  ///< keys that switch to it from the previous one
    } views[] = {{"per-CPU, by idle/s", ""},       {"LLCs, by idle/s", "o"},
                 {"idle histogram, all CPUs", "h"}, {"summary (6 histograms)", "s"},
                 {"per-CPU, by set_p99", "c>>>>>>>>"}, {"LLCs, by set_p99", "o"},
                 {"per-CPU, by xfer/s", "c>>>>"},   {"cachelines (l)", "l"}};
    const int runs = n > 2048 ? 5 : 20;
    for (const View& v : views) {
      for (const char* k = v.keys; *k; ++k) app.on_key(*k);
      std::vector<double> build, draw;
      for (int r = 0; r < runs; ++r) {
        auto b0 = Clock::now();
        Screen s = app.render(160, 50);
        build.push_back(ms_since(b0));
        auto d0 = Clock::now();
        term.draw(s);
        draw.push_back(ms_since(d0));
      }
      double b = median(build), d = median(draw);
      fmt::print(out, "{:>6} {:<26} {:>9.2f} {:>9.2f} {:>9.2f}\n", n, v.name, b, d, b + d);
    }
    {
      // The coherence model of the interval shown (the xfer/s column, the l view): TuiApp
      // computes it once per new interval and keeps it while the interval stays.
      auto m0 = Clock::now();
      CoherenceAccumulator acc(feed.meta());
      acc.add(Interval(feed.meta(), *feed.first(), *feed.last()));
      const CoherenceSummary sum = acc.summary();
      fmt::print(out, "{:>6} coherence model of one interval (once per new sample): {:.0f} ms, {} lines\n", n, ms_since(m0),
                 sum.lines.size());
    }
    fmt::print(out, "{:>6} (writing the 3-sample recording took {:.0f} ms)\n", n, write_ms);
    fflush(out);
    std::remove(path.c_str());
  }
  return 0;
}
