// Synthetic big machines for the user-space benchmarks (bench_tui.cpp, bench_scale.cpp):
// a Meta of N CPUs (SMT2, 8 cores per LLC, 64 cores per package = NUMA node) and samples
// in which every probe is busy on every CPU (or only on some CPUs: an idle machine).
#pragma once
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "data/tui_fixture.h"
#include "store/recording.h"

namespace schedhot::bench {

namespace fx = schedhot::tui_fixture;
using Clock = std::chrono::steady_clock;

/// The fixture's Meta (tests/data/tui_fixture.h) grown to ncpus CPUs, all online.
inline Meta big_meta(uint32_t ncpus) {
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

/// Adds interval k's activity to s: on every CPU when busy_every == 1, else only on
/// every busy_every-th CPU (the rest idle: their words do not change). CPU 5's cpupri_set
/// tail is worst at k == worst_k (what `w` finds).
inline void advance(const Meta& m, Sample& s, int k, int busy_every = 1, int worst_k = -1) {
  const int idle = m.probe_index("idle"), nx = m.probe_index("nohz_exit"), cs = m.probe_index("cpupri_set"),
            cf = m.probe_index("cpupri_find"), nk = m.probe_index("nohz_kick");
  for (int c = 0; c < int(m.ncpus); c += busy_every) {
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
    fx::add_values(m, s, cs, c, "lat", (c == 5 && k == worst_k ? 3'000'000 : 30'000) + uint64_t(c % 31) * 1000, 2);
    fx::add_count(m, s, cf, c, "calls", n / 4);
    fx::add_values(m, s, cf, c, "lat", 400, n / 4);
  }
  s.seq = uint32_t(k);
  s.mono_ns = fx::kStartMono + uint64_t(k) * fx::kSecond;
  s.wall_ns = fx::kStartWall + uint64_t(k) * fx::kSecond;
}

/// Writes a recording of nsamples busy samples of ncpus CPUs to /tmp and returns its path
/// (the caller removes it). The worst cpupri_set tail is at sample worst_k. busy_every > 1:
/// only every busy_every-th CPU is busy (an idle machine).
inline std::string write_recording(uint32_t ncpus, int nsamples, const char* tag, int worst_k = -1,
                                   int busy_every = 1) {
  std::string path = fmt::format("/tmp/schedhot-bench-{}-{}-{}.shot", tag, ncpus, getpid());
  std::remove(path.c_str());
  Meta m = big_meta(ncpus);
  RecordingWriter w(path, m);
  Sample s = make_sample(m);
  for (int k = 0; k < nsamples; ++k) {
    advance(m, s, k, busy_every, worst_k);
    w.write_sample(s);
  }
  w.close();
  return path;
}

inline double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// "ok" or "MISSED" for a figure against an upper goal.
inline const char* verdict(double v, double goal) { return v <= goal ? "ok" : "MISSED"; }

}  // namespace schedhot::bench
